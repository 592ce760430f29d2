/*
 * bench_core - what the reconcile core costs per child Job (issue 9).
 *
 *   cmake -S bench/core -B build-bench-core -G Ninja && ninja -C build-bench-core
 *   build-bench-core/bench_core [N ...]        (default: 1000 10000)
 *
 * For the JobSet of bench/controller (one ReplicatedJob of N single-pod
 * Jobs) it measures, CPU time of this process (CLOCK_PROCESS_CPUTIME_ID),
 * median of 5 rounds:
 *   copy      js_jobset_copy of the JobSet                      (us/copy)
 *   decode    js_job_from_json of one observed Job               (us/Job)
 *   record    heap bytes held per record (mallinfo2 delta)       (B/Job)
 *   create    the first reconcile (N CreateJob actions) plus
 *             rendering every Job through js_plan_render_job     (us/Job)
 *   steady    a reconcile over N observed, ready Jobs            (us/Job)
 *   failed    a reconcile over N failed Jobs of a JobSet whose
 *             failure policy has three rules with message patterns
 *             (RE2), the third matching: the restart it decides, with
 *             the patterns compiled by the pass, then with a compiled
 *             policy given as the controller does (core/policy.h) (us/Job)
 * A benchmark, not a test: it asserts nothing beyond "the calls worked".
 */
#include <jansson.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/codec.h"
#include "api/defaults.h"
#include "api/render.h"
#include "base/parse.h"
#include "core/policy.h"
#include "core/reconcile.h"

#define ROUNDS 5

static const char *const JOBSET_JSON =
	"{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\","
	"\"metadata\":{\"name\":\"bench\",\"namespace\":\"default\",\"uid\":\"0000-bench\","
	"\"labels\":{\"app\":\"bench\"},\"annotations\":{\"note\":\"bench\"}},"
	"\"spec\":{\"successPolicy\":{\"operator\":\"All\"},\"startupPolicy\":{\"startupPolicyOrder\":\"AnyOrder\"},"
	"\"network\":{\"enableDNSHostnames\":true,\"publishNotReadyAddresses\":true},"
	"\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":%d,\"template\":{\"spec\":{\"parallelism\":1,"
	"\"completions\":1,\"backoffLimit\":0,\"completionMode\":\"Indexed\",\"template\":{\"metadata\":"
	"{\"annotations\":{\"jobset-test/run-for\":\"1h\"}},\"spec\":{\"restartPolicy\":\"OnFailure\","
	"\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"command\":[\"sleep\",\"3600\"],"
	"\"resources\":{\"requests\":{\"cpu\":\"10m\",\"memory\":\"16Mi\"}}}]}}}}}]}}";

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int by_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v)
{
	qsort(v, ROUNDS, sizeof(*v), by_double);
	return v[ROUNDS / 2];
}

static struct js_jobset *jobset(int n)
{
	char text[4096];
	(void)snprintf(text, sizeof(text), JOBSET_JSON, n);
	json_t *j = json_loads(text, 0, NULL);
	struct js_diag d;
	js_diag_init(&d);
	struct js_jobset *js = NULL;
	if (!j || js_codec_decode_jobset(j, JS_CODEC_STRICT, &d, &js) < 0) {
		fprintf(stderr, "bench JobSet does not decode\n");
		exit(1);
	}
	js_diag_done(&d);
	json_decref(j);
	(void)js_default_jobset(js);
	return js;
}

/* Three rules with RE2 message patterns; only the third matches the
 * failed Jobs of failed_json, so every rule is tried on every Job. */
static const char *const FAILURE_POLICY_JSON =
	"{\"maxRestarts\":3,\"rules\":["
	"{\"name\":\"oom\",\"action\":\"FailJobSet\","
	"\"onJobFailureMessagePatterns\":[\"(?i)out of memory\",\"OOMKilled\\\\b\"]},"
	"{\"name\":\"preempted\",\"action\":\"RestartJobSetAndIgnoreMaxRestarts\","
	"\"onJobFailureMessagePatterns\":[\"preempted by [a-z-]+\"]},"
	"{\"name\":\"exit\",\"action\":\"RestartJobSet\","
	"\"onJobFailureMessagePatterns\":[\"exit code [0-9]+\"]}]}";

static struct js_jobset *jobset_with_policy(int n)
{
	struct js_jobset *js = jobset(n);
	json_t *j = js_codec_encode_jobset(js);
	json_object_set_new(json_object_get(j, "spec"), "failurePolicy", json_loads(FAILURE_POLICY_JSON, 0, NULL));
	js_jobset_free(js);
	struct js_diag d;
	js_diag_init(&d);
	if (js_codec_decode_jobset(j, JS_CODEC_STRICT, &d, &js) < 0) {
		fprintf(stderr, "bench JobSet with a failure policy does not decode\n");
		exit(1);
	}
	js_diag_done(&d);
	json_decref(j);
	return js;
}

/* The N Jobs as the API server would return them: rendered, with a uid and
 * a running, ready status. */
static json_t **observed_json(const struct js_jobset *js, int n)
{
	json_t **v = calloc((size_t)n, sizeof(*v));
	struct js_render_opts o = {0};
	for (int i = 0; i < n; i++) {
		v[i] = js_render_job(js, 0, i, &o);
		char uid[32];
		(void)snprintf(uid, sizeof(uid), "job-uid-%d", i);
		json_object_set_new(json_object_get(v[i], "metadata"), "uid", json_string(uid));
		json_object_set_new(v[i], "status", json_pack("{s:i,s:i,s:s}", "active", 1, "ready", 1, "startTime",
							       "2024-01-01T00:00:00Z"));
	}
	return v;
}

/* The N Jobs of `js`, failed (backoff limit) with an exit code message. */
static struct js_obsjob **failed_records(const struct js_jobset *js, int n)
{
	json_t **objs = observed_json(js, n);
	struct js_obsjob **recs = calloc((size_t)n, sizeof(*recs));
	for (int i = 0; i < n; i++) {
		json_object_set_new(objs[i], "status",
				    json_pack("{s:i, s:[{s:s, s:s, s:s, s:s, s:s}]}", "failed", 1, "conditions", "type",
					      "Failed", "status", "True", "reason", "BackoffLimitExceeded", "message",
					      "Job has reached the specified backoff limit: exit code 3",
					      "lastTransitionTime", "2024-01-01T00:00:00Z"));
		recs[i] = js_job_from_json(objs[i], NULL);
		json_decref(objs[i]);
	}
	free(objs);
	return recs;
}

/* One reconcile over n failed Jobs: it must decide the restart. */
static double failed_pass(const struct js_reconcile_input *in, int n)
{
	struct js_plan *p = NULL;
	double t0 = cpu_s();
	if (js_reconcile_run(in, &p, NULL) < 0 || !p->status || p->status->restarts != 1) {
		fprintf(stderr, "failed-Jobs reconcile did not restart\n");
		exit(1);
	}
	double t = (cpu_s() - t0) / n * 1e6;
	js_reconcile_plan_free(p);
	return t;
}

static void bench_failed(int n)
{
	struct js_jobset *js = jobset_with_policy(n);
	struct js_obsjob **recs = failed_records(js, n);
	struct js_reconcile_input in = {.jobset = js,
					 .jobs = (const struct js_obsjob *const *)recs,
					 .n_jobs = (size_t)n,
					 .service_exists = true,
					 .now = 1700000000};
	double t[ROUNDS];
	for (int r = 0; r < ROUNDS; r++)
		t[r] = failed_pass(&in, n);
	printf("N=%-6d failed  %8.2f us/Job   (patterns compiled by the pass)\n", n, median(t));
	/* As the controller runs it: the policy compiled at ingest, borrowed. */
	struct js_policy *p = js_policy_compile(js);
	in.policy = p;
	for (int r = 0; r < ROUNDS; r++)
		t[r] = failed_pass(&in, n);
	printf("N=%-6d failed  %8.2f us/Job   (policy given: %zu patterns compiled once)\n", n, median(t),
	       js_policy_compiled(p));
	js_policy_unref(p);
	for (int i = 0; i < n; i++)
		js_job_unref(recs[i]);
	free(recs);
	js_jobset_free(js);
}

static void bench_copy(const struct js_jobset *js)
{
	double t[ROUNDS];
	const int k = 20000;
	for (int r = 0; r < ROUNDS; r++) {
		double t0 = cpu_s();
		for (int i = 0; i < k; i++)
			js_jobset_free(js_jobset_copy(js));
		t[r] = (cpu_s() - t0) / k * 1e6;
	}
	printf("copy    %8.2f us/copy\n", median(t));
}

static void bench_n(int n)
{
	struct js_jobset *js = jobset(n);
	json_t **objs = observed_json(js, n);
	struct js_obsjob **recs = calloc((size_t)n, sizeof(*recs));
	double t[ROUNDS], bytes = 0;

	for (int r = 0; r < ROUNDS; r++) {
		size_t before = mallinfo2().uordblks;
		double t0 = cpu_s();
		for (int i = 0; i < n; i++)
			recs[i] = js_job_from_json(objs[i], NULL);
		t[r] = (cpu_s() - t0) / n * 1e6;
		bytes = (double)(mallinfo2().uordblks - before) / n;
		if (r + 1 < ROUNDS)
			for (int i = 0; i < n; i++)
				js_job_unref(recs[i]);
	}
	printf("N=%-6d decode  %8.2f us/Job   record %6.0f B/Job\n", n, median(t), bytes);

	for (int r = 0; r < ROUNDS; r++) {
		struct js_reconcile_input in = {.jobset = js, .now = 1700000000};
		struct js_plan *p = NULL;
		double t0 = cpu_s();
		if (js_reconcile_run(&in, &p, NULL) < 0) {
			fprintf(stderr, "reconcile failed\n");
			exit(1);
		}
		for (size_t i = 0; i < p->n_actions; i++)
			json_decref(js_plan_render_job(p, &p->actions[i]));
		t[r] = (cpu_s() - t0) / n * 1e6;
		js_reconcile_plan_free(p);
	}
	printf("N=%-6d create  %8.2f us/Job\n", n, median(t));

	for (int r = 0; r < ROUNDS; r++) {
		struct js_reconcile_input in = {.jobset = js,
						 .jobs = (const struct js_obsjob *const *)recs,
						 .n_jobs = (size_t)n,
						 .service_exists = true,
						 .now = 1700000000};
		struct js_plan *p = NULL;
		double t0 = cpu_s();
		if (js_reconcile_run(&in, &p, NULL) < 0 || p->n_actions != 0) {
			fprintf(stderr, "steady reconcile failed or acted\n");
			exit(1);
		}
		t[r] = (cpu_s() - t0) / n * 1e6;
		js_reconcile_plan_free(p);
	}
	printf("N=%-6d steady  %8.2f us/Job\n", n, median(t));
	bench_failed(n);

	for (int i = 0; i < n; i++) {
		js_job_unref(recs[i]);
		json_decref(objs[i]);
	}
	free(recs);
	free(objs);
	js_jobset_free(js);
}

int main(int argc, char **argv)
{
	struct js_jobset *js = jobset(1000);
	bench_copy(js);
	js_jobset_free(js);
	if (argc < 2) {
		bench_n(1000);
		bench_n(10000);
	}
	for (int i = 1; i < argc; i++) {
		int64_t n;
		if (js_parse_i64_in(argv[i], strlen(argv[i]), 1, 1000000, &n) < 0) {
			fprintf(stderr, "usage: bench_core [N ...] (1 <= N <= 1000000)\n");
			return 2;
		}
		bench_n((int)n);
	}
	return 0;
}
