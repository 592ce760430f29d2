/*
 * html.h - a run's picture: report.html, one self-contained page drawn from
 * the run's record (picture/timeline.h): written at the end of every local
 * run (docs/local.md "A picture of the run") and by `kubectl jobset report
 * -o html` for a JobSet on a cluster (docs/kubectl-jobset.md). One renderer
 * for both bodies.
 *
 * The page: the outcome; core/phase's totals and goodput (the numbers the
 * run's summary prints); the restarts with their reasons; a timeline (inline
 * SVG) with a row per pod grouped by ReplicatedJob and Job, phases in colour
 * (pending, running, terminating, then succeeded or failed), a vertical
 * marker where each whole-JobSet restart began, and each failure marked with
 * its exit code and reason; then tables of the failures and of the events,
 * which say in text what the picture shows. A timeline that lost history
 * (a cluster's deleted pods and expired events) says so first, marks the
 * rows it rebuilt from events or could not rebuild ("phase not recorded"),
 * and prints why the phase totals are missing instead of numbers.
 *
 * Static and self-contained: inline CSS, no script, no font, image or
 * anything fetched. Every mark has a text alternative (an SVG <title>), the
 * SVG a title and a description. Beyond JS_HTML_MAX_ROWS pods, rows are one
 * per Job, and beyond that many Jobs one per ReplicatedJob, with counts.
 * Every string from the run (names, reasons, messages) is escaped.
 *
 * Pure: no I/O, no clock. Thread-safe.
 */
#ifndef JS_HTML_H
#define JS_HTML_H

#include "base/buf.h"
#include "base/common.h"
#include "picture/timeline.h"

/* Rows drawn one per pod at most: past this many, a row per Job (and past
 * this many Jobs, a row per ReplicatedJob), so that a picture of 1,000 pods
 * stays a picture rather than a 20,000-pixel scroll of slivers. */
#define JS_HTML_MAX_ROWS 64

/* Failures listed one per row in the failures table; the rest are counted
 * (every one is still marked in the picture and in the events table). */
#define JS_HTML_MAX_FAILURES 200

/** What one row of the timeline stands for. */
enum js_html_rows {
	JS_HTML_ROWS_POD,  /* a pod position: its pods of every attempt */
	JS_HTML_ROWS_JOB,  /* a Job: all its pods */
	JS_HTML_ROWS_RJOB, /* a ReplicatedJob: all its Jobs' pods */
};

/** The finest row kind that needs no more than JS_HTML_MAX_ROWS rows for
 * the pods of `t` (ReplicatedJob rows when even Jobs are too many). */
enum js_html_rows js_html_rows(const struct js_timeline *t);

/**
 * Append the whole page for `t` to `out`. Returns 0, or -E2BIG when it does
 * not fit under out's ceiling (what was appended stays; the caller drops
 * it).
 */
JS_WARN_UNUSED int js_html_report(const struct js_timeline *t, struct js_buf *out);

/** Append `s` escaped for HTML text and attribute values (& < > " ' as
 * entities; other control characters but tab and newline dropped).
 * Returns 0 or -E2BIG. */
JS_WARN_UNUSED int js_html_escape(struct js_buf *out, const char *s);

#endif
