/*
 * status.c - classification of children (SPEC §11.3), replicatedJobsStatus
 * (§11.4) and the condition rules (§11.5, §11.6).
 */
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"

static void bucket_add(struct js__ctx *c, struct js__bucket *b, const struct js_obsjob *j)
{
	b->items = js__grow(c, b->items, b->n, &b->cap, sizeof(*b->items));
	b->items[b->n++] = j;
}

const struct js_jobcond *js__status_failure_cond(const struct js_obsjob *j)
{
	const struct js_jobcond *f = js_job_condition_true(j, "Failed");
	return f ? f : js_job_condition_true(j, "FailureTarget");
}

/* Step 4 of §11.3: the first True Complete/Failed condition decides. A
 * FailureTarget=True Job counts as failed already (difference (b), unlike
 * upstream #928/#979): its pods are only terminating, the outcome is known. */
static struct js__bucket *finished_bucket(struct js__ctx *c, const struct js_obsjob *j)
{
	for (size_t i = 0; i < j->n_conditions; i++) {
		const struct js_jobcond *k = &j->conditions[i];
		if (strcmp(k->status, "True") != 0)
			continue;
		if (strcmp(k->type, "Complete") == 0)
			return &c->succeeded;
		if (strcmp(k->type, "Failed") == 0)
			return &c->failed;
	}
	return js_job_condition_true(j, "FailureTarget") ? &c->failed : &c->active;
}

/*
 * An owned Job whose attempt cannot be read: a label the core needs is
 * missing or malformed on the Job and on its pod template (core/job.h
 * takes the template's first). Upstream fails every reconcile of the
 * JobSet on it, a stall with error logs only (SPEC CTRL-118); ours deletes
 * it as a Job of an unknown attempt and makes its name again. The delete
 * is Foreground (cleanup.c: not known to be of an older attempt), so the
 * Job holds its name until the garbage collector has removed its pods, and
 * no pod of the new Job runs beside one of it (cleanup.h). In practice it
 * never ran: batch/v1 lets a pod template's labels change only while the
 * Job is suspended and has never started. `what` says which label.
 */
static void unreadable(struct js__ctx *c, const struct js_obsjob *j, const char *what)
{
	if (!j->deleting)
		js__ctx_event(c, "Warning", "JobAttemptUnknown",
			      js__fmt(c,
				      "Job %s: %s on the Job and on its pod template, so its restart attempt is "
				      "unknown: it is deleted, holding its name until its pods are gone, and made "
				      "again",
				      j->name, what));
	bucket_add(c, &c->previous, j);
}

/* The per-Job restart check of §11.3 step 3 (gate RestartJob). Returns 1
 * when the Job belongs to an older per-Job attempt, 0 when current, -1 with
 * *ret_what naming the label when it cannot tell (unreadable()). */
static int older_job_attempt(struct js__ctx *c, const struct js_obsjob *j, const char **ret_what)
{
	const char *rname = j->rjob_name;
	const char *idx_s = j->job_index;
	const char *att_s = j->job_restart_attempt;
	int32_t idx, att = 0, target = 0;

	if (!rname || !idx_s || !js__parse_i32(idx_s, &idx) || idx < 0) {
		*ret_what = js__fmt(c, "missing or invalid labels %s and %s", JS_LABEL_RJOB_NAME, JS_LABEL_JOB_INDEX);
		return -1;
	}
	/* A missing per-Job attempt label is attempt 0 (SPEC §16.24: upstream
	 * only logs, and the same failed Job is then matched forever). */
	if (att_s && !js__parse_i32(att_s, &att)) {
		*ret_what = js__fmt(c, "invalid label %s=%s", JS_LABEL_JOB_RESTART_ATTEMPT, att_s);
		return -1;
	}
	int ri = js_jobset_find_rjob(c->js, rname);
	if (ri < 0)
		return 0; /* not ours to count; §11.4 skips it too */
	int si = js_jobset_find_rjob_status(c->in->jobset, rname);
	const struct js_i32list *l = si < 0 ? NULL : &c->in->jobset->status.replicated_jobs_status[si].job_restarts;
	int32_t len = l && l->n ? (int32_t)l->n : js__replicas(&c->js->spec.replicated_jobs[ri]);
	if (idx >= len) {
		*ret_what = js__fmt(c, "label %s=%d out of range of jobRestarts (%d)", JS_LABEL_JOB_INDEX, idx, len);
		return -1;
	}
	if (l && l->n)
		target = l->items[idx];
	return att < target ? 1 : 0;
}

/*
 * The Jobs of an attempt are created only after the status write that
 * started it landed (a restart pass stops at the failure policy), and their
 * pods after them, so an owned Job or a running pod of the JobSet whose
 * restart-attempt label is above status.restarts means that someone else
 * wrote the counter back (issue 22, tests/chaos "jobset-restarts-rewound").
 * Taken at its word, the running Jobs would be deleted as an older attempt
 * and their names made again under the lower one while their pods still
 * run: two attempts on one hostname. The labels win; the status write of
 * this pass puts the counter back. The pods (in->pods_top_attempt) matter
 * when every Job of the attempt was deleted as well: no Job label is left,
 * but the Jobs' pods run until they end, and at restarts 0 nothing else
 * would hold their names (the old pods are only read once restarted).
 * What the runtime saw the counter at (in->restarts_seen) covers a rewind
 * between a restart's status write and its first new Job, when neither a
 * Job nor a pod of the new attempt exists yet.
 */
void js__status_restore_restarts(struct js__ctx *c)
{
	const char *uid = c->js->meta.uid;
	int32_t top = c->js->status.restarts;
	if (c->in->pods_top_attempt > top)
		top = c->in->pods_top_attempt;
	if (c->in->restarts_seen > top)
		top = c->in->restarts_seen;
	for (size_t i = 0; uid && i < c->in->n_jobs; i++) {
		const struct js_obsjob *j = c->in->jobs[i];
		int32_t attempt;
		if (j->owner_uid && strcmp(uid, j->owner_uid) == 0 && js__parse_i32(j->restart_attempt, &attempt) &&
		    attempt > top)
			top = attempt;
	}
	if (top == c->js->status.restarts)
		return;
	c->js->status.restarts = top;
	c->dirty = true;
}

int js__status_classify(struct js__ctx *c)
{
	const char *uid = c->js->meta.uid;
	for (size_t i = 0; i < c->in->n_jobs; i++) {
		const struct js_obsjob *j = c->in->jobs[i];
		int32_t attempt;
		/* Children by owner uid, never by name label (upstream #1165). */
		if (!uid || !j->owner_uid || strcmp(uid, j->owner_uid) != 0)
			continue;
		bucket_add(c, &c->owned, j);
		const char *a = j->restart_attempt;
		if (!js__parse_i32(a, &attempt)) {
			unreadable(c, j, js__fmt(c, "missing or invalid label %s", JS_LABEL_RESTART_ATTEMPT));
			continue;
		}
		if (attempt < c->js->status.restarts) {
			bucket_add(c, &c->previous, j);
			continue;
		}
		if (c->in->gates.restart_job) {
			const char *what = NULL;
			int r = older_job_attempt(c, j, &what);
			if (r < 0) {
				unreadable(c, j, what);
				continue;
			}
			if (r > 0) {
				bucket_add(c, &c->previous, j);
				continue;
			}
		}
		bucket_add(c, finished_bucket(c, j), j);
	}
	return 0;
}

/* ---- replicatedJobsStatus ---- */

static void i32list_copy(struct js_i32list *dst, const struct js_i32list *src)
{
	*dst = (struct js_i32list){.has = src->has, .n = src->n};
	if (src->n) {
		dst->items = js_xmalloc(src->n * sizeof(int32_t));
		memcpy(dst->items, src->items, src->n * sizeof(int32_t));
	}
}

static bool i32list_eq(const struct js_i32list *a, const struct js_i32list *b)
{
	return a->n == b->n && (a->n == 0 || memcmp(a->items, b->items, a->n * sizeof(int32_t)) == 0);
}

static void rjs_done(struct js_rjob_status *s)
{
	free(s->name);
	free(s->job_restarts.items);
	free(s->job_restarts_count_towards_max.items);
}

static bool rjs_eq(const struct js_rjob_status *a, const struct js_rjob_status *b)
{
	return a->ready == b->ready && a->succeeded == b->succeeded && a->failed == b->failed &&
	       a->active == b->active && a->suspended == b->suspended && i32list_eq(&a->job_restarts, &b->job_restarts) &&
	       i32list_eq(&a->job_restarts_count_towards_max, &b->job_restarts_count_towards_max);
}

/* Order-insensitive comparison (§11.4 step 5). */
static bool rjs_list_eq(const struct js_rjob_status *a, size_t na, const struct js_rjob_status *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++) {
		size_t k = 0;
		while (k < nb && strcmp(a[i].name ? a[i].name : "", b[k].name ? b[k].name : "") != 0)
			k++;
		if (k == nb || !rjs_eq(&a[i], &b[k]))
			return false;
	}
	return true;
}

static int by_name_desc(const void *x, const void *y)
{
	const struct js_rjob_status *a = x, *b = y;
	return strcmp(b->name ? b->name : "", a->name ? a->name : "");
}

static struct js_rjob_status *entry_for(struct js_rjob_status *v, size_t n, const struct js_obsjob *j)
{
	const char *r = j->rjob_name;
	for (size_t i = 0; r && i < n; i++)
		if (strcmp(v[i].name, r) == 0)
			return &v[i];
	return NULL; /* a Job of an rjob not in the spec is skipped */
}

/*
 * The per-Job restart counts (jobRestarts, gate RestartJob) restored from
 * the Jobs, as status.restarts is (js__status_restore_restarts): a Job made
 * by RestartJob carries its per-Job attempt in job-restart-attempt, and
 * only after the status write that counted it landed, so an owned Job
 * (deleting ones too: it ran) whose label is above its entry means that
 * someone else wrote the counts back or wiped replicatedJobsStatus (tests/chaos,
 * CI seed 993656309: restartjob-4). Taken at their word, a Job deleted
 * meanwhile would be made again at a per-Job attempt that already ran. The
 * labels win; this pass's status write puts the counts back. `v` holds the
 * n entries being computed, one per ReplicatedJob of the spec.
 */
static void restore_job_restarts(struct js__ctx *c, struct js_rjob_status *v, size_t n)
{
	const char *uid = c->js->meta.uid;
	for (size_t i = 0; uid && i < c->in->n_jobs; i++) {
		const struct js_obsjob *j = c->in->jobs[i];
		int32_t idx, att;
		struct js_rjob_status *e = entry_for(v, n, j);
		int ri = j->rjob_name ? js_jobset_find_rjob(c->js, j->rjob_name) : -1;
		if (!e || ri < 0 || !j->owner_uid || strcmp(uid, j->owner_uid) != 0 || !j->job_index ||
		    !js__parse_i32(j->job_index, &idx) || idx < 0 || !j->job_restart_attempt ||
		    !js__parse_i32(j->job_restart_attempt, &att) || att <= 0)
			continue;
		int32_t replicas = js__replicas(&c->js->spec.replicated_jobs[ri]);
		if (idx >= replicas)
			continue;
		if (e->job_restarts.n < (size_t)replicas) {
			/* Absent or cut short: zeros up to replicas (§11.8). */
			int32_t *items = js_xcalloc((size_t)replicas, sizeof(int32_t));
			if (e->job_restarts.n)
				memcpy(items, e->job_restarts.items, e->job_restarts.n * sizeof(int32_t));
			free(e->job_restarts.items);
			e->job_restarts.items = items;
			e->job_restarts.n = (size_t)replicas;
		}
		e->job_restarts.has = true;
		if (att > e->job_restarts.items[idx])
			e->job_restarts.items[idx] = att;
	}
}

void js__status_compute(struct js__ctx *c)
{
	struct js_jobset *js = c->js;
	size_t n = js->spec.n_replicated_jobs;
	struct js_rjob_status *v = n ? js_xcalloc(n, sizeof(*v)) : NULL;

	for (size_t i = 0; i < n; i++) {
		v[i].name = js_xstrdup(js->spec.replicated_jobs[i].name ? js->spec.replicated_jobs[i].name : "");
		int si = js_jobset_find_rjob_status(js, v[i].name);
		if (c->in->gates.restart_job && si >= 0) {
			i32list_copy(&v[i].job_restarts, &js->status.replicated_jobs_status[si].job_restarts);
			i32list_copy(&v[i].job_restarts_count_towards_max,
				     &js->status.replicated_jobs_status[si].job_restarts_count_towards_max);
		}
	}
	if (c->in->gates.restart_job)
		restore_job_restarts(c, v, n);
	for (size_t i = 0; i < c->active.n; i++) {
		const struct js_obsjob *j = c->active.items[i];
		struct js_rjob_status *e = entry_for(v, n, j);
		if (!e)
			continue;
		int32_t pods = j->has_parallelism ? j->parallelism : 1;
		if (j->has_completions && j->completions < pods)
			pods = j->completions;
		if ((int64_t)j->succeeded + (j->has_ready ? j->ready : 0) >= pods)
			e->ready++;
		if (j->active > 0)
			e->active++;
		if (j->has_suspend && j->suspend)
			e->suspended++;
	}
	for (size_t i = 0; i < c->succeeded.n; i++) {
		struct js_rjob_status *e = entry_for(v, n, c->succeeded.items[i]);
		if (e)
			e->succeeded++;
	}
	for (size_t i = 0; i < c->failed.n; i++) {
		struct js_rjob_status *e = entry_for(v, n, c->failed.items[i]);
		if (e)
			e->failed++;
	}
	if (n)
		qsort(v, n, sizeof(*v), by_name_desc);
	if (!rjs_list_eq(v, n, js->status.replicated_jobs_status, js->status.n_replicated_jobs_status))
		c->dirty = true;
	for (size_t i = 0; i < js->status.n_replicated_jobs_status; i++)
		rjs_done(&js->status.replicated_jobs_status[i]);
	free(js->status.replicated_jobs_status);
	js->status.replicated_jobs_status = v;
	js->status.n_replicated_jobs_status = n;
	js->status.has_replicated_jobs_status = true;
	js->has_status = true;
}

/* ---- conditions ---- */

static bool str_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s ? js_xstrdup(s) : NULL;
}

bool js__status_set_condition(struct js__ctx *c, const char *type, bool status, const char *reason,
			      const char *message, const char *event_type)
{
	struct js_status *st = &c->js->status;
	const char *sv = status ? "True" : "False";
	bool found = false, changed = false;

	for (size_t i = 0; i < st->n_conditions; i++) {
		struct js_condition *e = &st->conditions[i];
		if (str_eq(e->type, type)) {
			found = true;
			if (!str_eq(e->status, sv)) {
				set_str(&e->status, sv);
				set_str(&e->last_transition_time, c->now);
				changed = true;
			} else if (!str_eq(e->reason, reason) || !str_eq(e->message, message)) {
				changed = true; /* keeps lastTransitionTime */
			} else {
				continue;
			}
			set_str(&e->reason, reason);
			set_str(&e->message, message);
			e->has_observed_generation = false;
		} else if (status && str_eq(e->status, "True") &&
			   ((str_eq(type, JS_COND_SP_IN_PROGRESS) && str_eq(e->type, JS_COND_SP_COMPLETED)) ||
			    (str_eq(type, JS_COND_SP_COMPLETED) && str_eq(e->type, JS_COND_SP_IN_PROGRESS)))) {
			set_str(&e->status, "False");
			changed = true;
		}
	}
	if (!found && status) {
		st->conditions = js_xrealloc(st->conditions, (st->n_conditions + 1) * sizeof(*st->conditions));
		st->conditions[st->n_conditions++] = (struct js_condition){
			.type = js_xstrdup(type),
			.status = js_xstrdup(sv),
			.reason = js_xstrdup(reason),
			.message = js_xstrdup(message),
			.last_transition_time = js_xstrdup(c->now),
		};
		st->has_conditions = true;
		changed = true;
	}
	if (changed) {
		c->dirty = true;
		c->js->has_status = true;
		js__ctx_event(c, event_type, reason, message);
	}
	return changed;
}

void js__status_set_completed(struct js__ctx *c)
{
	/* Counted once, when the condition first appears (SPEC §16.11). */
	if (js__status_set_condition(c, JS_COND_COMPLETED, true, "AllJobsCompleted", "jobset completed successfully",
				     "Normal"))
		c->plan->metric_completed++;
	(void)js__status_set_condition(c, JS_COND_RESTARTING, false, "JobSetCompleted",
				       "jobset completed successfully", "Normal");
	(void)js__status_set_condition(c, JS_COND_JOB_BLOCKED, false, "JobSetCompleted",
				       "jobset completed successfully", "Normal");
	if (!str_eq(c->js->status.terminal_state, "Completed")) {
		set_str(&c->js->status.terminal_state, "Completed");
		c->dirty = true;
	}
}

void js__status_set_failed(struct js__ctx *c, const char *reason, const char *message)
{
	if (js__status_set_condition(c, JS_COND_FAILED, true, reason, message, "Warning"))
		c->plan->metric_failed++;
	(void)js__status_set_condition(c, JS_COND_RESTARTING, false, "JobSetFailed", "jobset failed", "Normal");
	(void)js__status_set_condition(c, JS_COND_JOB_BLOCKED, false, "JobSetFailed", "jobset failed", "Normal");
	if (!str_eq(c->js->status.terminal_state, "Failed")) {
		set_str(&c->js->status.terminal_state, "Failed");
		c->dirty = true;
	}
}

bool js__status_finished(const struct js_jobset *js)
{
	/* terminalState too: it is written with the condition and is never
	 * cleared, so a JobSet whose conditions someone else removed (the
	 * status subresource is anyone's to patch) is not taken for a running
	 * one whose deleted Jobs must be made again (upstream reads the
	 * conditions only; found by tests/chaos, docs/differences.md). */
	const char *t = js->status.terminal_state;
	return js_jobset_condition_true(js, JS_COND_COMPLETED) || js_jobset_condition_true(js, JS_COND_FAILED) ||
	       (t && (strcmp(t, "Completed") == 0 || strcmp(t, "Failed") == 0));
}
