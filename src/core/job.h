/*
 * job.h - a child Job as the reconcile core observes it: a compact,
 * immutable, reference-counted record (issue 9).
 *
 * The core never sees a full batch/v1 Job. A record holds only what the
 * core reads: identity (name, uid, controller owner uid), the four labels
 * the core uses, deletionTimestamp, the spec and status counters, the
 * conditions that decide a Job's outcome, and - the only parts of the pod
 * template kept - the placement fields and containers a resume rebuilds or
 * merges from the JobSet's (core/suspend.c, SPEC §11.13). A record is built
 * once when a Job is observed (the controller's informer transform hook,
 * the local runtime when its Job changes, the simulator) and then borrowed:
 * the core never copies it per reconcile.
 *
 * Memory: one allocation per record (the struct, its conditions and every
 * string packed together), plus deep copies of the pod template's
 * tolerations and schedulingGates when present, and of nodeSelector,
 * containers and initContainers for a suspended Job only (a resume needs
 * them; the containers would be most of a running Job's record).
 *
 * Ownership and threads: a record is read-only after creation, so any
 * number of threads may read it. js_job_ref/js_job_unref count references
 * atomically; the last unref frees it. Times are Unix seconds.
 */
#ifndef JS_JOB_H
#define JS_JOB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

/** One batch/v1 JobCondition the core reads. js_job_from_json keeps only
 * conditions with status "True" and type Complete, Failed or FailureTarget
 * (SPEC §11.3, §11.8): a Job's other conditions never change a plan. A record
 * never holds a condition without type or status (js_job_build drops it). */
struct js_jobcond {
	const char *type;    /* "Complete" | "Failed" | "FailureTarget" */
	const char *status;  /* "True" (js_job_build: as given) */
	const char *reason;  /* NULL when absent */
	const char *message; /* NULL when absent */
	bool has_last_transition_time;
	int64_t last_transition_time; /* Unix seconds */
};

/** An observed child Job (SPEC §11.3). Read-only; the refcount is private. */
struct js_obsjob {
	const char *name;
	const char *uid;        /* metadata.uid, or NULL */
	const char *owner_uid;  /* uid of the controller ownerReference with kind
				   JobSet and apiVersion jobset.x-k8s.io/v1alpha2;
				   NULL when there is none */
	/* The labels the core reads (jobset.sigs.k8s.io/replicatedjob-name,
	 * job-index, restart-attempt, job-restart-attempt); NULL when absent.
	 * js_job_from_json takes each from spec.template.metadata.labels when
	 * there, else from metadata.labels (job.c our_label: the template's
	 * are what the pods carry and cannot be edited once the Job ran). */
	const char *rjob_name, *job_index, *restart_attempt, *job_restart_attempt;
	/* Annotation jobset.sigs.k8s.io/execution-attempt (KEP-1282), NULL
	 * when absent: a resume that was applied but whose status write was
	 * lost is recognised by it. */
	const char *execution_attempt;
	/* Pod-template annotation jobset.sigs.k8s.io/quarantined-nodes (node
	 * quarantine, api/quarantine.h), NULL when absent: the nodes this
	 * attempt keeps off, read back from the Jobs that carry them. */
	const char *quarantined_nodes;
	bool deleting;          /* metadata.deletionTimestamp is set */

	bool has_suspend;       /* spec.suspend */
	bool suspend;
	bool has_parallelism;   /* spec.parallelism (nil means 1) */
	int32_t parallelism;
	bool has_completions;   /* spec.completions */
	int32_t completions;

	int32_t active, succeeded, failed; /* status counters, absent = 0 */
	bool has_ready;                    /* status.ready */
	int32_t ready;
	bool has_terminating;              /* status.terminating */
	int32_t terminating;
	bool has_start_time;               /* status.startTime */
	int64_t start_time;
	/* status.completedIndexes holds index 0 (an Indexed Job's leader
	 * finished for good: the Job controller never makes that index
	 * again). What exclusive placement needs to know that no leader pod
	 * will come (core/placement.h js_placement_elect). */
	bool index0_done;

	size_t n_conditions;
	const struct js_jobcond *conditions;

	/* spec.template.spec.{tolerations,schedulingGates} (arrays) and
	 * nodeSelector (object), NULL when absent: a resume rebuilds them from
	 * the JobSet's template and needs the Job's to remove stale entries
	 * (SPEC §11.13.2). js_job_from_json keeps nodeSelector only for a
	 * suspended Job (spec.suspend true), the only kind a resume reads. */
	json_t *tolerations, *scheduling_gates, *node_selector;
	/* spec.template.spec.{containers,initContainers} (arrays), NULL when
	 * absent: a resume with KEP-1150's gate merges the template's
	 * resources into them by container name. Like nodeSelector, kept by
	 * js_job_from_json only for a suspended Job. */
	json_t *containers, *init_containers;
};

/** Plain fields for js_job_build: every pointer is borrowed and copied. */
struct js_obsjob_init {
	struct js_obsjob job;
};

/* ---- building ---- */

/**
 * Whether a Job's status.completedIndexes (`completed`, NULL when absent)
 * holds index 0. The API server writes it as ascending intervals
 * ("0-3,5,7-9"), so index 0 is done iff the text begins with "0" followed
 * by its end, ',' or '-'. Garbage ("00", "x") reads as not done. Source:
 * batch/v1 JobStatus.completedIndexes.
 */
bool js_job_completed_index0(const char *completed);

/**
 * A new record (refcount 1) from a batch/v1 Job object. `job` is borrowed
 * and not referenced afterwards. Unknown or malformed optional fields are
 * ignored, as the API server never sends them.
 * Returns the record (release with js_job_unref), or NULL with *ret_err =
 * JS_EINVALID when metadata.name is missing (ret_err may be NULL).
 */
struct js_obsjob *js_job_from_json(const json_t *job, int *ret_err);

/**
 * A new record (refcount 1) holding a copy of `init->job`: strings, the
 * conditions and the JSON values of the pod template are copied, so the caller keeps what it
 * passed. For runtimes that own their Jobs (local, sim) and for tests.
 * Returns the record (release with js_job_unref), or NULL when
 * init->job.name is NULL.
 */
struct js_obsjob *js_job_build(const struct js_obsjob_init *init);

/* ---- sharing ---- */

/** Take a reference (atomic). Returns `j`. */
const struct js_obsjob *js_job_ref(const struct js_obsjob *j);

/** Drop a reference (atomic); the last one frees the record. NULL is a
 * no-op. */
void js_job_unref(const struct js_obsjob *j);

/* ---- reading ---- */

/** True when `a` and `b` agree in every field the core reads, so a
 * reconcile would plan the same for either (the controller enqueues the
 * JobSet only when this is false). NULL equals only NULL. */
bool js_job_same(const struct js_obsjob *a, const struct js_obsjob *b);

/** The first kept condition of `type` with status "True", or NULL.
 * Borrowed from `j`. */
const struct js_jobcond *js_job_condition_true(const struct js_obsjob *j, const char *type);

#endif
