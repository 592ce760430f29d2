# src/kube: the Kubernetes client library (docs/kube.md). Needs libcurl
# (HTTP/2 via nghttp2) and pthreads on top of the base and api layers.
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
find_package(Threads REQUIRED)
js_layer(js_kube kube js_api js_base PkgConfig::CURL PkgConfig::JANSSON Threads::Threads)

# Tests against the real control plane (label `cluster`).
if(EXISTS ${CMAKE_SOURCE_DIR}/tests/cluster/cluster.cmake)
  include(${CMAKE_SOURCE_DIR}/tests/cluster/cluster.cmake)
endif()
