/*
 * extremes_test.c - issue 22: "any number the schema allows will be used,
 * the largest included". One row per extreme but schema-valid value: the
 * JobSet is either refused by validation (the webhook, `jobset validate`,
 * `jobset run`) with the field path and a message naming the bound, or
 * accepted; and either way one reconcile of it - as the controller runs
 * one that never met the webhook - plans a bounded number of actions, and
 * a JobSet over a size bound of base/limits.h fails with LimitExceeded
 * and creates nothing. Memory is bounded by construction here: a plan
 * linear in replicas would have 2,000,000,000 actions (issue 22: 0.45 GB/s).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/codec.h"
#include "api/defaults.h"
#include "api/validate.h"
#include "base/limits.h"
#include "core/job.h"
#include "core/reconcile.h"
#include "support/testutil.h"

static const char base_yaml[] = "apiVersion: jobset.x-k8s.io/v1alpha2\n"
				"kind: JobSet\n"
				"metadata: {name: x, namespace: ns, uid: uid-x}\n"
				"spec:\n"
				"  replicatedJobs:\n"
				"  - name: w\n"
				"    replicas: 1\n"
				"    template:\n"
				"      spec:\n"
				"        completionMode: Indexed\n"
				"        completions: 1\n"
				"        parallelism: 1\n"
				"        template:\n"
				"          spec:\n"
				"            restartPolicy: Never\n"
				"            containers: [{name: c, image: i}]\n";

/* ---- builders: each edits the base JobSet for its row ---- */

static json_t *rjob(json_t *js, size_t i)
{
	return json_array_get(json_object_get(json_object_get(js, "spec"), "replicatedJobs"), i);
}

/* `n` ReplicatedJobs r0..r{n-1}; with `chain`, each depends on the one
 * before it. */
static void many_rjobs(json_t *js, long long n, bool chain)
{
	json_t *list = json_array(), *proto = rjob(js, 0);
	for (long long i = 0; i < n; i++) {
		json_t *r = json_deep_copy(proto);
		char name[24];
		snprintf(name, sizeof(name), "r%lld", i);
		json_object_set_new(r, "name", json_string(name));
		if (chain && i > 0) {
			char dep[24];
			snprintf(dep, sizeof(dep), "r%lld", i - 1);
			json_object_set_new(r, "dependsOn", json_pack("[{s:s,s:s}]", "name", dep, "status", "Complete"));
		}
		json_array_append_new(list, r);
	}
	json_object_set_new(json_object_get(js, "spec"), "replicatedJobs", list);
}

static void b_replicas(json_t *js, long long n)
{
	json_object_set_new(rjob(js, 0), "replicas", json_integer(n));
}

static void b_rjobs(json_t *js, long long n)
{
	many_rjobs(js, n, false);
}

static void b_chain(json_t *js, long long n)
{
	many_rjobs(js, n, true);
}

/* `n` rules; rule i is named r<i> and restarts the JobSet. */
static void b_rules(json_t *js, long long n)
{
	json_t *rules = json_array();
	for (long long i = 0; i < n; i++) {
		char name[24];
		snprintf(name, sizeof(name), "r%lld", i);
		json_array_append_new(rules, json_pack("{s:s,s:s,s:[s]}", "name", name, "action", "RestartJobSet",
						       "onJobFailureReasons", "DeadlineExceeded"));
	}
	json_object_set_new(json_object_get(js, "spec"), "failurePolicy", json_pack("{s:i,s:o}", "maxRestarts", 3, "rules", rules));
}

/* `n` strings: `same` each time, or "^never-<i>$" when it is NULL. */
static json_t *strings(long long n, const char *same)
{
	json_t *a = json_array();
	for (long long i = 0; i < n; i++) {
		char s[48];
		snprintf(s, sizeof(s), "^never-%lld$", i);
		json_array_append_new(a, json_string(same ? same : s));
	}
	return a;
}

/* One FailJobSet rule with `n` message patterns; none matches. */
static void b_patterns(json_t *js, long long n)
{
	json_object_set_new(json_object_get(js, "spec"), "failurePolicy",
			    json_pack("{s:[{s:s,s:s,s:o}]}", "rules", "name", "p", "action", "FailJobSet",
				      "onJobFailureMessagePatterns", strings(n, NULL)));
}

/* One pattern of `n` bytes (a literal: RE2 compiles it in linear time). */
static void b_long_pattern(json_t *js, long long n)
{
	char *p = malloc((size_t)n + 1);
	memset(p, 'a', (size_t)n);
	p[n] = '\0';
	json_object_set_new(json_object_get(js, "spec"), "failurePolicy",
			    json_pack("{s:[{s:s,s:s,s:[s]}]}", "rules", "name", "p", "action", "FailJobSet",
				      "onJobFailureMessagePatterns", p));
	free(p);
}

/* One rule targeting `n` names (all "w": duplicates are not refused). */
static void b_targets(json_t *js, long long n)
{
	json_object_set_new(json_object_get(js, "spec"), "failurePolicy",
			    json_pack("{s:[{s:s,s:s,s:o}]}", "rules", "name", "t", "action", "FailJobSet",
				      "targetReplicatedJobs", strings(n, "w")));
}

static void b_success_targets(json_t *js, long long n)
{
	json_object_set_new(json_object_get(js, "spec"), "successPolicy",
			    json_pack("{s:s,s:o}", "operator", "All", "targetReplicatedJobs", strings(n, "w")));
}

/* `n` labels and as many annotations on the pod template. */
static void b_labels(json_t *js, long long n)
{
	json_t *md = json_object(), *l = json_object(), *a = json_object();
	for (long long i = 0; i < n; i++) {
		char k[48];
		snprintf(k, sizeof(k), "example.com/k%lld", i);
		json_object_set_new(l, k, json_string("v"));
		json_object_set_new(a, k, json_string("a value"));
	}
	json_object_set_new(md, "labels", l);
	json_object_set_new(md, "annotations", a);
	json_t *pod = json_object_get(json_object_get(json_object_get(rjob(js, 0), "template"), "spec"), "template");
	json_object_set_new(pod, "metadata", md);
}

/* A JobSet name of `n` characters. */
static void b_name(json_t *js, long long n)
{
	char *p = malloc((size_t)n + 1);
	memset(p, 'a', (size_t)n);
	p[n] = '\0';
	json_object_set_new(json_object_get(js, "metadata"), "name", json_string(p));
	free(p);
}

/* ---- the table ---- */

#define I32MAX "2147483647"
#define I64MAX "9223372036854775807"

enum {
	F_FAILED_JOB = 1,   /* observe x-w-0 of the current attempt, failed */
	F_RESTART_JOB = 2,  /* gate RestartJob */
	F_DEADLINE = 4,     /* gate JobSetActiveDeadlineSeconds */
	F_LOOSE = 8,        /* upstream's checks only */
	F_SCHED = 16,       /* gate JobSetWorkloadAwareSchedulingAPI */
	F_JOB_ATTEMPT_MAX = 32, /* the failed Job's per-Job attempt is 2147483647 */
};

struct row {
	const char *name;
	const char *patch;                  /* merge patch on the base, or NULL */
	const char *job_patch;              /* merge patch on replicatedJobs[0].template.spec */
	void (*build)(json_t *, long long); /* then this, or NULL */
	long long arg;
	unsigned flags;
	/* validation: NULL path = accepted */
	const char *path, *needle;
	/* one reconcile */
	size_t max_actions;
	const char *fail_reason; /* Failed=True with this reason, or NULL: not failed */
	const char *fail_needle; /* ... and this in its message */
	bool requeue;            /* a requeue, after a positive delay */
};

#define LIMIT .fail_reason = "LimitExceeded"

static const struct row rows[] = {
	/* Over a size bound: refused; the core fails it and creates nothing. */
	{.name = "replicas 2,000,000,000", .build = b_replicas, .arg = 2000000000,
	 .path = "spec.replicatedJobs[0].replicas",
	 .needle = "would have 2000000000 child Jobs (replicas summed over its ReplicatedJobs); at most 100000 are allowed",
	 LIMIT, .fail_needle = "spec.replicatedJobs[0].replicas: Invalid value: 2000000000"},
	{.name = "replicas 2147483647", .build = b_replicas, .arg = INT32_MAX, .path = "spec.replicatedJobs[0].replicas",
	 .needle = "at most 100000 are allowed", LIMIT, .fail_needle = "would have 2147483647 child Jobs"},
	{.name = "replicas 100,001", .build = b_replicas, .arg = 100001, .path = "spec.replicatedJobs[0].replicas",
	 .needle = "at most 100000", LIMIT, .fail_needle = "100001"},
	{.name = "1,001 ReplicatedJobs", .build = b_rjobs, .arg = 1001, .path = "spec.replicatedJobs",
	 .needle = "has 1001 ReplicatedJobs; at most 1000", LIMIT, .fail_needle = "at most 1000"},
	{.name = "101 failure-policy rules", .build = b_rules, .arg = 101, .path = "spec.failurePolicy.rules",
	 .needle = "has 101 rules; at most 100", LIMIT, .fail_needle = "rules"},
	{.name = "1,001 message patterns", .build = b_patterns, .arg = 1001,
	 .path = "spec.failurePolicy.rules[0].onJobFailureMessagePatterns", .needle = "at most 1000", LIMIT,
	 .fail_needle = "message patterns"},
	{.name = "a message pattern of 4,097 bytes", .build = b_long_pattern, .arg = 4097,
	 .path = "spec.failurePolicy.rules[0].onJobFailureMessagePatterns[0]", .needle = "at most 4096 bytes long, not 4097",
	 LIMIT, .fail_needle = "4096"},
	{.name = "1,001 targetReplicatedJobs of a rule", .build = b_targets, .arg = 1001,
	 .path = "spec.failurePolicy.rules[0].targetReplicatedJobs", .needle = "has 1001 entries", LIMIT,
	 .fail_needle = "1001"},
	{.name = "1,001 successPolicy targets", .build = b_success_targets, .arg = 1001,
	 .path = "spec.successPolicy.targetReplicatedJobs", .needle = "has 1001 entries", LIMIT, .fail_needle = "1001"},

	/* At the bounds: accepted, and a pass plans each missing Job once. */
	{.name = "replicas 100,000", .build = b_replicas, .arg = 100000, .max_actions = 100001},
	{.name = "1,000 ReplicatedJobs", .build = b_rjobs, .arg = 1000, .max_actions = 1001},
	{.name = "dependsOn chain of 1,000", .build = b_chain, .arg = 1000, .max_actions = 2},
	{.name = "100 rules, one Job failed", .build = b_rules, .arg = 100, .flags = F_FAILED_JOB, .max_actions = 2},
	{.name = "1,000 message patterns, one Job failed", .build = b_patterns, .arg = 1000, .flags = F_FAILED_JOB,
	 .max_actions = 2},
	{.name = "a message pattern of 4,096 bytes, one Job failed", .build = b_long_pattern, .arg = 4096,
	 .flags = F_FAILED_JOB, .max_actions = 2},
	{.name = "1,000 rule targets", .build = b_targets, .arg = 1000, .max_actions = 2},
	{.name = "10,000 pod labels and annotations", .build = b_labels, .arg = 10000, .max_actions = 2},

	/* Counters and durations at their type's maximum. */
	{.name = "maxRestarts 2147483647, one Job failed",
	 .patch = "{\"spec\":{\"failurePolicy\":{\"maxRestarts\":" I32MAX "}}}", .flags = F_FAILED_JOB, .max_actions = 2},
	{.name = "restarts at 2147483647 and a restart ignoring the maximum",
	 .patch = "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"name\":\"r\",\"action\":\"RestartJobSetAndIgnoreMaxRestarts\"}]}},"
		  "\"status\":{\"restarts\":" I32MAX "}}",
	 .flags = F_FAILED_JOB, .max_actions = 2, .fail_reason = "ReachedMaxRestarts",
	 .fail_needle = "status.restarts is 2147483647"},
	{.name = "restarts at 2147483647 and a restart request",
	 .patch = "{\"metadata\":{\"annotations\":{\"jobset.sigs.k8s.io/restart-request\":\"" I32MAX "\"}},"
		  "\"status\":{\"restarts\":" I32MAX "}}",
	 .max_actions = 2, .fail_reason = "ReachedMaxRestarts", .fail_needle = "no further restart can be numbered"},
	{.name = "a jobRestarts entry at 2147483647 and RestartJobAndIgnoreMaxRestarts",
	 .patch = "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"name\":\"r\",\"action\":\"RestartJobAndIgnoreMaxRestarts\"}]}},"
		  "\"status\":{\"replicatedJobsStatus\":[{\"name\":\"w\",\"ready\":0,\"succeeded\":0,\"failed\":1,"
		  "\"active\":0,\"suspended\":0,\"jobRestarts\":[" I32MAX "]}]}}",
	 .flags = F_FAILED_JOB | F_RESTART_JOB | F_JOB_ATTEMPT_MAX, .max_actions = 2, .fail_reason = "ReachedMaxRestarts",
	 .fail_needle = "jobRestarts"},
	{.name = "parallelism, completions and backoffLimit 2147483647 (NonIndexed)",
	 .job_patch = "{\"completionMode\":\"NonIndexed\",\"parallelism\":" I32MAX ",\"completions\":" I32MAX
		      ",\"backoffLimit\":" I32MAX "}",
	 .max_actions = 2},
	{.name = "Indexed completions 2147483647", .job_patch = "{\"completions\":" I32MAX "}",
	 .path = "spec.replicatedJobs[0].template.spec.completions", .needle = "at most 100000", .max_actions = 2},
	{.name = "Indexed parallelism 2147483647", .job_patch = "{\"parallelism\":" I32MAX "}",
	 .path = "spec.replicatedJobs[0].template.spec.parallelism", .needle = "at most 100000", .max_actions = 2},
	{.name = "activeDeadlineSeconds 9223372036854775807",
	 .patch = "{\"spec\":{\"activeDeadlineSeconds\":" I64MAX "},\"status\":{\"startTime\":\"2023-11-14T22:13:20Z\"}}",
	 .flags = F_DEADLINE, .max_actions = 2, .requeue = true},
	{.name = "ttlSecondsAfterFinished 2147483647, finished",
	 .patch = "{\"spec\":{\"ttlSecondsAfterFinished\":" I32MAX "},\"status\":{\"terminalState\":\"Completed\","
		  "\"conditions\":[{\"type\":\"Completed\",\"status\":\"True\",\"reason\":\"AllJobsCompleted\","
		  "\"message\":\"m\",\"lastTransitionTime\":\"2023-11-14T22:13:20Z\"}]}}",
	 .requeue = true},
	{.name = "coordinator jobIndex 2147483647",
	 .patch = "{\"spec\":{\"coordinator\":{\"replicatedJob\":\"w\",\"jobIndex\":" I32MAX "}}}",
	 .path = "spec.coordinator.jobIndex", .needle = "out of range", .max_actions = 2},
	{.name = "gang minCount 2147483647",
	 .patch = "{\"spec\":{\"scheduling\":{\"policy\":{\"gang\":{\"minCount\":" I32MAX "}}}}}", .flags = F_SCHED,
	 .path = "spec.scheduling.policy.gang.minCount", .needle = "more than the 1 pods", .max_actions = 4},

	/* Names at the length limits. */
	{.name = "JobSet name of 253 characters", .build = b_name, .arg = 253, .path = "spec.replicatedJobs[0].name",
	 .needle = "child Job names would be 257 characters, over the limit of 63", .max_actions = 2},
	{.name = "JobSet name whose Job names are 64", .build = b_name, .arg = 60, .flags = F_LOOSE,
	 .job_patch = "{\"completionMode\":\"NonIndexed\"}",
	 .path = "spec.replicatedJobs[0].name", .needle = "child Job names would be 64", .max_actions = 2},
	{.name = "JobSet name whose Job names are 63", .build = b_name, .arg = 59, .flags = F_LOOSE,
	 .job_patch = "{\"completionMode\":\"NonIndexed\"}", .max_actions = 2},
	{.name = "JobSet name whose pod hostnames are too long", .build = b_name, .arg = 59,
	 .path = "spec.replicatedJobs[0].name", .needle = "pod names would be", .max_actions = 2},
};

static const struct js_jobcond failed_cond[] = {
	{.type = "Failed", .status = "True", .reason = "BackoffLimitExceeded", .message = "boom"}};

static bool check_validation(const struct row *rw, const struct js_jobset *js)
{
	struct js_diag d;
	js_diag_init(&d);
	struct js_validate_opts o = {.gates = {.restart_job = rw->flags & F_RESTART_JOB,
					       .active_deadline = rw->flags & F_DEADLINE,
					       .workload_aware_scheduling = rw->flags & F_SCHED},
				     .strict = !(rw->flags & F_LOOSE)};
	int r = js_validate_create(js, &o, &d);
	bool ok = rw->path ? r == JS_EINVALID && js_diag_has(&d, rw->path, rw->needle) : r == 0;
	if (!ok) {
		fprintf(stderr, "FAIL %s: expected %s %s: ...%s...; got %s\n", rw->name, rw->path ? "invalid with" : "valid",
			rw->path ? rw->path : "", rw->needle ? rw->needle : "", r ? "invalid" : "valid");
		tu_print_diag(&d);
	}
	js_diag_done(&d);
	return ok;
}

static const struct js_condition *failed(const struct js_plan *p)
{
	for (size_t i = 0; i < p->status->n_conditions; i++)
		if (strcmp(p->status->conditions[i].type, "Failed") == 0 &&
		    strcmp(p->status->conditions[i].status, "True") == 0)
			return &p->status->conditions[i];
	return NULL;
}

static bool check_reconcile(const struct row *rw, const struct js_jobset *js)
{
	char attempt[16];
	snprintf(attempt, sizeof(attempt), "%" PRId32, js->has_status ? js->status.restarts : 0);
	const struct js_obsjob *jobs[1] = {NULL};
	size_t n_jobs = 0;
	if (rw->flags & F_FAILED_JOB)
		jobs[n_jobs++] = js_job_build(&(struct js_obsjob_init){
			.job = {.name = "x-w-0", .uid = "j", .owner_uid = "uid-x", .rjob_name = "w", .job_index = "0",
				.restart_attempt = attempt, .n_conditions = 1, .conditions = failed_cond,
				.job_restart_attempt = rw->flags & F_JOB_ATTEMPT_MAX ? I32MAX : NULL}});
	struct js_reconcile_input in = {.jobset = js,
					.jobs = jobs,
					.n_jobs = n_jobs,
					.gates = {.restart_job = rw->flags & F_RESTART_JOB,
						  .active_deadline = rw->flags & F_DEADLINE,
						  .workload_aware_scheduling = rw->flags & F_SCHED},
					.now = 1700000000};
	struct js_plan *p = NULL;
	char *err = NULL;
	bool ok = js_reconcile_run(&in, &p, &err) == 0;
	if (!ok)
		fprintf(stderr, "FAIL %s: reconcile: %s\n", rw->name, err ? err : "?");
	const struct js_condition *f = ok ? failed(p) : NULL;
	if (ok && p->n_actions > rw->max_actions) {
		fprintf(stderr, "FAIL %s: %zu actions, at most %zu expected\n", rw->name, p->n_actions, rw->max_actions);
		ok = false;
	}
	if (ok && rw->fail_reason &&
	    (!f || strcmp(f->reason, rw->fail_reason) != 0 || !strstr(f->message, rw->fail_needle))) {
		fprintf(stderr, "FAIL %s: expected Failed %s with ...%s..., got %s: %s\n", rw->name, rw->fail_reason,
			rw->fail_needle, f ? f->reason : "no Failed condition", f ? f->message : "");
		ok = false;
	}
	if (ok && rw->fail_reason) {
		/* Failed: a Warning event says so, and nothing is created. */
		bool event = false;
		for (size_t i = 0; i < p->n_events; i++)
			event |= strcmp(p->events[i].type, "Warning") == 0 && strcmp(p->events[i].reason, rw->fail_reason) == 0;
		for (size_t i = 0; i < p->n_actions; i++)
			ok &= p->actions[i].kind != JS_ACTION_CREATE_JOB && p->actions[i].kind != JS_ACTION_CREATE_SERVICE;
		if (!event || !ok)
			fprintf(stderr, "FAIL %s: a Warning event %s and no creates expected\n", rw->name, rw->fail_reason);
		ok &= event;
		ok &= p->status->restarts >= 0;
	}
	if (ok && !rw->fail_reason && f && strcmp(f->reason, "LimitExceeded") == 0) {
		fprintf(stderr, "FAIL %s: failed with %s: %s\n", rw->name, f->reason, f->message);
		ok = false;
	}
	if (ok && rw->requeue && !(p->has_requeue_after && p->requeue_after > 0)) {
		fprintf(stderr, "FAIL %s: expected a requeue after a positive delay, got %s %lld\n", rw->name,
			p->has_requeue_after ? "one" : "none", (long long)p->requeue_after);
		ok = false;
	}
	/* Each Job planned can be rendered: the last one, whose index is the
	 * largest. */
	for (size_t i = p ? p->n_actions : 0; ok && i-- > 0;)
		if (p->actions[i].kind == JS_ACTION_CREATE_JOB) {
			json_t *job = js_plan_render_job(p, &p->actions[i]);
			if (!job)
				fprintf(stderr, "FAIL %s: Job %s does not render\n", rw->name, p->actions[i].name);
			ok = job != NULL;
			json_decref(job);
			break;
		}
	free(err);
	js_reconcile_plan_free(p);
	for (size_t i = 0; i < n_jobs; i++)
		js_job_unref(jobs[i]);
	return ok;
}

static void test_extremes(void **state)
{
	(void)state;
	int failures = 0;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *rw = &rows[i];
		json_t *j = tu_yaml(base_yaml);
		tu_merge_patch(j, rw->patch);
		if (rw->job_patch) {
			json_t *spec = json_object_get(json_object_get(rjob(j, 0), "template"), "spec");
			json_t *p = json_loads(rw->job_patch, 0, NULL);
			assert_non_null(p);
			assert_int_equal(json_object_update(spec, p), 0);
			json_decref(p);
		}
		if (rw->build)
			rw->build(j, rw->arg);
		struct js_jobset *js = tu_decode(j);
		js_default_jobset(js);
		if (!check_validation(rw, js) | !check_reconcile(rw, js))
			failures++;
		js_jobset_free(js);
		json_decref(j);
	}
	fprintf(stderr, "%zu extremes, %d failed\n", sizeof(rows) / sizeof(rows[0]), failures);
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extremes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
