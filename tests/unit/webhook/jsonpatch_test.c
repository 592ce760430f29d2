/*
 * jsonpatch_test.c - js_jsonpatch_diff/apply as a table: for each pair of
 * documents, the diff applied to the first gives the second, and where given,
 * the diff is exactly the expected operation list. Plus apply's refusals.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"
#include "webhook/jsonpatch.h"

struct dcase {
	const char *id, *from, *to;
	const char *ops; /* exact expected patch, or NULL */
};

static const struct dcase dcases[] = {
	{"equal", "{\"a\":1}", "{\"a\":1}", "[]"},
	{"add-member", "{\"a\":1}", "{\"a\":1,\"b\":{\"c\":true}}", "[{\"op\":\"add\",\"path\":\"/b\",\"value\":{\"c\":true}}]"},
	{"remove-member", "{\"a\":1,\"b\":2}", "{\"a\":1}", "[{\"op\":\"remove\",\"path\":\"/b\"}]"},
	{"replace-scalar", "{\"a\":{\"b\":1}}", "{\"a\":{\"b\":\"x\"}}", "[{\"op\":\"replace\",\"path\":\"/a/b\",\"value\":\"x\"}]"},
	{"escape-slash-tilde", "{}", "{\"a/b~c\":1}", "[{\"op\":\"add\",\"path\":\"/a~1b~0c\",\"value\":1}]"},
	{"array-elementwise", "{\"l\":[{\"n\":1},{\"n\":2}]}", "{\"l\":[{\"n\":1},{\"n\":2,\"m\":3}]}",
	 "[{\"op\":\"add\",\"path\":\"/l/1/m\",\"value\":3}]"},
	{"array-resized", "{\"l\":[1,2]}", "{\"l\":[1,2,3]}", "[{\"op\":\"replace\",\"path\":\"/l\",\"value\":[1,2,3]}]"},
	{"type-change", "{\"a\":[1]}", "{\"a\":{\"x\":1}}", NULL},
	{"null-to-object", "{\"spec\":{\"network\":null}}", "{\"spec\":{\"network\":{\"e\":true}}}", NULL},
	{"empty-key", "{\"\":1}", "{\"\":2}", "[{\"op\":\"replace\",\"path\":\"/\",\"value\":2}]"},
	{"deep", "{\"a\":{\"b\":{\"c\":{\"d\":[0,{\"e\":1}]}}}}", "{\"a\":{\"b\":{\"c\":{\"d\":[0,{\"e\":2}]}}}}", NULL},
};

static json_t *parse(const char *s)
{
	json_t *j = json_loads(s, JSON_DECODE_ANY, NULL);
	assert_non_null(j);
	return j;
}

static void test_diff(void **state)
{
	(void)state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(dcases); i++) {
		const struct dcase *c = &dcases[i];
		json_t *from = parse(c->from), *to = parse(c->to);
		json_t *patch = js_jsonpatch_diff(from, to);
		if (c->ops) {
			json_t *want = parse(c->ops);
			if (!json_equal(patch, want)) {
				char *got = json_dumps(patch, 0);
				fail_msg("%s: diff %s, want %s", c->id, got, c->ops);
			}
			json_decref(want);
		}
		json_t *doc = json_deep_copy(from);
		assert_int_equal(js_jsonpatch_apply(doc, patch), 0);
		if (!json_equal(doc, to))
			fail_msg("%s: diff does not round-trip", c->id);
		json_decref(doc);
		json_decref(patch);
		json_decref(from);
		json_decref(to);
	}
}

static void test_apply_refuses(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"{}",                                                   /* not an array */
		"[{\"op\":\"move\",\"path\":\"/a\",\"from\":\"/b\"}]",  /* unsupported op */
		"[{\"op\":\"replace\",\"path\":\"/nope\",\"value\":1}]", /* replace needs the member */
		"[{\"op\":\"remove\",\"path\":\"/l/5\"}]",              /* index out of range */
		"[{\"op\":\"add\",\"path\":\"/l/01\",\"value\":1}]",    /* leading zero */
		"[{\"op\":\"add\",\"path\":\"/x/y\",\"value\":1}]",     /* missing parent */
		"[{\"op\":\"add\",\"path\":\"a\",\"value\":1}]",        /* not a pointer */
		"[{\"op\":\"add\",\"path\":\"/a~2\",\"value\":1}]",     /* bad escape */
		"[{\"op\":\"add\",\"path\":\"/a\"}]",                   /* no value */
	};
	for (size_t i = 0; i < JS_ARRAY_SIZE(bad); i++) {
		json_t *doc = parse("{\"a\":1,\"l\":[1,2]}");
		json_t *p = parse(bad[i]);
		if (js_jsonpatch_apply(doc, p) != JS_EINVALID)
			fail_msg("accepted %s", bad[i]);
		json_decref(p);
		json_decref(doc);
	}
	json_t *doc = parse("{\"l\":[1,2]}");
	json_t *p = parse("[{\"op\":\"add\",\"path\":\"/l/-\",\"value\":3},{\"op\":\"add\",\"path\":\"/l/0\",\"value\":0}]");
	assert_int_equal(js_jsonpatch_apply(doc, p), 0);
	json_t *want = parse("{\"l\":[0,1,2,3]}");
	assert_true(json_equal(doc, want));
	json_decref(want);
	json_decref(p);
	json_decref(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_apply_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
