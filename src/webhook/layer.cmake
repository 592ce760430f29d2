# src/webhook: the admission webhook HTTPS server (docs/webhooks.md), hosted
# by jobset-controller (src/ctrl/hooks.c). Needs libmicrohttpd and GnuTLS (its
# TLS stack: certificates are checked with GnuTLS before a reload) on top of
# the base and api layers; lookups are callbacks its host fills in, so it does
# not link kube. Also builds tools that need api alone (crdgen, a fuzz target).
if(NOT TARGET js_webhook)
  pkg_check_modules(MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
  pkg_check_modules(GNUTLS REQUIRED IMPORTED_TARGET gnutls)
  find_package(Threads REQUIRED)
  js_layer(js_webhook webhook js_api js_base PkgConfig::MHD PkgConfig::GNUTLS PkgConfig::JANSSON
           Threads::Threads)

  # tools/webhook-host: a standalone host for the server, with Pod, Node and
  # PVC lookups through src/kube that repeat src/ctrl/hooks.c. jobset-controller
  # hosts the same server (--enable-webhooks); most webhook e2e tests
  # (tests/e2e/cluster) still run this host (issue 10 moves them and deletes it).
  if(TARGET js_kube AND EXISTS ${CMAKE_SOURCE_DIR}/tools/webhook-host/main.c)
    add_executable(jobset-webhook ${CMAKE_SOURCE_DIR}/tools/webhook-host/main.c)
    target_compile_options(jobset-webhook PRIVATE ${JS_WARNINGS})
    target_link_libraries(jobset-webhook PRIVATE js_webhook js_kube js_api js_base)
    set_target_properties(jobset-webhook PROPERTIES LINKER_LANGUAGE CXX)
  endif()

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
