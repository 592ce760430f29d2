/*
 * jobctl.c - the local Job controller (see jobctl.h).
 *
 * One sync reads the spec, classifies the pods (podFailurePolicy decides
 * whether a failed pod counts), then walks the same decisions as
 * kube-controller-manager's syncJob in the same order: suspend, a pending
 * FailureTarget or SuccessCriteriaMet, FailJob from the pod failure policy,
 * backoff limit, max failed indexes, active deadline, success, and finally
 * pod creation under parallelism with exponential re-creation backoff.
 */
#include "local/jobctl.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/time.h"

/* Messages exactly as pkg/controller/job writes them. */
#define MSG_BACKOFF "Job has reached the specified backoff limit"
#define MSG_DEADLINE "Job was active longer than specified deadline"
#define MSG_MAX_FAILED_INDEXES "Job has exceeded the specified maximal number of failed indexes"
#define MSG_FAILED_INDEXES "Job has failed indexes"
#define MSG_COMPLETIONS "Reached expected number of succeeded pods"

/* Indexes beyond this would make the per-index arrays unreasonable; the
 * Job API itself caps completions of Indexed Jobs at 100000. */
#define JOBCTL_MAX_INDEXES 100000


/** Append to a message buffer; text past the buffer's ceiling is dropped on
 * purpose (messages are bounded). */
static void bprintf(struct js_buf *b, const char *fmt, ...) JS_PRINTF(2, 3);
static void bprintf(struct js_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (js_buf_vprintf(b, fmt, ap) < 0) {
		/* over the ceiling: keep what fits */
	}
	va_end(ap);
}

enum pfp_action { PFP_NONE, PFP_FAIL_JOB, PFP_FAIL_INDEX, PFP_IGNORE, PFP_COUNT };

/** The spec fields this controller reads. */
struct spec {
	bool indexed;
	int32_t parallelism;
	bool has_completions;
	int32_t completions;
	int32_t backoff_limit;
	bool has_per_index;
	int32_t per_index;
	bool has_max_failed;
	int32_t max_failed;
	bool has_deadline;
	int64_t deadline_s;
	bool suspend;
	bool on_failure; /* pod restartPolicy OnFailure */
	const json_t *pfp_rules;
	bool replace_failed_only; /* podReplacementPolicy Failed */
};

static bool get_i32(const json_t *o, const char *key, int32_t *ret)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v) || json_integer_value(v) < INT32_MIN || json_integer_value(v) > INT32_MAX)
		return false;
	*ret = (int32_t)json_integer_value(v);
	return true;
}

static int read_spec(const json_t *job, struct spec *s)
{
	const json_t *spec = json_object_get(job, "spec");
	memset(s, 0, sizeof(*s));
	const char *mode = js_json_str(spec, "completionMode");
	s->indexed = mode && strcmp(mode, "Indexed") == 0;
	bool has_parallelism = get_i32(spec, "parallelism", &s->parallelism);
	s->has_completions = get_i32(spec, "completions", &s->completions);
	/* The Job API's defaulting: with neither field set, both become 1; a
	 * missing parallelism alone becomes 1. */
	if (!has_parallelism)
		s->parallelism = 1;
	if (!has_parallelism && !s->has_completions) {
		s->has_completions = true;
		s->completions = 1;
	}
	s->has_per_index = get_i32(spec, "backoffLimitPerIndex", &s->per_index);
	s->has_max_failed = get_i32(spec, "maxFailedIndexes", &s->max_failed);
	/* backoffLimit defaults to 6, or to MaxInt32 with per-index limits. */
	if (!get_i32(spec, "backoffLimit", &s->backoff_limit))
		s->backoff_limit = s->has_per_index ? INT32_MAX : 6;
	/* int64 in batch/v1: any value, the largest included, is a deadline
	 * (saturated where it is used), not "none". */
	const json_t *ads = json_object_get(spec, "activeDeadlineSeconds");
	s->has_deadline = json_is_integer(ads);
	s->deadline_s = s->has_deadline ? json_integer_value(ads) : 0;
	s->suspend = json_is_true(json_object_get(spec, "suspend"));
	const char *rp = json_string_value(js_json_path(spec, "template.spec.restartPolicy"));
	s->on_failure = rp && strcmp(rp, "OnFailure") == 0;
	s->pfp_rules = js_json_path(spec, "podFailurePolicy.rules");
	/* podReplacementPolicy: TerminatingOrFailed by default, Failed (a pod
	 * is replaced only once it is terminal) when a podFailurePolicy is set,
	 * which is the only value the API then allows. */
	const char *rp_policy = js_json_str(spec, "podReplacementPolicy");
	s->replace_failed_only = rp_policy ? strcmp(rp_policy, "Failed") == 0
					   : js_json_path(spec, "podFailurePolicy") != NULL;
	if (s->indexed && (!s->has_completions || s->completions < 0 || s->completions > JOBCTL_MAX_INDEXES))
		return JS_EINVALID;
	if (s->parallelism < 0)
		return JS_EINVALID;
	return 0;
}

/* ---- podFailurePolicy ---- */

static bool exit_code_matches(const json_t *req, const struct js_jobctl_exit *e)
{
	const char *cname = js_json_str(req, "containerName");
	if (cname && strcmp(cname, e->container) != 0)
		return false;
	if (e->exit_code == 0)
		return false;
	bool in = false;
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(req, "values"), i, v)
	{
		if (json_is_integer(v) && json_integer_value(v) == e->exit_code)
			in = true;
	}
	const char *op = js_json_str(req, "operator");
	return op && strcmp(op, "NotIn") == 0 ? !in : in;
}

static enum pfp_action action_of(const char *s)
{
	if (!s)
		return PFP_NONE;
	if (strcmp(s, "FailJob") == 0)
		return PFP_FAIL_JOB;
	if (strcmp(s, "FailIndex") == 0)
		return PFP_FAIL_INDEX;
	if (strcmp(s, "Ignore") == 0)
		return PFP_IGNORE;
	if (strcmp(s, "Count") == 0)
		return PFP_COUNT;
	return PFP_NONE;
}

/** The first rule matching failed pod `p`, its action, and (for FailJob)
 * the message the real controller writes. */
static enum pfp_action match_pfp(const struct spec *s, const char *ns, const struct js_jobctl_pod *p,
				 struct js_buf *msg)
{
	size_t ri;
	json_t *rule;
	json_array_foreach(js_json_unconst(s->pfp_rules), ri, rule)
	{
		const char *action = js_json_str(rule, "action");
		const json_t *codes = json_object_get(rule, "onExitCodes");
		if (codes) {
			for (size_t k = 0; k < p->n_exits; k++) {
				if (!exit_code_matches(codes, &p->exits[k]))
					continue;
				if (msg)
					bprintf(msg,
							    "Container %s for pod %s/%s failed with exit code %d "
							    "matching %s rule at index %zu",
							    p->exits[k].container, ns, p->name, p->exits[k].exit_code,
							    action ? action : "", ri);
				return action_of(action);
			}
			continue;
		}
		size_t ci;
		json_t *cond;
		json_array_foreach(json_object_get(rule, "onPodConditions"), ci, cond)
		{
			const char *type = js_json_str(cond, "type");
			const char *status = js_json_str(cond, "status");
			if (!type || (status && strcmp(status, "True") != 0))
				continue;
			for (size_t k = 0; k < p->n_conditions; k++) {
				if (strcmp(p->conditions[k], type) != 0)
					continue;
				if (msg)
					bprintf(msg, "Pod %s/%s has condition %s matching %s rule at index %zu",
							    ns, p->name, type, action ? action : "", ri);
				return action_of(action);
			}
		}
	}
	return PFP_NONE;
}

/* ---- status helpers ---- */

const json_t *js_jobctl_condition(const json_t *job, const char *type)
{
	size_t i;
	json_t *c;
	json_array_foreach(js_json_path(job, "status.conditions"), i, c)
	{
		const char *t = js_json_str(c, "type");
		const char *st = js_json_str(c, "status");
		if (t && st && strcmp(t, type) == 0 && strcmp(st, "True") == 0)
			return c;
	}
	return NULL;
}

/** Set condition `type` to `status` as the controller does: a new status
 * stamps both probe and transition times; the same status leaves it alone.
 * Returns true when something changed. */
static bool set_condition(json_t *status, const char *type, const char *cstatus, const char *reason,
			  const char *message, const char *now)
{
	json_t *conds = json_object_get(status, "conditions");
	if (!json_is_array(conds)) {
		conds = json_array();
		json_object_set_new(status, "conditions", conds);
	}
	size_t i;
	json_t *c;
	json_array_foreach(conds, i, c)
	{
		if (strcmp(js_json_str(c, "type") ? js_json_str(c, "type") : "", type) != 0)
			continue;
		if (strcmp(js_json_str(c, "status") ? js_json_str(c, "status") : "", cstatus) == 0)
			return false;
		json_object_set_new(c, "status", json_string(cstatus));
		json_object_set_new(c, "reason", json_string(reason));
		json_object_set_new(c, "message", json_string(message));
		json_object_set_new(c, "lastProbeTime", json_string(now));
		json_object_set_new(c, "lastTransitionTime", json_string(now));
		return true;
	}
	/* Like the real controller, a False condition is only written over an
	 * existing one (Suspended=False after a resume). */
	if (strcmp(cstatus, "True") != 0)
		return false;
	json_array_append_new(conds, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", type, "status", cstatus,
					       "reason", reason, "message", message, "lastProbeTime", now,
					       "lastTransitionTime", now));
	return true;
}

static bool set_i32(json_t *status, const char *key, int64_t v)
{
	json_t *old = json_object_get(status, key);
	if (json_is_integer(old) && json_integer_value(old) == v)
		return false;
	json_object_set_new(status, key, json_integer(v));
	return true;
}

static bool set_str(json_t *status, const char *key, const char *v)
{
	const char *old = js_json_str(status, key);
	if (!v) {
		if (!json_object_get(status, key))
			return false;
		json_object_del(status, key);
		return true;
	}
	if (old && strcmp(old, v) == 0)
		return false;
	json_object_set_new(status, key, json_string(v));
	return true;
}

char *js_jobctl_format_indexes(const bool *set, size_t n)
{
	struct js_buf b;
	js_buf_init(&b, 0);
	for (size_t i = 0; i < n;) {
		if (!set[i]) {
			i++;
			continue;
		}
		size_t j = i;
		while (j + 1 < n && set[j + 1])
			j++;
		if (b.len)
			bprintf(&b, ",");
		if (j == i)
			bprintf(&b, "%zu", i);
		else
			bprintf(&b, "%zu-%zu", i, j);
		i = j + 1;
	}
	return js_buf_take(&b);
}

/* ---- the sync ---- */

/** Per-sync tallies over the pods. */
struct tally {
	int32_t active, ready, terminating, succeeded, failed;
	int32_t restarts_active;   /* container restarts of running pods */
	bool *idx_done, *idx_failed, *idx_active; /* per completion index */
	bool *idx_terminating;
	int32_t *idx_failures;     /* counted failures per index */
	int64_t *idx_last_fail;    /* finish time of the last counted failure */
	int32_t n_idx_done, n_idx_failed;
	int64_t last_fail_ms;      /* NonIndexed: last counted failure */
	const struct js_jobctl_pod *fail_job_pod; /* earliest FailJob match */
};

static void tally_done(struct tally *t)
{
	free(t->idx_done);
	free(t->idx_failed);
	free(t->idx_active);
	free(t->idx_terminating);
	free(t->idx_failures);
	free(t->idx_last_fail);
}

/** Count one failure of pod `p`, which `a` (its podFailurePolicy match)
 * does not ignore, toward backoffLimit and its index. */
static void count_failure(const struct spec *s, struct tally *t, const struct js_jobctl_pod *p, bool in_range,
			  enum pfp_action a)
{
	t->failed++;
	if (a == PFP_FAIL_JOB && (!t->fail_job_pod || p->finished_ms < t->fail_job_pod->finished_ms))
		t->fail_job_pod = p;
	if (!in_range) {
		if (p->finished_ms > t->last_fail_ms)
			t->last_fail_ms = p->finished_ms;
		return;
	}
	t->idx_failures[p->index]++;
	if (p->finished_ms > t->idx_last_fail[p->index])
		t->idx_last_fail[p->index] = p->finished_ms;
	if (a == PFP_FAIL_INDEX || (s->has_per_index && t->idx_failures[p->index] > s->per_index))
		t->idx_failed[p->index] = true;
}

static void count_pods(const struct spec *s, const char *ns, const struct js_jobctl_pod *pods, size_t n,
		       struct tally *t)
{
	size_t ni = s->indexed ? (size_t)s->completions : 0;
	memset(t, 0, sizeof(*t));
	t->idx_done = js_xcalloc(ni + 1, sizeof(bool));
	t->idx_failed = js_xcalloc(ni + 1, sizeof(bool));
	t->idx_active = js_xcalloc(ni + 1, sizeof(bool));
	t->idx_terminating = js_xcalloc(ni + 1, sizeof(bool));
	t->idx_failures = js_xcalloc(ni + 1, sizeof(int32_t));
	t->idx_last_fail = js_xcalloc(ni + 1, sizeof(int64_t));
	for (size_t i = 0; i < n; i++) {
		const struct js_jobctl_pod *p = &pods[i];
		bool in_range = s->indexed && p->index >= 0 && (size_t)p->index < ni;
		switch (p->phase) {
		case JS_JOBCTL_PENDING:
		case JS_JOBCTL_RUNNING:
			if (p->terminating) {
				t->terminating++;
				if (in_range)
					t->idx_terminating[p->index] = true;
				/* As upstream's isPodFailed: unless only failed
				 * pods are replaced, a pod being deleted counts
				 * as failed already (from when its deletion
				 * began), so backoffLimit 0 fails the Job at
				 * once instead of starting a replacement that
				 * the Job's failure kills a grace period later.
				 * No podFailurePolicy then (it implies
				 * podReplacementPolicy Failed). */
				if (!s->replace_failed_only && !p->deleted_by_controller)
					count_failure(s, t, p, in_range, PFP_COUNT);
				break;
			}
			t->active++;
			t->ready += p->ready;
			t->restarts_active += p->restarts;
			if (in_range)
				t->idx_active[p->index] = true;
			break;
		case JS_JOBCTL_SUCCEEDED:
			if (!s->indexed)
				t->succeeded++;
			else if (in_range && !t->idx_done[p->index]) {
				t->idx_done[p->index] = true;
				t->succeeded++;
				t->n_idx_done++;
			}
			break;
		case JS_JOBCTL_FAILED: {
			if (p->deleted_by_controller)
				break;
			enum pfp_action a = match_pfp(s, ns, p, NULL);
			if (a != PFP_IGNORE)
				count_failure(s, t, p, in_range, a);
			break;
		}
		}
	}
	for (size_t i = 0; i < ni; i++) {
		/* An index that succeeded later is not failed. */
		if (t->idx_done[i])
			t->idx_failed[i] = false;
		t->n_idx_failed += t->idx_failed[i];
	}
}

static int64_t backoff_delay(const struct js_jobctl_opts *o, int32_t failures)
{
	int64_t d = o->backoff_base_ms;
	for (int32_t i = 1; i < failures && d < o->backoff_max_ms; i++)
		d = js_sat_mul(d, 2);
	return d < o->backoff_max_ms ? d : o->backoff_max_ms;
}

static void push_create(struct js_jobctl_plan *p, int32_t index)
{
	p->create = js_xrealloc(p->create, (p->n_create + 1) * sizeof(int32_t));
	p->create[p->n_create++] = index;
}

static void wake_at(struct js_jobctl_plan *p, int64_t t)
{
	if (p->wake_ms < 0 || t < p->wake_ms)
		p->wake_ms = t;
}

/** Delete every running pod not yet being deleted. */
static void delete_active(const struct js_jobctl_pod *pods, size_t n, struct js_jobctl_plan *plan)
{
	for (size_t i = 0; i < n; i++) {
		if ((pods[i].phase == JS_JOBCTL_PENDING || pods[i].phase == JS_JOBCTL_RUNNING) && !pods[i].terminating) {
			plan->delete_ids = js_xrealloc(plan->delete_ids, (plan->n_delete + 1) * sizeof(uint64_t));
			plan->delete_ids[plan->n_delete++] = pods[i].id;
		}
	}
}

/** Pod creation under parallelism, lowest pending index first. */
static void plan_creates(const struct spec *s, const struct tally *t, int64_t now_ms,
			 const struct js_jobctl_opts *o, struct js_jobctl_plan *plan)
{
	/* With podReplacementPolicy Failed a terminating pod still holds its
	 * place until it is terminal. */
	int32_t held = s->replace_failed_only ? t->terminating : 0;
	int32_t room = s->parallelism - t->active - held;
	if (s->indexed) {
		for (int32_t i = 0; i < s->completions && room > 0; i++) {
			if (t->idx_done[i] || t->idx_failed[i] || t->idx_active[i] ||
			    (s->replace_failed_only && t->idx_terminating[i]))
				continue;
			if (t->idx_failures[i] > 0) {
				int64_t at = js_sat_add(t->idx_last_fail[i], backoff_delay(o, t->idx_failures[i]));
				if (at > now_ms) {
					wake_at(plan, at);
					continue;
				}
			}
			push_create(plan, i);
			room--;
		}
		return;
	}
	int32_t want;
	if (s->has_completions)
		want = s->completions - t->succeeded;
	else
		want = t->succeeded > 0 ? 0 : s->parallelism; /* work queue mode */
	if (want > s->parallelism)
		want = s->parallelism;
	want -= t->active + held;
	if (want <= 0)
		return;
	if (t->failed > 0) {
		int64_t at = js_sat_add(t->last_fail_ms, backoff_delay(o, t->failed));
		if (at > now_ms) {
			wake_at(plan, at);
			return;
		}
	}
	while (want-- > 0)
		push_create(plan, -1);
}

/** The failure to declare now, if any: reason and message (static or in
 * `msg`). Order as in syncJob. */
static const char *failure_reason(const struct spec *s, const struct tally *t, const char *ns,
				  const struct js_jobctl_now *now, int64_t start_ms, struct js_buf *msg,
				  struct js_jobctl_plan *plan)
{
	if (t->fail_job_pod) {
		(void)match_pfp(s, ns, t->fail_job_pod, msg);
		return "PodFailurePolicy";
	}
	bool over = t->failed > s->backoff_limit;
	if (s->on_failure && !s->has_per_index)
		over = over || (s->backoff_limit == 0 ? t->restarts_active > 0 : t->restarts_active >= s->backoff_limit);
	if (!s->has_per_index && over) {
		bprintf(msg, "%s", MSG_BACKOFF);
		return "BackoffLimitExceeded";
	}
	if (s->indexed && s->has_max_failed && t->n_idx_failed > s->max_failed) {
		bprintf(msg, "%s", MSG_MAX_FAILED_INDEXES);
		return "MaxFailedIndexesExceeded";
	}
	if (s->has_deadline && start_ms >= 0) {
		/* A wall-clock deadline (startTime is one), waited for on
		 * the monotonic clock. */
		int64_t at = js_sat_add(start_ms, js_sat_s_to_ms(s->deadline_s));
		if (now->wall_ms >= at) {
			bprintf(msg, "%s", MSG_DEADLINE);
			return "DeadlineExceeded";
		}
		wake_at(plan, js_sat_add(now->mono_ms, js_sat_sub(at, now->wall_ms)));
	}
	if (s->indexed && t->n_idx_failed > 0 && t->n_idx_done + t->n_idx_failed == s->completions) {
		bprintf(msg, "%s", MSG_FAILED_INDEXES);
		return "FailedIndexes";
	}
	return NULL;
}

static bool succeeded(const struct spec *s, const struct tally *t)
{
	if (s->indexed)
		return t->n_idx_done == s->completions && t->n_idx_failed == 0;
	if (s->has_completions)
		return t->succeeded >= s->completions;
	return t->succeeded > 0 && t->active == 0;
}

/** Counters and index sets into status. */
static bool write_counters(const struct spec *s, const struct tally *t, json_t *st)
{
	bool ch = false;
	ch |= set_i32(st, "active", t->active);
	ch |= set_i32(st, "ready", t->ready);
	ch |= set_i32(st, "terminating", t->terminating);
	ch |= set_i32(st, "succeeded", t->succeeded);
	ch |= set_i32(st, "failed", t->failed);
	if (s->indexed) {
		char *done = js_jobctl_format_indexes(t->idx_done, (size_t)s->completions);
		ch |= set_str(st, "completedIndexes", *done ? done : NULL);
		free(done);
		if (s->has_per_index) {
			char *failed = js_jobctl_format_indexes(t->idx_failed, (size_t)s->completions);
			ch |= set_str(st, "failedIndexes", failed);
			free(failed);
		}
	}
	return ch;
}

int js_jobctl_sync(json_t *job, const struct js_jobctl_pod *pods, size_t n_pods, const struct js_jobctl_now *clock,
		   const struct js_jobctl_opts *opts, struct js_jobctl_plan *ret_plan)
{
	struct spec s;
	if (read_spec(job, &s) < 0)
		return JS_EINVALID;
	const char *ns = js_json_str(json_object_get(job, "metadata"), "namespace");
	ns = ns ? ns : "default";
	json_t *st = json_object_get(job, "status");
	if (!json_is_object(st)) {
		st = json_object();
		json_object_set_new(job, "status", st);
	}
	char now[21];
	js_time_format_rfc3339(clock->wall_ms / 1000, now);

	struct js_jobctl_plan plan = {.wake_ms = -1};
	struct tally t;
	count_pods(&s, ns, pods, n_pods, &t);
	bool ch = write_counters(&s, &t, st);
	bool left = t.active > 0 || t.terminating > 0; /* processes remain */

	const json_t *failed = js_jobctl_condition(job, "Failed");
	const json_t *complete = js_jobctl_condition(job, "Complete");
	const json_t *target = js_jobctl_condition(job, "FailureTarget");
	const json_t *criteria = js_jobctl_condition(job, "SuccessCriteriaMet");
	if (failed || complete) {
		delete_active(pods, n_pods, &plan);
		goto out;
	}
	if (target || criteria) {
		/* Terminal condition pending: wait for the pods to be gone. */
		delete_active(pods, n_pods, &plan);
		if (!left) {
			const json_t *c = target ? target : criteria;
			ch |= set_condition(st, target ? "Failed" : "Complete", "True", js_json_str(c, "reason"),
					    js_json_str(c, "message"), now);
			if (criteria)
				ch |= set_str(st, "completionTime", now);
		}
		goto out;
	}
	if (s.suspend) {
		delete_active(pods, n_pods, &plan);
		ch |= set_condition(st, "Suspended", "True", "JobSuspended", "Job suspended", now);
		goto out;
	}
	if (js_jobctl_condition(job, "Suspended")) {
		ch |= set_condition(st, "Suspended", "False", "JobResumed", "Job resumed", now);
		ch |= set_str(st, "startTime", now);
	}
	if (!js_json_str(st, "startTime"))
		ch |= set_str(st, "startTime", now);
	int64_t start_s = 0;
	int64_t start_ms = js_time_parse_rfc3339(js_json_str(st, "startTime"), &start_s) == 0 ? start_s * 1000 : -1;

	struct js_buf msg;
	js_buf_init(&msg, 4096);
	const char *reason = failure_reason(&s, &t, ns, clock, start_ms, &msg, &plan);
	if (reason) {
		ch |= set_condition(st, "FailureTarget", "True", reason, js_buf_str(&msg), now);
		delete_active(pods, n_pods, &plan);
		if (!left)
			ch |= set_condition(st, "Failed", "True", reason, js_buf_str(&msg), now);
		plan.wake_ms = -1;
	} else if (succeeded(&s, &t)) {
		ch |= set_condition(st, "SuccessCriteriaMet", "True", "CompletionsReached", MSG_COMPLETIONS, now);
		delete_active(pods, n_pods, &plan);
		if (!left) {
			ch |= set_condition(st, "Complete", "True", "CompletionsReached", MSG_COMPLETIONS, now);
			ch |= set_str(st, "completionTime", now);
		}
		plan.wake_ms = -1;
	} else {
		plan_creates(&s, &t, clock->mono_ms, opts, &plan);
	}
	js_buf_done(&msg);
out:
	plan.status_changed = ch;
	plan.finished = js_jobctl_condition(job, "Failed") || js_jobctl_condition(job, "Complete");
	tally_done(&t);
	*ret_plan = plan;
	return 0;
}

void js_jobctl_plan_done(struct js_jobctl_plan *plan)
{
	if (!plan)
		return;
	free(plan->create);
	free(plan->delete_ids);
	memset(plan, 0, sizeof(*plan));
}
