/*
 * workqueue.h - client-go's rate-limited work queue for string keys
 * ("namespace/name").
 *
 * Properties (client-go util/workqueue/doc.go): fair (FIFO); stingy (a key
 * added many times before it is processed is processed once, and never by
 * two workers at a time); a key re-added while being processed is queued
 * again when js_workqueue_done() is called. add_after() delays a key (the
 * earliest pending time wins); add_rate_limited() delays it by the maximum
 * of a per-key exponential backoff (base 5 ms doubling to 1000 s) and an
 * overall token bucket (10 qps, burst 100); forget() resets the key's
 * backoff after a success.
 *
 * Threading: all functions are thread-safe. The clock can be replaced for
 * tests (then use get() with timeout 0, which never blocks).
 */
#ifndef JS_WORKQUEUE_H
#define JS_WORKQUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

struct js_workqueue;

/** Options; zero fields take the defaults. */
struct js_workqueue_opts {
	uint64_t base_delay_ns; /* 0 = 5 ms */
	uint64_t max_delay_ns;  /* 0 = 1000 s */
	double qps;             /* overall bucket; 0 = 10, < 0 = no bucket */
	int burst;              /* 0 = 100 */
	uint64_t (*now_ns)(void *clock_user); /* NULL = CLOCK_MONOTONIC */
	void *clock_user;
};

/** Create a queue. Returns 0 (never fails otherwise). */
JS_WARN_UNUSED int js_workqueue_new(const struct js_workqueue_opts *opts, struct js_workqueue **ret);

/** Free the queue and every key in it. No thread may be using it. NULL is a
 * no-op. Returns NULL. */
struct js_workqueue *js_workqueue_free(struct js_workqueue *q);

/** Queue `key` (copied). Ignored after shutdown. */
void js_workqueue_add(struct js_workqueue *q, const char *key);

/** Queue `key` after `delay_ns` (0 = now). A key already waiting keeps the
 * earlier of the two times, and a key already queued to run now (not being
 * processed) is left alone: that run sees the latest state. Adding every
 * event of a key with the same short delay therefore folds the events of
 * that window into one run (the controller's fold window). */
void js_workqueue_add_after(struct js_workqueue *q, const char *key, uint64_t delay_ns);

/** Queue `key` after its rate-limited delay, counting one more failure.
 * Returns the delay used, in nanoseconds. */
uint64_t js_workqueue_add_rate_limited(struct js_workqueue *q, const char *key);

/** Reset the failure count of `key`. */
void js_workqueue_forget(struct js_workqueue *q, const char *key);

/** Failures counted for `key` since the last forget(). */
unsigned js_workqueue_num_requeues(struct js_workqueue *q, const char *key);

/**
 * Take the next key, waiting up to `timeout_ms` (0 = do not wait, < 0 =
 * forever). Returns 0 and the key in *ret_key (the caller frees it, and must
 * call js_workqueue_done with it), -ETIMEDOUT, or -ESHUTDOWN once the queue
 * is shut down and empty.
 */
JS_WARN_UNUSED int js_workqueue_get(struct js_workqueue *q, int timeout_ms, char **ret_key);

/** Mark `key` processed; if it was re-added meanwhile it is queued again. */
void js_workqueue_done(struct js_workqueue *q, const char *key);

/** Refuse new keys and wake every waiter; queued keys are still handed out. */
void js_workqueue_shutdown(struct js_workqueue *q);

/** Shut down, then wait up to `timeout_ms` for keys being processed to be
 * done. Returns 0 or -ETIMEDOUT. */
JS_WARN_UNUSED int js_workqueue_shutdown_drain(struct js_workqueue *q, int timeout_ms);

/** Keys ready to be handed out (not counting delayed or processing ones). */
size_t js_workqueue_len(struct js_workqueue *q);

/** Keys waiting for a delay to pass. */
size_t js_workqueue_delayed(struct js_workqueue *q);

#endif
