# Tests against the real control plane (hack/cluster), label `cluster`.
# Each tests/cluster/<name>_ctest.c is one cmocka program; it reads
# KUBECONFIG (eval "$(hack/cluster env)") and FAILS when no cluster answers.
# Included from src/kube/layer.cmake.
file(GLOB JS_CLUSTER_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/cluster/*_ctest.c)
add_executable(kube_leader_helper ${CMAKE_SOURCE_DIR}/tests/cluster/leader_helper.c)
target_compile_options(kube_leader_helper PRIVATE ${JS_WARNINGS})
target_link_libraries(kube_leader_helper PRIVATE js_kube js_base)
set_target_properties(kube_leader_helper PROPERTIES LINKER_LANGUAGE CXX)
foreach(src ${JS_CLUSTER_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_compile_options(${name} PRIVATE ${JS_WARNINGS})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests)
  target_link_libraries(${name} PRIVATE js_kube js_base PkgConfig::CMOCKA)
  set_target_properties(${name} PROPERTIES LINKER_LANGUAGE CXX)
  add_test(NAME cluster/${name} COMMAND ${name})
  set_tests_properties(cluster/${name} PROPERTIES LABELS "cluster" TIMEOUT 600
    ENVIRONMENT "JS_SOURCE_DIR=${CMAKE_SOURCE_DIR};JS_BUILD_DIR=${CMAKE_BINARY_DIR};JS_LEADER_HELPER=$<TARGET_FILE:kube_leader_helper>")
endforeach()
# The restart test stops and restarts kube-apiserver: nothing else may run.
if(TEST cluster/restart_ctest)
  set_tests_properties(cluster/restart_ctest PROPERTIES RUN_SERIAL TRUE)
endif()
