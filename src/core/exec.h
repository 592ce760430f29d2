/*
 * exec.h - the one plan executor interface (issue 10): how a body carries
 * out what the brain decided.
 *
 * Each body implements a small vtable - the Kubernetes controller over the
 * API server (src/ctrl/sync.c), the local runtime over processes
 * (src/local/exec.c) and the simulator over an in-memory world
 * (src/sim/) - and js_exec_apply() applies a plan through it. The rules of
 * applying a plan are written here once (core/reconcile.h, SPEC §11.2):
 *
 *   1. actions run in plan order; runs of consecutive CreateJob (or
 *      DeleteJob, or DeletePod, or - when the body has patch_jobs - PatchJob) actions, at
 *      most `max_run` long, go to one call so a body can have them in flight
 *      together (a suspend, or the drain of a previous attempt, patches
 *      every Job);
 *   2. the first failing step stops the pass: no later action, no status
 *      write, no events, no metrics; the body retries the key with backoff;
 *   3. CreateJob bodies are rendered lazily: the body renders each Job
 *      (js_exec_render) just before it sends it, so neither the plan nor
 *      a run ever holds N rendered Jobs (issue 9), and a body can keep a
 *      window of requests in flight over a whole run;
 *   4. if status_changed, the status is written;
 *   5. only after that write succeeded: the events in order, then the
 *      metric increments (a failed write never double counts, §16.11);
 *   6. then the requeue request, if any.
 *
 * Ops return 0 or a negative error (JS_E* or -errno); an op that is NULL is
 * a body that cannot do that action, which fails the pass with
 * JS_EUNSUPPORTED.
 *
 * Not thread-safe per plan; js_exec_apply keeps no state between calls.
 */
#ifndef JS_EXEC_H
#define JS_EXEC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "core/reconcile.h"

/** The Jobs of one run of CreateJob actions, rendered on demand (rule 3). */
struct js_exec_run;

/**
 * Render the Job of the run's action `i` (i < the run's n): a new reference
 * the caller owns (json_decref), built from the plan's defaulted JobSet
 * (js_plan_render_job, SPEC §6.2). Returns NULL only when the plan can no
 * longer render (its JobSet was taken); the body then fails the run with
 * JS_EINVALID.
 */
json_t *js_exec_render(const struct js_exec_run *run, size_t i);

/** A body. `self` is the body's own context, passed back to every op. */
struct js_exec_ops {
	/* Creates/deletes handed to one create_jobs/delete_jobs call
	 * (0 = unlimited: the whole run of the plan). */
	size_t max_run;

	/* POST the Jobs of actions `acts[i]` (all CreateJob), i < n, each
	 * rendered with js_exec_render(run, i) when the body is ready to send
	 * it. Returns 0, or the first error (nothing is sent after it). */
	int (*create_jobs)(void *self, const struct js_action *acts, size_t n, const struct js_exec_run *run);

	/* DELETE the Jobs of actions `acts[i]` (all DeleteJob; a Job already
	 * gone is success). Returns 0 or the first error. */
	int (*delete_jobs)(void *self, const struct js_action *acts, size_t n);

	/* Merge patch on a Job (PatchJob) or on its status (PatchJobStatus;
	 * a->kind says which). */
	int (*patch_job)(void *self, const struct js_action *a);

	/* Merge patches on the Jobs of a run of PatchJob actions (never
	 * PatchJobStatus), which the body may have in flight together; a Job
	 * already gone is success. Returns 0 or the first error. May be NULL:
	 * then each goes to patch_job alone. */
	int (*patch_jobs)(void *self, const struct js_action *acts, size_t n);

	/* DELETE the pods of actions `acts[i]` (all DeletePod; a pod already
	 * gone is success), which the body may have in flight together. Returns
	 * 0 or the first error. */
	int (*delete_pods)(void *self, const struct js_action *acts, size_t n);

	/* CreateService, CreatePVC (AlreadyExists is success), DeleteJobSet
	 * and the KEP-969 Create/DeleteWorkload, Create/DeletePodGroup
	 * (AlreadyExists and NotFound are success).
	 * a->kind says which. */
	int (*apply_other)(void *self, const struct js_action *a);

	/* Write plan->status (called only when plan->status_changed). */
	int (*write_status)(void *self, const struct js_plan *plan);

	/* Emit one event of the plan (after the status write). Failures are
	 * the body's to log; they never fail the pass. May be NULL. */
	void (*emit_event)(void *self, const struct js_event *e);

	/* Add the plan's metric increments (after the status write). May be
	 * NULL. */
	void (*count_metrics)(void *self, const struct js_plan *plan);

	/* Reconcile again after `seconds`. May be NULL. */
	void (*requeue_after)(void *self, int64_t seconds);
};

/**
 * Apply `plan` through `ops` with the rules above. `plan` is borrowed (its
 * CreateJob actions are rendered through js_plan_render_job one run at a
 * time).
 * Returns 0 when every action, the status write (if any) and the requeue
 * were done; otherwise the first error of an op (JS_EUNSUPPORTED for a NULL
 * op the plan needs, JS_EINVALID when a CreateJob cannot be rendered because
 * the plan's JobSet was taken), and nothing after that op was attempted.
 * *ret_failed_at (if not NULL) receives the index of the action that failed
 * (the first action of a failed run), n_actions for the status write, or
 * SIZE_MAX on success.
 */
JS_WARN_UNUSED int js_exec_apply(const struct js_exec_ops *ops, void *self, const struct js_plan *plan,
				 size_t *ret_failed_at);

#endif
