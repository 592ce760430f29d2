/*
 * defaults_test.c - SPEC §4 defaulting (acceptance WH-001..WH-019), and
 * idempotence: defaulting a defaulted object changes nothing (upstream #926).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/codec.h"
#include "api/defaults.h"
#include "base/json.h"
#include "support/testutil.h"

static const char base_yaml[] =
	"apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js}\nspec:\n  replicatedJobs:\n"
	"  - name: rj\n    template:\n      spec:\n        template:\n          spec:\n"
	"            containers: [{name: test, image: bash}]\n";

struct dcase {
	const char *id;
	const char *patch;
	const char *path;     /* dotted path into the encoded result (arrays by [i] not supported: use 0th via rj0) */
	const char *expected; /* compact JSON, or NULL for "absent" */
};

#define RJ0 "spec.replicatedJobs.0."

static const struct dcase cases[] = {
	{"WH-001 completionMode Indexed", NULL, RJ0 "template.spec.completionMode", "\"Indexed\""},
	{"WH-002 NonIndexed kept",
	 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"rj\",\"template\":{\"spec\":{\"completionMode\":\"NonIndexed\",\"template\":{\"spec\":{\"containers\":[]}}}}}]}}",
	 RJ0 "template.spec.completionMode", "\"NonIndexed\""},
	{"WH-003 network defaulted", NULL, "spec.network", "{\"enableDNSHostnames\":true,\"publishNotReadyAddresses\":true}"},
	{"WH-004 enableDNSHostnames false kept", "{\"spec\":{\"network\":{\"enableDNSHostnames\":false}}}", "spec.network",
	 "{\"enableDNSHostnames\":false,\"publishNotReadyAddresses\":true}"},
	{"WH-005 publishNotReadyAddresses false kept", "{\"spec\":{\"network\":{\"publishNotReadyAddresses\":false}}}", "spec.network",
	 "{\"enableDNSHostnames\":true,\"publishNotReadyAddresses\":false}"},
	{"WH-007 restartPolicy OnFailure", NULL, RJ0 "template.spec.template.spec.restartPolicy", "\"OnFailure\""},
	{"WH-009 successPolicy All", NULL, "spec.successPolicy", "{\"operator\":\"All\"}"},
	{"WH-010 successPolicy Any kept", "{\"spec\":{\"successPolicy\":{\"operator\":\"Any\"}}}", "spec.successPolicy", "{\"operator\":\"Any\"}"},
	{"WH-011 startupPolicy AnyOrder", NULL, "spec.startupPolicy", "{\"startupPolicyOrder\":\"AnyOrder\"}"},
	{"WH-012 managedBy never defaulted", NULL, "spec.managedBy", NULL},
	{"WH-013 rule name", "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"action\":\"FailJobSet\"}]}}}", "spec.failurePolicy.rules.0.name",
	 "\"failurePolicyRule0\""},
	{"WH-014 rule name uses its index",
	 "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"name\":\"ruleWithAName\",\"action\":\"FailJobSet\"},{\"action\":\"FailJobSet\"}]}}}",
	 "spec.failurePolicy.rules.1.name", "\"failurePolicyRule1\""},
	{"WH-015 retentionPolicy Delete", "{\"spec\":{\"volumeClaimPolicies\":[{\"templates\":[{\"metadata\":{\"name\":\"v\"}}]}]}}",
	 "spec.volumeClaimPolicies.0.retentionPolicy", "{\"whenDeleted\":\"Delete\"}"},
	{"WH-016 restartStrategy Recreate", "{\"spec\":{\"failurePolicy\":{}}}", "spec.failurePolicy", "{\"restartStrategy\":\"Recreate\"}"},
	{"WH-017 replicas 1", NULL, RJ0 "replicas", "1"},
	{"WH-017 groupName default", NULL, RJ0 "groupName", "\"default\""},
	{"WH-018 whenDeleted Delete", "{\"spec\":{\"volumeClaimPolicies\":[{\"templates\":[],\"retentionPolicy\":{}}]}}",
	 "spec.volumeClaimPolicies.0.retentionPolicy.whenDeleted", "\"Delete\""},
	{"WH-019 subdomain not defaulted", NULL, "spec.network.subdomain", NULL},
	{"D2 explicit replicas 0 stays",
	 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"rj\",\"replicas\":0,\"template\":{\"spec\":{\"template\":{\"spec\":{\"containers\":[]}}}}}]}}",
	 RJ0 "replicas", "0"},
};

/* Walk a dotted path where numeric parts index arrays. */
static json_t *walk(json_t *j, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	char *save = NULL;
	for (char *t = strtok_r(buf, ".", &save); t && j; t = strtok_r(NULL, ".", &save))
		j = json_is_array(j) ? json_array_get(j, strtoul(t, NULL, 10)) : json_object_get(j, t);
	return j;
}

static void test_defaults_table(void **state)
{
	(void)state;
	int failures = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct dcase *c = &cases[i];
		json_t *j = tu_yaml(base_yaml);
		tu_merge_patch(j, c->patch);
		struct js_jobset *js = tu_decode(j);
		js_default_jobset(js);
		json_t *out = js_codec_encode_jobset(js);
		json_t *v = walk(out, c->path);
		char *got = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		bool ok = c->expected ? (got && strcmp(got, c->expected) == 0) : !got;
		if (!ok) {
			fprintf(stderr, "FAIL %s: %s expected %s got %s\n", c->id, c->path, c->expected ? c->expected : "absent",
				got ? got : "absent");
			failures++;
		}
		/* Idempotence: a second pass changes nothing. */
		if (js_default_jobset(js)) {
			fprintf(stderr, "FAIL %s: defaulting twice changed the object\n", c->id);
			failures++;
		}
		free(got);
		json_decref(out);
		json_decref(j);
		js_jobset_free(js);
	}
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_defaults_table)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
