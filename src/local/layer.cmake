# The local runtime links the reconcile core (and through it api and base).
js_layer(js_local local js_core js_api js_base)
