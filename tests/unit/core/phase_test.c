/*
 * phase_test.c - phase and goodput accounting (core/phase.h): which phase a
 * JobSet's status names, and the totals a timeline of observations gives,
 * table-driven.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/phase.h"
#include "support/testutil.h"

/* A JobSet of one ReplicatedJob of 2 replicas, `extra` YAML appended
 * under the top level (status, spec.suspend through a patch). */
static struct js_jobset *jobset(const char *patch)
{
	json_t *doc = tu_yaml("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\n"
			      "metadata: {name: t, uid: u, creationTimestamp: '2026-01-01T00:00:00Z'}\n"
			      "spec:\n  replicatedJobs:\n  - name: w\n    replicas: 2\n    template:\n      spec:\n"
			      "        template:\n          spec:\n            containers: [{name: c, image: i}]\n");
	if (patch)
		tu_merge_patch(doc, patch);
	struct js_jobset *js = tu_decode(doc);
	json_decref(doc);
	return js;
}

#define T0 1767225600000LL /* 2026-01-01T00:00:00Z in Unix ms */

static void test_observe(void **state)
{
	static const struct {
		const char *name;
		const char *patch;
		enum js_phase phase;
		int64_t since_s;            /* seconds after T0, or -1 for unknown */
		enum js_phase_trigger wait;
		int64_t wait_since_s;
	} cases[] = {
		{"new: pending since creation, waiting from creation", NULL, JS_PHASE_PENDING, 0,
		 JS_PHASE_TRIGGER_CREATION, 0},
		{"all Jobs ready: running, since unknown",
		 "{\"status\":{\"replicatedJobsStatus\":[{\"name\":\"w\",\"ready\":2}]}}", JS_PHASE_RUNNING, -1,
		 JS_PHASE_TRIGGER_NONE, -1},
		{"ready plus succeeded counts as all ready",
		 "{\"status\":{\"replicatedJobsStatus\":[{\"name\":\"w\",\"ready\":1,\"succeeded\":1}]}}",
		 JS_PHASE_RUNNING, -1, JS_PHASE_TRIGGER_NONE, -1},
		{"running after a restart: since JobsReady",
		 "{\"status\":{\"restarts\":1,\"replicatedJobsStatus\":[{\"name\":\"w\",\"ready\":2}],"
		 "\"conditions\":[{\"type\":\"RestartingJobSet\",\"status\":\"False\",\"reason\":\"JobsReady\","
		 "\"lastTransitionTime\":\"2026-01-01T00:01:40Z\"}]}}",
		 JS_PHASE_RUNNING, 100, JS_PHASE_TRIGGER_NONE, -1},
		{"restarting: since the condition, waiting from it",
		 "{\"status\":{\"restarts\":1,\"replicatedJobsStatus\":[{\"name\":\"w\",\"ready\":2}],"
		 "\"conditions\":[{\"type\":\"RestartingJobSet\",\"status\":\"True\","
		 "\"lastTransitionTime\":\"2026-01-01T00:00:30Z\"}]}}",
		 JS_PHASE_RESTARTING, 30, JS_PHASE_TRIGGER_RESTART, 30},
		{"suspended since creation", "{\"spec\":{\"suspend\":true}}", JS_PHASE_SUSPENDED, 0,
		 JS_PHASE_TRIGGER_NONE, -1},
		{"suspended: since the condition",
		 "{\"spec\":{\"suspend\":true},\"status\":{\"conditions\":[{\"type\":\"Suspended\",\"status\":\"True\","
		 "\"lastTransitionTime\":\"2026-01-01T00:00:10Z\"}]}}",
		 JS_PHASE_SUSPENDED, 10, JS_PHASE_TRIGGER_NONE, -1},
		{"resumed, not ready: pending, waiting from the resume",
		 "{\"status\":{\"conditions\":[{\"type\":\"Suspended\",\"status\":\"False\","
		 "\"lastTransitionTime\":\"2026-01-01T00:00:20Z\"}]}}",
		 JS_PHASE_PENDING, 20, JS_PHASE_TRIGGER_RESUME, 20},
		{"not ready after a restart without RestartingJobSet: pending, no wait",
		 "{\"status\":{\"restarts\":1,\"replicatedJobsStatus\":[{\"name\":\"w\",\"ready\":1}]}}",
		 JS_PHASE_PENDING, -1, JS_PHASE_TRIGGER_NONE, -1},
		{"completed wins over everything",
		 "{\"spec\":{\"suspend\":true},\"status\":{\"conditions\":[{\"type\":\"Completed\",\"status\":\"True\","
		 "\"lastTransitionTime\":\"2026-01-01T00:05:00Z\"}]}}",
		 JS_PHASE_FINISHED, 300, JS_PHASE_TRIGGER_NONE, -1},
		{"failed",
		 "{\"status\":{\"conditions\":[{\"type\":\"Failed\",\"status\":\"True\","
		 "\"lastTransitionTime\":\"2026-01-01T00:05:01Z\"}]}}",
		 JS_PHASE_FINISHED, 301, JS_PHASE_TRIGGER_NONE, -1},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct js_jobset *js = jobset(cases[i].patch);
		struct js_phase_obs o;
		js_phase_observe(js, &o);
		if (o.phase != cases[i].phase || o.wait != cases[i].wait)
			fail_msg("%s: phase %s wait %s", cases[i].name, js_phase_name(o.phase),
				 js_phase_trigger_name(o.wait));
		int64_t since = cases[i].since_s < 0 ? -1 : T0 + cases[i].since_s * 1000;
		int64_t wsince = cases[i].wait_since_s < 0 ? -1 : T0 + cases[i].wait_since_s * 1000;
		if (o.since_ms != since || o.wait_since_ms != wsince)
			fail_msg("%s: since %lld wait since %lld", cases[i].name, (long long)o.since_ms,
				 (long long)o.wait_since_ms);
		js_jobset_free(js);
	}
	struct js_phase_obs o;
	js_phase_observe(NULL, &o);
	assert_int_equal(o.phase, JS_PHASE_PENDING);
	assert_false(js_phase_all_ready(NULL));
}

/* Phases by letter: P pending, R running, X restarting, S suspended, F finished. */
static enum js_phase phase_of(char c)
{
	switch (c) {
	case 'P': return JS_PHASE_PENDING;
	case 'R': return JS_PHASE_RUNNING;
	case 'X': return JS_PHASE_RESTARTING;
	case 'S': return JS_PHASE_SUSPENDED;
	case 'F': return JS_PHASE_FINISHED;
	default: return JS_PHASE__INVALID;
	}
}

static void test_timeline(void **state)
{
	/* A timeline "P0 R10 X30 R45 F100": phase letter and the second it is
	 * observed; the first is the initial observation (since = its time,
	 * wait from it when `init_wait` says). Expected totals at `at` s. */
	static const struct {
		const char *name;
		const char *timeline;
		enum js_phase_trigger init_wait;
		int64_t at;
		double pending, running, restarting, suspended;
		double wall, goodput;
		const char *readies; /* "trigger=seconds" for each ended wait */
		int restarts;
	} cases[] = {
		{"one restart, then complete", "P0 R10 X30 R45 F100", JS_PHASE_TRIGGER_CREATION, 200, 10, 75, 15, 0, 100,
		 0.75, "creation=10 restart=15", 1},
		{"still running: the open interval counts", "P0 R10", JS_PHASE_TRIGGER_CREATION, 60, 10, 50, 0, 0, 60,
		 50.0 / 60, "creation=10", 0},
		{"queued first: wall starts at the resume", "S0 P40 R50 F150", JS_PHASE_TRIGGER_NONE, 150, 10, 100, 0,
		 40, 110, 100.0 / 110, "resume=10", 0},
		{"suspended mid-run: wall includes it, the wait is dropped", "P0 R10 S20 R50 F60",
		 JS_PHASE_TRIGGER_CREATION, 60, 10, 20, 0, 30, 60, 20.0 / 60, "creation=10", 0},
		{"suspended while restarting: no restart wait ends", "P0 R10 X20 S30 P40 R45", JS_PHASE_TRIGGER_CREATION,
		 45, 15, 10, 10, 10, 45, 10.0 / 45, "creation=10 resume=5", 1},
		{"two restarts back to back", "R0 X10 X10 P12 X15 R25", JS_PHASE_TRIGGER_NONE, 25, 3, 10, 12, 0, 25,
		 0.4, "restart=10", 2},
		{"degraded without a restart: no wait", "R0 P10 R20", JS_PHASE_TRIGGER_NONE, 20, 10, 10, 0, 0, 20, 0.5,
		 "", 0},
		{"a clock step back counts as no time", "P10 R5", JS_PHASE_TRIGGER_CREATION, 10, 0, 0, 0, 0, 0, 0,
		 "creation=0", 0},
		{"never started: no wall, no goodput", "S0", JS_PHASE_TRIGGER_NONE, 30, 0, 0, 0, 30, 0, 0, "", 0},
		{"finished on first sight", "F0", JS_PHASE_TRIGGER_NONE, 30, 0, 0, 0, 0, 0, 0, "", 0},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct js_phase_acct a;
		char got[256] = "";
		const char *p = cases[i].timeline;
		bool first = true;
		while (*p) {
			char ph = *p++;
			char *end;
			long long s = strtoll(p, &end, 10);
			p = *end ? end + 1 : end;
			int64_t t = T0 + s * 1000;
			if (first) {
				struct js_phase_obs o = {phase_of(ph), t, cases[i].init_wait,
							 cases[i].init_wait == JS_PHASE_TRIGGER_NONE ? -1 : t};
				js_phase_acct_init(&a, &o, t);
				first = false;
				continue;
			}
			struct js_phase_ready r;
			if (js_phase_acct_step(&a, phase_of(ph), t, &r)) {
				size_t len = strlen(got);
				snprintf(got + len, sizeof(got) - len, "%s%s=%g", len ? " " : "",
					 js_phase_trigger_name(r.trigger), r.seconds);
			}
		}
		struct js_phase_summary sum;
		js_phase_acct_summary(&a, T0 + cases[i].at * 1000, &sum);
		const double want[] = {cases[i].pending, cases[i].running, cases[i].restarting, cases[i].suspended};
		for (int ph = 0; ph < 4; ph++) {
			if (fabs(sum.seconds[ph] - want[ph]) > 1e-9)
				fail_msg("%s: %s %g, want %g", cases[i].name, js_phase_name(ph), sum.seconds[ph], want[ph]);
		}
		if (fabs(sum.wall_seconds - cases[i].wall) > 1e-9 || fabs(sum.goodput - cases[i].goodput) > 1e-9)
			fail_msg("%s: wall %g goodput %g", cases[i].name, sum.wall_seconds, sum.goodput);
		if (strcmp(got, cases[i].readies) != 0)
			fail_msg("%s: readies '%s', want '%s'", cases[i].name, got, cases[i].readies);
		if (sum.restarts != cases[i].restarts)
			fail_msg("%s: restarts %d", cases[i].name, sum.restarts);
	}
}

static void test_init_clamps(void **state)
{
	(void)state;
	/* An observation from the future (clock skew with the API server)
	 * starts now; a wait that began before its phase keeps its start. */
	struct js_phase_acct a;
	struct js_phase_obs o = {JS_PHASE_RESTARTING, T0 + 5000, JS_PHASE_TRIGGER_RESTART, T0 + 1000};
	js_phase_acct_init(&a, &o, T0);
	assert_int_equal(a.since_ms, T0);
	assert_int_equal(a.wait_since_ms, T0);
	o = (struct js_phase_obs){JS_PHASE_PENDING, T0 + 2000, JS_PHASE_TRIGGER_CREATION, T0};
	js_phase_acct_init(&a, &o, T0 + 3000);
	assert_int_equal(a.since_ms, T0 + 2000);
	assert_int_equal(a.wait_since_ms, T0);
	assert_int_equal(a.first_start_ms, T0);
	struct js_phase_ready r;
	assert_true(js_phase_acct_step(&a, JS_PHASE_RUNNING, T0 + 4000, &r));
	assert_int_equal(r.trigger, JS_PHASE_TRIGGER_CREATION);
	assert_true(fabs(r.seconds - 4.0) < 1e-9);
	/* Unknown phases are ignored. */
	assert_false(js_phase_acct_step(&a, JS_PHASE__INVALID, T0 + 5000, &r));
	assert_false(js_phase_acct_step(&a, JS_PHASE__COUNT, T0 + 5000, &r));
	assert_string_equal(js_phase_name(JS_PHASE__COUNT), "");
	assert_string_equal(js_phase_trigger_name(JS_PHASE_TRIGGER_NONE), "");
	/* First seen finished (a controller started after the end): no start
	 * is known, so there is no goodput to tell (not a run of goodput 0). */
	o = (struct js_phase_obs){JS_PHASE_FINISHED, T0, JS_PHASE_TRIGGER_NONE, -1};
	js_phase_acct_init(&a, &o, T0 + 1000);
	assert_int_equal(a.first_start_ms, -1);
	assert_int_equal(a.end_ms, T0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_observe),
		cmocka_unit_test(test_timeline),
		cmocka_unit_test(test_init_clamps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
