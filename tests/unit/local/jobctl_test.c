/*
 * jobctl_test.c - the local Job controller, table-driven: each case is a Job
 * spec (inline JSON), the pods observed, optional pre-existing conditions,
 * and the expected plan and status.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "local/jobctl.h"

#define NOW 1700000000000LL /* ms */
/* The table's clocks agree; test_clocks pulls them apart. */
static const struct js_jobctl_now now = {.mono_ms = NOW, .wall_ms = NOW};
#define P_RUN(i) {.index = (i), .phase = JS_JOBCTL_RUNNING, .ready = true}
#define P_OK(i) {.index = (i), .phase = JS_JOBCTL_SUCCEEDED, .finished_ms = NOW - 1000}
#define P_FAIL(i, code) {.index = (i), .phase = JS_JOBCTL_FAILED, .exit_code = (code), .finished_ms = NOW - 1000}

struct pod {
	int32_t index;
	enum js_jobctl_phase phase;
	bool ready, terminating, by_controller;
	int32_t exit_code, restarts;
	int64_t finished_ms;
	const char *condition;
};

struct jcase {
	const char *name;
	const char *job;         /* JSON of the Job */
	struct pod pods[8];
	size_t n_pods;
	const char *creates;     /* expected created indexes, "0,1" ("" none) */
	size_t n_delete;
	const char *cond;        /* a condition expected True, or NULL */
	const char *reason;      /* its reason */
	const char *msg_part;    /* substring of its message, or NULL */
	const char *not_cond;    /* a condition expected absent/False, or NULL */
	bool finished;
	int64_t wake_ms;         /* expected wake, 0 = don't check */
	const char *completed;   /* expected completedIndexes, or NULL */
	const char *failed_idx;  /* expected failedIndexes, or NULL */
};

#define IDX(c, p) "{\"metadata\":{\"name\":\"j\",\"namespace\":\"ns\"},\"spec\":{\"completionMode\":\"Indexed\"," \
	"\"completions\":" #c ",\"parallelism\":" #p ",\"backoffLimit\":0,\"template\":{\"spec\":{\"restartPolicy\":\"Never\"}}"

static const struct jcase cases[] = {
	{"fresh indexed creates all", IDX(3, 3) "}}", {{0}}, 0, "0,1,2", 0, NULL, NULL, NULL, "FailureTarget", false, 0, NULL, NULL},
	{"parallelism caps creation", IDX(4, 2) "}}", {{0}}, 0, "0,1", 0, NULL, NULL, NULL, NULL, false, 0, NULL, NULL},
	{"running pods fill parallelism", IDX(4, 2) "}}", {P_RUN(0), P_OK(1)}, 2, "2", 0, NULL, NULL, NULL, NULL, false, 0, "1", NULL},
	{"all indexes done: SuccessCriteriaMet then Complete", IDX(2, 2) "}}", {P_OK(0), P_OK(1)}, 2, "", 0, "Complete", "CompletionsReached", "Reached expected number of succeeded pods", NULL, true, 0, "0-1", NULL},
	{"success waits for stragglers", "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"completions\":1,\"parallelism\":2,\"template\":{\"spec\":{}}}}", {{.index = -1, .phase = JS_JOBCTL_SUCCEEDED}, {.index = -1, .phase = JS_JOBCTL_RUNNING}}, 2, "", 1, "SuccessCriteriaMet", "CompletionsReached", NULL, "Complete", false, 0, NULL, NULL},
	{"backoffLimit 0: first failure fails the Job", IDX(2, 2) "}}", {P_FAIL(0, 1), P_RUN(1)}, 2, "", 1, "FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit", "Failed", false, 0, NULL, NULL},
	{"failure with no pods left is Failed", IDX(2, 2) "}}", {P_FAIL(0, 1), P_OK(1)}, 2, "", 0, "Failed", "BackoffLimitExceeded", NULL, NULL, true, 0, NULL, NULL},
	{"backoffLimit 2 recreates after backoff", IDX(1, 1) ",\"backoffLimit\":2}}", {{.index = 0, .phase = JS_JOBCTL_FAILED, .finished_ms = NOW - 50}}, 1, "", 0, NULL, NULL, NULL, "FailureTarget", false, NOW + 50, NULL, NULL},
	{"backoff elapsed: recreated", IDX(1, 1) ",\"backoffLimit\":2}}", {P_FAIL(0, 1)}, 1, "0", 0, NULL, NULL, NULL, "FailureTarget", false, 0, NULL, NULL},
	{"podFailurePolicy FailJob on exit code", IDX(2, 2) ",\"backoffLimit\":6,\"podFailurePolicy\":{\"rules\":[{\"action\":\"Ignore\",\"onPodConditions\":[{\"type\":\"DisruptionTarget\"}]},{\"action\":\"FailJob\",\"onExitCodes\":{\"operator\":\"In\",\"values\":[42]}}]}}}", {P_FAIL(0, 42)}, 1, "", 0, "Failed", "PodFailurePolicy", "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1", NULL, true, 0, NULL, NULL},
	{"podFailurePolicy Ignore on condition", IDX(1, 1) ",\"podFailurePolicy\":{\"rules\":[{\"action\":\"Ignore\",\"onPodConditions\":[{\"type\":\"DisruptionTarget\"}]}]}}}", {{.index = 0, .phase = JS_JOBCTL_FAILED, .exit_code = 1, .finished_ms = NOW - 1000, .condition = "DisruptionTarget"}}, 1, "0", 0, NULL, NULL, NULL, "FailureTarget", false, 0, NULL, NULL},
	{"podFailurePolicy NotIn counts", IDX(1, 1) ",\"podFailurePolicy\":{\"rules\":[{\"action\":\"FailJob\",\"onExitCodes\":{\"operator\":\"NotIn\",\"values\":[1]}}]}}}", {P_FAIL(0, 1)}, 1, "", 0, "Failed", "BackoffLimitExceeded", NULL, NULL, true, 0, NULL, NULL},
	{"per-index limit marks index failed", IDX(3, 3) ",\"backoffLimitPerIndex\":0,\"backoffLimit\":null}}", {P_FAIL(0, 1), P_RUN(1), P_RUN(2)}, 3, "", 0, NULL, NULL, NULL, "FailureTarget", false, 0, NULL, "0"},
	{"maxFailedIndexes exceeded", IDX(3, 3) ",\"backoffLimitPerIndex\":0,\"maxFailedIndexes\":0,\"backoffLimit\":null}}", {P_FAIL(0, 1), P_RUN(1), P_RUN(2)}, 3, "", 2, "FailureTarget", "MaxFailedIndexesExceeded", "maximal number of failed indexes", NULL, false, 0, NULL, "0"},
	{"all indexes resolved with failures: FailedIndexes", IDX(2, 2) ",\"backoffLimitPerIndex\":0,\"backoffLimit\":null}}", {P_FAIL(0, 1), P_OK(1)}, 2, "", 0, "Failed", "FailedIndexes", "Job has failed indexes", NULL, true, 0, "1", "0"},
	{"FailIndex action", IDX(2, 2) ",\"backoffLimitPerIndex\":3,\"backoffLimit\":null,\"podFailurePolicy\":{\"rules\":[{\"action\":\"FailIndex\",\"onExitCodes\":{\"operator\":\"In\",\"values\":[3]}}]}}}", {P_FAIL(1, 3), P_RUN(0)}, 2, "", 0, NULL, NULL, NULL, "FailureTarget", false, 0, NULL, "1"},
	{"OnFailure restarts count against backoffLimit", "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"completionMode\":\"Indexed\",\"completions\":1,\"parallelism\":1,\"backoffLimit\":2,\"template\":{\"spec\":{\"restartPolicy\":\"OnFailure\"}}}}", {{.index = 0, .phase = JS_JOBCTL_RUNNING, .restarts = 2}}, 1, "", 1, "FailureTarget", "BackoffLimitExceeded", NULL, NULL, false, 0, NULL, NULL},
	{"activeDeadlineSeconds exceeded", IDX(1, 1) ",\"activeDeadlineSeconds\":5}, \"status\":{\"startTime\":\"2023-11-14T22:13:00Z\"}}", {P_RUN(0)}, 1, "", 1, "FailureTarget", "DeadlineExceeded", "Job was active longer than specified deadline", NULL, false, 0, NULL, NULL},
	/* The schema's extremes (issue 22): int64 max seconds once wrapped
	 * into the past and failed the Job at once. */
	{"activeDeadlineSeconds int64 max never passes", IDX(1, 1) ",\"activeDeadlineSeconds\":9223372036854775807}, \"status\":{\"startTime\":\"2023-11-14T22:13:20Z\"}}", {P_RUN(0)}, 1, "", 0, NULL, NULL, NULL, "FailureTarget", false, INT64_MAX, NULL, NULL},
	{"activeDeadlineSeconds int32 max is far", IDX(1, 1) ",\"activeDeadlineSeconds\":2147483647}, \"status\":{\"startTime\":\"2023-11-14T22:13:20Z\"}}", {P_RUN(0)}, 1, "", 0, NULL, NULL, NULL, "FailureTarget", false, 1700000000000LL + 2147483647000LL, NULL, NULL},
	{"activeDeadlineSeconds pending sets wake", IDX(1, 1) ",\"activeDeadlineSeconds\":100}, \"status\":{\"startTime\":\"2023-11-14T22:13:20Z\"}}", {P_RUN(0)}, 1, "", 0, NULL, NULL, NULL, "FailureTarget", false, 1700000000000LL + 100000, NULL, NULL},
	{"suspended: delete pods, Suspended", IDX(2, 2) ",\"suspend\":true}}", {P_RUN(0)}, 1, "", 1, "Suspended", "JobSuspended", "Job suspended", NULL, false, 0, NULL, NULL},
	{"resumed: Suspended=False and pods", IDX(1, 1) ",\"suspend\":false},\"status\":{\"conditions\":[{\"type\":\"Suspended\",\"status\":\"True\"}]}}", {{0}}, 0, "0", 0, NULL, NULL, NULL, "Suspended", false, 0, NULL, NULL},
	/* TerminatingOrFailed (no podFailurePolicy): a pod being deleted counts
	 * as failed at once, from when its deletion began (upstream's
	 * isPodFailed). backoffLimit 0 fails the Job without a replacement
	 * (a hung pod stopped by its progress deadline was once replaced while
	 * it stopped, and the replacement killed when it ended); 1 replaces it
	 * after the backoff. */
	{"terminating pod counts as failed: backoffLimit 0 fails the Job", IDX(2, 2) "}}", {{.index = 0, .phase = JS_JOBCTL_RUNNING, .terminating = true}, P_RUN(1)}, 2, "", 1, "FailureTarget", "BackoffLimitExceeded", NULL, "Failed", false, 0, NULL, NULL},
	{"terminating pod replaced after the backoff from its deletion", IDX(2, 2) ",\"backoffLimit\":1}}", {{.index = 0, .phase = JS_JOBCTL_RUNNING, .terminating = true, .finished_ms = NOW - 50}, P_RUN(1)}, 2, "", 0, NULL, NULL, NULL, "FailureTarget", false, NOW + 50, NULL, NULL},
	{"terminating pod replaced once the backoff passed", IDX(2, 2) ",\"backoffLimit\":1}}", {{.index = 0, .phase = JS_JOBCTL_RUNNING, .terminating = true}, P_RUN(1)}, 2, "0", 0, NULL, NULL, NULL, "FailureTarget", false, 0, NULL, NULL},
	{"terminating pod the controller deleted is no failure", IDX(2, 2) "}}", {{.index = 0, .phase = JS_JOBCTL_RUNNING, .terminating = true, .by_controller = true}, P_RUN(1)}, 2, "0", 0, NULL, NULL, NULL, "FailureTarget", false, 0, NULL, NULL},
	{"podFailurePolicy: terminating pod holds its index (Failed)", IDX(2, 2) ",\"podFailurePolicy\":{\"rules\":[{\"action\":\"Ignore\",\"onPodConditions\":[{\"type\":\"DisruptionTarget\"}]}]}}}", {{.index = 0, .phase = JS_JOBCTL_RUNNING, .terminating = true}, P_RUN(1)}, 2, "", 0, NULL, NULL, NULL, "FailureTarget", false, 0, NULL, NULL},
	{"podReplacementPolicy Failed, nonindexed", "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"completions\":2,\"parallelism\":2,\"podReplacementPolicy\":\"Failed\",\"template\":{\"spec\":{}}}}", {{.index = -1, .phase = JS_JOBCTL_RUNNING, .terminating = true}}, 1, "-1", 0, NULL, NULL, NULL, NULL, false, 0, NULL, NULL},
	{"nonindexed completions counts successes", "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"completions\":3,\"parallelism\":2,\"template\":{\"spec\":{}}}}", {{.index = -1, .phase = JS_JOBCTL_SUCCEEDED}}, 1, "-1,-1", 0, NULL, NULL, NULL, NULL, false, 0, NULL, NULL},
};

static void job_case(const struct jcase *c)
{
	json_error_t err;
	json_t *job = json_loads(c->job, 0, &err);
	if (!job)
		fail_msg("case '%s': bad JSON: %s", c->name, err.text);
	struct js_jobctl_pod pods[8];
	struct js_jobctl_exit exits[8];
	const char *conds[8];
	for (size_t i = 0; i < c->n_pods; i++) {
		const struct pod *p = &c->pods[i];
		exits[i] = (struct js_jobctl_exit){"main", p->exit_code ? p->exit_code : 1};
		conds[i] = p->condition;
		pods[i] = (struct js_jobctl_pod){
			.id = i + 1, .name = "p", .index = p->index, .phase = p->phase, .ready = p->ready,
			.terminating = p->terminating, .deleted_by_controller = p->by_controller, .restarts = p->restarts,
			.finished_ms = p->finished_ms ? p->finished_ms : NOW - 1000,
			.exits = p->phase == JS_JOBCTL_FAILED ? &exits[i] : NULL,
			.n_exits = p->phase == JS_JOBCTL_FAILED ? 1 : 0,
			.conditions = p->condition ? &conds[i] : NULL, .n_conditions = p->condition ? 1 : 0,
		};
	}
	struct js_jobctl_opts opts = {.backoff_base_ms = 100, .backoff_max_ms = 1000};
	struct js_jobctl_plan plan;
	assert_int_equal(js_jobctl_sync(job, pods, c->n_pods, &now, &opts, &plan), 0);

	char got[256] = "";
	size_t off = 0;
	for (size_t i = 0; i < plan.n_create; i++)
		off += (size_t)snprintf(got + off, sizeof(got) - off, "%s%d", i ? "," : "", plan.create[i]);
	if (strcmp(got, c->creates) != 0)
		fail_msg("case '%s': creates: expected '%s', got '%s'", c->name, c->creates, got);
	if (plan.n_delete != c->n_delete)
		fail_msg("case '%s': deletes: expected %zu, got %zu", c->name, c->n_delete, plan.n_delete);
	if (plan.finished != c->finished)
		fail_msg("case '%s': finished: expected %d, got %d", c->name, c->finished, plan.finished);
	if (c->wake_ms && plan.wake_ms != c->wake_ms)
		fail_msg("case '%s': wake: expected %lld, got %lld", c->name, (long long)c->wake_ms,
			 (long long)plan.wake_ms);
	if (c->cond) {
		const json_t *cond = js_jobctl_condition(job, c->cond);
		if (!cond)
			fail_msg("case '%s': condition %s not True: %s", c->name, c->cond,
				 json_dumps(json_object_get(job, "status"), 0));
		if (c->reason && strcmp(js_json_str(cond, "reason"), c->reason) != 0)
			fail_msg("case '%s': reason: expected %s, got %s", c->name, c->reason,
				 js_json_str(cond, "reason"));
		if (c->msg_part && !strstr(js_json_str(cond, "message"), c->msg_part))
			fail_msg("case '%s': message '%s' lacks '%s'", c->name, js_json_str(cond, "message"),
				 c->msg_part);
	}
	if (c->not_cond && js_jobctl_condition(job, c->not_cond))
		fail_msg("case '%s': condition %s unexpectedly True", c->name, c->not_cond);
	const json_t *st = json_object_get(job, "status");
	if (c->completed && strcmp(js_json_str(st, "completedIndexes") ? js_json_str(st, "completedIndexes") : "",
				   c->completed) != 0)
		fail_msg("case '%s': completedIndexes: expected '%s', got '%s'", c->name, c->completed,
			 js_json_str(st, "completedIndexes"));
	if (c->failed_idx && strcmp(js_json_str(st, "failedIndexes") ? js_json_str(st, "failedIndexes") : "",
				    c->failed_idx) != 0)
		fail_msg("case '%s': failedIndexes: expected '%s', got '%s'", c->name, c->failed_idx,
			 js_json_str(st, "failedIndexes"));

	/* Level-based: a second sync over the same input changes nothing. */
	struct js_jobctl_plan again;
	assert_int_equal(js_jobctl_sync(job, pods, c->n_pods, &now, &opts, &again), 0);
	if (again.status_changed)
		fail_msg("case '%s': second sync changed the status", c->name);
	js_jobctl_plan_done(&again);
	js_jobctl_plan_done(&plan);
	json_decref(job);
}

static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		job_case(&cases[i]);
}

static void test_format_indexes(void **state)
{
	(void)state;
	static const struct {
		bool set[8];
		const char *want;
	} rows[] = {
		{{0}, ""},
		{{1, 1, 1, 0, 1, 0, 1, 1}, "0-2,4,6-7"},
		{{0, 1, 0, 0, 0, 0, 0, 0}, "1"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *s = js_jobctl_format_indexes(rows[i].set, 8);
		assert_string_equal(s, rows[i].want);
		free(s);
	}
}

/* Deadlines run on the monotonic clock, timestamps on the wall clock: a
 * wall-clock activeDeadlineSeconds is waited for on the monotonic one, and
 * pod backoff is counted from the pods' (monotonic) finish times. */
static void test_clocks(void **state)
{
	(void)state;
	const struct js_jobctl_now apart = {.mono_ms = 5000, .wall_ms = NOW};
	struct js_jobctl_opts opts = {.backoff_base_ms = 100, .backoff_max_ms = 1000};
	struct js_jobctl_plan plan;
	json_t *job = json_loads("{\"spec\":{\"completionMode\":\"Indexed\",\"completions\":1,\"parallelism\":1,"
				 "\"activeDeadlineSeconds\":100},\"status\":{\"startTime\":\"2023-11-14T22:13:20Z\"}}",
				 0, NULL);
	struct js_jobctl_pod run = {.id = 1, .name = "p", .index = 0, .phase = JS_JOBCTL_RUNNING, .ready = true};
	assert_int_equal(js_jobctl_sync(job, &run, 1, &apart, &opts, &plan), 0);
	assert_true(plan.wake_ms == 5000 + 100000);
	js_jobctl_plan_done(&plan);
	json_decref(job);

	job = json_loads("{\"spec\":{\"completionMode\":\"Indexed\",\"completions\":1,\"parallelism\":1,"
			 "\"backoffLimit\":2}}",
			 0, NULL);
	struct js_jobctl_exit ex = {"main", 1};
	struct js_jobctl_pod failed = {.id = 1, .name = "p", .index = 0, .phase = JS_JOBCTL_FAILED, .finished_ms = 4950,
				       .exits = &ex, .n_exits = 1};
	assert_int_equal(js_jobctl_sync(job, &failed, 1, &apart, &opts, &plan), 0);
	assert_int_equal(plan.n_create, 0);
	assert_true(plan.wake_ms == 4950 + 100);
	const char *start = json_string_value(json_object_get(json_object_get(job, "status"), "startTime"));
	assert_string_equal(start, "2023-11-14T22:13:20Z");
	js_jobctl_plan_done(&plan);
	json_decref(job);
}

static void test_invalid(void **state)
{
	(void)state;
	json_t *job = json_loads("{\"spec\":{\"completionMode\":\"Indexed\",\"parallelism\":2}}", 0, NULL);
	struct js_jobctl_plan plan;
	assert_int_equal(js_jobctl_sync(job, NULL, 0, &now, &(struct js_jobctl_opts){100, 1000}, &plan), -1000);
	json_decref(job);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_format_indexes),
		cmocka_unit_test(test_clocks),
		cmocka_unit_test(test_invalid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
