/*
 * describe_test.c - `kubectl jobset describe`'s body (api/describe.h): the
 * policies in words, and the attempt tree, above all mid-restart, when the
 * pods of the old attempt still terminate beside the new attempt's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "api/describe.h"

static json_t *load(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, 0, &e);
	if (!v)
		fail_msg("bad test JSON: %s: %s", e.text, text);
	return v;
}

static const struct {
	const char *name, *jobset, *want;
} policies[] = {
	{"defaults", "{\"spec\":{\"replicatedJobs\":[{\"name\":\"w\"}]}}",
	 "Policies:\n"
	 "  Success:  Completed once every Job of every ReplicatedJob has succeeded (operator All)\n"
	 "  Failure:  the first failed Job fails the JobSet (no failurePolicy)\n"
	 "  Startup:  AnyOrder: every ReplicatedJob starts at once\n"},
	{"any of targets, rules, in order, dependsOn, pending request",
	 "{\"metadata\":{\"annotations\":{\"jobset.sigs.k8s.io/restart-request\":\"2\"}},"
	 "\"spec\":{\"successPolicy\":{\"operator\":\"Any\",\"targetReplicatedJobs\":[\"d\",\"e\"]},"
	 "\"failurePolicy\":{\"maxRestarts\":1,\"restartStrategy\":\"BlockingRecreate\",\"rules\":["
	 "{\"name\":\"r1\",\"action\":\"FailJobSet\",\"onJobFailureReasons\":[\"PodFailurePolicy\"],"
	 "\"targetReplicatedJobs\":[\"d\"]},"
	 "{\"name\":\"r2\",\"action\":\"RestartJobAndIgnoreMaxRestarts\",\"onJobFailureMessagePatterns\":[\"OOM.*\"]}]},"
	 "\"startupPolicy\":{\"startupPolicyOrder\":\"InOrder\"},"
	 "\"replicatedJobs\":[{\"name\":\"d\"},{\"name\":\"e\",\"dependsOn\":[{\"name\":\"d\",\"status\":\"Ready\"}]}]},"
	 "\"status\":{\"restarts\":2,\"restartsCountTowardsMax\":1}}",
	 "Policies:\n"
	 "  Success:  Completed once any Job of d, e has succeeded (operator Any)\n"
	 "  Failure:  a failed Job restarts the whole JobSet (deleting every Job first, then creating the new "
	 "attempt), at most 1 time (1 used); then the JobSet fails\n"
	 "            rule r1: a failed Job of d with reason PodFailurePolicy -> fail the JobSet\n"
	 "            rule r2: a failed Job of any ReplicatedJob with a message matching OOM.* -> recreate only the "
	 "failed Job (not counted toward maxRestarts)\n"
	 "            (the first matching rule applies; no match restarts the whole JobSet)\n"
	 "  Startup:  InOrder: each ReplicatedJob starts once the one before it is ready\n"
	 "            e starts once d is Ready\n"
	 "  Restart:  jobset.sigs.k8s.io/restart-request=2 (pending: attempt ends at the next reconcile)\n"},
	{"spent request, in-place strategy",
	 "{\"metadata\":{\"annotations\":{\"jobset.sigs.k8s.io/restart-request\":\"0\"}},"
	 "\"spec\":{\"failurePolicy\":{\"maxRestarts\":3,\"restartStrategy\":\"InPlaceRestart\"}},"
	 "\"status\":{\"restarts\":1}}",
	 "Policies:\n"
	 "  Success:  Completed once every Job of every ReplicatedJob has succeeded (operator All)\n"
	 "  Failure:  a failed Job restarts the whole JobSet (restarting the pods in place), at most 3 times (0 "
	 "used); then the JobSet fails\n"
	 "  Startup:  AnyOrder: every ReplicatedJob starts at once\n"
	 "  Restart:  jobset.sigs.k8s.io/restart-request=0 (spent)\n"},
	{"node quarantine: rules and the nodes kept off",
	 "{\"metadata\":{\"annotations\":{\"jobset.sigs.k8s.io/node-quarantine-exit-codes\":\"134,137\","
	 "\"jobset.sigs.k8s.io/node-quarantine-node-lost\":\"true\",\"jobset.sigs.k8s.io/node-quarantine-attempts\":\"2\"}},"
	 "\"spec\":{\"failurePolicy\":{\"maxRestarts\":3}},"
	 "\"status\":{\"restarts\":1,\"conditions\":[{\"type\":\"NodesQuarantined\",\"status\":\"True\","
	 "\"message\":\"attempt 1 keeps off 2 nodes (node:last attempt:reason): n1:2:exitCode=137,n2:1:nodeLost\"}]}}",
	 "Policies:\n"
	 "  Success:  Completed once every Job of every ReplicatedJob has succeeded (operator All)\n"
	 "  Failure:  a failed Job restarts the whole JobSet (recreating every Job), at most 3 times (0 used); "
	 "then the JobSet fails\n"
	 "  Startup:  AnyOrder: every ReplicatedJob starts at once\n"
	 "  Quarantine: a node is kept off the next 2 attempt(s) when a pod failed there with exit code 134,137; "
	 "its node lost\n"
	 "              n1: exit code 137, kept off through attempt 2\n"
	 "              n2: node lost, kept off through attempt 1\n"},
	{"node quarantine: garbage list",
	 "{\"metadata\":{\"annotations\":{\"jobset.sigs.k8s.io/node-quarantine-pod-conditions\":\"DisruptionTarget\"}},"
	 "\"status\":{\"conditions\":[{\"type\":\"NodesQuarantined\",\"status\":\"True\","
	 "\"message\":\"x (node:last attempt:reason): ::::\"}]}}",
	 "Policies:\n"
	 "  Success:  Completed once every Job of every ReplicatedJob has succeeded (operator All)\n"
	 "  Failure:  the first failed Job fails the JobSet (no failurePolicy)\n"
	 "  Startup:  AnyOrder: every ReplicatedJob starts at once\n"
	 "  Quarantine: a node is kept off the next 1 attempt(s) when a pod failed there with pod condition "
	 "DisruptionTarget\n"
	 "              no node is kept off the current attempt\n"},
};

static void test_policies(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
		json_t *js = load(policies[i].jobset);
		struct js_buf b;
		js_buf_init(&b, 0);
		assert_int_equal(js_describe_policies(js, &b), 0);
		if (strcmp(js_buf_str(&b), policies[i].want) != 0)
			fail_msg("%s: got\n%s\nwant\n%s", policies[i].name, js_buf_str(&b), policies[i].want);
		js_buf_done(&b);
		json_decref(js);
	}
}

/* Labels of an object of ReplicatedJob `rj`, attempt `a`, Job `job`. */
#define LABELS(rj, a, job)                                                                                       \
	"\"labels\":{\"jobset.sigs.k8s.io/replicatedjob-name\":\"" rj "\","                                      \
	"\"jobset.sigs.k8s.io/restart-attempt\":\"" a "\",\"batch.kubernetes.io/job-name\":\"" job "\"}"

static void test_tree_mid_restart(void **state)
{
	(void)state;
	/* Restart 0 -> 1 under way: w-0's new Job runs while its old pod
	 * terminates; w-1's old Job is still being deleted (Foreground) with
	 * its pod; leader is done with the old attempt already. */
	json_t *js = load("{\"spec\":{\"replicatedJobs\":[{\"name\":\"leader\"},{\"name\":\"w\",\"replicas\":2}]},"
			  "\"status\":{\"restarts\":1,\"replicatedJobsStatus\":[{\"name\":\"w\",\"active\":1,\"ready\":1},"
			  "{\"name\":\"leader\",\"active\":1}]}}");
	json_t *jobs = load("["
			    "{\"metadata\":{\"name\":\"js-w-0\"," LABELS("w", "1", "") "},"
			    "\"status\":{\"active\":1}},"
			    "{\"metadata\":{\"name\":\"js-w-1\",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\","
			    LABELS("w", "0", "") "},\"status\":{\"failed\":1}},"
			    "{\"metadata\":{\"name\":\"js-leader-0\"," LABELS("leader", "1", "") "},"
			    "\"spec\":{\"suspend\":false},\"status\":{\"active\":1}}]");
	json_t *pods = load("["
			    "{\"metadata\":{\"name\":\"js-w-0-0-new\"," LABELS("w", "1", "js-w-0") "},"
			    "\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"phase\":\"Running\","
			    "\"containerStatuses\":[{\"restartCount\":2},{\"restartCount\":1}]}},"
			    "{\"metadata\":{\"name\":\"js-w-0-0-old\",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\","
			    LABELS("w", "0", "js-w-0") "},\"spec\":{\"nodeName\":\"n0\"},\"status\":{\"phase\":\"Failed\"}},"
			    "{\"metadata\":{\"name\":\"js-w-1-0-old\",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\","
			    LABELS("w", "0", "js-w-1") "},\"spec\":{\"nodeName\":\"n2\"},\"status\":{\"phase\":\"Running\"}},"
			    "{\"metadata\":{\"name\":\"js-leader-0-0-p\"," LABELS("leader", "1", "js-leader-0") "},"
			    "\"status\":{\"phase\":\"Pending\"}}]");
	const char *want =
		"Replicated Jobs:\n"
		"  leader  replicas 1  ready 0  succeeded 0  failed 0  active 1  suspended 0\n"
		"    Attempt 1 (current)\n"
		"      Job js-leader-0  Active  active 1  succeeded 0  failed 0\n"
		"        Pod js-leader-0-0-p  Pending  node <none>  restarts 0\n"
		"  w  replicas 2  ready 1  succeeded 0  failed 0  active 1  suspended 0\n"
		"    Attempt 1 (current)\n"
		"      Job js-w-0  Active  active 1  succeeded 0  failed 0\n"
		"        Pod js-w-0-0-new  Running  node n1  restarts 3\n"
		"    Attempt 0 (previous)\n"
		"      Job js-w-0 (deleted)\n"
		"        Pod js-w-0-0-old  Terminating  node n0  restarts 0\n"
		"      Job js-w-1  Terminating  active 0  succeeded 0  failed 1\n"
		"        Pod js-w-1-0-old  Terminating  node n2  restarts 0\n";
	struct js_buf b;
	js_buf_init(&b, 0);
	assert_int_equal(js_describe_tree(js, jobs, pods, &b), 0);
	if (strcmp(js_buf_str(&b), want) != 0)
		fail_msg("got\n%s\nwant\n%s", js_buf_str(&b), want);
	js_buf_done(&b);

	/* No children yet; a Job without the attempt label; an unknown
	 * ReplicatedJob's objects are ignored. */
	json_t *odd = load("[{\"metadata\":{\"name\":\"js-w-0\",\"labels\":{\"jobset.sigs.k8s.io/replicatedjob-name\":"
			   "\"w\"}},\"status\":{\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]}},"
			   "{\"metadata\":{\"name\":\"x\"," LABELS("gone", "0", "") "}}]");
	js_buf_init(&b, 0);
	assert_int_equal(js_describe_tree(js, odd, NULL, &b), 0);
	const char *want2 = "Replicated Jobs:\n"
			    "  leader  replicas 1  ready 0  succeeded 0  failed 0  active 1  suspended 0\n"
			    "    (no Jobs)\n"
			    "  w  replicas 2  ready 1  succeeded 0  failed 0  active 1  suspended 0\n"
			    "    Attempt ?\n"
			    "      Job js-w-0  Complete  active 0  succeeded 0  failed 0\n";
	if (strcmp(js_buf_str(&b), want2) != 0)
		fail_msg("got\n%s\nwant\n%s", js_buf_str(&b), want2);
	js_buf_done(&b);
	json_decref(odd);
	json_decref(js);
	json_decref(jobs);
	json_decref(pods);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policies),
		cmocka_unit_test(test_tree_mid_restart),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
