/*
 * reconcile.c - one reconcile pass (SPEC §11.2): the order of the steps and
 * the plan they build. Each step lives in its own file (core_int.h).
 */
#include "core/reconcile.h"

#include <stdarg.h>
#include <string.h>

#include "api/defaults.h"
#include "api/render.h"
#include "api/validate.h"
#include "base/arena.h"
#include "base/buf.h"
#include "base/diag.h"
#include "base/parse.h"
#include "core/core_int.h"
#include "core/phase.h"

/* ---- helpers shared by the core ---- */

const char *js__fmt(struct js__ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	const char *s = js_arena_vprintf(c->plan->arena, fmt, ap);
	va_end(ap);
	return s;
}

bool js__parse_i32(const char *s, int32_t *ret)
{
	/* Go's strconv.Atoi, as upstream reads these labels (base/parse.h). */
	int64_t v;
	if (!s || js_parse_i64_in(s, strlen(s), INT32_MIN, INT32_MAX, &v) < 0)
		return false;
	*ret = (int32_t)v;
	return true;
}

void *js__grow(struct js__ctx *c, void *items, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return items;
	/* Doubling: the arena keeps the old copies, at most as much again. */
	size_t ncap = *cap ? *cap * 2 : 8;
	void *p = js_arena_calloc(c->plan->arena, ncap, size);
	if (n)
		memcpy(p, items, n * size);
	*cap = ncap;
	return p;
}

int32_t js__replicas(const struct js_rjob *r)
{
	return r->has_replicas ? r->replicas : 1;
}

struct js_rjob_status *js__rjob_status(struct js__ctx *c, const char *name)
{
	int i = js_jobset_find_rjob_status(c->js, name);
	return i < 0 ? NULL : &c->js->status.replicated_jobs_status[i];
}

struct js_action *js__ctx_action(struct js__ctx *c, enum js_action_kind kind, const char *name, json_t *object,
				 const char *why)
{
	c->actions = js__grow(c, c->actions, c->n_actions, &c->cap_actions, sizeof(*c->actions));
	struct js_action *a = &c->actions[c->n_actions++];
	*a = (struct js_action){
		.kind = kind,
		.name = js_arena_strdup(c->plan->arena, name ? name : ""),
		.object = object,
		.propagation = JS_PROPAGATION_FOREGROUND,
		.why = why,
	};
	return a;
}

void js__ctx_event(struct js__ctx *c, const char *type, const char *reason, const char *message)
{
	c->events = js__grow(c, c->events, c->n_events, &c->cap_events, sizeof(*c->events));
	c->events[c->n_events++] = (struct js_event){
		.type = strcmp(type, "Warning") == 0 ? "Warning" : "Normal",
		.reason = js_arena_strdup(c->plan->arena, reason),
		.message = js_arena_strdup(c->plan->arena, message),
	};
}

/* The Job failure reasons batch/v1 sets (the Job API's JobReason*
 * constants). A metric label takes only these, "Other" or "Unknown", so a
 * Job with a made-up reason cannot grow its cardinality. */
static const char *restart_reason(const struct js_obsjob *j)
{
	static const char *const known[] = {"BackoffLimitExceeded", "DeadlineExceeded", "PodFailurePolicy",
					    "MaxFailedIndexesExceeded", "FailedIndexes"};
	if (!j)
		return JS_REASON_RESTART_REQUESTED; /* js__failure_requested */
	const struct js_jobcond *f = js__status_failure_cond(j);
	if (!f || !f->reason || !*f->reason)
		return "Unknown";
	for (size_t i = 0; i < JS_ARRAY_SIZE(known); i++) {
		if (strcmp(f->reason, known[i]) == 0)
			return known[i];
	}
	return "Other";
}

void js__ctx_restart(struct js__ctx *c, const char *action, const struct js_obsjob *j)
{
	c->restarts = js__grow(c, c->restarts, c->n_restarts, &c->cap_restarts, sizeof(*c->restarts));
	c->restarts[c->n_restarts++] = (struct js_plan_restart){.action = action, .reason = restart_reason(j)};
}

void js__ctx_requeue(struct js__ctx *c, int64_t seconds)
{
	if (!c->plan->has_requeue_after || c->plan->requeue_after > seconds) {
		c->plan->has_requeue_after = true;
		c->plan->requeue_after = seconds;
	}
}

int js__ctx_fail(struct js__ctx *c, const char *fmt, ...)
{
	if (!c->err) {
		va_list ap;
		va_start(ap, fmt);
		c->err = js_arena_vprintf(c->plan->arena, fmt, ap);
		va_end(ap);
	}
	return JS_EINVALID;
}

/* ---- the plan ---- */

struct js_plan *js_reconcile_plan_free(struct js_plan *plan)
{
	if (!plan)
		return NULL;
	for (size_t i = 0; i < plan->n_actions; i++)
		json_decref(plan->actions[i].object);
	js_jobset_free(plan->jobset);
	/* The plan itself lives in its arena. */
	js_arena_free(plan->arena);
	return NULL;
}

json_t *js_plan_render_job(const struct js_plan *plan, const struct js_action *a)
{
	if (!plan->jobset || a->kind != JS_ACTION_CREATE_JOB || a->rjob >= plan->jobset->spec.n_replicated_jobs)
		return NULL;
	struct js_render_opts opts = {.gates = plan->gates, .quarantine = plan->quarantine};
	return js_render_job(plan->jobset, a->rjob, a->job_index, &opts);
}

struct js_jobset *js_plan_take_jobset(struct js_plan *plan)
{
	return JS_TAKE_PTR(plan->jobset);
}

const char *js_reconcile_action_kind_name(enum js_action_kind k)
{
	static const char *const names[JS_ACTION__COUNT] = {
		[JS_ACTION_CREATE_JOB] = "CreateJob",
		[JS_ACTION_DELETE_JOB] = "DeleteJob",
		[JS_ACTION_PATCH_JOB] = "PatchJob",
		[JS_ACTION_PATCH_JOB_STATUS] = "PatchJobStatus",
		[JS_ACTION_CREATE_SERVICE] = "CreateService",
		[JS_ACTION_CREATE_PVC] = "CreatePVC",
		[JS_ACTION_DELETE_JOBSET] = "DeleteJobSet",
		[JS_ACTION_DELETE_POD] = "DeletePod",
		[JS_ACTION_CREATE_WORKLOAD] = "CreateWorkload",
		[JS_ACTION_CREATE_PODGROUP] = "CreatePodGroup",
		[JS_ACTION_DELETE_WORKLOAD] = "DeleteWorkload",
		[JS_ACTION_DELETE_PODGROUP] = "DeletePodGroup",
	};
	return k >= 0 && k < JS_ACTION__COUNT ? names[k] : "?";
}

const char *js_reconcile_propagation_name(enum js_propagation p)
{
	return p == JS_PROPAGATION_BACKGROUND ? "Background" : "Foreground";
}

/* ---- the pass ---- */

/*
 * Suspended since creation (difference (a), unlike upstream #535): the
 * JobSet is suspended, owns no Job, has never been resumed (a resume leaves
 * Suspended=False behind) and never restarted. Creating Jobs and a Service
 * for a JobSet a queue has not admitted only costs API objects and leaks a
 * DNS name; they are created on the first resume, from the template as it is
 * then (so scheduling edits made while queued need no merge).
 */
static bool held_since_creation(const struct js__ctx *c)
{
	const struct js_jobset *js = c->js;
	const struct js_condition *s = js_jobset_condition(js, JS_COND_SUSPENDED);
	if (!(js->spec.has_suspend && js->spec.suspend) || c->owned.n > 0 || js->status.restarts > 0)
		return false;
	return !(s && s->status && strcmp(s->status, "False") == 0);
}

/* R8: every Job ready again after a restart. */
static void all_ready(struct js__ctx *c)
{
	const struct js_jobset *js = c->js;
	if (js->spec.has_suspend && js->spec.suspend)
		return;
	if (js_phase_all_ready(js))
		(void)js__status_set_condition(c, JS_COND_RESTARTING, false, "JobsReady", "all jobs are ready",
					       "Normal");
}

static bool managed_elsewhere(const struct js_jobset *js)
{
	return js->spec.managed_by && strcmp(js->spec.managed_by, JS_MANAGED_BY_SELF) != 0;
}

/* Every input Job by name, so finding one is O(1) and a reconcile stays
 * linear in its Jobs (issue 9). A name is taken by the first Job observed
 * under it; the API server never holds two. */
static void index_jobs(struct js__ctx *c)
{
	static const struct js_hmap_type by_name = {.borrow_keys = true};
	c->by_name = js_hmap_new(&by_name);
	for (size_t i = 0; i < c->in->n_jobs; i++) {
		const struct js_obsjob *j = c->in->jobs[i];
		if (!js_hmap_has(c->by_name, j->name))
			(void)js_hmap_put(c->by_name, j->name, (void *)(uintptr_t)j, NULL);
	}
}

/* Issue 22: a JobSet over a size bound (api/validate.h js_validate_limits)
 * reaches the core only when it never met the webhook (not installed, or
 * the object is older than it). Planning it would take memory and time in
 * proportion to numbers the schema lets reach 2^31, so it fails at once,
 * with the field, the bound and the value in the condition and a Warning
 * event, and nothing - not even the Service - is created. Returns true when
 * it failed the JobSet. */
static bool over_limits(struct js__ctx *c)
{
	struct js_diag d = {0};
	if (js_validate_limits(c->js, &d) == 0)
		return false;
	struct js_buf b;
	js_buf_init(&b, 0);
	/* The first few errors: a condition message is for a person. */
	for (size_t i = 0; i < d.n && i < 3; i++)
		if (js_buf_puts(&b, i ? "; " : "the JobSet is over a size limit and cannot run: ") < 0 ||
		    js_diag_format(&d.items[i], false, &b) < 0)
			break;
	if (d.n > 3 && js_buf_printf(&b, "; and %zu more", d.n - 3) < 0)
		js_buf_clear(&b); /* out of memory: the reason alone says why */
	js__status_set_failed(c, JS_REASON_LIMIT_EXCEEDED, js__fmt(c, "%s", js_buf_str(&b)));
	js_buf_done(&b);
	js_diag_done(&d);
	return true;
}

static int run_steps(struct js__ctx *c)
{
	const struct js_jobset *js = c->js;
	int r;

	/* R3: another controller manages the children and the status, but the
	 * TTL still applies to the JobSet object itself (upstream #1310). */
	if (managed_elsewhere(js)) {
		c->plan->skipped = "managedBy";
		return js__status_finished(js) ? js__finish_ttl(c) : 0;
	}
	index_jobs(c);
	js__status_restore_restarts(c);
	r = js__status_classify(c); /* R4 */
	if (r < 0)
		return r;
	js__status_compute(c); /* R5 */

	if (js__status_finished(js)) { /* R6, #666 */
		js__finish_delete(c, &c->active, "jobset finished");
		js__noroom_finished(c); /* ours: nothing waits any more */
		return js__finish_ttl(c);
	}
	if (over_limits(c))
		return 0;
	js__attempts_init(c);       /* KEP-1282 §1 */
	js__deadline_start_time(c); /* KEP-1186 */
	js__cleanup_run(c);         /* R7, core/cleanup.h */
	all_ready(c);                                                   /* R8 */
	if (js__deadline_applies(c)) {
		/* KEP-1186: success first, so a finished run is never failed by
		 * the deadline; the deadline before the failure policy, whose
		 * restart would start the clock again. */
		if (c->succeeded.n > 0 && js__success_run(c))
			return 0;
		if (js__deadline_run(c))
			return 0;
		if (c->failed.n > 0)
			return js__failure_run(c);
	} else {
		if (c->failed.n > 0) /* R9 */
			return js__failure_run(c);
		if (c->succeeded.n > 0 && js__success_run(c)) /* R10 */
			return 0;
	}
	if (js__failure_requested(c)) /* restart on request: the next pass replaces the Jobs */
		return 0;
	c->hold = held_since_creation(c);
	js__attempts_resume(c); /* KEP-1282 §2: before any Job is created or resumed */
	js__avoid_current(c);     /* ours: node quarantine, before any Job is made */
	js__noroom_run(c);        /* ours: does the quarantine leave room? */
	js__gang_run(c);          /* KEP-969 */
	js__create_dependents(c); /* R11-R13 */
	js__create_jobs(c);       /* R14 */
	js__suspend_run(c);       /* R15 */
	if (js->spec.failure_policy && js->spec.failure_policy->has_restart_strategy &&
	    js->spec.failure_policy->restart_strategy == JS_RESTART_STRATEGY_IN_PLACE && c->in->gates.in_place_restart)
		return js__suspend_in_place(c); /* R16 */
	return 0;
}

int js_reconcile_run(const struct js_reconcile_input *in, struct js_plan **ret_plan, char **reterr_msg)
{
	struct js__ctx c = {.in = in, .policy = in->policy};
	struct js_arena *arena = js_arena_new(0);
	int r = 0;

	c.plan = js_arena_calloc(arena, 1, sizeof(*c.plan));
	c.plan->arena = arena;
	c.plan->gates = in->gates;
	c.js = js_jobset_copy(in->jobset);
	js_time_format_rfc3339(in->now, c.now);

	if (c.js->meta.deletion_timestamp) {
		/* R2: children go by garbage collection; recreating them now
		 * would race it (upstream #561). */
		c.plan->skipped = "deleting";
	} else {
		/* Unlike upstream #796, an object that never met the webhook
		 * is defaulted here, so nil network/successPolicy never reach
		 * the policies. Defaulting only fills what is absent. */
		(void)js_default_jobset(c.js);
		r = run_steps(&c);
	}
	js_hmap_free(c.by_name);
	js__cleanup_done(&c);
	js_policy_unref(c.own_policy);
	c.plan->actions = c.actions;
	c.plan->n_actions = c.n_actions;
	c.plan->events = c.events;
	c.plan->n_events = c.n_events;
	c.plan->restarts = c.restarts;
	c.plan->n_restarts = c.n_restarts;
	c.plan->jobset = c.js;
	if (r < 0) {
		if (reterr_msg)
			*reterr_msg = js_xstrdup(c.err ? c.err : js_strerror(r));
		js_reconcile_plan_free(c.plan);
		return r;
	}
	c.plan->status_changed = c.dirty;
	c.plan->status = &c.js->status;
	*ret_plan = c.plan;
	return 0;
}
