/*
 * lifecycle_test.c - the controller's stop/free contract (ctrl/controller.h,
 * issue 10 deliver 1), against the in-process HTTPS fixture
 * (support/fakeapi.h) playing just enough of an API server: LIST and WATCH
 * (held open) of the four caches, one JobSet, a Lease, Services, Events,
 * status patches - and Job creations that, in the "slow" rows, are never
 * answered.
 *
 * What is asserted, per row of the table:
 *   - js_controller_free refuses (-EBUSY, with a log line) while running;
 *   - js_controller_stop returns 0 when reconciles finish within the grace
 *     period, -ETIMEDOUT when they had to be cancelled - and in both cases
 *     only after every worker has finished: the blocked Job creation was
 *     abandoned by the client before the Lease was released;
 *   - after stop, free succeeds, and (run under ASan) nothing is touched
 *     after it is freed.
 * And the bookkeeping of our status writes (issue 22): a write noted for a
 * JobSet that is no longer cached (deleted while its pass ran) is not kept,
 * one noted for a cached JobSet is.
 * The fixture is not a Kubernetes: behaviour against a real API server is
 * tested on hack/cluster (tests/e2e/cluster).
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
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "base/json.h"
#include "ctrl/controller.h"
#include "ctrl/ctrl_int.h"
#include "kube/client.h"
#include "support/fakeapi.h"

/* ---- the fixture (support/fakeapi.h) ---- */

struct fake {
	struct fakeapi *api;
	bool block_jobs; /* never answer POST .../jobs */
	bool fail_jobs;  /* answer POST .../jobs 422 (the reconcile then sends a Warning event) */
	bool block_events; /* never answer event writes */
	int job_posts, event_writes, events_released; /* counts */
	pthread_mutex_t mu;
	pthread_cond_t cond;
	/* what happened, in order (sequence numbers; 0 = never) */
	int seq;
	int job_post_seen, job_post_gone, lease_released;
	int post_fd;               /* the connection of the blocked Job creation, or -1 */
	bool post_open_at_release; /* it was still open when the Lease was released */
	json_t *lease;
	int lease_rv;
	int restarts; /* the listed JobSet's status.restarts (0: no status) */
};

static int next_seq(struct fake *f)
{
	return ++f->seq;
}

static void note(struct fake *f, int *what)
{
	pthread_mutex_lock(&f->mu);
	*what = next_seq(f);
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
}

/* Wait until *what >= want (a condition with a deadline). */
static bool wait_count(struct fake *f, const int *what, int want, int timeout_s)
{
	return fakeapi_wait_count(&f->mu, &f->cond, what, want, timeout_s);
}

/* Wait until the event *what has happened (its sequence number is set). */
static bool wait_note(struct fake *f, const int *what, int timeout_s)
{
	return wait_count(f, what, 1, timeout_s);
}

static json_t *the_jobset(void)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:i}, s:{s:[{s:s, s:i, s:{s:{s:{s:{s:[{s:s, s:s}], "
			 "s:s}}}}}]}}",
			 "apiVersion", "jobset.x-k8s.io/v1alpha2", "kind", "JobSet", "metadata", "name", "js",
			 "namespace", "ns", "uid", "js-uid", "resourceVersion", "10", "generation", 1, "spec",
			 "replicatedJobs", "name", "w", "replicas", 1, "template", "spec", "template", "spec",
			 "containers", "name", "c", "image", "busybox", "restartPolicy", "Never");
}

static void event_released(void *user)
{
	struct fake *f = user;
	pthread_mutex_lock(&f->mu);
	f->events_released++;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
}

static void job_post_released(void *user)
{
	struct fake *f = user;
	note(f, &f->job_post_gone);
}

/* The API server's part (fakeapi_handler). */
static void serve(void *user, const struct fakeapi_req *rq, struct fakeapi_resp *rs)
{
	struct fake *f = user;
	const char *method = rq->method, *path = rq->path;
	if (strcmp(method, "GET") == 0 && strstr(path, "watch=1")) {
		rs->how = FAKEAPI_WATCH;
		return;
	}
	json_t *in = *rq->body ? json_loads(rq->body, 0, NULL) : NULL;
	json_t *out = NULL;
	int code = 200;
	if (strcmp(method, "GET") == 0 && strstr(path, "/jobsets?")) {
		out = json_pack("{s:s, s:{s:s}, s:[o]}", "kind", "JobSetList", "metadata", "resourceVersion", "10",
				"items", the_jobset());
		if (f->restarts)
			json_object_set_new(json_array_get(json_object_get(out, "items"), 0), "status",
					    json_pack("{s:i}", "restarts", f->restarts));
	} else if (strcmp(method, "GET") == 0 && strchr(path, '?') && !strstr(path, "/leases")) {
		out = json_pack("{s:s, s:{s:s}, s:[]}", "kind", "List", "metadata", "resourceVersion", "10", "items");
	} else if (strstr(path, "/leases")) {
		pthread_mutex_lock(&f->mu);
		if (strcmp(method, "GET") == 0) {
			out = f->lease ? json_deep_copy(f->lease) : fakeapi_status(404, "NotFound");
			code = f->lease ? 200 : 404;
		} else if (in) {
			json_object_set_new(json_object_get(in, "metadata"), "resourceVersion",
					    json_sprintf("%d", ++f->lease_rv));
			json_decref(f->lease);
			f->lease = json_incref(in);
			out = json_deep_copy(in);
			code = strcmp(method, "POST") == 0 ? 201 : 200;
			const char *holder = js_json_str(json_object_get(in, "spec"), "holderIdentity");
			if (holder && !*holder) {
				f->lease_released = next_seq(f);
				/* Is the blocked creation still open? The client closes
				 * its connection when it abandons the request, before
				 * the worker returns. */
				char ch;
				ssize_t n = f->post_fd >= 0 ? recv(f->post_fd, &ch, 1, MSG_PEEK | MSG_DONTWAIT) : 0;
				f->post_open_at_release = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
				pthread_cond_broadcast(&f->cond);
			}
		}
		pthread_mutex_unlock(&f->mu);
	} else if (strstr(path, "/events") && f->block_events) {
		pthread_mutex_lock(&f->mu);
		f->event_writes++;
		pthread_cond_broadcast(&f->cond);
		pthread_mutex_unlock(&f->mu);
		rs->how = FAKEAPI_HOLD; /* until the client gives up */
		rs->released = event_released;
		json_decref(in);
		return;
	} else if (strcmp(method, "POST") == 0 && strstr(path, "/jobs")) {
		note(f, &f->job_post_seen);
		pthread_mutex_lock(&f->mu);
		f->job_posts++;
		pthread_cond_broadcast(&f->cond);
		pthread_mutex_unlock(&f->mu);
		if (f->fail_jobs) {
			rs->code = 422;
			rs->body = fakeapi_status(422, "Invalid");
			json_decref(in);
			return;
		}
		if (f->block_jobs) {
			pthread_mutex_lock(&f->mu);
			f->post_fd = rq->fd;
			pthread_mutex_unlock(&f->mu);
			rs->how = FAKEAPI_HOLD; /* until the client gives up */
			rs->released = job_post_released;
			json_decref(in);
			return;
		}
		out = json_incref(in);
		code = 201;
	} else if (strcmp(method, "POST") == 0 || strcmp(method, "PATCH") == 0) {
		out = in ? json_incref(in) : json_object();
		json_object_set_new(js_json_path_make(out, "metadata"), "resourceVersion", json_string("11"));
		code = strcmp(method, "POST") == 0 ? 201 : 200;
	} else {
		out = fakeapi_status(404, "NotFound");
		code = 404;
	}
	rs->code = code;
	rs->body = out;
	json_decref(in);
}

static void fake_start(struct fake *f, bool block_jobs)
{
	memset(f, 0, sizeof *f);
	f->block_jobs = block_jobs;
	f->post_fd = -1;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cond, NULL);
	f->api = fakeapi_start(serve, f);
}

static void fake_stop(struct fake *f)
{
	fakeapi_stop(f->api);
	json_decref(f->lease);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->mu);
}

/* ---- the controller under test ---- */

struct logs {
	pthread_mutex_t mu;
	bool refused;
};

static void on_log(void *user, int level, const char *msg)
{
	struct logs *l = user;
	(void)level;
	pthread_mutex_lock(&l->mu);
	if (strstr(msg, "refusing to free"))
		l->refused = true;
	pthread_mutex_unlock(&l->mu);
}

static struct js_client *client_for(const struct fake *f)
{
	return fakeapi_client(f->api);
}

struct lcase {
	const char *name;
	bool block_jobs;    /* the reconcile's Job creation never gets an answer */
	bool leader_elect;
	int stop_timeout_ms;
	int want_stop;      /* what js_controller_stop returns */
};

static const struct lcase cases[] = {
	{"slow API server, stop past the grace period, with a Lease", true, true, 200, -ETIMEDOUT},
	{"slow API server, stop past the grace period, no election", true, false, 50, -ETIMEDOUT},
	{"prompt API server, graceful stop, with a Lease", false, true, 10000, 0},
};

static void run_case(const struct lcase *k)
{
	struct fake f;
	fake_start(&f, k->block_jobs);
	struct js_client *client = client_for(&f);
	struct logs logs = {.mu = PTHREAD_MUTEX_INITIALIZER};
	struct js_controller_opts o = {.client = client, .workers = 2, .leader_elect = k->leader_elect,
				       .lease_namespace = "ns", .lease_name = "lease", .identity = "me",
				       .cache_wait_ms = -1, .log = on_log, .log_user = &logs};
	struct js_controller *c = NULL;
	assert_int_equal(js_controller_new(&o, &c), 0);
	assert_int_equal(js_controller_start(c), 0);
	/* A worker is inside the reconcile once the Job creation arrives. */
	if (!wait_note(&f, &f.job_post_seen, 20))
		fail_msg("%s: the reconcile never created its Job", k->name);

	if (js_controller_free(c) != -EBUSY)
		fail_msg("%s: free while running did not refuse", k->name);
	assert_true(logs.refused);

	int r = js_controller_stop(c, k->stop_timeout_ms);
	if (r != k->want_stop)
		fail_msg("%s: stop returned %d, want %d", k->name, r, k->want_stop);
	/* Stop has returned: no worker is left, so the blocked creation has
	 * been abandoned, and only after that was the Lease released. */
	if (k->block_jobs && !wait_note(&f, &f.job_post_gone, 10))
		fail_msg("%s: the blocked Job creation is still open after stop", k->name);
	pthread_mutex_lock(&f.mu);
	int released = f.lease_released;
	bool open_at_release = f.post_open_at_release;
	pthread_mutex_unlock(&f.mu);
	if (k->leader_elect && !released)
		fail_msg("%s: the Lease was not released", k->name);
	if (open_at_release)
		fail_msg("%s: the Lease was released while a worker's Job creation was in flight", k->name);
	assert_int_equal(js_controller_stop(c, 0), r); /* idempotent */
	assert_int_equal(js_controller_free(c), 0);
	js_client_free(client);
	fake_stop(&f);
}

static void test_stop_and_free(void **state)
{
	(void)state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(cases); i++)
		run_case(&cases[i]);
}

/* Events are sent off the reconcile path (issue 22): with every event
 * write held unanswered by the API server, a reconcile whose Job creation
 * fails - and which therefore sends a JobCreationFailed Warning - still
 * ends, and the key is reconciled again (its retry creates the Job again)
 * long before the held write could time out (60 s). Stop then returns
 * within its bound, abandoning the held write. */
static void test_blocked_events_do_not_hold_reconciles(void **state)
{
	(void)state;
	struct fake f;
	fake_start(&f, false);
	pthread_mutex_lock(&f.mu);
	f.fail_jobs = true;
	f.block_events = true;
	pthread_mutex_unlock(&f.mu);
	struct js_client *client = client_for(&f);
	struct js_controller_opts o = {.client = client, .workers = 1, .identity = "me", .cache_wait_ms = -1};
	struct js_controller *c = NULL;
	assert_int_equal(js_controller_new(&o, &c), 0);
	assert_int_equal(js_controller_start(c), 0);
	if (!wait_count(&f, &f.event_writes, 1, 20))
		fail_msg("the failed creation's Warning event never reached the API server");
	/* One worker: a third creation means two reconciles ended while the
	 * first event write was held. */
	if (!wait_count(&f, &f.job_posts, 3, 20))
		fail_msg("the reconcile did not end while its event write was held (%d Job POSTs)", f.job_posts);
	assert_int_equal(js_controller_stop(c, 200), 0);
	if (!wait_count(&f, &f.events_released, 1, 20))
		fail_msg("the held event write is still open after stop");
	assert_int_equal(js_controller_free(c), 0);
	js_client_free(client);
	fake_stop(&f);
}

/* Never started: stop is immediate and free works. */
static void test_never_started(void **state)
{
	(void)state;
	struct fake f;
	fake_start(&f, false);
	struct js_client *client = client_for(&f);
	struct js_controller_opts o = {.client = client};
	struct js_controller *c = NULL;
	assert_int_equal(js_controller_new(&o, &c), 0);
	assert_int_equal(js_controller_free(c), 0);
	assert_int_equal(js_controller_new(&o, &c), 0);
	assert_int_equal(js_controller_stop(c, 0), 0);
	assert_int_equal(js_controller_free(c), 0);
	assert_int_equal(js_controller_free(NULL), 0);
	js_client_free(client);
	fake_stop(&f);
}

static bool written_has(struct js_controller *c, const char *key)
{
	pthread_mutex_lock(&c->mu);
	bool has = js_hmap_has(c->written, key);
	pthread_mutex_unlock(&c->mu);
	return has;
}

/* js__ctrl_note_written keeps what we wrote for cached JobSets only: the
 * delete handler drops the entry of a deleted JobSet, and a pass that was
 * under way then must not put it back (one entry leaked per such JobSet). */
static void test_note_written(void **state)
{
	(void)state;
	struct fake f;
	fake_start(&f, false);
	struct js_client *client = client_for(&f);
	struct js_controller_opts o = {.client = client, .workers = 1, .cache_wait_ms = -1};
	struct js_controller *c = NULL;
	assert_int_equal(js_controller_new(&o, &c), 0);
	assert_int_equal(js_controller_start(c), 0);
	time_t deadline = time(NULL) + 20;
	while (!js_informer_has(c->jobsets, "ns", "js") && time(NULL) < deadline)
		nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL); /* poll the condition */
	assert_true(js_informer_has(c->jobsets, "ns", "js"));
	json_t *st = json_pack("{s:i}", "restarts", 0);
	js__ctrl_note_written(c, "ns/js", "99", st);
	assert_true(written_has(c, "ns/js"));
	pthread_mutex_lock(&c->mu);
	size_t before = js_hmap_len(c->written);
	pthread_mutex_unlock(&c->mu);
	js__ctrl_note_written(c, "ns/deleted-mid-pass", NULL, st);
	js__ctrl_note_written(c, "ns/deleted-mid-pass", "100", st);
	js__ctrl_note_written(c, "no-slash", "100", st);
	assert_false(written_has(c, "ns/deleted-mid-pass"));
	pthread_mutex_lock(&c->mu);
	size_t after = js_hmap_len(c->written);
	pthread_mutex_unlock(&c->mu);
	assert_int_equal(after, before);
	json_decref(st);
	assert_int_equal(js_controller_stop(c, 10000), 0);
	assert_int_equal(js_controller_free(c), 0);
	js_client_free(client);
	fake_stop(&f);
}

/* js__ctrl_restarts_seen: the highest status.restarts the JobSet watch
 * delivered, for that incarnation only (core/status.c restores a
 * rewound counter from it; tests/chaos "jobset-restarts-rewound"). */
static void test_restarts_seen(void **state)
{
	(void)state;
	struct fake f;
	fake_start(&f, false);
	f.restarts = 3;
	struct js_client *client = client_for(&f);
	struct js_controller_opts o = {.client = client, .workers = 1, .cache_wait_ms = -1};
	struct js_controller *c = NULL;
	assert_int_equal(js_controller_new(&o, &c), 0);
	assert_int_equal(js_controller_start(c), 0);
	time_t deadline = time(NULL) + 20;
	while (!js_informer_has(c->jobsets, "ns", "js") && time(NULL) < deadline)
		nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL); /* poll the condition */
	assert_true(js_informer_has(c->jobsets, "ns", "js"));
	assert_int_equal(js__ctrl_restarts_seen(c, "ns/js", "js-uid"), 3);
	assert_int_equal(js__ctrl_restarts_seen(c, "ns/js", "another-incarnation"), 0);
	assert_int_equal(js__ctrl_restarts_seen(c, "ns/js", NULL), 0);
	assert_int_equal(js__ctrl_restarts_seen(c, "ns/other", "js-uid"), 0);
	assert_int_equal(js_controller_stop(c, 10000), 0);
	assert_int_equal(js_controller_free(c), 0);
	js_client_free(client);
	fake_stop(&f);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stop_and_free),
		cmocka_unit_test(test_never_started),
		cmocka_unit_test(test_blocked_events_do_not_hold_reconciles),
		cmocka_unit_test(test_note_written),
		cmocka_unit_test(test_restarts_seen),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return r;
}
