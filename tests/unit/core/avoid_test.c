/*
 * avoid_test.c - node quarantine across restarts (ours, gate NodeQuarantine;
 * core/avoid.c, api/quarantine.h, docs/node-quarantine.md), as tables:
 *
 *   - the core: a JobSet with rules in its annotations, its status
 *     (restarts, a NodesQuarantined condition), its Jobs (a failed one, or
 *     one of the current attempt carrying a list) and the failed pods the
 *     runtime read; expected: whether the restart waits for the pods, the
 *     new restarts, the list the plan's Jobs keep off, the condition and
 *     an event;
 *   - rendering: the annotation and the NotIn requirement merged into every
 *     nodeSelectorTerm, the user's and exclusive placement's kept;
 *   - validation: every rule value, the gate off, garbage and huge values.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/quarantine.h"
#include "api/render.h"
#include "api/validate.h"
#include "base/buf.h"
#include "base/json.h"
#include "core/job.h"
#include "core/reconcile.h"
#include "support/testutil.h"

static const char base_yaml[] = "apiVersion: jobset.x-k8s.io/v1alpha2\n"
				"kind: JobSet\n"
				"metadata: {name: q, namespace: ns, uid: uid-q}\n"
				"spec:\n"
				"  failurePolicy: {maxRestarts: 5}\n"
				"  replicatedJobs:\n"
				"  - name: w\n"
				"    replicas: 2\n"
				"    template:\n"
				"      spec:\n"
				"        completionMode: Indexed\n"
				"        completions: 1\n"
				"        parallelism: 1\n"
				"        template:\n"
				"          spec:\n"
				"            restartPolicy: Never\n"
				"            containers: [{name: c, image: i}]\n";

#define EXIT137 "{\"" JS_ANN_NQ_EXIT_CODES "\":\"134, 137\"}"
#define ALL_RULES                                                                                            \
	"{\"" JS_ANN_NQ_EXIT_CODES "\":\"137\",\"" JS_ANN_NQ_POD_CONDITIONS "\":\"DisruptionTarget\",\"" \
	JS_ANN_NQ_NODE_LOST "\":\"true\"}"
#define MARK " (node:last attempt:reason): "

static const struct js_jobcond failed_cond[] = {{.type = "Failed", .status = "True", .reason = "BackoffLimitExceeded"}};
static const int32_t code137[] = {137}, code1[] = {1};
static const char *const disrupted[] = {"DisruptionTarget"};

enum jobs { NO_JOBS, FAILED_JOB, ACTIVE_JOB };

static const struct row {
	const char *name;
	const char *annotations;   /* JSON object merged into metadata.annotations, or NULL */
	const char *spec_patch;    /* JSON merge patch of the JobSet, or NULL */
	bool gate;
	int32_t restarts;          /* status.restarts */
	enum jobs jobs;            /* q-w-0 of attempt `restarts`: failed or active */
	const char *job_list;      /* its quarantined-nodes annotation, or NULL */
	const char *cond_message;  /* a NodesQuarantined=True condition's message, or NULL */
	bool pods_known;
	struct js_failpod pods[3];
	size_t n_pods;
	/* expected */
	bool want_hold;            /* plan->want_failed_pods */
	int32_t want_restarts;
	const char *want_list;     /* text of plan->quarantine ("" = none) */
	const char *want_cond;     /* "True:<substring>" / "False" / NULL = no such condition */
	const char *want_event;    /* reason of an event, or NULL */
} rows[] = {
	{"gate off: rules ignored, the restart as ever, nothing of ours", EXIT137, NULL, false, 0, FAILED_JOB, NULL, NULL,
	 false, {{0}}, 0, false, 1, "", NULL, "RestartJobSetFailurePolicyAction"},
	{"gate on, no rules: no wait, no condition", NULL, NULL, true, 0, FAILED_JOB, NULL, NULL, false, {{0}}, 0, false, 1,
	 "", NULL, NULL},
	{"rules, pods not read: the restart waits for them", EXIT137, NULL, true, 0, FAILED_JOB, NULL, NULL, false, {{0}}, 0,
	 true, 0, "", NULL, NULL},
	{"exit code rule: the node is kept off attempt 1", EXIT137, NULL, true, 0, FAILED_JOB, NULL, NULL, true,
	 {{.name = "p0", .node = "n1", .attempt = 0, .exit_codes = code137, .n_exit_codes = 1}}, 1, false, 1,
	 "n1:1:exitCode=137", "True:attempt 1 keeps off 1 node" MARK "n1:1:exitCode=137", "NodeQuarantined"},
	{"exit code not named: no node", EXIT137, NULL, true, 0, FAILED_JOB, NULL, NULL, true,
	 {{.name = "p0", .node = "n1", .attempt = 0, .exit_codes = code1, .n_exit_codes = 1}}, 1, false, 1, "", NULL,
	 NULL},
	{"pod condition rule", ALL_RULES, NULL, true, 0, FAILED_JOB, NULL, NULL, true,
	 {{.name = "p0", .node = "n2", .conditions = disrupted, .n_conditions = 1}}, 1, false, 1,
	 "n2:1:podCondition=DisruptionTarget", "True:n2:1:podCondition=DisruptionTarget", "NodeQuarantined"},
	{"node lost rule", ALL_RULES, NULL, true, 0, FAILED_JOB, NULL, NULL, true,
	 {{.name = "p0", .node = "n3", .node_lost = true}}, 1, false, 1, "n3:1:nodeLost", "True:n3:1:nodeLost",
	 "NodeQuarantined"},
	{"node lost without its rule: no node", EXIT137, NULL, true, 0, FAILED_JOB, NULL, NULL, true,
	 {{.name = "p0", .node = "n3", .node_lost = true}}, 1, false, 1, "", NULL, NULL},
	{"three attempts", "{\"" JS_ANN_NQ_EXIT_CODES "\":\"137\",\"" JS_ANN_NQ_ATTEMPTS "\":\"3\"}", NULL, true, 0,
	 FAILED_JOB, NULL, NULL, true, {{.name = "p0", .node = "n1", .exit_codes = code137, .n_exit_codes = 1}}, 1, false,
	 1, "n1:3:exitCode=137", "True:n1:3:exitCode=137", "NodeQuarantined"},
	{"expiry: attempt 1's entry ends with it", EXIT137, NULL, true, 1, FAILED_JOB, "n1:1:exitCode=137",
	 "attempt 1 keeps off 1 node" MARK "n1:1:exitCode=137", true, {{0}}, 0, false, 2, "", "False", NULL},
	{"carried over and merged: an old entry lives on, a new node joins", EXIT137, NULL, true, 1, FAILED_JOB,
	 "n1:2:exitCode=137", NULL, true,
	 {{.name = "p0", .node = "n2", .attempt = 1, .exit_codes = code137, .n_exit_codes = 1},
	  {.name = "p1", .node = "n2", .attempt = 1, .exit_codes = code137, .n_exit_codes = 1}},
	 2, false, 2, "n1:2:exitCode=137,n2:2:exitCode=137", "True:attempt 2 keeps off 2 nodes", "NodeQuarantined"},
	{"a pod of another attempt blames nothing", EXIT137, NULL, true, 1, FAILED_JOB, NULL, NULL, true,
	 {{.name = "p0", .node = "n1", .attempt = 0, .exit_codes = code137, .n_exit_codes = 1}}, 1, false, 2, "", NULL,
	 NULL},
	{"garbage node names are ignored", EXIT137, NULL, true, 0, FAILED_JOB, NULL, NULL, true,
	 {{.name = "p0", .node = "Not A Node!", .exit_codes = code137, .n_exit_codes = 1},
	  {.name = "p1", .node = "", .exit_codes = code137, .n_exit_codes = 1},
	  {.name = "p2", .node = NULL, .exit_codes = code137, .n_exit_codes = 1}},
	 3, false, 1, "", NULL, NULL},
	{"read back from the condition while no Job of the attempt exists", EXIT137, NULL, true, 1, NO_JOBS, NULL,
	 "attempt 1 keeps off 1 node" MARK "n1:1:exitCode=137", false, {{0}}, 0, false, 1, "n1:1:exitCode=137",
	 "True:n1:1:exitCode=137", NULL},
	{"read back from the attempt's Jobs (they win over the condition)", EXIT137, NULL, true, 1, ACTIVE_JOB,
	 "n9:1:nodeLost", "attempt 1 keeps off 1 node" MARK "n1:1:exitCode=137", false, {{0}}, 0, false, 1,
	 "n9:1:nodeLost", "True:n9:1:nodeLost", NULL},
	{"a Job of the attempt without the annotation: nothing avoided", EXIT137, NULL, true, 1, ACTIVE_JOB, NULL,
	 "attempt 1 keeps off 1 node" MARK "n1:1:exitCode=137", false, {{0}}, 0, false, 1, "", "False", NULL},
	{"garbage in the Job's list reads as none", EXIT137, NULL, true, 1, ACTIVE_JOB, "n1:1:exitCode=999,:::,,", NULL,
	 false, {{0}}, 0, false, 1, "", NULL, NULL},
	{"garbage in the condition reads as none", EXIT137, NULL, true, 1, NO_JOBS, NULL,
	 "x" MARK "n1:-1:exitCode=137,n1:1:exitCode=137", false, {{0}}, 0, false, 1, "", "False", NULL},
	{"extreme: the last attempt saturates at INT32_MAX",
	 "{\"" JS_ANN_NQ_EXIT_CODES "\":\"137\",\"" JS_ANN_NQ_ATTEMPTS "\":\"1000\"}",
	 "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"name\":\"r\",\"action\":\"RestartJobSetAndIgnoreMaxRestarts\"}]}}}",
	 true, INT32_MAX - 1, FAILED_JOB, NULL, NULL, true,
	 {{.name = "p0", .node = "n1", .attempt = INT32_MAX - 1, .exit_codes = code137, .n_exit_codes = 1}}, 1, false,
	 INT32_MAX, "n1:2147483647:exitCode=137", "True:n1:2147483647:exitCode=137", "NodeQuarantined"},
	{"rules removed while a list is active: Jobs avoid nothing, the condition goes False", NULL, NULL, true, 1,
	 NO_JOBS, NULL, "attempt 1 keeps off 1 node" MARK "n1:1:exitCode=137", false, {{0}}, 0, false, 1, "", "False",
	 NULL},
	{"gate off with a condition left: untouched", NULL, NULL, false, 1, NO_JOBS, NULL,
	 "attempt 1 keeps off 1 node" MARK "n1:1:exitCode=137", false, {{0}}, 0, false, 1, "", "True:n1:1", NULL},
};

/* The JobSet of a row: `job_restarts` (JSON, or NULL) is the status
 * jobRestarts of ReplicatedJob "w", `cond_message` (or NULL) the message
 * of a NodesQuarantined=True condition. */
static struct js_jobset *build_jobset(const char *annotations, const char *spec_patch, int32_t restarts,
				      const char *job_restarts, const char *cond_message)
{
	json_t *j = tu_yaml(base_yaml);
	if (annotations)
		json_object_set_new(json_object_get(j, "metadata"), "annotations", json_loads(annotations, 0, NULL));
	tu_merge_patch(j, spec_patch);
	json_t *st = json_pack("{s:i}", "restarts", (json_int_t)restarts);
	if (job_restarts)
		json_object_set_new(st, "replicatedJobsStatus",
				    json_pack("[{s:s,s:i,s:i,s:i,s:i,s:i,s:o}]", "name", "w", "ready", 0, "succeeded", 0,
					      "failed", 0, "active", 0, "suspended", 0, "jobRestarts",
					      json_loads(job_restarts, 0, NULL)));
	if (cond_message)
		json_object_set_new(st, "conditions",
				    json_pack("[{s:s,s:s,s:s,s:s,s:s}]", "type", JS_COND_NODES_QUARANTINED, "status", "True",
					      "reason", "NodesQuarantined", "message", cond_message,
					      "lastTransitionTime", "2026-01-01T00:00:00Z"));
	json_object_set_new(j, "status", st);
	struct js_jobset *js = tu_decode(j);
	json_decref(j);
	return js;
}

static struct js_jobset *build(const struct row *r)
{
	return build_jobset(r->annotations, r->spec_patch, r->restarts, NULL, r->cond_message);
}

static const char *list_text(const struct js_quarantine_list *l, struct js_buf *b)
{
	js_buf_clear(b);
	if (l)
		assert_int_equal(js_quarantine_list_format(l, b), 0);
	return js_buf_str(b);
}

/* The NodesQuarantined condition of `plan`: `want` "True:<substring of
 * its message>", "False", or NULL for none. */
static void check_condition(const char *name, const struct js_plan *plan, const char *want)
{
	const struct js_condition *c = js_jobset_condition(plan->jobset, JS_COND_NODES_QUARANTINED);
	if (!want) {
		if (c)
			fail_msg("%s: unexpected condition %s: %s", name, c->status, c->message);
	} else if (strcmp(want, "False") == 0) {
		if (!c || strcmp(c->status, "False") != 0)
			fail_msg("%s: want the condition False, got %s", name, c ? c->status : "none");
	} else if (!c || strcmp(c->status, "True") != 0 || !strstr(c->message, want + 5)) {
		fail_msg("%s: want condition '%s', got %s '%s'", name, want, c ? c->status : "none",
			 c ? c->message : "");
	}
}

/* Every Job `plan` creates carries `want_list` ("" = no annotation). */
static void check_created_jobs(const char *name, const struct js_plan *plan, const char *want_list)
{
	for (size_t i = 0; i < plan->n_actions; i++) {
		if (plan->actions[i].kind != JS_ACTION_CREATE_JOB)
			continue;
		json_t *jb = js_plan_render_job(plan, &plan->actions[i]);
		const char *ann = js_json_str(js_json_path(jb, "spec.template.metadata.annotations"),
					      JS_ANN_QUARANTINED_NODES);
		if (strcmp(ann ? ann : "", want_list) != 0)
			fail_msg("%s: Job %s carries '%s', want '%s'", name, plan->actions[i].name, ann ? ann : "",
				 want_list);
		json_decref(jb);
	}
}

static void check_row(const struct row *r)
{
	struct js_jobset *js = build(r);
	char attempt[16];
	snprintf(attempt, sizeof(attempt), "%" PRId32, r->restarts);
	struct js_obsjob_init init = {.job = {.name = "q-w-0", .owner_uid = "uid-q", .rjob_name = "w",
					      .job_index = "0", .restart_attempt = attempt,
					      .quarantined_nodes = r->job_list, .active = 1}};
	if (r->jobs == FAILED_JOB) {
		init.job.active = 0;
		init.job.n_conditions = 1;
		init.job.conditions = failed_cond;
	}
	const struct js_obsjob *job = r->jobs == NO_JOBS ? NULL : js_job_build(&init);
	struct js_reconcile_input in = {.jobset = js, .jobs = job ? &job : NULL, .n_jobs = job ? 1 : 0,
					.service_exists = true, .gates = {.node_quarantine = r->gate},
					.failed_pods_known = r->pods_known, .failed_pods = r->pods,
					.n_failed_pods = r->n_pods, .now = 1767225600};
	struct js_plan *plan = NULL;
	char *err = NULL;
	int rc = js_reconcile_run(&in, &plan, &err);
	if (rc != 0)
		fail_msg("%s: reconcile failed: %s", r->name, err);
	struct js_buf b;
	js_buf_init(&b, 0);
	if (plan->want_failed_pods != r->want_hold || plan->status->restarts != r->want_restarts ||
	    strcmp(list_text(plan->quarantine, &b), r->want_list) != 0)
		fail_msg("%s: hold %d restarts %" PRId32 " list '%s'; want hold %d restarts %" PRId32 " list '%s'", r->name,
			 plan->want_failed_pods, plan->status->restarts, js_buf_str(&b), r->want_hold, r->want_restarts,
			 r->want_list);
	check_condition(r->name, plan, r->want_cond);
	bool seen = !r->want_event;
	for (size_t i = 0; i < plan->n_events && !seen; i++)
		seen = strcmp(plan->events[i].reason, r->want_event) == 0;
	if (!seen)
		fail_msg("%s: no event %s", r->name, r->want_event);
	/* The Jobs this plan creates carry its list, and only with the gate. */
	check_created_jobs(r->name, plan, r->want_list);
	js_buf_done(&b);
	js_reconcile_plan_free(plan);
	js_job_unref(job);
	js_jobset_free(js);
}

static void test_core_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		check_row(&rows[i]);
}

/* ---- per-Job restarts (RestartJob) ---- */

#define RESTART_JOB_RULE(action)                                                                             \
	"{\"spec\":{\"failurePolicy\":{\"maxRestarts\":5,\"rules\":[{\"name\":\"r\",\"action\":\"" action "\"}]}}}"

/* A Job of the table below: q-w-<index> of the row's attempt. */
struct jjob {
	const char *index;         /* job-index label; NULL: no such Job */
	const char *job_attempt;   /* job-restart-attempt label, or NULL */
	bool failed;
	const char *list;          /* its quarantined-nodes annotation, or NULL */
};

static const struct jrow {
	const char *name;
	const char *annotations;   /* JobSet annotations (JSON), or NULL */
	bool gate;                 /* NodeQuarantine (RestartJob always on) */
	const char *spec_patch;    /* the failure policy, or NULL: none */
	int32_t restarts;
	const char *job_restarts;  /* status jobRestarts of "w" (JSON), or NULL */
	struct jjob jobs[2];
	const char *cond_message;  /* NodesQuarantined=True message, or NULL */
	bool pods_known;
	struct js_failpod pods[3];
	size_t n_pods;
	/* expected */
	bool want_hold;
	int32_t want_restarts;
	const char *want_job_restarts; /* "1,0"; "" = none */
	const char *want_list;
	const char *want_cond;     /* as rows[]: "True:<substring>" / "False" / NULL */
	const char *want_event;    /* a substring of a NodeQuarantined event, or NULL: none */
} jrows[] = {
	{"RestartJob: the restarted Job's node is kept off the rest of the attempt, another Job's is not", EXIT137,
	 true, RESTART_JOB_RULE("RestartJob"), 0, NULL, {{"0", "0", true, NULL}, {"1", "0", false, NULL}}, NULL, true,
	 {{.name = "p0", .node = "n1", .exit_codes = code137, .n_exit_codes = 1, .rjob_name = "w", .job_index = "0",
	   .job_restart_attempt = "0"},
	  {.name = "p1", .node = "n2", .exit_codes = code137, .n_exit_codes = 1, .rjob_name = "w", .job_index = "1",
	   .job_restart_attempt = "0"}},
	 2, false, 0, "1,0", "n1:0:exitCode=137", "True:attempt 0 keeps off 1 node" MARK "n1:0:exitCode=137",
	 "node n1 is kept off the Jobs made from now on, through attempt 0: pod p0 failed there (exit code 137), and "
	 "its Job q-w-0 is restarted on its own"},
	{"RestartJob: the failed pods not read yet, the restart waits for them", EXIT137, true,
	 RESTART_JOB_RULE("RestartJob"), 0, NULL, {{"0", "0", true, NULL}, {"1", "0", false, NULL}}, NULL, false,
	 {{0}}, 0, true, 0, "", "", NULL, NULL},
	{"RestartJobAndIgnoreMaxRestarts, two attempts: kept off through the next attempt too",
	 "{\"" JS_ANN_NQ_EXIT_CODES "\":\"137\",\"" JS_ANN_NQ_ATTEMPTS "\":\"2\"}", true,
	 RESTART_JOB_RULE("RestartJobAndIgnoreMaxRestarts"), 3, NULL, {{"0", NULL, true, NULL}, {"1", NULL, false, NULL}},
	 NULL, true,
	 {{.name = "p0", .node = "n1", .attempt = 3, .exit_codes = code137, .n_exit_codes = 1, .rjob_name = "w",
	   .job_index = "0"}},
	 1, false, 3, "1,0", "n1:4:exitCode=137", "True:attempt 3 keeps off 1 node" MARK "n1:4:exitCode=137",
	 "through attempt 4: pod p0"},
	{"a pod of an earlier Job of that index (blamed when it restarted) is not blamed again", EXIT137, true,
	 RESTART_JOB_RULE("RestartJob"), 0, "[1,0]", {{"0", "1", true, "n1:0:exitCode=137"}, {"1", "0", false, NULL}},
	 NULL, true,
	 {{.name = "old", .node = "n1", .exit_codes = code137, .n_exit_codes = 1, .rjob_name = "w", .job_index = "0",
	   .job_restart_attempt = "0"},
	  {.name = "new", .node = "n3", .exit_codes = code137, .n_exit_codes = 1, .rjob_name = "w", .job_index = "0",
	   .job_restart_attempt = "1"}},
	 2, false, 0, "2,0", "n1:0:exitCode=137,n3:0:exitCode=137", "True:attempt 0 keeps off 2 nodes", "node n3 is"},
	{"gate off: RestartJob as ever, nothing of ours", EXIT137, false, RESTART_JOB_RULE("RestartJob"), 0, NULL,
	 {{"0", "0", true, NULL}, {"1", "0", false, NULL}}, NULL, false, {{0}}, 0, false, 0, "1,0", "", NULL, NULL},
	{"garbage: pods without (valid) Job labels blame nothing, a garbled Job list counts as none", EXIT137, true,
	 RESTART_JOB_RULE("RestartJob"), 0, NULL, {{"0", "0", true, NULL}, {"1", "0", false, "n9:0:exitCode=999"}},
	 NULL, true,
	 {{.name = "a", .node = "n1", .exit_codes = code137, .n_exit_codes = 1},
	  {.name = "b", .node = "n2", .exit_codes = code137, .n_exit_codes = 1, .rjob_name = "w", .job_index = "x"},
	  {.name = "c", .node = "n3", .exit_codes = code137, .n_exit_codes = 1, .rjob_name = "w", .job_index = "0",
	   .job_restart_attempt = "-1"}},
	 3, false, 0, "1,0", "", NULL, NULL},
	{"read back: the union of the attempt's Jobs' lists, the later last attempt kept", EXIT137, true, NULL, 0,
	 "[1,0]", {{"0", "1", false, "n1:0:exitCode=137,n2:1:nodeLost"}, {"1", "0", false, "n2:2:nodeLost"}}, NULL,
	 false, {{0}}, 0, false, 0, "1,0", "n1:0:exitCode=137,n2:2:nodeLost",
	 "True:attempt 0 keeps off 2 nodes" MARK "n1:0:exitCode=137,n2:2:nodeLost", NULL},
	{"bridge: the restarted Job not made yet, the condition's list goes on its recreation", EXIT137, true, NULL, 0,
	 "[1,0]", {{"1", "0", false, NULL}, {NULL, NULL, false, NULL}}, "attempt 0 keeps off 1 node" MARK
	 "n1:0:exitCode=137", false, {{0}}, 0, false, 0, "1,0", "n1:0:exitCode=137", "True:n1:0:exitCode=137", NULL},
	{"no bridge from a condition of another attempt", EXIT137, true, NULL, 1, "[1,0]",
	 {{"1", "0", false, NULL}, {NULL, NULL, false, NULL}}, "attempt 0 keeps off 1 node" MARK "n1:1:exitCode=137",
	 false, {{0}}, 0, false, 1, "1,0", "", "False", NULL},
	{"recreation made: the templates alone count", EXIT137, true, NULL, 0, "[1,0]",
	 {{"0", "1", false, NULL}, {"1", "0", false, NULL}}, "attempt 0 keeps off 1 node" MARK "n1:0:exitCode=137",
	 false, {{0}}, 0, false, 0, "1,0", "", "False", NULL},
	{"whole-JobSet restart before the recreation exists: the condition's entry carries over",
	 "{\"" JS_ANN_NQ_EXIT_CODES "\":\"137\",\"" JS_ANN_NQ_ATTEMPTS "\":\"2\"}", true, NULL, 0, "[1,0]",
	 {{"1", "0", true, NULL}, {NULL, NULL, false, NULL}}, "attempt 0 keeps off 1 node" MARK "n1:1:exitCode=137",
	 true, {{0}}, 0, false, 1, "1,0", "n1:1:exitCode=137", "True:attempt 1 keeps off 1 node", NULL},
};

static const char *job_restarts_text(const struct js_jobset *js, struct js_buf *b)
{
	js_buf_clear(b);
	int si = js_jobset_find_rjob_status(js, "w");
	const struct js_i32list *l = si < 0 ? NULL : &js->status.replicated_jobs_status[si].job_restarts;
	for (size_t i = 0; l && i < l->n; i++)
		assert_int_equal(js_buf_printf(b, "%s%" PRId32, i ? "," : "", l->items[i]), 0);
	return js_buf_str(b);
}

static void check_jrow(const struct jrow *r)
{
	struct js_jobset *js = build_jobset(r->annotations, r->spec_patch, r->restarts, r->job_restarts, r->cond_message);

	char attempt[16], names[2][16];
	snprintf(attempt, sizeof(attempt), "%" PRId32, r->restarts);
	const struct js_obsjob *jobs[2];
	size_t n = 0;
	for (size_t i = 0; i < 2 && r->jobs[i].index; i++) {
		const struct jjob *x = &r->jobs[i];
		snprintf(names[i], sizeof(names[i]), "q-w-%s", x->index);
		struct js_obsjob_init init = {.job = {.name = names[i], .owner_uid = "uid-q", .rjob_name = "w",
						      .job_index = x->index, .restart_attempt = attempt,
						      .job_restart_attempt = x->job_attempt, .quarantined_nodes = x->list,
						      .active = x->failed ? 0 : 1}};
		if (x->failed) {
			init.job.n_conditions = 1;
			init.job.conditions = failed_cond;
		}
		jobs[n++] = js_job_build(&init);
	}
	struct js_reconcile_input in = {.jobset = js, .jobs = jobs, .n_jobs = n, .service_exists = true,
					.gates = {.node_quarantine = r->gate, .restart_job = true},
					.failed_pods_known = r->pods_known, .failed_pods = r->pods,
					.n_failed_pods = r->n_pods, .now = 1767225600};
	struct js_plan *plan = NULL;
	char *err = NULL;
	if (js_reconcile_run(&in, &plan, &err) != 0)
		fail_msg("%s: reconcile failed: %s", r->name, err);
	struct js_buf b, jr;
	js_buf_init(&b, 0);
	js_buf_init(&jr, 0);
	const char *got_list = list_text(plan->quarantine, &b), *got_jr = job_restarts_text(plan->jobset, &jr);
	if (plan->want_failed_pods != r->want_hold || plan->status->restarts != r->want_restarts ||
	    strcmp(got_list, r->want_list) != 0 || strcmp(got_jr, r->want_job_restarts) != 0)
		fail_msg("%s: hold %d restarts %" PRId32 " jobRestarts '%s' list '%s'; want hold %d restarts %" PRId32
			 " jobRestarts '%s' list '%s'",
			 r->name, plan->want_failed_pods, plan->status->restarts, got_jr, got_list,
			 r->want_hold, r->want_restarts, r->want_job_restarts, r->want_list);
	check_condition(r->name, plan, r->want_cond);
	const char *ev = NULL;
	for (size_t i = 0; i < plan->n_events && !ev; i++)
		if (strcmp(plan->events[i].reason, "NodeQuarantined") == 0)
			ev = plan->events[i].message;
	if (r->want_event ? !ev || !strstr(ev, r->want_event) : ev != NULL)
		fail_msg("%s: NodeQuarantined event '%s', want '%s'", r->name, ev ? ev : "(none)",
			 r->want_event ? r->want_event : "(none)");
	/* The Jobs this plan makes (a recreation) carry the list. */
	check_created_jobs(r->name, plan, r->want_list);
	js_buf_done(&b);
	js_buf_done(&jr);
	js_reconcile_plan_free(plan);
	for (size_t i = 0; i < n; i++)
		js_job_unref(jobs[i]);
	js_jobset_free(js);
}

static void test_job_restart_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(jrows) / sizeof(jrows[0]); i++)
		check_jrow(&jrows[i]);
}

/* More bad nodes than a list holds: the first JS_QUARANTINE_MAX_NODES are
 * kept, and an event says how many were not. */
static void test_list_full(void **state)
{
	(void)state;
	struct row r = {.name = "full", .annotations = EXIT137, .gate = true, .jobs = FAILED_JOB, .pods_known = true};
	struct js_jobset *js = build(&r);
	struct js_failpod pods[40];
	char names[40][16];
	for (int i = 0; i < 40; i++) {
		snprintf(names[i], sizeof(names[i]), "node-%d", i);
		pods[i] = (struct js_failpod){.name = "p", .node = names[i], .exit_codes = code137, .n_exit_codes = 1};
	}
	struct js_obsjob_init init = {.job = {.name = "q-w-0", .owner_uid = "uid-q", .rjob_name = "w", .job_index = "0",
					      .restart_attempt = "0", .n_conditions = 1, .conditions = failed_cond}};
	const struct js_obsjob *job = js_job_build(&init);
	struct js_reconcile_input in = {.jobset = js, .jobs = &job, .n_jobs = 1, .service_exists = true,
					.gates = {.node_quarantine = true}, .failed_pods_known = true,
					.failed_pods = pods, .n_failed_pods = 40};
	struct js_plan *plan = NULL;
	assert_int_equal(js_reconcile_run(&in, &plan, NULL), 0);
	assert_non_null(plan->quarantine);
	assert_int_equal(plan->quarantine->n, JS_QUARANTINE_MAX_NODES);
	bool full = false;
	for (size_t i = 0; i < plan->n_events; i++)
		full |= strcmp(plan->events[i].reason, "NodeQuarantineFull") == 0 &&
			strstr(plan->events[i].message, "8 more nodes") != NULL;
	assert_true(full);
	/* The condition message stays under the CRD's 32768 bytes. */
	const struct js_condition *c = js_jobset_condition(plan->jobset, JS_COND_NODES_QUARANTINED);
	assert_non_null(c);
	assert_true(strlen(c->message) < 32768);
	js_reconcile_plan_free(plan);
	js_job_unref(job);
	js_jobset_free(js);
}

/* ---- no room left: QuarantineLeavesNoRoom (core/noroom.c) ---- */

#define NOW 1767225600
#define AFFINITY "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
#define NOROOM_TRUE "pod q-w-0-0-a cannot be scheduled while attempt 1 keeps off 1 node (n1); the scheduler says: x"

static const struct noroom_row {
	const char *name;
	bool gate;
	const char *job_list;      /* the attempt-1 Job's list, or NULL */
	int32_t active, ready;     /* its status counters */
	bool has_ready;
	const char *cond;          /* a QuarantineLeavesNoRoom condition: "True:<message>", "False", NULL */
	bool finished;             /* Completed=True */
	bool known;                /* pending_pods_known */
	struct js_pendpod pods[3];
	size_t n_pods;
	int64_t read_at;           /* pending_pods_read_at */
	/* expected */
	bool want_ask;             /* plan->want_pending_pods */
	const char *want_cond;     /* "True:<substring>" / "False" / NULL = no such condition */
	const char *want_event;    /* QuarantineLeavesNoRoom / QuarantineLeavesRoom, or NULL: neither */
	int64_t want_requeue;      /* -1: none */
} noroom_rows[] = {
	{"gate off: nothing asked, nothing said", false, "n1:1:exitCode=137", 1, 0, true, NULL, false, false, {{0}}, 0,
	 0, false, NULL, NULL, -1},
	{"no list: nothing asked, never added False", true, NULL, 1, 0, true, NULL, false, false, {{0}}, 0, 0, false,
	 NULL, NULL, -1},
	{"no list any more: True goes False", true, NULL, 1, 0, true, "True:" NOROOM_TRUE, false, false, {{0}}, 0, 0,
	 false, "False", "QuarantineLeavesRoom", -1},
	{"list, every pod ready: nothing asked", true, "n1:1:exitCode=137", 2, 2, true, NULL, false, false, {{0}}, 0, 0,
	 false, NULL, NULL, -1},
	{"list, every pod ready: True goes False without a read", true, "n1:1:exitCode=137", 2, 2, true,
	 "True:" NOROOM_TRUE, false, false, {{0}}, 0, 0, false, "False", "QuarantineLeavesRoom", -1},
	{"list, a pod not ready, never read: ask", true, "n1:1:exitCode=137", 2, 1, true, NULL, false, false, {{0}}, 0,
	 0, true, NULL, NULL, -1},
	{"a Job without status.ready counts as not ready", true, "n1:1:exitCode=137", 1, 0, false, NULL, false, false,
	 {{0}}, 0, 0, true, NULL, NULL, -1},
	{"read 5 s ago: not again before the interval, come back then", true, "n1:1:exitCode=137", 1, 0, true,
	 "True:" NOROOM_TRUE, false, false, {{0}}, 0, NOW - 5, false, "True:" NOROOM_TRUE, NULL, 10},
	{"read 20 s ago: ask again", true, "n1:1:exitCode=137", 1, 0, true, NULL, false, false, {{0}}, 0, NOW - 20, true,
	 NULL, NULL, -1},
	{"read 'in the future' (the clock went back): ask", true, "n1:1:exitCode=137", 1, 0, true, NULL, false, false,
	 {{0}}, 0, NOW + 100, true, NULL, NULL, -1},
	{"read: unschedulable for node affinity -> True naming pod, nodes and the scheduler", true, "n1:1:exitCode=137",
	 1, 0, true, NULL, false, true, {{"q-w-0-0-a", 1, "Unschedulable", AFFINITY}}, 1, NOW, false,
	 "True:pod q-w-0-0-a cannot be scheduled while attempt 1 keeps off 1 node (n1); the scheduler says: " AFFINITY,
	 "QuarantineLeavesNoRoom", JS_NOROOM_INTERVAL_S},
	{"older schedulers' wording (node selector)", true, "n1:1:exitCode=137,n2:3:nodeLost", 1, 0, true, NULL, false,
	 true, {{"p", 1, "Unschedulable", "0/2 nodes are available: 2 node(s) didn't match node selector."}}, 1, NOW,
	 false, "True:keeps off 2 nodes (n1, n2)", "QuarantineLeavesNoRoom", JS_NOROOM_INTERVAL_S},
	{"only Insufficient cpu: not ours to report", true, "n1:1:exitCode=137", 1, 0, true, NULL, false, true,
	 {{"p", 1, "Unschedulable", "0/3 nodes are available: 3 Insufficient cpu."}}, 1, NOW, false, NULL, NULL,
	 JS_NOROOM_INTERVAL_S},
	{"a pod of another attempt, one not tried yet, one with another reason: none blocked", true,
	 "n1:1:exitCode=137", 1, 0, true, NULL, false, true,
	 {{"old", 0, "Unschedulable", AFFINITY}, {"new", 1, NULL, NULL}, {"odd", 1, "SchedulerError", AFFINITY}}, 3,
	 NOW, false, NULL, NULL, JS_NOROOM_INTERVAL_S},
	{"garbage: no name, no message", true, "n1:1:exitCode=137", 1, 0, true, NULL, false, true,
	 {{NULL, 1, "Unschedulable", AFFINITY}, {"p", 1, "Unschedulable", NULL}}, 2, NOW, false,
	 "True:pod ? cannot be scheduled", "QuarantineLeavesNoRoom", JS_NOROOM_INTERVAL_S},
	{"read: nothing blocked any more, True goes False", true, "n1:1:exitCode=137", 1, 0, true, "True:" NOROOM_TRUE,
	 false, true, {{"q-w-0-0-a", 1, "Unschedulable", "0/3 nodes are available: 3 Insufficient cpu."}}, 1, NOW,
	 false, "False", "QuarantineLeavesRoom", JS_NOROOM_INTERVAL_S},
	{"True naming a pod that still waits: left as it is (no write, no event)", true, "n1:1:exitCode=137", 1, 0,
	 true, "True:" NOROOM_TRUE, false, true, {{"q-w-0-0-a", 1, "Unschedulable", AFFINITY}}, 1, NOW, false,
	 "True:" NOROOM_TRUE, NULL, JS_NOROOM_INTERVAL_S},
	{"True naming a pod that is gone: names the one that waits", true, "n1:1:exitCode=137", 1, 0, true,
	 "True:" NOROOM_TRUE, false, true, {{"q-w-0-0-b", 1, "Unschedulable", AFFINITY}}, 1, NOW, false,
	 "True:pod q-w-0-0-b cannot", "QuarantineLeavesNoRoom", JS_NOROOM_INTERVAL_S},
	{"three pods blocked: the first named, the others counted", true, "n1:1:exitCode=137", 3, 0, true, NULL, false,
	 true,
	 {{"a", 1, "Unschedulable", AFFINITY}, {"b", 1, "Unschedulable", AFFINITY}, {"c", 1, "Unschedulable", AFFINITY}},
	 3, NOW, false, "True:pod a cannot be scheduled (nor 2 more pods) while", "QuarantineLeavesNoRoom",
	 JS_NOROOM_INTERVAL_S},
	{"pods at hand (the local runner: read_at 0): decided, no requeue, even with no pod counted active", true,
	 "n1:1:exitCode=137", 0, 0, true, NULL, false, true, {{"q-w-0-0", 1, "Unschedulable", AFFINITY}}, 1, 0, false,
	 "True:pod q-w-0-0 cannot", "QuarantineLeavesNoRoom", -1},
	{"finished: True goes False", true, "n1:1:exitCode=137", 1, 0, true, "True:" NOROOM_TRUE, true, false, {{0}}, 0,
	 0, false, "False", "QuarantineLeavesRoom", -1},
	{"finished, gate off: untouched", false, "n1:1:exitCode=137", 1, 0, true, "True:" NOROOM_TRUE, true, false,
	 {{0}}, 0, 0, false, "True:" NOROOM_TRUE, NULL, -1},
};

static struct js_jobset *build_noroom(const struct noroom_row *r)
{
	json_t *j = tu_yaml(base_yaml);
	json_object_set_new(json_object_get(j, "metadata"), "annotations", json_loads(EXIT137, 0, NULL));
	json_t *conds = json_array();
	if (r->cond) {
		bool t = strncmp(r->cond, "True:", 5) == 0;
		json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", JS_COND_QUARANTINE_NO_ROOM, "status",
						       t ? "True" : "False", "reason", t ? "QuarantineLeavesNoRoom" : "x",
						       "message", t ? r->cond + 5 : "x", "lastTransitionTime",
						       "2026-01-01T00:00:00Z"));
	}
	if (r->finished)
		json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", "Completed", "status", "True",
						       "reason", "AllJobsCompleted", "message", "done",
						       "lastTransitionTime", "2026-01-01T00:00:00Z"));
	json_object_set_new(j, "status", json_pack("{s:i,s:o}", "restarts", 1, "conditions", conds));
	struct js_jobset *js = tu_decode(j);
	json_decref(j);
	return js;
}

static void check_noroom_row(const struct noroom_row *r)
{
	struct js_jobset *js = build_noroom(r);
	struct js_obsjob_init init = {.job = {.name = "q-w-0", .owner_uid = "uid-q", .rjob_name = "w",
					      .job_index = "0", .restart_attempt = "1",
					      .quarantined_nodes = r->job_list, .active = r->active,
					      .has_ready = r->has_ready, .ready = r->ready}};
	const struct js_obsjob *job = js_job_build(&init);
	struct js_reconcile_input in = {.jobset = js, .jobs = &job, .n_jobs = 1, .service_exists = true,
					.gates = {.node_quarantine = r->gate}, .pending_pods_known = r->known,
					.pending_pods = r->pods, .n_pending_pods = r->n_pods,
					.pending_pods_read_at = r->read_at, .now = NOW};
	struct js_plan *plan = NULL;
	char *err = NULL;
	if (js_reconcile_run(&in, &plan, &err) != 0)
		fail_msg("%s: reconcile failed: %s", r->name, err);
	if (plan->want_pending_pods != r->want_ask)
		fail_msg("%s: ask %d, want %d", r->name, plan->want_pending_pods, r->want_ask);
	const struct js_condition *c = js_jobset_condition(plan->jobset, JS_COND_QUARANTINE_NO_ROOM);
	if (!r->want_cond) {
		if (c)
			fail_msg("%s: unexpected condition %s: %s", r->name, c->status, c->message);
	} else if (strcmp(r->want_cond, "False") == 0) {
		if (!c || strcmp(c->status, "False") != 0 || strcmp(c->reason, "QuarantineLeavesRoom") != 0)
			fail_msg("%s: want the condition False, got %s", r->name, c ? c->status : "none");
	} else if (!c || strcmp(c->status, "True") != 0 || strcmp(c->reason, "QuarantineLeavesNoRoom") != 0 ||
		   !strstr(c->message, r->want_cond + 5)) {
		fail_msg("%s: want condition '%s', got %s '%s'", r->name, r->want_cond, c ? c->status : "none",
			 c ? c->message : "");
	}
	size_t ours = 0;
	for (size_t i = 0; i < plan->n_events; i++) {
		const struct js_event *e = &plan->events[i];
		if (strncmp(e->reason, "QuarantineLeaves", 16) != 0)
			continue;
		ours++;
		if (!r->want_event || strcmp(e->reason, r->want_event) != 0)
			fail_msg("%s: unexpected event %s: %s", r->name, e->reason, e->message);
		if (strcmp(e->type, strcmp(e->reason, "QuarantineLeavesNoRoom") == 0 ? "Warning" : "Normal") != 0)
			fail_msg("%s: event %s is %s", r->name, e->reason, e->type);
	}
	if (ours != (r->want_event ? 1u : 0u))
		fail_msg("%s: %zu events of ours, want %s", r->name, ours, r->want_event ? r->want_event : "none");
	int64_t requeue = plan->has_requeue_after ? plan->requeue_after : -1;
	if (requeue != r->want_requeue)
		fail_msg("%s: requeue %" PRId64 ", want %" PRId64, r->name, requeue, r->want_requeue);
	js_reconcile_plan_free(plan);
	js_job_unref(job);
	js_jobset_free(js);
}

static void test_noroom_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(noroom_rows) / sizeof(noroom_rows[0]); i++)
		check_noroom_row(&noroom_rows[i]);
}

/* Huge: a 100 KiB scheduler message (multi-byte text at the cut) and 32
 * nodes of 253 bytes; the message stays bounded and valid UTF-8. */
static void test_noroom_huge(void **state)
{
	(void)state;
	size_t n = 100 * 1024;
	char *msg = malloc(n + 1);
	/* "x" then "é"s: byte 512, where the quote is cut, is the middle of
	 * one. */
	msg[0] = 'x';
	for (size_t i = 1; i + 1 < n; i += 2)
		memcpy(msg + i, "\xc3\xa9", 2); /* é */
	msg[n - 1] = 'x';
	msg[n] = '\0';
	memcpy(msg + 1001, "didn't match Pod's node affinity ", 34);
	struct js_buf list;
	js_buf_init(&list, 0);
	for (int i = 0; i < JS_QUARANTINE_MAX_NODES; i++) {
		char node[254];
		memset(node, 'a', 250);
		snprintf(node + 250, 4, "%03d", i);
		assert_int_equal(js_buf_printf(&list, "%s%s:1:nodeLost", i ? "," : "", node), 0);
	}
	struct noroom_row r = {.name = "huge", .gate = true, .job_list = js_buf_str(&list), .active = 1};
	struct js_jobset *js = build_noroom(&r);
	struct js_obsjob_init init = {.job = {.name = "q-w-0", .owner_uid = "uid-q", .rjob_name = "w",
					      .job_index = "0", .restart_attempt = "1",
					      .quarantined_nodes = js_buf_str(&list), .active = 1}};
	const struct js_obsjob *job = js_job_build(&init);
	struct js_pendpod pod = {.name = "p", .attempt = 1, .reason = "Unschedulable", .message = msg};
	struct js_reconcile_input in = {.jobset = js, .jobs = &job, .n_jobs = 1, .service_exists = true,
					.gates = {.node_quarantine = true}, .pending_pods_known = true,
					.pending_pods = &pod, .n_pending_pods = 1, .pending_pods_read_at = NOW,
					.now = NOW};
	struct js_plan *plan = NULL;
	assert_int_equal(js_reconcile_run(&in, &plan, NULL), 0);
	const struct js_condition *c = js_jobset_condition(plan->jobset, JS_COND_QUARANTINE_NO_ROOM);
	assert_non_null(c);
	assert_string_equal(c->status, "True");
	size_t len = strlen(c->message);
	assert_true(len < 32768);
	assert_true(strstr(c->message, "keeps off 32 nodes") != NULL);
	/* Cut whole: "é" never halved before the "...". */
	assert_string_equal(c->message + len - 5, "\xc3\xa9...");
	js_reconcile_plan_free(plan);
	js_job_unref(job);
	js_jobset_free(js);
	js_buf_done(&list);
	free(msg);
}

/* ---- rendering ---- */

static const struct {
	const char *name;
	const char *pod_spec_patch; /* merged into the pod template's spec */
	const char *annotations;    /* the JobSet's, or NULL */
	const char *want_affinity;  /* JSON of spec.template.spec.affinity */
	const char *want_node_selector; /* JSON of nodeSelector, or NULL: absent */
} render_rows[] = {
	{"no affinity: one term is made", NULL, NULL,
	 "{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{\"matchFields\":"
	 "[{\"key\":\"metadata.name\",\"operator\":\"NotIn\",\"values\":[\"n1\",\"n2\"]}]}]}}}",
	 NULL},
	{"two terms (ORed): each gets the requirement, theirs kept",
	 "{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":["
	 "{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]}]},"
	 "{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"x\"]}]}]}},"
	 "\"podAffinity\":{\"k\":1}}}",
	 NULL,
	 "{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":["
	 "{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]}],\"matchFields\":"
	 "[{\"key\":\"metadata.name\",\"operator\":\"NotIn\",\"values\":[\"n1\",\"n2\"]}]},"
	 "{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"x\"]},"
	 "{\"key\":\"metadata.name\",\"operator\":\"NotIn\",\"values\":[\"n1\",\"n2\"]}]}]}},\"podAffinity\":{\"k\":1}}",
	 NULL},
	{"preferred terms and Kueue's nodeSelector untouched",
	 "{\"nodeSelector\":{\"flavor\":\"gpu\"},\"affinity\":{\"nodeAffinity\":"
	 "{\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":1}]}}}",
	 NULL,
	 "{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":1}],"
	 "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{\"matchFields\":"
	 "[{\"key\":\"metadata.name\",\"operator\":\"NotIn\",\"values\":[\"n1\",\"n2\"]}]}]}}}",
	 "{\"flavor\":\"gpu\"}"},
	{"exclusive placement (node-selector strategy): its selector and toleration stay", NULL,
	 "{\"alpha.jobset.sigs.k8s.io/exclusive-topology\":\"rack\",\"alpha.jobset.sigs.k8s.io/node-selector\":\"\"}",
	 "{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{\"matchFields\":"
	 "[{\"key\":\"metadata.name\",\"operator\":\"NotIn\",\"values\":[\"n1\",\"n2\"]}]}]}}}",
	 "{\"alpha.jobset.sigs.k8s.io/namespaced-job\":\"ns_q-w-1\"}"},
};

static void test_render(void **state)
{
	(void)state;
	struct js_quarantine_list l;
	assert_int_equal(js_quarantine_list_parse("n1:1:exitCode=137,n2:3:nodeLost", &l), 0);
	for (size_t i = 0; i < sizeof(render_rows) / sizeof(render_rows[0]); i++) {
		json_t *j = tu_yaml(base_yaml);
		if (render_rows[i].annotations)
			json_object_set_new(json_object_get(j, "metadata"), "annotations",
					    json_loads(render_rows[i].annotations, 0, NULL));
		json_t *ps = js_json_path_make(json_array_get(js_json_path(j, "spec.replicatedJobs"), 0),
					       "template.spec.template.spec");
		if (render_rows[i].pod_spec_patch) {
			json_t *p = json_loads(render_rows[i].pod_spec_patch, 0, NULL);
			json_object_update(ps, p);
			json_decref(p);
		}
		struct js_jobset *js = tu_decode(j);
		json_decref(j);
		struct js_render_opts on = {.gates = {.node_quarantine = true}, .quarantine = &l};
		struct js_render_opts off = {.quarantine = &l};
		json_t *with = js_render_job(js, 0, 1, &on), *without = js_render_job(js, 0, 1, &off);
		json_t *want = json_loads(render_rows[i].want_affinity, 0, NULL);
		const json_t *got = js_json_path(with, "spec.template.spec.affinity");
		if (!got || !json_equal(got, want)) {
			char *s = got ? json_dumps(got, JSON_SORT_KEYS) : NULL;
			fail_msg("%s: affinity %s", render_rows[i].name, s ? s : "(none)");
		}
		json_decref(want);
		const json_t *ns = js_json_path(with, "spec.template.spec.nodeSelector");
		json_t *want_ns = render_rows[i].want_node_selector ? json_loads(render_rows[i].want_node_selector, 0, NULL)
								    : NULL;
		if ((ns == NULL) != (want_ns == NULL) || (ns && !json_equal(ns, want_ns)))
			fail_msg("%s: nodeSelector changed", render_rows[i].name);
		json_decref(want_ns);
		assert_string_equal(js_json_str(js_json_path(with, "spec.template.metadata.annotations"),
						JS_ANN_QUARANTINED_NODES),
				    "n1:1:exitCode=137,n2:3:nodeLost");
		/* Gate off: byte for byte the Job without a list. */
		json_t *plain = js_render_job(js, 0, 1, NULL);
		if (!json_equal(without, plain))
			fail_msg("%s: the gate off changed the Job", render_rows[i].name);
		json_decref(plain);
		json_decref(with);
		json_decref(without);
		js_jobset_free(js);
	}
}

/* ---- the list's text ---- */

static void test_list_parse(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		int want; /* 0 or JS_EINVALID */
		size_t n;
	} cases[] = {
		{"", 0, 0},
		{"n1:0:nodeLost", 0, 1},
		{"a.b-c:2147483647:podCondition=example.com/Bad,n2:3:exitCode=255", 0, 2},
		{"n1:1:exitCode=0", JS_EINVALID, 0},
		{"n1:1:exitCode=256", JS_EINVALID, 0},
		{"n1:2147483648:nodeLost", JS_EINVALID, 0},
		{"n1:-1:nodeLost", JS_EINVALID, 0},
		{"N1:1:nodeLost", JS_EINVALID, 0},
		{"n1:1:nodeLost,n1:2:nodeLost", JS_EINVALID, 0}, /* duplicate */
		{"n1:1:bogus", JS_EINVALID, 0},
		{"n1:1:podCondition=", JS_EINVALID, 0},
		{"n1:1", JS_EINVALID, 0},
		{":1:nodeLost", JS_EINVALID, 0},
		{",", JS_EINVALID, 0},
		{"n1:1:nodeLost,", 0, 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct js_quarantine_list l;
		int r = js_quarantine_list_parse(cases[i].in, &l);
		if (r != cases[i].want || l.n != cases[i].n)
			fail_msg("'%s': got %d n=%zu, want %d n=%zu", cases[i].in, r, l.n, cases[i].want, cases[i].n);
	}
	/* Huge: 33 entries is one too many; a 300-byte node name too long. */
	struct js_buf b;
	js_buf_init(&b, 0);
	for (int i = 0; i < 33; i++)
		assert_int_equal(js_buf_printf(&b, "%sn%d:1:nodeLost", i ? "," : "", i), 0);
	struct js_quarantine_list l;
	assert_int_equal(js_quarantine_list_parse(js_buf_str(&b), &l), JS_EINVALID);
	js_buf_clear(&b);
	for (int i = 0; i < 300; i++)
		assert_int_equal(js_buf_puts(&b, "a"), 0);
	assert_int_equal(js_buf_puts(&b, ":1:nodeLost"), 0);
	assert_int_equal(js_quarantine_list_parse(js_buf_str(&b), &l), JS_EINVALID);
	js_buf_done(&b);
}

/* ---- validation ---- */

static void test_validate(void **state)
{
	(void)state;
	static const struct {
		const char *annotations;
		bool gate;
		const char *want_path; /* NULL: valid */
		const char *want_msg;
	} cases[] = {
		{EXIT137, true, NULL, NULL},
		{ALL_RULES, true, NULL, NULL},
		{"{\"" JS_ANN_NQ_POD_CONDITIONS "\":\"DisruptionTarget,example.com/GpuXid\",\"" JS_ANN_NQ_ATTEMPTS
		 "\":\"1000\"}",
		 true, NULL, NULL},
		{EXIT137, false, "metadata.annotations[" JS_ANN_NQ_EXIT_CODES "]", "NodeQuarantine"},
		{"{\"" JS_ANN_NQ_EXIT_CODES "\":\"0\"}", true, "metadata.annotations[" JS_ANN_NQ_EXIT_CODES "]", "1 to 255"},
		{"{\"" JS_ANN_NQ_EXIT_CODES "\":\"256\"}", true, "metadata.annotations[" JS_ANN_NQ_EXIT_CODES "]",
		 "1 to 255"},
		{"{\"" JS_ANN_NQ_EXIT_CODES "\":\"137,,\"}", true, "metadata.annotations[" JS_ANN_NQ_EXIT_CODES "]",
		 "1 to 255"},
		{"{\"" JS_ANN_NQ_EXIT_CODES "\":\"\"}", true, "metadata.annotations[" JS_ANN_NQ_EXIT_CODES "]",
		 "at least one"},
		{"{\"" JS_ANN_NQ_EXIT_CODES "\":\"0x89\"}", true, "metadata.annotations[" JS_ANN_NQ_EXIT_CODES "]",
		 "1 to 255"},
		{"{\"" JS_ANN_NQ_POD_CONDITIONS "\":\"not valid!\"}", true,
		 "metadata.annotations[" JS_ANN_NQ_POD_CONDITIONS "]", "qualified names"},
		{"{\"" JS_ANN_NQ_POD_CONDITIONS "\":\"a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q\"}", true,
		 "metadata.annotations[" JS_ANN_NQ_POD_CONDITIONS "]", "at most 16"},
		{"{\"" JS_ANN_NQ_NODE_LOST "\":\"maybe\"}", true, "metadata.annotations[" JS_ANN_NQ_NODE_LOST "]",
		 "\"true\" or \"false\""},
		{"{\"" JS_ANN_NQ_EXIT_CODES "\":\"137\",\"" JS_ANN_NQ_ATTEMPTS "\":\"0\"}", true,
		 "metadata.annotations[" JS_ANN_NQ_ATTEMPTS "]", "1 to 1000"},
		{"{\"" JS_ANN_NQ_EXIT_CODES "\":\"137\",\"" JS_ANN_NQ_ATTEMPTS "\":\"1001\"}", true,
		 "metadata.annotations[" JS_ANN_NQ_ATTEMPTS "]", "1 to 1000"},
		{"{\"" JS_ANN_NQ_EXIT_CODES "\":\"137\",\"" JS_ANN_NQ_ATTEMPTS "\":\"99999999999999999999\"}", true,
		 "metadata.annotations[" JS_ANN_NQ_ATTEMPTS "]", "1 to 1000"},
		{"{\"" JS_ANN_NQ_ATTEMPTS "\":\"2\"}", true, "metadata.annotations[" JS_ANN_NQ_ATTEMPTS "]",
		 "no rule says"},
		{"{\"" JS_ANN_NQ_NODE_LOST "\":\"false\"}", true, "metadata.annotations[" JS_ANN_NQ_ATTEMPTS "]",
		 "no rule says"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct row r = {.annotations = cases[i].annotations};
		struct js_jobset *js = build(&r);
		struct js_validate_opts o = {.gates = {.node_quarantine = cases[i].gate}, .strict = true};
		struct js_diag d = {0};
		int rc = js_validate_create(js, &o, &d);
		if (!cases[i].want_path) {
			if (rc != 0) {
				tu_print_diag(&d);
				fail_msg("case %zu: want valid", i);
			}
		} else if (!js_diag_has(&d, cases[i].want_path, cases[i].want_msg)) {
			tu_print_diag(&d);
			fail_msg("case %zu: want %s: %s", i, cases[i].want_path, cases[i].want_msg);
		}
		js_diag_done(&d);
		js_jobset_free(js);
	}
	/* Update: unchanged rules pass with the gate off (a JobSet admitted
	 * with it stays updatable); a changed or added rule is checked. */
	{
		struct row with = {.annotations = EXIT137}, other = {.annotations = ALL_RULES}, none = {0};
		struct js_jobset *a = build(&with), *b = build(&with), *c = build(&other), *z = build(&none);
		struct js_validate_opts off = {.strict = true};
		struct js_diag d = {0};
		assert_int_equal(js_validate_update(a, b, &off, &d), 0);
		assert_int_not_equal(js_validate_update(a, c, &off, &d), 0);
		assert_true(js_diag_has(&d, "metadata.annotations[" JS_ANN_NQ_NODE_LOST "]", "NodeQuarantine"));
		js_diag_done(&d);
		assert_int_not_equal(js_validate_update(z, a, &off, &d), 0);
		js_diag_done(&d);
		struct js_validate_opts on = {.gates = {.node_quarantine = true}, .strict = true};
		assert_int_equal(js_validate_update(z, c, &on, &d), 0);
		js_diag_done(&d);
		js_jobset_free(a);
		js_jobset_free(b);
		js_jobset_free(c);
		js_jobset_free(z);
	}
	/* Huge: a 1 MiB value is refused, bounded, and shown cut. */
	size_t n = 1 << 20;
	char *big = malloc(n + 1);
	memset(big, '7', n);
	big[n] = '\0';
	struct row r = {.annotations = NULL};
	struct js_jobset *js = build(&r);
	js->meta.annotations = json_pack("{s:s}", JS_ANN_NQ_EXIT_CODES, big);
	struct js_validate_opts o = {.gates = {.node_quarantine = true}, .strict = true};
	struct js_diag d = {0};
	assert_int_not_equal(js_validate_create(js, &o, &d), 0);
	assert_true(js_diag_has(&d, "metadata.annotations[" JS_ANN_NQ_EXIT_CODES "]", "at most 8192 bytes"));
	for (size_t i = 0; i < d.n; i++)
		assert_true(!d.items[i].value || strlen(d.items[i].value) < 200);
	js_diag_done(&d);
	js_jobset_free(js);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_core_table), cmocka_unit_test(test_job_restart_table), cmocka_unit_test(test_list_full), cmocka_unit_test(test_render),
		cmocka_unit_test(test_list_parse), cmocka_unit_test(test_validate),
		cmocka_unit_test(test_noroom_table), cmocka_unit_test(test_noroom_huge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
