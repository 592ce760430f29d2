/*
 * kprint_test.c - kubectl's output conventions (kube/kprint.h): ages as
 * apimachinery's duration.HumanDuration prints them, tabwriter tables, and
 * pruning a live object to a rendered one's shape.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "kube/kprint.h"

/* Expected values from HumanDuration's rules (apimachinery util/duration). */
static const struct {
	int64_t s;
	const char *want;
} durations[] = {
	{-5, "<invalid>"}, {-1, "0s"}, {0, "0s"}, {119, "119s"}, {120, "2m"}, {125, "2m5s"},
	{599, "9m59s"}, {600, "10m"}, {10799, "179m"}, {10800, "3h"}, {3 * 3600 + 60, "3h1m"},
	{8 * 3600 - 1, "7h59m"}, {8 * 3600, "8h"}, {47 * 3600 + 3599, "47h"}, {48 * 3600, "2d"},
	{49 * 3600, "2d1h"}, {8 * 86400 - 1, "7d23h"}, {8 * 86400, "8d"}, {729 * 86400, "729d"},
	{730 * 86400, "2y"}, {731 * 86400, "2y1d"}, {8 * 365 * 86400, "8y"}, {20 * 365 * 86400 + 5, "20y"},
};

static void test_duration(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
		char b[JS_KPRINT_AGE_LEN];
		assert_string_equal(js_kprint_duration(durations[i].s, b), durations[i].want);
	}
}

static void test_age(void **state)
{
	(void)state;
	char b[JS_KPRINT_AGE_LEN];
	/* 2023-11-14T22:13:20Z is 1700000000. */
	assert_string_equal(js_kprint_age("2023-11-14T22:13:20Z", 1700000000 + 65, b), "65s");
	assert_string_equal(js_kprint_age("2023-11-14T22:13:20Z", 1700000000 + 3 * 86400, b), "3d");
	assert_string_equal(js_kprint_age(NULL, 1700000000, b), "<unknown>");
	assert_string_equal(js_kprint_age("yesterday", 1700000000, b), "<unknown>");
}

static void test_table(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		const char *rows[3][3];
		size_t nrows;
		const char *indent;
		const char *want;
	} cases[] = {
		{"min width 6, padding 3, last column unpadded",
		 {{"NAME", "AGE", "X"}, {"a", "5s", "long value"}}, 2, "",
		 "NAME   AGE   X\na      5s    long value\n"},
		{"widest cell plus 3", {{"A", "B", "C"}, {"abcdefgh", NULL, "z"}}, 2, "  ",
		 "  A          B     C\n  abcdefgh         z\n"},
		{"newline cut with ...", {{"T", "MESSAGE", "E"}, {"x", "one\ntwo", "e"}}, 2, "",
		 "T     MESSAGE   E\nx     one...    e\n"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct js_ktable *t = js_ktable_new(3);
		for (size_t r = 0; r < cases[i].nrows; r++)
			js_ktable_add(t, cases[i].rows[r]);
		assert_int_equal(js_ktable_rows(t), cases[i].nrows);
		struct js_buf b;
		js_buf_init(&b, 0);
		assert_int_equal(js_ktable_print(t, cases[i].indent, &b), 0);
		if (strcmp(js_buf_str(&b), cases[i].want) != 0)
			fail_msg("%s: got\n%s\nwant\n%s", cases[i].name, js_buf_str(&b), cases[i].want);
		js_buf_done(&b);
		js_ktable_free(t);
	}
}

static void test_prune(void **state)
{
	(void)state;
	static const struct {
		const char *name, *live, *shape, *want;
	} cases[] = {
		{"server fields dropped", "{\"a\":1,\"status\":{\"x\":1},\"metadata\":{\"name\":\"n\",\"uid\":\"u\"}}",
		 "{\"a\":2,\"metadata\":{\"name\":\"m\"}}", "{\"a\":1,\"metadata\":{\"name\":\"n\"}}"},
		{"absent stays absent", "{\"a\":1}", "{\"a\":1,\"b\":2}", "{\"a\":1}"},
		{"arrays of equal length pruned element-wise", "{\"c\":[{\"n\":\"x\",\"d\":1},{\"n\":\"y\"}]}",
		 "{\"c\":[{\"n\":\"x\"},{\"n\":\"z\"}]}", "{\"c\":[{\"n\":\"x\"},{\"n\":\"y\"}]}"},
		{"arrays of other length kept whole", "{\"c\":[{\"n\":\"x\",\"d\":1}]}", "{\"c\":[{},{}]}",
		 "{\"c\":[{\"n\":\"x\",\"d\":1}]}"},
		{"scalar against object: live", "{\"a\":\"s\"}", "{\"a\":{\"b\":1}}", "{\"a\":\"s\"}"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *live = json_loads(cases[i].live, 0, NULL), *shape = json_loads(cases[i].shape, 0, NULL);
		json_t *want = json_loads(cases[i].want, 0, NULL);
		json_t *got = js_kprint_prune(live, shape);
		if (!json_equal(got, want)) {
			char *g = json_dumps(got, JSON_SORT_KEYS);
			fail_msg("%s: got %s", cases[i].name, g);
		}
		json_decref(live);
		json_decref(shape);
		json_decref(want);
		json_decref(got);
	}
	assert_null(js_kprint_prune(NULL, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_age),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_prune),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
