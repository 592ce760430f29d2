/*
 * leader_test.c - a candidate whose Lease requests fail says so (kube/leader.h
 * on_error), against the in-process API fixture (support/fakeapi.h). Found
 * by trying the controller as a user (issue 22): run with a
 * --leader-elect-namespace its ServiceAccount may not write Leases in, it
 * never led, logged nothing and answered /readyz ok. Table: which request
 * fails and how, what on_error must say (or that it says nothing); a failure
 * that stays the same is reported once while the candidate keeps retrying.
 * Elections between processes against a real API server are
 * tests/cluster/leader_ctest.c. No sleeps: every wait is for a condition,
 * with a deadline.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "kube/leader.h"
#include "support/fakeapi.h"

#define FORBIDDEN_MSG "leases.coordination.k8s.io \"l\" is forbidden: User \"sa\" cannot get resource \"leases\""

enum mode {
	GET_FORBIDDEN,    /* GET 403 */
	CREATE_FORBIDDEN, /* GET 404, POST 403 */
	UPDATE_FORBIDDEN, /* GET an expired Lease of another, PUT 403 */
	HELD_BY_OTHER,    /* GET a Lease another holds, renewed just now: not an error */
};

struct server {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	enum mode mode;
	int gets;   /* GETs of the Lease */
	int errors; /* on_error calls */
	char last[512];
};

static json_t *forbidden(void)
{
	json_t *b = fakeapi_status(403, "Forbidden");
	json_object_set_new(b, "message", json_string(FORBIDDEN_MSG));
	return b;
}

static json_t *lease(const char *renew)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:i, s:s, s:s, s:i}}", "apiVersion",
			 "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", "l", "namespace", "ns",
			 "resourceVersion", "1", "spec", "holderIdentity", "other", "leaseDurationSeconds", 3600,
			 "acquireTime", renew, "renewTime", renew, "leaseTransitions", 1);
}

static void serve(void *user, const struct fakeapi_req *rq, struct fakeapi_resp *rs)
{
	struct server *s = user;
	pthread_mutex_lock(&s->mu);
	enum mode m = s->mode;
	bool get = strcmp(rq->method, "GET") == 0;
	if (get)
		s->gets++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
	if (!strstr(rq->path, "/leases")) {
		rs->code = 404;
		rs->body = fakeapi_status(404, "NotFound");
	} else if (get && m == GET_FORBIDDEN) {
		rs->code = 403;
		rs->body = forbidden();
	} else if (get && m == CREATE_FORBIDDEN) {
		rs->code = 404;
		rs->body = fakeapi_status(404, "NotFound");
	} else if (get) {
		/* The other holder's Lease: for HELD_BY_OTHER it lasts an hour
		 * from our first sight of it; for UPDATE_FORBIDDEN its duration
		 * is negative, so it is already over and we try to take it. */
		rs->body = lease("2026-01-01T00:00:00.000000Z");
		if (m == UPDATE_FORBIDDEN)
			json_object_set_new(json_object_get(rs->body, "spec"), "leaseDurationSeconds", json_integer(-1));
	} else {
		rs->code = 403;
		rs->body = forbidden();
	}
}

static void on_error(void *user, const char *msg)
{
	struct server *s = user;
	pthread_mutex_lock(&s->mu);
	s->errors++;
	snprintf(s->last, sizeof s->last, "%s", msg);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
}

static void test_lease_errors_are_reported(void **state)
{
	(void)state;
	static const struct {
		enum mode mode;
		const char *want; /* start of the message; NULL: no on_error */
	} cases[] = {
		{GET_FORBIDDEN, "get lease ns/l: " FORBIDDEN_MSG},
		{CREATE_FORBIDDEN, "create lease ns/l: " FORBIDDEN_MSG},
		{UPDATE_FORBIDDEN, "update lease ns/l: " FORBIDDEN_MSG},
		{HELD_BY_OTHER, NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct server s = {.mode = cases[i].mode};
		pthread_mutex_init(&s.mu, NULL);
		pthread_cond_init(&s.cond, NULL);
		struct fakeapi *api = fakeapi_start(serve, &s);
		struct js_client *c = fakeapi_client(api);
		struct js_leader_opts lo = {.namespace = "ns",
					    .name = "l",
					    .identity = "me",
					    .lease_duration_ms = 3000,
					    .renew_deadline_ms = 2000,
					    .retry_period_ms = 50,
					    .on_error = on_error,
					    .user = &s};
		struct js_leader *le = NULL;
		assert_int_equal(js_leader_new(c, &lo, &le), 0);
		assert_int_equal(js_leader_start(le), 0);
		/* Ten attempts: each failed the same way (or found the Lease held). */
		if (!fakeapi_wait_count(&s.mu, &s.cond, &s.gets, 10, 20))
			fail_msg("case %zu: the candidate stopped trying", i);
		assert_false(js_leader_is_leader(le));
		pthread_mutex_lock(&s.mu);
		int errors = s.errors;
		char last[512];
		memcpy(last, s.last, sizeof last);
		pthread_mutex_unlock(&s.mu);
		if (cases[i].want) {
			if (errors != 1)
				fail_msg("case %zu: on_error called %d times for one unchanged failure", i, errors);
			if (strncmp(last, cases[i].want, strlen(cases[i].want)) != 0)
				fail_msg("case %zu: on_error said '%s', want '%s'", i, last, cases[i].want);
		} else if (errors != 0) {
			fail_msg("case %zu: on_error called for a Lease held by another: '%s'", i, last);
		}
		assert_int_equal(js_leader_stop(le), 0);
		assert_int_equal(js_leader_free(le), 0);
		js_client_free(c);
		fakeapi_stop(api);
		pthread_cond_destroy(&s.cond);
		pthread_mutex_destroy(&s.mu);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lease_errors_are_reported),
	};
	signal(SIGPIPE, SIG_IGN); /* the fixture closes connections the client may still write */
	curl_global_init(CURL_GLOBAL_DEFAULT);
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return r;
}
