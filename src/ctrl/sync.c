/*
 * sync.c - one reconcile of one JobSet key (SPEC §11.2, core/reconcile.h):
 * observe from the caches (observe.c), run the core, and be the Kubernetes
 * body of the plan executor (core/exec.h): js_exec_apply() decides the
 * order, the runs and the stop-at-first-failure; the ops table here hands
 * each action to the file that does it (ctrl/sync_int.h lists them). At the
 * end of the pass, even a failed one, what it wrote becomes the key's
 * expectations, and the next pass of the key does nothing until the caches
 * show them (rw.c).
 *
 * Memory: a reconcile's scratch (names, paths, bookkeeping) comes from the
 * worker's arena, reset after each reconcile (STYLE §12).
 *
 * Cancellation: every request of a worker is bound to the controller's
 * abort flag (controller.c), so a stop past its grace period ends a
 * reconcile within a request's time; no pass waits for a watch.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/arena.h"
#include "ctrl/sync_int.h"

/* ---- the body (core/exec.h) ---- */

static int op_create_jobs(void *self, const struct js_action *acts, size_t n, const struct js_exec_run *run)
{
	return js__runs_apply(self, acts, run, n);
}

static int op_delete_jobs(void *self, const struct js_action *acts, size_t n)
{
	return js__runs_apply(self, acts, NULL, n);
}

static int op_patch_jobs(void *self, const struct js_action *acts, size_t n)
{
	return js__runs_apply(self, acts, NULL, n);
}

static int op_delete_pods(void *self, const struct js_action *acts, size_t n)
{
	return js__runs_apply(self, acts, NULL, n);
}

static int op_patch_job(void *self, const struct js_action *a)
{
	return js__actions_patch_job(self, a);
}

static int op_apply_other(void *self, const struct js_action *a)
{
	return js__actions_apply_other(self, a);
}

static int op_write_status(void *self, const struct js_plan *plan)
{
	return js__status_write(self, plan);
}

static void op_emit_event(void *self, const struct js_event *e)
{
	struct js__body *b = self;
	js__event(b->c, b->o, e->type, e->reason, e->message);
}

static void op_count_metrics(void *self, const struct js_plan *plan)
{
	struct js__body *b = self;
	struct js_controller *c = b->c;
	const char *v[] = {b->o->name, b->o->ns};
	if (plan->metric_completed > 0)
		(void)js_metrics_add(c->metrics, JS__M_COMPLETED, v, plan->metric_completed);
	if (plan->metric_failed > 0)
		(void)js_metrics_add(c->metrics, JS__M_FAILED, v, plan->metric_failed);
	if (plan->metric_deadline_exceeded > 0)
		(void)js_metrics_add(c->metrics, JS__M_DEADLINE_EXCEEDED, v, plan->metric_deadline_exceeded);
	const struct js_jobset *js = b->o->rec->js;
	int32_t before = js->has_status ? js->status.restarts : 0;
	int32_t after = plan->status ? plan->status->restarts : 0;
	if (after > before)
		(void)js_metrics_add(c->metrics, JS__M_RESTARTS, v, after - before);
	if (!plan->skipped || strcmp(plan->skipped, "deleting") != 0)
		js__phases_observe(c, b->o->rec->key, plan->jobset ? plan->jobset : js, plan);
}

static void op_requeue_after(void *self, int64_t seconds)
{
	struct js__body *b = self;
	b->has_requeue_after = true;
	b->requeue_after = seconds;
}

static const struct js_exec_ops body_ops = {
	.max_run = 0, /* the whole run through one window */
	.create_jobs = op_create_jobs,
	.delete_jobs = op_delete_jobs,
	.patch_job = op_patch_job,
	.patch_jobs = op_patch_jobs,
	.delete_pods = op_delete_pods,
	.apply_other = op_apply_other,
	.write_status = op_write_status,
	.emit_event = op_emit_event,
	.count_metrics = op_count_metrics,
	.requeue_after = op_requeue_after,
};

void js__sync_key(struct js_controller *c, const char *key, struct js_arena *arena, struct js__sync_result *res)
{
	struct js__observed o = {0};
	memset(res, 0, sizeof(*res));
	int r = js__observe(c, arena, key, &o);
	if (r <= 0) {
		res->error = r < 0;
		if (r == 0) {
			js__oldpods_forget(c, key);
			(void)js__rw_pending(c, key, NULL, res); /* gone: forget what it wrote */
		}
		goto out;
	}
	if (js__rw_pending(c, key, &o, res))
		goto out; /* the caches do not show this key's last writes yet */
	struct js_reconcile_input in = {
		.jobset = o.rec->js,
		/* the cache's records, borrowed as they are: no copy */
		.jobs = (const struct js_obsjob *const *)(const void *)o.jobs,
		.n_jobs = o.n_jobs,
		.service_exists = o.service_exists,
		.pvcs = o.pvcs,
		.n_pvcs = o.n_pvcs,
		.pods = o.ipods,
		.n_pods = o.n_ipods,
		.workload_exists = o.workload_exists,
		.podgroups = o.podgroups,
		.n_podgroups = o.n_podgroups,
		.sched_deleting = o.sched_deleting,
		.gates = c->o.gates,
		.cleanup_direct = c->o.cleanup_direct,
		.policy = o.rec->policy, /* compiled at ingest, once per generation */
		.now = (int64_t)time(NULL),
	};
	/* A status.restarts written back below the attempt of a pod that still
	 * runs is restored from it (core/status.c), also at restarts 0, when
	 * the old pods are not read: one pass over the JobSet's records in the
	 * pod cache, reused below. */
	if (c->opods)
		in.pods_top_attempt = js__oldpods_top_attempt(c, &o);
	in.restarts_seen = js__ctrl_restarts_seen(c, key, o.rec->js->meta.uid);
	if (c->o.gates.node_quarantine)
		in.pending_pods_read_at = js__ctrl_pending_read_at(c, key);
	/* Restart cleanup (core/cleanup.h): the old pods when the core needs
	 * them, from their cache (oldpods.c). */
	if (c->opods && js_cleanup_wants_old_pods(o.rec->js, c->o.cleanup_direct))
		js__oldpods_observe(c, arena, &o, &in);
	else
		js__oldpods_forget(c, key);
	struct js_plan *plan = NULL;
	char *msg = NULL;
	r = js_reconcile_run(&in, &plan, &msg);
	/* Node quarantine: a whole-JobSet restart waits for the failed pods
	 * of the attempt it ends; read them and decide again, applying only
	 * the second plan (the first is a question, not a decision). */
	if (r == 0 && plan->want_failed_pods) {
		plan = js_reconcile_plan_free(plan);
		if (js__failpods_read(c, arena, &o, &in) < 0) {
			res->error = true;
			goto out;
		}
		r = js_reconcile_run(&in, &plan, &msg);
	}
	/* No room left: the pods that wait to be scheduled, read at most once
	 * per interval (the core decides when, from the time we pass back);
	 * the second plan is applied. A failed read is not a failed pass: the
	 * condition stays as it is and the core asks again after the
	 * interval. */
	if (r == 0 && plan->want_pending_pods) {
		plan = js_reconcile_plan_free(plan);
		(void)js__pendpods_read(c, arena, &o, &in);
		in.pending_pods_read_at = in.now;
		js__ctrl_note_pending_read(c, key, in.now);
		r = js_reconcile_run(&in, &plan, &msg);
	}
	if (r < 0) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_ERROR, "jobset '%s': %s", key, msg ? msg : js_strerror(r));
		free(msg);
		res->error = true;
		goto out;
	}
	if (plan->skipped)
		js__ctrl_logf(c, JS_CONTROLLER_LOG_DEBUG, "jobset '%s': skipped (%s)", key, plan->skipped);
	struct js__body b = {.c = c, .o = &o, .a = arena};
	b.cap_wrote = plan->n_actions + 1; /* each action writes one Job at most, plus the status */
	b.wrote = js_arena_calloc(arena, b.cap_wrote, sizeof(*b.wrote));
	size_t failed_at = SIZE_MAX;
	r = js_exec_apply(&body_ops, &b, plan, &failed_at);
	/* Read-your-writes, even after a failed pass: what was written must
	 * show before the next reconcile of this key acts (rw.c). */
	js__rw_expect(&b, key);
	res->error = r < 0;
	res->conflict = b.conflict;
	res->has_requeue_after = b.has_requeue_after;
	res->requeue_after = b.requeue_after;
	/* A pod held out of the pod cache (oldpods.c) is confirmed gone by a
	 * GET, not by an event: come back when its check is due. */
	if (o.n_held && (!res->has_requeue_after || res->requeue_after > o.held_wait_s)) {
		res->has_requeue_after = true;
		res->requeue_after = o.held_wait_s;
	}
	/* Once per attempt, before its first create: a LIST confirms what the
	 * cache says, then the key is reconciled again at once. */
	if (r == 0 && plan->confirm_old_pods && c->opods) {
		if (js__oldpods_confirm(c, &o) < 0) {
			res->error = true;
		} else {
			res->has_requeue_after = true;
			res->requeue_after = 0;
		}
	}
	js__ctrl_logf(c, JS_CONTROLLER_LOG_DEBUG, "jobset '%s': %zu actions, status %s, %s", key, plan->n_actions,
		      plan->status_changed ? "written" : "unchanged", r == 0 ? "ok" : js_apierr_strerror(r));
	js_reconcile_plan_free(plan);
out:
	js__observed_done(c, &o);
}
