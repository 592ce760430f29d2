/*
 * jobctl.h - the local Job controller: what kube-controller-manager's Job
 * controller does for one batch/v1 Job, as a pure function over the Job
 * object and the pods observed for it (SPEC §6.5).
 *
 * Covered: completions, parallelism, completionMode Indexed and NonIndexed,
 * backoffLimit (failed pods with restartPolicy Never, container restarts with
 * OnFailure), backoffLimitPerIndex with maxFailedIndexes, podFailurePolicy
 * (onExitCodes, onPodConditions; FailJob, FailIndex, Ignore, Count),
 * activeDeadlineSeconds, suspend and podReplacementPolicy (Failed: a
 * terminating pod is replaced only once terminal; the default with a
 * podFailurePolicy. TerminatingOrFailed, the default otherwise: a
 * terminating pod counts as failed at once, as upstream's isPodFailed). Conditions and reasons are the ones the
 * real controller writes: FailureTarget before Failed and SuccessCriteriaMet
 * before Complete (the terminal condition is added once no pod of the Job is
 * left running), with BackoffLimitExceeded, DeadlineExceeded,
 * PodFailurePolicy, MaxFailedIndexesExceeded and FailedIndexes.
 *
 * Deliberate differences (docs/local.md): the pod re-creation backoff starts
 * at `backoff_base_ms` (Kubernetes: 10 s) so local iteration stays quick, and
 * pods deleted by the controller itself (suspend, a failed or complete Job)
 * are not counted as failures.
 *
 * Pure: no I/O, no clock (time arrives as `now_ms`), no globals. The caller
 * owns every pod and applies the plan. Not thread-safe per Job.
 */
#ifndef JS_JOBCTL_H
#define JS_JOBCTL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

/** Pod phase (core/v1 PodPhase). */
enum js_jobctl_phase {
	JS_JOBCTL_PENDING,   /* init containers still running */
	JS_JOBCTL_RUNNING,   /* main containers started */
	JS_JOBCTL_SUCCEEDED, /* every main container exited 0 */
	JS_JOBCTL_FAILED,    /* terminated, not succeeded */
};

/** Exit of one terminated container, as podFailurePolicy reads it. */
struct js_jobctl_exit {
	const char *container; /* borrowed */
	int32_t exit_code;
};

/** One pod of the Job as observed by the caller. All pointers borrowed. */
struct js_jobctl_pod {
	uint64_t id;                 /* caller's handle, echoed in plans */
	const char *name;            /* pod name, for messages */
	int32_t index;               /* completion index; -1 for NonIndexed */
	enum js_jobctl_phase phase;
	bool ready;                  /* every main container running */
	bool terminating;            /* deletion requested, processes left */
	bool deleted_by_controller;  /* the Job controller deleted it */
	int32_t restarts;            /* container restarts (OnFailure) */
	int64_t finished_ms;         /* when it reached Succeeded/Failed; when
					deletion began if terminating */
	/* Terminated containers: regular ones first, then init containers
	 * (the order the real controller scans them in). */
	const struct js_jobctl_exit *exits;
	size_t n_exits;
	/* Types of the pod conditions whose status is True. */
	const char *const *conditions;
	size_t n_conditions;
};

/** Knobs that are not part of the Job API. */
struct js_jobctl_opts {
	int64_t backoff_base_ms; /* first re-creation delay after a failure */
	int64_t backoff_max_ms;  /* ceiling of the doubling delay */
};

/** The two clocks of one sync, in milliseconds. Every delay and deadline
 * (backoff after a failed pod, when to sync again) is on `mono_ms`
 * (CLOCK_MONOTONIC, which a clock step cannot move), as are the pods'
 * finished_ms; timestamps written into the Job, and activeDeadlineSeconds
 * (counted from status.startTime, a wall-clock time), use `wall_ms`
 * (CLOCK_REALTIME, Unix milliseconds). */
struct js_jobctl_now {
	int64_t mono_ms;
	int64_t wall_ms;
};

/** What to do after one sync. */
struct js_jobctl_plan {
	size_t n_create;
	int32_t *create;         /* completion indexes of pods to create
				    (-1 for NonIndexed), malloc'd */
	size_t n_delete;
	uint64_t *delete_ids;    /* pods to delete (SIGTERM, grace, SIGKILL) */
	bool status_changed;     /* job.status was modified */
	bool finished;           /* Complete or Failed is True */
	int64_t wake_ms;         /* sync again at this monotonic time at the
				    latest (deadline, backoff); -1 = only on
				    change */
};

/**
 * Sync one Job: read `job` (a batch/v1 Job: spec and status), the pods seen
 * for it and the time `now`, then update job.status in place (counters,
 * completedIndexes, failedIndexes, startTime, completionTime, conditions)
 * and say which pods to create or delete. Level-based: the same input gives
 * the same result, so the caller may sync as often as it likes.
 *
 * Returns 0 and fills *ret_plan (release with js_jobctl_plan_done), or
 * JS_EINVALID when the Job spec cannot be run (Indexed without completions)
 * with *ret_plan untouched.
 */
JS_WARN_UNUSED int js_jobctl_sync(json_t *job, const struct js_jobctl_pod *pods, size_t n_pods,
				  const struct js_jobctl_now *now, const struct js_jobctl_opts *opts,
				  struct js_jobctl_plan *ret_plan);

/** Release what a plan owns and zero it. */
void js_jobctl_plan_done(struct js_jobctl_plan *plan);

/** The first condition of `type` with status True in job.status, or NULL.
 * Borrowed from `job`. */
const json_t *js_jobctl_condition(const json_t *job, const char *type);

/** Render a sorted index set as the Job API does ("0-2,4"). `set[i]` true
 * means index i is in the set. Caller frees. */
char *js_jobctl_format_indexes(const bool *set, size_t n);

#endif
