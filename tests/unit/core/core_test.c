/*
 * core_test.c - table-driven unit tests of the core pieces the scenarios
 * do not reach (times, Job decoding, in-place bookkeeping, script errors)
 * and property checks over generated scenarios.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/time.h"
#include "core/job.h"
#include "core/reconcile.h"
#include "core/sim.h"
#include "support/testutil.h"

static const char *fix_a(void)
{
	static char *text;
	if (!text)
		text = tu_read_file(tu_src_path("tests/cases/core/fix-a.yaml"), NULL);
	return text;
}

static struct js_jobset *load(const char *patch)
{
	json_t *doc = tu_yaml(fix_a());
	tu_merge_patch(doc, patch);
	struct js_jobset *js = tu_decode(doc);
	json_decref(doc);
	return js;
}

static void test_times(void **state)
{
	static const struct {
		const char *in;
		int ok;
		long long want;
	} cases[] = {
		{"1970-01-01T00:00:00Z", 1, 0},
		{"2023-11-14T22:13:20Z", 1, 1700000000},
		{"2023-11-14T22:13:20.123456Z", 1, 1700000000},
		{"2023-11-15T00:13:20+02:00", 1, 1700000000},
		{"2023-11-14t22:13:20z", 1, 1700000000},
		{"0001-01-01T00:00:00Z", 1, -62135596800LL},
		{"1969-12-31T23:59:59Z", 1, -1},
		{"2023-13-01T00:00:00Z", 0, 0},
		{"2023-11-14 22:13:20", 0, 0},
		{"2023-11-14T22:13:20.Z", 0, 0},
		{"2023-11-14T22:13:20+0200", 0, 0},
		{"2023-11-14T22:13:20Zjunk", 0, 0},
		{"2023-11-14X22:13:20Z", 0, 0},
		{"20231114", 0, 0},
		{NULL, 0, 0},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t t = 0;
		int r = js_time_parse_rfc3339(cases[i].in, &t);
		if ((r == 0) != cases[i].ok || (r == 0 && t != cases[i].want))
			fail_msg("case %zu (%s): r=%d t=%lld", i, cases[i].in ? cases[i].in : "NULL", r, (long long)t);
		if (r == 0 && cases[i].want >= 0) {
			char out[21];
			js_time_format_rfc3339(t, out);
			int64_t back;
			assert_int_equal(js_time_parse_rfc3339(out, &back), 0);
			assert_true(back == t);
		}
	}
	char out[21];
	js_time_format_rfc3339(-62135596800LL - 86400LL * 400, out);
	assert_string_equal(out, "0000-01-01T00:00:00Z");
	js_time_format_rfc3339(253402300800LL, out);
	assert_string_equal(out, "9999-12-31T23:59:59Z");
}

static void test_job_decode(void **state)
{
	(void)state;
	json_t *j = tu_yaml("metadata:\n  name: j\n  uid: u\n  deletionTimestamp: '2023-01-01T00:00:00Z'\n"
			    "  labels: {a: b, jobset.sigs.k8s.io/replicatedjob-name: w, jobset.sigs.k8s.io/job-index: '0',\n"
			    "           jobset.sigs.k8s.io/restart-attempt: '1', jobset.sigs.k8s.io/job-restart-attempt: '2'}\n"
			    "  annotations: {c: d}\n"
			    "  ownerReferences:\n"
			    "  - {apiVersion: v1, kind: Other, uid: x, controller: true}\n"
			    "  - {apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, uid: y, controller: false}\n"
			    "  - {apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, uid: z, controller: true}\n"
			    "spec: {suspend: true, parallelism: 3, completions: 99999999999,\n"
			    "       template: {spec: {tolerations: [{key: k}], containers: [{name: c}]}}}\n"
			    "status:\n  active: 1\n  ready: 1\n  terminating: 2\n  startTime: '2023-01-01T00:00:00Z'\n"
			    "  conditions:\n  - {type: Failed, status: 'True', reason: R, message: M, lastTransitionTime: bad}\n"
			    "  - {type: Complete}\n  - {type: Suspended, status: 'True'}\n  - {type: Complete, status: 'False'}\n");
	struct js_obsjob *o = js_job_from_json(j, NULL);
	assert_non_null(o);
	assert_string_equal(o->name, "j");
	assert_string_equal(o->uid, "u");
	assert_string_equal(o->owner_uid, "z");
	assert_string_equal(o->rjob_name, "w");
	assert_string_equal(o->job_index, "0");
	assert_string_equal(o->restart_attempt, "1");
	assert_string_equal(o->job_restart_attempt, "2");
	assert_true(o->deleting && o->has_suspend && o->suspend && o->has_parallelism && !o->has_completions);
	assert_true(o->has_ready && o->has_terminating && o->has_start_time);
	assert_int_equal(o->n_conditions, 1); /* only True Complete/Failed/FailureTarget are kept */
	assert_false(o->conditions[0].has_last_transition_time);
	assert_string_equal(o->conditions[0].reason, "R");
	assert_non_null(o->tolerations);
	assert_null(o->scheduling_gates);
	assert_non_null(js_job_condition_true(o, "Failed"));
	assert_null(js_job_condition_true(o, "Complete"));

	/* A record built from its own fields is the same record. */
	struct js_obsjob *b = js_job_build(&(struct js_obsjob_init){.job = *o});
	assert_true(b != o && b->name != o->name && js_job_same(o, b));
	assert_true(js_job_same(o, o) && js_job_same(NULL, NULL) && !js_job_same(o, NULL) && !js_job_same(NULL, o));
	assert_true(js_job_ref(b) == b);
	js_job_unref(b);
	js_job_unref(b);
	js_job_unref(NULL);
	assert_null(js_job_build(&(struct js_obsjob_init){0}));
	int err = 0;
	json_t *bad = tu_yaml("metadata: {}\n");
	assert_null(js_job_from_json(bad, &err));
	assert_int_equal(err, JS_EINVALID);
	assert_null(js_job_from_json(bad, NULL));
	json_decref(bad);

	/* js_job_same: each field the core reads makes a difference. */
	static const struct js_jobcond cond2 = {.type = "Failed", .status = "True", .reason = "R2"};
	json_t *tol = json_pack("[{s:s}]", "key", "other");
	for (int f = 0; f < 16; f++) {
		struct js_obsjob_init in = {.job = *o};
		struct js_obsjob *x = &in.job;
		switch (f) {
		case 0: x->name = "k"; break;
		case 1: x->uid = NULL; break;
		case 2: x->owner_uid = "q"; break;
		case 3: x->rjob_name = "v"; break;
		case 4: x->job_index = "1"; break;
		case 5: x->restart_attempt = "9"; break;
		case 6: x->job_restart_attempt = NULL; break;
		case 7: x->deleting = false; break;
		case 8: x->suspend = false; break;
		case 9: x->has_parallelism = false; break;
		case 10: x->active = 7; break;
		case 11: x->ready = 0; break;
		case 12: x->start_time++; break;
		case 13: x->conditions = &cond2; break;
		case 14: x->n_conditions = 0; break;
		default: x->tolerations = tol; break;
		}
		struct js_obsjob *y = js_job_build(&in);
		if (js_job_same(o, y))
			fail_msg("field %d: records compare the same", f);
		js_job_unref(y);
	}
	json_decref(tol);
	js_job_unref(o);
	json_decref(j);
	assert_string_equal(js_reconcile_action_kind_name(JS_ACTION__COUNT), "?");
	assert_string_equal(js_reconcile_propagation_name(JS_PROPAGATION_BACKGROUND), "Background");
	assert_string_equal(js_reconcile_propagation_name(JS_PROPAGATION_FOREGROUND), "Foreground");
}

/* §11.16 in-place bookkeeping over observed pods. */
static void test_in_place(void **state)
{
	static const struct {
		const char *name;
		struct js_obspod pods[3];
		size_t n;
		const char *status; /* merge patch on the stored status */
		int want_err;
		const char *want_failed; /* reason or NULL */
		int cur, prev;          /* -1: absent */
	} cases[] = {
		{"no pods", {{0}}, 0, NULL, 0, NULL, -1, -1},
		{"all at 2", {{"p0", false, 0, "2"}, {"p1", false, 0, "2"}}, 2, "{\"restarts\":2}", 0, NULL, 2, -1},
		{"one ahead", {{"p0", false, 0, "3"}, {"p1", false, 0, "2"}}, 2, "{\"restarts\":2}", 0, NULL, -1, 2},
		{"not newer", {{"p0", false, 0, "3"}, {"p1", false, 0, "2"}}, 2,
		 "{\"previousInPlaceRestartAttempt\":5,\"restarts\":2}", 0, NULL, -1, 5},
		{"zero", {{"p0", false, 0, "0"}}, 1, NULL, 0, NULL, -1, -1},
		{"failed pod ignored", {{"p0", true, 0, "x"}}, 1, NULL, 0, NULL, -1, -1},
		{"bad annotation", {{"p0", false, 0, "-1"}}, 1, NULL, JS_EINVALID, NULL, -1, -1},
		{"restart count", {{"p0", false, 5, NULL}}, 1, NULL, 0, "ReachedMaxRestarts", -1, -1},
		{"attempts", {{"p0", false, 0, "9"}}, 1, NULL, 0, "ReachedMaxRestarts", -1, -1},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char patch[512];
		snprintf(patch, sizeof(patch),
			 "{\"spec\":{\"failurePolicy\":{\"maxRestarts\":3,\"restartStrategy\":\"InPlaceRestart\"},"
			 "\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":1,\"template\":{\"spec\":{\"parallelism\":2,"
			 "\"completions\":2,\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}}}}]},"
			 "\"status\":%s}",
			 cases[i].status ? cases[i].status : "{}");
		struct js_jobset *js = load(patch);
		struct js_reconcile_input in = {.jobset = js, .pods = cases[i].pods, .n_pods = cases[i].n,
						 .gates = {.in_place_restart = true}, .now = 1700000000};
		struct js_plan *p = NULL;
		char *err = NULL;
		int r = js_reconcile_run(&in, &p, &err);
		if (r != cases[i].want_err)
			fail_msg("%s: r=%d (%s)", cases[i].name, r, err ? err : "");
		if (r == 0) {
			const struct js_condition *f = NULL;
			for (size_t k = 0; k < p->status->n_conditions; k++)
				if (strcmp(p->status->conditions[k].type, "Failed") == 0)
					f = &p->status->conditions[k];
			if (cases[i].want_failed)
				assert_true(f && strcmp(f->reason, cases[i].want_failed) == 0);
			else
				assert_null(f);
			assert_int_equal(p->status->has_current_in_place_restart_attempt ? p->status->current_in_place_restart_attempt : -1, cases[i].cur);
			assert_int_equal(p->status->has_previous_in_place_restart_attempt ? p->status->previous_in_place_restart_attempt : -1, cases[i].prev);
		}
		free(err);
		js_reconcile_plan_free(p);
		js_jobset_free(js);
	}
	/* completions != parallelism is an error */
	struct js_jobset *js = load("{\"spec\":{\"failurePolicy\":{\"restartStrategy\":\"InPlaceRestart\"}}}");
	struct js_reconcile_input in = {.jobset = js, .gates = {.in_place_restart = true}};
	struct js_plan *p = NULL;
	char *err = NULL;
	assert_int_equal(js_reconcile_run(&in, &p, &err), JS_EINVALID);
	assert_non_null(strstr(err, "in-place restart requires"));
	free(err);
	assert_int_equal(js_reconcile_run(&in, &p, NULL), JS_EINVALID);
	js_jobset_free(js);
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
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_job_decode),
		cmocka_unit_test(test_in_place),
		cmocka_unit_test(test_script_errors),
		cmocka_unit_test(test_properties),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
