/*
 * xpod_test.c - the placement controller of --exclusive-placement=gates on
 * pods someone edited (issue 22): the pod record (ctrl/cache.h, struct
 * js_cache_xpod), the decisions' view of it under the JobSet's topology key,
 * and the patch that lifts the gate (js__placement_ungate_patch).
 *
 * The crash this guards against: a follower whose annotation
 * alpha.jobset.sigs.k8s.io/exclusive-topology a user removed was recorded
 * with no topology key, the decision said UNGATE, and the patch builder
 * dereferenced the missing key. Now the key is the JobSet's, and every
 * field of a pod may be absent or of another JSON type: each row is such a
 * pod, and says what the record, the decision and the patch are.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "core/placement.h"
#include "ctrl/cache.h"
#include "ctrl/ctrl_int.h"
#include "support/testutil.h"

#define JOB_UID "job-uid"
#define KEY "example.com/zone"

/* A gated follower as the pod webhook leaves it, with a merge patch on top
 * (the user's edit). */
static json_t *follower(const char *patch)
{
	json_t *o = tu_yaml("apiVersion: v1\nkind: Pod\n"
			    "metadata:\n"
			    "  name: js-w-0-1-abcde\n"
			    "  namespace: ns\n"
			    "  uid: pod-uid\n"
			    "  labels: {jobset.sigs.k8s.io/exclusive-placement: gated}\n"
			    "  annotations:\n"
			    "    alpha.jobset.sigs.k8s.io/exclusive-topology: example.com/zone\n"
			    "    batch.kubernetes.io/job-completion-index: '1'\n"
			    "  ownerReferences:\n"
			    "  - {apiVersion: batch/v1, kind: Job, name: js-w-0, uid: job-uid, controller: true}\n"
			    "spec:\n"
			    "  nodeSelector: {pool: gpu}\n"
			    "  schedulingGates: [{name: other/gate}, {name: jobset.sigs.k8s.io/exclusive-placement}]\n"
			    "  containers: [{name: c, image: i}]\n"
			    "status: {phase: Pending}\n");
	tu_merge_patch(o, patch);
	return o;
}

static const struct js_cache_xpod *record(const char *patch)
{
	json_t *o = follower(patch);
	int err = 0;
	const void *r = js_cache_xpod_type.transform(o, &err);
	json_decref(o);
	assert_non_null(r);
	return r;
}

struct gcase {
	const char *id;
	const char *patch;         /* the user's edit (JSON merge patch), NULL none */
	const char *domain;        /* the leader's domain */
	enum js_placement_act act; /* the decision */
	const char *add_path;      /* the patch's "add" path; NULL: no patch at all */
	int gate_at;
};

static const struct gcase cases[] = {
	{"as-created", NULL, "a", JS_PLACEMENT_UNGATE, "/spec/nodeSelector/example.com~1zone", 1},
	/* The crash: the pod's own key removed. The JobSet's is used. */
	{"topology-annotation-removed",
	 "{\"metadata\":{\"annotations\":{\"alpha.jobset.sigs.k8s.io/exclusive-topology\":null}}}", "a",
	 JS_PLACEMENT_UNGATE, "/spec/nodeSelector/example.com~1zone", 1},
	{"topology-annotation-other-key",
	 "{\"metadata\":{\"annotations\":{\"alpha.jobset.sigs.k8s.io/exclusive-topology\":\"kubernetes.io/hostname\"}}}",
	 "a", JS_PLACEMENT_UNGATE, "/spec/nodeSelector/example.com~1zone", 1},
	{"topology-annotation-a-number",
	 "{\"metadata\":{\"annotations\":{\"alpha.jobset.sigs.k8s.io/exclusive-topology\":7}}}", "a",
	 JS_PLACEMENT_UNGATE, "/spec/nodeSelector/example.com~1zone", 1},
	{"annotations-not-an-object", "{\"metadata\":{\"annotations\":null}}", "a", JS_PLACEMENT_UNGATE,
	 "/spec/nodeSelector/example.com~1zone", 1},
	/* nodeSelector removed or garbled: the whole map is added. */
	{"node-selector-removed", "{\"spec\":{\"nodeSelector\":null}}", "a", JS_PLACEMENT_UNGATE, "/spec/nodeSelector",
	 1},
	{"node-selector-a-string", "{\"spec\":{\"nodeSelector\":\"x\"}}", "a", JS_PLACEMENT_UNGATE,
	 "/spec/nodeSelector", 1},
	/* Already pinned where the leader is: lifted; elsewhere: repaired; a
	 * value of another type is no selector. */
	{"pinned-same-domain", "{\"spec\":{\"nodeSelector\":{\"example.com/zone\":\"a\"}}}", "a", JS_PLACEMENT_UNGATE,
	 "/spec/nodeSelector/example.com~1zone", 1},
	{"pinned-elsewhere", "{\"spec\":{\"nodeSelector\":{\"example.com/zone\":\"b\"}}}", "a", JS_PLACEMENT_REPAIR,
	 "/spec/nodeSelector/example.com~1zone", 1},
	{"pinned-to-a-number", "{\"spec\":{\"nodeSelector\":{\"example.com/zone\":3}}}", "a", JS_PLACEMENT_UNGATE,
	 "/spec/nodeSelector/example.com~1zone", 1},
	/* Gates edited: only our gate, by name, counts. */
	{"gate-moved-first", "{\"spec\":{\"schedulingGates\":[{\"name\":\"jobset.sigs.k8s.io/exclusive-placement\"}]}}",
	 "a", JS_PLACEMENT_UNGATE, "/spec/nodeSelector/example.com~1zone", 0},
	{"gates-not-an-array", "{\"spec\":{\"schedulingGates\":{\"name\":\"x\"}}}", "a", JS_PLACEMENT_REPAIR, NULL, -1},
	{"gate-entries-garbage", "{\"spec\":{\"schedulingGates\":[7,\"jobset.sigs.k8s.io/exclusive-placement\",{\"name\":1}]}}",
	 "a", JS_PLACEMENT_REPAIR, NULL, -1},
	/* Not addressable: decided, but nothing is patched. */
	{"uid-removed", "{\"metadata\":{\"uid\":null}}", "a", JS_PLACEMENT_UNGATE, NULL, 1},
	{"name-a-number", "{\"metadata\":{\"name\":5}}", "a", JS_PLACEMENT_UNGATE, NULL, 1},
	/* Owner edited: not this Job's pod any more; kept. */
	{"owner-removed", "{\"metadata\":{\"ownerReferences\":null}}", "a", JS_PLACEMENT_KEEP, "/spec/nodeSelector/example.com~1zone", 1},
	{"owner-garbage", "{\"metadata\":{\"ownerReferences\":[1,{\"controller\":\"yes\",\"uid\":\"job-uid\"}]}}", "a",
	 JS_PLACEMENT_KEEP, "/spec/nodeSelector/example.com~1zone", 1},
	/* Index edited to the leader's: treated as a leader, kept. */
	{"index-made-leader", "{\"metadata\":{\"annotations\":{\"batch.kubernetes.io/job-completion-index\":\"0\"}}}",
	 "a", JS_PLACEMENT_KEEP, "/spec/nodeSelector/example.com~1zone", 1},
	{"deletion-timestamp-null", "{\"metadata\":{\"deletionTimestamp\":null}}", "a", JS_PLACEMENT_UNGATE,
	 "/spec/nodeSelector/example.com~1zone", 1},
	{"phase-a-number", "{\"status\":{\"phase\":1}}", "a", JS_PLACEMENT_UNGATE, "/spec/nodeSelector/example.com~1zone",
	 1},
	{"no-domain", NULL, NULL, JS_PLACEMENT_WAIT, NULL, 1},
	{"empty-domain", NULL, "", JS_PLACEMENT_UNGATE, NULL, 1},
	{"metadata-and-spec-garbage", "{\"metadata\":7,\"spec\":[]}", "a", JS_PLACEMENT_KEEP, NULL, -1},
};

/* The "add" operation's path in `patch`, or NULL. */
static const char *add_path(const json_t *patch)
{
	size_t i;
	json_t *op;
	json_array_foreach(patch, i, op)
	{
		if (strcmp(js_json_str(op, "op"), "add") == 0)
			return js_json_str(op, "path");
	}
	return NULL;
}

static void test_edited_followers(void **state)
{
	(void)state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(cases); i++) {
		const struct gcase *c = &cases[i];
		const struct js_cache_xpod *r = record(c->patch);
		if (r->gate_at != c->gate_at)
			fail_msg("%s: gate at %d, want %d", c->id, r->gate_at, c->gate_at);
		struct js_placement_pod view = js_cache_xpod_view(r, KEY);
		enum js_placement_act act = js_placement_follower(&view, JOB_UID, c->domain);
		if (act != c->act)
			fail_msg("%s: act %d, want %d", c->id, act, c->act);
		json_t *patch = js__placement_ungate_patch(r, KEY, c->domain);
		const char *got = patch ? add_path(patch) : NULL;
		if (!(got == c->add_path || (got && c->add_path && strcmp(got, c->add_path) == 0)))
			fail_msg("%s: patch adds %s, want %s", c->id, got ? got : "(no patch)",
				 c->add_path ? c->add_path : "(no patch)");
		if (patch) {
			/* Held to this incarnation and to the gate where it was. */
			char *text = json_dumps(patch, JSON_COMPACT);
			char want[128];
			snprintf(want, sizeof want, "\"path\":\"/spec/schedulingGates/%d/name\"", c->gate_at);
			if (!strstr(text, "\"value\":\"pod-uid\"") || !strstr(text, want))
				fail_msg("%s: patch %s lacks its tests", c->id, text);
			free(text);
		}
		json_decref(patch);
		js_cache_xpod_type.unref(r);
	}
}

/* Without a key from the JobSet nothing is pinned: no selector is read and
 * no patch is built, whatever the pod says. */
static void test_no_key(void **state)
{
	(void)state;
	const struct js_cache_xpod *r = record("{\"spec\":{\"nodeSelector\":{\"example.com/zone\":\"a\"}}}");
	struct js_placement_pod view = js_cache_xpod_view(r, NULL);
	assert_null(view.selector);
	assert_int_equal(js_placement_follower(&view, JOB_UID, NULL), JS_PLACEMENT_WAIT);
	assert_null(js__placement_ungate_patch(r, NULL, "a"));
	assert_null(js__placement_ungate_patch(r, "", "a"));
	js_cache_xpod_type.unref(r);
}

/* What starts a pass: a nodeSelector or gate edit, and the topology
 * annotation (read for a Job that no JobSet owns); a status heartbeat is
 * not. */
static void test_same(void **state)
{
	(void)state;
	static const struct {
		const char *patch;
		bool same;
	} rows[] = {
		{"{\"metadata\":{\"annotations\":{\"alpha.jobset.sigs.k8s.io/exclusive-topology\":null}}}", false},
		{"{\"status\":{\"conditions\":[{\"type\":\"Ready\"}]}}", true},
		{"{\"spec\":{\"nodeSelector\":{\"example.com/zone\":\"a\"}}}", false},
		{"{\"spec\":{\"schedulingGates\":[]}}", false},
		{"{\"spec\":{\"nodeName\":\"n1\"}}", false},
		{"{\"metadata\":{\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"}}", false},
		{"{\"metadata\":{\"ownerReferences\":null}}", false},
		{"{\"metadata\":{\"annotations\":{\"jobset.sigs.k8s.io/exclusive-placement-leader\":\"elected\"}}}", false},
	};
	const struct js_cache_xpod *a = record(NULL);
	for (size_t i = 0; i < JS_ARRAY_SIZE(rows); i++) {
		const struct js_cache_xpod *b = record(rows[i].patch);
		if (js_cache_xpod_type.same(a, b) != rows[i].same)
			fail_msg("%s: same %d, want %d", rows[i].patch, !rows[i].same, rows[i].same);
		js_cache_xpod_type.unref(b);
	}
	js_cache_xpod_type.unref(js_cache_xpod_type.ref(a));
	js_cache_xpod_type.unref(a);
}

/* The follower elected to lead (js__placement_elect_patch): the gate
 * lifted where the cache saw it, held to this incarnation, the annotation
 * added (its '/' escaped), nothing pinned; the record reads it back as
 * elected. No patch for a pod without our gate or without a uid. */
static void test_elect_patch(void **state)
{
	(void)state;
	const struct js_cache_xpod *r = record(NULL);
	json_t *patch = js__placement_elect_patch(r);
	assert_non_null(patch);
	char *text = json_dumps(patch, JSON_COMPACT);
	static const char *const want[] = {
		"{\"op\":\"test\",\"path\":\"/metadata/uid\",\"value\":\"pod-uid\"}",
		"{\"op\":\"test\",\"path\":\"/spec/schedulingGates/1/name\",\"value\":\"jobset.sigs.k8s.io/exclusive-placement\"}",
		"{\"op\":\"remove\",\"path\":\"/spec/schedulingGates/1\"}",
		"{\"op\":\"add\",\"path\":\"/metadata/annotations/jobset.sigs.k8s.io~1exclusive-placement-leader\","
		"\"value\":\"elected\"}",
	};
	for (size_t i = 0; i < JS_ARRAY_SIZE(want); i++)
		if (!strstr(text, want[i]))
			fail_msg("elect patch %s lacks %s", text, want[i]);
	assert_null(strstr(text, "nodeSelector"));
	free(text);
	json_decref(patch);
	assert_false(r->elected);
	js_cache_xpod_type.unref(r);

	r = record("{\"metadata\":{\"annotations\":{\"jobset.sigs.k8s.io/exclusive-placement-leader\":\"elected\"}},"
		   "\"spec\":{\"schedulingGates\":null}}");
	assert_true(r->elected);
	assert_true(js_cache_xpod_view(r, KEY).elected);
	assert_null(js__placement_elect_patch(r)); /* no gate: nothing to lift */
	js_cache_xpod_type.unref(r);
	r = record("{\"metadata\":{\"uid\":null}}");
	assert_null(js__placement_elect_patch(r));
	js_cache_xpod_type.unref(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edited_followers),
		cmocka_unit_test(test_no_key),
		cmocka_unit_test(test_same),
		cmocka_unit_test(test_elect_patch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
