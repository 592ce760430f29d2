# src/ctrl: the controller wiring (docs/controller.md) and the
# jobset-controller binary. /metrics and the probes are plain-HTTP servers
# of src/webhook (libevent); certificates are made with OpenSSL.
find_package(Threads REQUIRED)
file(GLOB _ctrl_c CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/ctrl/*.c)
list(REMOVE_ITEM _ctrl_c ${CMAKE_SOURCE_DIR}/src/ctrl/main.c)
add_library(js_ctrl STATIC ${_ctrl_c})
target_compile_options(js_ctrl PRIVATE ${JS_WARNINGS})
# The admission webhook server (src/webhook, built before this layer) is
# hosted here (--enable-webhooks); its certificates are generated with
# OpenSSL (ctrl/certs.c).
target_link_libraries(js_ctrl PUBLIC js_webhook js_kube js_core js_api js_base OpenSSL::Crypto Threads::Threads)

add_executable(jobset-controller ${CMAKE_SOURCE_DIR}/src/ctrl/main.c)
target_compile_options(jobset-controller PRIVATE ${JS_WARNINGS})
target_link_libraries(jobset-controller PRIVATE js_ctrl js_webhook js_kube js_core js_api js_base)
set_target_properties(jobset-controller PROPERTIES LINKER_LANGUAGE CXX)
