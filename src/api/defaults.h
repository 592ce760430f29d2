/*
 * defaults.h - defaulting of a JobSet, as the API server's CRD structural
 * defaults and the mutating webhook `mjobset.kb.io` together do (SPEC §4).
 *
 * Idempotent by construction: every step only fills what is absent, so
 * defaulting a defaulted object changes nothing (unlike upstream #926, which
 * re-defaulted on every apply). Pure.
 */
#ifndef JS_DEFAULTS_H
#define JS_DEFAULTS_H

#include <stdbool.h>

#include "api/jobset.h"

/**
 * Apply the CRD structural defaults D1-D4 (SPEC §4.1). These are what the
 * API server applies on every write and read; the core applies them to
 * objects it did not see defaulted (upstream #796).
 * Returns true when something changed.
 */
bool js_default_crd(struct js_jobset *js);

/**
 * Apply D1-D4 and the webhook steps M1-M9 (SPEC §4.2), in order.
 * Returns true when something changed.
 */
bool js_default_jobset(struct js_jobset *js);

#endif
