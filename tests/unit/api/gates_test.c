/*
 * gates_test.c - feature gates by name (api/gates.h), as a table: the
 * --feature-gates syntax of Kubernetes components (SPEC §12.3), all or
 * nothing on error, and a message naming the bad item.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/gates.h"

static void test_parse(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		const char *msg; /* NULL = accepted */
		bool rj, ipr, ej; /* after parsing into {rj=0, ipr=0, ej=1} */
	} cases[] = {
		{"RestartJob=true", NULL, true, false, true},
		{"RestartJob=true,ElasticJobSet=false", NULL, true, false, false},
		{"InPlaceRestart=true, RestartJob=false", NULL, false, true, true},
		{" RestartJob = 1 ,,", NULL, true, false, true},
		{"RestartJob=T,RestartJob=f", NULL, false, false, true}, /* the last one wins */
		{"TLSOptions=true", NULL, false, false, true},
		{"", NULL, false, false, true},
		{NULL, NULL, false, false, true},
		{"TLSOptions=false", "cannot set feature gate 'TLSOptions' to false: it is locked to true", false, false, false},
		{"Nope=true", "unknown feature gate 'Nope' (known: RestartJob, InPlaceRestart, ElasticJobSet, "
			      "ExecutionAttemptsTracking, MutablePodResourcesForSuspendedJobSets, "
			      "JobSetActiveDeadlineSeconds, TLSOptions)",
		 false, false, false},
		{"restartjob=true", "unknown feature gate 'restartjob'", false, false, false},
		{"RestartJob", "invalid feature gate 'RestartJob': expected Name=true|false", false, false, false},
		{"RestartJob=maybe", "invalid feature gate 'RestartJob=maybe'", false, false, false},
		{"RestartJob=yes", "invalid feature gate 'RestartJob=yes'", false, false, false},
		{"=true", "unknown feature gate ''", false, false, false},
		/* All or nothing: the good item before the bad one is not applied. */
		{"RestartJob=true,Nope=true", "'Nope'", false, false, false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct js_gates g = {.elastic_jobset = true};
		char *err = NULL;
		int r = js_gates_parse(cases[i].in, &g, &err);
		const char *in = cases[i].in ? cases[i].in : "(null)";
		if (cases[i].msg) {
			if (r != JS_EINVALID || !err || !strstr(err, cases[i].msg))
				fail_msg("'%s': r=%d err=%s, want '%s'", in, r, err ? err : "(null)", cases[i].msg);
			if (g.restart_job || g.in_place_restart || !g.elastic_jobset)
				fail_msg("'%s': gates changed on error", in);
		} else {
			if (r != 0)
				fail_msg("'%s': r=%d (%s)", in, r, err ? err : "");
			if (g.restart_job != cases[i].rj || g.in_place_restart != cases[i].ipr ||
			    g.elastic_jobset != cases[i].ej)
				fail_msg("'%s': got rj=%d ipr=%d ej=%d", in, g.restart_job, g.in_place_restart,
					 g.elastic_jobset);
		}
		free(err);
	}
}

/* The gates of the merged upstream KEPs, by their KEP names (KEP-1282 "5.
 * Feature Gate Disabled Behavior", KEP-1150 "Feature Gate", KEP-1186
 * kep.yaml): each sets its own field only, and all are off by default. */
static void test_kep_gates(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		size_t off;
	} cases[] = {
		{"ExecutionAttemptsTracking=true", offsetof(struct js_gates, execution_attempts)},
		{"MutablePodResourcesForSuspendedJobSets=true", offsetof(struct js_gates, mutable_pod_resources)},
		{"JobSetActiveDeadlineSeconds=true", offsetof(struct js_gates, active_deadline)},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct js_gates g = {0}, want = {0};
		*(bool *)((char *)&want + cases[i].off) = true;
		assert_int_equal(js_gates_parse(cases[i].in, &g, NULL), 0);
		if (memcmp(&g, &want, sizeof(g)) != 0)
			fail_msg("'%s' set another gate", cases[i].in);
		assert_int_equal(js_gates_parse("ExecutionAttemptsTracking=false,JobSetActiveDeadlineSeconds=false,"
						"MutablePodResourcesForSuspendedJobSets=false", &g, NULL), 0);
		struct js_gates off = {0};
		assert_memory_equal(&g, &off, sizeof(g));
	}
}

/* js_gates_set takes a length (the file's map keys and the list items are
 * both views) and accepts a NULL message pointer. */
static void test_set(void **state)
{
	(void)state;
	struct js_gates g = {0};
	assert_int_equal(js_gates_set(&g, "ElasticJobSetX", 13, true, NULL), 0);
	assert_true(g.elastic_jobset);
	assert_int_equal(js_gates_set(&g, "ElasticJobSet", 12, true, NULL), JS_EINVALID);
	assert_int_equal(js_gates_set(&g, "TLSOptions", 10, false, NULL), JS_EINVALID);
	assert_int_equal(js_gates_parse("Nope=true", &g, NULL), JS_EINVALID);
	assert_true(g.elastic_jobset && !g.restart_job && !g.in_place_restart);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_set),
		cmocka_unit_test(test_kep_gates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
