/*
 * recorder_test.c - the event recorder is asynchronous (kube/recorder.h,
 * issue 22), against the in-process API fixture (support/fakeapi.h):
 *   - events are written in order by the sender thread, and a repeat is
 *     still folded into the series of its first Event;
 *   - js_recorder_eventf returns at once while the events endpoint holds
 *     every request unanswered, and a full queue drops (counted, on_error
 *     told) instead of blocking;
 *   - shutdown drains for a bounded time, then cancels the write in flight
 *     (the held request is abandoned) and drops the rest, counted;
 *   - arguments are still checked by the caller's call.
 * No sleeps: every wait is for a condition, with a deadline.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "kube/recorder.h"
#include "support/fakeapi.h"

struct server {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool hold;        /* never answer event writes */
	int posts, patches, released;
	int errors_nobufs, errors_other; /* on_error calls */
};

static void released(void *user)
{
	struct server *s = user;
	pthread_mutex_lock(&s->mu);
	s->released++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
}

static void serve(void *user, const struct fakeapi_req *rq, struct fakeapi_resp *rs)
{
	struct server *s = user;
	bool post = strcmp(rq->method, "POST") == 0, patch = strcmp(rq->method, "PATCH") == 0;
	if (!strstr(rq->path, "/events") || (!post && !patch)) {
		rs->code = 404;
		rs->body = fakeapi_status(404, "NotFound");
		return;
	}
	pthread_mutex_lock(&s->mu);
	if (post)
		s->posts++;
	else
		s->patches++;
	bool hold = s->hold;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
	if (hold) {
		rs->how = FAKEAPI_HOLD;
		rs->released = released;
		return;
	}
	rs->code = post ? 201 : 200;
	rs->body = *rq->body ? json_loads(rq->body, 0, NULL) : json_object();
}

/* Wait until *what >= want (a condition with a deadline). */
static bool wait_count(struct server *s, const int *what, int want, int timeout_s)
{
	return fakeapi_wait_count(&s->mu, &s->cond, what, want, timeout_s);
}

static void on_error(void *user, const char *reason, int err, const char *message)
{
	struct server *s = user;
	(void)reason;
	(void)message;
	pthread_mutex_lock(&s->mu);
	if (err == -ENOBUFS)
		s->errors_nobufs++;
	else
		s->errors_other++;
	pthread_mutex_unlock(&s->mu);
}

struct fixture {
	struct server s;
	struct fakeapi *api;
	struct js_client *c;
	struct js_recorder *r;
	json_t *obj;
};

static void setup(struct fixture *f, bool hold, size_t queue_max)
{
	memset(f, 0, sizeof *f);
	pthread_mutex_init(&f->s.mu, NULL);
	pthread_cond_init(&f->s.cond, NULL);
	f->s.hold = hold;
	f->api = fakeapi_start(serve, &f->s);
	f->c = fakeapi_client(f->api);
	struct js_recorder_opts ro = {.controller = "test",
				      .instance = "test-0",
				      .queue_max = queue_max,
				      .on_error = on_error,
				      .user = &f->s};
	assert_int_equal(js_recorder_new(f->c, &ro, &f->r), 0);
	f->obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
			   "metadata", "name", "cm", "namespace", "ns", "uid", "u1", "resourceVersion", "3", "data",
			   "big", "not copied into the queue");
}

static void teardown(struct fixture *f)
{
	js_recorder_free(f->r);
	js_client_free(f->c);
	fakeapi_stop(f->api);
	json_decref(f->obj);
	pthread_cond_destroy(&f->s.cond);
	pthread_mutex_destroy(&f->s.mu);
}

static void test_sends_in_order_and_folds(void **state)
{
	(void)state;
	struct fixture f;
	setup(&f, false, 0);
	assert_int_equal(js_recorder_eventf(f.r, f.obj, "Warning", "Failed", "Reconcile", "attempt %d", 7), 0);
	assert_int_equal(js_recorder_eventf(f.r, f.obj, "Warning", "Failed", "Reconcile", "attempt %d", 7), 0);
	assert_int_equal(js_recorder_eventf(f.r, f.obj, "Normal", "Fine", "Reconcile", "ok"), 0);
	assert_int_equal(js_recorder_flush(f.r, 20000), 0);
	pthread_mutex_lock(&f.s.mu);
	int posts = f.s.posts, patches = f.s.patches;
	pthread_mutex_unlock(&f.s.mu);
	assert_int_equal(posts, 2);   /* the first of each */
	assert_int_equal(patches, 1); /* the repeat: series.count 2 */
	struct js_recorder_stats st;
	js_recorder_stats(f.r, &st);
	assert_int_equal(st.queued, 3);
	assert_int_equal(st.sent, 3);
	assert_int_equal(st.failed + st.dropped + st.pending, 0);
	assert_int_equal(js_recorder_shutdown(f.r, 1000), 0);
	assert_int_equal(js_recorder_shutdown(f.r, 0), 0); /* idempotent */
	assert_int_equal(js_recorder_eventf(f.r, f.obj, "Normal", "Late", "Reconcile", "x"), -ESHUTDOWN);
	teardown(&f);
}

static void test_blocked_endpoint(void **state)
{
	(void)state;
	struct fixture f;
	setup(&f, true, 2);
	/* The first is taken by the sender and held by the server ... */
	assert_int_equal(js_recorder_eventf(f.r, f.obj, "Warning", "E1", "Reconcile", "one"), 0);
	if (!wait_count(&f.s, &f.s.posts, 1, 20))
		fail_msg("the first event never reached the server");
	/* ... while the callers go on: two fit the queue, the next is dropped. */
	assert_int_equal(js_recorder_eventf(f.r, f.obj, "Warning", "E2", "Reconcile", "two"), 0);
	assert_int_equal(js_recorder_eventf(f.r, f.obj, "Warning", "E3", "Reconcile", "three"), 0);
	assert_int_equal(js_recorder_eventf(f.r, f.obj, "Warning", "E4", "Reconcile", "four"), -ENOBUFS);
	struct js_recorder_stats st;
	js_recorder_stats(f.r, &st);
	assert_int_equal(st.queued, 3);
	assert_int_equal(st.dropped, 1);
	assert_int_equal(st.pending, 3);
	assert_int_equal(js_recorder_flush(f.r, 50), -ETIMEDOUT);

	/* The drain runs out: the held write is abandoned, the two queued
	 * ones are dropped, and shutdown returns. */
	assert_int_equal(js_recorder_shutdown(f.r, 100), -ETIMEDOUT);
	if (!wait_count(&f.s, &f.s.released, 1, 20))
		fail_msg("the held event write is still open after shutdown");
	js_recorder_stats(f.r, &st);
	assert_int_equal(st.sent, 0);
	assert_int_equal(st.failed, 1);  /* cancelled in flight */
	assert_int_equal(st.dropped, 3); /* one queue-full, two never sent */
	assert_int_equal(st.pending, 0);
	pthread_mutex_lock(&f.s.mu);
	int posts = f.s.posts, nobufs = f.s.errors_nobufs, other = f.s.errors_other;
	pthread_mutex_unlock(&f.s.mu);
	assert_int_equal(posts, 1);
	assert_int_equal(nobufs, 1);
	assert_int_equal(other, 3); /* -ECANCELED: the one in flight and the two queued */
	assert_int_equal(js_recorder_shutdown(f.r, 1000), -ETIMEDOUT); /* the first result */
	teardown(&f);
}

static void test_arguments(void **state)
{
	(void)state;
	struct fixture f;
	setup(&f, false, 0);
	json_t *noname = json_pack("{s:{s:s}}", "metadata", "namespace", "ns");
	assert_int_equal(js_recorder_eventf(f.r, f.obj, "Bogus", "R", "A", "x"), JS_EINVALID);
	assert_int_equal(js_recorder_eventf(f.r, noname, "Normal", "R", "A", "x"), JS_EINVALID);
	assert_int_equal(js_recorder_eventf(f.r, f.obj, "Normal", NULL, "A", "x"), JS_EINVALID);
	struct js_recorder_stats st;
	js_recorder_stats(f.r, &st);
	assert_int_equal(st.queued, 0);
	json_decref(noname);
	struct js_recorder *r = NULL;
	struct js_recorder_opts ro = {.controller = "test"};
	assert_int_equal(js_recorder_new(f.c, &ro, &r), JS_EINVALID);
	teardown(&f);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sends_in_order_and_folds),
		cmocka_unit_test(test_blocked_endpoint),
		cmocka_unit_test(test_arguments),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return r;
}
