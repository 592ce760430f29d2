/*
 * enums.c - one string table per API enum (STYLE.md convention 16). The
 * codec reads the same tables (api_int.h), so a value is spelled once.
 */
#include <string.h>

#include "api/api_int.h"

static int lookup(const struct js__enum_table *t, const char *s)
{
	if (!s)
		return -1;
	for (int i = 0; i < t->count; i++)
		if (strcmp(t->names[i], s) == 0)
			return i;
	return -1;
}

static const char *name_of(const struct js__enum_table *t, int v)
{
	return (v >= 0 && v < t->count) ? t->names[v] : "";
}

static const char *const success_op_names[JS_SUCCESS_OP__COUNT] = {"All", "Any"};
const struct js__enum_table js__success_op_table = {success_op_names, JS_SUCCESS_OP__COUNT};

const char *js_success_op_to_string(enum js_success_op v)
{
	return name_of(&js__success_op_table, v);
}

enum js_success_op js_success_op_from_string(const char *s)
{
	return (enum js_success_op)lookup(&js__success_op_table, s);
}

static const char *const startup_order_names[JS_STARTUP_ORDER__COUNT] = {"AnyOrder", "InOrder"};
const struct js__enum_table js__startup_order_table = {startup_order_names, JS_STARTUP_ORDER__COUNT};

const char *js_startup_order_to_string(enum js_startup_order v)
{
	return name_of(&js__startup_order_table, v);
}

enum js_startup_order js_startup_order_from_string(const char *s)
{
	return (enum js_startup_order)lookup(&js__startup_order_table, s);
}

static const char *const restart_strategy_names[JS_RESTART_STRATEGY__COUNT] = {"Recreate", "BlockingRecreate", "InPlaceRestart"};
const struct js__enum_table js__restart_strategy_table = {restart_strategy_names, JS_RESTART_STRATEGY__COUNT};

const char *js_restart_strategy_to_string(enum js_restart_strategy v)
{
	return name_of(&js__restart_strategy_table, v);
}

enum js_restart_strategy js_restart_strategy_from_string(const char *s)
{
	return (enum js_restart_strategy)lookup(&js__restart_strategy_table, s);
}

static const char *const fp_action_names[JS_FP_ACTION__COUNT] = {"FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts", "RestartJob", "RestartJobAndIgnoreMaxRestarts"};
const struct js__enum_table js__fp_action_table = {fp_action_names, JS_FP_ACTION__COUNT};

const char *js_fp_action_to_string(enum js_fp_action v)
{
	return name_of(&js__fp_action_table, v);
}

enum js_fp_action js_fp_action_from_string(const char *s)
{
	return (enum js_fp_action)lookup(&js__fp_action_table, s);
}

static const char *const depends_status_names[JS_DEPENDS_STATUS__COUNT] = {"Ready", "Complete"};
const struct js__enum_table js__depends_status_table = {depends_status_names, JS_DEPENDS_STATUS__COUNT};

const char *js_depends_status_to_string(enum js_depends_status v)
{
	return name_of(&js__depends_status_table, v);
}

enum js_depends_status js_depends_status_from_string(const char *s)
{
	return (enum js_depends_status)lookup(&js__depends_status_table, s);
}

static const char *const when_deleted_names[JS_WHEN_DELETED__COUNT] = {"Delete", "Retain"};
const struct js__enum_table js__when_deleted_table = {when_deleted_names, JS_WHEN_DELETED__COUNT};

const char *js_when_deleted_to_string(enum js_when_deleted v)
{
	return name_of(&js__when_deleted_table, v);
}

enum js_when_deleted js_when_deleted_from_string(const char *s)
{
	return (enum js_when_deleted)lookup(&js__when_deleted_table, s);
}

static const char *const job_failure_reason_names[JS_JOB_FAILURE_REASON__COUNT] = {"BackoffLimitExceeded", "DeadlineExceeded", "FailedIndexes", "MaxFailedIndexesExceeded", "PodFailurePolicy"};
const struct js__enum_table js__job_failure_reason_table = {job_failure_reason_names, JS_JOB_FAILURE_REASON__COUNT};

const char *js_job_failure_reason_to_string(enum js_job_failure_reason v)
{
	return name_of(&js__job_failure_reason_table, v);
}

enum js_job_failure_reason js_job_failure_reason_from_string(const char *s)
{
	return (enum js_job_failure_reason)lookup(&js__job_failure_reason_table, s);
}
