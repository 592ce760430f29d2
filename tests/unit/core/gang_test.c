/*
 * gang_test.c - the core's part of KEP-969 (core/gang.c) as a table: a patch
 * on FIX-A (replicated-job-a: 1 pod, replicated-job-b: 3), the gate, which
 * of the JobSet's Workload and PodGroups exist, and the expected actions in
 * order ("Kind:name ...") - created before the Jobs, deleted while
 * suspended, recreated on resume, none without the gate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jobset.h"
#include "base/json.h"
#include "core/job.h"
#include "core/reconcile.h"
#include "support/testutil.h"

#define OWN "uid-test-js"
#define A0 "test-js-replicated-job-a-0"
#define SCHED "\"scheduling\":{}"
#define JOBS_ALL                                                                                            \
	"CreateJob:test-js-replicated-job-a-0 CreateJob:test-js-replicated-job-b-0 "                         \
	"CreateJob:test-js-replicated-job-b-1 CreateJob:test-js-replicated-job-b-2"
#define ONLY_A                                                                                              \
	"\"replicatedJobs\":[{\"name\":\"replicated-job-a\",\"replicas\":1,\"template\":{\"spec\":{\"template\":" \
	"{\"spec\":{\"containers\":[]}}}}}]"

static const struct {
	const char *name;
	const char *patch;
	bool gate;
	bool workload_exists;
	const char *podgroups[3];
	bool suspended_job; /* one owned, suspended Job A0 (then ONLY_A) */
	const char *want_actions;
	const char *want_event; /* NULL: not checked */
	int64_t want_min;       /* minCount of the first CreatePodGroup, 0: not checked */
	bool deleting;          /* an old PodGroup is still going */
	int64_t want_requeue;   /* requeue after (s), 0: none */
} rows[] = {
	{"gate off: spec.scheduling is not acted on", "{\"spec\":{" SCHED "}}", false, false, {0}, false,
	 "CreateService:test-js " JOBS_ALL, NULL, 0, false, 0},
	{"gate on, no scheduling: nothing of KEP-969", "{}", true, false, {0}, false,
	 "CreateService:test-js " JOBS_ALL, NULL, 0, false, 0},
	{"Workload and one PodGroup before the Jobs", "{\"spec\":{" SCHED "}}", true, false, {0}, false,
	 "CreateWorkload:test-js CreatePodGroup:test-js CreateService:test-js " JOBS_ALL, NULL, 4, false, 0},
	{"both exist: nothing more", "{\"spec\":{" SCHED "}}", true, true, {"test-js"}, false,
	 "CreateService:test-js " JOBS_ALL, NULL, 0, false, 0},
	{"a PodGroup gone is made again", "{\"spec\":{" SCHED "}}", true, true, {0}, false,
	 "CreatePodGroup:test-js CreateService:test-js " JOBS_ALL, NULL, 4, false, 0},
	{"InOrder: one gang per ReplicatedJob, all made up front",
	 "{\"spec\":{" SCHED ",\"startupPolicy\":{\"startupPolicyOrder\":\"InOrder\"}}}", true, false, {0}, false,
	 "CreateWorkload:test-js CreatePodGroup:test-js-replicated-job-a CreatePodGroup:test-js-replicated-job-b "
	 "CreateService:test-js CreateJob:test-js-replicated-job-a-0",
	 NULL, 1, false, 0},
	{"suspended since creation: what exists is deleted, nothing made",
	 "{\"spec\":{" SCHED ",\"suspend\":true}}", true, true, {"test-js", "stale"}, false,
	 "DeletePodGroup:test-js DeletePodGroup:stale DeleteWorkload:test-js", NULL, 0, false, 0},
	{"suspended, nothing exists: no action", "{\"spec\":{" SCHED ",\"suspend\":true}}", true, false, {0}, false,
	 "", NULL, 0, false, 0},
	{"suspended with Jobs: deleted", "{\"spec\":{" SCHED ",\"suspend\":true," ONLY_A "}}", true, true,
	 {"test-js"}, true, "DeletePodGroup:test-js DeleteWorkload:test-js CreateService:test-js", NULL, 0, false, 0},
	{"resume: made again before the Jobs resume",
	 "{\"spec\":{" SCHED "," ONLY_A "},\"status\":{\"conditions\":[{\"type\":\"Suspended\",\"status\":\"True\"}]}}",
	 true, false, {0}, true, "CreateWorkload:test-js CreatePodGroup:test-js CreateService:test-js PatchJob:" A0,
	 NULL, 1, false, 0},
	{"resume while an old PodGroup is going: nothing made yet, look again in 1 s",
	 "{\"spec\":{" SCHED "," ONLY_A "},\"status\":{\"conditions\":[{\"type\":\"Suspended\",\"status\":\"True\"}]}}",
	 true, false, {0}, true, "CreateService:test-js PatchJob:" A0, NULL, 0, true, 1},
	{"suspended while one is going: the rest are deleted, no recheck needed",
	 "{\"spec\":{" SCHED ",\"suspend\":true," ONLY_A "}}", true, true, {0}, true,
	 "DeleteWorkload:test-js CreateService:test-js", NULL, 0, true, 0},
	{"a spec that does not check out: a Warning, no objects",
	 "{\"spec\":{\"scheduling\":{\"policy\":{\"gang\":{\"minCount\":99}}}}}", true, false, {0}, false,
	 "CreateService:test-js " JOBS_ALL, "InvalidScheduling", 0, false, 0},
};

static void test_gang_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct js_jobset *js = tu_fixture("tests/cases/core/fix-a.yaml", rows[i].patch);
		const struct js_obsjob *jobs[1] = {NULL};
		if (rows[i].suspended_job) {
			struct js_obsjob_init init = {.job = {.name = A0, .owner_uid = OWN, .restart_attempt = "0",
							      .rjob_name = "replicated-job-a", .has_suspend = true,
							      .suspend = true}};
			jobs[0] = js_job_build(&init);
		}
		size_t npg = 0;
		while (npg < 3 && rows[i].podgroups[npg])
			npg++;
		struct js_reconcile_input in = {.jobset = js, .jobs = jobs, .n_jobs = rows[i].suspended_job ? 1 : 0,
						 .workload_exists = rows[i].workload_exists,
						 .podgroups = rows[i].podgroups, .n_podgroups = npg,
						 .sched_deleting = rows[i].deleting,
						 .gates = {.workload_aware_scheduling = rows[i].gate}, .now = 1700000000};
		struct js_plan *p = NULL;
		char *err = NULL;
		int r = js_reconcile_run(&in, &p, &err);
		if (r != 0)
			fail_msg("%s: r=%d err=%s", rows[i].name, r, err ? err : "-");
		char have[1024] = "";
		int64_t min = 0;
		for (size_t k = 0; k < p->n_actions; k++) {
			snprintf(have + strlen(have), sizeof(have) - strlen(have), "%s%s:%s", k ? " " : "",
				 js_reconcile_action_kind_name(p->actions[k].kind), p->actions[k].name);
			if (p->actions[k].kind == JS_ACTION_CREATE_PODGROUP && !min)
				min = json_integer_value(
					js_json_path(p->actions[k].object, "spec.schedulingPolicy.gang.minCount"));
		}
		if (strcmp(have, rows[i].want_actions) != 0)
			fail_msg("%s: actions\n  have: %s\n  want: %s", rows[i].name, have, rows[i].want_actions);
		if (rows[i].want_min && min != rows[i].want_min)
			fail_msg("%s: minCount %lld, want %lld", rows[i].name, (long long)min, (long long)rows[i].want_min);
		if (p->has_requeue_after != (rows[i].want_requeue > 0) ||
		    (p->has_requeue_after && p->requeue_after != rows[i].want_requeue))
			fail_msg("%s: requeue %d/%lld, want %lld", rows[i].name, p->has_requeue_after,
				 (long long)p->requeue_after, (long long)rows[i].want_requeue);
		bool ev = !rows[i].want_event;
		for (size_t k = 0; k < p->n_events && !ev; k++)
			ev = strcmp(p->events[k].reason, rows[i].want_event) == 0;
		if (!ev)
			fail_msg("%s: no event %s", rows[i].name, rows[i].want_event);
		js_reconcile_plan_free(p);
		if (jobs[0])
			js_job_unref(jobs[0]);
		js_jobset_free(js);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gang_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
