/*
 * batch_test.c - the sliding window of requests (kube/batch.h) against the
 * in-process API fixture (support/fakeapi.h), as a table: which request the
 * server answers how (an error, a 429 with Retry-After the first time), and
 * which request fails to build. Asserted per row:
 *   - request i is built only while fewer than `window` are unfinished
 *     (i < finished + window), and each index is built once (twice when
 *     repeated after Retry-After);
 *   - finish is called once per sent request, in order, and nothing is
 *     built after the first failed outcome;
 *   - the run returns the first failed outcome and its index;
 *   - every answer is reported (a repeat's 429 included).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/batch.h"
#include "support/fakeapi.h"

#define MAX_N 64

struct bcase {
	const char *name;
	size_t n, window;
	long fail_code;       /* this HTTP code ... */
	const char *fail_reason;
	long fail_at;         /* ... answers request fail_at (-1: none) */
	long retry_at;        /* request answered 429 with Retry-After: 1 once (-1: none) */
	long build_err_at;    /* request whose building fails with JS_EINVALID (-1: none) */
	bool notfound_is_ok;  /* finish maps NotFound to 0 (a delete already done) */
	int want;             /* the run's result */
	long want_failed_at;  /* -1: SIZE_MAX */
	size_t want_finished; /* finish calls */
};

static const struct bcase cases[] = {
	{"all answered, window 4", 40, 4, 0, NULL, -1, -1, -1, false, 0, -1, 40},
	{"window larger than the run", 3, 8, 0, NULL, -1, -1, -1, false, 0, -1, 3},
	{"window 1: one at a time", 5, 1, 0, NULL, -1, -1, -1, false, 0, -1, 5},
	{"a 422 stops the run; the window in flight is waited for", 40, 4, 422, "Invalid", 10, -1, -1, false,
	 JS_EINVALID, 10, 14},
	{"a 409 on the first request", 10, 3, 409, "AlreadyExists", 0, -1, -1, false, JS_EEXISTS, 0, 3},
	{"NotFound judged a success by the caller", 12, 4, 404, "NotFound", 5, -1, -1, true, 0, -1, 12},
	{"a 429 with Retry-After is repeated and succeeds", 6, 2, 0, NULL, -1, 3, -1, false, 0, -1, 6},
	{"a request that cannot be built fails unsent", 20, 4, 0, NULL, -1, -1, 7, false, JS_EINVALID, 7, 11},
};

struct state {
	const struct bcase *k;
	pthread_mutex_t mu;       /* the fixture's threads read `tries` */
	int tries[MAX_N];         /* server: requests seen per index */
	int built[MAX_N];         /* client: request() calls per index */
	size_t finished;          /* finish calls */
	long answers_429, answers_2xx, answers_other;
	long ok_bodies;           /* ok_body calls, each with its own request's answer */
	char failure[256];        /* first violation seen in a callback */
};

/* Note the first violation: "<what> <i>". */
static void violation(struct state *s, const char *what, size_t i)
{
	if (!s->failure[0])
		snprintf(s->failure, sizeof s->failure, "%s %zu", what, i);
}

/* Server: "/apis/test.example/v1/items/<i>". */
static void serve(void *user, const struct fakeapi_req *rq, struct fakeapi_resp *rs)
{
	struct state *s = user;
	const char *p = strrchr(rq->path, '/');
	long i = p ? strtol(p + 1, NULL, 10) : -1;
	if (i < 0 || i >= MAX_N) {
		rs->code = 404;
		rs->body = fakeapi_status(404, "NotFound");
		return;
	}
	pthread_mutex_lock(&s->mu);
	int tries = s->tries[i]++;
	pthread_mutex_unlock(&s->mu);
	if (i == s->k->retry_at && tries == 0) {
		rs->code = 429;
		rs->retry_after_s = 1;
		rs->body = fakeapi_status(429, "TooManyRequests");
	} else if (i == s->k->fail_at) {
		rs->code = (int)s->k->fail_code;
		rs->body = fakeapi_status((int)s->k->fail_code, s->k->fail_reason);
	} else {
		rs->code = 201;
		rs->body = json_pack("{s:i}", "i", (int)i);
	}
}

static int b_request(void *self, size_t i, struct js_batch_req *req)
{
	struct state *s = self;
	if (i >= s->k->n || i >= s->finished + s->k->window)
		violation(s, "built outside the window: request", i);
	if (i < MAX_N)
		s->built[i]++;
	req->method = "POST";
	req->content_type = "application/json";
	if ((long)i == s->k->build_err_at)
		return JS_EINVALID;
	req->body = strdup("{}");
	return js_buf_printf(&req->path, "/apis/test.example/v1/items/%zu", i);
}

static void b_answered(void *self, size_t i, const char *method, long code)
{
	struct state *s = self;
	(void)i;
	if (strcmp(method, "POST") != 0)
		violation(s, "reported with another method: answer", i);
	if (code == 429)
		s->answers_429++;
	else if (code >= 200 && code <= 299)
		s->answers_2xx++;
	else
		s->answers_other++;
}

/* The 2xx answer's body is {"i": <its index>}. */
static void b_ok_body(void *self, size_t i, const char *body, size_t len)
{
	struct state *s = self;
	char want[32];
	int n = snprintf(want, sizeof want, "{\"i\":%zu}", i);
	if (len != (size_t)n || memcmp(body, want, len) != 0)
		violation(s, "another body given for: answer", i);
	s->ok_bodies++;
}

static int b_finish(void *self, size_t i, int r, const struct js_apierr *err)
{
	struct state *s = self;
	if (i != s->finished)
		violation(s, "finished out of order: request", i);
	s->finished++;
	if (r < 0 && err->err != 0 && err->err != r && r != JS_EINVALID)
		violation(s, "err does not say what failed: request", i);
	if (r == JS_ENOTFOUND && s->k->notfound_is_ok)
		return 0;
	return r;
}

static const struct js_batch_ops ops = {
	.request = b_request, .answered = b_answered, .ok_body = b_ok_body, .finish = b_finish};

static void run_case(const struct bcase *k)
{
	struct state s = {.k = k, .mu = PTHREAD_MUTEX_INITIALIZER};
	struct fakeapi *api = fakeapi_start(serve, &s);
	struct js_client *c = fakeapi_client(api);

	size_t failed_at = 0;
	int r = js_batch_run(c, k->n, k->window, &ops, &s, &failed_at);
	if (s.failure[0])
		fail_msg("%s: %s", k->name, s.failure);
	if (r != k->want)
		fail_msg("%s: returned %d, want %d", k->name, r, k->want);
	size_t want_at = k->want_failed_at < 0 ? SIZE_MAX : (size_t)k->want_failed_at;
	if (failed_at != want_at)
		fail_msg("%s: failed_at %zu, want %zu", k->name, failed_at, want_at);
	if (s.finished != k->want_finished)
		fail_msg("%s: %zu finished, want %zu", k->name, s.finished, k->want_finished);
	for (size_t i = 0; i < k->n && i < MAX_N; i++) {
		int want_built = i >= k->want_finished ? 0 : (long)i == k->retry_at ? 2 : 1;
		if (s.built[i] != want_built)
			fail_msg("%s: request %zu built %d times, want %d", k->name, i, s.built[i], want_built);
	}
	long sent = (long)k->want_finished - (k->build_err_at >= 0 ? 1 : 0);
	long want_429 = k->retry_at >= 0 ? 1 : 0;
	if (s.answers_429 != want_429 || s.answers_2xx + s.answers_other != sent)
		fail_msg("%s: answers 429 %ld, others %ld; want %ld and %ld", k->name, s.answers_429,
			 s.answers_2xx + s.answers_other, want_429, sent);
	if (s.ok_bodies != s.answers_2xx)
		fail_msg("%s: %ld bodies of 2xx answers given, want %ld", k->name, s.ok_bodies, s.answers_2xx);
	js_client_free(c);
	fakeapi_stop(api);
}

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(cases); i++)
		run_case(&cases[i]);
}

/* Nothing to do: no request, no callback. */
static void test_empty(void **state)
{
	(void)state;
	size_t at = 0;
	assert_int_equal(js_batch_run(NULL, 0, 4, &ops, NULL, &at), 0);
	assert_int_equal(at, SIZE_MAX);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_empty),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return r;
}
