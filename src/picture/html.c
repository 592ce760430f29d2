/*
 * html.c - a run's picture as one static page (html.h): header, phases
 * and goodput, restarts, the timeline as inline SVG, the failures and the
 * events as tables.
 */
#include "picture/html.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/parse.h"
#include "core/phase.h"

/* Geometry of the timeline, in SVG user units (pixels at 100 %). The
 * label column fits a 63-character hostname cut to LABEL_CHARS; the right
 * margin holds a failure's "exit 137 (Error)" label. */
#define SVG_W 1160
#define LABEL_W 250
#define RIGHT_W 100
#define TOP_H 44
#define ROW_H 20
#define BAR_H 12
#define TAIL_H 3
#define BOTTOM_H 8
#define LABEL_CHARS 34
/* At most this many ticks on the time axis. */
#define MAX_TICKS 10

/* An output under construction: the first error sticks and later appends
 * are skipped, so the writers below need no error path of their own. */
struct w {
	struct js_buf *b;
	int err;
};

JS_PRINTF(2, 3) static void out(struct w *w, const char *fmt, ...)
{
	if (w->err)
		return;
	va_list ap;
	va_start(ap, fmt);
	w->err = js_buf_vprintf(w->b, fmt, ap);
	va_end(ap);
}

int js_html_escape(struct js_buf *b, const char *s)
{
	for (const char *p = s ? s : ""; *p; p++) {
		const char *e = NULL;
		switch (*p) {
		case '&': e = "&amp;"; break;
		case '<': e = "&lt;"; break;
		case '>': e = "&gt;"; break;
		case '"': e = "&quot;"; break;
		case '\'': e = "&#39;"; break;
		default: break;
		}
		/* Control characters other than tab and newline are not
		 * allowed in HTML text; they carry nothing a reader needs. */
		if (!e && (unsigned char)*p < 0x20 && *p != '\t' && *p != '\n')
			continue;
		int r = e ? js_buf_puts(b, e) : js_buf_add(b, p, 1);
		if (r < 0)
			return r;
	}
	return 0;
}

static void esc(struct w *w, const char *s)
{
	if (!w->err)
		w->err = js_html_escape(w->b, s);
}

/* ---- rows ---- */

/* A pod with the keys it is sorted and grouped by. */
struct key {
	size_t rpos;            /* its ReplicatedJob's place in the spec */
	const struct js_timeline_pod *p;
};

static size_t rjob_pos(const struct js_timeline *t, const char *rjob)
{
	for (size_t i = 0; i < t->n_rjobs; i++) {
		if (strcmp(t->rjobs[i], rjob) == 0)
			return i;
	}
	return t->n_rjobs;
}

static int cmp_i64(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

/* The order of rows, coarsest first: ReplicatedJob (spec order), Job, pod
 * position; within a position, its pods by creation. */
static int cmp_key(const void *va, const void *vb)
{
	const struct key *a = va, *b = vb;
	int c = cmp_i64((int64_t)a->rpos, (int64_t)b->rpos);
	if (!c)
		c = strcmp(a->p->rjob, b->p->rjob);
	if (!c)
		c = cmp_i64(a->p->job_index, b->p->job_index);
	if (!c)
		c = strcmp(a->p->job, b->p->job);
	if (!c)
		c = cmp_i64(a->p->index, b->p->index);
	if (!c && a->p->index < 0)
		c = strcmp(a->p->name, b->p->name);
	if (!c)
		c = cmp_i64(a->p->created_ms, b->p->created_ms);
	return c ? c : strcmp(a->p->name, b->p->name);
}

/* Whether two (sorted) pods share a row of kind `k`. */
static bool same_row(const struct key *a, const struct key *b, enum js_html_rows k)
{
	if (a->rpos != b->rpos || strcmp(a->p->rjob, b->p->rjob) != 0)
		return false;
	if (k == JS_HTML_ROWS_RJOB)
		return true;
	if (a->p->job_index != b->p->job_index || strcmp(a->p->job, b->p->job) != 0)
		return false;
	if (k == JS_HTML_ROWS_JOB)
		return true;
	return a->p->index == b->p->index && (a->p->index >= 0 || strcmp(a->p->name, b->p->name) == 0);
}

static size_t count_rows(const struct key *k, size_t n, enum js_html_rows kind)
{
	size_t rows = 0;
	for (size_t i = 0; i < n; i++)
		rows += i == 0 || !same_row(&k[i - 1], &k[i], kind);
	return rows;
}

static struct key *sorted_keys(const struct js_timeline *t)
{
	struct key *k = js_xcalloc(t->n_pods + 1, sizeof(*k));
	for (size_t i = 0; i < t->n_pods; i++)
		k[i] = (struct key){.rpos = rjob_pos(t, t->pods[i].rjob), .p = &t->pods[i]};
	qsort(k, t->n_pods, sizeof(*k), cmp_key);
	return k;
}

static enum js_html_rows choose_rows(const struct key *k, size_t n)
{
	if (count_rows(k, n, JS_HTML_ROWS_POD) <= JS_HTML_MAX_ROWS)
		return JS_HTML_ROWS_POD;
	if (count_rows(k, n, JS_HTML_ROWS_JOB) <= JS_HTML_MAX_ROWS)
		return JS_HTML_ROWS_JOB;
	return JS_HTML_ROWS_RJOB;
}

enum js_html_rows js_html_rows(const struct js_timeline *t)
{
	struct key *k = sorted_keys(t);
	enum js_html_rows r = choose_rows(k, t->n_pods);
	free(k);
	return r;
}

/* ---- time ---- */

struct geo {
	int64_t t0, t1; /* the run's start and end (t1 > t0) */
	double x0, w;   /* the chart's left edge and width */
};

static double xof(const struct geo *g, int64_t t)
{
	if (t < g->t0)
		t = g->t0;
	if (t > g->t1)
		t = g->t1;
	return g->x0 + (double)(t - g->t0) * g->w / (double)(g->t1 - g->t0);
}

static double rel_s(const struct js_timeline *t, int64_t ms)
{
	return (double)(ms - t->start_ms) / 1000.0;
}

/* ---- the timeline's marks ---- */

/* The kinds of span a row shows, in drawing order: the thin outcome tails
 * under the bars. */
enum span {
	SPAN_SUCCEEDED, SPAN_FAILED, SPAN_UNRECORDED, SPAN_PENDING, SPAN_RUNNING, SPAN_TERMINATING, SPAN__COUNT
};
static const char *const span_names[SPAN__COUNT] = {"succeeded", "failed", "unrecorded", "pending", "running",
						    "terminating"};

struct iv {
	int64_t a, b;
};

static int cmp_iv(const void *va, const void *vb)
{
	const struct iv *a = va, *b = vb;
	int c = cmp_i64(a->a, b->a);
	return c ? c : cmp_i64(a->b, b->b);
}

/* The first restart at or after `ms`, or the run's end: how long a
 * finished pod's outcome stood before the JobSet moved on (a restart is
 * often decided in the millisecond the failure is seen). A pod of the same
 * row created later draws over the rest: tails lie under the bars. */
static int64_t next_boundary(const struct js_timeline *t, int64_t ms)
{
	for (size_t i = 0; i < t->n_restarts; i++) {
		if (t->restarts_at[i].at_ms >= ms)
			return t->restarts_at[i].at_ms;
	}
	return t->end_ms;
}

/* When the pod stopped being what its bars show: its finish, else the
 * run's end (it was still there). A pod the API no longer holds was not
 * there at the end: without a recorded finish it lasted until its
 * deletion, else until the restart after its creation (that deleted it). */
static int64_t life_end(const struct js_timeline *t, const struct js_timeline_pod *p)
{
	if (p->finished_ms)
		return p->finished_ms;
	if (p->source == JS_TIMELINE_SEEN)
		return t->end_ms;
	return p->deleted_ms ? p->deleted_ms : next_boundary(t, p->created_ms + 1);
}

/* A pod the API no longer holds: known from its events without a start,
 * or not at all (its attempt's span). Its phases are not recorded, so it
 * gets one "unrecorded" span from its creation to its finish, else its
 * deletion, else the next restart: never a pending or running bar that
 * would claim what nobody saw. */
static bool unrecorded(const struct js_timeline_pod *p)
{
	return p->source == JS_TIMELINE_NO_RECORD || (p->source == JS_TIMELINE_FROM_EVENTS && !p->started_ms);
}

/* The span of kind `s` of pod `p`, if it has one. */
static bool pod_span(const struct js_timeline *t, const struct js_timeline_pod *p, enum span s, struct iv *ret)
{
	if (unrecorded(p) && s != SPAN_SUCCEEDED && s != SPAN_FAILED) {
		int64_t b = life_end(t, p);
		*ret = (struct iv){p->created_ms, b};
		return s == SPAN_UNRECORDED && p->created_ms != 0 && b > p->created_ms;
	}
	int64_t end = life_end(t, p);
	int64_t run_end = p->deleted_ms && p->deleted_ms < end ? p->deleted_ms : end;
	switch (s) {
	case SPAN_PENDING:
		*ret = (struct iv){p->created_ms, p->started_ms ? p->started_ms : run_end};
		return p->created_ms != 0;
	case SPAN_RUNNING:
		*ret = (struct iv){p->started_ms, run_end};
		return p->started_ms != 0;
	case SPAN_TERMINATING:
		*ret = (struct iv){p->deleted_ms, end};
		return p->deleted_ms != 0 && p->deleted_ms < end;
	case SPAN_SUCCEEDED:
	case SPAN_FAILED:
		*ret = (struct iv){p->finished_ms, next_boundary(t, p->finished_ms)};
		return p->finished_ms != 0 && p->end == (s == SPAN_SUCCEEDED ? JS_TIMELINE_SUCCEEDED : JS_TIMELINE_FAILED);
	case SPAN_UNRECORDED:
		return false;
	default:
		return false;
	}
}

/* Draw the spans of kind `s` of the pods k[0..n) as few rectangles as
 * possible: overlapping spans of a row are merged (a row of 1,000 pods of
 * one gang is one bar per phase, not 1,000). */
static void draw_spans(struct w *w, const struct js_timeline *t, const struct geo *g, const struct key *k, size_t n,
		       enum span s, double y, const char *label)
{
	struct iv *ivs = js_xcalloc(n + 1, sizeof(*ivs));
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		m += pod_span(t, k[i].p, s, &ivs[m]);
	qsort(ivs, m, sizeof(*ivs), cmp_iv);
	bool tail = s == SPAN_SUCCEEDED || s == SPAN_FAILED;
	for (size_t i = 0; i < m;) {
		struct iv cur = ivs[i++];
		while (i < m && ivs[i].a <= cur.b) {
			if (ivs[i].b > cur.b)
				cur.b = ivs[i].b;
			i++;
		}
		double x = xof(g, cur.a), x2 = xof(g, cur.b);
		out(w, "<rect class=\"span %s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\"><title>", span_names[s],
		    x, tail ? y + BAR_H - TAIL_H : y, x2 - x < 1.0 ? 1.0 : x2 - x, tail ? TAIL_H : BAR_H);
		esc(w, label);
		out(w, ": %s from +%.2f s to +%.2f s</title></rect>",
		    s == SPAN_UNRECORDED ? "phase not recorded (the pod is gone)" : span_names[s], rel_s(t, cur.a),
		    rel_s(t, cur.b));
	}
	free(ivs);
}

/* Whether a failure's exit code is known: always for a pod seen, for one
 * known from events only when its event said it. */
static bool exit_known(const struct js_timeline_pod *p)
{
	return p->source == JS_TIMELINE_SEEN || p->has_exit_code;
}

/* " (attempt N)", or the words for an attempt nobody recorded. */
static void attempt_words(struct w *w, int32_t attempt)
{
	if (attempt >= 0)
		out(w, " (attempt %d)", attempt);
	else
		out(w, " (attempt not recorded)");
}

/* The failure marks of a row: a red diamond per failed pod, at its finish,
 * titled with the pod, its exit code and reason; a label beside the first
 * (with the count, in an aggregated row). */
static void draw_failures(struct w *w, const struct js_timeline *t, const struct geo *g, const struct key *k, size_t n,
			  double y, bool aggregated)
{
	size_t failed = 0;
	for (size_t i = 0; i < n; i++)
		failed += k[i].p->end == JS_TIMELINE_FAILED;
	size_t seen = 0;
	double cy = y + BAR_H / 2.0;
	for (size_t i = 0; i < n; i++) {
		const struct js_timeline_pod *p = k[i].p;
		if (p->end != JS_TIMELINE_FAILED)
			continue;
		double x = xof(g, p->finished_ms ? p->finished_ms : life_end(t, p));
		out(w, "<g class=\"fail-mark\" data-pod=\"");
		esc(w, p->name);
		if (exit_known(p))
			out(w, "\" data-exit-code=\"%d", p->exit_code);
		else
			out(w, "\" data-exit-code=\"");
		out(w, "\" data-source=\"%s\"><polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\"/><title>pod ",
		    js_timeline_source_name(p->source), x, cy - 7, x + 7, cy, x, cy + 7, x - 7, cy);
		esc(w, p->name);
		out(w, " failed %s +%.2f s", exit_known(p) ? "at" : "by", rel_s(t, p->finished_ms ? p->finished_ms : t->end_ms));
		attempt_words(w, p->attempt);
		out(w, ": ");
		esc(w, p->detail[0] ? p->detail : p->reason);
		if (p->source == JS_TIMELINE_FROM_EVENTS)
			out(w, " (from events: the pod is gone%s)", exit_known(p) ? "" : "; its exit code is not recorded");
		out(w, "</title></g>");
		/* One label per pod row; an aggregated row counts them. */
		if (seen++ == 0 || !aggregated) {
			out(w, "<text class=\"fail-label\" x=\"%.1f\" y=\"%.1f\">", x + 9, cy + 4);
			if (aggregated && failed > 1)
				out(w, "%zu failed, first: ", failed);
			if (exit_known(p))
				out(w, "exit %d", p->exit_code);
			else
				out(w, "failed");
			if (p->reason[0]) {
				out(w, " (");
				esc(w, p->reason);
				out(w, ")");
			}
			out(w, "</text>");
		}
	}
}

/* A label cut to fit the label column (the whole one is in the row's
 * title). */
static void short_label(struct w *w, const char *s)
{
	size_t n = strlen(s);
	if (n <= LABEL_CHARS) {
		esc(w, s);
		return;
	}
	char cut[LABEL_CHARS];
	size_t k = LABEL_CHARS - 1;
	/* Not inside a UTF-8 sequence: back to the start of the character. */
	while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80)
		k--;
	memcpy(cut, s, k);
	cut[k] = '\0';
	esc(w, cut);
	out(w, "\xe2\x80\xa6"); /* "…" */
}

/* Counts of a row or the page. Pods with no record are not pods anybody
 * saw: they are counted apart (no_record), not in pods or by_end. */
struct tally {
	size_t pods, jobs, by_end[JS_TIMELINE_END__COUNT];
	size_t from_events, no_record;
};

static void tally(const struct key *k, size_t n, struct tally *ret)
{
	*ret = (struct tally){0};
	for (size_t i = 0; i < n; i++) {
		ret->jobs += i == 0 || !same_row(&k[i - 1], &k[i], JS_HTML_ROWS_JOB);
		if (k[i].p->source == JS_TIMELINE_NO_RECORD) {
			ret->no_record++;
			continue;
		}
		ret->pods++;
		ret->from_events += k[i].p->source == JS_TIMELINE_FROM_EVENTS;
		if (k[i].p->end >= 0 && k[i].p->end < JS_TIMELINE_END__COUNT)
			ret->by_end[k[i].p->end]++;
	}
}

/* ", N from events only, M unknown ends, K attempts with no record", as
 * far as there are any. */
static void tally_extra(struct w *w, const struct tally *c)
{
	if (c->by_end[JS_TIMELINE_END_UNKNOWN])
		out(w, ", %zu ended unrecorded", c->by_end[JS_TIMELINE_END_UNKNOWN]);
	if (c->from_events)
		out(w, ", %zu known only from events", c->from_events);
	if (c->no_record)
		out(w, ", %zu with no record left", c->no_record);
}

/* One row: its label, spans and failure marks, in a group that names it. */
static void draw_row(struct w *w, const struct js_timeline *t, const struct geo *g, const struct key *k, size_t n,
		     enum js_html_rows kind, double y)
{
	static const char *const kinds[] = {"pod", "job", "rjob"};
	const struct js_timeline_pod *p = k[0].p;
	struct tally c;
	tally(k, n, &c);
	/* A NonIndexed pod's row is named by its pod; a row whose first pod
	 * has no record (no name) by its Job. */
	char *label = kind == JS_HTML_ROWS_RJOB ? js_buf_format("%s: %zu Jobs, %zu pods", p->rjob, c.jobs, c.pods)
		      : kind == JS_HTML_ROWS_JOB ? js_buf_format("%s: %zu pods", p->job, c.pods)
		      : p->index >= 0           ? js_buf_format("%s-%d", p->job, p->index)
		      : p->name[0]              ? js_buf_format("%s", p->name)
						: js_buf_format("%s", p->job);
	out(w, "<g class=\"row\" data-kind=\"%s\" data-rjob=\"", kinds[kind]);
	esc(w, p->rjob);
	out(w, "\" data-job=\"");
	esc(w, kind == JS_HTML_ROWS_RJOB ? "" : p->job);
	out(w, "\" data-pods=\"%zu\" data-failed=\"%zu\" data-from-events=\"%zu\" data-no-record=\"%zu\"><title>",
	    c.pods, c.by_end[JS_TIMELINE_FAILED], c.from_events, c.no_record);
	esc(w, label);
	out(w, ": %zu pod%s, %zu succeeded, %zu failed, %zu stopped, %zu unfinished", c.pods, c.pods == 1 ? "" : "s",
	    c.by_end[JS_TIMELINE_SUCCEEDED], c.by_end[JS_TIMELINE_FAILED], c.by_end[JS_TIMELINE_STOPPED],
	    c.by_end[JS_TIMELINE_UNFINISHED]);
	tally_extra(w, &c);
	out(w, "</title>");
	out(w, "<text class=\"row-label\" x=\"%d\" y=\"%.1f\">", 8 + (kind == JS_HTML_ROWS_POD ? 12 : 0), y + BAR_H - 2);
	short_label(w, label);
	out(w, "</text>");
	for (int s = 0; s < SPAN__COUNT; s++)
		draw_spans(w, t, g, k, n, (enum span)s, y, label);
	draw_failures(w, t, g, k, n, y, kind != JS_HTML_ROWS_POD);
	out(w, "</g>\n");
	free(label);
}

/* A step for the time axis: 1, 2 or 5 times a power of ten milliseconds,
 * the smallest giving at most MAX_TICKS ticks. */
static int64_t tick_step(int64_t span)
{
	static const int64_t m[] = {1, 2, 5};
	for (int64_t p = 1;; p *= 10) {
		for (size_t i = 0; i < JS_ARRAY_SIZE(m); i++) {
			if (span / (m[i] * p) <= MAX_TICKS || p > INT64_MAX / 100)
				return m[i] * p;
		}
	}
}

static void draw_axis(struct w *w, const struct geo *g, double bottom)
{
	int64_t step = tick_step(g->t1 - g->t0);
	int decimals = step < 100 ? 2 : step < 1000 ? 1 : 0;
	out(w, "<g class=\"axis\" aria-hidden=\"true\">");
	for (int64_t v = 0; v <= g->t1 - g->t0; v += step) {
		double x = xof(g, g->t0 + v);
		out(w, "<line x1=\"%.1f\" y1=\"18\" x2=\"%.1f\" y2=\"%.1f\"/><text x=\"%.1f\" y=\"13\">+%.*f s</text>", x, x,
		    bottom, x, decimals, (double)v / 1000.0);
	}
	out(w, "</g>\n");
}

/* A vertical marker where each whole-JobSet restart began. */
static void draw_attempts(struct w *w, const struct js_timeline *t, const struct geo *g, double bottom)
{
	if (t->restarts_dropped)
		out(w, "<text class=\"attempt-label\" x=\"%.1f\" y=\"32\">attempts 0 to %zu</text>\n", g->x0 + 3,
		    t->restarts_dropped);
	else
		out(w, "<text class=\"attempt-label\" x=\"%.1f\" y=\"32\">attempt 0</text>\n", g->x0 + 3);
	for (size_t i = 0; i < t->n_restarts; i++) {
		const struct js_timeline_restart *r = &t->restarts_at[i];
		double x = xof(g, r->at_ms);
		out(w, "<g class=\"attempt\" data-attempt=\"%d\"><title>attempt %d began at +%.2f s: ", r->attempt, r->attempt,
		    rel_s(t, r->at_ms));
		esc(w, r->reason[0] ? r->reason : "reason not recorded");
		if (r->message[0]) {
			out(w, ": ");
			esc(w, r->message);
		}
		out(w, "</title><line x1=\"%.1f\" y1=\"20\" x2=\"%.1f\" y2=\"%.1f\"/><text class=\"attempt-label\" x=\"%.1f\" "
		       "y=\"32\">attempt %d</text></g>\n",
		    x, x, bottom, x + 3, r->attempt);
	}
}

static void draw_timeline(struct w *w, const struct js_timeline *t, const struct key *k, enum js_html_rows kind)
{
	/* Rows, with a heading row per ReplicatedJob unless rows are
	 * ReplicatedJobs. */
	size_t rows = count_rows(k, t->n_pods, kind);
	size_t heads = kind == JS_HTML_ROWS_RJOB ? 0 : count_rows(k, t->n_pods, JS_HTML_ROWS_RJOB);
	double bottom = TOP_H + (double)(rows + heads) * ROW_H;
	double height = bottom + BOTTOM_H;
	struct geo g = {.t0 = t->start_ms, .t1 = t->end_ms > t->start_ms ? t->end_ms : t->start_ms + 1,
			.x0 = LABEL_W, .w = SVG_W - LABEL_W - RIGHT_W};
	size_t failed = 0, known = 0;
	for (size_t i = 0; i < t->n_pods; i++) {
		failed += t->pods[i].end == JS_TIMELINE_FAILED;
		known += t->pods[i].source != JS_TIMELINE_NO_RECORD;
	}
	static const char *const per[] = {"pod", "Job", "ReplicatedJob"};
	out(w, "<svg class=\"timeline\" role=\"img\" aria-labelledby=\"tl-title tl-desc\" viewBox=\"0 0 %d %.0f\" width=\"%d\" "
	       "height=\"%.0f\"><title id=\"tl-title\">Timeline of JobSet ",
	    SVG_W, height, SVG_W, height);
	esc(w, t->name);
	out(w, "</title><desc id=\"tl-desc\">%zu pods in %zu rows, one per %s; %zu failed; %zu restart%s, each marked "
	       "where its attempt began. The tables below say the same in text.</desc>\n",
	    known, rows, per[kind], failed, t->n_restarts, t->n_restarts == 1 ? "" : "s");
	/* Every other attempt shaded, under everything: where one attempt ends
	 * and the next begins reads at a glance. */
	for (size_t i = 0; i < t->n_restarts; i += 2) {
		double x = xof(&g, t->restarts_at[i].at_ms);
		double x2 = xof(&g, i + 1 < t->n_restarts ? t->restarts_at[i + 1].at_ms : t->end_ms);
		out(w, "<rect class=\"attempt-band\" aria-hidden=\"true\" x=\"%.1f\" y=\"20\" width=\"%.1f\" height=\"%.1f\"/>\n",
		    x, x2 - x, bottom - 20);
	}
	draw_axis(w, &g, bottom);
	double y = TOP_H + (ROW_H - BAR_H) / 2.0;
	bool open_rjob = false, open_job = false;
	for (size_t i = 0; i < t->n_pods;) {
		size_t n = 1;
		while (i + n < t->n_pods && same_row(&k[i], &k[i + n], kind))
			n++;
		const struct js_timeline_pod *p = k[i].p;
		bool new_rjob = i == 0 || !same_row(&k[i - 1], &k[i], JS_HTML_ROWS_RJOB);
		bool new_job = i == 0 || !same_row(&k[i - 1], &k[i], JS_HTML_ROWS_JOB);
		if (kind == JS_HTML_ROWS_POD && new_job && open_job) {
			out(w, "</g>\n");
			open_job = false;
		}
		if (kind != JS_HTML_ROWS_RJOB && new_rjob) {
			if (open_rjob)
				out(w, "</g>\n");
			out(w, "<g class=\"rjob\" data-rjob=\"");
			esc(w, p->rjob);
			out(w, "\"><text class=\"rjob-label\" x=\"8\" y=\"%.1f\">ReplicatedJob ", y + BAR_H - 2);
			esc(w, p->rjob);
			out(w, "</text>\n");
			open_rjob = true;
			y += ROW_H;
		}
		if (kind == JS_HTML_ROWS_POD && new_job) {
			out(w, "<g class=\"job\" data-job=\"");
			esc(w, p->job);
			out(w, "\"><line class=\"job-sep\" x1=\"8\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", y - 3, SVG_W - 8, y - 3);
			open_job = true;
		}
		draw_row(w, t, &g, &k[i], n, kind, y);
		y += ROW_H;
		i += n;
	}
	if (open_job)
		out(w, "</g>\n");
	if (open_rjob)
		out(w, "</g>\n");
	draw_attempts(w, t, &g, bottom);
	out(w, "</svg>\n");
}

/* ---- the page ---- */

static const char style[] =
	"body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d1d1f;background:#fff}"
	"h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}"
	"table{border-collapse:collapse}th,td{text-align:left;padding:2px 10px 2px 0;vertical-align:top}"
	"th{border-bottom:1px solid #999}td.num{text-align:right;font-variant-numeric:tabular-nums}"
	".events td{font-size:13px;overflow-wrap:anywhere}.events tr.Warning td{color:#a1221d}"
	".result{padding:1px 8px;border-radius:4px;color:#fff;background:#555}"
	".result.Completed{background:#2f7d4a}.result.Failed,.result.Stalled{background:#b3261e}"
	".result.Interrupted{background:#8a5a00}"
	".legend span{display:inline-block;margin-right:14px}"
	".sw{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:baseline}"
	".sw.pending,.span.pending{fill:#d9b64c;background:#d9b64c}"
	".sw.running,.span.running{fill:#3b7dd8;background:#3b7dd8}"
	".sw.terminating,.span.terminating{fill:#e8852a;background:#e8852a}"
	".sw.succeeded,.span.succeeded{fill:#2f9e55;background:#2f9e55}"
	".sw.failed,.span.failed{fill:#d33a30;background:#d33a30}"
	".span.unrecorded{fill:#c9c9c9;fill-opacity:.6;stroke:#777;stroke-width:1;stroke-dasharray:3 2}"
	".sw.unrecorded{background:repeating-linear-gradient(45deg,#999 0 2px,#e4e4e4 2px 5px)}"
	".notes{background:#fff8e1;border-left:4px solid #d9b64c;padding:4px 12px}"
	".sw.attempt{background:repeating-linear-gradient(90deg,#444 0 3px,transparent 3px 5px)}"
	".timeline{max-width:100%;height:auto;font-size:12px}"
	".timeline text{fill:#1d1d1f}.axis line{stroke:#e3e3e3}.axis text{fill:#666;text-anchor:middle}"
	".rjob-label{font-weight:600}.job-sep{stroke:#d0d0d0}"
	".attempt-band{fill:#eef1f7}.attempt line{stroke:#444;stroke-width:1.5;stroke-dasharray:4 3}.attempt-label{font-weight:600;fill:#444}"
	".fail-mark polygon{fill:#d33a30;stroke:#fff;stroke-width:1}"
	".timeline .fail-label{fill:#a1221d;font-weight:600;paint-order:stroke;stroke:#fff;stroke-width:3px}"
	"figure{margin:0}"
	".phasebar{display:flex;width:600px;max-width:100%;height:14px;margin:6px 0;background:#eee}"
	".phasebar span{display:block;height:100%}"
	".ph-pending{background:#d9b64c}.ph-running{background:#3b7dd8}.ph-restarting{background:#7b4bb7}"
	".ph-suspended{background:#999}";

static const char *generator(const struct js_timeline *t)
{
	return t->origin == JS_TIMELINE_CLUSTER ? "kubectl jobset report" : "jobset run";
}

static void stamp(int64_t ms, char *buf, size_t n)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	size_t k = strftime(buf, n, "%H:%M:%S", &tm);
	if (k + 5 < n) {
		int frac = (int)(ms % 1000);
		buf[k] = '.';
		buf[k + 1] = (char)('0' + frac / 100);
		buf[k + 2] = (char)('0' + frac / 10 % 10);
		buf[k + 3] = (char)('0' + frac % 10);
		buf[k + 4] = '\0';
	}
}

static void head(struct w *w, const struct js_timeline *t, const struct tally *c)
{
	out(w, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
	       "<meta name=\"generator\" content=\"%s\"><title>JobSet ", generator(t));
	esc(w, t->name);
	out(w, ": ");
	esc(w, t->result[0] ? t->result : "running");
	out(w, "</title><style>%s</style></head>\n<body>\n<header><h1>JobSet ", style);
	esc(w, t->name);
	out(w, " <span class=\"result ");
	esc(w, t->result);
	out(w, "\">");
	esc(w, t->result[0] ? t->result : "running");
	out(w, "</span></h1>\n<p>namespace ");
	esc(w, t->namespace_);
	out(w, "; %.1f s; restarts %d; %zu pods: %zu succeeded, %zu failed, %zu stopped, %zu unfinished",
	    (double)(t->end_ms - t->start_ms) / 1000.0, t->restarts, c->pods, c->by_end[JS_TIMELINE_SUCCEEDED],
	    c->by_end[JS_TIMELINE_FAILED], c->by_end[JS_TIMELINE_STOPPED], c->by_end[JS_TIMELINE_UNFINISHED]);
	tally_extra(w, c);
	out(w, ".</p></header>\n");
}

/* What the page cannot show (a cluster's lost history), before anything
 * is read as complete. */
static void notes(struct w *w, const struct js_timeline *t)
{
	if (!t->n_notes)
		return;
	out(w, "<section class=\"notes\" aria-labelledby=\"h-notes\"><h2 id=\"h-notes\">What this page cannot show</h2>\n<ul>");
	for (size_t i = 0; i < t->n_notes; i++) {
		out(w, "<li>");
		esc(w, t->notes[i]);
		out(w, "</li>");
	}
	out(w, "</ul></section>\n");
}

/* core/phase's numbers, as the run's summary prints them. */
static void phases(struct w *w, const struct js_timeline *t)
{
	static const struct {
		enum js_phase ph;
		const char *cls;
	} rows[] = {{JS_PHASE_PENDING, "ph-pending"}, {JS_PHASE_RUNNING, "ph-running"},
		    {JS_PHASE_RESTARTING, "ph-restarting"}, {JS_PHASE_SUSPENDED, "ph-suspended"}};
	const struct js_phase_summary *s = &t->phases.sum;
	out(w, "<section aria-labelledby=\"h-phases\"><h2 id=\"h-phases\">Phases and goodput</h2>\n");
	if (!t->phases.known) {
		/* No numbers made up: the body says why it has none. */
		out(w, "<p class=\"phases-unknown\">");
		esc(w, t->phases_note && t->phases_note[0] ? t->phases_note : "Not recorded.");
		out(w, "</p>\n</section>\n");
		return;
	}
	out(w, "<div class=\"phasebar\" aria-hidden=\"true\">");
	for (size_t i = 0; i < JS_ARRAY_SIZE(rows); i++) {
		double pct = s->wall_seconds > 0 ? 100.0 * s->seconds[rows[i].ph] / s->wall_seconds : 0;
		out(w, "<span class=\"%s\" style=\"width:%.1f%%\"></span>", rows[i].cls, pct > 100 ? 100 : pct);
	}
	out(w, "</div>\n<table class=\"phases\"><tr><th>phase</th><th>seconds</th></tr>");
	for (size_t i = 0; i < JS_ARRAY_SIZE(rows); i++)
		out(w, "<tr><td><i class=\"sw %s\"></i>%s</td><td class=\"num\">%.1f</td></tr>", rows[i].cls,
		    js_phase_name(rows[i].ph), s->seconds[rows[i].ph]);
	out(w, "<tr><td>wall (first start to end)</td><td class=\"num\">%.1f</td></tr>"
	       "<tr><td><strong>goodput</strong> (running / wall)</td><td class=\"num\"><strong>%.2f</strong></td></tr></table>\n",
	    s->wall_seconds, s->goodput);
	size_t n = t->phases.n_readies < JS_TIMELINE_MAX_READIES ? t->phases.n_readies : JS_TIMELINE_MAX_READIES;
	if (n) {
		out(w, "<p>Time to all ready:");
		for (size_t i = 0; i < n; i++)
			out(w, "%s %s %.1f s", i ? "," : "", js_phase_trigger_name(t->phases.readies[i].trigger),
			    t->phases.readies[i].seconds);
		out(w, "%s.</p>\n", t->phases.n_readies > n ? ", ..." : "");
	}
	out(w, "</section>\n");
}

/* The nodes the restart that began `attempt` keeps off (locally GPUs,
 * named gpu-<id>): its NodeQuarantined events, one line each under the
 * attempt. They are matched by the attempt core/avoid.c writes into the
 * message ("node N is kept off attempts A to B: pod P failed there
 * (exit code 137)"), not by time: on a cluster the restart's own event and
 * these are written apart, and either may have expired. Both bodies record
 * the events, so this one place serves both pages. */
static void quarantined(struct w *w, const struct js_timeline *t, int32_t attempt)
{
	static const char kept[] = " is kept off attempts ";
	bool any = false;
	for (size_t i = 0; i < t->n_events; i++) {
		const struct js_timeline_event *e = &t->events[i];
		const char *at = strcmp(e->reason, "NodeQuarantined") == 0 ? strstr(e->message, kept) : NULL;
		const char *num = at ? at + strlen(kept) : NULL;
		int64_t a;
		if (!num || js_parse_i64_in(num, strspn(num, "0123456789"), 0, INT32_MAX, &a) != 0 || a != attempt)
			continue;
		if (!any)
			out(w, "<ul class=\"quarantine\">");
		out(w, "<li>Quarantined: ");
		esc(w, e->message);
		out(w, "</li>");
		any = true;
	}
	if (any)
		out(w, "</ul>");
}

static void restarts(struct w *w, const struct js_timeline *t)
{
	out(w, "<section aria-labelledby=\"h-restarts\"><h2 id=\"h-restarts\">Restarts</h2>\n");
	if (t->restarts_dropped == 1)
		out(w, "<p class=\"dropped\">The first restart (attempt 1) is left out of the picture and this list: they "
		       "keep the latest %d.</p>\n",
		    JS_TIMELINE_MAX_RESTARTS);
	else if (t->restarts_dropped)
		out(w, "<p class=\"dropped\">The first %zu restarts (attempts 1 to %zu) are left out of the picture and this "
		       "list: they keep the latest %d.</p>\n",
		    t->restarts_dropped, t->restarts_dropped, JS_TIMELINE_MAX_RESTARTS);
	if (!t->n_restarts && !t->restarts_dropped)
		out(w, "<p>None: the whole run was attempt 0.</p>\n");
	else
		out(w, "<ol class=\"restarts\">\n");
	for (size_t i = 0; i < t->n_restarts; i++) {
		const struct js_timeline_restart *r = &t->restarts_at[i];
		out(w, "<li>Attempt %d began at +%.2f s: <strong>", r->attempt, rel_s(t, r->at_ms));
		esc(w, r->reason[0] ? r->reason : "reason not recorded");
		out(w, "</strong>");
		if (r->message[0]) {
			out(w, ": ");
			esc(w, r->message);
		}
		quarantined(w, t, r->attempt);
		out(w, "</li>\n");
	}
	if (t->n_restarts)
		out(w, "</ol>\n");
	if ((size_t)t->restarts > t->n_restarts + t->restarts_dropped)
		out(w, "<p>%zu more restarts are counted but not drawn.</p>\n",
		    (size_t)t->restarts - t->n_restarts - t->restarts_dropped);
	out(w, "</section>\n");
}

static void legend(struct w *w, enum js_html_rows kind, size_t n_pods, bool any_unrecorded)
{
	out(w, "<section aria-labelledby=\"h-timeline\"><h2 id=\"h-timeline\">Timeline</h2>\n<p class=\"legend\">");
	for (int s = SPAN_PENDING; s < SPAN__COUNT; s++)
		out(w, "<span><i class=\"sw %s\"></i>%s</span>", span_names[s], span_names[s]);
	if (any_unrecorded)
		out(w, "<span><i class=\"sw unrecorded\"></i>phase not recorded (the pod is gone: known from events, "
		       "or only its attempt)</span>");
	out(w, "<span><i class=\"sw succeeded\"></i>succeeded</span><span><i class=\"sw failed\"></i>failed (&#9670; with "
	       "its exit code)</span><span><i class=\"sw attempt\"></i>a restart: a new attempt begins</span></p>\n");
	if (kind == JS_HTML_ROWS_POD)
		out(w, "<p>One row per pod (its pods of every attempt), grouped by ReplicatedJob and Job.</p>\n");
	else
		out(w, "<p>%zu pods are more than %d rows: one row per %s, with counts; phases show when any of its pods "
		       "was in them.</p>\n",
		    n_pods, JS_HTML_MAX_ROWS, kind == JS_HTML_ROWS_JOB ? "Job" : "ReplicatedJob");
}

static void failures(struct w *w, const struct js_timeline *t, const struct key *k)
{
	out(w, "<section aria-labelledby=\"h-failures\"><h2 id=\"h-failures\">Failures</h2>\n");
	size_t n = 0;
	for (size_t i = 0; i < t->n_pods; i++) {
		const struct js_timeline_pod *p = k[i].p;
		if (p->end != JS_TIMELINE_FAILED)
			continue;
		if (n++ == 0)
			out(w, "<table class=\"failures\"><tr><th>pod</th><th>attempt</th><th>at</th><th>exit code</th>"
			       "<th>reason</th><th>containers</th></tr>\n");
		if (n > JS_HTML_MAX_FAILURES)
			continue;
		out(w, "<tr><td>");
		esc(w, p->name);
		if (p->attempt >= 0)
			out(w, "</td><td class=\"num\">%d", p->attempt);
		else
			out(w, "</td><td>not recorded");
		out(w, "</td><td class=\"num\">%s+%.2f s</td>", exit_known(p) ? "" : "by ",
		    rel_s(t, p->finished_ms ? p->finished_ms : t->end_ms));
		if (exit_known(p))
			out(w, "<td class=\"num\">%d</td><td>", p->exit_code);
		else
			out(w, "<td>not recorded</td><td>");
		esc(w, p->reason);
		out(w, "</td><td>");
		esc(w, p->detail);
		out(w, "</td></tr>\n");
	}
	if (n)
		out(w, "</table>\n");
	else
		out(w, "<p>No pod failed.</p>\n");
	if (n > JS_HTML_MAX_FAILURES)
		out(w, "<p>... and %zu more failed pods (%s).</p>\n", n - JS_HTML_MAX_FAILURES,
		    t->origin == JS_TIMELINE_CLUSTER ? "kubectl jobset report -o json" : "events.log, jobs.json");
	out(w, "</section>\n");
}

static void events(struct w *w, const struct js_timeline *t)
{
	out(w, "<section aria-labelledby=\"h-events\"><h2 id=\"h-events\">Events</h2>\n<table class=\"events\"><tr>"
	       "<th>time (UTC)</th><th>since start</th><th>type</th><th>reason</th><th>object</th><th>message</th></tr>\n");
	for (size_t i = 0; i < t->n_events; i++) {
		const struct js_timeline_event *e = &t->events[i];
		char ts[32];
		stamp(e->time_ms, ts, sizeof(ts));
		out(w, "<tr class=\"");
		esc(w, e->type);
		out(w, "\"><td>%s</td><td class=\"num\">+%.3f s</td><td>", ts, rel_s(t, e->time_ms));
		esc(w, e->type);
		out(w, "</td><td>");
		esc(w, e->reason);
		out(w, "</td><td>");
		esc(w, e->kind);
		out(w, "/");
		esc(w, e->name);
		out(w, "</td><td>");
		esc(w, e->message);
		out(w, "</td></tr>\n");
	}
	out(w, "</table>\n");
	if (t->events_dropped)
		out(w, "<p>... and %zu more events %s.</p>\n", t->events_dropped,
		    t->origin == JS_TIMELINE_CLUSTER ? "not shown" : "in events.log");
	out(w, "</section>\n");
}

int js_html_report(const struct js_timeline *t, struct js_buf *b)
{
	struct w w = {.b = b};
	struct key *k = sorted_keys(t);
	enum js_html_rows kind = choose_rows(k, t->n_pods);
	struct tally c;
	tally(k, t->n_pods, &c);
	bool any_unrecorded = false;
	for (size_t i = 0; i < t->n_pods; i++)
		any_unrecorded = any_unrecorded || unrecorded(&t->pods[i]);
	/* The picture first: it is what the page is for; the numbers and
	 * the tables after it say the same in text. What the page cannot
	 * show comes before it, so nobody reads it as complete. */
	head(&w, t, &c);
	notes(&w, t);
	legend(&w, kind, t->n_pods, any_unrecorded);
	out(&w, "<figure>\n");
	draw_timeline(&w, t, k, kind);
	out(&w, "</figure>\n</section>\n");
	phases(&w, t);
	restarts(&w, t);
	failures(&w, t, k);
	events(&w, t);
	if (t->origin == JS_TIMELINE_CLUSTER)
		out(&w, "<footer><p>Written by <code>kubectl jobset report</code> from what the API server held at the "
			"end of the timeline: the JobSet, its Jobs, its pods and their events.</p></footer>\n</body></html>\n");
	else
		out(&w, "<footer><p>Written by <code>jobset run</code> at the end of the run. Beside this file: events.log, "
			"jobset.json (phaseSummary), jobs.json, logs/.</p></footer>\n</body></html>\n");
	free(k);
	return w.err;
}
