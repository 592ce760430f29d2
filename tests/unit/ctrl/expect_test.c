/*
 * expect_test.c - expectations of the controller's own writes
 * (ctrl/expect.h): a key waits until a fake cache shows what was written,
 * in order, up to its deadline; new incarnations, deletion and the memory
 * bound drop them; keys never checked again are swept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrl/expect.h"

#define S 1000000000ull

/* A fake Job cache: names shown as existing, names shown gone, suspended. */
struct cache {
	const char *exists[8];
	const char *uids[8];   /* uid of exists[i]; NULL = any */
	const char *suspended[8];
	const char *rv;        /* the last resourceVersion the watch delivered; NULL = none */
	int calls;             /* seen() calls */
};

static bool in(const char *const *set, const char *name)
{
	for (size_t i = 0; i < 8 && set[i]; i++)
		if (strcmp(set[i], name) == 0)
			return true;
	return false;
}

static bool seen(void *user, const struct js_expect_write *w)
{
	enum js_expect_want want = w->want;
	struct cache *c = user;
	const char *name = w->name, *uid = w->uid;
	c->calls++;
	/* The watch has passed the write's resourceVersion. */
	if (w->rv && c->rv && strtoull(c->rv, NULL, 10) >= strtoull(w->rv, NULL, 10))
		return true;
	const char *cuid = NULL;
	bool present = false;
	for (size_t i = 0; i < 8 && c->exists[i]; i++)
		if (strcmp(c->exists[i], name) == 0) {
			present = true;
			cuid = c->uids[i];
		}
	switch (want) {
	case JS_EXPECT_EXISTS:
		return present;
	case JS_EXPECT_GONE:
		return !present || (uid && cuid && strcmp(uid, cuid) != 0);
	case JS_EXPECT_SUSPENDED:
		return !present || in(c->suspended, name);
	case JS_EXPECT_RESUMED:
		return !present || !in(c->suspended, name);
	case JS_EXPECT_STATUS:
	case JS_EXPECT__COUNT:
		break;
	}
	return false;
}

/* Record writes of `names` (no uid, no resourceVersion). */
static int add_names(struct js_expect *e, const char *key, const char *owner, enum js_expect_want want,
		     const char *const *names, size_t n, uint64_t now)
{
	struct js_expect_write *w = calloc(n, sizeof *w);
	for (size_t i = 0; i < n; i++)
		w[i] = (struct js_expect_write){.want = want, .name = names[i]};
	int r = js_expect_add(e, key, owner, w, n, now);
	free(w);
	return r;
}

static void add(struct js_expect *e, const char *key, const char *owner, enum js_expect_want want,
		const char *const *names, size_t n, uint64_t now)
{
	assert_int_equal(add_names(e, key, owner, want, names, n, now), 0);
}

/* Writes of several kinds become visible one by one; the key waits until
 * the last is shown, then holds nothing. */
static void test_waits_until_all_shown(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		enum js_expect_want want;
		struct cache shown;   /* the cache after the write */
		size_t pending;       /* what the check says with that cache */
	} steps[] = {
		{"none shown", JS_EXPECT_EXISTS, {.exists = {NULL}}, 3},
		{"first shown", JS_EXPECT_EXISTS, {.exists = {"js-w-0"}}, 2},
		{"out of order: the check stops at the first missing", JS_EXPECT_EXISTS,
		 {.exists = {"js-w-0", "js-w-2"}}, 2},
		{"all shown", JS_EXPECT_EXISTS, {.exists = {"js-w-0", "js-w-1", "js-w-2"}}, 0},
	};
	struct js_expect *e = js_expect_new(NULL);
	const char *names[] = {"js-w-0", "js-w-1", "js-w-2"};
	add(e, "ns/js", "u1", JS_EXPECT_EXISTS, names, 3, 0);
	assert_int_equal(js_expect_names(e), 3);
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		struct cache c = steps[i].shown;
		struct js_expect_result res;
		size_t p = js_expect_check(e, "ns/js", "u1", seen, &c, 1 * S, &res);
		if (p != steps[i].pending || res.pending != p || res.expired)
			fail_msg("%s: pending %zu, want %zu", steps[i].name, p, steps[i].pending);
		if (p)
			assert_int_equal(res.left_ns, JS_EXPECT_TIMEOUT_NS - 1 * S);
	}
	assert_int_equal(js_expect_names(e), 0);
	/* Another key never written: nothing to wait for. */
	struct cache c = {0};
	struct js_expect_result res;
	assert_int_equal(js_expect_check(e, "ns/other", "u9", seen, &c, 1 * S, &res), 0);
	assert_int_equal(c.calls, 0);
	js_expect_free(e);
}

/* Deletes (with the uid written), suspends and resumes; a write whose
 * resourceVersion the watch has passed (a Job created and deleted again
 * before the check: the cache never shows it, and need not). */
static void test_kinds(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		enum js_expect_want want;
		const char *uid, *rv;
		struct cache shown;
		size_t pending;
	} cases[] = {
		{"create: not shown", JS_EXPECT_EXISTS, NULL, "120", {.exists = {NULL}, .rv = "119"}, 1},
		{"create: the watch passed it", JS_EXPECT_EXISTS, NULL, "120", {.exists = {NULL}, .rv = "121"}, 0},
		{"create: shown", JS_EXPECT_EXISTS, NULL, "120", {.exists = {"j"}, .rv = "119"}, 0},
		{"delete: still there", JS_EXPECT_GONE, "a", NULL, {.exists = {"j"}, .uids = {"a"}}, 1},
		{"delete: gone", JS_EXPECT_GONE, "a", NULL, {.exists = {NULL}}, 0},
		{"delete: a newer incarnation", JS_EXPECT_GONE, "a", NULL, {.exists = {"j"}, .uids = {"b"}}, 0},
		{"suspend: not yet", JS_EXPECT_SUSPENDED, NULL, NULL, {.exists = {"j"}}, 1},
		{"suspend: shown", JS_EXPECT_SUSPENDED, NULL, NULL, {.exists = {"j"}, .suspended = {"j"}}, 0},
		{"suspend: gone", JS_EXPECT_SUSPENDED, NULL, NULL, {.exists = {NULL}}, 0},
		{"resume: not yet", JS_EXPECT_RESUMED, NULL, NULL, {.exists = {"j"}, .suspended = {"j"}}, 1},
		{"resume: shown", JS_EXPECT_RESUMED, NULL, NULL, {.exists = {"j"}}, 0},
		{"status write: the JobSet cache older", JS_EXPECT_STATUS, NULL, "300", {.rv = "299"}, 1},
		{"status write: shown", JS_EXPECT_STATUS, NULL, "300", {.rv = "300"}, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct js_expect *e = js_expect_new(NULL);
		struct js_expect_write w = {.want = cases[i].want, .name = "j", .uid = cases[i].uid, .rv = cases[i].rv};
		assert_int_equal(js_expect_add(e, "ns/js", "u1", &w, 1, 0), 0);
		struct cache c = cases[i].shown;
		struct js_expect_result res;
		size_t p = js_expect_check(e, "ns/js", "u1", seen, &c, 0, &res);
		if (p != cases[i].pending)
			fail_msg("%s: pending %zu, want %zu", cases[i].name, p, cases[i].pending);
		js_expect_free(e);
	}
}

/* A check costs what the cache caught up on plus one lookup, not one per
 * write held (10,000 creates, checked after every watch event). */
static void test_check_stops_at_first_missing(void **state)
{
	(void)state;
	struct js_expect *e = js_expect_new(NULL);
	enum { N = 10000 };
	char **names = calloc(N, sizeof *names);
	for (size_t i = 0; i < N; i++) {
		names[i] = malloc(32);
		snprintf(names[i], 32, "js-w-%zu", i);
	}
	add(e, "ns/js", "u1", JS_EXPECT_EXISTS, (const char *const *)names, N, 0);
	struct cache c = {0};
	struct js_expect_result res;
	for (int k = 0; k < 100; k++)
		assert_int_equal(js_expect_check(e, "ns/js", "u1", seen, &c, 1, &res), N);
	assert_int_equal(c.calls, 100);
	for (size_t i = 0; i < N; i++)
		free(names[i]);
	free(names);
	js_expect_free(e);
}

/* The deadline: a key whose writes the cache never shows is given up once,
 * with a line naming what it waited for, and reconciled again. A later
 * write moves the deadline. */
static void test_deadline(void **state)
{
	(void)state;
	struct js_expect_opts o = {.timeout_ns = 10 * S};
	struct js_expect *e = js_expect_new(&o);
	const char *a[] = {"js-w-0", "js-w-1"}, *b[] = {"js-w-2"};
	add(e, "ns/js", "u1", JS_EXPECT_EXISTS, a, 2, 0);
	add(e, "ns/js", "u1", JS_EXPECT_GONE, b, 1, 5 * S); /* deadline now 15 s */
	struct cache c = {.exists = {"js-w-2"}};
	struct js_expect_result res;
	assert_int_equal(js_expect_check(e, "ns/js", "u1", seen, &c, 14 * S, &res), 3);
	assert_null(res.expired);
	assert_int_equal(res.left_ns, 1 * S);
	assert_int_equal(js_expect_check(e, "ns/js", "u1", seen, &c, 15 * S, &res), 0);
	assert_non_null(res.expired);
	assert_non_null(strstr(res.expired, "still do not show 3 of this process's writes after 15.0 s"));
	assert_non_null(strstr(res.expired, "create of Job js-w-0, create of Job js-w-1, delete of Job js-w-2"));
	free(res.expired);
	assert_int_equal(js_expect_names(e), 0);
	/* Logged once: the next check has nothing left. */
	assert_int_equal(js_expect_check(e, "ns/js", "u1", seen, &c, 16 * S, &res), 0);
	assert_null(res.expired);
	js_expect_free(e);
}

/* Another incarnation of the JobSet, and the JobSet's deletion, drop what
 * the old one wrote. */
static void test_owner_and_forget(void **state)
{
	(void)state;
	struct js_expect *e = js_expect_new(NULL);
	const char *a[] = {"js-w-0"};
	struct cache c = {0};
	struct js_expect_result res;
	add(e, "ns/js", "u1", JS_EXPECT_EXISTS, a, 1, 0);
	assert_int_equal(js_expect_check(e, "ns/js", "u2", seen, &c, 0, &res), 0);
	assert_int_equal(js_expect_names(e), 0);
	add(e, "ns/js", "u1", JS_EXPECT_EXISTS, a, 1, 0);
	add(e, "ns/js", "u2", JS_EXPECT_EXISTS, a, 1, 0); /* replaces u1's */
	assert_int_equal(js_expect_names(e), 1);
	assert_int_equal(js_expect_check(e, "ns/js", "u2", seen, &c, 0, &res), 1);
	js_expect_forget(e, "ns/js");
	js_expect_forget(e, "ns/none");
	assert_int_equal(js_expect_names(e), 0);
	assert_int_equal(js_expect_check(e, "ns/js", "u2", seen, &c, 0, &res), 0);
	js_expect_free(e);
}

/* The memory bound: a batch that does not fit is not recorded. */
static void test_bound(void **state)
{
	(void)state;
	struct js_expect_opts o = {.max_names = 3};
	struct js_expect *e = js_expect_new(&o);
	const char *a[] = {"a", "b"}, *b[] = {"c", "d"}, *one[] = {"e"};
	add(e, "ns/x", "u1", JS_EXPECT_EXISTS, a, 2, 0);
	assert_int_equal(add_names(e, "ns/y", "u2", JS_EXPECT_EXISTS, b, 2, 0), JS_ETOOLARGE);
	assert_int_equal(js_expect_names(e), 2);
	add(e, "ns/y", "u2", JS_EXPECT_EXISTS, one, 1, 0);
	assert_int_equal(js_expect_names(e), 3);
	/* Writes shown free their room. */
	struct cache c = {.exists = {"a", "b"}};
	struct js_expect_result res;
	assert_int_equal(js_expect_check(e, "ns/x", "u1", seen, &c, 0, &res), 0);
	add(e, "ns/y", "u2", JS_EXPECT_EXISTS, b, 2, 0);
	assert_int_equal(js_expect_names(e), 3);
	js_expect_free(e);
}

/* A key never checked again is swept a timeout after its deadline. */
static void test_sweep(void **state)
{
	(void)state;
	struct js_expect_opts o = {.timeout_ns = 10 * S};
	struct js_expect *e = js_expect_new(&o);
	const char *a[] = {"a", "b"}, *b[] = {"c"};
	add(e, "ns/old1", "u1", JS_EXPECT_EXISTS, a, 2, 0);
	add(e, "ns/old2", "u2", JS_EXPECT_EXISTS, a, 2, 1 * S);
	add(e, "ns/new", "u3", JS_EXPECT_EXISTS, b, 1, 15 * S); /* 5 s past the deadlines: kept */
	assert_int_equal(js_expect_names(e), 5);
	add(e, "ns/new", "u3", JS_EXPECT_EXISTS, b, 1, 30 * S); /* 20 s past them: both swept */
	assert_int_equal(js_expect_names(e), 2);
	js_expect_free(e);
}

/* Workers of different keys at once (the tsan tier runs this). */
struct worker_arg {
	struct js_expect *e;
	int id;
};

static void *worker(void *p)
{
	struct worker_arg *w = p;
	char key[32];
	snprintf(key, sizeof key, "ns/js-%d", w->id);
	const char *names[] = {"a", "b", "c"};
	struct cache c = {.exists = {"a", "b", "c"}};
	for (int i = 0; i < 2000; i++) {
		struct js_expect_result res;
		if (add_names(w->e, key, "u", JS_EXPECT_EXISTS, names, 3, (uint64_t)i) != 0)
			return (void *)1;
		if (js_expect_check(w->e, key, "u", seen, &c, (uint64_t)i, &res) != 0)
			return (void *)1;
	}
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	struct js_expect *e = js_expect_new(NULL);
	pthread_t t[4];
	struct worker_arg args[4];
	for (int i = 0; i < 4; i++) {
		args[i] = (struct worker_arg){e, i};
		assert_int_equal(pthread_create(&t[i], NULL, worker, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		void *ret;
		assert_int_equal(pthread_join(t[i], &ret), 0);
		assert_null(ret);
	}
	assert_int_equal(js_expect_names(e), 0);
	js_expect_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_waits_until_all_shown),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_check_stops_at_first_missing),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_owner_and_forget),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_sweep),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
