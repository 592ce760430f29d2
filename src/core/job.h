/*
 * job.h - a child Job as the reconcile core observes it.
 *
 * The core never sees a full batch/v1 Job: it reads the handful of fields
 * below. A runtime fills a struct js_obsjob either field by field (the local
 * runtime, which owns its Jobs) or with js_job_from_json() from the object
 * the API server returned (the controller). Times are Unix seconds.
 *
 * Ownership: every pointer in a js_obsjob is owned by it; js_job_done()
 * releases them. Plain data, no hidden state, not thread-safe.
 */
#ifndef JS_JOB_H
#define JS_JOB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "base/time.h"

/** One batch/v1 JobCondition (Complete, Failed, FailureTarget,
 * SuccessCriteriaMet, Suspended, ...). */
struct js_jobcond {
	char *type;   /* "Complete", "Failed", ... */
	char *status; /* "True" | "False" | "Unknown" */
	char *reason;  /* NULL when absent */
	char *message; /* NULL when absent */
	bool has_last_transition_time;
	int64_t last_transition_time; /* Unix seconds */
};

/** An observed child Job (SPEC §11.3). */
struct js_obsjob {
	char *name;
	char *uid;              /* metadata.uid, or NULL */
	json_t *labels;         /* object of strings, or NULL */
	json_t *annotations;    /* object of strings, or NULL */
	char *owner_uid;        /* uid of the controller ownerReference with kind
				   JobSet and apiVersion jobset.x-k8s.io/v1alpha2;
				   NULL when there is none */
	bool deleting;          /* metadata.deletionTimestamp is set */

	bool has_suspend;       /* spec.suspend */
	bool suspend;
	bool has_parallelism;   /* spec.parallelism (nil means 1) */
	int32_t parallelism;
	bool has_completions;   /* spec.completions */
	int32_t completions;
	json_t *pod_template;   /* spec.template (PodTemplateSpec), or NULL; read
				   when resuming, to merge scheduling fields */

	int32_t active, succeeded, failed; /* status counters, absent = 0 */
	bool has_ready;                    /* status.ready */
	int32_t ready;
	bool has_terminating;              /* status.terminating */
	int32_t terminating;
	bool has_start_time;               /* status.startTime */
	int64_t start_time;

	size_t n_conditions;
	struct js_jobcond *conditions;
};

/**
 * Decode the fields above from a batch/v1 Job object. `job` is borrowed.
 * Unknown or malformed optional fields are ignored as the API server never
 * sends them; only a missing metadata.name is an error.
 * Returns 0 and fills *ret (caller releases with js_job_done), or
 * JS_EINVALID (with *ret untouched).
 */
JS_WARN_UNUSED int js_job_from_json(const json_t *job, struct js_obsjob *ret);

/** Release what `j` owns and zero it. NULL is a no-op. */
void js_job_done(struct js_obsjob *j);

/** Deep copy of `src` into *ret (caller releases with js_job_done). */
void js_job_copy(const struct js_obsjob *src, struct js_obsjob *ret);

/** Label `key` of the Job, or NULL. Borrowed. */
const char *js_job_label(const struct js_obsjob *j, const char *key);

/** The first condition of `type` with status "True", or NULL. Borrowed. */
const struct js_jobcond *js_job_condition_true(const struct js_obsjob *j, const char *type);


#endif
