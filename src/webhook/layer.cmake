# src/webhook: the HTTP(S) server (docs/webhooks.md) behind the admission
# webhooks, /metrics and the probes, hosted by jobset-controller
# (src/ctrl/hooks.c, src/ctrl/main.c). Needs libevent (evhttp) with its
# OpenSSL bufferevents, and OpenSSL itself, the product's one TLS library,
# on top of the base and api layers; lookups are callbacks its host fills
# in, so it does not link kube. Also builds a tool that needs api alone
# (crdgen).
if(NOT TARGET js_webhook)
  pkg_check_modules(EVENT REQUIRED IMPORTED_TARGET libevent libevent_openssl)
  find_package(Threads REQUIRED)
  js_layer(js_webhook webhook js_api js_base PkgConfig::EVENT OpenSSL::SSL OpenSSL::Crypto PkgConfig::JANSSON
           Threads::Threads)

  # The CRD generator (tools/crdgen): deploy/crd/jobset.x-k8s.io_jobsets.yaml
  # from our API model and the control plane's OpenAPI documents.
  if(EXISTS ${CMAKE_SOURCE_DIR}/tools/crdgen/main.c)
    add_executable(jobset-crdgen ${CMAKE_SOURCE_DIR}/tools/crdgen/main.c)
    target_compile_options(jobset-crdgen PRIVATE ${JS_WARNINGS})
    target_link_libraries(jobset-crdgen PRIVATE js_api js_base)
    set_target_properties(jobset-crdgen PROPERTIES LINKER_LANGUAGE CXX)
  endif()
endif()
