# Unit tests: one cmocka executable per tests/unit/<layer>/<name>_test.c,
# linked with the layer libraries that layer may use. Labels: quick (unit), plus
# whatever the layer's folder name is.
file(GLOB_RECURSE JS_UNIT_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/unit/*_test.c)
# Test helpers: js_test_support (base only) for every test, and
# js_test_support_api (JobSet builders) for tests of api and the layers on it.
add_library(js_test_support STATIC ${CMAKE_SOURCE_DIR}/tests/support/testutil.c)
target_compile_options(js_test_support PRIVATE ${JS_WARNINGS})
target_link_libraries(js_test_support PUBLIC js_base PkgConfig::CMOCKA)
target_include_directories(js_test_support PUBLIC ${CMAKE_SOURCE_DIR}/tests)
add_library(js_test_support_api STATIC ${CMAKE_SOURCE_DIR}/tests/support/testutil_api.c)
target_compile_options(js_test_support_api PRIVATE ${JS_WARNINGS})
target_link_libraries(js_test_support_api PUBLIC js_test_support js_api)
# js_test_support_fakeapi: an in-process HTTPS API fixture (fakeapi.h), for
# the kube and ctrl tests that need a server.
add_library(js_test_support_fakeapi STATIC ${CMAKE_SOURCE_DIR}/tests/support/fakeapi.c)
target_compile_options(js_test_support_fakeapi PRIVATE ${JS_WARNINGS})
target_link_libraries(js_test_support_fakeapi PUBLIC js_test_support js_kube OpenSSL::SSL PkgConfig::JANSSON Threads::Threads)
# Each test links only the layers its folder may include (the layer table in
# README.md; base is always linked).
set(_deps_base "")
set(_deps_api "api")
set(_deps_core "core;api")
set(_deps_sim "sim;core;api")
set(_deps_picture "picture;core;api")
set(_deps_local "local;picture;core;api")
set(_deps_kube "kube")
set(_deps_webhook "webhook;api")
set(_deps_ctrl "ctrl;webhook;kube;core;api")
foreach(src ${JS_UNIT_TESTS})
  get_filename_component(name ${src} NAME_WE)
  get_filename_component(dir ${src} DIRECTORY)
  get_filename_component(layer ${dir} NAME)
  add_executable(${name} ${src})
  target_compile_options(${name} PRIVATE ${JS_WARNINGS})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests)
  set(_test_libs)
  foreach(dep ${_deps_${layer}})
    if(TARGET js_${dep})
      list(APPEND _test_libs js_${dep})
    endif()
  endforeach()
  if("api" IN_LIST _deps_${layer})
    list(APPEND _test_libs js_test_support_api)
  endif()
  target_link_libraries(${name} PRIVATE ${_test_libs} js_test_support js_base PkgConfig::CMOCKA)
  # kube and ctrl tests may serve TLS (the API fixture, support/fakeapi.h).
  if(layer STREQUAL "ctrl" OR layer STREQUAL "kube")
    target_link_libraries(${name} PRIVATE js_test_support_fakeapi OpenSSL::SSL)
  endif()
  set_target_properties(${name} PROPERTIES LINKER_LANGUAGE CXX)
  add_test(NAME ${layer}/${name} COMMAND ${name})
  set_tests_properties(${layer}/${name} PROPERTIES LABELS "quick;${layer}"
    ENVIRONMENT "JS_SOURCE_DIR=${CMAKE_SOURCE_DIR};JS_SHARED_DIR=${CMAKE_SOURCE_DIR}/../shared;JS_BUILD_DIR=${CMAKE_BINARY_DIR}")
endforeach()

# Fuzz targets: one per tests/fuzz/<name>_fuzz.c, linked with the layers
# its parser lives in (_fuzz_libs_<name>; api and base when not listed).
# With -DJS_FUZZ=ON (clang) the libFuzzer executable <name>_fuzz, which
# scripts/fuzz runs; otherwise <name>_replay, a unit test that feeds it the
# seed corpus tests/fuzz/corpus/<name>/ once (docs/reliability.md
# "Fuzzing").
set(_fuzz_libs_watch "ctrl;webhook;kube;core;api")
set(_fuzz_libs_admission "webhook;api")
set(_fuzz_libs_kubeconfig "kube")
set(_fuzz_libs_execcred "kube")
set(_fuzz_libs_config "ctrl;webhook;kube;core;api")
set(_fuzz_libs_pod "local;core;api")
file(GLOB JS_FUZZ_SRC CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/*_fuzz.c)
foreach(src ${JS_FUZZ_SRC})
  get_filename_component(name ${src} NAME_WE)
  string(REGEX REPLACE "_fuzz$" "" short ${name})
  set(_libs)
  if(DEFINED _fuzz_libs_${short})
    foreach(dep ${_fuzz_libs_${short}})
      list(APPEND _libs js_${dep})
    endforeach()
  else()
    set(_libs js_api)
  endif()
  if(JS_FUZZ)
    add_executable(${name} ${src})
    target_compile_options(${name} PRIVATE ${JS_WARNINGS} -fsanitize=fuzzer,address,undefined)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  else()
    # Without libFuzzer: replay the seed corpus once (tests/fuzz/replay.c),
    # a unit test of the quick tier (and so of asan and tsan builds).
    set(name ${short}_replay)
    add_executable(${name} ${src} ${CMAKE_SOURCE_DIR}/tests/fuzz/replay.c)
    target_compile_options(${name} PRIVATE ${JS_WARNINGS})
    add_test(NAME fuzz/${name} COMMAND ${name} ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/${short})
    set_tests_properties(fuzz/${name} PROPERTIES LABELS "quick;fuzz")
  endif()
  target_link_libraries(${name} PRIVATE ${_libs} js_base)
  set_target_properties(${name} PROPERTIES LINKER_LANGUAGE CXX)
endforeach()
