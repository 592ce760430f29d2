/*
 * cleanup.c - the restart cleanup (core/cleanup.h): deleting the Jobs and
 * pods of older restart attempts (SPEC §11.2 R7, §11.9) and the guard every
 * create passes, so that no pod of an older attempt runs beside a new pod of
 * the same hostname (#392). The invariant and why each rule keeps it are
 * written at the top of cleanup.h; this file only implements them.
 */
#include "core/cleanup.h"

#include "api/render.h"
#include "core/core_int.h"

/* A pass waiting on an old pod looks again after this many seconds when the
 * runtime listed the pods (nothing tells it when one goes), and after the
 * longer one when they come from a watch cache, which enqueues the JobSet
 * when an old pod goes; that requeue only covers a missed event. */
#define CLEANUP_RECHECK_LISTED_S 1
#define CLEANUP_RECHECK_CACHED_S 10

static bool direct_and_restarted(const struct js__ctx *c)
{
	return c->in->cleanup_direct && c->js->status.restarts > 0;
}

static bool blocking_recreate(const struct js_jobset *js)
{
	const struct js_failure_policy *fp = js->spec.failure_policy;
	return fp && fp->has_restart_strategy && fp->restart_strategy == JS_RESTART_STRATEGY_BLOCKING_RECREATE;
}

/* A Job of an older whole-JobSet attempt (not of an older per-Job attempt,
 * which keeps the current restart-attempt label). */
static bool older_attempt(const struct js__ctx *c, const struct js_obsjob *j)
{
	int32_t attempt;
	return js__parse_i32(j->restart_attempt, &attempt) && attempt < c->js->status.restarts;
}

static void recheck(struct js__ctx *c)
{
	js__ctx_requeue(c, c->in->old_pods_cached ? CLEANUP_RECHECK_CACHED_S : CLEANUP_RECHECK_LISTED_S);
}

bool js_cleanup_wants_old_pods(const struct js_jobset *js, bool cleanup_direct)
{
	return cleanup_direct && js->status.restarts > 0 && !js__status_finished(js);
}

int js_cleanup_old_pods_selector(const struct js_jobset *js, struct js_buf *out)
{
	const char *uid = js->meta.uid;
	if (uid && *uid)
		return js_buf_printf(out, "%s=%s,%s!=%d", JS_LABEL_JOBSET_UID, uid, JS_LABEL_RESTART_ATTEMPT,
				     (int)js->status.restarts);
	return js_buf_printf(out, "%s=%s,%s!=%d", JS_LABEL_JOBSET_NAME, js_jobset_name(js), JS_LABEL_RESTART_ATTEMPT,
			     (int)js->status.restarts);
}

enum js_cleanup_pod_kind js_cleanup_classify_pod(const struct js_jobset *js, const char *attempt)
{
	int32_t a;
	if (!js__parse_i32(attempt, &a))
		return JS_CLEANUP_POD_UNKNOWN;
	return a == js->status.restarts ? JS_CLEANUP_POD_CURRENT : JS_CLEANUP_POD_OLD;
}

void js__cleanup_run(struct js__ctx *c)
{
	static const char why[] = "previous restart attempt";
	const struct js__bucket *b = &c->previous;

	/* Foreground unless direct and of an older whole attempt: the Job then
	 * stays, marked, until its pods are gone, and holds its name. A Job
	 * already marked is not deleted again. */
	for (size_t i = 0; i < b->n; i++) {
		const struct js_obsjob *j = b->items[i];
		if (j->deleting)
			continue;
		struct js_action *a = js__ctx_action(c, JS_ACTION_DELETE_JOB, j->name, NULL, why);
		if (c->in->cleanup_direct && older_attempt(c, j)) {
			/* Background: the name is free at once; the pods are
			 * deleted below as the runtime lists them, rather than
			 * after the garbage collector's two waits (40 s or more
			 * each at 1,000 Jobs). Rule (2) holds every name
			 * meanwhile. */
			a->propagation = JS_PROPAGATION_BACKGROUND;
			c->cleanup.unmarked_old_jobs = true;
		}
	}
	if (!direct_and_restarted(c) || !c->in->old_pods_known)
		return;
	/* The old pods by Job name, hashed once: a linear scan per created
	 * name would be N x M at 1,000 Jobs. 100 DELETEs go in flight at once
	 * (core/exec.h); the API server's DeleteCollection would delete them
	 * one at a time. */
	static const struct js_hmap_type by_name = {.borrow_keys = true};
	for (size_t i = 0; i < c->in->n_old_pods; i++) {
		const struct js_oldpod *p = &c->in->old_pods[i];
		if (!p->job_name) {
			c->cleanup.hold_every_name = true;
		} else {
			if (!c->cleanup.held)
				c->cleanup.held = js_hmap_new(&by_name);
			if (!js_hmap_has(c->cleanup.held, p->job_name))
				(void)js_hmap_put(c->cleanup.held, p->job_name, (void *)(uintptr_t)1, NULL);
		}
		if (!p->deleting && !p->attempt_unknown && p->name)
			js__ctx_action(c, JS_ACTION_DELETE_POD, p->name, NULL, "pod of a previous restart attempt");
	}
}

bool js__cleanup_hold_all(struct js__ctx *c)
{
	bool blocking = blocking_recreate(c->js);

	/* BlockingRecreate: any Job of an older attempt, marked or not, whole
	 * or per-Job (§6.1). In Foreground it stays until its pods are gone. */
	if (blocking && c->previous.n > 0)
		return true;
	if (!direct_and_restarted(c))
		return false;
	/* Rule (2): the old Jobs are being deleted in this very pass. */
	if (c->cleanup.unmarked_old_jobs)
		return true;
	/* Rule (1): the runtime did not pass them; never create blind. */
	if (!c->in->old_pods_known) {
		c->plan->confirm_old_pods = true;
		recheck(c);
		return true;
	}
	/* BlockingRecreate in direct mode: any running old pod, any name. */
	if (blocking && c->in->n_old_pods > 0) {
		recheck(c);
		return true;
	}
	return false;
}

bool js__cleanup_hold_name(struct js__ctx *c, const char *name)
{
	if (!direct_and_restarted(c))
		return false;
	/* Rule (3): a cache is confirmed by one quorum LIST per attempt. */
	if (c->in->old_pods_cached && c->in->old_pods_confirmed_attempt != c->js->status.restarts) {
		c->plan->confirm_old_pods = true;
		return true;
	}
	/* Rule (4). */
	if (c->cleanup.hold_every_name || (c->cleanup.held && js_hmap_get(c->cleanup.held, name))) {
		recheck(c);
		return true;
	}
	return false;
}

void js__cleanup_done(struct js__ctx *c)
{
	c->cleanup.held = js_hmap_free(c->cleanup.held);
}
