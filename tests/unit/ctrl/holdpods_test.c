/*
 * holdpods_test.c - pods of older attempts held after they left the pod
 * cache (ctrl/holdpods.h): the held set a pass sees, the backoff of its checks, what ends a hold, other
 * incarnations, forgetting, and the bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "base/arena.h"
#include "ctrl/holdpods.h"

#define S 1000000000ull
#define KEY "ns/js"

static struct js_holdpod pod(const char *name)
{
	return (struct js_holdpod){.name = name, .uid = "u-p", .job_name = "js-a-0", .attempt = "0"};
}

/* Held with what it was at first sight; due at once, then backs off 1, 2,
 * 4 ... s up to the ceiling; GONE ends it. */
static void test_hold_check_backoff_gone(void **state)
{
	(void)state;
	struct js_holdpods *h = js_holdpods_new(&(struct js_holdpods_opts){.max_backoff_ns = 8 * S});
	struct js_arena *a = js_arena_new(0);
	struct js_holdpod p = pod("js-a-0-0-x");
	assert_true(js_holdpods_add(h, KEY, "uid-js", &p, 100 * S));
	struct js_holdpod *v;
	uint64_t wait;
	assert_int_equal(js_holdpods_list(h, KEY, "uid-js", a, &v, 100 * S, &wait), 1);
	assert_string_equal(v[0].name, "js-a-0-0-x");
	assert_string_equal(v[0].uid, "u-p");
	assert_string_equal(v[0].job_name, "js-a-0");
	assert_string_equal(v[0].attempt, "0");
	assert_false(v[0].deleting);
	assert_true(v[0].due);
	assert_int_equal(wait, 0);
	/* still running: next check 1 s later, then 2, 4, 8, 8 */
	uint64_t now = 100 * S;
	const uint64_t gaps[] = {1 * S, 2 * S, 4 * S, 8 * S, 8 * S};
	for (size_t i = 0; i < sizeof gaps / sizeof gaps[0]; i++) {
		js_holdpods_checked(h, KEY, "js-a-0-0-x", i == 1 ? JS_HOLDPODS_MARKED : JS_HOLDPODS_RUNNING, now);
		assert_int_equal(js_holdpods_list(h, KEY, "uid-js", a, &v, now + gaps[i] - 1, &wait), 1);
		assert_false(v[0].due);
		assert_int_equal(wait, 1);
		assert_int_equal(v[0].deleting, i >= 1); /* MARKED sticks */
		now += gaps[i];
		assert_int_equal(js_holdpods_list(h, KEY, "uid-js", a, &v, now, &wait), 1);
		assert_true(v[0].due);
	}
	/* a failed check backs off too, and holds on */
	js_holdpods_checked(h, KEY, "js-a-0-0-x", JS_HOLDPODS_ERROR, now);
	assert_int_equal(js_holdpods_list(h, KEY, "uid-js", a, &v, now, &wait), 1);
	assert_int_equal(wait, 8 * S);
	js_holdpods_checked(h, KEY, "other", JS_HOLDPODS_GONE, now); /* unknown: ignored */
	assert_int_equal(js_holdpods_count(h), 1);
	js_holdpods_checked(h, KEY, "js-a-0-0-x", JS_HOLDPODS_GONE, now);
	assert_int_equal(js_holdpods_list(h, KEY, "uid-js", a, &v, now, &wait), 0);
	assert_null(v);
	assert_int_equal(wait, UINT64_MAX);
	assert_int_equal(js_holdpods_count(h), 0);
	js_arena_free(a);
	js_holdpods_free(h);
}

/* Adding a held pod again keeps its first-sight Job name and attempt and
 * makes it due; drop and forget end holds; another incarnation of the key
 * drops the old one's pods. */
static void test_readd_drop_forget_incarnation(void **state)
{
	(void)state;
	struct js_holdpods *h = js_holdpods_new(NULL);
	struct js_arena *a = js_arena_new(0);
	struct js_holdpod p = pod("p1"), q = pod("p2");
	assert_true(js_holdpods_add(h, KEY, "uid-js", &p, 0));
	assert_true(js_holdpods_add(h, KEY, "uid-js", &q, 0));
	assert_true(js_holdpods_add(h, "ns/other", "uid-o", &p, 0));
	assert_int_equal(js_holdpods_count(h), 3);
	js_holdpods_checked(h, KEY, "p1", JS_HOLDPODS_RUNNING, 0);
	struct js_holdpod again = {.name = "p1", .uid = "u-new", .job_name = "js-b-0", .attempt = "1", .deleting = true};
	assert_true(js_holdpods_add(h, KEY, "uid-js", &again, 0));
	assert_int_equal(js_holdpods_count(h), 3);
	struct js_holdpod *v;
	size_t n = js_holdpods_list(h, KEY, "uid-js", a, &v, 0, NULL);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, "p1") == 0) {
			assert_string_equal(v[i].job_name, "js-a-0");
			assert_string_equal(v[i].attempt, "0");
			assert_string_equal(v[i].uid, "u-new");
			assert_true(v[i].deleting);
			assert_true(v[i].due);
		}
	js_holdpods_drop(h, KEY, "p2");
	js_holdpods_drop(h, KEY, "nope");
	assert_int_equal(js_holdpods_list(h, KEY, "uid-js", a, &v, 0, NULL), 1);
	/* the JobSet recreated under its name: the old one's pods are not its */
	assert_int_equal(js_holdpods_list(h, KEY, "uid-js2", a, &v, 0, NULL), 0);
	assert_int_equal(js_holdpods_count(h), 1);
	js_holdpods_forget(h, "ns/other");
	assert_int_equal(js_holdpods_count(h), 0);
	js_holdpods_forget(h, "ns/none");
	js_arena_free(a);
	js_holdpods_free(h);
}

/* At most max_pods are held over all keys; an ended hold makes room. */
static void test_bound(void **state)
{
	(void)state;
	struct js_holdpods *h = js_holdpods_new(&(struct js_holdpods_opts){.max_pods = 3});
	char name[16];
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof name, "p%d", i);
		struct js_holdpod p = pod(name);
		assert_true(js_holdpods_add(h, i == 2 ? "ns/b" : KEY, NULL, &p, 0));
	}
	struct js_holdpod p = pod("p9");
	assert_false(js_holdpods_add(h, KEY, NULL, &p, 0));
	struct js_holdpod p0 = pod("p0");
	assert_true(js_holdpods_add(h, KEY, NULL, &p0, 0)); /* already held: an update */
	struct js_holdpod unnamed = {0};
	assert_false(js_holdpods_add(h, KEY, NULL, &unnamed, 0));
	assert_int_equal(js_holdpods_count(h), 3);
	js_holdpods_checked(h, "ns/b", "p2", JS_HOLDPODS_GONE, 0);
	assert_true(js_holdpods_add(h, KEY, NULL, &p, 0));
	assert_int_equal(js_holdpods_count(h), 3);
	js_holdpods_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hold_check_backoff_gone),
		cmocka_unit_test(test_readd_drop_forget_incarnation),
		cmocka_unit_test(test_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
