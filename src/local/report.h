/*
 * report.h - the one format of a run's events (local.h's struct
 * js_local_event), as a line of text and as JSON, for events.log, terminals
 * and scripts alike. The rest of report.c (outcome events, results files,
 * the live state file) is internal to src/local (local_int.h).
 *
 * Pure formatting; thread-safe.
 */
#ifndef JS_REPORT_H
#define JS_REPORT_H

#include <jansson.h>

#include "base/buf.h"
#include "local/local.h"

/** The event as one line of text, "Warning Failed pod/x-0-0-abcde:
 * worker: exit code 1 (Error)" (no time, no newline), appended to `out`
 * (what does not fit under its ceiling is dropped). */
void js_report_event_text(const struct js_local_event *e, struct js_buf *out);

/** The event as a JSON object: {"time" (RFC 3339, milliseconds), "type",
 * "reason" (the first), "reasons" (all), "involvedObject": {"kind" (Pod,
 * Job, JobSet, ...), "name", "namespace"}, "message"}. New reference. */
json_t *js_report_event_json(const struct js_local_event *e);

#endif
