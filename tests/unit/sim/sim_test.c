/*
 * sim_test.c - the simulator's script language (errors are reported, never
 * crash) and property checks of the core over generated scenarios.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "support/testutil.h"

static struct js_jobset *load(const char *patch)
{
	return tu_fixture("tests/cases/core/fix-a.yaml", patch);
}

/* Script errors are reported, never crash. */
static void test_script_errors(void **state)
{
	static const char *const bad[] = {
		"bogus", "fail", "fail nosuchjob", "finalize test-js-replicated-job-a-0", "advance x", "patch [1]",
		"patch {\"spec\":{\"replicatedJobs\":7}}", "add-job {}", "fail #x", "expect", "expect nonsense",
		"expect jobs", "expect action-count X", "expect status restarts", "expect status restarts=x",
		"expect status nokey=1", "expect rjob nope ready=1", "expect requeue", "expect label-count x 1",
		"expect job test-js-replicated-job-a-0 label", "expect job test-js-replicated-job-a-0 path spec {bad",
		"expect jobs 9", "expect live-jobs 9", "expect actions CreateJob:x", "expect actions-include X",
		"expect condition Nope", "expect condition Suspended", "expect event Warning X",
		"expect requeue 5", "expect error zzz", "expect skipped x", "expect status-changed yes",
		"expect service no", "expect pvcs a", "expect jobset-deleted no", "expect metric completed=5",
		"expect job nope", "expect job test-js-replicated-job-a-0 absent", "expect job test-js-replicated-job-a-0 deleting",
		"expect job test-js-replicated-job-a-0 suspended", "expect job test-js-replicated-job-a-0 label a=b",
		"expect job test-js-replicated-job-a-0 path spec.nope 1", "expect job test-js-replicated-job-a-0 no-label jobset.sigs.k8s.io/jobset-name",
		"expect label-count a=b 3", "expect rjob replicated-job-a jobRestarts=[1]",
	};
	(void)state;
	struct js_jobset *js = load(NULL);
	struct js_sim *sim = js_sim_new(js, (struct js_gates){0}, 1700000000);
	struct js_buf out;
	js_buf_init(&out, 0);
	char *err = NULL;
	assert_int_equal(js_sim_exec(sim, "settle", &out, &err), 0);
	assert_int_equal(js_sim_exec(sim, "suspended-cond all", &out, &err), 0);
	assert_int_equal(js_sim_exec(sim, "delete-jobset", &out, &err), 0);
	assert_int_equal(js_sim_exec(sim, "# comment only", &out, &err), 0);
	assert_int_equal(js_sim_exec(sim, "expect no-error", &out, &err), 0);
	assert_int_equal(js_sim_exec(sim, "expect no-event X", &out, &err), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err = NULL;
		if (js_sim_exec(sim, bad[i], &out, &err) >= 0)
			fail_msg("accepted: %s", bad[i]);
		free(err);
	}
	assert_non_null(js_sim_jobset(sim));
	assert_int_equal(json_array_size(js_sim_jobs(sim)), 4);
	js_buf_done(&out);
	js_sim_free(sim);
	js_sim_free(NULL);
	js_jobset_free(js);
}

/* Property checks: random event sequences over several JobSet shapes. Each
 * reconcile in the simulator checks determinism, that no create names an
 * existing Job, that restart counters never decrease and that a finished
 * JobSet never creates a Job; `settle` checks that replaying the same
 * observations converges to a plan with nothing to do. */
static void test_properties(void **state)
{
	static const char *const shapes[] = {
		NULL,
		"{\"spec\":{\"failurePolicy\":{\"maxRestarts\":3}}}",
		"{\"spec\":{\"failurePolicy\":{\"maxRestarts\":2,\"restartStrategy\":\"BlockingRecreate\"}}}",
		"{\"spec\":{\"failurePolicy\":{\"maxRestarts\":4,\"rules\":[{\"name\":\"r\",\"action\":\"RestartJob\",\"targetReplicatedJobs\":[\"replicated-job-b\"]},{\"name\":\"i\",\"action\":\"RestartJobSetAndIgnoreMaxRestarts\",\"onJobFailureReasons\":[\"PodFailurePolicy\"]}]}}}",
		"{\"spec\":{\"startupPolicy\":{\"startupPolicyOrder\":\"InOrder\"},\"failurePolicy\":{\"maxRestarts\":2}}}",
		"{\"spec\":{\"suspend\":true,\"successPolicy\":{\"operator\":\"Any\"},\"ttlSecondsAfterFinished\":30}}",
	};
	static const char *const verbs[] = {"fail", "failtarget", "complete", "ready", "activate", "finalize",
					    "suspend", "resume", "advance", "remove", "fail"};
	(void)state;
	unsigned seed = 12345;
	int steps = 0;
	for (int round = 0; round < 120; round++) {
		const char *shape = shapes[round % (sizeof(shapes) / sizeof(shapes[0]))];
		struct js_jobset *js = load(shape);
		struct js_gates g = {.restart_job = round % 2 == 1};
		struct js_sim *sim = js_sim_new(js, g, 1700000000);
		struct js_buf out;
		js_buf_init(&out, 0);
		char *err = NULL;
		if (js_sim_exec(sim, "settle", &out, &err) < 0)
			fail_msg("round %d settle: %s", round, err);
		for (int k = 0; k < 25; k++) {
			seed = seed * 1103515245u + 12345u;
			const char *v = verbs[(seed >> 16) % (sizeof(verbs) / sizeof(verbs[0]))];
			char line[128];
			const char *reason = ((seed >> 8) & 1) ? "PodFailurePolicy" : "BackoffLimitExceeded";
			if (strcmp(v, "finalize") == 0)
				snprintf(line, sizeof(line), "finalize all");
			else if (strcmp(v, "advance") == 0)
				snprintf(line, sizeof(line), "advance %u", (seed >> 20) % 40);
			else if (strcmp(v, "suspend") == 0 || strcmp(v, "resume") == 0)
				snprintf(line, sizeof(line), "%s", v);
			else
				snprintf(line, sizeof(line), "%s #%u reason=%s", v, (seed >> 12) % 4, reason);
			err = NULL;
			int r = js_sim_exec(sim, line, &out, &err);
			if (r == JS_EINVALID) { /* no such Job right now: fine */
				free(err);
				continue;
			}
			if (r < 0)
				fail_msg("round %d step %d '%s': %s\n%s", round, k, line, err, js_buf_str(&out));
			err = NULL;
			if (js_sim_exec(sim, "settle", &out, &err) < 0)
				fail_msg("round %d step %d settle after '%s': %s\n%s", round, k, line, err, js_buf_str(&out));
			js_buf_clear(&out);
			steps++;
		}
		js_buf_done(&out);
		js_sim_free(sim);
		js_jobset_free(js);
	}
	printf("properties: %d generated steps checked\n", steps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_script_errors),
		cmocka_unit_test(test_properties),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
