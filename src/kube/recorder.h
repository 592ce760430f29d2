/*
 * recorder.h - an event recorder writing events.k8s.io/v1 Events about
 * objects ("regarding"), as client-go's tools/events recorder.
 *
 * Each call creates an Event named "<object name>.<hex wall-clock ns>" in
 * the object's namespace ("default" for cluster-scoped objects). Repeats of
 * the same (object uid, type, reason, action, note) within 6 minutes are
 * folded into the first Event's `series` (count, lastObservedTime) with a
 * merge patch instead of a new object, which is what keeps a failing
 * reconcile loop from flooding etcd. The note is cut to 1 KiB, the API
 * limit.
 *
 * Asynchronous, as client-go's broadcaster: js_recorder_eventf checks its
 * arguments, then queues the event and returns; one sender thread writes
 * the queued events in order (so a repeat finds the Event its first
 * occurrence created), off the caller's path - a slow or blocked events
 * endpoint never delays a reconcile. The queue is bounded (queue_max,
 * client-go's 1000 by default): when it is full the event is dropped and
 * counted, as client-go drops when its channel is full. Failures to write
 * are told to on_error on the sender thread; they never reach the caller.
 * js_recorder_shutdown drains the queue for a bounded time, then cancels
 * the request in flight and drops the rest.
 *
 * Threading: every call is thread-safe. The sender thread binds its own
 * cancel flag on the client (js_client_bind_cancel).
 */
#ifndef JS_RECORDER_H
#define JS_RECORDER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "kube/client.h"

struct js_recorder;

/** The longest note an Event takes (bytes; events.k8s.io/v1 validation):
 * js_recorder_eventf cuts a longer one there. */
#define JS_RECORDER_NOTE_MAX 1024

struct js_recorder_opts {
	const char *controller; /* reportingController, e.g. "jobset.sigs.k8s.io/jobset-controller"; required */
	const char *instance;   /* reportingInstance, e.g. the pod name; required */
	size_t queue_max;       /* events waiting to be sent; 0 = 1000 (client-go's maxQueuedEvents) */
	/* Optional: an event was not written - `err` is -ENOBUFS when the
	 * queue was full (called on the caller's thread, before
	 * js_recorder_eventf returns), else the write's error with the API's
	 * `message` (may be NULL; on the sender thread), or -ECANCELED for
	 * events still queued or in flight when a shutdown's drain ran out.
	 * `reason` is the event's. Must not call back into the recorder. */
	void (*on_error)(void *user, const char *reason, int err, const char *message);
	void *user;
};

/** What the recorder did so far (counters since creation). */
struct js_recorder_stats {
	uint64_t queued;  /* accepted by js_recorder_eventf */
	uint64_t sent;    /* written (created, or folded into a series) */
	uint64_t failed;  /* a write failed (on_error was told) */
	uint64_t dropped; /* the queue was full, or shut down before they were sent */
	size_t pending;   /* queued or in flight now */
};

/** Create and start the sender thread. Copies the options. Returns 0,
 * JS_EINVALID (missing controller or instance), or -errno (the thread). */
JS_WARN_UNUSED int js_recorder_new(struct js_client *c, const struct js_recorder_opts *opts,
				   struct js_recorder **ret);

/** Shut down with no drain (js_recorder_shutdown(r, 0)) unless done
 * already, and free. The client must still be alive. NULL is a no-op.
 * Returns NULL. */
struct js_recorder *js_recorder_free(struct js_recorder *r);

/**
 * Record an event about `regarding` (an object with apiVersion, kind and
 * metadata; only those are copied). `type` is "Normal" or "Warning";
 * `reason` and `action` are UpperCamelCase words; the note is
 * printf-formatted, cut to 1 KiB. The event's time is now. Returns 0 when
 * queued, JS_EINVALID for a bad type or missing fields, -ENOBUFS when the
 * queue is full (dropped, counted, on_error told), or -ESHUTDOWN once
 * js_recorder_shutdown has begun.
 */
JS_WARN_UNUSED int js_recorder_eventf(struct js_recorder *r, const json_t *regarding, const char *type,
				      const char *reason, const char *action, const char *fmt, ...)
	JS_PRINTF(6, 7);

/** Wait up to `timeout_ms` until every event queued before the call has
 * been written or has failed. Returns 0 or -ETIMEDOUT. */
JS_WARN_UNUSED int js_recorder_flush(struct js_recorder *r, int timeout_ms);

/**
 * Stop accepting events, let the sender write what is queued for up to
 * `timeout_ms` (<= 0: not at all), then cancel the write in flight, drop
 * what is left (counted as dropped, on_error told with -ECANCELED) and join
 * the sender thread. Returns 0 when everything queued was handled, else
 * -ETIMEDOUT. Idempotent and thread-safe: a later or concurrent call waits
 * for the first and returns its result.
 */
int js_recorder_shutdown(struct js_recorder *r, int timeout_ms);

/** The counters (see struct js_recorder_stats). */
void js_recorder_stats(struct js_recorder *r, struct js_recorder_stats *ret);

#endif
