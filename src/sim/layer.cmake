# src/sim: the simulator (sim.h), a body of the plan executor over an
# in-memory world; links the reconcile core (and through it api and base).
js_layer(js_sim sim js_core js_api js_base)
