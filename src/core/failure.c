/*
 * failure.c - the failure policy (SPEC §11.8): which rule matches which
 * failed Job, and what each of the five actions does to the status.
 *
 * Message patterns are user input matched against Job failure messages, so
 * they go through RE2 (base/regex.h): linear time, no catastrophic
 * backtracking. A pattern that does not compile never matches. They are
 * compiled once (core/policy.h): by the runtime per JobSet generation, or
 * by this pass on first use.
 */
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"
#include "core/policy.h"

#define MSG_FAILED_JOBS "jobset failed due to one or more job failures (first failed job: %s)"
#define MSG_FAIL_JOBSET "applying FailJobSet failure policy action (first failed job: %s)"
#define MSG_MAX_RESTARTS "jobset failed due to reaching max number of restarts (first failed job: %s)"
#define MSG_RESTART_JOBSET "applying RestartJobSet failure policy action (first failed job: %s)"
#define MSG_RESTART_JOBSET_IGNORE \
	"applying RestartJobSetAndIgnoreMaxRestarts failure policy action (first failed job: %s)"
#define MSG_RESTART_JOB "applying RestartJob failure policy action (first failed job: %s)"
#define MSG_RESTART_JOB_IGNORE "applying RestartJobAndIgnoreMaxRestarts failure policy action (first failed job: %s)"
#define MSG_GATE_OFF "%s failure policy action cannot be used when the feature gate RestartJob is disabled (first failed job: %s)"

/* Failure time; a Job without one sorts first, as Go's zero time does. */
static int64_t failed_at(const struct js_obsjob *j)
{
	const struct js_jobcond *f = js__status_failure_cond(j);
	return f && f->has_last_transition_time ? f->last_transition_time : INT64_MIN;
}

/* The compiled patterns: the input's, else compiled now, once per pass. */
static const struct js_policy *policy(struct js__ctx *c)
{
	if (!c->policy)
		c->policy = c->own_policy = js_policy_compile(c->js);
	return c->policy;
}

bool js__failure_rule_applies(struct js__ctx *c, size_t i, const struct js_obsjob *j)
{
	const struct js_fp_rule *rule = &c->js->spec.failure_policy->rules[i];
	const struct js_jobcond *f = js__status_failure_cond(j);
	const char *rname = j->rjob_name;

	if (rule->on_job_failure_reasons.n > 0 && !js_strlist_has(&rule->on_job_failure_reasons, f ? f->reason : NULL))
		return false;
	if (rule->on_job_failure_message_patterns.n > 0 &&
	    !js_policy_rule_matches(policy(c), i, f ? f->message : NULL))
		return false;
	if (!rname || !*rname)
		return false;
	return rule->target_replicated_jobs.n == 0 || js_strlist_has(&rule->target_replicated_jobs, rname);
}

/* Earliest failure among the failed Jobs rule number `rule` applies to (all
 * when rule is SIZE_MAX); strictly earlier wins, ties keep list order. */
static const struct js_obsjob *earliest(struct js__ctx *c, size_t rule)
{
	const struct js_obsjob *best = NULL;
	for (size_t i = 0; i < c->failed.n; i++) {
		const struct js_obsjob *j = c->failed.items[i];
		if (rule != SIZE_MAX && !js__failure_rule_applies(c, rule, j))
			continue;
		if (!best || failed_at(j) < failed_at(best))
			best = j;
	}
	return best;
}

static int64_t job_budget_used(const struct js__ctx *c)
{
	int64_t sum = 0;
	for (size_t i = 0; i < c->js->status.n_replicated_jobs_status; i++) {
		const struct js_i32list *l = &c->js->status.replicated_jobs_status[i].job_restarts_count_towards_max;
		for (size_t k = 0; k < l->n; k++)
			sum += l->items[k];
	}
	return sum;
}

#define MSG_NO_ATTEMPT "jobset failed: %s is %d, so no further restart can be numbered (first failed job: %s)"

/* Counters are int32 in the API: one at INT32_MAX (which anyone allowed to
 * patch the status can write) cannot count another restart. The JobSet
 * fails, saying which counter, instead of wrapping (issue 22). */
static bool counter_full(struct js__ctx *c, int32_t v, const char *what, const char *job)
{
	if (v < INT32_MAX)
		return false;
	js__status_set_failed(c, "ReachedMaxRestarts", js__fmt(c, MSG_NO_ATTEMPT, what, INT32_MAX, job ? job : "none"));
	return true;
}

/* A whole-JobSet restart: a new attempt (SPEC §11.8 RestartJobSet), counted
 * toward maxRestarts or not; `reason` is the RestartingJobSet reason.
 * Returns false when the counters are full and the JobSet failed instead. */
static bool restart_jobset_as(struct js__ctx *c, const char *reason, const char *event_type, const char *event,
			      const char *msg, bool counted, const char *job)
{
	struct js_status *st = &c->js->status;

	if (counter_full(c, st->restarts, "status.restarts", job) ||
	    (counted && counter_full(c, st->restarts_count_towards_max, "status.restartsCountTowardsMax", job)))
		return false;
	st->restarts++;
	if (counted)
		st->restarts_count_towards_max++;
	c->dirty = true;
	c->js->has_status = true;
	js__attempts_restart(c); /* KEP-1282 §3 */
	js__avoid_restart(c);    /* ours: node quarantine */
	js__deadline_restart(c); /* KEP-1186 §3 */
	(void)js__status_set_condition(c, JS_COND_RESTARTING, true, reason, msg, event_type);
	js__ctx_event(c, event_type, event, msg);
	return true;
}

static void restart_jobset(struct js__ctx *c, const struct js_fp_rule *rule, const struct js_obsjob *j, bool counted)
{
	const char *msg = js__fmt(c, counted ? MSG_RESTART_JOBSET : MSG_RESTART_JOBSET_IGNORE, j->name);
	const char *reason = rule ? js__fmt(c, "FailurePolicy_%s", rule->name ? rule->name : "") : "DefaultFailurePolicy";

	if (restart_jobset_as(c, reason, "Warning",
			      counted ? "RestartJobSetFailurePolicyAction"
				      : "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction",
			      msg, counted, j->name))
		js__ctx_restart(c, counted ? "RestartJobSet" : "RestartJobSetAndIgnoreMaxRestarts", j);
}

bool js__failure_requested(struct js__ctx *c)
{
	const struct js_jobset *js = c->js;
	const char *v = json_is_object(js->meta.annotations)
				? json_string_value(json_object_get(js->meta.annotations, JS_ANN_RESTART_REQUEST))
				: NULL;
	int32_t want;

	/* Only a request naming the attempt running now is honoured: an
	 * earlier one is spent (repeated or late), a later one names an
	 * attempt that has not begun, garbage is no request. While suspended
	 * nothing runs to restart; the request waits for the resume. */
	if (!v || !js__parse_i32(v, &want) || want != js->status.restarts ||
	    (js->spec.has_suspend && js->spec.suspend))
		return false;
	if (restart_jobset_as(c, JS_REASON_RESTART_REQUESTED, "Normal", JS_REASON_RESTART_REQUESTED,
			      js__fmt(c, "restart requested through annotation %s=%s", JS_ANN_RESTART_REQUEST, v), false,
			      NULL))
		js__ctx_restart(c, "RestartJobSetAndIgnoreMaxRestarts", NULL);
	return true;
}

/* Zero list of `n` entries when empty (SPEC §11.8 RestartJob). */
static void materialise(struct js_i32list *l, int32_t n)
{
	if (l->n == 0 && n > 0) {
		free(l->items);
		l->items = js_xcalloc((size_t)n, sizeof(int32_t));
		l->n = (size_t)n;
	}
	l->has = true;
}

static int restart_job(struct js__ctx *c, const struct js_obsjob *j, bool counted)
{
	const char *rname = j->rjob_name;
	const char *idx_s = j->job_index;
	int32_t idx;
	int ri = rname ? js_jobset_find_rjob(c->js, rname) : -1;
	struct js_rjob_status *e = rname ? js__rjob_status(c, rname) : NULL;

	if (ri < 0 || !e || !idx_s || !js__parse_i32(idx_s, &idx) || idx < 0)
		return js__ctx_fail(c, "job %s: cannot restart it: missing or invalid labels %s and %s", j->name,
				    JS_LABEL_RJOB_NAME, JS_LABEL_JOB_INDEX);
	int32_t replicas = js__replicas(&c->js->spec.replicated_jobs[ri]);
	materialise(&e->job_restarts, replicas);
	if (counted)
		materialise(&e->job_restarts_count_towards_max, replicas);
	if ((size_t)idx >= e->job_restarts.n || (counted && (size_t)idx >= e->job_restarts_count_towards_max.n))
		return js__ctx_fail(c, "job %s: job index %d out of range of jobRestarts", j->name, idx);
	if (counter_full(c, e->job_restarts.items[idx], "its entry of jobRestarts", j->name) ||
	    (counted && counter_full(c, e->job_restarts_count_towards_max.items[idx],
				     "its entry of jobRestartsCountTowardsMax", j->name)))
		return 0;
	e->job_restarts.items[idx]++;
	if (counted)
		e->job_restarts_count_towards_max.items[idx]++;
	c->dirty = true;
	js__avoid_restart_job(c, j); /* ours: node quarantine */
	js__ctx_restart(c, counted ? "RestartJob" : "RestartJobAndIgnoreMaxRestarts", j);
	const char *msg = js__fmt(c, counted ? MSG_RESTART_JOB : MSG_RESTART_JOB_IGNORE, j->name);
	js__ctx_event(c, "Warning",
		      counted ? "RestartJobFailurePolicyAction" : "RestartJobAndIgnoreMaxRestartsFailurePolicyAction", msg);
	return 0;
}

int js__failure_run(struct js__ctx *c)
{
	const struct js_failure_policy *fp = c->js->spec.failure_policy;
	const struct js_status *st = &c->js->status;

	if (!fp) {
		js__status_set_failed(c, "FailedJobs", js__fmt(c, MSG_FAILED_JOBS, earliest(c, SIZE_MAX)->name));
		return 0;
	}
	const struct js_fp_rule *rule = NULL;
	const struct js_obsjob *j = NULL;
	for (size_t i = 0; i < fp->n_rules && !j; i++) {
		j = earliest(c, i);
		rule = j ? &fp->rules[i] : NULL;
	}
	if (!j)
		j = earliest(c, SIZE_MAX);
	enum js_fp_action action = rule && rule->has_action ? rule->action : JS_FP_ACTION_RESTART_JOBSET;
	int32_t max = fp->has_max_restarts ? fp->max_restarts : 0;
	int64_t used = st->restarts_count_towards_max;
	bool gate = c->in->gates.restart_job;

	switch (action) {
	case JS_FP_ACTION_FAIL_JOBSET:
		js__status_set_failed(c, "FailJobSetFailurePolicyAction", js__fmt(c, MSG_FAIL_JOBSET, j->name));
		return 0;
	case JS_FP_ACTION_RESTART_JOBSET_IGNORE_MAX:
		if (js__avoid_hold(c))
			return 0;
		restart_jobset(c, rule, j, false);
		return 0;
	case JS_FP_ACTION_RESTART_JOB:
	case JS_FP_ACTION_RESTART_JOB_IGNORE_MAX:
		if (!gate) {
			/* Upstream errors on every reconcile, forever (SPEC
			 * §16.13); a terminal condition says why instead. */
			js__status_set_failed(c, "FailurePolicyActionUnavailable",
				  js__fmt(c, MSG_GATE_OFF, js_fp_action_to_string(action), j->name));
			return 0;
		}
		if (action == JS_FP_ACTION_RESTART_JOB_IGNORE_MAX)
			return js__avoid_hold(c) ? 0 : restart_job(c, j, false);
		if (used + job_budget_used(c) >= max) {
			js__status_set_failed(c, "ReachedMaxRestarts", js__fmt(c, MSG_MAX_RESTARTS, j->name));
			return 0;
		}
		if (js__avoid_hold(c))
			return 0;
		return restart_job(c, j, true);
	case JS_FP_ACTION_RESTART_JOBSET:
	default:
		if ((gate && used + job_budget_used(c) >= max) || used >= max) {
			js__status_set_failed(c, "ReachedMaxRestarts", js__fmt(c, MSG_MAX_RESTARTS, j->name));
			return 0;
		}
		if (js__avoid_hold(c))
			return 0;
		restart_jobset(c, rule, j, true);
		return 0;
	}
}
