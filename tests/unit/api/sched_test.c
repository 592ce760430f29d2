/*
 * sched_test.c - spec.scheduling (KEP-969) as a table: a merge patch on a
 * JobSet of two ReplicatedJobs, whether validation accepts it (with the gate
 * on, or off), the groups it stands for (mode, names, policy, minCount) and
 * the deprecation warnings of our first field names; then the rendered
 * Workload, PodGroup and Job references, a PodGroup shared by several
 * targets, and the update rule (immutable).
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
	/* js_sched_warnings: a warning containing this (NULL: none at all) */
	const char *warn;
};

#define RJS(body) SCHED("{\"replicatedJobs\":[" body "]}")
#define OLDRJS(body) SCHED("{\"replicatedJobPolicies\":[" body "]}")

static const struct scase cases[] = {
	{"gate off refuses spec.scheduling", SCHED("{}"), false, "spec.scheduling", "JobSetWorkloadAwareSchedulingAPI",
	 false, NULL, NULL},
	{"gate off, no scheduling: accepted", "{}", false, NULL, NULL, false, "", NULL},
	{"empty: one Gang group of all 7 pods", SCHED("{}"), true, NULL, NULL, false, "js:G:7", NULL},
	/* KEP-969's names. */
	{"top-level Basic", SCHED("{\"schedulingPolicy\":{\"basic\":{}}}"), true, NULL, NULL, false, "js:B:0", NULL},
	{"top-level Gang minCount 5", SCHED("{\"schedulingPolicy\":{\"gang\":{\"minCount\":5}}}"), true, NULL, NULL,
	 false, "js:G:5", NULL},
	{"top-level minCount above the pods", SCHED("{\"schedulingPolicy\":{\"gang\":{\"minCount\":8}}}"), true,
	 "spec.scheduling.schedulingPolicy.gang.minCount", "more than the 7 pods", false, NULL, NULL},
	{"minCount 0", SCHED("{\"schedulingPolicy\":{\"gang\":{\"minCount\":0}}}"), true,
	 "spec.scheduling.schedulingPolicy.gang.minCount", "at least 1", false, NULL, NULL},
	{"both basic and gang", SCHED("{\"schedulingPolicy\":{\"basic\":{},\"gang\":{}}}"), true,
	 "spec.scheduling.schedulingPolicy", "exactly one", false, NULL, NULL},
	{"unknown field", SCHED("{\"foo\":1}"), true, "spec.scheduling.foo", "not declared", false, NULL, NULL},
	{"disruptionMode all", SCHED("{\"disruptionMode\":{\"all\":{}}}"), true, NULL, NULL, false, "js:G:7", NULL},
	{"disruptionMode single", SCHED("{\"disruptionMode\":{\"single\":{}}}"), true, NULL, NULL, false, "js:G:7",
	 NULL},
	{"disruptionMode is a union object, not a string", SCHED("{\"disruptionMode\":\"All\"}"), true,
	 "spec.scheduling.disruptionMode", "must be an object", false, NULL, NULL},
	{"disruptionMode with both members", SCHED("{\"disruptionMode\":{\"single\":{},\"all\":{}}}"), true,
	 "spec.scheduling.disruptionMode", "exactly one of single and all", false, NULL, NULL},
	{"disruptionMode with neither member", SCHED("{\"disruptionMode\":{}}"), true, "spec.scheduling.disruptionMode",
	 "exactly one of single and all", false, NULL, NULL},
	{"disruptionMode with an unknown member", SCHED("{\"disruptionMode\":{\"Pod\":{}}}"), true,
	 "spec.scheduling.disruptionMode.Pod", "not declared", false, NULL, NULL},
	{"topology key must be a label key",
	 SCHED("{\"schedulingConstraints\":{\"topology\":[{\"key\":\"a b\"}]}}"), true,
	 "spec.scheduling.schedulingConstraints.topology[0].key", "qualified name", false, NULL, NULL},
	{"replicatedJobs entry: per-ReplicatedJob groups",
	 RJS("{\"targetReplicatedJobs\":[\"driver\"],\"schedulingPolicy\":{\"basic\":{}}}"), true, NULL, NULL, true,
	 "js-driver:B:0,js-workers:G:6", NULL},
	{"targeted Gang minCount within the ReplicatedJob",
	 RJS("{\"targetReplicatedJobs\":[\"workers\"],\"schedulingPolicy\":{\"gang\":{\"minCount\":4}}}"), true, NULL,
	 NULL, true, "js-driver:G:1,js-workers:G:4", NULL},
	{"targeted minCount above its ReplicatedJob",
	 RJS("{\"targetReplicatedJobs\":[\"workers\"],\"schedulingPolicy\":{\"gang\":{\"minCount\":7}}}"), true,
	 "spec.scheduling.replicatedJobs[0].schedulingPolicy.gang.minCount", "more than the 6 pods", false, NULL,
	 NULL},
	{"two targets share one PodGroup of 7 pods", RJS("{\"targetReplicatedJobs\":[\"workers\",\"driver\"]}"), true,
	 NULL, NULL, true, "js-driver-workers:G:7", NULL},
	{"two targets: minCount up to their sum",
	 RJS("{\"targetReplicatedJobs\":[\"driver\",\"workers\"],\"schedulingPolicy\":{\"gang\":{\"minCount\":7}}}"),
	 true, NULL, NULL, true, "js-driver-workers:G:7", NULL},
	{"two targets: minCount above their sum",
	 RJS("{\"targetReplicatedJobs\":[\"driver\",\"workers\"],\"schedulingPolicy\":{\"gang\":{\"minCount\":8}}}"),
	 true, "spec.scheduling.replicatedJobs[0].schedulingPolicy.gang.minCount", "more than the 7 pods", false,
	 NULL, NULL},
	{"a target named twice in one entry", RJS("{\"targetReplicatedJobs\":[\"driver\",\"driver\"]}"), true,
	 "spec.scheduling.replicatedJobs[0].targetReplicatedJobs[1]", "named twice", false, NULL, NULL},
	{"empty targetReplicatedJobs", RJS("{\"targetReplicatedJobs\":[]}"), true,
	 "spec.scheduling.replicatedJobs[0].targetReplicatedJobs", "must name", false, NULL, NULL},
	{"targetReplicatedJobs must be a list", RJS("{\"targetReplicatedJobs\":\"driver\"}"), true,
	 "spec.scheduling.replicatedJobs[0].targetReplicatedJobs", "must be a list", false, NULL, NULL},
	{"unknown target", RJS("{\"targetReplicatedJobs\":[\"nope\"]}"), true,
	 "spec.scheduling.replicatedJobs[0].targetReplicatedJobs[0]", "names no ReplicatedJob", false, NULL, NULL},
	{"duplicate target across entries",
	 RJS("{\"targetReplicatedJobs\":[\"driver\"]},{\"targetReplicatedJobs\":[\"workers\",\"driver\"]}"), true,
	 "spec.scheduling.replicatedJobs[1].targetReplicatedJobs[1]", "already", false, NULL, NULL},
	{"missing target", RJS("{}"), true, "spec.scheduling.replicatedJobs[0].targetReplicatedJobs", "must name",
	 false, NULL, NULL},
	{"per-Job gangs (job) are not supported",
	 RJS("{\"targetReplicatedJobs\":[\"workers\"],\"job\":{\"schedulingPolicy\":{\"gang\":{}}}}"), true,
	 "spec.scheduling.replicatedJobs[0].job", "not supported by this implementation", false, NULL, NULL},
	{"resourceClaims on an entry",
	 RJS("{\"targetReplicatedJobs\":[\"workers\"],\"resourceClaims\":[{\"name\":\"imex\",\"resourceClaimName\":"
	     "\"shared\"}]}"),
	 true, NULL, NULL, true, "js-driver:G:1,js-workers:G:6", NULL},
	{"resourceClaims need exactly one source",
	 RJS("{\"targetReplicatedJobs\":[\"workers\"],\"resourceClaims\":[{\"name\":\"imex\"}]}"), true,
	 "spec.scheduling.replicatedJobs[0].resourceClaims[0]", "exactly one", false, NULL, NULL},
	{"resourceClaims are not a top-level field", SCHED("{\"resourceClaims\":[]}"), true,
	 "spec.scheduling.resourceClaims", "not declared", false, NULL, NULL},
	{"InOrder: one gang per ReplicatedJob", "{\"spec\":{" INORDER ",\"scheduling\":{}}}", true, NULL, NULL, true,
	 "js-driver:G:1,js-workers:G:6", NULL},
	{"dependsOn: one gang per ReplicatedJob",
	 "{\"spec\":{\"scheduling\":{},\"replicatedJobs\":[{\"name\":\"driver\",\"template\":{\"spec\":{\"template\":"
	 "{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"b\"}]}}}}},{\"name\":"
	 "\"workers\",\"dependsOn\":[{\"name\":\"driver\",\"status\":\"Ready\"}],\"template\":{\"spec\":{\"template\":"
	 "{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"b\"}]}}}}}]}}",
	 true, NULL, NULL, true, "js-driver:G:1,js-workers:G:1", NULL},
	{"InOrder with a JobSet-wide minCount",
	 "{\"spec\":{" INORDER ",\"scheduling\":{\"schedulingPolicy\":{\"gang\":{\"minCount\":2}}}}}", true,
	 "spec.scheduling.schedulingPolicy.gang.minCount", "sequenced startup", false, NULL, NULL},
	{"top-level group needs one priorityClassName",
	 "{\"spec\":{\"scheduling\":{},\"replicatedJobs\":[{\"name\":\"driver\",\"template\":{\"spec\":{\"template\":"
	 "{\"spec\":{\"priorityClassName\":\"high\",\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\","
	 "\"image\":\"b\"}]}}}}},{\"name\":\"workers\",\"template\":{\"spec\":{\"template\":{\"spec\":{"
	 "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"b\"}]}}}}}]}}",
	 true, "spec.replicatedJobs[1].template.spec.template.spec.priorityClassName", "same priorityClassName", false,
	 NULL, NULL},
	{"a shared PodGroup needs one priorityClassName",
	 "{\"spec\":{\"scheduling\":{\"replicatedJobs\":[{\"targetReplicatedJobs\":[\"driver\",\"workers\"]}]},"
	 "\"replicatedJobs\":[{\"name\":\"driver\",\"template\":{\"spec\":{\"template\":"
	 "{\"spec\":{\"priorityClassName\":\"high\",\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\","
	 "\"image\":\"b\"}]}}}}},{\"name\":\"workers\",\"template\":{\"spec\":{\"template\":{\"spec\":{"
	 "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"b\"}]}}}}}]}}",
	 true, "spec.replicatedJobs[1].template.spec.template.spec.priorityClassName", "targets of this entry", false,
	 NULL, NULL},
	/* Our first names: deprecated aliases, the same meaning, a warning
	 * naming the KEP's name. */
	{"deprecated policy", SCHED("{\"policy\":{\"gang\":{\"minCount\":5}}}"), true, NULL, NULL, false, "js:G:5",
	 "spec.scheduling.policy: deprecated field name, use spec.scheduling.schedulingPolicy"},
	{"deprecated policy: errors name the path written",
	 SCHED("{\"policy\":{\"gang\":{\"minCount\":8}}}"), true, "spec.scheduling.policy.gang.minCount",
	 "more than the 7 pods", false, NULL, NULL},
	{"deprecated constraints", SCHED("{\"constraints\":{\"topology\":[{\"key\":\"rack\"}]}}"), true, NULL, NULL,
	 false, "js:G:7", "use spec.scheduling.schedulingConstraints"},
	{"deprecated disruption All", SCHED("{\"disruption\":\"All\"}"), true, NULL, NULL, false, "js:G:7",
	 "use spec.scheduling.disruptionMode"},
	{"deprecated disruption: Pod (1.36's spelling) is not the KEP's", SCHED("{\"disruption\":\"Pod\"}"), true,
	 "spec.scheduling.disruption", "Single", false, NULL, NULL},
	{"deprecated replicatedJobPolicies and targetReplicatedJob",
	 OLDRJS("{\"targetReplicatedJob\":\"driver\",\"policy\":{\"basic\":{}}}"), true, NULL, NULL, true,
	 "js-driver:B:0,js-workers:G:6",
	 "spec.scheduling.replicatedJobPolicies[0].targetReplicatedJob: deprecated field name, use "
	 "spec.scheduling.replicatedJobPolicies[0].targetReplicatedJobs"},
	{"deprecated list name, KEP entry names", OLDRJS("{\"targetReplicatedJobs\":[\"workers\"]}"), true, NULL, NULL,
	 true, "js-driver:G:1,js-workers:G:6", "spec.scheduling.replicatedJobPolicies: deprecated field name, use "
					       "spec.scheduling.replicatedJobs"},
	{"deprecated unknown target", OLDRJS("{\"targetReplicatedJob\":\"nope\"}"), true,
	 "spec.scheduling.replicatedJobPolicies[0].targetReplicatedJob", "names no ReplicatedJob", false, NULL, NULL},
	/* Both names of one field: refused at the old one's path. */
	{"both policy and schedulingPolicy",
	 SCHED("{\"policy\":{\"basic\":{}},\"schedulingPolicy\":{\"basic\":{}}}"), true, "spec.scheduling.policy",
	 "both are set", false, NULL, NULL},
	{"both constraints and schedulingConstraints",
	 SCHED("{\"constraints\":{},\"schedulingConstraints\":{}}"), true, "spec.scheduling.constraints",
	 "both are set", false, NULL, NULL},
	{"both disruption and disruptionMode", SCHED("{\"disruption\":\"All\",\"disruptionMode\":{\"all\":{}}}"), true,
	 "spec.scheduling.disruption", "both are set", false, NULL, NULL},
	{"both replicatedJobPolicies and replicatedJobs",
	 SCHED("{\"replicatedJobPolicies\":[],\"replicatedJobs\":[{\"targetReplicatedJobs\":[\"driver\"]}]}"), true,
	 "spec.scheduling.replicatedJobPolicies", "both are set", false, NULL, NULL},
	{"both targetReplicatedJob and targetReplicatedJobs",
	 RJS("{\"targetReplicatedJob\":\"driver\",\"targetReplicatedJobs\":[\"driver\"]}"), true,
	 "spec.scheduling.replicatedJobs[0].targetReplicatedJob", "both are set", false, NULL, NULL},
	{"both names inside an entry",
	 RJS("{\"targetReplicatedJobs\":[\"driver\"],\"disruption\":\"All\",\"disruptionMode\":{\"all\":{}}}"), true,
	 "spec.scheduling.replicatedJobs[0].disruption", "both are set", false, NULL, NULL},
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
			json_t *w = js_sched_warnings(js);
			bool found = false;
			size_t wi;
			json_t *wv;
			json_array_foreach(w, wi, wv) found |= c->warn && strstr(json_string_value(wv), c->warn);
			if (c->warn ? !found : json_array_size(w) > 0) {
				char *ws = json_dumps(w, 0);
				fail_msg("%s: warnings %s, want %s", c->id, ws, c->warn ? c->warn : "none");
			}
			json_decref(w);
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
		"{\"disruptionMode\":{\"all\":{}},\"schedulingConstraints\":{\"topology\":[{\"key\":"
		"\"topology.kubernetes.io/rack\"}]},\"replicatedJobs\":[{\"targetReplicatedJobs\":[\"driver\"],"
		"\"schedulingPolicy\":{\"basic\":{}},\"disruptionMode\":{\"single\":{}}}]}"));
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

	/* The Jobs: the group-template annotation (KEP-969: an annotation, no
	 * label) and the pods' schedulingGroup, only with the gate on. */
	for (int gate = 0; gate <= 1; gate++) {
		struct js_render_opts ro = {.gates = {.workload_aware_scheduling = gate}};
		json_t *job = js_render_job(js, 1, 0, &ro);
		const char *ann = json_string_value(
			json_object_get(js_json_path(job, "metadata.annotations"), JS_ANN_SCHED_GROUP_TEMPLATE));
		const char *pgn =
			json_string_value(js_json_path(job, "spec.template.spec.schedulingGroup.podGroupName"));
		assert_null(json_object_get(js_json_path(job, "metadata.labels"), JS_ANN_SCHED_GROUP_TEMPLATE));
		assert_null(json_object_get(js_json_path(job, "spec.template.metadata.labels"),
					    JS_ANN_SCHED_GROUP_TEMPLATE));
		if (gate) {
			assert_string_equal(ann, "workers");
			assert_string_equal(pgn, "js-workers");
		} else {
			assert_null(ann);
			assert_null(pgn);
		}
		json_decref(job);
	}
	js_sched_groups_free(g);
	js_jobset_free(js);
}

/* KEP-969: the targets of one replicatedJobs entry share one PodGroup and
 * one template; the Jobs of each name it. */
static void test_shared_group(void **state)
{
	(void)state;
	struct js_jobset *js = make(SCHED("{\"replicatedJobs\":[{\"targetReplicatedJobs\":[\"workers\",\"driver\"]}]}"));
	struct js_sched_groups *g = NULL;
	assert_int_equal(js_sched_groups(js, NULL, &g), 0);
	assert_int_equal(g->n, 1);
	assert_string_equal(g->items[0].template_name, "driver-workers");
	assert_ptr_equal(js_sched_group_of(g, 0), &g->items[0]);
	assert_ptr_equal(js_sched_group_of(g, 1), &g->items[0]);
	assert_null(js_sched_group_of(g, 2));
	json_t *pg = js_sched_render_podgroup(js, g, 0);
	assert_string_equal(json_string_value(js_json_path(pg, "metadata.name")), "js-driver-workers");
	assert_int_equal(json_integer_value(js_json_path(pg, "spec.schedulingPolicy.gang.minCount")), 7);
	json_decref(pg);
	struct js_render_opts ro = {.gates = {.workload_aware_scheduling = true}};
	for (size_t ri = 0; ri < 2; ri++) {
		json_t *job = js_render_job(js, ri, 0, &ro);
		assert_string_equal(json_string_value(json_object_get(js_json_path(job, "metadata.annotations"),
								      JS_ANN_SCHED_GROUP_TEMPLATE)),
				    "driver-workers");
		assert_string_equal(
			json_string_value(js_json_path(job, "spec.template.spec.schedulingGroup.podGroupName")),
			"js-driver-workers");
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
		{SCHED("{}"), SCHED("{\"schedulingPolicy\":{\"basic\":{}}}"), false},
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
		cmocka_unit_test(test_shared_group),
		cmocka_unit_test(test_update),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
