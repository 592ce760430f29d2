# The local runtime links the reconcile core (and through it api and base),
# libmnl for rtnetlink (the run's bridge and the pods' veths, local/nl.c) and
# threads (the --publish forwarder, local/publish.c).
pkg_check_modules(MNL REQUIRED IMPORTED_TARGET libmnl)
find_package(Threads REQUIRED)
js_layer(js_local local js_picture js_core js_api js_base PkgConfig::MNL Threads::Threads)
