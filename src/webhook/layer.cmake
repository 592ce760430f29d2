# src/webhook: the HTTP(S) server (docs/webhooks.md) behind the admission
# webhooks, /metrics and the probes, hosted by jobset-controller
# (src/ctrl/hooks.c, src/ctrl/main.c). Needs libevent (evhttp) with its
# OpenSSL bufferevents, and OpenSSL itself, the product's one TLS library,
# on top of the base and api layers; lookups are callbacks its host fills
# in, so it does not link kube. Also builds tools that need api alone
# (crdgen, a fuzz target).
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

  # libFuzzer target for AdmissionReview bodies (clang, -DJS_FUZZ=ON);
  # seeds in tools/fuzz/admission/.
  if(JS_FUZZ AND EXISTS ${CMAKE_SOURCE_DIR}/tools/fuzz/admission_fuzz.c)
    add_executable(admission_fuzz ${CMAKE_SOURCE_DIR}/tools/fuzz/admission_fuzz.c)
    target_compile_options(admission_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(admission_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(admission_fuzz PRIVATE js_webhook js_api js_base)
    set_target_properties(admission_fuzz PROPERTIES LINKER_LANGUAGE CXX)
  endif()
endif()
