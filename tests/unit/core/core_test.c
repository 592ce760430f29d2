/*
 * core_test.c - table-driven unit tests of the core pieces the scenarios
 * (tests/unit/sim) do not reach: times, Job records, in-place bookkeeping.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/time.h"
#include "core/job.h"
#include "core/reconcile.h"
#include "base/json.h"
#include "support/testutil.h"

static bool json_same_or_null(const json_t *a, const json_t *b)
{
	return a == b || (a && b && json_equal(a, b));
}

static struct js_jobset *load(const char *patch)
{
	return tu_fixture("tests/cases/core/fix-a.yaml", patch);
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
	assert_int_equal(json_array_size(o->containers), 1); /* KEP-1150: a resume merges into them */
	assert_null(o->init_containers);
	assert_null(o->node_selector);
	/* A running Job's record leaves them out: only a suspended one is
	 * resumed. */
	json_t *running = json_deep_copy(j);
	json_object_set_new(json_object_get(running, "spec"), "suspend", json_false());
	json_object_set_new(js_json_path(running, "spec.template.spec"), "nodeSelector", json_pack("{s:s}", "a", "b"));
	struct js_obsjob *r = js_job_from_json(running, NULL);
	assert_true(r && !r->containers && !r->node_selector && r->tolerations);
	js_job_unref(r);
	/* The jobset labels come from the pod template first (what the pods
	 * carry; tests/chaos "job-label"), else from the Job's own. */
	json_object_set_new(js_json_path_make(json_object_get(running, "spec"), "template.metadata"), "labels",
			    json_pack("{s:s, s:s}", "jobset.sigs.k8s.io/restart-attempt", "4",
				      "jobset.sigs.k8s.io/job-index", "5"));
	r = js_job_from_json(running, NULL);
	assert_non_null(r);
	assert_string_equal(r->restart_attempt, "4");
	assert_string_equal(r->job_index, "5");
	assert_string_equal(r->rjob_name, "w");
	assert_string_equal(r->job_restart_attempt, "2");
	js_job_unref(r);
	json_decref(running);
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
	/* A condition is read only when True; JSON other than arrays is not
	 * kept as tolerations or schedulingGates. */
	static const struct js_jobcond not_done[] = {{.type = "Complete", .status = "False"}};
	json_t *obj = json_object();
	struct js_obsjob *nd = js_job_build(&(struct js_obsjob_init){
		.job = {.name = "n", .n_conditions = 1, .conditions = not_done, .tolerations = obj, .scheduling_gates = obj}});
	assert_null(js_job_condition_true(nd, "Complete"));
	assert_null(js_job_condition_true(nd, "Failed"));
	assert_null(nd->tolerations);
	assert_null(nd->scheduling_gates);
	js_job_unref(nd);
	json_decref(obj);
	int err = 0;
	json_t *bad = tu_yaml("metadata: {}\n");
	assert_null(js_job_from_json(bad, &err));
	assert_int_equal(err, JS_EINVALID);
	assert_null(js_job_from_json(bad, NULL));
	json_decref(bad);

	/* js_job_same: each field the core reads makes a difference, and an
	 * absent optional scalar's value slot does not. */
	static const struct js_jobcond conds2[] = {
		{.type = "Failed", .status = "True", .reason = "R2"},
		{.type = "FailureTarget", .status = "True", .reason = "R", .message = "M"},
		{.type = "Failed", .status = "False", .reason = "R", .message = "M"},
		{.type = "Failed", .status = "True", .reason = "R", .message = "M2"},
		{.type = "Failed", .status = "True", .reason = "R", .message = "M", .has_last_transition_time = true},
		{.type = NULL, .status = "True"},
	};
	json_t *tol = json_pack("[{s:s}]", "key", "other");
	json_t *sel = json_pack("{s:s}", "flavor", "b");
	static const struct {
		const char *what;
		bool same;
	} rows[] = {
		{"name", false}, {"uid", false}, {"owner", false}, {"rjob", false}, {"index", false},
		{"attempt", false}, {"job attempt", false}, {"deleting", false}, {"suspend value", false},
		{"suspend presence", false}, {"parallelism absent", false}, {"parallelism value", false},
		{"completions slot while absent", true}, {"completions present", false}, {"active", false},
		{"succeeded", false}, {"failed", false}, {"ready", false}, {"terminating presence", false},
		{"start time", false}, {"reason", false}, {"type", false}, {"status", false}, {"message", false},
		{"transition time presence", false}, {"no conditions", false}, {"condition without type dropped", false},
		{"tolerations", false}, {"tolerations absent", false}, {"scheduling gates", false},
		{"node selector", false}, {"containers", false}, {"init containers", false}, {"unchanged", true},
	};
	for (size_t f = 0; f < sizeof(rows) / sizeof(rows[0]); f++) {
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
		case 9: x->has_suspend = false; break;
		case 10: x->has_parallelism = false; break;
		case 11: x->parallelism = 4; break;
		case 12: x->completions = 77; break;
		case 13: x->has_completions = true; break;
		case 14: x->active = 7; break;
		case 15: x->succeeded = 1; break;
		case 16: x->failed = 1; break;
		case 17: x->ready = 0; break;
		case 18: x->has_terminating = false; break;
		case 19: x->start_time++; break;
		case 20: x->conditions = &conds2[0]; break;
		case 21: x->conditions = &conds2[1]; break;
		case 22: x->conditions = &conds2[2]; break;
		case 23: x->conditions = &conds2[3]; break;
		case 24: x->conditions = &conds2[4]; break;
		case 25: x->n_conditions = 0; break;
		case 26: x->conditions = &conds2[5]; break;
		case 27: x->tolerations = tol; break;
		case 28: x->tolerations = NULL; break;
		case 29: x->scheduling_gates = tol; break;
		case 30: x->node_selector = sel; break; /* issue 24: a resume reads them */
		case 31: x->containers = tol; break;
		case 32: x->init_containers = tol; break;
		default: break;
		}
		struct js_obsjob *y = js_job_build(&in);
		if (js_job_same(o, y) != rows[f].same || js_job_same(y, o) != rows[f].same)
			fail_msg("%s: js_job_same should be %d", rows[f].what, rows[f].same);
		js_job_unref(y);
	}
	json_decref(tol);
	json_decref(sel);
	js_job_unref(o);
	json_decref(j);
	assert_string_equal(js_reconcile_action_kind_name(JS_ACTION__COUNT), "?");
	assert_string_equal(js_reconcile_propagation_name(JS_PROPAGATION_BACKGROUND), "Background");
	assert_string_equal(js_reconcile_propagation_name(JS_PROPAGATION_FOREGROUND), "Foreground");
}

/* Odd observed states, straight into js_reconcile_run with records from
 * js_job_build: what the scenarios (which observe well-formed Jobs) do not
 * reach. Each row: a patch on FIX-A, up to three Jobs, the gates, and the
 * expected actions ("Kind:name ..."), error substring or event reason. */
#define OWN "uid-test-js"
#define A0 "test-js-replicated-job-a-0"
static const struct js_jobcond failed_cond[] = {{.type = "Failed", .status = "True", .reason = "BackoffLimitExceeded"}};
static const struct js_jobcond done_cond[] = {{.type = "Complete", .status = "True"}};

static void test_reconcile_table(void **state)
{
	static const struct {
		const char *name;
		const char *patch;
		struct js_obsjob jobs[3];
		size_t n_jobs;
		struct js_gates gates;
		const char *const pvcs[2];
		const char *want_actions; /* NULL: not checked */
		const char *want_err;     /* NULL: success expected */
		const char *want_event;   /* NULL: not checked */
		const char *tolerations;  /* JSON of jobs[0].tolerations, or NULL */
		const char *want_patch;   /* JSON of the last action's object, or NULL */
	} rows[] = {
		{"foreign Job of a name we create", NULL, {{.name = A0, .owner_uid = "other"}}, 1, {0}, {0},
		 "CreateService:test-js CreateJob:test-js-replicated-job-b-0 CreateJob:test-js-replicated-job-b-1 "
		 "CreateJob:test-js-replicated-job-b-2",
		 NULL, "JobCreationFailed", NULL, NULL},
		{"ownerless Job of a name we create", NULL, {{.name = A0}}, 1, {0}, {0}, NULL, NULL, "JobCreationFailed", NULL, NULL},
		/* An owned Job whose attempt cannot be read is deleted (in the
		 * Foreground: its name stays held) and made again; upstream
		 * fails every pass (CTRL-118). */
		{"owned Job without restart-attempt label", NULL, {{.name = A0, .owner_uid = OWN}}, 1, {0}, {0},
		 "DeleteJob:" A0 " CreateService:test-js CreateJob:test-js-replicated-job-b-0 CreateJob:test-js-replicated-job-b-1 "
		 "CreateJob:test-js-replicated-job-b-2", NULL, "JobAttemptUnknown", NULL, NULL},
		{"RestartJob gate: owned Job without index label", NULL,
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a"}}, 1,
		 {.restart_job = true}, {0}, "DeleteJob:" A0 " CreateService:test-js CreateJob:test-js-replicated-job-b-0 CreateJob:test-js-replicated-job-b-1 "
		 "CreateJob:test-js-replicated-job-b-2", NULL, "JobAttemptUnknown", NULL, NULL},
		{"RestartJob gate: bad per-Job attempt", NULL,
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .job_index = "0",
		   .job_restart_attempt = "x"}},
		 1, {.restart_job = true}, {0}, "DeleteJob:" A0 " CreateService:test-js CreateJob:test-js-replicated-job-b-0 CreateJob:test-js-replicated-job-b-1 "
		 "CreateJob:test-js-replicated-job-b-2", NULL, "JobAttemptUnknown", NULL, NULL},
		{"RestartJob gate: index past jobRestarts", NULL,
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .job_index = "5"}}, 1,
		 {.restart_job = true}, {0}, "DeleteJob:" A0 " CreateService:test-js CreateJob:test-js-replicated-job-b-0 CreateJob:test-js-replicated-job-b-1 "
		 "CreateJob:test-js-replicated-job-b-2", NULL, "JobAttemptUnknown", NULL, NULL},
		{"RestartJob gate: Job of an rjob not in the spec is kept", NULL,
		 {{.name = "x", .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "gone", .job_index = "0"}}, 1,
		 {.restart_job = true}, {0}, NULL, NULL, NULL, NULL, NULL},
		{"RestartJob: a failed Job of an rjob not in the spec cannot restart",
		 "{\"spec\":{\"failurePolicy\":{\"maxRestarts\":3,\"rules\":[{\"action\":\"RestartJob\"}]}}}",
		 {{.name = "x", .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "gone", .job_index = "0",
		   .n_conditions = 1, .conditions = failed_cond}},
		 1, {.restart_job = true}, {0}, NULL, "cannot restart", NULL, NULL, NULL},
		{"resume (issue 24): tolerations are rebuilt from the template, a stale one goes",
		 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"replicated-job-a\",\"replicas\":1,\"template\":"
		 "{\"spec\":{\"template\":{\"spec\":{\"tolerations\":[{\"key\":\"k\"}],\"containers\":[]}}}}}]}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .has_suspend = true,
		   .suspend = true}},
		 1, {0}, {0}, "CreateService:test-js PatchJob:" A0, NULL, NULL, "[{\"key\":\"k\"},{\"key\":\"j\"}]",
		 "{\"spec\":{\"suspend\":false,\"template\":{\"spec\":{\"tolerations\":[{\"key\":\"k\"}]}}}}"},
		{"resume: the template's tolerations replace the Job's",
		 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"replicated-job-a\",\"replicas\":1,\"template\":"
		 "{\"spec\":{\"template\":{\"spec\":{\"tolerations\":[{\"key\":\"k\"}],\"containers\":[]}}}}}]}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .has_suspend = true,
		   .suspend = true}},
		 1, {0}, {0}, "CreateService:test-js PatchJob:" A0, NULL, NULL, "[{\"key\":\"j\"}]",
		 "{\"spec\":{\"suspend\":false,\"template\":{\"spec\":{\"tolerations\":[{\"key\":\"k\"}]}}}}"},
		{"resume: tolerations that are the template's already are not sent",
		 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"replicated-job-a\",\"replicas\":1,\"template\":"
		 "{\"spec\":{\"template\":{\"spec\":{\"tolerations\":[{\"key\":\"k\"}],\"containers\":[]}}}}}]}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .has_suspend = true,
		   .suspend = true}},
		 1, {0}, {0}, "CreateService:test-js PatchJob:" A0, NULL, NULL, "[{\"key\":\"k\"}]",
		 "{\"spec\":{\"suspend\":false}}"},
		{"resume: exclusive placement's toleration stays after the template's",
		 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"replicated-job-a\",\"replicas\":1,\"template\":"
		 "{\"spec\":{\"template\":{\"spec\":{\"tolerations\":[{\"key\":\"k\"}],\"containers\":[]}}}}}]}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .has_suspend = true,
		   .suspend = true}},
		 1, {0}, {0}, "CreateService:test-js PatchJob:" A0, NULL, NULL, "[{\"key\":\"alpha.jobset.sigs.k8s.io/no-schedule\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"},{\"key\":\"j\"}]",
		 "{\"spec\":{\"suspend\":false,\"template\":{\"spec\":{\"tolerations\":[{\"key\":\"k\"},{\"key\":\"alpha.jobset.sigs.k8s.io/no-schedule\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]}}}}"},
		{"resume: a template without tolerations clears the Job's",
		 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"replicated-job-a\",\"replicas\":1,\"template\":"
		 "{\"spec\":{\"template\":{\"spec\":{\"containers\":[]}}}}}]}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .has_suspend = true,
		   .suspend = true}},
		 1, {0}, {0}, "CreateService:test-js PatchJob:" A0, NULL, NULL, "[{\"key\":\"j\"}]",
		 "{\"spec\":{\"suspend\":false,\"template\":{\"spec\":{\"tolerations\":null}}}}"},
		{"Job counts: completions below parallelism, suspended, active", NULL,
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .has_parallelism = true,
		   .parallelism = 4, .has_completions = true, .completions = 2, .succeeded = 1, .has_ready = true, .ready = 1,
		   .active = 1, .has_suspend = true, .suspend = false}},
		 1, {0}, {0}, NULL, NULL, NULL, NULL, NULL},
		{"a Job already deleting is not deleted again",
		 "{\"status\":{\"restarts\":1}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .deleting = true},
		  {.name = "test-js-replicated-job-b-0", .owner_uid = OWN, .restart_attempt = "0",
		   .rjob_name = "replicated-job-b"}},
		 2, {0}, {0},
		 "DeleteJob:test-js-replicated-job-b-0 CreateService:test-js CreateJob:test-js-replicated-job-b-1 "
		 "CreateJob:test-js-replicated-job-b-2",
		 NULL, NULL, NULL, NULL},
		{"success counted only for targets",
		 "{\"spec\":{\"successPolicy\":{\"operator\":\"Any\",\"targetReplicatedJobs\":[\"replicated-job-b\"]}}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .n_conditions = 1,
		   .conditions = done_cond}},
		 1, {0}, {0}, NULL, NULL, NULL, NULL, NULL},
		{"PVCs that exist are not created",
		 "{\"spec\":{\"volumeClaimPolicies\":[{\"templates\":[{\"metadata\":{\"name\":\"d\"},\"spec\":{}},"
		 "{\"metadata\":{\"name\":\"e\"},\"spec\":{}}]}]}}",
		 {{0}}, 0, {0}, {"d-test-js", NULL},
		 "CreateService:test-js CreatePVC:e-test-js CreateJob:test-js-replicated-job-a-0 "
		 "CreateJob:test-js-replicated-job-b-0 CreateJob:test-js-replicated-job-b-1 "
		 "CreateJob:test-js-replicated-job-b-2",
		 NULL, NULL, NULL, NULL},
		{"a JobSet without uid owns no Job, and a Job of its name is not its own",
		 "{\"metadata\":{\"uid\":null}}", {{.name = A0, .owner_uid = OWN, .restart_attempt = "0"}}, 1, {0}, {0},
		 NULL, NULL, "JobCreationFailed", NULL, NULL},
		{"dependsOn an rjob with no status yet creates nothing for it",
		 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"replicated-job-a\",\"replicas\":1,\"dependsOn\":"
		 "[{\"name\":\"nope\",\"status\":\"Ready\"}],\"template\":{\"spec\":{\"template\":{\"spec\":"
		 "{\"containers\":[]}}}}}]}}",
		 {{0}}, 0, {0}, {0}, "CreateService:test-js", NULL, NULL, NULL, NULL},
		{"elastic: Job of an unknown rjob and one already scaled", 
		 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"replicated-job-a\",\"replicas\":1,\"template\":"
		 "{\"spec\":{\"parallelism\":2,\"completions\":2,\"template\":{\"spec\":{\"containers\":[]}}}}}]}}",
		 {{.name = "x", .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "gone"},
		  {.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a",
		   .has_parallelism = true, .parallelism = 2, .has_completions = true, .completions = 2}},
		 2, {.elastic_jobset = true}, {0}, "CreateService:test-js", NULL, NULL, NULL, NULL},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct js_jobset *js = load(rows[i].patch);
		const struct js_obsjob *jobs[3];
		json_t *tol = rows[i].tolerations ? json_loads(rows[i].tolerations, 0, NULL) : NULL;
		for (size_t k = 0; k < rows[i].n_jobs; k++) {
			struct js_obsjob_init init = {.job = rows[i].jobs[k]};
			if (k == 0)
				init.job.tolerations = tol;
			jobs[k] = js_job_build(&init);
		}
		json_decref(tol);
		size_t n_pvcs = rows[i].pvcs[0] ? 1 : 0;
		struct js_reconcile_input in = {.jobset = js, .jobs = jobs, .n_jobs = rows[i].n_jobs, .pvcs = rows[i].pvcs,
						 .n_pvcs = n_pvcs, .gates = rows[i].gates, .now = 1700000000};
		struct js_plan *p = NULL;
		char *err = NULL;
		int r = js_reconcile_run(&in, &p, &err);
		if (rows[i].want_err) {
			if (r != JS_EINVALID || !strstr(err, rows[i].want_err))
				fail_msg("%s: r=%d err=%s, want error '%s'", rows[i].name, r, err ? err : "-", rows[i].want_err);
		} else {
			if (r != 0)
				fail_msg("%s: r=%d err=%s", rows[i].name, r, err ? err : "-");
			char have[1024] = "";
			for (size_t k = 0; k < p->n_actions; k++)
				snprintf(have + strlen(have), sizeof(have) - strlen(have), "%s%s:%s", k ? " " : "",
					 js_reconcile_action_kind_name(p->actions[k].kind), p->actions[k].name);
			if (rows[i].want_actions && strcmp(have, rows[i].want_actions) != 0)
				fail_msg("%s: actions\n  have: %s\n  want: %s", rows[i].name, have, rows[i].want_actions);
			bool ev = !rows[i].want_event;
			for (size_t k = 0; k < p->n_events && !ev; k++)
				ev = strcmp(p->events[k].reason, rows[i].want_event) == 0;
			if (!ev)
				fail_msg("%s: no event %s", rows[i].name, rows[i].want_event);
			if (rows[i].want_patch) {
				json_t *want = json_loads(rows[i].want_patch, 0, NULL);
				const json_t *have_patch = p->actions[p->n_actions - 1].object;
				if (!json_equal(want, have_patch)) {
					char *t = json_dumps(have_patch, JSON_SORT_KEYS);
					fail_msg("%s: patch %s", rows[i].name, t);
				}
				json_decref(want);
			}
		}
		free(err);
		js_reconcile_plan_free(p);
		for (size_t k = 0; k < rows[i].n_jobs; k++)
			js_job_unref(jobs[k]);
		js_jobset_free(js);
	}
}

/* The upstream KEPs, straight into js_reconcile_run: the states the
 * scenarios (tests/cases/core/kep-*.scn) do not reach - a lost status write,
 * clock skew, a bad startTime, the FailedResourcePropagation reason on a
 * resume - each row naming the KEP section it checks. */
#define SUSPENDED_TRUE "{\"type\":\"Suspended\",\"status\":\"True\",\"reason\":\"SuspendedJobs\",\"message\":\"m\"," \
		       "\"lastTransitionTime\":\"2023-11-14T22:00:00Z\"}"
#define B0 "test-js-replicated-job-b-0"

/* KEP-1150 "Controller Changes" (mergeContainerResources in its test plan):
 * on resume the template's resources.requests and resources.limits go into
 * the Job's containers of the same name; resources.claims, the Job's other
 * fields (a webhook's env) and containers the template does not name (a
 * webhook's sidecar) stay the Job's; nothing changes, nothing is sent. The
 * template here is replicated-job-a of fix-a with the resources of `tmpl`. */
static void test_kep_1150_merge(void **state)
{
	static const struct {
		const char *name;
		const char *tmpl_containers, *tmpl_init; /* JSON, of the JobSet's template */
		const char *job_containers, *job_init;   /* JSON, of the Job; NULL: absent */
		struct js_gates gates;
		const char *want_containers, *want_init; /* in the patch; NULL: not sent */
	} rows[] = {
		{"requests and limits by name; the Job's env, claims and sidecar stay",
		 "[{\"name\":\"main\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"2\"},\"limits\":{\"memory\":\"1Gi\"}}}]",
		 NULL,
		 "[{\"name\":\"main\",\"image\":\"i\",\"env\":[{\"name\":\"INJECTED\",\"value\":\"1\"}],"
		 "\"resources\":{\"requests\":{\"cpu\":\"1\"},\"claims\":[{\"name\":\"gpu\"}]}},"
		 "{\"name\":\"sidecar\",\"image\":\"proxy\"}]",
		 NULL, {.mutable_pod_resources = true},
		 "[{\"name\":\"main\",\"image\":\"i\",\"env\":[{\"name\":\"INJECTED\",\"value\":\"1\"}],"
		 "\"resources\":{\"requests\":{\"cpu\":\"2\"},\"limits\":{\"memory\":\"1Gi\"},\"claims\":[{\"name\":\"gpu\"}]}},"
		 "{\"name\":\"sidecar\",\"image\":\"proxy\"}]",
		 NULL},
		{"limits removed from the template are removed from the Job",
		 "[{\"name\":\"main\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]", NULL,
		 "[{\"name\":\"main\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"1\"},\"limits\":{\"cpu\":\"1\"}}}]",
		 NULL, {.mutable_pod_resources = true},
		 "[{\"name\":\"main\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]", NULL},
		{"init containers by name; an injected init container stays",
		 "[{\"name\":\"main\",\"image\":\"i\"}]",
		 "[{\"name\":\"init\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"3\"}}}]",
		 "[{\"name\":\"main\",\"image\":\"i\"}]",
		 "[{\"name\":\"istio-init\",\"image\":\"p\"},{\"name\":\"init\",\"image\":\"i\"}]",
		 {.mutable_pod_resources = true}, NULL,
		 "[{\"name\":\"istio-init\",\"image\":\"p\"},{\"name\":\"init\",\"image\":\"i\","
		 "\"resources\":{\"requests\":{\"cpu\":\"3\"}}}]"},
		{"the same resources: nothing sent, no API-server gate needed",
		 "[{\"name\":\"main\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]", NULL,
		 "[{\"name\":\"main\",\"image\":\"i\",\"env\":[],\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]", NULL,
		 {.mutable_pod_resources = true}, NULL, NULL},
		{"a template container the Job lacks is not added",
		 "[{\"name\":\"other\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"5\"}}}]", NULL,
		 "[{\"name\":\"main\",\"image\":\"i\"}]", NULL, {.mutable_pod_resources = true}, NULL, NULL},
		{"a Job without containers: nothing sent",
		 "[{\"name\":\"main\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"5\"}}}]", NULL,
		 NULL, NULL, {.mutable_pod_resources = true}, NULL, NULL},
		{"gate off: nothing sent",
		 "[{\"name\":\"main\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}}]", NULL,
		 "[{\"name\":\"main\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]", NULL,
		 {0}, NULL, NULL},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char patch[2048];
		snprintf(patch, sizeof(patch),
			 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"replicated-job-a\",\"replicas\":1,\"template\":{"
			 "\"spec\":{\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":%s%s%s}}}}}]},"
			 "\"status\":{\"conditions\":[" SUSPENDED_TRUE "]}}",
			 rows[i].tmpl_containers, rows[i].tmpl_init ? ",\"initContainers\":" : "",
			 rows[i].tmpl_init ? rows[i].tmpl_init : "");
		struct js_jobset *js = load(patch);
		assert_non_null(js);
		json_t *jc = rows[i].job_containers ? json_loads(rows[i].job_containers, 0, NULL) : NULL;
		json_t *ji = rows[i].job_init ? json_loads(rows[i].job_init, 0, NULL) : NULL;
		struct js_obsjob_init init = {.job = {.name = A0, .owner_uid = OWN, .restart_attempt = "0",
						      .rjob_name = "replicated-job-a", .has_suspend = true, .suspend = true,
						      .containers = jc, .init_containers = ji}};
		const struct js_obsjob *job = js_job_build(&init);
		json_decref(jc);
		json_decref(ji);
		struct js_reconcile_input in = {.jobset = js, .jobs = &job, .n_jobs = 1, .gates = rows[i].gates,
						 .now = 1700000000};
		struct js_plan *p = NULL;
		char *err = NULL;
		if (js_reconcile_run(&in, &p, &err) != 0)
			fail_msg("%s: %s", rows[i].name, err ? err : "-");
		const struct js_action *last = NULL;
		for (size_t k = 0; k < p->n_actions; k++)
			if (p->actions[k].kind == JS_ACTION_PATCH_JOB && strcmp(p->actions[k].name, A0) == 0)
				last = &p->actions[k];
		assert_non_null(last);
		const json_t *pod = js_json_path(last->object, "spec.template.spec");
		const char *want[] = {rows[i].want_containers, rows[i].want_init};
		const char *key[] = {"containers", "initContainers"};
		bool sent = false;
		for (size_t k = 0; k < 2; k++) {
			const json_t *have = json_object_get(pod, key[k]);
			json_t *w = want[k] ? json_loads(want[k], 0, NULL) : NULL;
			if (!json_same_or_null(have, w)) {
				char *t = have ? json_dumps(have, JSON_SORT_KEYS) : NULL;
				fail_msg("%s: %s %s, want %s", rows[i].name, key[k], t ? t : "absent", want[k] ? want[k] : "absent");
			}
			sent |= have != NULL;
			json_decref(w);
		}
		/* KEP-1150 "Risks and Mitigations": only a patch that carries
		 * resources announces a refusal, with the API server's error
		 * between the message and the hint (ctrl/events.c). */
		assert_true(sent == (last->fail_reason != NULL));
		if (sent) {
			assert_string_equal(last->fail_reason, "FailedResourcePropagation");
			assert_non_null(strstr(last->fail_hint, "MutablePodResourcesForSuspendedJobs"));
		}
		free(err);
		js_reconcile_plan_free(p);
		js_job_unref(job);
		js_jobset_free(js);
	}
}

static void test_kep_table(void **state)
{
	static const struct {
		const char *name;
		const char *patch;
		struct js_obsjob jobs[2];
		size_t n_jobs;
		struct js_gates gates;
		int32_t want_ea;           /* -1: absent */
		const char *want_start;    /* NULL: not checked; "-": absent */
		int64_t want_requeue;      /* -1: none */
		const char *want_failed;   /* Failed=True reason, or NULL: not failed */
		const char *want_fail_reason; /* of the last PatchJob, "-": none; NULL: not checked */
		const char *want_ann;      /* annotation of the last PatchJob (Job and pod template), or NULL */
	} rows[] = {
		{"KEP-1282 §4: a resume whose status write was lost is not counted twice",
		 "{\"status\":{\"executionAttempts\":1,\"conditions\":[" SUSPENDED_TRUE "]}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .has_suspend = true,
		   .suspend = false, .execution_attempt = "2"},
		  {.name = B0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-b", .has_suspend = true,
		   .suspend = true, .execution_attempt = "1"}},
		 2, {.execution_attempts = true}, 2, NULL, -1, NULL, NULL, "2"},
		{"KEP-1282 §2: the first pass of a resume counts it once",
		 "{\"status\":{\"executionAttempts\":1,\"conditions\":[" SUSPENDED_TRUE "]}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .has_suspend = true,
		   .suspend = true, .execution_attempt = "1"}},
		 1, {.execution_attempts = true}, 2, NULL, -1, NULL, "-", "2"},
		{"KEP-1282 §1: gate on for a suspended JobSet that ran: no counter while suspended",
		 "{\"spec\":{\"suspend\":true},\"status\":{\"conditions\":[" SUSPENDED_TRUE "]}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .has_suspend = true,
		   .suspend = true}},
		 1, {.execution_attempts = true}, -1, NULL, -1, NULL, NULL, NULL},
		{"KEP-1282 §1: ... and its first resume gives 0, not 1",
		 "{\"status\":{\"conditions\":[" SUSPENDED_TRUE "]}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .has_suspend = true,
		   .suspend = true}},
		 1, {.execution_attempts = true}, 0, NULL, -1, NULL, "-", "0"},
		{"KEP-1282 §1: ... also when that resume's status write was lost",
		 "{\"status\":{\"conditions\":[" SUSPENDED_TRUE "]}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .has_suspend = true,
		   .suspend = false, .execution_attempt = "0"},
		  {.name = B0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-b", .has_suspend = true,
		   .suspend = true}},
		 2, {.execution_attempts = true}, 0, NULL, -1, NULL, NULL, "0"},
		{"KEP-1282 §1: a suspended JobSet with restarts starts at restarts",
		 "{\"spec\":{\"suspend\":true,\"failurePolicy\":{\"maxRestarts\":3}},\"status\":{\"restarts\":2,"
		 "\"conditions\":[" SUSPENDED_TRUE "]}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "2", .rjob_name = "replicated-job-a", .has_suspend = true,
		   .suspend = true}},
		 1, {.execution_attempts = true}, 2, NULL, -1, NULL, NULL, NULL},
		{"KEP-1282 §5: with the gate off a value is kept through a restart",
		 "{\"spec\":{\"failurePolicy\":{\"maxRestarts\":3}},\"status\":{\"executionAttempts\":5}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .n_conditions = 1,
		   .conditions = failed_cond}},
		 1, {0}, 5, NULL, -1, NULL, NULL, NULL},
		{"issue 22: executionAttempts at 2147483647 (a status patch) and a restart: stays, does not wrap",
		 "{\"spec\":{\"failurePolicy\":{\"maxRestarts\":3}},\"status\":{\"executionAttempts\":2147483647}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .n_conditions = 1,
		   .conditions = failed_cond}},
		 1, {.execution_attempts = true}, INT32_MAX, NULL, -1, NULL, NULL, NULL},
		{"issue 22: executionAttempts at 2147483647 and a resume: stays, does not wrap",
		 "{\"status\":{\"executionAttempts\":2147483647,\"conditions\":[" SUSPENDED_TRUE "]}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .has_suspend = true,
		   .suspend = true, .execution_attempt = "2147483647"}},
		 1, {.execution_attempts = true}, INT32_MAX, NULL, -1, NULL, "-", "2147483647"},
		{"KEP-1150: a resume carrying resources names FailedResourcePropagation",
		 "{\"status\":{\"conditions\":[" SUSPENDED_TRUE "]}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .has_suspend = true,
		   .suspend = true}},
		 1, {.mutable_pod_resources = true}, -1, NULL, -1, NULL, "FailedResourcePropagation", NULL},
		{"KEP-1150: without the gate a resume names no reason",
		 "{\"status\":{\"conditions\":[" SUSPENDED_TRUE "]}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a", .has_suspend = true,
		   .suspend = true}},
		 1, {0}, -1, NULL, -1, NULL, "-", NULL},
		{"KEP-1186 Risks: a startTime in the future (clock skew) is not expired",
		 "{\"spec\":{\"activeDeadlineSeconds\":10},\"status\":{\"startTime\":\"2023-11-14T22:14:20Z\"}}",
		 {{0}}, 0, {.active_deadline = true}, -1, "2023-11-14T22:14:20Z", 70, NULL, NULL, NULL},
		{"KEP-1186: a startTime that does not parse fails nothing",
		 "{\"spec\":{\"activeDeadlineSeconds\":1},\"status\":{\"startTime\":\"yesterday\"}}",
		 {{0}}, 0, {.active_deadline = true}, -1, "yesterday", -1, NULL, NULL, NULL},
		{"KEP-1186: a huge deadline does not wrap into the past",
		 "{\"spec\":{\"activeDeadlineSeconds\":9223372036854775807}}",
		 {{0}}, 0, {.active_deadline = true}, -1, "2023-11-14T22:13:20Z", INT64_MAX - 1700000000, NULL, NULL, NULL},
		{"issue 22: a huge deadline from a startTime before 1970 does not overflow",
		 "{\"spec\":{\"activeDeadlineSeconds\":9223372036854775807},\"status\":{\"startTime\":\"0000-01-01T00:00:00Z\"}}",
		 {{0}}, 0, {.active_deadline = true}, -1, "0000-01-01T00:00:00Z", INT64_MAX - 62167219200 - 1700000000, NULL,
		 NULL, NULL},
		{"KEP-1186: a deadline past at the first pass fails at once",
		 "{\"spec\":{\"activeDeadlineSeconds\":5},\"status\":{\"startTime\":\"2023-11-14T22:13:15Z\"}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a"}},
		 1, {.active_deadline = true}, -1, "2023-11-14T22:13:15Z", -1, "DeadlineExceeded", NULL, NULL},
		{"KEP-1186: the field without the gate is not enforced and startTime is not written",
		 "{\"spec\":{\"activeDeadlineSeconds\":5},\"status\":{\"startTime\":\"2023-11-14T22:00:00Z\"}}",
		 {{.name = A0, .owner_uid = OWN, .restart_attempt = "0", .rjob_name = "replicated-job-a"}},
		 1, {0}, -1, "2023-11-14T22:00:00Z", -1, NULL, NULL, NULL},
	};
	(void)state;
	json_t *other = json_pack("[{s:s,s:s,s:{s:{s:s}}}]", "name", "test-container", "image", "busybox:latest",
				  "resources", "requests", "cpu", "9");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct js_jobset *js = load(rows[i].patch);
		const struct js_obsjob *jobs[2];
		for (size_t k = 0; k < rows[i].n_jobs; k++) {
			struct js_obsjob_init init = {.job = rows[i].jobs[k]};
			init.job.containers = other; /* requests the template does not have */
			jobs[k] = js_job_build(&init);
		}
		struct js_reconcile_input in = {.jobset = js, .jobs = jobs, .n_jobs = rows[i].n_jobs, .gates = rows[i].gates,
						 .now = 1700000000};
		struct js_plan *p = NULL;
		char *err = NULL;
		if (js_reconcile_run(&in, &p, &err) != 0)
			fail_msg("%s: %s", rows[i].name, err ? err : "-");
		const struct js_status *st = p->status;
		int32_t ea = st->has_execution_attempts ? st->execution_attempts : -1;
		if (ea != rows[i].want_ea)
			fail_msg("%s: executionAttempts %d, want %d", rows[i].name, ea, rows[i].want_ea);
		if (rows[i].want_start && strcmp(st->start_time ? st->start_time : "-", rows[i].want_start) != 0)
			fail_msg("%s: startTime %s, want %s", rows[i].name, st->start_time ? st->start_time : "-",
				 rows[i].want_start);
		int64_t rq = p->has_requeue_after ? p->requeue_after : -1;
		if (rq != rows[i].want_requeue)
			fail_msg("%s: requeue %lld, want %lld", rows[i].name, (long long)rq, (long long)rows[i].want_requeue);
		const struct js_condition *f = NULL;
		for (size_t k = 0; k < st->n_conditions; k++)
			if (strcmp(st->conditions[k].type, "Failed") == 0 && strcmp(st->conditions[k].status, "True") == 0)
				f = &st->conditions[k];
		if ((f == NULL) != (rows[i].want_failed == NULL) ||
		    (f && strcmp(f->reason ? f->reason : "", rows[i].want_failed) != 0))
			fail_msg("%s: Failed %s, want %s", rows[i].name, f ? f->reason : "none",
				 rows[i].want_failed ? rows[i].want_failed : "none");
		const struct js_action *last = NULL;
		for (size_t k = 0; k < p->n_actions; k++)
			if (p->actions[k].kind == JS_ACTION_PATCH_JOB)
				last = &p->actions[k];
		if (rows[i].want_fail_reason || rows[i].want_ann)
			assert_non_null(last);
		if (rows[i].want_fail_reason &&
		    strcmp(last->fail_reason ? last->fail_reason : "-", rows[i].want_fail_reason) != 0)
			fail_msg("%s: fail_reason %s", rows[i].name, last->fail_reason ? last->fail_reason : "-");
		if (rows[i].want_ann) {
			const char *k = "jobset.sigs.k8s.io/execution-attempt";
			const char *a = json_string_value(json_object_get(
				json_object_get(json_object_get(last->object, "metadata"), "annotations"), k));
			const char *b = json_string_value(json_object_get(json_object_get(json_object_get(json_object_get(
				json_object_get(last->object, "spec"), "template"), "metadata"), "annotations"), k));
			if (!a || !b || strcmp(a, rows[i].want_ann) != 0 || strcmp(b, rows[i].want_ann) != 0)
				fail_msg("%s: annotation %s/%s, want %s", rows[i].name, a ? a : "-", b ? b : "-",
					 rows[i].want_ann);
		}
		free(err);
		js_reconcile_plan_free(p);
		for (size_t k = 0; k < rows[i].n_jobs; k++)
			js_job_unref(jobs[k]);
		js_jobset_free(js);
	}
	json_decref(other);
	/* KEP-1282: the annotation is part of a record's identity, so a
	 * resumed Job's new value wakes the JobSet. */
	struct js_obsjob_init x = {.job = {.name = "j", .execution_attempt = "1"}}, y = x;
	y.job.execution_attempt = "2";
	struct js_obsjob *jx = js_job_build(&x), *jy = js_job_build(&y);
	assert_false(js_job_same(jx, jy));
	js_job_unref(jx);
	js_job_unref(jy);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_job_decode),
		cmocka_unit_test(test_reconcile_table),
		cmocka_unit_test(test_kep_table),
		cmocka_unit_test(test_kep_1150_merge),
		cmocka_unit_test(test_in_place),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
