/*
 * fromapi_test.c - a cluster JobSet's timeline from its API objects
 * (picture/fromapi.h), table-driven from JSON fixtures in
 * tests/cases/picture/ (each {"jobset", "jobs", "pods", "events" (null:
 * unreadable), "events_error", "now"}): a restart with the old attempt's
 * pods held, gone and known from events (a kubelet's too), gone with their
 * events, events unreadable; a pending pod without containerStatuses; two
 * restarts folded into one event series; more restarts than the page
 * marks (the latest kept); garbage in every field. Each case names the pods it must yield
 * (name|attempt|source|end|exit code|started), the restarts
 * (attempt|ms after the start|reason), the result, and strings the notes
 * and the rendered page must hold; the page must be whole and
 * self-contained whatever the input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/describe.h"
#include "base/buf.h"
#include "base/common.h"
#include "picture/fromapi.h"
#include "picture/html.h"
#include "support/testutil.h"

#define MAXW 8

struct fcase {
	const char *name;
	const char *file;              /* under tests/cases/picture/ */
	int want_rc;
	const char *pods[MAXW];        /* every pod, any order; NULL-ended */
	const char *restarts[MAXW];    /* in order */
	const char *result;
	size_t events;                 /* in the events table */
	const char *text[MAXW];        /* substrings of notes + phases note + page */
	const char *absent;            /* a substring the page must not hold */
};

static const struct fcase cases[] = {
	{"a restart: attempt 1 alive, attempt 0 known only from events", "restart-events.json", 0,
	 {"rep-leader-0-0-bbbbb|1|seen|succeeded|-|s", "rep-w-0-0-ccccc|1|seen|succeeded|-|s",
	  "rep-w-1-0-ddddd|1|seen|succeeded|-|s", "rep-leader-0-0-aaaa1|0|events|unknown|-|-",
	  "rep-w-0-0-aaaa2|0|events|succeeded|-|-", "rep-w-1-0-aaaa3|0|events|failed|-|-"},
	 {"1|4380|RestartJobSetFailurePolicyAction"}, "Completed", 10,
	 {"rebuilt from their events", "data-from-events=\"1\"", "its exit code is not recorded",
	  "its Job failed: Job has reached the specified backoff limit", "Phase totals and goodput are not shown",
	  "Now: finished since +8.0 s", "class=\"span unrecorded\"", "generator\" content=\"kubectl jobset report\""}, NULL},
	{"a kubelet's Started and Killing events: the gone pod's run drawn, ending at its deletion",
	 "restart-events-kubelet.json", 0,
	 {"rep-leader-0-0-bbbbb|1|seen|succeeded|-|s", "rep-w-0-0-ccccc|1|seen|succeeded|-|s",
	  "rep-w-1-0-ddddd|1|seen|succeeded|-|s", "rep-leader-0-0-aaaa1|0|events|unknown|-|s",
	  "rep-w-0-0-aaaa2|0|events|succeeded|-|-", "rep-w-1-0-aaaa3|0|events|failed|-|-"},
	 {"1|4380|RestartJobSetFailurePolicyAction"}, "Completed", 12,
	 {"rep-leader-0-0: running from +1.50 s to +4.40 s", "rep-leader-0-0: pending from +1.25 s to +1.50 s", NULL},
	 /* Gone, so not still terminating at the end of the picture. */
	 "rep-leader-0-0: terminating from +4.40 s to +8.00 s"},
	{"the old attempt's pods held: seen, the failure with its exit code, the others stopped or done",
	 "restart-held.json", 0,
	 {"rep-leader-0-0-aaaa1|0|seen|stopped|-|s", "rep-w-0-0-aaaa2|0|seen|succeeded|-|s",
	  "rep-w-1-0-aaaa3|0|seen|failed|3|s", "rep-leader-0-0-bbbbb|1|seen|succeeded|-|s",
	  "rep-w-0-0-ccccc|1|seen|succeeded|-|s", "rep-w-1-0-ddddd|1|seen|succeeded|-|s"},
	 {"1|4380|RestartJobSetFailurePolicyAction"}, "Completed", 10,
	 {"data-exit-code=\"3\" data-source=\"seen\"", "exit 3 (Error)", "c: exit code 3 (Error)", NULL}, NULL},
	{"events expired: no record of attempt 0, the restart at its first Job", "restart-events-expired.json", 0,
	 {"rep-leader-0-0-bbbbb|1|seen|succeeded|-|s", "rep-w-0-0-ccccc|1|seen|succeeded|-|s",
	  "rep-w-1-0-ddddd|1|seen|succeeded|-|s", "job:rep-leader-0-0|0|none|unknown|-|-", "job:rep-w-0-0|0|none|unknown|-|-",
	  "job:rep-w-1-0|0|none|unknown|-|-"},
	 {"1|5000|"}, "Completed", 0,
	 {"placed at the creation of the attempt", "3 pods of earlier attempts left no record",
	  "data-no-record=\"1\"", "reason not recorded", NULL}, NULL},
	{"events unreadable: said on the page", "restart-events-forbidden.json", 0,
	 {"rep-leader-0-0-bbbbb|1|seen|succeeded|-|s", "rep-w-0-0-ccccc|1|seen|succeeded|-|s",
	  "rep-w-1-0-ddddd|1|seen|succeeded|-|s", "job:rep-leader-0-0|0|none|unknown|-|-", "job:rep-w-0-0|0|none|unknown|-|-",
	  "job:rep-w-1-0|0|none|unknown|-|-"},
	 {"1|5000|"}, "Completed", 0,
	 {"The events could not be read (Forbidden: events.events.k8s.io is forbidden)", NULL}, NULL},
	{"running: a pod with no containerStatuses is pending, never started", "running-pending.json", 0,
	 {"rep-w-0-0-ppppp|0|seen|unfinished|-|-", "rep-leader-0-0-rrrrr|0|seen|unfinished|-|s"}, {NULL}, "", 0,
	 {"Now: pending", "class=\"span pending\"", "class=\"span running\"", "None: the whole run was attempt 0."}, NULL},
	{"two restarts folded into one event series: both timed", "restart-series.json", 0, {NULL},
	 {"1|3500|RestartJobSetFailurePolicyAction", "2|6500|RestartJobSetFailurePolicyAction"}, "Completed", 1,
	 {"data-attempt=\"2\"", NULL}, NULL},
	{"1,003 restarts: the latest attempts kept, the first 3 left out and said so", "restart-many.json", 0,
	 {"rep-w-1-zzzzz|1003|seen|succeeded|-|s"},
	 {"1001|3500|RestartJobSetFailurePolicyAction", "1003|6500|RestartJobSetFailurePolicyAction"}, "Completed", 1,
	 {"The first 3 restarts (attempts 1 to 3) are left out", ">attempts 0 to 3</text>", "data-attempt=\"1003\"",
	  "998 restarts have no time left at all", "998 more restarts are counted but not drawn", NULL}, NULL},
	{"garbage and absent fields: skipped, no crash", "garbage.json", 0,
	 {"rep-w-0-0-x|-1|seen|stopped|-|-", "rep-w-1-0-y|-1|seen|failed|2147483647|-",
	  "rep-w-0-0-q|-1|events|failed|-|-"},
	 {NULL}, "", 4, {"attempt not recorded", NULL}, NULL},
	{"not a JobSet object: refused", "not-a-jobset.json", JS_EINVALID, {NULL}, {NULL}, NULL, 0, {NULL}, NULL},
};

static void fail_case(const struct fcase *c, const char *what, const char *got)
{
	fprintf(stderr, "case '%s': %s\n--- got ---\n%.6000s\n", c->name, what, got ? got : "");
	fail();
}

static void summaries(const struct js_timeline *t, struct js_buf *pods, struct js_buf *restarts)
{
	int r = 0;
	for (size_t i = 0; i < t->n_pods; i++) {
		const struct js_timeline_pod *p = &t->pods[i];
		char exit_s[16] = "-";
		if (p->end == JS_TIMELINE_FAILED && p->has_exit_code)
			snprintf(exit_s, sizeof(exit_s), "%d", p->exit_code);
		if (p->name[0])
			r |= js_buf_printf(pods, "%s|", p->name);
		else
			r |= js_buf_printf(pods, "job:%s-%d|", p->job, p->index);
		r |= js_buf_printf(pods, "%d|%s|%s|%s|%c\n", p->attempt, js_timeline_source_name(p->source),
				   js_timeline_end_name(p->end), exit_s, p->started_ms ? 's' : '-');
	}
	for (size_t i = 0; i < t->n_restarts; i++) {
		const struct js_timeline_restart *x = &t->restarts_at[i];
		r |= js_buf_printf(restarts, "%d|%lld|%s\n", x->attempt, (long long)(x->at_ms - t->start_ms), x->reason);
	}
	assert_int_equal(r, 0);
}

/* Whether line `want` is one of the lines of `lines`. */
static bool has_line(const char *lines, const char *want)
{
	size_t n = strlen(want);
	for (const char *p = lines; (p = strstr(p, want)); p += n) {
		if ((p == lines || p[-1] == '\n') && p[n] == '\n')
			return true;
	}
	return false;
}

static size_t count_lines(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void run_case(const struct fcase *c)
{
	char rel[256];
	snprintf(rel, sizeof(rel), "tests/cases/picture/%s", c->file);
	char *text = tu_read_file(tu_src_path(rel), NULL);
	if (!text)
		fail_case(c, "fixture missing", rel);
	json_error_t jerr;
	json_t *fx = json_loads(text, 0, &jerr);
	free(text);
	if (!fx)
		fail_case(c, "fixture is not JSON", jerr.text);
	int64_t now = 0;
	assert_int_equal(js_describe_time_ms(json_string_value(json_object_get(fx, "now")), &now), 0);
	struct js_fromapi_input in = {
		.jobset = json_object_get(fx, "jobset"), .jobs = json_object_get(fx, "jobs"),
		.pods = json_object_get(fx, "pods"), .events = json_object_get(fx, "events"),
		.events_error = json_string_value(json_object_get(fx, "events_error")), .now_ms = now,
	};
	if (json_is_null(in.events))
		in.events = NULL;
	struct js_timeline *t = NULL;
	int rc = js_fromapi_timeline(&in, &t);
	char msg[512];
	if (rc != c->want_rc) {
		snprintf(msg, sizeof(msg), "rc %d, want %d", rc, c->want_rc);
		fail_case(c, msg, NULL);
	}
	if (rc) {
		assert_null(t);
		json_decref(fx);
		return;
	}
	struct js_buf pods, rs, page;
	js_buf_init(&pods, 0);
	js_buf_init(&rs, 0);
	js_buf_init(&page, 0);
	summaries(t, &pods, &rs);
	size_t want_pods = 0, want_rs = 0;
	for (; want_pods < MAXW && c->pods[want_pods]; want_pods++) {
		if (!has_line(js_buf_str(&pods), c->pods[want_pods])) {
			snprintf(msg, sizeof(msg), "no pod '%s'", c->pods[want_pods]);
			fail_case(c, msg, js_buf_str(&pods));
		}
	}
	if (count_lines(js_buf_str(&pods)) != want_pods) {
		snprintf(msg, sizeof(msg), "%zu pods, want %zu", count_lines(js_buf_str(&pods)), want_pods);
		fail_case(c, msg, js_buf_str(&pods));
	}
	struct js_buf want_r;
	js_buf_init(&want_r, 0);
	for (; want_rs < MAXW && c->restarts[want_rs]; want_rs++)
		assert_int_equal(js_buf_printf(&want_r, "%s\n", c->restarts[want_rs]), 0);
	if (strcmp(js_buf_str(&want_r), js_buf_str(&rs)) != 0)
		fail_case(c, "restarts differ; want:", js_buf_str(&want_r));
	if (strcmp(t->result, c->result) != 0) {
		snprintf(msg, sizeof(msg), "result '%s', want '%s'", t->result, c->result);
		fail_case(c, msg, NULL);
	}
	if (t->n_events != c->events) {
		snprintf(msg, sizeof(msg), "%zu events, want %zu", t->n_events, c->events);
		fail_case(c, msg, NULL);
	}
	if (t->origin != JS_TIMELINE_CLUSTER || t->phases.known || t->end_ms < t->start_ms)
		fail_case(c, "not a cluster timeline with unknown phases and end >= start", NULL);
	/* The page: whole, self-contained, holding what the case names. */
	if (js_html_report(t, &page) != 0)
		fail_case(c, "js_html_report failed", js_buf_str(&page));
	const char *html = js_buf_str(&page);
	if (strncmp(html, "<!DOCTYPE html>", 15) != 0 || !strstr(html, "</html>"))
		fail_case(c, "not a whole page", html);
	static const char *const never[] = {"<script", "http://", "https://", "src=", "url(", "@import", "<link",
					    "goodput</strong>"};
	for (size_t i = 0; i < JS_ARRAY_SIZE(never); i++) {
		if (strstr(html, never[i])) {
			snprintf(msg, sizeof(msg), "page holds '%s'", never[i]);
			fail_case(c, msg, html);
		}
	}
	for (size_t i = 0; i < MAXW && c->text[i]; i++) {
		if (!strstr(html, c->text[i])) {
			snprintf(msg, sizeof(msg), "page lacks '%s'", c->text[i]);
			fail_case(c, msg, html);
		}
	}
	if (c->absent && strstr(html, c->absent)) {
		snprintf(msg, sizeof(msg), "page holds '%s'", c->absent);
		fail_case(c, msg, html);
	}
	json_t *j = js_timeline_to_json(t);
	if (!j || json_array_size(json_object_get(j, "pods")) != t->n_pods ||
	    !json_is_null(json_object_get(j, "phases")))
		fail_case(c, "JSON lacks the pods or has phases", NULL);
	json_decref(j);
	js_buf_done(&want_r);
	js_buf_done(&pods);
	js_buf_done(&rs);
	js_buf_done(&page);
	js_timeline_free(t);
	json_decref(fx);
}

static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(cases); i++)
		run_case(&cases[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
