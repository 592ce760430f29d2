/*
 * load_test.c - the YAML/JSON loader (base/load.h): kubectl's YAML 1.1
 * scalars, anchors and merge keys, positions, and bad input (malformed,
 * binary, huge, deep, alias bombs): one clear error with a place, bounded
 * time and memory; and the emitter (base/emit.h) reading back what it wrote.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/emit.h"
#include "base/limits.h"
#include "base/load.h"
#include "support/testutil.h"

struct scase {
	const char *yaml;     /* "v: <scalar>" */
	const char *expected; /* compact JSON of the value */
};

static const struct scase scalars[] = {
	{"v: yes", "true"},       {"v: No", "false"},       {"v: on", "true"},       {"v: OFF", "false"},
	{"v: y", "true"},         {"v: n", "false"},        {"v: True", "true"},     {"v: ~", "null"},
	{"v: null", "null"},      {"v:", "null"},           {"v: 010", "8"},         {"v: 0x1F", "31"},
	{"v: 0o17", "15"},        {"v: 0b101", "5"},        {"v: 1_000", "1000"},    {"v: -42", "-42"},
	{"v: 1.5", "1.5"},        {"v: 1e3", "1000"},       {"v: 2.0", "2"},         {"v: '010'", "\"010\""},
	{"v: \"yes\"", "\"yes\""}, {"v: !!str 5", "\"5\""}, {"v: !!int '7'", "7"},   {"v: 1.2.3", "\"1.2.3\""},
	{"v: .inf", "\".inf\""},  {"v: abc", "\"abc\""},    {"v: 08", "8"},     {"v: 2026-01-01", "\"2026-01-01\""},
};

static void test_yaml11_scalars(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++) {
		json_t *j = tu_yaml(scalars[i].yaml);
		char *got = json_dumps(json_object_get(j, "v"), JSON_ENCODE_ANY | JSON_COMPACT);
		if (strcmp(got, scalars[i].expected) != 0)
			fprintf(stderr, "scalar %s: expected %s, got %s\n", scalars[i].yaml, scalars[i].expected, got);
		assert_string_equal(got, scalars[i].expected);
		free(got);
		json_decref(j);
	}
}

static void test_anchors_and_merge(void **state)
{
	(void)state;
	json_t *j = tu_yaml("base: &b {a: 1, b: 2}\nx:\n  <<: *b\n  b: 3\nz: *b\n");
	char *s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(s, "{\"base\":{\"a\":1,\"b\":2},\"x\":{\"a\":1,\"b\":3},\"z\":{\"a\":1,\"b\":2}}");
	free(s);
	json_decref(j);
}

struct bad {
	const char *name;
	const char *data;
	size_t len; /* 0 = strlen */
	int err;
	int line; /* expected line, 0 = any */
	const char *needle;
};

static void expect_bad(const struct bad *b)
{
	struct js_diag d;
	js_diag_init(&d);
	struct js_docs *docs = NULL;
	size_t len = b->len ? b->len : strlen(b->data);
	int r = js_docs_load("in.yaml", b->data, len, &d, &docs);
	if (r != b->err || d.n != 1 || (b->line && d.items[0].line != b->line) || !js_diag_has(&d, NULL, b->needle)) {
		fprintf(stderr, "case %s: r=%d (want %d), %zu diags\n", b->name, r, b->err, d.n);
		tu_print_diag(&d);
	}
	assert_int_equal(r, b->err);
	assert_int_equal(d.n, 1);
	assert_string_equal(d.items[0].file, "in.yaml");
	if (b->line)
		assert_int_equal(d.items[0].line, b->line);
	assert_true(js_diag_has(&d, NULL, b->needle));
	assert_null(docs);
	js_diag_done(&d);
}

static void test_bad_input(void **state)
{
	(void)state;
	static const char garbage[] = {'a', ':', ' ', (char)0xff, (char)0xfe, 0x01, 0x00, 'x'};
	const struct bad cases[] = {
		{"unclosed flow", "a: [1, 2\nb: 3\n", 0, JS_EINVALID, 0, ""},
		{"bad indentation", "a:\n  b: 1\n c: 2\n", 0, JS_EINVALID, 3, ""},
		{"binary garbage", garbage, sizeof(garbage), JS_EINVALID, 0, ""},
		{"duplicate key", "a: 1\nb: 2\na: 3\n", 0, JS_EINVALID, 3, "appears twice"},
		{"unknown alias", "a: *nope\n", 0, JS_EINVALID, 1, "names no anchor"},
		{"mapping as key", "? [a]\n: 1\n", 0, JS_EINVALID, 0, "must be a scalar"},
		{"bad !!int", "a: !!int abc\n", 0, JS_EINVALID, 1, "not a valid"},
		{"alias bomb",
		 "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
		 "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
		 "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n",
		 0, JS_ETOOLARGE, 0, "expands to more than"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_bad(&cases[i]);
}

static void test_deep_nesting(void **state)
{
	(void)state;
	size_t n = 10000;
	char *s = malloc(2 * n + 1);
	for (size_t i = 0; i < n; i++) {
		s[i] = '[';
		s[n + i] = ']';
	}
	s[2 * n] = '\0';
	struct bad b = {"10000 levels", s, 0, JS_ETOOLARGE, 1, "nesting deeper than"};
	expect_bad(&b);
	free(s);
}

static void test_huge_input(void **state)
{
	(void)state;
	size_t n = JS_LIMIT_MANIFEST_BYTES + 1;
	char *s = malloc(n);
	memset(s, 'a', n);
	struct bad b = {"over the byte limit", s, n, JS_ETOOLARGE, 0, "larger than"};
	expect_bad(&b);
	free(s);
}

static void test_positions_and_streams(void **state)
{
	(void)state;
	const char *y = "kind: ConfigMap\n---\n---\napiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nspec:\n"
			"  replicatedJobs:\n  - name: a\n    replicas: -1\n";
	struct js_diag d;
	js_diag_init(&d);
	struct js_docs *docs = NULL;
	assert_int_equal(js_docs_load("s.yaml", y, strlen(y), &d, &docs), 0);
	assert_int_equal(js_docs_count(docs), 2); /* the empty document is dropped */
	int line = 0, col = 0;
	assert_true(js_docs_pos(docs, 1, "spec.replicatedJobs[0].replicas", &line, &col));
	assert_int_equal(line, 9);
	assert_int_equal(col, 5);
	/* A path past what was written resolves to the deepest value. */
	assert_true(js_docs_pos(docs, 1, "spec.replicatedJobs[0].template.spec", &line, &col));
	assert_int_equal(line, 8);
	js_docs_free(docs);
	js_diag_done(&d);
}

/* YAML out and back in is the same tree: strings that YAML 1.1 would read
 * as another type ("true", "0755", "") are quoted, nesting and empty
 * collections survive, keys come out sorted. */
static void test_emit_round_trip(void **state)
{
	(void)state;
	const char *y = "metadata:\n  name: rt\n  finalizers: [x]\n  labels: {a: 'true', b: '0755', c: '', d: 'yes'}\n"
			"spec:\n  n: 0\n  f: false\n  empty: []\n  obj: {}\n  text: \"two\\nlines\"\n  nothing: null\n";
	json_t *j = tu_yaml(y);
	struct js_buf b;
	js_buf_init(&b, 0);
	assert_int_equal(js_emit_yaml(j, 1, &b), 0);
	json_t *back = tu_yaml(js_buf_str(&b));
	assert_true(json_equal(j, back));
	json_decref(back);
	/* JSON out is sorted and loads back too. */
	js_buf_clear(&b);
	assert_int_equal(js_emit_json(j, &b), 0);
	back = tu_yaml(js_buf_str(&b));
	assert_true(json_equal(j, back));
	assert_true(strstr(js_buf_str(&b), "\"metadata\"") < strstr(js_buf_str(&b), "\"spec\""));
	json_decref(back);
	js_buf_done(&b);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yaml11_scalars), cmocka_unit_test(test_anchors_and_merge),
		cmocka_unit_test(test_bad_input),      cmocka_unit_test(test_deep_nesting),
		cmocka_unit_test(test_huge_input),     cmocka_unit_test(test_positions_and_streams),
		cmocka_unit_test(test_emit_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
