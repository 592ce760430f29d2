/*
 * watch.h - decoding a Kubernetes watch stream: newline-delimited JSON
 * events (`{"type":"ADDED","object":{...}}`) arriving in arbitrary slices.
 *
 * The framer keeps a carry-over buffer, scans only new bytes for '\n',
 * tolerates "\r\n" and blank lines, and refuses a line longer than its
 * ceiling. The decoder turns one line into an event; an ERROR event's Status
 * becomes an error code (410 -> JS_EGONE). Pure; one owner per framer.
 */
#ifndef JS_WATCH_H
#define JS_WATCH_H

#include <jansson.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/common.h"

/** Watch event types. */
enum js_watch_type {
	JS_WATCH__INVALID = -1,
	JS_WATCH_ADDED,
	JS_WATCH_MODIFIED,
	JS_WATCH_DELETED,
	JS_WATCH_BOOKMARK,
	JS_WATCH_ERROR,
	JS_WATCH__COUNT
};

/** "ADDED", ... ; NULL for an invalid value. */
const char *js_watch_type_to_string(enum js_watch_type t);
enum js_watch_type js_watch_type_from_string(const char *s);

/** Line framer. Zero-initialise, then js_watch_framer_init. */
struct js_watch_framer {
	struct js_buf carry; /* bytes of an unfinished line (only new bytes are scanned) */
};

/** Lines may be up to `max_line` bytes (0 = 64 MiB). */
void js_watch_framer_init(struct js_watch_framer *f, size_t max_line);
void js_watch_framer_done(struct js_watch_framer *f);

/** Called once per complete, non-blank line (without "\n" or "\r\n").
 * Return 0 to continue or a negative code to stop feeding. */
typedef int js_watch_line_fn(void *user, const char *line, size_t len);

/**
 * Feed `n` bytes. Calls `fn` for every line completed by them. Returns 0, the
 * first negative return of `fn`, or JS_ETOOLARGE when a line exceeds the
 * ceiling (the framer is then unusable until js_watch_framer_done).
 */
JS_WARN_UNUSED int js_watch_framer_feed(struct js_watch_framer *f, const char *p, size_t n, js_watch_line_fn *fn,
					void *user);

/** Bytes held of an unfinished line (non-zero at the end of a stream means
 * it was cut mid-event). */
size_t js_watch_framer_pending(const struct js_watch_framer *f);

/** One decoded event. */
struct js_watch_event {
	enum js_watch_type type;
	json_t *object; /* owned reference; for ERROR the Status object */
	int err;        /* ERROR only: the Status mapped by js_apierr_code (410 -> JS_EGONE) */
};

/**
 * Decode one line. Returns 0 and fills `ret` (release ret->object with
 * json_decref), or JS_EINVALID for malformed JSON, an unknown type or a
 * missing/non-object `object`.
 */
JS_WARN_UNUSED int js_watch_decode(const char *line, size_t len, struct js_watch_event *ret);

#endif
