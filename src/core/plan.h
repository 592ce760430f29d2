/*
 * plan.h - what one reconcile decided: the actions a body performs, the new
 * status, the events, the requeue (core/reconcile.h computes it, core/exec.h
 * applies it).
 *
 * Memory by lifetime (STYLE §12): the actions, the events and every string
 * they hold come from one arena owned by the plan, released in one call by
 * js_reconcile_plan_free; the core never frees them one by one. Patch and
 * object bodies are jansson trees owned by their action.
 *
 * CreateJob actions carry no body: they name (rjob index, job index), and
 * js_plan_render_job() renders the Job when a body is about to POST it, so a
 * plan never holds N rendered Jobs at once (issue 9).
 *
 * Plain data, read-only for runtimes. Not thread-safe; one owner.
 */
#ifndef JS_PLAN_H
#define JS_PLAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/jobset.h"
#include "base/common.h"

struct js_arena;
struct js_quarantine_list;

enum js_action_kind {
	JS_ACTION__INVALID = -1,
	JS_ACTION_CREATE_JOB,        /* POST the Job js_plan_render_job() gives */
	JS_ACTION_DELETE_JOB,        /* DELETE `name`; `propagation`; NotFound ok */
	JS_ACTION_PATCH_JOB,         /* JSON merge patch `object` on Job `name` */
	JS_ACTION_PATCH_JOB_STATUS,  /* JSON merge patch `object` on the status
					subresource of Job `name` (clears
					status.startTime before a resume) */
	JS_ACTION_CREATE_SERVICE,    /* POST `object` (the headless Service) */
	JS_ACTION_CREATE_PVC,        /* POST `object`; AlreadyExists ok */
	JS_ACTION_DELETE_JOBSET,     /* DELETE the JobSet `name`; `propagation` */
	JS_ACTION_DELETE_POD,        /* DELETE the pod `name` (a pod of an older
					restart attempt: cleanup "direct",
					core/reconcile.h); NotFound ok */
	JS_ACTION_CREATE_WORKLOAD,   /* POST `object` (scheduling.k8s.io
					Workload, KEP-969); AlreadyExists ok */
	JS_ACTION_CREATE_PODGROUP,   /* POST `object` (PodGroup); AlreadyExists ok */
	JS_ACTION_DELETE_WORKLOAD,   /* DELETE Workload `name`; NotFound ok */
	JS_ACTION_DELETE_PODGROUP,   /* DELETE PodGroup `name`; NotFound ok */
	JS_ACTION__COUNT
};

enum js_propagation {
	JS_PROPAGATION_FOREGROUND, /* "Foreground" */
	JS_PROPAGATION_BACKGROUND, /* "Background" */
};

/** One side effect the runtime must perform. */
struct js_action {
	enum js_action_kind kind;
	const char *name;                /* name of the object acted on (plan
					    arena) */
	json_t *object;                  /* merge patch (patches) or body
					    (Service, PVC), owned by the plan;
					    NULL for CreateJob and deletes */
	size_t rjob;                     /* CreateJob: index into
					    spec.replicatedJobs */
	int32_t job_index;               /* CreateJob: the Job's index */
	enum js_propagation propagation; /* deletes only */
	const char *why;                 /* static text for humans and logs */
	const char *fail_reason;         /* Warning event reason the body
					    emits when this action fails, or
					    NULL (static) */
	const char *fail_message;        /* its message, before ": <error>"
					    (static; with fail_reason) */
	const char *fail_hint;           /* what to do, after "<error>. ", or
					    NULL (static; with fail_reason) */
};

/** An event on the JobSet (SPEC §11.7), emitted after the status write. */
struct js_event {
	const char *type;    /* "Normal" | "Warning" (static) */
	const char *reason;  /* plan arena */
	const char *message; /* plan arena */
};

/** A restart the failure policy decided (SPEC §11.8), or one requested
 * through the restart-request annotation, for the metric
 * jobset_restarts_by_reason_total (docs/metrics.md). */
struct js_plan_restart {
	const char *action; /* "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts",
			       "RestartJob", "RestartJobAndIgnoreMaxRestarts"
			       (static) */
	const char *reason; /* the failed Job's Failed condition reason when
			       batch/v1 defines it (BackoffLimitExceeded,
			       DeadlineExceeded, PodFailurePolicy,
			       MaxFailedIndexesExceeded, FailedIndexes),
			       "Other" for any other, "Unknown" when it has
			       none; "RestartRequested" for a restart on
			       request (static) */
};

/** The outcome of one reconcile. Free with js_reconcile_plan_free(). */
struct js_plan {
	const char *skipped;          /* NULL, or why nothing was reconciled
					 ("deleting", "managedBy") - static */
	size_t n_actions;
	const struct js_action *actions;

	bool status_changed;          /* write `status` */
	const struct js_status *status; /* the new status (always set; points
					   into `jobset`, and stays valid in
					   the JobSet js_plan_take_jobset
					   hands over) */
	struct js_jobset *jobset;     /* the defaulted working copy the plan
					 was computed from, carrying the new
					 status; owned by the plan until
					 js_plan_take_jobset */

	size_t n_events;
	const struct js_event *events;

	bool confirm_old_pods;        /* restart cleanup (core/cleanup.h):
					 Jobs were held because the old pods
					 were not passed, or their cache view
					 was not confirmed in this attempt;
					 list them with one quorum LIST
					 (js_cleanup_old_pods_selector) and
					 reconcile again */
	bool want_failed_pods;        /* node quarantine (core/avoid.c): a
					 whole-JobSet or per-Job restart waits
					 for the current attempt's failed
					 pods; read
					 them (js_reconcile_input.failed_pods)
					 and reconcile again; nothing else of
					 this plan needs applying */
	bool want_pending_pods;       /* no room left (core/noroom.c): read
					 the current attempt's pods that
					 wait to be scheduled
					 (js_reconcile_input.pending_pods)
					 and reconcile again; this plan is
					 complete otherwise (the condition
					 left as it was) */
	const struct js_quarantine_list *quarantine; /* nodes the Jobs this
					 plan creates keep off (plan arena),
					 or NULL */
	bool has_requeue_after;       /* reconcile again after ... */
	int64_t requeue_after;        /* ... seconds (TTL, §11.14) */

	int32_t metric_completed;     /* jobset_completed_total += */
	int32_t metric_failed;        /* jobset_failed_total += */
	int32_t metric_deadline_exceeded; /* jobset_active_deadline_exceeded_total
					     += (KEP-1186) */

	size_t n_restarts;            /* restarts decided by this pass */
	const struct js_plan_restart *restarts;

	struct js_gates gates;        /* the gates the plan was computed with
					 (rendering reads them) */
	struct js_arena *arena;       /* owns actions, events and their
					 strings; private to the core */
};

/**
 * The batch/v1 Job of CreateJob action `a` (SPEC §6.2, §6.3), rendered from
 * plan->jobset - the same bytes the core would have rendered while planning.
 * Returns a new reference (caller json_decref's it), or NULL when `a` is not
 * a CreateJob of this plan or the JobSet was taken (js_plan_take_jobset).
 */
json_t *js_plan_render_job(const struct js_plan *plan, const struct js_action *a);

/**
 * Hand the plan's working copy of the JobSet (defaulted, carrying the new
 * status) to the caller, who frees it with js_jobset_free: a runtime that
 * stores the JobSet keeps it instead of copying it. plan->status keeps
 * pointing into it; afterwards plan->jobset is NULL and CreateJob actions
 * can no longer be rendered, so take it after applying the plan.
 * Returns the JobSet, or NULL when it was taken already.
 */
struct js_jobset *js_plan_take_jobset(struct js_plan *plan);

#endif
