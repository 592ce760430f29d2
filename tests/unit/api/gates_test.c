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
			      "JobSetActiveDeadlineSeconds, JobSetWorkloadAwareSchedulingAPI, ProgressDeadline, "
			      "NodeQuarantine, TLSOptions, AllAlpha, AllBeta "
			      "(deprecated: WorkloadAwareScheduling))",
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
		{"ProgressDeadline=true", offsetof(struct js_gates, progress_deadline)}, /* ours */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct js_gates g = {0}, want = {0};
		*(bool *)((char *)&want + cases[i].off) = true;
		assert_int_equal(js_gates_parse(cases[i].in, &g, NULL), 0);
		if (memcmp(&g, &want, sizeof(g)) != 0)
			fail_msg("'%s' set another gate", cases[i].in);
		assert_int_equal(js_gates_parse("ExecutionAttemptsTracking=false,JobSetActiveDeadlineSeconds=false,"
						"MutablePodResourcesForSuspendedJobSets=false,ProgressDeadline=false", &g, NULL), 0);
		struct js_gates off = {0};
		assert_memory_equal(&g, &off, sizeof(g));
	}
}

/* AllAlpha/AllBeta as component-base reads them (featuregate's
 * setUnsetAlphaGates/setUnsetBetaGates): every alpha (beta) gate the same
 * list does not name takes the value; a named gate keeps its own wherever
 * it stands; locked GA gates are untouched. Every gate here is alpha. */
static void test_all_alpha(void **state)
{
	(void)state;
	const struct js_gates all = {true, true, true, true, true, true, true, true, true};
	const struct js_gates none = {0};
	const struct js_gates only_rj = {.restart_job = true};
	const struct js_gates all_but_ipr = {true, false, true, true, true, true, true, true, true};
	static const struct js_gates ej = {.elastic_jobset = true};
	const struct {
		const char *in;
		const struct js_gates *start, *want;
	} cases[] = {
		{"AllAlpha=true", &none, &all},
		{"AllAlpha=false", &all, &none},
		{"AllAlpha=true,InPlaceRestart=false", &none, &all_but_ipr},
		{"InPlaceRestart=false,AllAlpha=true", &none, &all_but_ipr}, /* explicit wins in any order */
		{"AllAlpha=false,RestartJob=true", &all, &only_rj},
		{"RestartJob=true, AllAlpha = false", &all, &only_rj},
		{"AllAlpha=true,AllAlpha=false", &all, &none}, /* the last AllAlpha wins */
		{"AllAlpha=true,TLSOptions=true", &none, &all},
		{"AllBeta=true", &ej, &ej}, /* no beta gates: accepted, changes nothing */
		{"AllBeta=false", &ej, &ej},
		{"AllBeta=true,AllAlpha=false", &all, &none},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct js_gates g = *cases[i].start;
		char *err = NULL;
		int r = js_gates_parse(cases[i].in, &g, &err);
		if (r != 0)
			fail_msg("'%s': r=%d (%s)", cases[i].in, r, err ? err : "");
		if (memcmp(&g, cases[i].want, sizeof(g)) != 0)
			fail_msg("'%s': got rj=%d ipr=%d ej=%d ea=%d mpr=%d ad=%d was=%d", cases[i].in, g.restart_job,
				 g.in_place_restart, g.elastic_jobset, g.execution_attempts, g.mutable_pod_resources,
				 g.active_deadline, g.workload_aware_scheduling);
	}
	/* Refused like any other gate: a bare key, a bad value, and the
	 * list stays all or nothing. */
	static const char *bad[] = {"AllAlpha", "AllAlpha=on", "AllAlpha=true,Nope=true", "allalpha=true"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct js_gates g = {0};
		assert_int_equal(js_gates_parse(bad[i], &g, NULL), JS_EINVALID);
		assert_memory_equal(&g, &none, sizeof(g));
	}
}

/* js_gates_set_all takes views with lengths (the file's map keys), reads
 * them as one map, names the offending setting, and accepts NULL out
 * pointers. */
static void test_set_all(void **state)
{
	(void)state;
	struct js_gates g = {0};
	const struct js_gate_setting ok[] = {
		{"ElasticJobSetX", 13, true}, {"RestartJob", 10, false}, {"AllAlpha", 8, true}};
	assert_int_equal(js_gates_set_all(&g, ok, 3, NULL, NULL), 0);
	assert_true(g.elastic_jobset && !g.restart_job && g.in_place_restart && g.workload_aware_scheduling);
	struct js_gates before = g;
	const struct js_gate_setting bad[] = {
		{"RestartJob", 10, true}, {"ElasticJobSet", 12, true}, {"AllAlpha", 8, false}};
	size_t at = 99;
	char *err = NULL;
	assert_int_equal(js_gates_set_all(&g, bad, 3, &at, &err), JS_EINVALID);
	assert_int_equal(at, 1);
	assert_non_null(strstr(err, "unknown feature gate 'ElasticJobSe'"));
	free(err);
	assert_memory_equal(&g, &before, sizeof(g));
	const struct js_gate_setting locked[] = {{"TLSOptions", 10, false}};
	assert_int_equal(js_gates_set_all(&g, locked, 1, NULL, NULL), JS_EINVALID);
	assert_int_equal(js_gates_set_all(&g, NULL, 0, NULL, NULL), 0);
	assert_memory_equal(&g, &before, sizeof(g));
}

/* KEP-969's gate is JobSetWorkloadAwareSchedulingAPI; our first name,
 * WorkloadAwareScheduling, is its deprecated alias for one release: the
 * same gate (so AllAlpha and "last one wins" see one gate), with a warning
 * that names the new name. */
static void test_kep969_gate_alias(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		bool start, want;
		bool warned;
	} cases[] = {
		{"JobSetWorkloadAwareSchedulingAPI=true", false, true, false},
		{"WorkloadAwareScheduling=true", false, true, true},
		{"WorkloadAwareScheduling=false", true, false, true},
		{"WorkloadAwareScheduling=true,JobSetWorkloadAwareSchedulingAPI=false", false, false, true},
		{"JobSetWorkloadAwareSchedulingAPI=false, WorkloadAwareScheduling = true", false, true, true},
		{"WorkloadAwareScheduling=true,AllAlpha=false", false, true, true},
		{"AllAlpha=true,WorkloadAwareScheduling=false", false, false, true},
		{"AllAlpha=true", false, true, false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct js_gates g = {.workload_aware_scheduling = cases[i].start};
		char *err = NULL;
		int r = js_gates_parse(cases[i].in, &g, &err);
		if (r != 0 || g.workload_aware_scheduling != cases[i].want)
			fail_msg("'%s': r=%d (%s) gate=%d, want %d", cases[i].in, r, err ? err : "",
				 g.workload_aware_scheduling, cases[i].want);
		const char *w = js_gates_list_deprecated(cases[i].in);
		if (cases[i].warned ? !w || !strstr(w, "use 'JobSetWorkloadAwareSchedulingAPI'") : w != NULL)
			fail_msg("'%s': warning %s", cases[i].in, w ? w : "(none)");
	}
	/* The file's map: the alias sets the gate too. */
	struct js_gates g = {0};
	const struct js_gate_setting set[] = {{"WorkloadAwareScheduling", 23, true}};
	assert_int_equal(js_gates_set_all(&g, set, 1, NULL, NULL), 0);
	assert_true(g.workload_aware_scheduling);
	assert_non_null(js_gates_deprecated("WorkloadAwareScheduling", 23));
	assert_null(js_gates_deprecated("JobSetWorkloadAwareSchedulingAPI", 32));
	assert_null(js_gates_deprecated("WorkloadAwareSchedulingX", 24));
	assert_null(js_gates_list_deprecated(NULL));
	/* An unknown name near the alias is still unknown. */
	assert_int_equal(js_gates_parse("WorkloadAwareSchedulingAPI=true", &g, NULL), JS_EINVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_set_all),
		cmocka_unit_test(test_all_alpha),
		cmocka_unit_test(test_kep_gates),
		cmocka_unit_test(test_kep969_gate_alias),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
