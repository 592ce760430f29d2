# src/kube: the Kubernetes client library (docs/kube.md). Generic: it knows
# nothing of JobSets, so it sits on the base layer alone, plus libcurl
# (HTTP/2 via nghttp2) and pthreads.
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
find_package(Threads REQUIRED)
js_layer(js_kube kube js_base PkgConfig::CURL PkgConfig::JANSSON Threads::Threads)

# Tests against the real control plane (label `cluster`).
if(EXISTS ${CMAKE_SOURCE_DIR}/tests/cluster/cluster.cmake)
  include(${CMAKE_SOURCE_DIR}/tests/cluster/cluster.cmake)
endif()
