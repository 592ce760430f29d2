/*
 * html_test.c - a run's picture (picture/html.h), table-driven: each case
 * builds a timeline (ReplicatedJobs x Jobs x pods, attempts, failures) and
 * checks the page's rows, attempt markers, failure marks with their exit
 * codes, escaping, the aggregation past JS_HTML_MAX_ROWS, and that the page
 * is self-contained (nothing fetched, no script). A second table records
 * more restarts than the page marks (the latest kept, the earlier counted
 * on the page); a third puts NodeQuarantined events under the restart
 * they name; a fourth checks js_html_escape alone.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "picture/html.h"
#include "picture/timeline.h"

#define EVIL "<script>alert('x')</script>&\""

struct hcase {
	const char *name;
	size_t rjobs, jobs, pods;   /* per JobSet, per ReplicatedJob, per Job */
	int restarts;               /* attempts after the first */
	int exit_code;              /* pod 1 of Job 0 fails in each attempt but
				       the last with this code; 0: none fail */
	const char *evil;           /* put into names, reasons and messages */
	enum js_html_rows want_kind;
	size_t want_rows;           /* <g class="row"> */
	const char *want[4];        /* substrings the page must hold */
};

static const struct hcase cases[] = {
	{"10 pods, a failure and a restart: a row per pod position", 2, 1, 5, 1, 1, NULL, JS_HTML_ROWS_POD, 10,
	 {"data-exit-code=\"1\"", "exit 1 (Error)", "attempt 1 began at +1.00 s: DefaultFailurePolicy", "data-attempt=\"1\""}},
	{"no restart: attempt 0 only, no marker", 1, 2, 2, 0, 0, NULL, JS_HTML_ROWS_POD, 4,
	 {"None: the whole run was attempt 0.", "No pod failed.", "data-kind=\"pod\"", "ReplicatedJob rj0"}},
	{"killed by SIGKILL: exit 137, two restarts", 1, 1, 3, 2, 137, NULL, JS_HTML_ROWS_POD, 3,
	 {"exit 137 (Error)", "data-attempt=\"2\"", "data-exit-code=\"137\"", "attempt 2 began at +2.00 s"}},
	{"names, reasons and messages are escaped", 1, 1, 2, 1, 3, EVIL, JS_HTML_ROWS_POD, 2,
	 {"&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;", "exit 3 (Error&lt;script&gt;", NULL, NULL}},
	{"64 pods: still a row each", 1, 8, 8, 1, 1, NULL, JS_HTML_ROWS_POD, 64, {"data-kind=\"pod\"", NULL, NULL, NULL}},
	{"65 pods: a row per Job, with counts", 1, 5, 13, 1, 1, NULL, JS_HTML_ROWS_JOB, 5,
	 {"data-kind=\"job\"", "js-rj0-0: 26 pods", "one row per Job", "data-failed=\"1\""}},
	{"1,000 pods in 100 Jobs: a row per ReplicatedJob", 2, 50, 10, 0, 0, NULL, JS_HTML_ROWS_RJOB, 2,
	 {"data-kind=\"rjob\"", "rj1: 50 Jobs, 500 pods", "one row per ReplicatedJob", "1000 pods in 2 rows"}},
	{"500 pod positions, 3 attempts, failures: aggregated", 1, 20, 25, 2, 42, NULL, JS_HTML_ROWS_JOB, 20,
	 {"2 failed, first: exit 42", "data-attempt=\"2\"", "data-pods=\"75\"", NULL}},
};

/* Strings the builder made, freed after the case. */
struct pool {
	char **s;
	size_t n;
};

static const char *keep(struct pool *p, char *s)
{
	p->s = realloc(p->s, (p->n + 1) * sizeof(*p->s));
	p->s[p->n++] = s;
	return s;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The case's run: attempt a lasts [a s, a s + 1 s); each pod is pending
 * 100 ms, then runs; in every attempt but the last, pod 1 of Job 0 fails at
 * +500 ms (in the first ReplicatedJob) and the rest are deleted at the
 * restart and gone 20 ms later; in the last
 * attempt every pod succeeds at +900 ms. */
static void build(const struct hcase *c, struct js_timeline *t, struct pool *pool)
{
	const int64_t t0 = 1700000000000;
	const char *evil = c->evil ? c->evil : "";
	size_t n = c->rjobs * c->jobs * c->pods * (size_t)(c->restarts + 1);
	struct js_timeline_pod *pods = calloc(n, sizeof(*pods));
	struct js_timeline_restart *rs = calloc((size_t)c->restarts + 1, sizeof(*rs));
	const char **rjobs = calloc(c->rjobs, sizeof(*rjobs));
	struct js_timeline_event *ev = calloc(2, sizeof(*ev));
	size_t k = 0;
	for (size_t r = 0; r < c->rjobs; r++)
		rjobs[r] = keep(pool, js_buf_format("rj%zu%s", r, evil));
	for (int a = 0; a <= c->restarts; a++) {
		int64_t base = t0 + a * 1000;
		bool last = a == c->restarts;
		for (size_t r = 0; r < c->rjobs; r++) {
			for (size_t j = 0; j < c->jobs; j++) {
				const char *job = keep(pool, js_buf_format("js-rj%zu-%zu%s", r, j, evil));
				for (size_t i = 0; i < c->pods; i++) {
					bool fails = !last && c->exit_code && r == 0 && j == 0 && i == 1;
					struct js_timeline_pod *p = &pods[k++];
					*p = (struct js_timeline_pod){
						.name = keep(pool, js_buf_format("%s-%zu-a%d%s", job, i, a, evil)), .rjob = rjobs[r],
						.job = job, .job_index = (int32_t)j, .index = (int32_t)i, .attempt = a,
						.created_ms = base, .started_ms = base + 100,
						.deleted_ms = last || fails ? 0 : base + 1000,
						.finished_ms = last ? base + 900 : fails ? base + 500 : base + 1000 + 20,
						.end = last ? JS_TIMELINE_SUCCEEDED : fails ? JS_TIMELINE_FAILED : JS_TIMELINE_STOPPED,
						.exit_code = fails ? c->exit_code : 0, .reason = fails ? keep(pool, js_buf_format("Error%s", evil)) : "",
						.detail = fails ? keep(pool, js_buf_format("worker: exit code %d (Error)%s", c->exit_code, evil)) : "",
					};
				}
			}
		}
		if (a > 0)
			rs[a - 1] = (struct js_timeline_restart){
				.at_ms = base, .attempt = a, .reason = "DefaultFailurePolicy",
				.message = keep(pool, js_buf_format("applying RestartJobSet (first failed job: js-rj0-0%s)", evil))};
	}
	ev[0] = (struct js_timeline_event){t0, "Normal", "Started", "pod", pods[0].name, "hostname h"};
	ev[1] = (struct js_timeline_event){t0 + 500, "Warning", "Failed", "pod", pods[0].name,
					   keep(pool, js_buf_format("worker: exit code 1%s", evil))};
	*t = (struct js_timeline){
		.name = keep(pool, js_buf_format("demo%s", evil)), .namespace_ = "default", .result = "Completed",
		.start_ms = t0, .end_ms = t0 + (c->restarts + 1) * 1000, .restarts = c->restarts, .rjobs = rjobs,
		.n_rjobs = c->rjobs, .pods = pods, .n_pods = n, .restarts_at = rs, .n_restarts = (size_t)c->restarts,
		.events = ev, .n_events = 2,
	};
	t->phases.known = true;
	t->phases.sum.goodput = 0.42;
	t->phases.sum.wall_seconds = 3.0;
	t->phases.sum.seconds[JS_PHASE_RUNNING] = 1.26;
}

static void drop(struct js_timeline *t, struct pool *pool)
{
	free((void *)(uintptr_t)t->pods);
	free((void *)(uintptr_t)t->restarts_at);
	free((void *)(uintptr_t)t->rjobs);
	free((void *)(uintptr_t)t->events);
	for (size_t i = 0; i < pool->n; i++)
		free(pool->s[i]);
	free(pool->s);
	*pool = (struct pool){0};
}

static void fail_case(const struct hcase *c, const char *what, const char *page)
{
	fprintf(stderr, "case '%s': %s\n--- page ---\n%.4000s\n", c->name, what, page);
	fail();
}

static void test_cases(void **state)
{
	(void)state;
	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
		const struct hcase *c = &cases[ci];
		struct pool pool = {0};
		struct js_timeline t;
		build(c, &t, &pool);
		struct js_buf b;
		js_buf_init(&b, 0);
		if (js_html_report(&t, &b) != 0)
			fail_case(c, "js_html_report failed", js_buf_str(&b));
		const char *page = js_buf_str(&b);
		char msg[256];
		if (js_html_rows(&t) != c->want_kind) {
			snprintf(msg, sizeof(msg), "row kind %d, want %d", js_html_rows(&t), c->want_kind);
			fail_case(c, msg, page);
		}
		size_t rows = count(page, "<g class=\"row\"");
		if (rows != c->want_rows) {
			snprintf(msg, sizeof(msg), "%zu rows, want %zu", rows, c->want_rows);
			fail_case(c, msg, page);
		}
		/* One marker per restart, one failure mark per failed pod. */
		size_t markers = count(page, "<g class=\"attempt\""), marks = count(page, "<g class=\"fail-mark\"");
		size_t want_marks = c->exit_code ? (size_t)c->restarts : 0;
		if (markers != (size_t)c->restarts || marks != want_marks) {
			snprintf(msg, sizeof(msg), "%zu attempt markers and %zu failure marks, want %d and %zu", markers, marks,
				 c->restarts, want_marks);
			fail_case(c, msg, page);
		}
		for (size_t i = 0; i < 4 && c->want[i]; i++) {
			if (!strstr(page, c->want[i])) {
				snprintf(msg, sizeof(msg), "missing '%s'", c->want[i]);
				fail_case(c, msg, page);
			}
		}
		/* Self-contained and static; core/phase's numbers as given. */
		static const char *const never[] = {"<script", "http://", "https://", "src=", "url(", "@import", "<link"};
		for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
			if (strstr(page, never[i])) {
				snprintf(msg, sizeof(msg), "holds '%s'", never[i]);
				fail_case(c, msg, page);
			}
		}
		if (!strstr(page, "<strong>0.42</strong>") || !strstr(page, "<title id=\"tl-title\">"))
			fail_case(c, "no goodput 0.42 or no SVG title", page);
		if (strncmp(page, "<!DOCTYPE html>", 15) != 0 || !strstr(page, "</html>"))
			fail_case(c, "not a whole page", page);
		js_buf_done(&b);
		drop(&t, &pool);
	}
}

/* A page that does not fit under the buffer's ceiling is an error, not a
 * cut page. */
static void test_too_large(void **state)
{
	(void)state;
	struct pool pool = {0};
	struct js_timeline t;
	build(&cases[0], &t, &pool);
	struct js_buf b;
	js_buf_init(&b, 1024);
	assert_int_equal(js_html_report(&t, &b), -E2BIG);
	js_buf_done(&b);
	drop(&t, &pool);
}

/* A JobSet restarting more often than the picture marks: the record keeps
 * the latest restarts (the ones looked at after a bad night), and the page
 * says how many earlier ones it left out. */
static const struct {
	const char *name;
	int32_t restarts;          /* recorded, attempts 1 to this */
	size_t want_kept;          /* markers and list items */
	int32_t want_first;        /* the first kept attempt */
	size_t want_dropped;
	const char *want;          /* on the page */
} latest[] = {
	{"three: all kept", 3, 3, 1, 0, ">attempt 0</text>"},
	{"exactly the cap: all kept", JS_TIMELINE_MAX_RESTARTS, JS_TIMELINE_MAX_RESTARTS, 1, 0, ">attempt 0</text>"},
	{"one past: the first left out", JS_TIMELINE_MAX_RESTARTS + 1, JS_TIMELINE_MAX_RESTARTS, 2, 1,
	 "The first restart (attempt 1) is left out of the picture and this list: they keep the latest 1000."},
	{"2,500: the latest 1,000", 2500, JS_TIMELINE_MAX_RESTARTS, 1501, 1500,
	 "The first 1500 restarts (attempts 1 to 1500) are left out"},
};

static void test_latest_restarts(void **state)
{
	(void)state;
	const char *rjobs[] = {"w"};
	for (size_t ci = 0; ci < sizeof(latest) / sizeof(latest[0]); ci++) {
		const int64_t t0 = 1700000000000;
		struct js_timeline *t = js_timeline_new_named("busy", "default", rjobs, 1, t0);
		for (int32_t a = 1; a <= latest[ci].restarts; a++) {
			char msg[64];
			snprintf(msg, sizeof(msg), "restart %d", a);
			js_timeline_add_restart(t, t0 + a * 1000, a, "DefaultFailurePolicy", msg);
		}
		js_timeline_end(t, t0 + (latest[ci].restarts + 1) * 1000, "Completed", latest[ci].restarts, NULL, NULL);
		struct js_buf b;
		js_buf_init(&b, 0);
		assert_int_equal(js_html_report(t, &b), 0);
		const char *page = js_buf_str(&b);
		char first[64], first_msg[64];
		snprintf(first, sizeof(first), "<li>Attempt %d began", latest[ci].want_first);
		snprintf(first_msg, sizeof(first_msg), "restart %d", latest[ci].want_first);
		size_t markers = count(page, "<g class=\"attempt\""), items = count(page, "<li>Attempt ");
		if (t->n_restarts != latest[ci].want_kept || t->restarts_dropped != latest[ci].want_dropped ||
		    markers != latest[ci].want_kept || items != latest[ci].want_kept || !t->n_restarts ||
		    t->restarts_at[0].attempt != latest[ci].want_first ||
		    t->restarts_at[t->n_restarts - 1].attempt != latest[ci].restarts ||
		    strcmp(t->restarts_at[0].message, first_msg) != 0 || !strstr(page, first) ||
		    !strstr(page, latest[ci].want) || strstr(page, "counted but not drawn")) {
			fprintf(stderr,
				"case '%s': kept %zu (markers %zu, items %zu), dropped %zu, first attempt %d; want %zu, "
				"%zu, %d and '%s'\n",
				latest[ci].name, t->n_restarts, markers, items, t->restarts_dropped,
				t->n_restarts ? t->restarts_at[0].attempt : -1, latest[ci].want_kept, latest[ci].want_dropped,
				latest[ci].want_first, latest[ci].want);
			fail();
		}
		json_t *j = js_timeline_to_json(t);
		assert_non_null(j);
		assert_int_equal(json_integer_value(json_object_get(j, "restartsDropped")), (json_int_t)latest[ci].want_dropped);
		json_decref(j);
		js_buf_done(&b);
		js_timeline_free(t);
	}
}

/* Node quarantine (docs/node-quarantine.md): each NodeQuarantined event is
 * a line under the restart whose attempt it names, on both bodies' pages. */
static const struct {
	const char *name;
	const char *reason, *message;
	int32_t under; /* the attempt whose item holds it; 0: none */
} quarantine[] = {
	{"a GPU kept off attempt 1 (local)", "NodeQuarantined",
	 "node gpu-0 is kept off attempts 1 to 2: pod q-w-0-0-a failed there (exit code 137)", 1},
	{"a node kept off attempt 2 (cluster)", "NodeQuarantined",
	 "node kwok-node-2 is kept off attempts 2 to 2: pod q-w-0-0-b failed there (exit code 134)", 2},
	{"another reason with the same words: not a quarantine", "RestartJobSetFailurePolicyAction",
	 "node kwok-node-3 is kept off attempts 1 to 1", 0},
	{"an attempt that never began: nowhere", "NodeQuarantined",
	 "node gpu-9 is kept off attempts 7 to 7: pod q-w-0-0-c failed there (exit code 137)", 0},
	{"no attempt in the message: nowhere", "NodeQuarantined", "node gpu-8 is kept off attempts x", 0},
};

static void test_quarantine(void **state)
{
	(void)state;
	const char *rjobs[] = {"w"};
	const int64_t t0 = 1700000000000;
	struct js_timeline *t = js_timeline_new_named("q", "default", rjobs, 1, t0);
	js_timeline_add_restart(t, t0 + 1000, 1, "DefaultFailurePolicy", "first");
	js_timeline_add_restart(t, t0 + 2000, 2, "DefaultFailurePolicy", "second");
	for (size_t i = 0; i < sizeof(quarantine) / sizeof(quarantine[0]); i++) {
		struct js_timeline_event e = {t0 + 900, "Warning", quarantine[i].reason, "jobset", "q",
					      quarantine[i].message};
		js_timeline_add_event(t, &e);
	}
	js_timeline_end(t, t0 + 3000, "Completed", 2, NULL, NULL);
	struct js_buf b;
	js_buf_init(&b, 0);
	assert_int_equal(js_html_report(t, &b), 0);
	const char *page = js_buf_str(&b);
	for (size_t i = 0; i < sizeof(quarantine) / sizeof(quarantine[0]); i++) {
		char line[256], item[64];
		snprintf(line, sizeof(line), "<li>Quarantined: %s</li>", quarantine[i].message);
		const char *at = strstr(page, line);
		/* The item it sits in: the last "<li>Attempt " before it, and no
		 * item's end between. */
		int32_t in = 0;
		for (int32_t a = 1; at && a <= 2; a++) {
			snprintf(item, sizeof(item), "<li>Attempt %d began", a);
			const char *start = strstr(page, item);
			const char *end = start ? strstr(start, "</li>\n") : NULL;
			if (start && start < at && end && at < end)
				in = a;
		}
		if (in != quarantine[i].under || (!quarantine[i].under && at)) {
			fprintf(stderr, "case '%s': under attempt %d (%s on the page), want %d\n--- page ---\n%.6000s\n",
				quarantine[i].name, in, at ? "found" : "not", quarantine[i].under, page);
			fail();
		}
	}
	js_buf_done(&b);
	js_timeline_free(t);
}

static const struct {
	const char *in, *want;
} escapes[] = {
	{"plain-name-0", "plain-name-0"},
	{"<script>", "&lt;script&gt;"},
	{"a & b", "a &amp; b"},
	{"\"quoted\" 'single'", "&quot;quoted&quot; &#39;single&#39;"},
	{"bell\a and esc\x1b dropped, tab\tkept", "bell and esc dropped, tab\tkept"},
	{"", ""},
};

static void test_escape(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(escapes) / sizeof(escapes[0]); i++) {
		struct js_buf b;
		js_buf_init(&b, 0);
		assert_int_equal(js_html_escape(&b, escapes[i].in), 0);
		if (strcmp(js_buf_str(&b), escapes[i].want) != 0) {
			fprintf(stderr, "escape '%s': got '%s', want '%s'\n", escapes[i].in, js_buf_str(&b), escapes[i].want);
			fail();
		}
		js_buf_done(&b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_too_large),
		cmocka_unit_test(test_latest_restarts),
		cmocka_unit_test(test_quarantine),
		cmocka_unit_test(test_escape),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
