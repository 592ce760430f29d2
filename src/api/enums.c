/*
 * enums.c - one string table per API enum (STYLE.md convention 16).
 */
#include <string.h>

#include "api/jobset.h"

static int lookup(const char *const *table, int n, const char *s)
{
	if (!s)
		return -1;
	for (int i = 0; i < n; i++)
		if (strcmp(table[i], s) == 0)
			return i;
	return -1;
}

#define ENUM_TABLE(prefix, type, count, ...)                                     \
	static const char *const prefix##_names[count] = {__VA_ARGS__};          \
	const char *js_##prefix##_to_string(enum type v)                        \
	{                                                                        \
		return (v >= 0 && v < (count)) ? prefix##_names[v] : "";        \
	}                                                                        \
	enum type js_##prefix##_from_string(const char *s)                     \
	{                                                                        \
		return (enum type)lookup(prefix##_names, (count), s);           \
	}

ENUM_TABLE(success_op, js_success_op, JS_SUCCESS_OP__COUNT, "All", "Any")
ENUM_TABLE(startup_order, js_startup_order, JS_STARTUP_ORDER__COUNT, "AnyOrder", "InOrder")
ENUM_TABLE(restart_strategy, js_restart_strategy, JS_RESTART_STRATEGY__COUNT, "Recreate",
	   "BlockingRecreate", "InPlaceRestart")
ENUM_TABLE(fp_action, js_fp_action, JS_FP_ACTION__COUNT, "FailJobSet", "RestartJobSet",
	   "RestartJobSetAndIgnoreMaxRestarts", "RestartJob", "RestartJobAndIgnoreMaxRestarts")
ENUM_TABLE(depends_status, js_depends_status, JS_DEPENDS_STATUS__COUNT, "Ready", "Complete")
ENUM_TABLE(when_deleted, js_when_deleted, JS_WHEN_DELETED__COUNT, "Delete", "Retain")
ENUM_TABLE(job_failure_reason, js_job_failure_reason, JS_JOB_FAILURE_REASON__COUNT,
	   "BackoffLimitExceeded", "DeadlineExceeded", "FailedIndexes", "MaxFailedIndexesExceeded",
	   "PodFailurePolicy")
