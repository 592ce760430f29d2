/*
 * leader_ctest.c - Lease leader election between real processes
 * (kube_leader_helper) against the real API server: one leader at a time;
 * when the leader is killed (SIGKILL, no release) a standby takes over
 * within lease duration + retry period of the kill; when the leader stops
 * gracefully it releases the lease and the standby takes over within about
 * one retry period. Also the recorder (events.k8s.io/v1) and the in-process
 * API of js_leader.
 */
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>

#include "cluster/kt.h"
#include "kube/leader.h"
#include "kube/recorder.h"

extern char **environ;

static struct js_client *C;
static const char *NS;

#define LEASE_MS 3000
#define RENEW_MS 2000
#define RETRY_MS 500

struct proc {
	pid_t pid;
	int out;
	char buf[4096];
	size_t len;
};

static void spawn(struct proc *p, const char *lease, const char *id)
{
	const char *helper = getenv("JS_LEADER_HELPER");
	if (!helper)
		KT_DIE("JS_LEADER_HELPER is not set (run through ctest)");
	int fds[2];
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	char l[16], r[16], t[16];
	snprintf(l, sizeof l, "%d", LEASE_MS);
	snprintf(r, sizeof r, "%d", RENEW_MS);
	snprintf(t, sizeof t, "%d", RETRY_MS);
	char *argv[] = {(char *)(uintptr_t)helper, (char *)(uintptr_t)NS, (char *)(uintptr_t)lease,
			(char *)(uintptr_t)id, l, r, t, NULL};
	assert_int_equal(posix_spawn(&p->pid, helper, &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	p->out = fds[0];
	p->len = 0;
}

/* Wait for a line starting with `want` on p's stdout; true if seen in time. */
static bool wait_line(struct proc *p, const char *want, int timeout_ms)
{
	uint64_t end = kt_now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		p->buf[p->len] = '\0';
		if (strstr(p->buf, want))
			return true;
		uint64_t now = kt_now_ms();
		if (now >= end)
			return false;
		struct pollfd pf = {.fd = p->out, .events = POLLIN};
		if (poll(&pf, 1, (int)(end - now)) <= 0)
			continue;
		ssize_t n = read(p->out, p->buf + p->len, sizeof p->buf - 1 - p->len);
		if (n <= 0)
			return strstr(p->buf, want) != NULL;
		p->len += (size_t)n;
	}
}

static void reap(struct proc *p, int sig)
{
	if (p->pid <= 0)
		return;
	kill(p->pid, sig);
	int st;
	waitpid(p->pid, &st, 0);
	close(p->out);
	p->pid = 0;
}

static char *holder(const char *lease)
{
	json_t *l = NULL;
	if (js_client_get(C, &js_client_res_leases, NS, lease, NULL, &l, NULL) < 0)
		return NULL;
	const char *h = js_json_str(json_object_get(l, "spec"), "holderIdentity");
	char *s = strdup(h ? h : "");
	json_decref(l);
	return s;
}

static int setup(void **state)
{
	(void)state;
	C = kt_client(NULL);
	NS = kt_namespace(C, "kube-leader");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	kt_delete_namespace(C, NS);
	C = js_client_free(C);
	return 0;
}

static void test_handover_on_kill(void **state)
{
	(void)state;
	struct proc a = {0}, b = {0};
	spawn(&a, "lease-kill", "cand-a");
	assert_true(wait_line(&a, "LEADING cand-a", 15000));
	spawn(&b, "lease-kill", "cand-b");
	/* While A renews, B stays a standby for more than a lease duration. */
	assert_false(wait_line(&b, "LEADING", LEASE_MS + 2 * RETRY_MS));
	char *h = holder("lease-kill");
	assert_string_equal(h, "cand-a");
	free(h);
	uint64_t t0 = kt_now_ms();
	reap(&a, SIGKILL);
	assert_true(wait_line(&b, "LEADING cand-b", LEASE_MS + 4 * RETRY_MS));
	uint64_t took = kt_now_ms() - t0;
	print_message("handover after SIGKILL of the leader: %llu ms (lease %d ms, retry %d ms)\n",
		      (unsigned long long)took, LEASE_MS, RETRY_MS);
	assert_true(took <= LEASE_MS + 2 * RETRY_MS);
	h = holder("lease-kill");
	assert_string_equal(h, "cand-b");
	free(h);
	reap(&b, SIGTERM);
}

static void test_handover_on_release(void **state)
{
	(void)state;
	struct proc a = {0}, b = {0};
	spawn(&a, "lease-release", "cand-a");
	assert_true(wait_line(&a, "LEADING cand-a", 15000));
	spawn(&b, "lease-release", "cand-b");
	assert_false(wait_line(&b, "LEADING", 2 * RETRY_MS));
	uint64_t t0 = kt_now_ms();
	kill(a.pid, SIGTERM); /* graceful: releases the lease */
	assert_true(wait_line(&a, "STOPPED cand-a", 5000));
	assert_true(wait_line(&b, "LEADING cand-b", LEASE_MS));
	uint64_t took = kt_now_ms() - t0;
	print_message("handover after graceful stop (lease released): %llu ms\n", (unsigned long long)took);
	assert_true(took < (uint64_t)LEASE_MS);
	reap(&a, SIGTERM);
	reap(&b, SIGTERM);
	json_t *l = NULL;
	assert_int_equal(js_client_get(C, &js_client_res_leases, NS, "lease-release", NULL, &l, NULL), 0);
	/* two acquisitions after creation: a created it, b took it over */
	assert_int_equal(json_integer_value(json_object_get(json_object_get(l, "spec"), "leaseTransitions")), 1);
	json_decref(l);
}

static void test_bad_settings_rejected(void **state)
{
	(void)state;
	struct js_leader *le = NULL;
	struct js_leader_opts o = {.namespace = NS, .name = "x", .identity = "i", .lease_duration_ms = 1000,
				   .renew_deadline_ms = 2000, .retry_period_ms = 100};
	assert_int_equal(js_leader_new(C, &o, &le), JS_EINVALID);
	o.lease_duration_ms = 3000;
	o.retry_period_ms = 1900; /* renew must exceed 1.2 x retry */
	assert_int_equal(js_leader_new(C, &o, &le), JS_EINVALID);
	o.identity = NULL;
	o.retry_period_ms = 500;
	assert_int_equal(js_leader_new(C, &o, &le), JS_EINVALID);
}

static void test_recorder_events(void **state)
{
	(void)state;
	struct js_apierr e = {0};
	json_t *cm = kt_configmap(NS, "ev-target", NULL, "1"), *obj = NULL;
	KT_OK(js_client_create(C, &js_client_res_configmaps, NULL, cm, NULL, &obj, &e), &e);
	struct js_recorder *rec = NULL;
	struct js_recorder_opts ro = {.controller = "jobset.sigs.k8s.io/test", .instance = "test-0"};
	assert_int_equal(js_recorder_new(C, &ro, &rec), 0);
	KT_OK(js_recorder_eventf(rec, obj, "Warning", "TestFailed", "Reconcile", "attempt failed: %d", 7), &e);
	KT_OK(js_recorder_eventf(rec, obj, "Warning", "TestFailed", "Reconcile", "attempt failed: %d", 7), &e);
	KT_OK(js_recorder_eventf(rec, obj, "Normal", "TestOK", "Reconcile", "fine"), &e);
	assert_int_equal(js_recorder_eventf(rec, obj, "Bogus", "R", "A", "x"), JS_EINVALID);
	/* Queued: the recorder's thread writes them (kube/recorder.h). */
	assert_int_equal(js_recorder_flush(rec, 30000), 0);
	struct js_recorder_stats st;
	js_recorder_stats(rec, &st);
	assert_int_equal(st.sent, 3);
	json_t *list = NULL;
	struct js_list_opts lo = {.field_selector = "regarding.name=ev-target"};
	KT_OK(js_client_list(C, &js_client_res_events, NS, &lo, &list, &e), &e);
	json_t *items = json_object_get(list, "items");
	assert_int_equal(json_array_size(items), 2); /* the repeat folded into a series */
	size_t i;
	json_t *ev;
	bool saw_series = false;
	json_array_foreach(items, i, ev) {
		assert_string_equal(js_json_str(ev, "reportingController"), "jobset.sigs.k8s.io/test");
		assert_string_equal(js_json_str(json_object_get(ev, "regarding"), "uid"),
				    js_json_str(json_object_get(obj, "metadata"), "uid"));
		if (strcmp(js_json_str(ev, "reason"), "TestFailed") == 0) {
			assert_string_equal(js_json_str(ev, "note"), "attempt failed: 7");
			assert_int_equal(json_integer_value(json_object_get(json_object_get(ev, "series"), "count")), 2);
			saw_series = true;
		}
	}
	assert_true(saw_series);
	json_decref(list);
	js_recorder_free(rec);
	json_decref(cm);
	json_decref(obj);
	js_apierr_done(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handover_on_kill),
		cmocka_unit_test(test_handover_on_release),
		cmocka_unit_test(test_bad_settings_rejected),
		cmocka_unit_test(test_recorder_events),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
