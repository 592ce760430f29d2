/*
 * validate_limits.c - the size bounds of base/limits.h that keep one JobSet
 * from taking a runtime's memory or time (issue 22; docs/differences.md,
 * "Size limits").
 *
 * The CRD schema allows 2^31 - 1 replicas per ReplicatedJob and lists of any
 * length; every runtime plans linearly in the child Jobs and matches every
 * failure rule against each failed Job. These checks are O(size of the
 * object) and run before every other check, which may be quadratic in the
 * lists they bound. The webhook, `jobset validate` and `jobset run` refuse
 * such a JobSet (js_validate_create); the core fails one that never met the
 * webhook, with the same message (core/reconcile.c).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api/api_int.h"
#include "base/buf.h"
#include "base/limits.h"

_Static_assert(JS_LIMIT_JOBS <= INT32_MAX, "the sum of replicas fits the int32 counts of the status");
_Static_assert(JS_LIMIT_FP_RULE_LIST >= JS_LIMIT_REPLICATED_JOBS, "a rule can target every ReplicatedJob");

static void too_many(struct js_diag *d, const char *path, size_t n, size_t max, const char *what)
{
	char v[32];
	snprintf(v, sizeof(v), "%zu", n);
	js_diag_add(d, JS_DIAG_TOO_MANY, path, v, "has %zu %s; at most %zu are allowed", n, what, max);
}

static void check_list(struct js_diag *d, const struct js_strlist *l, const char *path, const char *what)
{
	if (l->n > JS_LIMIT_FP_RULE_LIST)
		too_many(d, path, l->n, JS_LIMIT_FP_RULE_LIST, what);
}

/* The child Jobs: one error, on the ReplicatedJob whose replicas take the
 * running sum past the bound, giving the whole sum. */
static void check_jobs(const struct js_spec *s, struct js_diag *d)
{
	int64_t total = 0;
	size_t over = SIZE_MAX; /* the ReplicatedJob that crosses the bound */
	for (size_t i = 0; i < s->n_replicated_jobs; i++) {
		const struct js_rjob *r = &s->replicated_jobs[i];
		total += r->has_replicas ? (r->replicas > 0 ? r->replicas : 0) : 1;
		if (total > JS_LIMIT_JOBS && over == SIZE_MAX)
			over = i;
	}
	if (over == SIZE_MAX)
		return;
	const struct js_rjob *r = &s->replicated_jobs[over];
	char path[64], v[32];
	snprintf(path, sizeof(path), "spec.replicatedJobs[%zu].replicas", over);
	snprintf(v, sizeof(v), "%" PRId32, r->has_replicas ? r->replicas : 1);
	js_diag_add(d, JS_DIAG_INVALID, path, v,
		    "the JobSet would have %" PRId64 " child Jobs (replicas summed over its ReplicatedJobs); at most %d "
		    "are allowed",
		    total, JS_LIMIT_JOBS);
}

int js_validate_limits(const struct js_jobset *js, struct js_diag *diag)
{
	size_t before = diag->n;
	const struct js_spec *s = &js->spec;

	if (s->n_replicated_jobs > JS_LIMIT_REPLICATED_JOBS)
		too_many(diag, "spec.replicatedJobs", s->n_replicated_jobs, JS_LIMIT_REPLICATED_JOBS,
			 "ReplicatedJobs");
	check_jobs(s, diag);
	if (s->success_policy)
		check_list(diag, &s->success_policy->target_replicated_jobs, "spec.successPolicy.targetReplicatedJobs",
			   "entries");
	const struct js_failure_policy *fp = s->failure_policy;
	if (fp && fp->n_rules > JS_LIMIT_FP_RULES)
		too_many(diag, "spec.failurePolicy.rules", fp->n_rules, JS_LIMIT_FP_RULES, "rules");
	size_t patterns = 0;
	for (size_t i = 0; fp && i < fp->n_rules && i < JS_LIMIT_FP_RULES; i++) {
		const struct js_fp_rule *r = &fp->rules[i];
		char path[96];
		snprintf(path, sizeof(path), "spec.failurePolicy.rules[%zu].targetReplicatedJobs", i);
		check_list(diag, &r->target_replicated_jobs, path, "entries");
		snprintf(path, sizeof(path), "spec.failurePolicy.rules[%zu].onJobFailureReasons", i);
		check_list(diag, &r->on_job_failure_reasons, path, "entries");
		size_t before_rule = patterns;
		patterns += r->on_job_failure_message_patterns.n;
		if (before_rule <= JS_LIMIT_FP_PATTERNS && patterns > JS_LIMIT_FP_PATTERNS) {
			snprintf(path, sizeof(path), "spec.failurePolicy.rules[%zu].onJobFailureMessagePatterns", i);
			js_diag_add(diag, JS_DIAG_TOO_MANY, path, NULL,
				    "the rules up to this one have %zu message patterns together; at most %d are allowed "
				    "in all rules",
				    patterns, JS_LIMIT_FP_PATTERNS);
		}
		for (size_t k = 0; k < r->on_job_failure_message_patterns.n && patterns <= JS_LIMIT_FP_PATTERNS; k++) {
			const char *pat = r->on_job_failure_message_patterns.items[k];
			size_t len = pat ? strlen(pat) : 0;
			if (len <= JS_LIMIT_PATTERN_LEN)
				continue;
			snprintf(path, sizeof(path), "spec.failurePolicy.rules[%zu].onJobFailureMessagePatterns[%zu]", i,
				 k);
			js_diag_add(diag, JS_DIAG_TOO_LONG, path, NULL,
				    "a message pattern may be at most %d bytes long, not %zu", JS_LIMIT_PATTERN_LEN, len);
		}
	}
	return diag->n > before ? JS_EINVALID : 0;
}
