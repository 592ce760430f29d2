/*
 * sim.c - the in-memory world of sim.h and its script language.
 */
#include "sim/sim.h"

#include "api/gates.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/codec.h"
#include "api/gates.h"
#include "base/json.h"
#include "base/parse.h"
#include "base/time.h"
#include "core/exec.h"
#include "core/phase.h"

#define MAX_TOKENS 16
#define SETTLE_ROUNDS 50

struct js_sim {
	struct js_jobset *js;
	json_t *jobs; /* array of batch/v1 Job objects, kept in name order */
	bool service_exists;
	json_t *pvcs; /* array of names */
	struct js_gates gates;
	int64_t now;
	int64_t next_uid;
	bool auto_settle;
	/* js_reconcile_input's restart cleanup "direct" and what the script
	 * says of the old attempts' pods: the truth, which a quorum LIST
	 * returns; a cache view leaves out the lagging ones until the core asks
	 * for a confirming LIST (core/cleanup.h) */
	bool cleanup_direct, old_pods_known, old_pods_cached;
	struct js_oldpod old_pods[64]; /* strings in old_strs */
	bool old_lagging[64];
	char *old_strs[128];
	size_t n_old_pods;
	int32_t old_confirmed_attempt;
	/* the script's `pods`: running pods of the JobSet with the attempt they
	 * were made in (strings in pod_strs: Job name, pod name) */
	struct sim_pod {
		const char *job, *name;
		int32_t attempt;
	} pods[64];
	char *pod_strs[128];
	size_t n_pods;
	int32_t restarts_seen; /* the script's restarts-seen: js_reconcile_input.restarts_seen */
	/* the last reconcile */
	struct js_plan *last;
	char *last_error;
	int64_t metric_completed, metric_failed, metric_deadline;
	char *decided; /* restarts decided so far, "ACTION:REASON ..." */
};

/* ---- small helpers ---- */

static int failf(char **reterr, int code, const char *fmt, ...) JS_PRINTF(3, 4);
static int failf(char **reterr, int code, const char *fmt, ...)
{
	if (reterr) {
		va_list ap;
		va_start(ap, fmt);
		char buf[1024];
		(void)vsnprintf(buf, sizeof(buf), fmt, ap);
		va_end(ap);
		*reterr = js_xstrdup(buf);
	}
	return code;
}

static void outf(struct js_buf *out, const char *fmt, ...) JS_PRINTF(2, 3);
static void outf(struct js_buf *out, const char *fmt, ...)
{
	if (!out)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (js_buf_vprintf(out, fmt, ap) < 0)
		out = NULL; /* past the ceiling: the account is cut short */
	va_end(ap);
}

/* A strict decimal int32 (base/parse.h); false on anything else. */
static bool parse_i32(const char *text, int32_t *ret)
{
	int64_t v;
	if (js_parse_i64_in(text, strlen(text), INT32_MIN, INT32_MAX, &v) < 0)
		return false;
	*ret = (int32_t)v;
	return true;
}

static const char *job_name(const json_t *job)
{
	return js_json_str(json_object_get(job, "metadata"), "name");
}

static int by_name(const void *a, const void *b)
{
	return strcmp(job_name(*(json_t *const *)a), job_name(*(json_t *const *)b));
}

static void sort_jobs(struct js_sim *s)
{
	size_t n = json_array_size(s->jobs);
	json_t **v = js_xcalloc(n ? n : 1, sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(s->jobs, i));
	qsort(v, n, sizeof(*v), by_name);
	json_array_clear(s->jobs);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(s->jobs, v[i]);
	free(v);
}

static json_t *find_job(const struct js_sim *s, const char *name)
{
	size_t i;
	json_t *j;
	json_array_foreach(s->jobs, i, j) {
		if (strcmp(job_name(j), name) == 0)
			return j;
	}
	return NULL;
}

static bool job_deleting(const json_t *job)
{
	return json_object_get(json_object_get(job, "metadata"), "deletionTimestamp") != NULL;
}

static void now_str(const struct js_sim *s, char out[21])
{
	js_time_format_rfc3339(s->now, out);
}

/* ---- the world ---- */

struct js_sim *js_sim_new(const struct js_jobset *js, struct js_gates gates, int64_t now)
{
	struct js_sim *s = js_xcalloc(1, sizeof(*s));
	char t[21];
	s->js = js_jobset_copy(js);
	if (!s->js->meta.uid)
		s->js->meta.uid = js_xstrdup("00000000-0000-0000-0000-00000000js01");
	if (!s->js->meta.namespace_)
		s->js->meta.namespace_ = js_xstrdup("default");
	js_time_format_rfc3339(now, t);
	if (!s->js->meta.creation_timestamp)
		s->js->meta.creation_timestamp = js_xstrdup(t);
	s->jobs = json_array();
	s->pvcs = json_array();
	s->gates = gates;
	s->now = now;
	return s;
}

static void clear_old_pods(struct js_sim *s)
{
	for (size_t i = 0; i < 2 * s->n_old_pods; i++)
		free(s->old_strs[i]);
	s->n_old_pods = 0;
}

static void clear_pods(struct js_sim *s)
{
	for (size_t i = 0; i < 2 * s->n_pods; i++)
		free(s->pod_strs[i]);
	s->n_pods = 0;
}

struct js_sim *js_sim_free(struct js_sim *s)
{
	if (!s)
		return NULL;
	js_jobset_free(s->js);
	json_decref(s->jobs);
	json_decref(s->pvcs);
	js_reconcile_plan_free(s->last);
	free(s->last_error);
	free(s->decided);
	clear_old_pods(s);
	clear_pods(s);
	free(s);
	return NULL;
}

void js_sim_set_auto_settle(struct js_sim *s, bool on)
{
	s->auto_settle = on;
}

const struct js_jobset *js_sim_jobset(const struct js_sim *s)
{
	return s->js;
}

const json_t *js_sim_jobs(const struct js_sim *s)
{
	return s->jobs;
}

/* ---- the world as a body of the executor (core/exec.h) ---- */

static int sim_create_jobs(void *self, const struct js_action *acts, size_t n, const struct js_exec_run *run)
{
	struct js_sim *s = self;
	for (size_t i = 0; i < n; i++) {
		json_t *j = js_exec_render(run, i);
		if (!j)
			return JS_EINVALID;
		char uid[32];
		(void)snprintf(uid, sizeof(uid), "job-uid-%lld", (long long)++s->next_uid);
		json_object_set_new(json_object_get(j, "metadata"), "uid", json_string(uid));
		json_object_set_new(j, "status", json_object());
		json_array_append_new(s->jobs, j);
	}
	(void)acts;
	sort_jobs(s);
	return 0;
}

static void remove_job(struct js_sim *s, const json_t *job);

/* Foreground: a deleted Job stays, with a deletionTimestamp, until the
 * script finalizes it. Background: a Job has no finalizer of its own, so
 * the API server removes it at once. */
static int sim_delete_jobs(void *self, const struct js_action *acts, size_t n)
{
	struct js_sim *s = self;
	char t[21];
	now_str(s, t);
	for (size_t i = 0; i < n; i++) {
		json_t *j = find_job(s, acts[i].name);
		if (j && acts[i].propagation == JS_PROPAGATION_BACKGROUND)
			remove_job(s, j);
		else if (j && !job_deleting(j))
			json_object_set_new(json_object_get(j, "metadata"), "deletionTimestamp", json_string(t));
	}
	return 0;
}

/* Marked for deletion; they still run until the script says otherwise. */
static int sim_delete_pods(void *self, const struct js_action *acts, size_t n)
{
	struct js_sim *s = self;
	for (size_t k = 0; k < n; k++)
		for (size_t i = 0; i < s->n_old_pods; i++)
			s->old_pods[i].deleting |= strcmp(s->old_pods[i].name, acts[k].name) == 0;
	return 0;
}

static int sim_patch_job(void *self, const struct js_action *a)
{
	json_t *j = find_job(self, a->name);
	if (j)
		js_json_merge_patch(j, a->object);
	return 0;
}

static int sim_apply_other(void *self, const struct js_action *a)
{
	struct js_sim *s = self;
	char t[21];
	if (a->kind == JS_ACTION_CREATE_SERVICE) {
		s->service_exists = true;
	} else if (a->kind == JS_ACTION_CREATE_PVC) {
		json_array_append_new(s->pvcs, json_string(a->name));
	} else if (a->kind != JS_ACTION_DELETE_JOBSET) {
		return JS_EUNSUPPORTED; /* KEP-969 objects: `jobset simulate` refuses the gate */
	} else if (!s->js->meta.deletion_timestamp) {
		now_str(s, t);
		s->js->meta.deletion_timestamp = js_xstrdup(t);
	}
	return 0;
}

/* Write the plan's status as the stored status, through the codec as an
 * API server would (the stored spec is not the plan's defaulted copy). */
static int sim_write_status(void *self, const struct js_plan *plan)
{
	struct js_sim *s = self;
	json_t *obj = js_codec_encode_jobset(s->js);
	json_object_set_new(obj, "status", js_codec_encode_status(plan->status));
	struct js_jobset *n = NULL;
	struct js_diag d = {0};
	if (js_codec_decode_jobset(obj, JS_CODEC_LENIENT, &d, &n) == 0) {
		js_jobset_free(s->js);
		s->js = n;
	}
	js_diag_done(&d);
	json_decref(obj);
	return 0;
}

static void sim_count_metrics(void *self, const struct js_plan *plan)
{
	struct js_sim *s = self;
	s->metric_completed += plan->metric_completed;
	s->metric_failed += plan->metric_failed;
	s->metric_deadline += plan->metric_deadline_exceeded;
	for (size_t i = 0; i < plan->n_restarts; i++) {
		char *d = js_buf_format("%s%s%s:%s", s->decided ? s->decided : "", s->decided ? " " : "",
					plan->restarts[i].action, plan->restarts[i].reason);
		free(s->decided);
		s->decided = d;
	}
}

static const struct js_exec_ops sim_ops = {
	.create_jobs = sim_create_jobs,
	.delete_jobs = sim_delete_jobs,
	.delete_pods = sim_delete_pods,
	.patch_job = sim_patch_job,
	.apply_other = sim_apply_other,
	.write_status = sim_write_status,
	.count_metrics = sim_count_metrics,
};

/* Observe the world into a reconcile input. */
static void observe(const struct js_sim *s, struct js_reconcile_input *in, struct js_obsjob ***jobs,
		    const char ***pvcs, struct js_oldpod *view)
{
	size_t n = 0, nj = json_array_size(s->jobs), np = json_array_size(s->pvcs);
	*jobs = js_xcalloc(nj ? nj : 1, sizeof(**jobs));
	*pvcs = js_xcalloc(np ? np : 1, sizeof(**pvcs));
	for (size_t i = 0; i < nj; i++) {
		struct js_obsjob *j = js_job_from_json(json_array_get(s->jobs, i), NULL);
		if (j)
			(*jobs)[n++] = j;
	}
	for (size_t i = 0; i < np; i++)
		(*pvcs)[i] = json_string_value(json_array_get(s->pvcs, i));
	*in = (struct js_reconcile_input){
		.jobset = s->js,
		.jobs = (const struct js_obsjob *const *)*jobs,
		.n_jobs = n,
		.service_exists = s->service_exists,
		.pvcs = *pvcs,
		.n_pvcs = np,
		.gates = s->gates,
		.cleanup_direct = s->cleanup_direct,
		/* The simulator has no pods that fail on a node: node
		 * quarantine never holds a restart here. */
		.failed_pods_known = true,
		.now = s->now,
	};
	/* As the controller does: the highest attempt among the running pods
	 * (all of this JobSet's uid here). */
	for (size_t i = 0; i < s->n_pods; i++)
		if (s->pods[i].attempt > in->pods_top_attempt)
			in->pods_top_attempt = s->pods[i].attempt;
	in->restarts_seen = s->restarts_seen;
	/* As the controller does: the old pods only when the core asks. */
	if (!js_cleanup_wants_old_pods(s->js, s->cleanup_direct))
		return;
	in->old_pods_known = s->old_pods_known;
	in->old_pods = view;
	in->old_pods_cached = s->old_pods_cached;
	in->old_pods_confirmed_attempt = s->old_confirmed_attempt;
	for (size_t i = 0; i < s->n_old_pods; i++)
		if (!s->old_pods_cached || !s->old_lagging[i])
			view[in->n_old_pods++] = s->old_pods[i];
}

/* The runtime's answer to plan->confirm_old_pods with a cache: one LIST
 * (the truth), kept until the cache has caught up, which the world models
 * by the lagging pods showing at once. Returns true when that changed the
 * view. */
static bool confirm_old_pods(struct js_sim *s, const struct js_plan *p)
{
	if (!p->confirm_old_pods || !s->old_pods_cached || s->old_confirmed_attempt == s->js->status.restarts)
		return false;
	s->old_confirmed_attempt = s->js->status.restarts;
	memset(s->old_lagging, 0, sizeof(s->old_lagging));
	return true;
}

static char *plan_text(const struct js_plan *p)
{
	json_t *a = json_array();
	for (size_t i = 0; i < p->n_actions; i++) {
		const struct js_action *x = &p->actions[i];
		json_t *obj = x->kind == JS_ACTION_CREATE_JOB ? js_plan_render_job(p, x) : json_incref(x->object);
		json_array_append_new(a, json_pack("{s:s,s:s,s:o?}", "kind", js_reconcile_action_kind_name(x->kind),
						   "name", x->name, "object", obj));
	}
	json_t *e = json_array();
	for (size_t i = 0; i < p->n_events; i++)
		json_array_append_new(e, json_pack("[s,s,s]", p->events[i].type, p->events[i].reason,
						   p->events[i].message));
	json_t *all = json_pack("{s:o,s:o,s:o,s:b,s:I}", "actions", a, "events", e, "status",
				js_codec_encode_status(p->status), "changed", p->status_changed, "requeue",
				(json_int_t)(p->has_requeue_after ? p->requeue_after : -1));
	char *txt = js_json_dump_sorted(all, false);
	json_decref(all);
	return txt;
}

static int32_t job_restarts_sum_at(const struct js_jobset *js, const char *rjob, size_t idx, bool *found)
{
	int i = js_jobset_find_rjob_status(js, rjob);
	*found = false;
	if (i < 0 || idx >= js->status.replicated_jobs_status[i].job_restarts.n)
		return 0;
	*found = true;
	return js->status.replicated_jobs_status[i].job_restarts.items[idx];
}

/* A pod of an older attempt the world still runs (the script's old-pods,
 * whether or not the core was shown them) holds Job name `name`: its Job
 * may be neither created nor resumed (core/cleanup.h, the invariant). */
static const char *old_pod_of(const struct js_sim *s, const char *name, bool any)
{
	for (size_t i = 0; s->old_pods_known && i < s->n_old_pods; i++)
		if (any || !s->old_pods[i].job_name || strcmp(s->old_pods[i].job_name, name) == 0)
			return s->old_pods[i].name;
	return NULL;
}

/* A running pod (the script's `pods`) of Job name `name` made in another
 * attempt than `attempt`, the one a create of that name is labelled with:
 * the two would share a hostname (core/cleanup.h, the invariant). */
static const struct sim_pod *other_attempt_pod(const struct js_sim *s, const char *name, const char *attempt)
{
	int32_t a;
	for (size_t i = 0; i < s->n_pods; i++)
		if (strcmp(s->pods[i].job, name) == 0 && (!attempt || !parse_i32(attempt, &a) || a != s->pods[i].attempt))
			return &s->pods[i];
	return NULL;
}

static bool resumes(const struct js_action *a)
{
	json_t *v = json_object_get(json_object_get(a->object, "spec"), "suspend");
	return a->kind == JS_ACTION_PATCH_JOB && json_is_false(v);
}

/* The invariants every plan must keep (sim.h). */
static int check_invariants(const struct js_sim *s, const struct js_plan *p, char **reterr)
{
	bool finished = js_jobset_condition_true(s->js, "Completed") || js_jobset_condition_true(s->js, "Failed");
	const struct js_failure_policy *fp = s->js->spec.failure_policy;
	bool blocking = fp && fp->has_restart_strategy &&
			fp->restart_strategy == JS_RESTART_STRATEGY_BLOCKING_RECREATE;
	for (size_t i = 0; i < p->n_actions; i++) {
		const struct js_action *a = &p->actions[i];
		const char *old;
		if ((a->kind == JS_ACTION_CREATE_JOB || resumes(a)) && (old = old_pod_of(s, a->name, blocking)))
			return failf(reterr, JS_ECONFLICT, "invariant: %s job %s while pod %s of an older attempt runs",
				     a->kind == JS_ACTION_CREATE_JOB ? "create of" : "resume of", a->name, old);
		if (a->kind != JS_ACTION_CREATE_JOB)
			continue;
		if (s->n_pods) {
			json_t *job = js_plan_render_job(p, a);
			const char *att = js_json_str(js_json_path(job, "metadata.labels"), JS_LABEL_RESTART_ATTEMPT);
			const struct sim_pod *other = other_attempt_pod(s, a->name, att);
			int r = other ? failf(reterr, JS_ECONFLICT,
					      "invariant: create of job %s (attempt %s) while pod %s of attempt %d runs",
					      a->name, att ? att : "none", other->name, (int)other->attempt)
				      : 0;
			json_decref(job);
			if (r < 0)
				return r;
		}
		if (find_job(s, a->name))
			return failf(reterr, JS_ECONFLICT, "invariant: create of existing job %s", a->name);
		if (finished)
			return failf(reterr, JS_ECONFLICT, "invariant: finished jobset creates job %s", a->name);
	}
	if (p->status->restarts < s->js->status.restarts ||
	    p->status->restarts_count_towards_max < s->js->status.restarts_count_towards_max)
		return failf(reterr, JS_ECONFLICT, "invariant: restart counter decreased");
	for (size_t i = 0; s->gates.restart_job && i < s->js->status.n_replicated_jobs_status; i++) {
		const struct js_rjob_status *o = &s->js->status.replicated_jobs_status[i];
		for (size_t k = 0; k < o->job_restarts.n; k++) {
			bool found;
			struct js_jobset tmp = {.status = *p->status};
			int32_t v = job_restarts_sum_at(&tmp, o->name, k, &found);
			if (found && v < o->job_restarts.items[k])
				return failf(reterr, JS_ECONFLICT, "invariant: jobRestarts of %s decreased", o->name);
		}
	}
	return 0;
}

static void print_plan(const struct js_plan *p, struct js_buf *out)
{
	if (p->skipped)
		outf(out, "  skipped: %s\n", p->skipped);
	for (size_t i = 0; i < p->n_actions; i++) {
		const struct js_action *a = &p->actions[i];
		outf(out, "  %s %s (%s)", js_reconcile_action_kind_name(a->kind), a->name, a->why);
		if (a->kind == JS_ACTION_PATCH_JOB || a->kind == JS_ACTION_PATCH_JOB_STATUS) {
			char *t = js_json_dump_sorted(a->object, false);
			outf(out, " %s", t);
			free(t);
		}
		outf(out, "\n");
	}
	for (size_t i = 0; i < p->n_events; i++)
		outf(out, "  event %s %s: %s\n", p->events[i].type, p->events[i].reason, p->events[i].message);
	if (p->has_requeue_after)
		outf(out, "  requeue after %llds\n", (long long)p->requeue_after);
}

/* One reconcile, applied. Returns 1 when it did something (actions or a
 * status write), 0 when quiet, <0 on error. */
static int reconcile_once(struct js_sim *s, struct js_buf *out, char **reterr)
{
	struct js_reconcile_input in;
	struct js_obsjob **jobs;
	const char **pvcs;
	struct js_oldpod view[JS_ARRAY_SIZE(s->old_pods)];
	struct js_plan *p = NULL, *p2 = NULL;
	char *err = NULL, *err2 = NULL;
	int r, r2, ret = 0;

	observe(s, &in, &jobs, &pvcs, view);
	r = js_reconcile_run(&in, &p, &err);
	r2 = js_reconcile_run(&in, &p2, &err2);
	s->last = js_reconcile_plan_free(s->last);
	free(s->last_error);
	s->last_error = NULL;
	if (r < 0) {
		outf(out, "  error: %s\n", err);
		s->last_error = err;
		err = NULL;
		ret = r2 < 0 ? 0 : failf(reterr, JS_ECONFLICT, "invariant: reconcile is not deterministic");
		goto done;
	}
	if (r2 < 0) {
		ret = failf(reterr, JS_ECONFLICT, "invariant: reconcile is not deterministic");
		goto done;
	}
	char *t1 = plan_text(p), *t2 = plan_text(p2);
	bool same = strcmp(t1, t2) == 0;
	free(t1);
	free(t2);
	if (!same) {
		ret = failf(reterr, JS_ECONFLICT, "invariant: reconcile is not deterministic");
		goto done;
	}
	ret = check_invariants(s, p, reterr);
	if (ret < 0)
		goto done;
	print_plan(p, out);
	/* The world's ops never fail. */
	ret = js_exec_apply(&sim_ops, s, p, NULL);
	if (ret < 0)
		goto done;
	if (p->confirm_old_pods)
		outf(out, "  confirm the old pods with a LIST\n");
	ret = p->n_actions > 0 || p->status_changed || confirm_old_pods(s, p);
	s->last = JS_TAKE_PTR(p);
done:
	js_reconcile_plan_free(p);
	js_reconcile_plan_free(p2);
	free(err);
	free(err2);
	for (size_t i = 0; i < in.n_jobs; i++)
		js_job_unref(jobs[i]);
	free(jobs);
	free(pvcs);
	return ret;
}

static int settle(struct js_sim *s, struct js_buf *out, char **reterr)
{
	for (int i = 0; i < SETTLE_ROUNDS; i++) {
		int r = reconcile_once(s, out, reterr);
		if (r <= 0)
			return r;
	}
	return failf(reterr, JS_ECONFLICT, "invariant: no fixpoint after %d reconciles", SETTLE_ROUNDS);
}

static const char *label_or(const json_t *labels, const char *key)
{
	const char *v = js_json_str(labels, key);
	return v ? v : "?";
}

void js_sim_print_status(const struct js_sim *s, struct js_buf *out)
{
	const struct js_status *st = &s->js->status;
	outf(out, "  status: restarts=%d restartsCountTowardsMax=%d terminalState=%s\n", st->restarts,
	     st->restarts_count_towards_max, st->terminal_state ? st->terminal_state : "-");
	for (size_t i = 0; i < st->n_conditions; i++)
		outf(out, "  condition %s=%s %s: %s\n", st->conditions[i].type, st->conditions[i].status,
		     st->conditions[i].reason ? st->conditions[i].reason : "",
		     st->conditions[i].message ? st->conditions[i].message : "");
	for (size_t i = 0; i < st->n_replicated_jobs_status; i++) {
		const struct js_rjob_status *r = &st->replicated_jobs_status[i];
		outf(out, "  rjob %s: ready=%d succeeded=%d failed=%d active=%d suspended=%d", r->name, r->ready,
		     r->succeeded, r->failed, r->active, r->suspended);
		for (size_t k = 0; k < r->job_restarts.n; k++)
			outf(out, "%s%d%s", k ? "," : " jobRestarts=[", r->job_restarts.items[k],
			     k + 1 == r->job_restarts.n ? "]" : "");
		outf(out, "\n");
	}
	size_t i;
	json_t *j;
	json_array_foreach(s->jobs, i, j) {
		json_t *m = json_object_get(j, "metadata");
		outf(out, "  job %s attempt=%s%s%s\n", job_name(j),
		     label_or(json_object_get(m, "labels"), JS_LABEL_RESTART_ATTEMPT),
		     json_is_true(js_json_path(j, "spec.suspend")) ? " suspended" : "",
		     job_deleting(j) ? " deleting" : "");
	}
}


/* ---- the script ---- */

/* Split `line` into at most MAX_TOKENS words; `key="a b"` and `"a b"` keep
 * their spaces (quotes removed). Returns the count; words live in `buf`. */
static size_t tokenize(const char *line, char *buf, size_t cap, char **tok)
{
	size_t n = 0, o = 0;
	const char *p = line;
	while (*p && n < MAX_TOKENS) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || (*p == '#' && (p[1] == ' ' || p[1] == '\0' || p == line)))
			break; /* a comment; `#N` selects a Job */
		tok[n++] = &buf[o];
		bool q = false;
		while (*p && (q || (*p != ' ' && *p != '\t')) && o + 1 < cap) {
			if (*p == '"')
				q = !q;
			else
				buf[o++] = *p;
			p++;
		}
		buf[o++] = '\0';
	}
	return n;
}

static const char *kv(char **tok, size_t n, const char *key)
{
	size_t kl = strlen(key);
	for (size_t i = 0; i < n; i++)
		if (strncmp(tok[i], key, kl) == 0 && tok[i][kl] == '=')
			return tok[i] + kl + 1;
	return NULL;
}

/* Rest of `line` after its first word (for JSON arguments). */
static const char *rest_after(const char *line, size_t words)
{
	const char *p = line;
	for (size_t w = 0; w < words; w++) {
		while (*p == ' ' || *p == '\t')
			p++;
		while (*p && *p != ' ' && *p != '\t')
			p++;
	}
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Jobs chosen by `sel` into `v` (borrowed); `deleting` picks Jobs being
 * deleted (finalize) instead of live ones for `all`, `#N` and prefixes. */
static int select_jobs(struct js_sim *s, const char *sel, bool deleting, json_t **v, size_t *n, char **reterr)
{
	size_t i, live = 0;
	json_t *j;
	size_t len = strlen(sel);
	int32_t nth = -1;
	*n = 0;
	if (sel[0] == '#' && !parse_i32(sel + 1, &nth))
		return failf(reterr, JS_EINVALID, "bad job selector %s", sel);
	json_array_foreach(s->jobs, i, j) {
		const char *name = job_name(j);
		bool pick;
		if (strcmp(sel, name) == 0)
			pick = true;
		else if (job_deleting(j) != deleting)
			pick = false;
		else if (strcmp(sel, "all") == 0)
			pick = true;
		else if (nth >= 0)
			pick = (int32_t)live++ == nth;
		else
			pick = len > 0 && sel[len - 1] == '*' && strncmp(sel, name, len - 1) == 0;
		if (pick)
			v[(*n)++] = j;
	}
	if (*n == 0 && strcmp(sel, "all") != 0)
		return failf(reterr, JS_EINVALID, "no job matches %s", sel);
	return 0;
}

static json_t *jcond(const char *type, const char *reason, const char *message, const char *t)
{
	json_t *c = json_pack("{s:s,s:s,s:s}", "type", type, "status", "True", "lastTransitionTime", t);
	if (reason)
		json_object_set_new(c, "reason", json_string(reason));
	if (message)
		json_object_set_new(c, "message", json_string(message));
	return c;
}

static json_int_t parallelism_of(const json_t *job)
{
	json_t *p = js_json_path(job, "spec.parallelism");
	return json_is_integer(p) ? json_integer_value(p) : 1;
}

/* The [api]-harness primitives of acceptance-cases.md §0.4. */
static void drive(struct js_sim *s, const char *cmd, json_t *job, const char *reason, const char *message)
{
	char t[21];
	now_str(s, t);
	json_t *old = json_object_get(job, "status");
	json_t *start = json_object_get(old, "startTime");
	json_t *st = json_object();
	json_t *conds = json_array();
	json_int_t p = parallelism_of(job);

	json_object_set(st, "startTime", start ? start : json_string(t));
	if (!start)
		json_decref(json_object_get(st, "startTime"));
	if (strcmp(cmd, "fail") == 0) {
		json_array_append_new(conds, jcond("FailureTarget", reason ? reason : "", message ? message : "", t));
		json_array_append_new(conds, jcond("Failed", reason ? reason : "", message ? message : "", t));
	} else if (strcmp(cmd, "failtarget") == 0) {
		json_array_append_new(conds, jcond("FailureTarget", reason ? reason : "", message ? message : "", t));
		json_object_set_new(st, "terminating", json_integer(p));
	} else if (strcmp(cmd, "complete") == 0) {
		json_array_append_new(conds, jcond("SuccessCriteriaMet", NULL, NULL, t));
		json_array_append_new(conds, jcond("Complete", NULL, NULL, t));
		json_object_set_new(st, "succeeded", json_integer(p));
		json_object_set_new(st, "completionTime", json_string(t));
	} else if (strcmp(cmd, "ready") == 0) {
		json_object_set_new(st, "active", json_integer(p));
		json_object_set_new(st, "ready", json_integer(p));
	} else if (strcmp(cmd, "activate") == 0) {
		json_object_set_new(st, "active", json_integer(p));
	} else { /* suspended-cond: keep the status, add the condition */
		json_decref(st);
		st = json_deep_copy(old ? old : json_object());
		json_decref(conds);
		conds = json_object_get(st, "conditions");
		if (!json_is_array(conds)) {
			conds = json_array();
			json_object_set_new(st, "conditions", conds);
		}
		json_array_append_new(conds, jcond("Suspended", "JobSuspended", "Job suspended", t));
		json_incref(conds);
	}
	if (json_array_size(conds))
		json_object_set(st, "conditions", conds);
	json_decref(conds);
	json_object_set_new(job, "status", st);
}

static void remove_job(struct js_sim *s, const json_t *job)
{
	size_t i;
	json_t *j;
	json_array_foreach(s->jobs, i, j) {
		if (j == job) {
			json_array_remove(s->jobs, i);
			return;
		}
	}
}

static int patch_jobset(struct js_sim *s, const char *text, char **reterr)
{
	json_error_t e;
	json_t *patch = json_loads(text, 0, &e);
	if (!json_is_object(patch)) {
		json_decref(patch);
		return failf(reterr, JS_EINVALID, "patch: not a JSON object: %s", e.text);
	}
	json_t *obj = js_codec_encode_jobset(s->js);
	js_json_merge_patch(obj, patch);
	struct js_jobset *n = NULL;
	struct js_diag d = {0};
	int r = js_codec_decode_jobset(obj, JS_CODEC_LENIENT, &d, &n);
	json_decref(obj);
	json_decref(patch);
	if (r < 0) {
		r = failf(reterr, JS_EINVALID, "patch: %s", d.n ? d.items[0].message : "invalid");
		js_diag_done(&d);
		return r;
	}
	js_diag_done(&d);
	js_jobset_free(s->js);
	s->js = n;
	return 0;
}

/* ---- expectations ---- */

static bool action_is(const struct js_action *a, const char *spec)
{
	const char *colon = strchr(spec, ':');
	const char *kind = js_reconcile_action_kind_name(a->kind);
	if (!colon)
		return strcmp(kind, spec) == 0;
	return strlen(kind) == (size_t)(colon - spec) && strncmp(kind, spec, (size_t)(colon - spec)) == 0 &&
	       strcmp(a->name, colon + 1) == 0;
}

static char *actions_text(const struct js_plan *p)
{
	struct js_buf b;
	js_buf_init(&b, 0);
	for (size_t i = 0; p && i < p->n_actions; i++)
		outf(&b, "%s%s:%s", i ? " " : "", js_reconcile_action_kind_name(p->actions[i].kind), p->actions[i].name);
	return js_buf_take(&b);
}

static int expect_actions(struct js_sim *s, char **tok, size_t n, char **reterr)
{
	const struct js_plan *p = s->last;
	size_t na = p ? p->n_actions : 0;
	bool ok;
	if (strcmp(tok[1], "actions") == 0) {
		bool none = n == 3 && strcmp(tok[2], "none") == 0;
		ok = none ? na == 0 : na == n - 2;
		for (size_t i = 0; ok && !none && i < na; i++)
			ok = action_is(&p->actions[i], tok[2 + i]);
	} else if (strcmp(tok[1], "actions-include") == 0) {
		ok = true;
		for (size_t k = 2; ok && k < n; k++) {
			ok = false;
			for (size_t i = 0; i < na && !ok; i++)
				ok = action_is(&p->actions[i], tok[k]);
		}
	} else { /* action-count KIND N */
		int32_t want, have = 0;
		if (n != 4 || !parse_i32(tok[3], &want))
			return failf(reterr, JS_EINVALID, "usage: expect action-count KIND N");
		for (size_t i = 0; i < na; i++)
			have += action_is(&p->actions[i], tok[2]);
		ok = have == want;
	}
	if (ok)
		return 0;
	char *t = actions_text(p);
	int r = failf(reterr, JS_ECONFLICT, "actions were [%s]", t);
	free(t);
	return r;
}

static bool i32list_matches(const struct js_i32list *l, const char *want)
{
	struct js_buf b;
	js_buf_init(&b, 0);
	if (!l->n)
		outf(&b, "-");
	for (size_t k = 0; k < l->n; k++)
		outf(&b, "%s%d%s", k ? "," : "[", l->items[k], k + 1 == l->n ? "]" : "");
	bool ok = strcmp(js_buf_str(&b), want) == 0;
	js_buf_done(&b);
	return ok;
}

static int expect_counts(struct js_sim *s, char **tok, size_t n, char **reterr)
{
	const struct js_status *st = &s->js->status;
	const struct js_rjob_status *r = NULL;
	size_t first = 2;
	if (strcmp(tok[1], "rjob") == 0) {
		int i = n > 2 ? js_jobset_find_rjob_status(s->js, tok[2]) : -1;
		if (i < 0)
			return failf(reterr, JS_ECONFLICT, "no replicatedJobsStatus entry %s", n > 2 ? tok[2] : "");
		r = &st->replicated_jobs_status[i];
		first = 3;
	}
	for (size_t k = first; k < n; k++) {
		char *eq = strchr(tok[k], '=');
		int32_t want = 0, have = 0;
		if (!eq)
			return failf(reterr, JS_EINVALID, "expected key=value, got %s", tok[k]);
		*eq = '\0';
		const char *key = tok[k], *val = eq + 1;
		bool ok;
		if (strcmp(key, "terminalState") == 0) {
			ok = strcmp(st->terminal_state ? st->terminal_state : "-", val) == 0;
		} else if (!r && strcmp(key, "startTime") == 0) { /* "-" = absent */
			ok = strcmp(st->start_time ? st->start_time : "-", val) == 0;
		} else if (!r && strcmp(key, "executionAttempts") == 0 && strcmp(val, "-") == 0) {
			ok = !st->has_execution_attempts;
		} else if (r && strcmp(key, "jobRestarts") == 0) {
			ok = i32list_matches(&r->job_restarts, val);
		} else if (r && strcmp(key, "jobRestartsCountTowardsMax") == 0) {
			ok = i32list_matches(&r->job_restarts_count_towards_max, val);
		} else {
			if (!parse_i32(val, &want))
				return failf(reterr, JS_EINVALID, "bad number %s", val);
			if (!r && strcmp(key, "restarts") == 0)
				have = st->restarts;
			else if (!r && strcmp(key, "restartsCountTowardsMax") == 0)
				have = st->restarts_count_towards_max;
			else if (!r && strcmp(key, "executionAttempts") == 0)
				have = st->has_execution_attempts ? st->execution_attempts : -1;
			else if (r && strcmp(key, "ready") == 0)
				have = r->ready;
			else if (r && strcmp(key, "succeeded") == 0)
				have = r->succeeded;
			else if (r && strcmp(key, "failed") == 0)
				have = r->failed;
			else if (r && strcmp(key, "active") == 0)
				have = r->active;
			else if (r && strcmp(key, "suspended") == 0)
				have = r->suspended;
			else
				return failf(reterr, JS_EINVALID, "unknown key %s", key);
			ok = have == want;
		}
		if (!ok) {
			struct js_buf b;
			js_buf_init(&b, 0);
			js_sim_print_status(s, &b);
			int ret = failf(reterr, JS_ECONFLICT, "%s: want %s\n%s", key, val, js_buf_str(&b));
			js_buf_done(&b);
			return ret;
		}
	}
	return 0;
}

static int expect_condition(struct js_sim *s, char **tok, size_t n, char **reterr)
{
	const struct js_condition *c = n > 2 ? js_jobset_condition(s->js, tok[2]) : NULL;
	if (strcmp(tok[1], "no-condition") == 0)
		return c ? failf(reterr, JS_ECONFLICT, "condition %s present (%s)", tok[2], c->status) : 0;
	if (!c)
		return failf(reterr, JS_ECONFLICT, "no condition %s", n > 2 ? tok[2] : "?");
	if ((n > 3 && strcmp(c->status, tok[3]) != 0) || (n > 4 && strcmp(c->reason ? c->reason : "", tok[4]) != 0) ||
	    (n > 5 && strcmp(c->message ? c->message : "", tok[5]) != 0))
		return failf(reterr, JS_ECONFLICT, "condition %s is %s/%s/\"%s\"", c->type, c->status,
			     c->reason ? c->reason : "", c->message ? c->message : "");
	return 0;
}

static int expect_event(struct js_sim *s, char **tok, size_t n, char **reterr)
{
	const struct js_plan *p = s->last;
	size_t ne = p ? p->n_events : 0;
	if (strcmp(tok[1], "no-events") == 0)
		return ne ? failf(reterr, JS_ECONFLICT, "%zu events, first %s", ne, p->events[0].reason) : 0;
	for (size_t i = 0; i < ne; i++) {
		const struct js_event *e = &p->events[i];
		bool m = strcmp(e->reason, n > 3 ? tok[3] : "") == 0 && strcmp(e->type, tok[2]) == 0 &&
			 (n <= 4 || strcmp(e->message, tok[4]) == 0);
		if (strcmp(tok[1], "no-event") == 0 && strcmp(e->reason, tok[2]) == 0)
			return failf(reterr, JS_ECONFLICT, "event %s emitted", tok[2]);
		if (m && strcmp(tok[1], "event") == 0)
			return 0;
	}
	if (strcmp(tok[1], "no-event") == 0)
		return 0;
	struct js_buf b;
	js_buf_init(&b, 0);
	for (size_t i = 0; i < ne; i++)
		outf(&b, " [%s %s: %s]", p->events[i].type, p->events[i].reason, p->events[i].message);
	int r = failf(reterr, JS_ECONFLICT, "no such event; events were%s", js_buf_str(&b));
	js_buf_done(&b);
	return r;
}

/* old-pods unknown | none | JOB/POD[/FLAG]...: the old attempts' running
 * pods as the world has them. JOB "-" is a pod without the job-name label;
 * FLAG deleting (marked), lagging (not in the cache yet), unlabelled (no
 * restart-attempt label). */
static int set_old_pods(struct js_sim *s, char **tok, size_t n, char **reterr)
{
	static const char usage[] = "usage: old-pods unknown | none | JOB/POD[/deleting|/lagging|/unlabelled]... "
				    "(at most 64; JOB - for none)";
	clear_old_pods(s);
	memset(s->old_lagging, 0, sizeof(s->old_lagging));
	s->old_pods_known = !(n == 2 && strcmp(tok[1], "unknown") == 0);
	for (size_t i = 1; s->old_pods_known && i < n && strcmp(tok[1], "none") != 0; i++) {
		char *pod = strchr(tok[i], '/');
		if (!pod || s->n_old_pods == JS_ARRAY_SIZE(s->old_pods))
			return failf(reterr, JS_EINVALID, usage);
		*pod++ = '\0';
		struct js_oldpod o = {0};
		for (char *f = strchr(pod, '/'), *next; f; f = next) {
			*f++ = '\0';
			next = strchr(f, '/');
			if (next)
				*next = '\0';
			if (strcmp(f, "deleting") == 0)
				o.deleting = true;
			else if (strcmp(f, "lagging") == 0)
				s->old_lagging[s->n_old_pods] = true;
			else if (strcmp(f, "unlabelled") == 0)
				o.attempt_unknown = true;
			else
				return failf(reterr, JS_EINVALID, usage);
			if (next)
				*next = '/';
		}
		char **str = &s->old_strs[2 * s->n_old_pods];
		str[0] = js_xstrdup(pod);
		str[1] = strcmp(tok[i], "-") == 0 ? NULL : js_xstrdup(tok[i]);
		o.name = str[0];
		o.job_name = str[1];
		s->old_pods[s->n_old_pods++] = o;
	}
	return 0;
}

/* pods none | JOB/POD/ATTEMPT...: the JobSet's running pods with the
 * restart attempt each was made in. */
static int set_pods(struct js_sim *s, char **tok, size_t n, char **reterr)
{
	static const char usage[] = "usage: pods none | JOB/POD/ATTEMPT... (at most 64)";
	clear_pods(s);
	for (size_t i = 1; i < n && !(n == 2 && strcmp(tok[1], "none") == 0); i++) {
		char *pod = strchr(tok[i], '/');
		char *att = pod ? strchr(pod + 1, '/') : NULL;
		int32_t a;
		if (!att || s->n_pods == JS_ARRAY_SIZE(s->pods) || !parse_i32(att + 1, &a) || a < 0)
			return failf(reterr, JS_EINVALID, usage);
		char **str = &s->pod_strs[2 * s->n_pods];
		str[0] = js_xstrndup(tok[i], (size_t)(pod - tok[i]));
		str[1] = js_xstrndup(pod + 1, (size_t)(att - pod - 1));
		s->pods[s->n_pods++] = (struct sim_pod){.job = str[0], .name = str[1], .attempt = a};
	}
	return 0;
}

static int expect_job(struct js_sim *s, const char *line, char **tok, size_t n, char **reterr)
{
	json_t *j = n > 2 ? find_job(s, tok[2]) : NULL;
	const char *what = n > 3 ? tok[3] : "exists";
	if (strcmp(what, "absent") == 0)
		return j ? failf(reterr, JS_ECONFLICT, "job %s exists", tok[2]) : 0;
	if (!j)
		return failf(reterr, JS_ECONFLICT, "job %s does not exist", n > 2 ? tok[2] : "?");
	json_t *m = json_object_get(j, "metadata");
	bool ok = true;
	if (strcmp(what, "deleting") == 0) {
		ok = job_deleting(j);
	} else if (strcmp(what, "live") == 0) {
		ok = !job_deleting(j);
	} else if (strcmp(what, "suspended") == 0 || strcmp(what, "unsuspended") == 0) {
		ok = json_is_true(js_json_path(j, "spec.suspend")) == (what[0] == 's');
	} else if (strcmp(what, "label") == 0 || strcmp(what, "annotation") == 0 || strcmp(what, "pod-annotation") == 0) {
		char *eq = n > 4 ? strchr(tok[4], '=') : NULL;
		if (!eq)
			return failf(reterr, JS_EINVALID, "usage: expect job NAME label|annotation|pod-annotation KEY=VALUE");
		*eq = '\0';
		const json_t *map = what[0] == 'p' ? js_json_path(j, "spec.template.metadata.annotations")
						   : json_object_get(m, what[0] == 'l' ? "labels" : "annotations");
		const char *have = js_json_str(map, tok[4]);
		ok = have && strcmp(have, eq + 1) == 0;
		if (!ok)
			return failf(reterr, JS_ECONFLICT, "job %s %s %s is %s", tok[2], what, tok[4], have ? have : "absent");
	} else if (strcmp(what, "no-label") == 0) {
		ok = n > 4 && !js_json_str(json_object_get(m, "labels"), tok[4]);
	} else if (strcmp(what, "no-annotation") == 0) {
		ok = n > 4 && !js_json_str(json_object_get(m, "annotations"), tok[4]) &&
		     !js_json_str(js_json_path(j, "spec.template.metadata.annotations"), tok[4]);
	} else if (strcmp(what, "path") == 0) {
		/* "path P absent": the Job has no field P. */
		bool want_absent = n == 6 && strcmp(tok[5], "absent") == 0;
		json_error_t e;
		json_t *want = want_absent ? json_null() : json_loads(rest_after(line, 5), JSON_DECODE_ANY, &e);
		if (!want)
			return failf(reterr, JS_EINVALID, "bad JSON: %s", e.text);
		json_t *have = n > 4 ? js_json_path(j, tok[4]) : NULL;
		ok = want_absent ? !have : have && json_equal(have, want);
		json_decref(want);
		if (!ok) {
			char *t = have ? js_json_dump_sorted(have, false) : js_xstrdup("absent");
			int r = failf(reterr, JS_ECONFLICT, "job %s %s is %s", tok[2], tok[4], t);
			free(t);
			return r;
		}
	}
	return ok ? 0 : failf(reterr, JS_ECONFLICT, "job %s is not %s", tok[2], what);
}

static int expect_misc(struct js_sim *s, const char *line, char **tok, size_t n, char **reterr)
{
	const char *w = tok[1];
	int32_t want = 0;
	size_t i;
	json_t *j;
	if (strcmp(w, "jobs") == 0 || strcmp(w, "live-jobs") == 0) {
		int32_t have = 0;
		if (n != 3 || !parse_i32(tok[2], &want))
			return failf(reterr, JS_EINVALID, "usage: expect jobs N");
		json_array_foreach(s->jobs, i, j) {
			have += w[0] == 'j' || !job_deleting(j);
		}
		return have == want ? 0 : failf(reterr, JS_ECONFLICT, "%d %s, want %d", have, w, want);
	}
	if (strcmp(w, "label-count") == 0) { /* label-count KEY=VALUE N (live Jobs) */
		char *eq = n == 4 ? strchr(tok[2], '=') : NULL;
		int32_t have = 0;
		if (!eq || !parse_i32(tok[3], &want))
			return failf(reterr, JS_EINVALID, "usage: expect label-count KEY=VALUE N");
		*eq = '\0';
		json_array_foreach(s->jobs, i, j) {
			const char *v = js_json_str(js_json_path(j, "metadata.labels"), tok[2]);
			have += v && strcmp(v, eq + 1) == 0;
		}
		return have == want ? 0 : failf(reterr, JS_ECONFLICT, "%d jobs with %s=%s, want %d", have, tok[2], eq + 1, want);
	}
	if (strcmp(w, "job") == 0)
		return expect_job(s, line, tok, n, reterr);
	if (strcmp(w, "requeue") == 0) {
		bool has = s->last && s->last->has_requeue_after;
		if (n != 3 || !parse_i32(tok[2], &want))
			return failf(reterr, JS_EINVALID, "usage: expect requeue N");
		return has && s->last->requeue_after == want ? 0 : failf(reterr, JS_ECONFLICT, "requeue is %lld", has ? (long long)s->last->requeue_after : -1LL);
	}
	if (strcmp(w, "confirm-old-pods") == 0 || strcmp(w, "no-confirm-old-pods") == 0) {
		bool has = s->last && s->last->confirm_old_pods;
		return has == (w[0] == 'c') ? 0 : failf(reterr, JS_ECONFLICT, "confirm_old_pods is %s", has ? "set" : "clear");
	}
	if (strcmp(w, "no-requeue") == 0)
		return s->last && s->last->has_requeue_after ? failf(reterr, JS_ECONFLICT, "requeue set") : 0;
	if (strcmp(w, "error") == 0) {
		const char *sub = n > 2 ? tok[2] : "";
		return s->last_error && strstr(s->last_error, sub) ? 0 : failf(reterr, JS_ECONFLICT, "error was %s", s->last_error ? s->last_error : "none");
	}
	if (strcmp(w, "no-error") == 0)
		return s->last_error ? failf(reterr, JS_ECONFLICT, "error: %s", s->last_error) : 0;
	if (strcmp(w, "skipped") == 0) {
		const char *have = s->last && s->last->skipped ? s->last->skipped : "none";
		return n == 3 && strcmp(have, tok[2]) == 0 ? 0 : failf(reterr, JS_ECONFLICT, "skipped is %s", have);
	}
	if (strcmp(w, "status-changed") == 0) {
		bool have = s->last && s->last->status_changed;
		return n == 3 && have == (strcmp(tok[2], "yes") == 0) ? 0 : failf(reterr, JS_ECONFLICT, "status-changed is %d", have);
	}
	if (strcmp(w, "service") == 0)
		return n == 3 && s->service_exists == (strcmp(tok[2], "yes") == 0) ? 0 : failf(reterr, JS_ECONFLICT, "service exists: %d", s->service_exists);
	if (strcmp(w, "pvcs") == 0) {
		json_t *names = json_array();
		for (size_t k = 2; k < n; k++)
			json_array_append_new(names, json_string(tok[k]));
		bool ok = json_equal(names, s->pvcs) || (n == 2 && json_array_size(s->pvcs) == 0);
		json_decref(names);
		char *t = js_json_dump_sorted(s->pvcs, false);
		int r = ok ? 0 : failf(reterr, JS_ECONFLICT, "pvcs are %s", t);
		free(t);
		return r;
	}
	if (strcmp(w, "jobset-deleted") == 0)
		return n == 3 && (s->js->meta.deletion_timestamp != NULL) == (strcmp(tok[2], "yes") == 0) ? 0 : failf(reterr, JS_ECONFLICT, "jobset deleted: %d", s->js->meta.deletion_timestamp != NULL);
	if (strcmp(w, "restarts-decided") == 0) { /* none | ACTION:REASON ... */
		struct js_buf b;
		js_buf_init(&b, 0);
		for (size_t k = 2; k < n && strcmp(tok[k], "none") != 0; k++)
			outf(&b, "%s%s", b.len ? " " : "", tok[k]);
		const char *have = s->decided ? s->decided : "";
		int r = strcmp(js_buf_str(&b), have) == 0 ? 0 : failf(reterr, JS_ECONFLICT, "restarts decided: [%s]", have);
		js_buf_done(&b);
		return r;
	}
	if (strcmp(w, "phase") == 0) { /* core/phase.h */
		struct js_phase_obs o;
		js_phase_observe(s->js, &o);
		const char *have = js_phase_name(o.phase);
		return n == 3 && strcmp(have, tok[2]) == 0 ? 0 : failf(reterr, JS_ECONFLICT, "phase is %s", have);
	}
	if (strcmp(w, "metric") == 0) {
		const char *c = kv(tok, n, "completed"), *f = kv(tok, n, "failed"), *d = kv(tok, n, "deadline");
		int32_t wc, wf, wd;
		if ((c && (!parse_i32(c, &wc) || wc != s->metric_completed)) ||
		    (f && (!parse_i32(f, &wf) || wf != s->metric_failed)) ||
		    (d && (!parse_i32(d, &wd) || wd != s->metric_deadline)))
			return failf(reterr, JS_ECONFLICT, "metrics completed=%lld failed=%lld deadline=%lld", (long long)s->metric_completed, (long long)s->metric_failed, (long long)s->metric_deadline);
		return 0;
	}
	return failf(reterr, JS_EINVALID, "unknown expectation %s", w);
}

static int expect(struct js_sim *s, const char *line, char **tok, size_t n, char **reterr)
{
	const char *w = n > 1 ? tok[1] : "";
	if (strncmp(w, "action", 6) == 0)
		return expect_actions(s, tok, n, reterr);
	if (strcmp(w, "status") == 0 || strcmp(w, "rjob") == 0)
		return expect_counts(s, tok, n, reterr);
	if (strcmp(w, "condition") == 0 || strcmp(w, "no-condition") == 0)
		return expect_condition(s, tok, n, reterr);
	if (strcmp(w, "event") == 0 || strcmp(w, "no-event") == 0 || strcmp(w, "no-events") == 0)
		return expect_event(s, tok, n, reterr);
	if (n < 2)
		return failf(reterr, JS_EINVALID, "expect what?");
	return expect_misc(s, line, tok, n, reterr);
}

/* ---- commands ---- */

static int world_cmd(struct js_sim *s, const char *line, char **tok, size_t n, char **reterr)
{
	const char *c = tok[0];
	json_t *sel[256];
	size_t ns = 0;
	int r;
	int32_t secs;

	if (strcmp(c, "fail") == 0 || strcmp(c, "failtarget") == 0 || strcmp(c, "complete") == 0 ||
	    strcmp(c, "ready") == 0 || strcmp(c, "activate") == 0 || strcmp(c, "suspended-cond") == 0) {
		if (n < 2)
			return failf(reterr, JS_EINVALID, "usage: %s JOB", c);
		if ((r = select_jobs(s, tok[1], false, sel, &ns, reterr)) < 0)
			return r;
		for (size_t i = 0; i < ns; i++)
			drive(s, c, sel[i], kv(tok, n, "reason"), kv(tok, n, "message"));
	} else if (strcmp(c, "finalize") == 0 || strcmp(c, "remove") == 0) {
		if (n < 2)
			return failf(reterr, JS_EINVALID, "usage: %s JOB", c);
		if ((r = select_jobs(s, tok[1], c[0] == 'f', sel, &ns, reterr)) < 0)
			return r;
		for (size_t i = 0; i < ns; i++) {
			if (c[0] == 'f' && !job_deleting(sel[i]))
				return failf(reterr, JS_EINVALID, "job %s is not being deleted", job_name(sel[i]));
			remove_job(s, sel[i]);
		}
	} else if (strcmp(c, "restart-cleanup") == 0) {
		if (n != 2 || (strcmp(tok[1], "direct") != 0 && strcmp(tok[1], "foreground") != 0))
			return failf(reterr, JS_EINVALID, "usage: restart-cleanup direct|foreground");
		s->cleanup_direct = tok[1][0] == 'd';
	} else if (strcmp(c, "old-pods-source") == 0) {
		if (n != 2 || (strcmp(tok[1], "list") != 0 && strcmp(tok[1], "cache") != 0))
			return failf(reterr, JS_EINVALID, "usage: old-pods-source list|cache");
		s->old_pods_cached = tok[1][0] == 'c';
	} else if (strcmp(c, "old-pods") == 0) {
		return set_old_pods(s, tok, n, reterr);
	} else if (strcmp(c, "pods") == 0) {
		return set_pods(s, tok, n, reterr);
	} else if (strcmp(c, "restarts-seen") == 0) {
		if (n != 2 || !parse_i32(tok[1], &s->restarts_seen) || s->restarts_seen < 0)
			return failf(reterr, JS_EINVALID, "usage: restarts-seen N");
	} else if (strcmp(c, "gates") == 0) {
		/* The controller restarted with other --feature-gates. */
		struct js_gates g = s->gates;
		char *msg = NULL;
		if (n != 2 || js_gates_parse(tok[1], &g, &msg) < 0) {
			int e = failf(reterr, JS_EINVALID, "usage: gates Name=true|false,...: %s", msg ? msg : "");
			free(msg);
			return e;
		}
		s->gates = g;
	} else if (strcmp(c, "suspend") == 0 || strcmp(c, "resume") == 0) {
		s->js->spec.has_suspend = true;
		s->js->spec.suspend = c[0] == 's';
	} else if (strcmp(c, "patch") == 0) {
		return patch_jobset(s, rest_after(line, 1), reterr);
	} else if (strcmp(c, "advance") == 0) {
		if (n != 2 || !parse_i32(tok[1], &secs) || secs < 0)
			return failf(reterr, JS_EINVALID, "usage: advance SECONDS");
		s->now = js_sat_add(s->now, secs); /* any number of advances */
	} else if (strcmp(c, "delete-service") == 0) {
		s->service_exists = false;
	} else if (strcmp(c, "delete-jobset") == 0) {
		char t[21];
		now_str(s, t);
		if (!s->js->meta.deletion_timestamp)
			s->js->meta.deletion_timestamp = js_xstrdup(t);
	} else if (strcmp(c, "patch-job") == 0) {
		/* Another user's edit of a Job's metadata or status (labels,
		 * ownerReferences): a JSON merge patch (RFC 7386). */
		json_error_t e;
		json_t *patch = n >= 3 ? json_loads(rest_after(line, 2), 0, &e) : NULL;
		if (!json_is_object(patch)) {
			json_decref(patch);
			return failf(reterr, JS_EINVALID, "usage: patch-job JOB {merge patch}");
		}
		r = select_jobs(s, tok[1], false, sel, &ns, reterr);
		for (size_t i = 0; r == 0 && i < ns; i++)
			js_json_merge_patch(sel[i], patch);
		json_decref(patch);
		if (r < 0)
			return r;
	} else if (strcmp(c, "add-job") == 0) {
		json_error_t e;
		json_t *j = json_loads(rest_after(line, 1), 0, &e);
		if (!json_is_object(j) || !job_name(j)) {
			json_decref(j);
			return failf(reterr, JS_EINVALID, "add-job: need a Job object with metadata.name");
		}
		json_array_append_new(s->jobs, j);
		sort_jobs(s);
	} else {
		return failf(reterr, JS_EINVALID, "unknown command %s", c);
	}
	return 0;
}

int js_sim_exec(struct js_sim *s, const char *line, struct js_buf *out, char **reterr)
{
	char buf[2048];
	char *tok[MAX_TOKENS];
	size_t n = tokenize(line, buf, sizeof(buf), tok);
	int r;

	if (n == 0)
		return 0;
	if (strcmp(tok[0], "expect") == 0)
		return expect(s, line, tok, n, reterr);
	if (strcmp(tok[0], "reconcile") == 0) {
		r = reconcile_once(s, out, reterr);
		return r < 0 ? r : 0;
	}
	if (strcmp(tok[0], "settle") == 0)
		return settle(s, out, reterr);
	r = world_cmd(s, line, tok, n, reterr);
	if (r < 0 || !s->auto_settle)
		return r;
	return settle(s, out, reterr);
}
