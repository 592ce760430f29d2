/*
 * placement_test.c - exclusive placement decisions (core/placement.h), one
 * table per function; each known upstream failure mode is a row named after
 * its issue.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jobset.h"
#include "base/json.h"
#include "core/job.h"
#include "core/placement.h"
#include "support/testutil.h"

#define JOB "job-uid"

/* Pods by shorthand. */
#define LEADER_BOUND {"l", JOB, "0", "n1", NULL, false, false, false, false, false}
#define LEADER_PENDING {"l", JOB, "0", NULL, NULL, false, false, false, false, false}
#define LEADER_FAILED {"lf", JOB, "0", "n0", NULL, true, false, false, false, false}
#define LEADER_TERMINATING {"lt", JOB, "0", "n0", NULL, false, true, false, false, false}
#define LEADER_OLD_JOB {"lo", "old-job-uid", "0", "n0", NULL, false, false, false, false, false}
#define LEADER_NO_INDEX {"lx", JOB, NULL, "n0", NULL, false, false, false, false, false}
#define FOLLOWER_GATED {"f", JOB, "1", NULL, NULL, false, false, true, false, false}
#define LEADER_SUCCEEDED {"ls", JOB, "0", "n2", NULL, true, false, false, true, false}
/* A follower elected to lead (js_placement_elect): ungated, bound, no selector. */
#define ELECTED(name, idx, node) {name, JOB, idx, node, NULL, false, false, false, false, true}
#define GATED(name, idx) {name, JOB, idx, NULL, NULL, false, false, true, false, false}

struct leader_case {
	const char *id;
	struct js_placement_pod pods[4];
	size_t n;
	enum js_placement_why want;
	size_t leader; /* index, when READY or LEADER_UNBOUND */
	size_t count;
};

static const struct leader_case leader_cases[] = {
	{"bound", {LEADER_BOUND, FOLLOWER_GATED}, 2, JS_PLACEMENT_READY, 0, 1},
	{"pending", {FOLLOWER_GATED, LEADER_PENDING}, 2, JS_PLACEMENT_LEADER_UNBOUND, 1, 1},
	{"none", {FOLLOWER_GATED}, 1, JS_PLACEMENT_NO_LEADER, 0, 0},
	{"no-pods", {{0}}, 0, JS_PLACEMENT_NO_LEADER, 0, 0},
	/* #1276: the Job controller keeps a failed leader next to its retry. */
	{"1276-terminal-leader-ignored", {LEADER_FAILED, LEADER_PENDING, FOLLOWER_GATED}, 3,
	 JS_PLACEMENT_LEADER_UNBOUND, 1, 1},
	{"1276-only-terminal-leader", {LEADER_FAILED, FOLLOWER_GATED}, 2, JS_PLACEMENT_NO_LEADER, 0, 0},
	/* Index 0 done: a follower made after it (a retry) follows the
	 * finished leader, which is never made again (tests/chaos, seed 2). */
	{"succeeded-leader-still-leads", {FOLLOWER_GATED, LEADER_SUCCEEDED}, 2, JS_PLACEMENT_READY, 1, 1},
	{"succeeded-and-failed-leader", {LEADER_FAILED, LEADER_SUCCEEDED, FOLLOWER_GATED}, 3, JS_PLACEMENT_READY, 1, 1},
	{"live-leader-before-succeeded", {LEADER_SUCCEEDED, LEADER_BOUND}, 2, JS_PLACEMENT_READY, 1, 1},
	{"succeeded-leader-terminating", {{"ls", JOB, "0", "n2", NULL, true, true, false, true, false}, FOLLOWER_GATED}, 2,
	 JS_PLACEMENT_NO_LEADER, 0, 0},
	{"succeeded-leader-of-old-job", {{"ls", "old-job-uid", "0", "n2", NULL, true, false, false, true, false}}, 1,
	 JS_PLACEMENT_NO_LEADER, 0, 0},
	/* #1021: a terminating leader is never used, even when bound. */
	{"1021-terminating-leader-ignored", {LEADER_TERMINATING, FOLLOWER_GATED}, 2, JS_PLACEMENT_NO_LEADER, 0, 0},
	{"1021-terminating-and-new", {LEADER_TERMINATING, LEADER_PENDING}, 2, JS_PLACEMENT_LEADER_UNBOUND, 1, 1},
	/* #433: a leader of an earlier incarnation of the Job (same job-key,
	 * other uid) is stale. */
	{"433-stale-leader-of-old-job", {LEADER_OLD_JOB, FOLLOWER_GATED}, 2, JS_PLACEMENT_NO_LEADER, 0, 0},
	{"433-stale-and-current", {LEADER_OLD_JOB, LEADER_BOUND}, 2, JS_PLACEMENT_READY, 1, 1},
	/* Index 0 done, its pod gone, no follower placed (tests/chaos seed
	 * 4242, excl-76): the elected follower leads. */
	{"elected-leads", {GATED("f2", "2"), ELECTED("f1", "1", "n3")}, 2, JS_PLACEMENT_READY, 1, 1},
	{"elected-unbound", {ELECTED("f1", "1", NULL), GATED("f2", "2")}, 2, JS_PLACEMENT_LEADER_UNBOUND, 0, 1},
	{"live-leader-before-elected", {ELECTED("f1", "1", "n3"), LEADER_BOUND}, 2, JS_PLACEMENT_READY, 1, 1},
	{"succeeded-leader-before-elected", {ELECTED("f1", "1", "n3"), LEADER_SUCCEEDED}, 2, JS_PLACEMENT_READY, 1, 1},
	{"two-elected-wait", {ELECTED("f1", "1", "n3"), ELECTED("f2", "2", "n4")}, 2, JS_PLACEMENT_LEADERS, 0, 2},
	{"elected-but-gated-is-not", {{"f1", JOB, "1", NULL, NULL, false, false, true, false, true}}, 1,
	 JS_PLACEMENT_NO_LEADER, 0, 0},
	{"elected-terminal-is-not", {{"f1", JOB, "1", "n3", NULL, true, false, false, false, true}}, 1,
	 JS_PLACEMENT_NO_LEADER, 0, 0},
	{"elected-of-old-job-is-not", {{"f1", "old-job-uid", "1", "n3", NULL, false, false, false, false, true}}, 1,
	 JS_PLACEMENT_NO_LEADER, 0, 0},
	{"two-live-leaders", {LEADER_BOUND, LEADER_PENDING}, 2, JS_PLACEMENT_LEADERS, 0, 2},
	{"no-index-is-no-leader", {LEADER_NO_INDEX}, 1, JS_PLACEMENT_NO_LEADER, 0, 0},
	{"empty-node-name-is-unbound", {{"l", JOB, "0", "", NULL, false, false, false, false, false}}, 1, JS_PLACEMENT_LEADER_UNBOUND,
	 0, 1},
};

static void test_find_leader(void **state)
{
	(void)state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(leader_cases); i++) {
		const struct leader_case *c = &leader_cases[i];
		size_t leader = 99, count = 99;
		enum js_placement_why got = js_placement_find_leader(c->pods, c->n, JOB, &leader, &count);
		if (got != c->want || count != c->count)
			fail_msg("%s: why %d count %zu, want %d count %zu", c->id, got, count, c->want, c->count);
		if ((got == JS_PLACEMENT_READY || got == JS_PLACEMENT_LEADER_UNBOUND) && leader != c->leader)
			fail_msg("%s: leader %zu, want %zu", c->id, leader, c->leader);
	}
}

struct domain_case {
	const char *id;
	bool found;
	const char *value;
	enum js_placement_why want;
};

static const struct domain_case domain_cases[] = {
	{"labelled", true, "zone-1", JS_PLACEMENT_READY},
	/* #1088: never inject an empty or unknown domain. */
	{"1088-node-deleted", false, NULL, JS_PLACEMENT_NODE_GONE},
	{"1088-deleted-even-with-value", false, "zone-1", JS_PLACEMENT_NODE_GONE},
	{"1088-no-label", true, NULL, JS_PLACEMENT_NODE_NO_LABEL},
	{"1088-empty-value", true, "", JS_PLACEMENT_NODE_EMPTY},
};

static void test_domain(void **state)
{
	(void)state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(domain_cases); i++) {
		const struct domain_case *c = &domain_cases[i];
		const char *domain = "sentinel";
		enum js_placement_why got = js_placement_domain(c->found, c->value, &domain);
		if (got != c->want)
			fail_msg("%s: why %d, want %d", c->id, got, c->want);
		if (got == JS_PLACEMENT_READY ? strcmp(domain, c->value) != 0 : domain != NULL)
			fail_msg("%s: domain '%s'", c->id, domain ? domain : "(null)");
	}
}

struct follower_case {
	const char *id;
	struct js_placement_pod pod;
	const char *domain;
	enum js_placement_act want;
};

static const struct follower_case follower_cases[] = {
	{"gated-ungated", FOLLOWER_GATED, "zone-1", JS_PLACEMENT_UNGATE},
	{"gated-same-selector-ungated", {"f", JOB, "1", NULL, "zone-1", false, false, true, false, false}, "zone-1",
	 JS_PLACEMENT_UNGATE},
	{"gated-waits-without-domain", FOLLOWER_GATED, NULL, JS_PLACEMENT_WAIT},
	{"placed-kept", {"f", JOB, "2", "n1", "zone-1", false, false, false, false, false}, "zone-1", JS_PLACEMENT_KEEP},
	{"placed-kept-without-domain", {"f", JOB, "2", "n1", "zone-1", false, false, false, false, false}, NULL, JS_PLACEMENT_KEEP},
	/* #1269: pinned to another domain than the leader's: repaired. */
	{"1269-placed-elsewhere-repaired", {"f", JOB, "1", "n9", "zone-9", false, false, false, false, false}, "zone-1",
	 JS_PLACEMENT_REPAIR},
	{"1269-gated-elsewhere-repaired", {"f", JOB, "1", NULL, "zone-9", false, false, true, false, false}, "zone-1",
	 JS_PLACEMENT_REPAIR},
	{"1269-ungated-no-selector-repaired", {"f", JOB, "1", "n9", NULL, false, false, false, false, false}, "zone-1",
	 JS_PLACEMENT_REPAIR},
	{"leader-kept", LEADER_BOUND, "zone-1", JS_PLACEMENT_KEEP},
	{"terminal-follower-kept", {"f", JOB, "1", "n9", "zone-9", true, false, false, false, false}, "zone-1", JS_PLACEMENT_KEEP},
	{"terminating-follower-kept", {"f", JOB, "1", NULL, NULL, false, true, true, false, false}, "zone-1", JS_PLACEMENT_KEEP},
	{"other-job-kept", {"f", "old-job-uid", "1", NULL, NULL, false, false, true, false, false}, "zone-1", JS_PLACEMENT_KEEP},
	/* The elected leader has no selector and is not repaired for it;
	 * one still gated is an ordinary follower. */
	{"elected-kept", ELECTED("f1", "1", "n3"), "zone-1", JS_PLACEMENT_KEEP},
	{"elected-gated-ungated", {"f1", JOB, "1", NULL, NULL, false, false, true, false, true}, "zone-1",
	 JS_PLACEMENT_UNGATE},
};

static void test_follower(void **state)
{
	(void)state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(follower_cases); i++) {
		const struct follower_case *c = &follower_cases[i];
		enum js_placement_act got = js_placement_follower(&c->pod, JOB, c->domain);
		if (got != c->want)
			fail_msg("%s: act %d, want %d", c->id, got, c->want);
	}
}

struct followers_case {
	const char *id;
	struct js_placement_pod pods[4];
	size_t n;
	enum js_placement_why want;
	const char *domain; /* when READY */
};

/* The placed followers of a Job with no leader pod (core/placement.h). */
#define PLACED(name, node, zone) {name, JOB, "1", node, zone, false, false, false, false, false}
#define SUCCEEDED(name, zone) {name, JOB, "2", "n1", zone, true, false, false, true, false}
#define FAILED(name, zone) {name, JOB, "1", "n1", zone, true, false, false, false, false}

static const struct followers_case followers_cases[] = {
	/* tests/chaos, seed 20261205: index 0 succeeded, its pod deleted, a
	 * follower retried: it follows the followers already placed. */
	{"finished-leader-deleted", {FOLLOWER_GATED, PLACED("f2", "n1", "zone-1")}, 2, JS_PLACEMENT_READY, "zone-1"},
	{"only-succeeded-followers", {FOLLOWER_GATED, SUCCEEDED("f2", "zone-1")}, 2, JS_PLACEMENT_READY, "zone-1"},
	/* Two pods: the retried follower's failed predecessor is the witness. */
	{"failed-follower-ran-there", {FOLLOWER_GATED, FAILED("f1", "zone-1")}, 2, JS_PLACEMENT_READY, "zone-1"},
	{"all-agree", {PLACED("f2", "n1", "zone-1"), SUCCEEDED("f3", "zone-1"), FOLLOWER_GATED}, 3, JS_PLACEMENT_READY,
	 "zone-1"},
	{"split-waits", {PLACED("f2", "n1", "zone-1"), PLACED("f3", "n9", "zone-9"), FOLLOWER_GATED}, 3,
	 JS_PLACEMENT_FOLLOWERS_SPLIT, NULL},
	{"none-placed", {FOLLOWER_GATED}, 1, JS_PLACEMENT_NO_LEADER, NULL},
	{"no-pods", {{0}}, 0, JS_PLACEMENT_NO_LEADER, NULL},
	/* Not witnesses: pinned but not bound (the scheduler never placed it
	 * there), gated (not placed by us), terminating, of another incarnation
	 * of the Job (#433), the leader itself, or with no or an empty
	 * selector. */
	{"unbound-not-witness", {PLACED("f2", NULL, "zone-1"), FOLLOWER_GATED}, 2, JS_PLACEMENT_NO_LEADER, NULL},
	{"gated-not-witness", {{"f2", JOB, "2", NULL, "zone-1", false, false, true, false, false}}, 1, JS_PLACEMENT_NO_LEADER,
	 NULL},
	{"terminating-not-witness", {{"f2", JOB, "2", "n1", "zone-1", false, true, false, false, false}, FOLLOWER_GATED}, 2,
	 JS_PLACEMENT_NO_LEADER, NULL},
	{"433-old-job-not-witness", {{"f2", "old-job-uid", "2", "n1", "zone-1", false, false, false, false, false},
				     FOLLOWER_GATED},
	 2, JS_PLACEMENT_NO_LEADER, NULL},
	{"leader-not-witness", {{"l", JOB, "0", "n1", "zone-1", false, false, false, false, false}}, 1, JS_PLACEMENT_NO_LEADER,
	 NULL},
	{"no-selector-not-witness", {PLACED("f2", "n1", NULL), PLACED("f3", "n1", ""), FOLLOWER_GATED}, 3,
	 JS_PLACEMENT_NO_LEADER, NULL},
};

static void test_followers_domain(void **state)
{
	(void)state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(followers_cases); i++) {
		const struct followers_case *c = &followers_cases[i];
		const char *domain = "sentinel";
		enum js_placement_why got = js_placement_followers_domain(c->pods, c->n, JOB, &domain);
		if (got != c->want)
			fail_msg("%s: why %d, want %d", c->id, got, c->want);
		if (c->domain ? !domain || strcmp(domain, c->domain) != 0 : domain != NULL)
			fail_msg("%s: domain '%s', want '%s'", c->id, domain ? domain : "(null)",
				 c->domain ? c->domain : "(null)");
		/* With that domain the gated follower is ungated (the stall). */
		for (size_t k = 0; got == JS_PLACEMENT_READY && k < c->n; k++)
			if (c->pods[k].gated && js_placement_follower(&c->pods[k], JOB, domain) != JS_PLACEMENT_UNGATE)
				fail_msg("%s: gated follower %s not ungated", c->id, c->pods[k].name);
	}
}

struct elect_case {
	const char *id;
	struct js_placement_pod pods[4];
	size_t n;
	bool index0_done;
	bool want;
	size_t at; /* when want */
};

/* Whom js_placement_elect picks, and when it must not. */
static const struct elect_case elect_cases[] = {
	/* tests/chaos seed 4242 (excl-76): suspended and resumed after index 0
	 * finished; every follower is new and gated. */
	{"lowest-index-elected", {GATED("f3", "3"), GATED("f1", "1"), GATED("f2", "2")}, 3, true, true, 1},
	{"index-0-not-done-waits", {GATED("f1", "1"), GATED("f2", "2")}, 2, false, false, 0},
	{"already-elected", {ELECTED("f2", "2", NULL), GATED("f1", "1")}, 2, true, false, 0},
	{"elected-gone-elect-again", {{"f2", JOB, "2", "n3", NULL, true, false, false, false, true}, GATED("f1", "1")}, 2,
	 true, true, 1},
	{"no-gated-follower", {{"f1", JOB, "1", "n3", "zone-1", false, false, false, false, false}}, 1, true, false, 0},
	{"no-pods", {{0}}, 0, true, false, 0},
	/* Not candidates: a leader pod, one terminating, of another
	 * incarnation, or with an index that is not a number (edited). */
	{"leader-not-candidate", {{"l", JOB, "0", NULL, NULL, false, false, true, false, false}}, 1, true, false, 0},
	{"terminating-not-candidate", {{"f1", JOB, "1", NULL, NULL, false, true, true, false, false}}, 1, true, false, 0},
	{"old-job-not-candidate", {{"f1", "old-job-uid", "1", NULL, NULL, false, false, true, false, false}}, 1, true, false, 0},
	{"garbled-index-skipped", {GATED("fx", "1x"), GATED("fy", NULL), GATED("f9", "9")}, 3, true, true, 2},
	{"huge-index-skipped", {GATED("fx", "99999999999"), GATED("f7", "7")}, 2, true, true, 1},
};

static void test_elect(void **state)
{
	(void)state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(elect_cases); i++) {
		const struct elect_case *c = &elect_cases[i];
		size_t at = 99;
		bool got = js_placement_elect(c->pods, c->n, JOB, c->index0_done, &at);
		if (got != c->want || (got && at != c->at))
			fail_msg("%s: elect %d at %zu, want %d at %zu", c->id, got, at, c->want, c->at);
	}
}

/* status.completedIndexes: index 0 done only as the first interval. */
static void test_completed_index0(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		bool want;
	} cases[] = {
		{"0", true}, {"0-3", true}, {"0,2", true}, {"0-3,5,7-9", true}, {NULL, false}, {"", false},
		{"1-3", false}, {"10", false}, {"00", false}, {"x", false}, {"01", false},
	};
	for (size_t i = 0; i < JS_ARRAY_SIZE(cases); i++)
		if (js_job_completed_index0(cases[i].in) != cases[i].want)
			fail_msg("'%s': want %d", cases[i].in ? cases[i].in : "(null)", cases[i].want);
}

struct explain_case {
	enum js_placement_why why;
	const char *want; /* substring */
};

/* #1187: every reason in plain words, naming what the user should look at. */
static const struct explain_case explain_cases[] = {
	{JS_PLACEMENT_NO_LEADER, "none is running or pending"},
	{JS_PLACEMENT_LEADERS, "more than one live leader pod"},
	{JS_PLACEMENT_LEADER_UNBOUND, "waiting for leader pod js-rj-0-0-abcde to be scheduled"},
	{JS_PLACEMENT_NODE_GONE, "node n1 of leader pod js-rj-0-0-abcde does not exist"},
	{JS_PLACEMENT_NODE_NO_LABEL, "node n1 of leader pod js-rj-0-0-abcde has no label topology.kubernetes.io/zone"},
	{JS_PLACEMENT_NODE_EMPTY, "has an empty value for label topology.kubernetes.io/zone"},
	{JS_PLACEMENT_READY, "joins its topology.kubernetes.io/zone domain"},
	{JS_PLACEMENT_NO_TOPOLOGY, "names no topology key (annotation alpha.jobset.sigs.k8s.io/exclusive-topology)"},
	{JS_PLACEMENT_FOLLOWERS_SPLIT, "pinned to different topology.kubernetes.io/zone domains"},
};

static void test_explain(void **state)
{
	(void)state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(explain_cases); i++) {
		struct js_buf b;
		js_buf_init(&b, 1024);
		assert_int_equal(js_placement_explain(explain_cases[i].why, "js-rj-0-0-abcde", "n1",
						      "topology.kubernetes.io/zone", &b),
				 0);
		if (!strstr(js_buf_str(&b), explain_cases[i].want))
			fail_msg("why %d: '%s' lacks '%s'", explain_cases[i].why, js_buf_str(&b), explain_cases[i].want);
		js_buf_done(&b);
	}
	/* Unknown names never print "(null)". */
	struct js_buf b;
	js_buf_init(&b, 1024);
	assert_int_equal(js_placement_explain(JS_PLACEMENT_NODE_GONE, NULL, NULL, NULL, &b), 0);
	assert_null(strstr(js_buf_str(&b), "(null)"));
	js_buf_done(&b);
}

/* ---- the topology key comes from the JobSet (issue 22) ----
 *
 * A follower whose pod annotation was removed or edited once crashed the
 * controller: the key was read from the pod. It is the JobSet's: the Job
 * template's annotation of the pod's ReplicatedJob, else the JobSet's. */

#define EXCL "\"alpha.jobset.sigs.k8s.io/exclusive-topology\""

struct topo_case {
	const char *id;
	const char *patch;     /* merge patch on a JobSet of ReplicatedJobs a and b */
	const char *rjob_name; /* the Job's replicatedjob-name label, NULL absent */
	const char *want;      /* NULL: none */
};

static const struct topo_case topo_cases[] = {
	{"jobset-annotation", "{\"metadata\":{\"annotations\":{" EXCL ":\"zone\"}}}", "a", "zone"},
	{"rjob-annotation", "{\"spec\":{\"replicatedJobs\":[{\"name\":\"a\",\"template\":{\"metadata\":"
			    "{\"annotations\":{" EXCL ":\"rack\"}},\"spec\":{}}},{\"name\":\"b\",\"template\":"
			    "{\"spec\":{}}}]}}",
	 "a", "rack"},
	{"rjob-without-its-own", "{\"spec\":{\"replicatedJobs\":[{\"name\":\"a\",\"template\":{\"metadata\":"
				 "{\"annotations\":{" EXCL ":\"rack\"}},\"spec\":{}}},{\"name\":\"b\",\"template\":"
				 "{\"spec\":{}}}]}}",
	 "b", NULL},
	{"rjob-wins-over-jobset", "{\"metadata\":{\"annotations\":{" EXCL ":\"zone\"}},\"spec\":{\"replicatedJobs\":"
				  "[{\"name\":\"a\",\"template\":{\"metadata\":{\"annotations\":{" EXCL
				  ":\"rack\"}},\"spec\":{}}},{\"name\":\"b\",\"template\":{\"spec\":{}}}]}}",
	 "a", "rack"},
	{"rjob-falls-back-to-jobset", "{\"metadata\":{\"annotations\":{" EXCL ":\"zone\"}},\"spec\":{\"replicatedJobs\":"
				      "[{\"name\":\"a\",\"template\":{\"metadata\":{\"annotations\":{" EXCL
				      ":\"rack\"}},\"spec\":{}}},{\"name\":\"b\",\"template\":{\"spec\":{}}}]}}",
	 "b", "zone"},
	/* The Job's label edited away or to garbage: the key every
	 * ReplicatedJob agrees on, else none. */
	{"label-removed-all-agree", "{\"metadata\":{\"annotations\":{" EXCL ":\"zone\"}}}", NULL, "zone"},
	{"label-garbage-all-agree", "{\"metadata\":{\"annotations\":{" EXCL ":\"zone\"}}}", "no-such", "zone"},
	{"label-removed-disagree", "{\"metadata\":{\"annotations\":{" EXCL ":\"zone\"}},\"spec\":{\"replicatedJobs\":"
				   "[{\"name\":\"a\",\"template\":{\"metadata\":{\"annotations\":{" EXCL
				   ":\"rack\"}},\"spec\":{}}},{\"name\":\"b\",\"template\":{\"spec\":{}}}]}}",
	 NULL, NULL},
	{"pod-template-annotation", "{\"spec\":{\"replicatedJobs\":[{\"name\":\"a\",\"template\":{\"spec\":{\"template\":"
				    "{\"metadata\":{\"annotations\":{" EXCL ":\"host\"}}}}}},{\"name\":\"b\",\"template\":{\"spec\":{}}}]}}",
	 "a", "host"},
	{"jobset-wins-over-pod-template", "{\"metadata\":{\"annotations\":{" EXCL ":\"zone\"}},\"spec\":{\"replicatedJobs\":"
					  "[{\"name\":\"a\",\"template\":{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{"
					  EXCL ":\"host\"}}}}}},{\"name\":\"b\",\"template\":{\"spec\":{}}}]}}",
	 "a", "zone"},
	{"not-exclusive", NULL, "a", NULL},
	{"empty-is-none", "{\"metadata\":{\"annotations\":{" EXCL ":\"\"}}}", "a", NULL},
};

static void test_topology(void **state)
{
	(void)state;
	assert_null(js_placement_topology(NULL, "a"));
	for (size_t i = 0; i < JS_ARRAY_SIZE(topo_cases); i++) {
		const struct topo_case *c = &topo_cases[i];
		json_t *j = tu_yaml("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js}\n"
				    "spec:\n  replicatedJobs:\n"
				    "  - {name: a, template: {spec: {template: {spec: {containers: [{name: c, image: i}]}}}}}\n"
				    "  - {name: b, template: {spec: {template: {spec: {containers: [{name: c, image: i}]}}}}}\n");
		if (c->patch) {
			/* replicatedJobs is a list: patch the templates' metadata
			 * in, keeping each ReplicatedJob's pod template. */
			json_t *p = json_loads(c->patch, 0, NULL);
			assert_non_null(p);
			json_t *rjs = js_json_path(p, "spec.replicatedJobs");
			for (size_t k = 0; k < json_array_size(rjs); k++) {
				json_t *rj = json_array_get(js_json_path(j, "spec.replicatedJobs"), k);
				json_t *md = js_json_path(json_array_get(rjs, k), "template.metadata");
				if (md)
					json_object_set(js_json_path_make(rj, "template"), "metadata", md);
				json_t *pmd = js_json_path(json_array_get(rjs, k), "template.spec.template.metadata");
				if (pmd)
					json_object_set(js_json_path_make(rj, "template.spec.template"), "metadata", pmd);
			}
			json_t *meta = json_object_get(p, "metadata");
			if (meta)
				json_object_update_recursive(json_object_get(j, "metadata"), meta);
			json_decref(p);
		}
		struct js_jobset *js = tu_decode(j);
		const char *got = js_placement_topology(js, c->rjob_name);
		if (!(got == c->want || (got && c->want && strcmp(got, c->want) == 0)))
			fail_msg("%s: key '%s', want '%s'", c->id, got ? got : "(none)", c->want ? c->want : "(none)");
		js_jobset_free(js);
		json_decref(j);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_leader),
		cmocka_unit_test(test_domain),
		cmocka_unit_test(test_followers_domain),
		cmocka_unit_test(test_follower),
		cmocka_unit_test(test_elect),
		cmocka_unit_test(test_completed_index0),
		cmocka_unit_test(test_explain),
		cmocka_unit_test(test_topology),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
