/*
 * codec_test.c - the JobSet codec (api/codec.h) round trip: decode, encode
 * and decode again is the identity, a copy encodes as its source, and the fields of the embedded Job
 * template that we do not model survive (upstream #893). YAML text out and
 * back is the emitter's and loader's business (tests/unit/base/load_test.c).
 */
#include <stdlib.h>
#include <string.h>

#include "api/codec.h"
#include "support/testutil.h"

static void test_round_trip(void **state)
{
	(void)state;
	const char *y =
		"apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: rt\n  finalizers: [x]\n"
		"spec:\n  suspend: false\n  replicatedJobs:\n  - name: w\n    replicas: 0\n    dependsOn: []\n"
		"    template:\n      spec:\n        parallelism: 0\n        futureJobField: {x: 1}\n        template:\n"
		"          spec:\n            schedulingGroup: {podGroupName: g}\n            containers: [{name: c, image: i, "
		"futureContainerField: 5}]\n  failurePolicy: {maxRestarts: 0, rules: []}\nstatus:\n  restarts: 0\n";
	json_t *j = tu_yaml(y);
	struct js_jobset *js = tu_decode(j);
	json_t *e1 = js_codec_encode_jobset(js);
	assert_true(json_equal(j, e1)); /* nothing dropped, nothing added: suspend false, replicas 0, [] kept */
	struct js_jobset *js2 = tu_decode(e1);
	json_t *e2 = js_codec_encode_jobset(js2);
	assert_true(json_equal(e1, e2));
	/* A copy (by the codec's tables, no JSON in between) is the same. */
	struct js_jobset *js3 = js_jobset_copy(js);
	json_t *e3 = js_codec_encode_jobset(js3);
	assert_true(json_equal(e1, e3));
	json_decref(e3);
	js_jobset_free(js3);
	json_decref(e1);
	json_decref(e2);
	json_decref(j);
	js_jobset_free(js);
	js_jobset_free(js2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
