# src/picture: a run's picture (timeline model, HTML page, JSON) and the
# timeline of a JobSet on a cluster rebuilt from its API objects; pure, on
# the reconcile core for core/phase's names and observation.
js_layer(js_picture picture js_core js_api js_base PkgConfig::JANSSON)
