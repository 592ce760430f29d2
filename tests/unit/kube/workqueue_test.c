/*
 * workqueue_test.c - dedupe, processing/dirty sets, delays, per-key
 * exponential backoff, the overall bucket, shutdown (kube/workqueue.h).
 * A fake clock drives every delay; only the last test uses threads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/time.h"
#include "kube/workqueue.h"

#define MS 1000000ull

static uint64_t fake_now;
static uint64_t fake_clock(void *u)
{
	(void)u;
	return fake_now;
}

static struct js_workqueue *mkq(double qps, int burst)
{
	struct js_workqueue_opts o = {.qps = qps, .burst = burst, .now_ns = fake_clock};
	struct js_workqueue *q = NULL;
	fake_now = 1000 * MS;
	assert_int_equal(js_workqueue_new(&o, &q), 0);
	return q;
}

static char *get_now(struct js_workqueue *q)
{
	char *k = NULL;
	int r = js_workqueue_get(q, 0, &k);
	return r == 0 ? k : NULL;
}

static void expect_get(struct js_workqueue *q, const char *want)
{
	char *k = get_now(q);
	if (!want) {
		if (k)
			fail_msg("expected no key, got '%s'", k);
		return;
	}
	if (!k)
		fail_msg("expected '%s', got nothing", want);
	assert_string_equal(k, want);
	js_workqueue_done(q, k);
	free(k);
}

static void test_fifo_and_dedupe(void **state)
{
	(void)state;
	struct js_workqueue *q = mkq(-1, 0);
	js_workqueue_add(q, "a");
	js_workqueue_add(q, "b");
	js_workqueue_add(q, "a");
	js_workqueue_add(q, "c");
	assert_int_equal(js_workqueue_len(q), 3);
	expect_get(q, "a");
	expect_get(q, "b");
	expect_get(q, "c");
	expect_get(q, NULL);
	js_workqueue_free(q);
}

static void test_readd_while_processing(void **state)
{
	(void)state;
	struct js_workqueue *q = mkq(-1, 0);
	js_workqueue_add(q, "a");
	char *k = get_now(q);
	assert_string_equal(k, "a");
	/* Not handed to a second worker while processing... */
	js_workqueue_add(q, "a");
	js_workqueue_add(q, "a");
	expect_get(q, NULL);
	/* ...but queued once again when done. */
	js_workqueue_done(q, k);
	free(k);
	expect_get(q, "a");
	expect_get(q, NULL);
	js_workqueue_free(q);
}

static void test_add_after(void **state)
{
	(void)state;
	struct js_workqueue *q = mkq(-1, 0);
	js_workqueue_add_after(q, "late", 100 * MS);
	js_workqueue_add_after(q, "early", 10 * MS);
	js_workqueue_add_after(q, "late", 500 * MS); /* later time loses */
	assert_int_equal(js_workqueue_delayed(q), 2);
	expect_get(q, NULL);
	fake_now += 10 * MS;
	expect_get(q, "early");
	expect_get(q, NULL);
	fake_now += 90 * MS;
	expect_get(q, "late");
	fake_now += 1000 * MS;
	expect_get(q, NULL); /* the superseded 500 ms entry is not a second add */
	/* an earlier add_after replaces a later one */
	js_workqueue_add_after(q, "x", 300 * MS);
	js_workqueue_add_after(q, "x", 20 * MS);
	fake_now += 20 * MS;
	expect_get(q, "x");
	fake_now += 300 * MS;
	expect_get(q, NULL);
	js_workqueue_free(q);
}

/* Delays at the extremes (issue 22): a requeue of INT64_MAX seconds
 * saturates, it never wraps into a due time in the past. */
static void test_add_after_extremes(void **state)
{
	(void)state;
	struct js_workqueue *q = mkq(-1, 0);
	js_workqueue_add_after(q, "max", UINT64_MAX);
	js_workqueue_add_after(q, "int64-max-seconds", js_sat_scale_u64(INT64_MAX, 1000000000u));
	js_workqueue_add_after(q, "int32-max-seconds", js_sat_scale_u64(INT32_MAX, 1000000000u));
	js_workqueue_add_after(q, "past-the-clock", UINT64_MAX - fake_now + 1);
	assert_int_equal(js_workqueue_delayed(q), 4);
	expect_get(q, NULL);
	fake_now += 1000000 * MS; /* a thousand seconds later: still none due */
	expect_get(q, NULL);
	/* A real sleep with the farthest due time still times out (no
	 * wrapped, already-passed wake-up) and returns. */
	char *k = NULL;
	assert_int_equal(js_workqueue_get(q, 1, &k), -ETIMEDOUT);
	/* Zero and negative seconds are now. */
	js_workqueue_add_after(q, "zero", js_sat_scale_u64(0, 1000000000u));
	expect_get(q, "zero");
	js_workqueue_add_after(q, "negative", js_sat_scale_u64(-5, 1000000000u));
	expect_get(q, "negative");
	js_workqueue_free(q);
}

static void test_backoff_sequence(void **state)
{
	(void)state;
	struct js_workqueue *q = mkq(-1, 0); /* no bucket: pure exponential */
	static const uint64_t want_ms[] = {5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560};
	for (size_t i = 0; i < sizeof want_ms / sizeof want_ms[0]; i++) {
		uint64_t d = js_workqueue_add_rate_limited(q, "k");
		if (d != want_ms[i] * MS)
			fail_msg("failure %zu: delay %llu ns, expected %llu ms", i + 1, (unsigned long long)d,
				 (unsigned long long)want_ms[i]);
		fake_now += d;
		expect_get(q, "k");
	}
	assert_int_equal(js_workqueue_num_requeues(q, "k"), 10);
	/* capped at 1000 s however many failures */
	for (int i = 0; i < 100; i++)
		(void)js_workqueue_add_rate_limited(q, "k");
	assert_int_equal(js_workqueue_add_rate_limited(q, "k"), 1000ull * 1000 * MS);
	/* forget resets to the base delay; other keys are independent */
	js_workqueue_forget(q, "k");
	assert_int_equal(js_workqueue_num_requeues(q, "k"), 0);
	assert_int_equal(js_workqueue_add_rate_limited(q, "k"), 5 * MS);
	assert_int_equal(js_workqueue_add_rate_limited(q, "other"), 5 * MS);
	js_workqueue_free(q);
}

static void test_bucket_dominates(void **state)
{
	(void)state;
	struct js_workqueue *q = mkq(10, 100); /* client-go defaults */
	char key[16];
	uint64_t d = 0;
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof key, "k%d", i);
		d = js_workqueue_add_rate_limited(q, key);
		assert_int_equal(d, 5 * MS); /* within the burst: per-key backoff */
	}
	d = js_workqueue_add_rate_limited(q, "k100");
	assert_int_equal(d / MS, 100); /* 101st in the same instant: 1/qps */
	d = js_workqueue_add_rate_limited(q, "k101");
	assert_int_equal(d / MS, 200);
	js_workqueue_free(q);
}

static void test_shutdown(void **state)
{
	(void)state;
	struct js_workqueue *q = mkq(-1, 0);
	js_workqueue_add(q, "a");
	js_workqueue_add(q, "b");
	char *k = get_now(q);
	js_workqueue_shutdown(q);
	js_workqueue_add(q, "c"); /* refused */
	expect_get(q, "b");       /* queued keys still drain */
	char *none = NULL;
	assert_int_equal(js_workqueue_get(q, 0, &none), -ESHUTDOWN);
	assert_int_equal(js_workqueue_shutdown_drain(q, 0), -ETIMEDOUT); /* "a" in flight */
	js_workqueue_done(q, k);
	free(k);
	assert_int_equal(js_workqueue_shutdown_drain(q, 0), 0);
	js_workqueue_free(q);
}

struct consumer {
	struct js_workqueue *q;
	int got;
};

static void *consume(void *arg)
{
	struct consumer *c = arg;
	char *k;
	while (js_workqueue_get(c->q, -1, &k) == 0) {
		c->got++;
		js_workqueue_done(c->q, k);
		free(k);
	}
	return NULL;
}

static void test_blocking_workers(void **state)
{
	(void)state;
	struct js_workqueue *q = NULL;
	struct js_workqueue_opts o = {.qps = -1};
	assert_int_equal(js_workqueue_new(&o, &q), 0);
	struct consumer c[3] = {{q, 0}, {q, 0}, {q, 0}};
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, consume, &c[i]);
	char key[16];
	for (int i = 0; i < 300; i++) {
		snprintf(key, sizeof key, "k%d", i);
		js_workqueue_add(q, key);
	}
	js_workqueue_add_after(q, "delayed", 20 * MS); /* real clock: wakes a sleeping get */
	/* Wait (bounded) for the delayed key to be handed out, then shut down. */
	char *k = NULL;
	int mine = 0;
	/* bounded by 500 empty 10 ms waits, not by a count of keys taken */
	for (int idle = 0; idle < 500 && js_workqueue_delayed(q);) {
		if (js_workqueue_get(q, 10, &k) == 0) {
			mine++;
			js_workqueue_done(q, k);
			free(k);
		} else {
			idle++;
		}
	}
	assert_int_equal(js_workqueue_delayed(q), 0);
	assert_int_equal(js_workqueue_shutdown_drain(q, 5000), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(mine + c[0].got + c[1].got + c[2].got, 301);
	js_workqueue_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fifo_and_dedupe),  cmocka_unit_test(test_readd_while_processing),
		cmocka_unit_test(test_add_after),        cmocka_unit_test(test_backoff_sequence),
		cmocka_unit_test(test_bucket_dominates), cmocka_unit_test(test_shutdown),
		cmocka_unit_test(test_blocking_workers), cmocka_unit_test(test_add_after_extremes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
