/*
 * batch.h - a sliding window of requests: run N independent writes
 * (creates, deletes, patches) with at most `window` of them in flight, as
 * client-go callers do with a worker pool, over one client (kube/client.h
 * multiplexes them over HTTP/2 within its rate limit).
 *
 * Generic: the caller builds request i when the window has room for it
 * (so only the window's bodies exist as text at once), is told every answer
 * (to count requests), and decides what each outcome means (e.g. a delete
 * answered NotFound is done). Answers are taken in submission order: the
 * oldest answer frees the next slot, so the window never drains between
 * batches. An answer that asks to be repeated (429 or a 5xx with
 * Retry-After: js_client_retry_after_ms) is submitted again after the pause,
 * as client-go does for every verb. After the first failed outcome nothing
 * more is submitted; what is in flight is still waited for.
 *
 * Memory: `window` slots, whatever N is. Threading: one run per calling
 * thread; the calling thread's cancel binding (js_client_bind_cancel) ends
 * its requests and pauses.
 */
#ifndef JS_BATCH_H
#define JS_BATCH_H

#include <stddef.h>

#include "base/buf.h"
#include "base/common.h"
#include "kube/apierr.h"
#include "kube/client.h"

/** One request as the caller builds it (js_batch_ops.request). */
struct js_batch_req {
	const char *method;       /* "POST", "PATCH", "DELETE": must outlive the run */
	const char *content_type; /* of the body, or NULL: must outlive the run */
	struct js_buf path;       /* initialised empty by js_batch_run; the caller appends */
	char *body;               /* malloc'd or NULL; js_batch_run frees it once submitted */
};

/** What a run asks of its caller. `self` is js_batch_run's. */
struct js_batch_ops {
	/* Build request `i` (0 <= i < n) into `req`, for a submit or a repeat.
	 * Returns 0 or an error (then request i fails with it, unsent). */
	int (*request)(void *self, size_t i, struct js_batch_req *req);
	/* Optional: request `i` was answered with HTTP `code` (0: no answer,
	 * a transport error), once per try. */
	void (*answered)(void *self, size_t i, const char *method, long code);
	/* Optional: the body of request `i`'s 2xx answer (`len` bytes, not
	 * NUL-terminated, valid during the call), before its finish: e.g.
	 * the resourceVersion the write was given. */
	void (*ok_body)(void *self, size_t i, const char *body, size_t len);
	/* Request `i` is done: `r` is 0 for a 2xx answer, else the error, with
	 * `err` saying what the server (or transport) said. Returns the outcome
	 * that counts: 0 or a negative error. Called once per request, in
	 * order. */
	int (*finish)(void *self, size_t i, int r, const struct js_apierr *err);
};

/**
 * Run requests 0..n-1 through a window of `window` (>= 1) in flight on `c`.
 * Returns 0 when every outcome (ops->finish) was 0, else the first failed
 * outcome, with its index in *failed_at when not NULL (SIZE_MAX on
 * success); requests after it are never built nor sent. -ENOMEM when the
 * slots cannot be allocated (nothing sent).
 */
JS_WARN_UNUSED int js_batch_run(struct js_client *c, size_t n, size_t window, const struct js_batch_ops *ops,
				void *self, size_t *failed_at);

#endif
