/*
 * api_int.h - internals shared by the files of src/api/ (validation). Nothing
 * outside src/api/ includes this header.
 */
#ifndef JS_API_INT_H
#define JS_API_INT_H

#include <stdarg.h>
#include <jansson.h>

#include "api/codec.h"
#include "api/jobset.h"
#include "api/template.h"
#include "api/validate.h"
#include "base/diag.h"

/** The spellings of one API enum, indexed by value (api/enums.c). */
struct js__enum_table {
	const char *const *names;
	int count;
};

extern const struct js__enum_table js__success_op_table, js__startup_order_table, js__restart_strategy_table,
	js__fp_action_table, js__depends_status_table, js__when_deleted_table, js__job_failure_reason_table;

/** Validation context: the object, the options and where errors go. */
struct js_vctx {
	const struct js_jobset *js;
	const struct js_validate_opts *opts;
	struct js_diag *diag;
	const char *name; /* N, or the simulated name for generateName (SPEC §5.1.6) */
};

/** Append an error to `diag`; `val` (may be NULL) is rendered as the
 * offending value. The one formatter of js__vadd and api/sched.c. */
void js__diag_addv(struct js_diag *diag, enum js_diag_type type, const char *path, const json_t *val,
		   const char *fmt, va_list ap) JS_PRINTF(5, 0);

/** Append an error; `val` (may be NULL) is rendered as the offending value. */
void js__vadd(struct js_vctx *v, enum js_diag_type type, const char *path, const json_t *val, const char *fmt,
	      ...) JS_PRINTF(5, 6);

/** The hang-detection annotations (api/heartbeat.h) of v->js: refused
 * while the gate ProgressDeadline is off (unless unchanged from `old`, an
 * update's previous object; NULL on create), else each in range, and no
 * startup allowance without a deadline. */
void js__validate_progress(struct js_vctx *v, const struct js_jobset *old);

/** Checks of the embedded Job template of ReplicatedJob `ri`. */
void js__validate_template(struct js_vctx *v, size_t ri);

#endif
