/*
 * hangs_test.c - hang detection's controller half (ctrl/hangs.c) on the
 * reports it may see: the watched pod's record (what the cache keeps of
 * a pod's status) and the judgement against its JobSet. Each row is a pod
 * status and a JobSet, and the verdict with a piece of its reason: a
 * report is acted on only when the JobSet sets a deadline for the pod's
 * ReplicatedJob and the rule says the pod was over it when the watcher
 * judged, measured from the start the kubelet reported; a garbled report,
 * a JobSet without a deadline (or with a garbled one) and a report made
 * before the workload's start are refused. Acting sets the pod's active
 * deadline (the kubelet then ends it Failed even if its workload exits 0
 * on SIGTERM) on this incarnation only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/heartbeat.h"
#include "api/jobset.h"
#include "base/json.h"
#include "ctrl/ctrl_int.h"
#include "support/testutil.h"

/* 2026-12-02T16:00:00Z, the workload's start in every row. */
#define T0 1796227200000LL

/* The JobSet: deadline 60 s and startup 120 s for every ReplicatedJob; "v"
 * overrides the deadline with 10 s. */
static const char jobset_yaml[] =
	"apiVersion: jobset.x-k8s.io/v1alpha2\n"
	"kind: JobSet\n"
	"metadata:\n"
	"  name: js\n"
	"  namespace: ns\n"
	"  annotations:\n"
	"    jobset.sigs.k8s.io/progress-deadline-seconds: '60'\n"
	"    jobset.sigs.k8s.io/progress-startup-seconds: '120'\n"
	"spec:\n"
	"  replicatedJobs:\n"
	"  - name: w\n"
	"    template:\n"
	"      spec:\n"
	"        template:\n"
	"          spec: {containers: [{name: c, image: i}]}\n"
	"  - name: v\n"
	"    template:\n"
	"      metadata:\n"
	"        annotations: {jobset.sigs.k8s.io/progress-deadline-seconds: '10'}\n"
	"      spec:\n"
	"        template:\n"
	"          spec: {containers: [{name: c, image: i}]}\n";

static const char pod_yaml[] =
	"apiVersion: v1\n"
	"kind: Pod\n"
	"metadata:\n"
	"  name: js-w-0-0-abcde\n"
	"  namespace: ns\n"
	"  uid: pod-uid\n"
	"  labels:\n"
	"    jobset.sigs.k8s.io/jobset-name: js\n"
	"    jobset.sigs.k8s.io/replicatedjob-name: w\n"
	"    jobset.sigs.k8s.io/progress-watch: watched\n"
	"spec:\n"
	"  containers: [{name: c, image: i}]\n"
	"status:\n"
	"  phase: Running\n"
	"  containerStatuses:\n"
	"  - {name: c, state: {running: {startedAt: '2026-12-02T16:00:00Z'}}}\n";

/* The watcher's status with its report in lastState (the kubelet has
 * restarted it), or in state. */
#define WATCHER(where, code, msg)                                                                          \
	"{\"status\":{\"initContainerStatuses\":[{\"name\":\"jobset-progress\",\"state\":{\"running\":{}}," \
	"\"" where "\":{\"terminated\":{\"exitCode\":" #code ",\"message\":" msg "}}}]}}"
#define REPORT(body) "\"{\\\"reason\\\":\\\"ProgressDeadlineExceeded\\\"," body "}\""
/* T0 + 100 s, T0 + 200 s, T0 + 121 s, ... as the numbers they are. */
#define STALLED REPORT("\\\"heartbeatMs\\\":1796227300000,\\\"atMs\\\":1796227400000")

enum js_set { JS_SET, JS_NONE, JS_NO_DEADLINE, JS_GARBLED };

struct hcase {
	const char *id;
	const char *patch;     /* merge patches on the pod, ';'-free JSON */
	const char *patch2;    /* a second one, or NULL */
	enum js_set set;
	enum js__hang_verdict verdict;
	const char *why;       /* substring of the reason; NULL: none */
};

static const struct hcase cases[] = {
	{"no-report", "{\"status\":{\"initContainerStatuses\":[{\"name\":\"jobset-progress\",\"state\":{\"running\":{}}}]}}",
	 NULL, JS_SET, JS__HANG_NONE, NULL},
	{"stalled", WATCHER("lastState", 86, STALLED), NULL, JS_SET, JS__HANG_ACT,
	 "last heartbeat at 2026-12-02T16:01:40.000Z, 100.0 s before 2026-12-02T16:03:20.000Z: progress deadline 60 s "
	 "(jobset.sigs.k8s.io/progress-deadline-seconds) exceeded by 40000 ms"},
	{"report-in-state", WATCHER("state", 86, STALLED), NULL, JS_SET, JS__HANG_ACT, "exceeded by 40000 ms"},
	{"startup-allowance", WATCHER("lastState", 86, REPORT("\\\"atMs\\\":1796227321000")), NULL, JS_SET, JS__HANG_ACT,
	 "no heartbeat since its containers started at 2026-12-02T16:00:00.000Z, as of 2026-12-02T16:02:01.000Z: "
	 "startup allowance 120 s (jobset.sigs.k8s.io/progress-startup-seconds) exceeded by 1000 ms"},
	{"template-override", WATCHER("lastState", 86, REPORT("\\\"heartbeatMs\\\":1796227300000,\\\"atMs\\\":1796227311000")),
	 "{\"metadata\":{\"labels\":{\"jobset.sigs.k8s.io/replicatedjob-name\":\"v\"}}}", JS_SET, JS__HANG_ACT,
	 "progress deadline 10 s (jobset.sigs.k8s.io/progress-deadline-seconds) exceeded by 1000 ms"},
	/* The rule at the report's time, from the kubelet's start. */
	{"at-the-deadline", WATCHER("lastState", 86, REPORT("\\\"heartbeatMs\\\":1796227300000,\\\"atMs\\\":1796227360000")),
	 NULL, JS_SET, JS__HANG_REFUSED, "within its deadline at the report's time 2026-12-02T16:02:40.000Z"},
	{"premature-before-pull", WATCHER("lastState", 86, REPORT("\\\"atMs\\\":1796227230000")), NULL, JS_SET,
	 JS__HANG_REFUSED, "within its deadline"},
	{"report-before-restart", WATCHER("lastState", 86, REPORT("\\\"atMs\\\":1796227199000")), NULL, JS_SET,
	 JS__HANG_REFUSED, "its containers started at 2026-12-02T16:00:00.000Z"},
	{"beat-before-restart", WATCHER("lastState", 86, REPORT("\\\"heartbeatMs\\\":1796227195000,\\\"atMs\\\":1796227300000")),
	 NULL, JS_SET, JS__HANG_REFUSED, "within its deadline"},
	/* Garbled reports. */
	{"report-not-json", WATCHER("lastState", 86, "\"hello\""), NULL, JS_SET, JS__HANG_REFUSED,
	 "the watcher's report is not one (hello)"},
	{"report-other-reason", WATCHER("lastState", 86, "\"{\\\"reason\\\":\\\"X\\\",\\\"atMs\\\":1}\""), NULL, JS_SET,
	 JS__HANG_REFUSED, "not one"},
	{"report-no-time", WATCHER("lastState", 86, REPORT("\\\"heartbeatMs\\\":1")), NULL, JS_SET, JS__HANG_REFUSED,
	 "not one"},
	{"report-negative", WATCHER("lastState", 86, REPORT("\\\"atMs\\\":-1")), NULL, JS_SET, JS__HANG_REFUSED, "not one"},
	{"report-string-time", WATCHER("lastState", 86, REPORT("\\\"atMs\\\":\\\"1\\\"")), NULL, JS_SET, JS__HANG_REFUSED,
	 "not one"},
	{"report-empty", WATCHER("lastState", 86, "\"\""), NULL, JS_SET, JS__HANG_REFUSED, "not one"},
	{"report-absent", WATCHER("lastState", 86, "null"), NULL, JS_SET, JS__HANG_NONE, NULL},
	/* Not a report: another exit code, another container. */
	{"watcher-crashed", WATCHER("lastState", 1, STALLED), NULL, JS_SET, JS__HANG_NONE, NULL},
	{"other-container",
	 "{\"status\":{\"initContainerStatuses\":[{\"name\":\"init\",\"lastState\":{\"terminated\":{\"exitCode\":86,"
	 "\"message\":" STALLED "}}}]}}",
	 NULL, JS_SET, JS__HANG_NONE, NULL},
	/* Not the JobSet's to watch: a workload must not fail a pod by its
	 * report alone. */
	{"no-jobset", WATCHER("lastState", 86, STALLED), NULL, JS_NONE, JS__HANG_REFUSED, "no JobSet 'js' in its namespace"},
	{"jobset-without-deadline", WATCHER("lastState", 86, STALLED), NULL, JS_NO_DEADLINE, JS__HANG_REFUSED,
	 "JobSet 'js' sets no valid progress deadline for ReplicatedJob 'w'"},
	{"jobset-garbled-deadline", WATCHER("lastState", 86, STALLED), NULL, JS_GARBLED, JS__HANG_REFUSED,
	 "sets no valid progress deadline"},
	{"unknown-rjob", WATCHER("lastState", 86, STALLED),
	 "{\"metadata\":{\"labels\":{\"jobset.sigs.k8s.io/replicatedjob-name\":\"x\"}}}", JS_SET, JS__HANG_REFUSED,
	 "for ReplicatedJob 'x'"},
	{"no-rjob-label", WATCHER("lastState", 86, STALLED),
	 "{\"metadata\":{\"labels\":{\"jobset.sigs.k8s.io/replicatedjob-name\":null}}}", JS_SET, JS__HANG_REFUSED,
	 "for ReplicatedJob ''"},
	{"not-running", WATCHER("lastState", 86, STALLED),
	 "{\"status\":{\"containerStatuses\":[{\"name\":\"c\",\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}}}]}}",
	 JS_SET, JS__HANG_REFUSED, "no regular container is running"},
	{"garbled-start", WATCHER("lastState", 86, STALLED),
	 "{\"status\":{\"containerStatuses\":[{\"name\":\"c\",\"state\":{\"running\":{\"startedAt\":\"yesterday\"}}}]}}",
	 JS_SET, JS__HANG_REFUSED, "no regular container is running"},
	/* Going already, or done but the deletion. */
	{"terminal", WATCHER("lastState", 86, STALLED), "{\"status\":{\"phase\":\"Failed\"}}", JS_SET, JS__HANG_NONE, NULL},
	{"deleting", WATCHER("lastState", 86, STALLED), "{\"metadata\":{\"deletionTimestamp\":\"2026-12-02T16:05:00Z\"}}",
	 JS_SET, JS__HANG_NONE, NULL},
	{"marked", WATCHER("lastState", 86, STALLED),
	 "{\"status\":{\"conditions\":[{\"type\":\"ProgressDeadlineExceeded\",\"status\":\"True\"}]}}", JS_SET,
	 JS__HANG_DELETE, NULL},
	{"marked-false", WATCHER("lastState", 86, STALLED),
	 "{\"status\":{\"conditions\":[{\"type\":\"ProgressDeadlineExceeded\",\"status\":\"False\"}]}}", JS_SET,
	 JS__HANG_ACT, "exceeded by 40000 ms"},
	{"no-uid", WATCHER("lastState", 86, STALLED), "{\"metadata\":{\"uid\":null}}", JS_SET, JS__HANG_NONE, NULL},
};

static struct js_jobset *jobset_for(enum js_set set)
{
	if (set == JS_NONE)
		return NULL;
	json_t *o = tu_yaml(jobset_yaml);
	if (set == JS_NO_DEADLINE)
		tu_merge_patch(o, "{\"metadata\":{\"annotations\":null},\"spec\":{\"replicatedJobs\":[{\"name\":\"w\","
				  "\"template\":{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\","
				  "\"image\":\"i\"}]}}}}}]}}");
	if (set == JS_GARBLED)
		tu_merge_patch(o, "{\"metadata\":{\"annotations\":{\"jobset.sigs.k8s.io/progress-deadline-seconds\":"
				  "\"10s\"}}}");
	struct js_jobset *js = tu_decode(o);
	json_decref(o);
	assert_non_null(js);
	return js;
}

static void test_judge(void **state)
{
	(void)state;
	int failures = 0;
	for (size_t i = 0; i < JS_ARRAY_SIZE(cases); i++) {
		const struct hcase *c = &cases[i];
		json_t *o = tu_yaml(pod_yaml);
		tu_merge_patch(o, c->patch);
		if (c->patch2)
			tu_merge_patch(o, c->patch2);
		int err = 0;
		const struct js__hang_pod *p = js__hangs_pod_type.transform(o, &err);
		json_decref(o);
		assert_non_null(p);
		struct js_jobset *js = jobset_for(c->set);
		struct js__hang_judgement j;
		js__hangs_judge(p, js, &j);
		if (j.verdict != c->verdict) {
			print_error("%s: verdict %d, want %d (%s)\n", c->id, (int)j.verdict, (int)c->verdict,
				    j.why ? j.why : "");
			failures++;
		} else if (c->why && (!j.why || !strstr(j.why, c->why))) {
			print_error("%s: reason '%s' lacks '%s'\n", c->id, j.why ? j.why : "", c->why);
			failures++;
		}
		js__hang_judgement_done(&j);
		js_jobset_free(js);
		js__hangs_pod_type.unref(p);
	}
	assert_int_equal(failures, 0);
}

/* The cache drops kubelet updates that change nothing the judgement
 * reads, and keeps those that do. */
static void test_same(void **state)
{
	(void)state;
	static const struct {
		const char *patch;
		bool same;
	} rows[] = {
		{"{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}", true},
		{"{\"status\":{\"podIP\":\"10.0.0.1\"}}", true},
		{WATCHER("lastState", 86, STALLED), false},
		{"{\"status\":{\"containerStatuses\":[{\"name\":\"c\",\"state\":{\"running\":{\"startedAt\":"
		 "\"2026-12-02T16:00:09Z\"}}}]}}", false},
		{"{\"metadata\":{\"deletionTimestamp\":\"2026-12-02T16:05:00Z\"}}", false},
	};
	json_t *o = tu_yaml(pod_yaml);
	int err = 0;
	const void *a = js__hangs_pod_type.transform(o, &err);
	for (size_t i = 0; i < JS_ARRAY_SIZE(rows); i++) {
		json_t *o2 = json_deep_copy(o);
		tu_merge_patch(o2, rows[i].patch);
		const void *b = js__hangs_pod_type.transform(o2, &err);
		if (js__hangs_pod_type.same(a, b) != rows[i].same)
			fail_msg("row %zu: same() %d, want %d", i, !rows[i].same, rows[i].same);
		js__hangs_pod_type.unref(b);
		json_decref(o2);
	}
	js__hangs_pod_type.unref(a);
	json_decref(o);
}

/* What the watcher writes is what the controller reads, also with a
 * message longer than the kubelet keeps. */
static void test_report_roundtrip(void **state)
{
	(void)state;
	char *long_msg = malloc(10001);
	memset(long_msg, 'x', 10000);
	long_msg[10000] = 0;
	static const struct js_heartbeat_report reps[] = {
		{.has_beat = true, .beat_ms = T0, .at_ms = T0 + 1},
		{.has_beat = false, .at_ms = 0},
		{.has_beat = true, .beat_ms = INT64_MAX, .at_ms = INT64_MAX},
	};
	const char *msgs[] = {"short", NULL, long_msg};
	for (size_t i = 0; i < JS_ARRAY_SIZE(reps); i++) {
		char *text = js_heartbeat_report_format(&reps[i], msgs[i]);
		assert_true(strlen(text) <= JS_HEARTBEAT_REPORT_MAX);
		struct js_heartbeat_report got = {0};
		assert_int_equal(js_heartbeat_report_parse(text, &got), 0);
		assert_int_equal(got.has_beat, reps[i].has_beat);
		assert_int_equal(got.beat_ms, reps[i].beat_ms);
		assert_int_equal(got.at_ms, reps[i].at_ms);
		free(text);
	}
	free(long_msg);
}

/* The patch that makes the kubelet end the pod Failed: this uid only, the
 * least active deadline the API takes; nothing without a uid. */
static void test_expire_patch(void **state)
{
	(void)state;
	json_t *o = tu_yaml(pod_yaml);
	int err = 0;
	const struct js__hang_pod *p = js__hangs_pod_type.transform(o, &err);
	json_t *patch = js__hangs_expire_patch(p);
	char *got = json_dumps(patch, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(got, "[{\"op\":\"test\",\"path\":\"/metadata/uid\",\"value\":\"pod-uid\"},"
				 "{\"op\":\"add\",\"path\":\"/spec/activeDeadlineSeconds\",\"value\":1}]");
	free(got);
	json_decref(patch);
	js__hangs_pod_type.unref(p);
	tu_merge_patch(o, "{\"metadata\":{\"uid\":null}}");
	p = js__hangs_pod_type.transform(o, &err);
	assert_null(js__hangs_expire_patch(p));
	js__hangs_pod_type.unref(p);
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_judge),
		cmocka_unit_test(test_same),
		cmocka_unit_test(test_report_roundtrip),
		cmocka_unit_test(test_expire_patch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
