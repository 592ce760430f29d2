/*
 * policy_test.c - compiled failure-policy patterns (core/policy.h) and how
 * the core uses them (SPEC §11.8):
 *   - each pattern is compiled once when the policy is built, whatever
 *     is matched afterwards; one that does not compile never matches;
 *   - js_policy_fits tells a policy built from the same patterns from one
 *     built from others;
 *   - the core borrows the policy its input gives (it compiles none of its
 *     own then), and compiles its own when none is given, with the same
 *     outcome.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/policy.h"
#include "core/reconcile.h"
#include "support/testutil.h"

/* fix-a with a failure policy of `rules` (a JSON array). */
static struct js_jobset *with_rules(const char *rules)
{
	char patch[2048];
	snprintf(patch, sizeof patch, "{\"spec\":{\"failurePolicy\":{\"maxRestarts\":5,\"rules\":%s}}}", rules);
	return tu_fixture("tests/cases/core/fix-a.yaml", patch);
}

static void test_matching(void **state)
{
	(void)state;
	struct js_jobset *js = with_rules(
		"[{\"name\":\"a\",\"action\":\"FailJobSet\",\"onJobFailureMessagePatterns\":[\"(?i)out of memory\","
		"\"exit code [0-9]+$\"]},"
		"{\"name\":\"b\",\"action\":\"FailJobSet\",\"onJobFailureReasons\":[\"PodFailurePolicy\"]},"
		"{\"name\":\"c\",\"action\":\"FailJobSet\",\"onJobFailureMessagePatterns\":[\"([bad\",\"^$\"]}]");
	struct js_policy *p = js_policy_compile(js);
	assert_int_equal(js_policy_compiled(p), 4); /* every pattern once, the bad one included */
	static const struct {
		size_t rule;
		const char *message;
		bool want;
	} cases[] = {
		{0, "container: Out Of Memory", true},
		{0, "backoff limit: exit code 137", true},
		{0, "exit code 137, then more", false},
		{0, NULL, false},
		{1, "anything", false},      /* no patterns */
		{2, "([bad", false},         /* does not compile: never matches */
		{2, NULL, true},             /* ^$ against the empty message */
		{2, "x", false},
		{3, "out of memory", false}, /* no such rule */
	};
	for (int round = 0; round < 3; round++)
		for (size_t i = 0; i < JS_ARRAY_SIZE(cases); i++)
			if (js_policy_rule_matches(p, cases[i].rule, cases[i].message) != cases[i].want)
				fail_msg("rule %zu, message '%s': want %d", cases[i].rule,
					 cases[i].message ? cases[i].message : "(null)", cases[i].want);
	assert_int_equal(js_policy_compiled(p), 4); /* matching compiles nothing */
	js_policy_unref(p);
	js_jobset_free(js);
}

static void test_fits(void **state)
{
	(void)state;
#define RULE(name, pats) "{\"name\":\"" name "\",\"action\":\"FailJobSet\",\"onJobFailureMessagePatterns\":" pats "}"
	const char *a = "[" RULE("a", "[\"x\",\"y\"]") "]";
	struct js_jobset *js = with_rules(a);
	struct js_jobset *same = with_rules(a);
	struct js_jobset *other = with_rules("[" RULE("a", "[\"x\",\"z\"]") "]");
	struct js_jobset *more = with_rules("[" RULE("a", "[\"x\",\"y\"]") "," RULE("b", "[]") "]");
#undef RULE
	struct js_jobset *none = tu_fixture("tests/cases/core/fix-a.yaml", NULL);
	struct js_policy *p = js_policy_compile(js);
	assert_true(js_policy_fits(p, js));
	assert_true(js_policy_fits(p, same));
	assert_false(js_policy_fits(p, other));
	assert_false(js_policy_fits(p, more));
	assert_false(js_policy_fits(p, none));
	struct js_policy *empty = js_policy_compile(none);
	assert_int_equal(js_policy_compiled(empty), 0);
	assert_true(js_policy_fits(empty, none));
	assert_true(js_policy_fits(empty, NULL));
	assert_false(js_policy_fits(NULL, none));
	/* Shared by reference: the last unref frees (ASan/valgrind check). */
	const struct js_policy *again = js_policy_ref(p);
	js_policy_unref(p);
	assert_true(js_policy_rule_matches(again, 0, "y"));
	js_policy_unref(again);
	js_policy_unref(empty);
	js_policy_unref(NULL);
	js_jobset_free(js);
	js_jobset_free(same);
	js_jobset_free(other);
	js_jobset_free(more);
	js_jobset_free(none);
}

/* A failed Job "test-js-replicated-job-a-0" of attempt 0 with `message`. */
static struct js_obsjob *failed_job(const char *message)
{
	char yaml[2048];
	snprintf(yaml, sizeof yaml,
		 "metadata:\n  name: test-js-replicated-job-a-0\n  uid: j0\n"
		 "  labels: {jobset.sigs.k8s.io/replicatedjob-name: replicated-job-a, jobset.sigs.k8s.io/job-index: '0',\n"
		 "           jobset.sigs.k8s.io/restart-attempt: '0'}\n"
		 "  ownerReferences:\n"
		 "  - {apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, name: test-js, uid: uid-test-js, controller: true}\n"
		 "status:\n  failed: 1\n  conditions:\n"
		 "  - {type: Failed, status: 'True', reason: BackoffLimitExceeded, message: '%s',\n"
		 "     lastTransitionTime: '2024-01-01T00:00:00Z'}\n",
		 message);
	json_t *j = tu_yaml(yaml);
	struct js_obsjob *o = js_job_from_json(j, NULL);
	assert_non_null(o);
	json_decref(j);
	return o;
}

/* The reason of the terminal Failed condition of `plan`, or NULL. */
static const char *failed_reason(const struct js_plan *plan)
{
	const struct js_status *st = plan->status;
	for (size_t i = 0; st && i < st->n_conditions; i++)
		if (st->conditions[i].type && strcmp(st->conditions[i].type, "Failed") == 0)
			return st->conditions[i].reason;
	return NULL;
}

static void test_core_borrows(void **state)
{
	(void)state;
	/* The JobSet's own rule never matches "boom"; the policy handed to the
	 * core was compiled from a rule that does. Which one decides shows
	 * whose patterns the core matched with. */
	struct js_jobset *js = with_rules("[{\"name\":\"r\",\"action\":\"FailJobSet\","
					  "\"onJobFailureMessagePatterns\":[\"never-matches\"]}]");
	struct js_jobset *boom = with_rules("[{\"name\":\"r\",\"action\":\"FailJobSet\","
					    "\"onJobFailureMessagePatterns\":[\"bo+m\"]}]");
	struct js_policy *given = js_policy_compile(boom);
	struct js_obsjob *j = failed_job("boom");
	const struct js_obsjob *jobs[] = {j};
	static const struct {
		const char *name;
		bool give;
		const char *want_failed; /* reason of Failed, or NULL: restarted */
		int32_t want_restarts;
	} cases[] = {
		{"no policy given: compiled from the JobSet, the rule does not apply", false, NULL, 1},
		{"policy given: borrowed, its rule applies", true, "FailJobSetFailurePolicyAction", 0},
	};
	for (size_t i = 0; i < JS_ARRAY_SIZE(cases); i++) {
		struct js_reconcile_input in = {.jobset = js,
						 .jobs = jobs,
						 .n_jobs = 1,
						 .service_exists = true,
						 .policy = cases[i].give ? given : NULL,
						 .now = 1704067300};
		struct js_plan *plan = NULL;
		char *msg = NULL;
		if (js_reconcile_run(&in, &plan, &msg) < 0)
			fail_msg("%s: %s", cases[i].name, msg ? msg : "error");
		const char *reason = failed_reason(plan);
		int32_t restarts = plan->status ? plan->status->restarts : 0;
		if ((reason == NULL) != (cases[i].want_failed == NULL) ||
		    (reason && strcmp(reason, cases[i].want_failed) != 0) || restarts != cases[i].want_restarts)
			fail_msg("%s: Failed reason %s, restarts %d", cases[i].name, reason ? reason : "(none)",
				 restarts);
		js_reconcile_plan_free(plan);
	}
	assert_int_equal(js_policy_compiled(given), 1);
	js_job_unref(j);
	js_policy_unref(given);
	js_jobset_free(js);
	js_jobset_free(boom);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matching),
		cmocka_unit_test(test_fits),
		cmocka_unit_test(test_core_borrows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
