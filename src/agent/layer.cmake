# src/agent: in-place-restart-agent, the pod side of in-place restart
# (KEP-467, SPEC §13, docs/in-place-restart.md). Its decisions are
# core/inplace.h; it talks to the API server with src/kube.
find_package(Threads REQUIRED)
add_executable(in-place-restart-agent ${CMAKE_SOURCE_DIR}/src/agent/main.c ${CMAKE_SOURCE_DIR}/src/agent/beats.c)
target_compile_options(in-place-restart-agent PRIVATE ${JS_WARNINGS})
target_link_libraries(in-place-restart-agent PRIVATE js_kube js_core js_api js_base Threads::Threads)
set_target_properties(in-place-restart-agent PROPERTIES LINKER_LANGUAGE CXX)
