/*
 * json_test.c - merge patches (base/json.h): js_json_merge_diff(from, to)
 * applied to `from` with js_json_merge_patch gives `to`, is NULL exactly
 * when the two are equal, and carries only what changed - the controller's
 * status write sends this diff (ctrl/status.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/json.h"

struct dcase {
	const char *name;
	const char *from, *to; /* JSON; from may be NULL (absent) */
	const char *diff;      /* expected patch, NULL = none */
};

static const struct dcase cases[] = {
	{"equal", "{\"a\":1,\"b\":{\"c\":[1,2]}}", "{\"b\":{\"c\":[1,2]},\"a\":1}", NULL},
	{"absent from", NULL, "{\"a\":1}", "{\"a\":1}"},
	{"a counter", "{\"restarts\":0,\"x\":\"y\"}", "{\"restarts\":1,\"x\":\"y\"}", "{\"restarts\":1}"},
	{"a member goes", "{\"a\":1,\"b\":2}", "{\"a\":1}", "{\"b\":null}"},
	{"nested", "{\"s\":{\"a\":1,\"b\":2}}", "{\"s\":{\"a\":1,\"b\":3,\"c\":4}}", "{\"s\":{\"b\":3,\"c\":4}}"},
	{"arrays whole", "{\"l\":[{\"n\":\"w\",\"r\":1}]}", "{\"l\":[{\"n\":\"w\",\"r\":2}]}",
	 "{\"l\":[{\"n\":\"w\",\"r\":2}]}"},
	{"object replaces a scalar", "{\"a\":1}", "{\"a\":{\"b\":1}}", "{\"a\":{\"b\":1}}"},
	{"empty object appears", "{}", "{\"a\":{}}", "{\"a\":{}}"},
};

static json_t *parse(const char *s)
{
	if (!s)
		return NULL;
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	if (!j)
		fail_msg("bad JSON in the table: %s", e.text);
	return j;
}

static void test_merge_diff(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct dcase *k = &cases[i];
		json_t *from = parse(k->from), *to = parse(k->to), *want = parse(k->diff);
		json_t *d = js_json_merge_diff(from, to);
		if (!(d == NULL && want == NULL) && !(d && want && json_equal(d, want))) {
			char *got = d ? json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
			fail_msg("%s: diff %s, want %s", k->name, got ? got : "(none)", k->diff ? k->diff : "(none)");
		}
		/* Applying it gives `to`. */
		json_t *applied = from ? json_deep_copy(from) : json_object();
		if (d)
			js_json_merge_patch(applied, d);
		if (!json_equal(applied, to))
			fail_msg("%s: from + diff != to", k->name);
		json_decref(applied);
		json_decref(d);
		json_decref(from);
		json_decref(to);
		json_decref(want);
	}
}

/* js_json_controller_uid: the controller reference wins, wherever it is. */
static void test_controller_uid(void **state)
{
	(void)state;
	static const struct {
		const char *obj, *want;
	} rows[] = {
		{"{}", NULL},
		{"{\"metadata\":{}}", NULL},
		{"{\"metadata\":{\"ownerReferences\":[{\"uid\":\"a\"}]}}", NULL},
		{"{\"metadata\":{\"ownerReferences\":[{\"uid\":\"a\",\"controller\":false}]}}", NULL},
		{"{\"metadata\":{\"ownerReferences\":[{\"uid\":\"a\"},{\"uid\":\"b\",\"controller\":true}]}}", "b"},
		{"{\"metadata\":{\"ownerReferences\":[{\"controller\":true}]}}", NULL},
		{"{\"metadata\":{\"ownerReferences\":{\"uid\":\"a\",\"controller\":true}}}", NULL},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *o = json_loads(rows[i].obj, 0, NULL);
		assert_non_null(o);
		const char *got = js_json_controller_uid(o);
		if (!rows[i].want ? got != NULL : !got || strcmp(got, rows[i].want) != 0)
			fail_msg("%s: got %s, want %s", rows[i].obj, got ? got : "NULL",
				 rows[i].want ? rows[i].want : "NULL");
		json_decref(o);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_diff),
		cmocka_unit_test(test_controller_uid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
