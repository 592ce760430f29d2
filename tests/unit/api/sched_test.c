/*
 * sched_test.c - spec.scheduling (KEP-969) as a table: a merge patch on a
 * JobSet of two ReplicatedJobs, whether validation accepts it (with the gate
 * on, or off), and the groups it stands for (mode, names, policy, minCount);
 * then the rendered Workload, PodGroup and Job references, and the update
 * rule (immutable).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/defaults.h"
#include "api/render.h"
#include "api/sched.h"
#include "api/validate.h"
#include "base/json.h"
#include "support/testutil.h"

/* "driver": 1 replica x parallelism 1; "workers": 2 replicas x parallelism 3
 * = 7 pods at once. */
static const char base_yaml[] =
	"apiVersion: jobset.x-k8s.io/v1alpha2\n"
	"kind: JobSet\n"
	"metadata: {name: js, namespace: default, uid: u1}\n"
	"spec:\n"
	"  replicatedJobs:\n"
	"  - name: driver\n"
	"    template:\n"
	"      spec:\n"
	"        template:\n"
	"          spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}\n"
	"  - name: workers\n"
	"    replicas: 2\n"
	"    template:\n"
	"      spec:\n"
	"        completionMode: Indexed\n"
	"        parallelism: 3\n"
	"        completions: 3\n"
	"        template:\n"
	"          spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}\n";

static struct js_jobset *make(const char *patch)
{
	json_t *j = tu_yaml(base_yaml);
	tu_merge_patch(j, patch);
	struct js_jobset *js = tu_decode(j);
	json_decref(j);
	(void)js_default_jobset(js);
	return js;
}

#define SCHED(body) "{\"spec\":{\"scheduling\":" body "}}"
#define INORDER "\"startupPolicy\":{\"startupPolicyOrder\":\"InOrder\"}"

struct scase {
	const char *id;
	const char *patch;
	bool gate;
	const char *err_path; /* NULL: accepted */
	const char *err_needle;
	/* when accepted: */
	bool per_rjob;
	const char *groups; /* "name:policy:min,..." policy G or B */
};

static const struct scase cases[] = {
	{"gate off refuses spec.scheduling", SCHED("{}"), false, "spec.scheduling", "WorkloadAwareScheduling", false,
	 NULL},
	{"gate off, no scheduling: accepted", "{}", false, NULL, NULL, false, ""},
	{"empty: one Gang group of all 7 pods", SCHED("{}"), true, NULL, NULL, false, "js:G:7"},
	{"top-level Basic", SCHED("{\"policy\":{\"basic\":{}}}"), true, NULL, NULL, false, "js:B:0"},
	{"top-level Gang minCount 5", SCHED("{\"policy\":{\"gang\":{\"minCount\":5}}}"), true, NULL, NULL, false,
	 "js:G:5"},
	{"top-level minCount above the pods", SCHED("{\"policy\":{\"gang\":{\"minCount\":8}}}"), true,
	 "spec.scheduling.policy.gang.minCount", "more than the 7 pods", false, NULL},
	{"minCount 0", SCHED("{\"policy\":{\"gang\":{\"minCount\":0}}}"), true,
	 "spec.scheduling.policy.gang.minCount", "at least 1", false, NULL},
	{"both basic and gang", SCHED("{\"policy\":{\"basic\":{},\"gang\":{}}}"), true, "spec.scheduling.policy",
	 "exactly one", false, NULL},
	{"unknown field", SCHED("{\"foo\":1}"), true, "spec.scheduling.foo", "not declared", false, NULL},
	{"disruption All", SCHED("{\"disruption\":\"All\"}"), true, NULL, NULL, false, "js:G:7"},
	{"disruption Pod (1.36's spelling) is not the KEP's", SCHED("{\"disruption\":\"Pod\"}"), true,
	 "spec.scheduling.disruption", "Single", false, NULL},
	{"topology key must be a label key", SCHED("{\"constraints\":{\"topology\":[{\"key\":\"a b\"}]}}"), true,
	 "spec.scheduling.constraints.topology[0].key", "qualified name", false, NULL},
	{"targeted policy: per-ReplicatedJob groups",
	 SCHED("{\"replicatedJobPolicies\":[{\"targetReplicatedJob\":\"driver\",\"policy\":{\"basic\":{}}}]}"), true,
	 NULL, NULL, true, "js-driver:B:0,js-workers:G:6"},
	{"targeted Gang minCount within the ReplicatedJob",
	 SCHED("{\"replicatedJobPolicies\":[{\"targetReplicatedJob\":\"workers\",\"policy\":{\"gang\":{\"minCount\":"
	       "4}}}]}"),
	 true, NULL, NULL, true, "js-driver:G:1,js-workers:G:4"},
	{"targeted minCount above its ReplicatedJob",
	 SCHED("{\"replicatedJobPolicies\":[{\"targetReplicatedJob\":\"workers\",\"policy\":{\"gang\":{\"minCount\":"
	       "7}}}]}"),
	 true, "spec.scheduling.replicatedJobPolicies[0].policy.gang.minCount",
	 "more than the 6 pods", false, NULL},
	{"unknown target",
	 SCHED("{\"replicatedJobPolicies\":[{\"targetReplicatedJob\":\"nope\"}]}"), true,
	 "spec.scheduling.replicatedJobPolicies[0].targetReplicatedJob", "names no ReplicatedJob", false, NULL},
	{"duplicate target",
	 SCHED("{\"replicatedJobPolicies\":[{\"targetReplicatedJob\":\"driver\"},{\"targetReplicatedJob\":"
	       "\"driver\"}]}"),
	 true, "spec.scheduling.replicatedJobPolicies[1].targetReplicatedJob", "already", false, NULL},
	{"missing target", SCHED("{\"replicatedJobPolicies\":[{}]}"), true,
	 "spec.scheduling.replicatedJobPolicies[0].targetReplicatedJob", "must name", false, NULL},
	{"resourceClaims on a target",
	 SCHED("{\"replicatedJobPolicies\":[{\"targetReplicatedJob\":\"workers\",\"resourceClaims\":[{\"name\":"
	       "\"imex\",\"resourceClaimName\":\"shared\"}]}]}"),
	 true, NULL, NULL, true, "js-driver:G:1,js-workers:G:6"},
	{"resourceClaims need exactly one source",
	 SCHED("{\"replicatedJobPolicies\":[{\"targetReplicatedJob\":\"workers\",\"resourceClaims\":[{\"name\":"
	       "\"imex\"}]}]}"),
	 true, "spec.scheduling.replicatedJobPolicies[0].resourceClaims[0]", "exactly one", false, NULL},
	{"resourceClaims are not a composite field", SCHED("{\"resourceClaims\":[]}"), true,
	 "spec.scheduling.resourceClaims", "not declared", false, NULL},
	{"InOrder: one gang per ReplicatedJob", "{\"spec\":{" INORDER ",\"scheduling\":{}}}", true, NULL, NULL, true,
	 "js-driver:G:1,js-workers:G:6"},
	{"dependsOn: one gang per ReplicatedJob",
	 "{\"spec\":{\"scheduling\":{},\"replicatedJobs\":[{\"name\":\"driver\",\"template\":{\"spec\":{\"template\":"
	 "{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"b\"}]}}}}},{\"name\":"
	 "\"workers\",\"dependsOn\":[{\"name\":\"driver\",\"status\":\"Ready\"}],\"template\":{\"spec\":{\"template\":"
	 "{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"b\"}]}}}}}]}}",
	 true, NULL, NULL, true, "js-driver:G:1,js-workers:G:1"},
	{"InOrder with a JobSet-wide minCount",
	 "{\"spec\":{" INORDER ",\"scheduling\":{\"policy\":{\"gang\":{\"minCount\":2}}}}}", true,
	 "spec.scheduling.policy.gang.minCount", "sequenced startup", false, NULL},
	{"top-level group needs one priorityClassName",
	 "{\"spec\":{\"scheduling\":{},\"replicatedJobs\":[{\"name\":\"driver\",\"template\":{\"spec\":{\"template\":"
	 "{\"spec\":{\"priorityClassName\":\"high\",\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\","
	 "\"image\":\"b\"}]}}}}},{\"name\":\"workers\",\"template\":{\"spec\":{\"template\":{\"spec\":{"
	 "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"b\"}]}}}}}]}}",
	 true, "spec.replicatedJobs[1].template.spec.template.spec.priorityClassName", "same priorityClassName", false,
	 NULL},
};

static void check_groups(const struct scase *c, const struct js_sched_groups *g)
{
	char got[512] = "";
	size_t len = 0;
	for (size_t i = 0; i < g->n; i++)
		len += (size_t)snprintf(got + len, sizeof(got) - len, "%s%s:%c:%d", i ? "," : "", g->items[i].name,
					g->items[i].policy == JS_SCHED_GANG ? 'G' : 'B', g->items[i].min_count);
	if (strcmp(got, c->groups) != 0 || g->per_rjob != c->per_rjob)
		fail_msg("%s: groups '%s' per_rjob=%d, want '%s' per_rjob=%d", c->id, got, g->per_rjob, c->groups,
			 c->per_rjob);
}

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct scase *c = &cases[i];
		struct js_jobset *js = make(c->patch);
		struct js_validate_opts o = {.gates = {.workload_aware_scheduling = c->gate}, .strict = true};
		struct js_diag d = {0};
		int r = js_validate_create(js, &o, &d);
		if (c->err_path) {
			if (r == 0 || !js_diag_has(&d, c->err_path, c->err_needle)) {
				tu_print_diag(&d);
				fail_msg("%s: want an error at %s saying '%s'", c->id, c->err_path, c->err_needle);
			}
		} else {
			if (r != 0) {
				tu_print_diag(&d);
				fail_msg("%s: refused", c->id);
			}
			if (js->spec.scheduling) {
				struct js_sched_groups *g = NULL;
				assert_int_equal(js_sched_groups(js, NULL, &g), 0);
				check_groups(c, g);
				js_sched_groups_free(g);
			}
		}
		js_diag_done(&d);
		js_jobset_free(js);
	}
}

/* Long names get a hash suffix and stay DNS labels; the same input always
 * gives the same name. */
static void test_long_names(void **state)
{
	(void)state;
	static const char patch[] =
		"{\"metadata\":{\"name\":\"a-jobset-name-that-is-quite-long-indeed\"},\"spec\":{\"startupPolicy\":{"
		"\"startupPolicyOrder\":\"InOrder\"},\"scheduling\":{},\"replicatedJobs\":[{\"name\":\"driver\","
		"\"template\":{\"spec\":{\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":"
		"\"c\",\"image\":\"b\"}]}}}}},{\"name\":\"workers-with-a-long-replicated-job-name\",\"template\":{"
		"\"spec\":{\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\","
		"\"image\":\"b\"}]}}}}}]}}";
	struct js_jobset *js = make(patch);
	struct js_sched_groups *g = NULL, *g2 = NULL;
	assert_int_equal(js_sched_groups(js, NULL, &g), 0);
	assert_int_equal(js_sched_groups(js, NULL, &g2), 0);
	assert_int_equal(g->n, 2);
	assert_string_equal(g->items[0].name, "a-jobset-name-that-is-quite-long-indeed-driver");
	const char *n = g->items[1].name;
	assert_true(strlen(n) <= 63);
	assert_true(js_is_dns1123_label(n));
	assert_string_equal(n, g2->items[1].name);
	assert_int_equal(strncmp(n, "a-jobset-name-that-is-quite-long-indeed-workers-with-a-", 54), 0);
	assert_string_equal(g->items[1].template_name, "workers-with-a-long-replicated-job-name");
	js_sched_groups_free(g);
	js_sched_groups_free(g2);
	js_jobset_free(js);
}

/* The objects: what Kubernetes 1.36 reads. */
static void test_render(void **state)
{
	(void)state;
	struct js_jobset *js = make(SCHED(
		"{\"disruption\":\"All\",\"constraints\":{\"topology\":[{\"key\":\"topology.kubernetes.io/rack\"}]},"
		"\"replicatedJobPolicies\":[{\"targetReplicatedJob\":\"driver\",\"policy\":{\"basic\":{}},"
		"\"disruption\":\"Single\"}]}"));
	struct js_sched_groups *g = NULL;
	assert_int_equal(js_sched_groups(js, NULL, &g), 0);

	json_t *w = js_sched_render_workload(js, g);
	json_t *want = tu_yaml(
		"apiVersion: scheduling.k8s.io/v1alpha2\n"
		"kind: Workload\n"
		"metadata:\n"
		"  name: js\n"
		"  namespace: default\n"
		"  labels: {jobset.sigs.k8s.io/jobset-name: js}\n"
		"  ownerReferences: [{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, name: js, uid: u1,\n"
		"                     controller: true, blockOwnerDeletion: true}]\n"
		"spec:\n"
		"  controllerRef: {apiGroup: jobset.x-k8s.io, kind: JobSet, name: js}\n"
		"  podGroupTemplates:\n"
		"  - name: driver\n"
		"    schedulingPolicy: {basic: {}}\n"
		"    schedulingConstraints: {topology: [{key: topology.kubernetes.io/rack}]}\n"
		"    disruptionMode: Pod\n"
		"  - name: workers\n"
		"    schedulingPolicy: {gang: {minCount: 6}}\n"
		"    schedulingConstraints: {topology: [{key: topology.kubernetes.io/rack}]}\n"
		"    disruptionMode: PodGroup\n");
	if (!json_equal(w, want)) {
		char *s = json_dumps(w, JSON_INDENT(1));
		fail_msg("workload:\n%s", s);
	}
	json_decref(want);
	json_decref(w);

	json_t *pg = js_sched_render_podgroup(js, g, 1);
	assert_string_equal(js_json_str(pg, "kind"), "PodGroup");
	assert_string_equal(json_string_value(js_json_path(pg, "metadata.name")), "js-workers");
	assert_string_equal(json_string_value(js_json_path(pg, "spec.podGroupTemplateRef.workload.workloadName")), "js");
	assert_string_equal(
		json_string_value(js_json_path(pg, "spec.podGroupTemplateRef.workload.podGroupTemplateName")),
		"workers");
	assert_int_equal(json_integer_value(js_json_path(pg, "spec.schedulingPolicy.gang.minCount")), 6);
	assert_null(json_object_get(json_object_get(pg, "spec"), "name"));
	json_decref(pg);
	assert_null(js_sched_render_podgroup(js, g, 2));

	/* The Jobs: the group label and the pods' schedulingGroup, only with
	 * the gate on. */
	for (int gate = 0; gate <= 1; gate++) {
		struct js_render_opts ro = {.gates = {.workload_aware_scheduling = gate}};
		json_t *job = js_render_job(js, 1, 0, &ro);
		const char *label = json_string_value(
			json_object_get(js_json_path(job, "metadata.labels"), JS_LABEL_SCHED_GROUP_TEMPLATE));
		const char *pgn =
			json_string_value(js_json_path(job, "spec.template.spec.schedulingGroup.podGroupName"));
		if (gate) {
			assert_string_equal(label, "workers");
			assert_string_equal(pgn, "js-workers");
		} else {
			assert_null(label);
			assert_null(pgn);
		}
		json_decref(job);
	}
	js_sched_groups_free(g);
	js_jobset_free(js);
}

/* KEP-969: immutable, whether set, changed or removed. */
static void test_update(void **state)
{
	(void)state;
	static const struct {
		const char *from, *to;
		bool ok;
	} rows[] = {
		{SCHED("{}"), SCHED("{}"), true},
		{"{}", "{}", true},
		{"{}", SCHED("{}"), false},
		{SCHED("{}"), "{}", false},
		{SCHED("{}"), SCHED("{\"policy\":{\"basic\":{}}}"), false},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct js_jobset *a = make(rows[i].from), *b = make(rows[i].to);
		struct js_validate_opts o = {.gates = {.workload_aware_scheduling = true}, .strict = true};
		struct js_diag d = {0};
		int r = js_validate_update(a, b, &o, &d);
		if ((r == 0) != rows[i].ok || (!rows[i].ok && !js_diag_has(&d, "spec.scheduling", "cannot be changed"))) {
			tu_print_diag(&d);
			fail_msg("row %zu: r=%d", i, r);
		}
		js_diag_done(&d);
		js_jobset_free(a);
		js_jobset_free(b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_long_names),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_update),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
