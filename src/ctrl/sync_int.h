/*
 * sync_int.h - internals of one reconcile pass of one JobSet key, shared by
 * the files the pass is split into. Nothing outside them includes this.
 *
 *   sync.c     the pass: observe, run the core, apply the plan through the
 *              body (core/exec.h) whose ops table is there, then wait for
 *              the caches to show what was written
 *   observe.c  what the caches (and, for KEP-969, the API) show of a JobSet
 *   runs.c     the windowed runs of the plan - CreateJob, DeleteJob,
 *              PatchJob, DeletePod - through kube/batch.h, with the rules
 *              that make them idempotent (AlreadyExists and ownership,
 *              delete preconditions)
 *   actions.c  the one-off actions: Service, PVC, Workload and PodGroup
 *              creates and deletes, the JobSet's own delete, single patches
 *   status.c   the status write (merge patch, resourceVersion precondition,
 *              read back when its answer was lost)
 *   events.c   events about the JobSet (kube/recorder.h)
 *   oldpods.c  the older attempts' pods (restart cleanup "direct"): from
 *              a metadata-only cache, confirmed once per attempt by a LIST
 *   rw.c       read-your-writes: what this pass wrote becomes its key's
 *              expectations (ctrl/expect.h), which the next pass waits
 *              for without holding a worker
 */
#ifndef JS_CTRL_SYNC_INT_H
#define JS_CTRL_SYNC_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/exec.h"
#include "core/reconcile.h"
#include "ctrl/ctrl_int.h"
#include "kube/apierr.h"

struct js_arena;
struct js_hmap;

/* Observed state of one key: references to cached records (observe.c). */
struct js__observed {
	const char *ns, *name;             /* arena */
	const struct js_cache_jobset *rec; /* the JobSet, one reference */
	const void **jobs;                 /* its Jobs (struct js_obsjob), one reference each */
	size_t n_jobs;
	const char **pvcs;                 /* arena */
	size_t n_pvcs;
	bool service_exists;
	const void **ipod_recs;            /* in-place restart: the pod records, one reference each */
	struct js_obspod *ipods;           /* arena: what the core reads of them (§11.16) */
	size_t n_ipods;
	const void **opod_recs;            /* restart cleanup: its pod metadata records, one reference each */
	size_t n_opod_recs;
	bool opods_read;                   /* opod_recs were taken from the cache (oldpods.c) */
	size_t n_held;                     /* restart cleanup: pods held out of that cache (oldpods.c) */
	int64_t held_wait_s;               /* with n_held: seconds until a check of one is due */
	bool workload_exists;              /* KEP-969 */
	const char **podgroups;            /* arena; not being deleted */
	size_t n_podgroups;
	bool sched_deleting;               /* one is being deleted */
	json_t *regarding;                 /* what events are about (built once, lazily; events.c) */
	struct js_hmap *by_name;           /* name -> observed Job, built on first use */
};

/* The controller body's context for one reconcile (sync.c). */
struct js__body {
	struct js_controller *c;
	struct js__observed *o;
	struct js_arena *a;   /* the worker's scratch, reset after the reconcile */
	/* What this pass wrote that its caches must show before the key is
	 * reconciled again (js__rw_note; strings borrowed from the plan or the
	 * arena): recorded as the key's expectations once, at the end of the
	 * pass (rw.c), so runs of creates follow each other without a watch
	 * round trip in between, and no worker waits for a watch. */
	struct js_expect_write *wrote; /* arena, cap_wrote of them */
	size_t n_wrote, cap_wrote;
	bool conflict;        /* the status write met a newer resourceVersion */
	bool has_requeue_after;
	int64_t requeue_after;
};

/* ---- small helpers of every file of the pass ---- */

/* The controller is stopping past its grace period (ctrl_int.h `abort`). */
static inline bool js__aborted(struct js_controller *c)
{
	return atomic_load(&c->abort);
}

/* Count one request of verb `method`: `ok_code` when r is 0, else the
 * error's HTTP code. */
static inline void js__count(struct js_controller *c, const char *method, int r, const struct js_apierr *err,
			     long ok_code)
{
	js__ctrl_count_request(c, method, r == 0 ? ok_code : err->http_code);
}

/* Count one action of kind `k` by its outcome r. */
static inline void js__count_action(struct js_controller *c, enum js_action_kind k, int r)
{
	const char *v[] = {js_reconcile_action_kind_name(k), r == 0 ? "ok" : "error"};
	(void)js_metrics_add(c->metrics, JS__M_ACTIONS, v, 1);
}

/* What failed, for logs and Warning events. */
static inline const char *js__why(const struct js_apierr *err, int r)
{
	return err->message ? err->message : js_apierr_strerror(r);
}

/* ---- observe.c ---- */

/* Observe JobSet `key` ("ns/name") into *o (zeroed by the caller), scratch
 * from `a`. Returns 1 when there is a JobSet to reconcile, 0 when it is gone
 * (or undecodable), or an API error (KEP-969 reads). js__observed_done
 * releases *o in every case. */
int js__observe(struct js_controller *c, struct js_arena *a, const char *key, struct js__observed *o);

/* Release the references and memory *o holds. */
void js__observed_done(struct js_controller *c, struct js__observed *o);

/* The uid of the observed Job `name`, or NULL: a hash lookup, so deleting
 * N Jobs stays linear (issue 9). The observed Jobs, not the cache by name:
 * a delete's precondition is the incarnation the core decided about. */
const char *js__observed_job_uid(struct js__observed *o, const char *name);

/* ---- events.c ---- */

/* Send an event of `type` and `reason` about the JobSet (failures are
 * logged, never returned: an event is advice). */
void js__event(struct js_controller *c, struct js__observed *o, const char *type, const char *reason,
	       const char *msg);

/* The Warning event a plan asks for when action `a` fails (plan.h
 * fail_reason, e.g. KEP-1150 FailedResourcePropagation): fail_message,
 * `err`, then fail_hint. `err` is "<object>: <why>" ("; "-separated for a
 * batch), the API server's message included. */
void js__fail_event(struct js_controller *c, struct js__observed *o, const struct js_action *a, const char *err);

/* ---- runs.c ---- */

/* Apply a run of `n` actions of one kind - all CreateJob (rendered from
 * `run`), all DeleteJob, all DeletePod or all PatchJob; `run` is NULL
 * except for creates - through the sliding window, noting in `b` what the
 * caches must show before the next reconcile. Returns 0 or the first
 * error (nothing is sent after it). */
int js__runs_apply(struct js__body *b, const struct js_action *acts, const struct js_exec_run *run, size_t n);

/* ---- actions.c ---- */

/* A single merge patch of a Job or its status (PatchJob, PatchJobStatus). */
int js__actions_patch_job(struct js__body *b, const struct js_action *a);

/* Any other one-off action (core/exec.h apply_other). Returns 0, the
 * request's error, or JS_EUNSUPPORTED for a kind this body does not do. */
int js__actions_apply_other(struct js__body *b, const struct js_action *a);

/* ---- status.c ---- */

/* Write plan->status (core/exec.h write_status). Returns 0 or the error; a
 * conflict sets b->conflict. */
int js__status_write(struct js__body *b, const struct js_plan *plan);

/* ---- oldpods.c ---- */

/* Fill the old-pod fields of `in` (core/reconcile.h, core/cleanup.h) for
 * the observed JobSet: its pods of older (or unknown) attempts from the
 * cache (records referenced in o->opod_recs), plus what its confirming LIST
 * saw that the cache has not yet, and the attempt that LIST confirmed; plus
 * the pods held since they left the cache while they may still run, each
 * first checked by a GET when due (sets o->n_held, o->held_wait_s).
 * Scratch from `a`. Call only with c->opods. */
void js__oldpods_observe(struct js_controller *c, struct js_arena *a, struct js__observed *o,
			 struct js_reconcile_input *in);

/* The highest restart-attempt label among the observed JobSet's pods in
 * the cache (neither Succeeded nor Failed; labels as first seen) that carry
 * its jobset-uid label, 0 when none: js_reconcile_input.pods_top_attempt.
 * Takes the records into o->opod_recs (js__oldpods_observe reuses them).
 * Call only with c->opods. */
int32_t js__oldpods_top_attempt(struct js_controller *c, struct js__observed *o);

/* Answer plan->confirm_old_pods: one paginated, metadata-only LIST of the
 * observed JobSet's older attempts' pods that are neither Succeeded nor
 * Failed, remembered for its current attempt. Returns 0 or the error (then
 * nothing is remembered). */
int js__oldpods_confirm(struct js_controller *c, const struct js__observed *o);

/* failpods.c: node quarantine (gate NodeQuarantine; core/avoid.c). When a
 * plan asks (want_failed_pods): LIST the pods of the JobSet's current
 * attempt and fill in->failed_pods (arena `a`) with those its rules may
 * blame, GETting their nodes for the node-lost rule. Returns 0, or the
 * LIST's error (logged once here; `in` unchanged). */
int js__failpods_read(struct js_controller *c, struct js_arena *a, const struct js__observed *o,
		      struct js_reconcile_input *in);

/* failpods.c: one label-scoped, paginated LIST (500 a page) of the observed
 * JobSet's pods of its current attempt (labels jobset-name and
 * restart-attempt; `field_selector` may be NULL), calling `each` on every
 * pod until it returns false (then no further page is read). `what`
 * ("failed") names the pods in the one log line of a failure. Returns 0,
 * or the LIST's error (logged here unless the controller is stopping). */
int js__failpods_list(struct js_controller *c, struct js_arena *a, const struct js__observed *o,
		      const char *field_selector, const char *what, bool (*each)(void *ctx, const json_t *pod),
		      void *ctx);

/* pendpods.c: node quarantine, no room left (core/noroom.c). When a plan
 * asks (want_pending_pods): LIST the Pending pods of the JobSet's current
 * attempt and fill in->pending_pods (arena `a`) with those the scheduler
 * has not placed (PodScheduled False). Returns 0, or the LIST's error
 * (logged once here; `in` unchanged). */
int js__pendpods_read(struct js_controller *c, struct js_arena *a, const struct js__observed *o,
		      struct js_reconcile_input *in);

/* Pod `pod` of namespace `ns` was deleted by this pass (DeletePod answered):
 * until the cache shows it marked (at most 30 s), the view says it is, so
 * the next pass does not delete it again. No-op without the cache. */
void js__oldpods_note_deleted(struct js_controller *c, const char *ns, const char *pod);

/* Drop what is remembered of JobSet `key` (gone, finished, or not
 * restarted). No-op without the cache. */
void js__oldpods_forget(struct js_controller *c, const char *key);

/* ---- rw.c ---- */

/* Note that this pass wrote `want` of Job (or, JS_EXPECT_STATUS, JobSet)
 * `name`: `uid` the incarnation written or NULL, `rv` the resourceVersion
 * the answer carried or NULL. Strings must live until the pass ends. */
void js__rw_note(struct js__body *b, enum js_expect_want want, const char *name, const char *uid, const char *rv);

/* At the end of a pass, even a failed one: what it wrote becomes the
 * expectations of its key (ctrl/expect.h), which the next pass of the key
 * waits for (js__rw_pending). */
void js__rw_expect(struct js__body *b, const char *key);

/* Before a pass of `key` (observed in `o`): true when the caches do not
 * show yet what an earlier pass of the key wrote - the pass must not act;
 * *res then asks to look again within a second (the watch events of those
 * writes queue the key sooner). A wait that ran out is logged once, with
 * what it waited for, and the key is reconciled on the caches as they are.
 * The JobSet gone (o NULL) drops the key's expectations. */
bool js__rw_pending(struct js_controller *c, const char *key, const struct js__observed *o,
		    struct js__sync_result *res);

#endif
