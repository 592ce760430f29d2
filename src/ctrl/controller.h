/*
 * controller.h - the JobSet controller of jobset-controller (SPEC §11): the
 * informer caches it owns, the work queue, N reconcile workers, leader
 * election and the event recorder, wired around the reconcile core.
 *
 * Caches (never a cluster-wide Pod cache, upstream #778; in gates mode the
 * pods the pod webhook labelled, ctrl/placement.c): every JobSet; Jobs,
 * Services and PVCs carrying label jobset.sigs.k8s.io/jobset-name (the
 * Service we create gets that label too, see docs/controller.md). Each
 * keeps a compact record made at ingest (ctrl/cache.h), never the JSON.
 * Jobs are indexed by the uid of their controller JobSet owner reference.
 * Event handlers only map an event to its JobSet key "namespace/name"
 * (ctrl/owner.h), and only when something the reconcile reads changed
 * (ctrl/cache.h filters); child events within `fold_window_ms` fold into one
 * reconcile. The queue de-duplicates and backs off per key; a worker
 * reconciles one key at a time through js_reconcile_run() and applies the
 * plan (ctrl/sync.c).
 *
 * Only the leader runs workers. Informers run on every replica, so a
 * successor starts with warm caches.
 *
 * Lifecycle (libuv-style, issue 10): new -> start -> stop -> free.
 * js_controller_stop() never returns while a worker can still touch the
 * controller: after the grace period it cancels the workers' requests and
 * still waits for the last one. The Lease is released only after that, and
 * the informers are stopped last. js_controller_free() refuses with -EBUSY
 * (and a log line) while anything still runs, instead of freeing memory in
 * use.
 *
 * Threading: js_controller_new/start/stop/free from one thread (main);
 * the query functions from any thread.
 */
#ifndef JS_CONTROLLER_H
#define JS_CONTROLLER_H

#include <stdbool.h>

#include "base/log.h"
#include "api/jobset.h"
#include "base/common.h"
#include "ctrl/metrics.h"
#include "kube/client.h"

/** Log levels passed to the log callback. */
enum {
	JS_CONTROLLER_LOG_ERROR = 0,
	JS_CONTROLLER_LOG_INFO = 1,
	JS_CONTROLLER_LOG_DEBUG = 4,
};

/** Receives one formatted line (no newline); from any thread. */
typedef js_log_fn js_controller_log_fn;

struct js_controller_opts {
	struct js_client *client;   /* required; must outlive the controller */
	int workers;                /* reconcile workers; 0 = 1 */
	struct js_gates gates;
	bool leader_elect;
	const char *lease_namespace; /* required with leader_elect */
	const char *lease_name;      /* required with leader_elect */
	const char *identity;        /* required with leader_elect; also the events' reportingInstance */
	int lease_duration_ms, renew_deadline_ms, retry_period_ms; /* 0 = 15000/10000/2000 */
	int cache_wait_ms;           /* < 0: no read-your-writes (tests); otherwise a key is not
					reconciled again until the caches show its last pass's
					writes, for up to 60 s (ctrl/expect.h, ctrl/rw.c) */
	int fold_window_ms;          /* child events of one JobSet within this window fold into one
					reconcile; 0 = reconcile at once (ctrl/config.h default) */
	/* JS_PLACEMENT_GATES also runs the placement controller (ctrl/placement.c,
	 * docs/controller.md "Exclusive placement"): a cache of the pods the pod
	 * webhook labelled, and the lifting of their scheduling gates. */
	enum js_placement_mode placement;
	/* Restart cleanup "direct": older attempts' Jobs are deleted in the
	 * Background and their pods by one DeleteCollection, and nothing is
	 * created while one of those pods runs (core/reconcile.h
	 * js_reconcile_input.cleanup_direct; --restart-cleanup). */
	bool cleanup_direct;
	js_controller_log_fn *log;   /* may be NULL */
	void *log_user;
};

struct js_controller;

/** Create (not started); copies the options. Returns 0 or JS_EINVALID. */
JS_WARN_UNUSED int js_controller_new(const struct js_controller_opts *opts, struct js_controller **ret);

/** Start the informers and the leader election (or, without it, the
 * workers). Returns 0 or -errno. */
JS_WARN_UNUSED int js_controller_start(struct js_controller *c);

/** True when every cache has completed its first LIST. */
bool js_controller_ready(struct js_controller *c);

/** True while this replica's workers run (it leads, or election is off). */
bool js_controller_active(struct js_controller *c);

/** True once leadership was lost: the process should exit (as upstream). */
bool js_controller_lost(struct js_controller *c);

/**
 * Graceful stop: take no more keys and let in-flight reconciles finish for
 * up to `timeout_ms`; past that, cancel their API requests (they fail with
 * -ECANCELED and are not retried) and wait for them to return - stop never
 * returns while a worker runs. Then stop leading and release the Lease
 * (only now may a successor act), and stop the informers. Idempotent: a
 * second call returns what the first returned; a controller never started
 * stops at once.
 * Returns 0, or -ETIMEDOUT when reconciles had to be cut short (every
 * thread has finished either way).
 */
int js_controller_stop(struct js_controller *c, int timeout_ms);

/** Free. NULL is a no-op. Returns 0, or -EBUSY (logged; nothing freed) when
 * the controller was started and not stopped. */
JS_WARN_UNUSED int js_controller_free(struct js_controller *c);

/** The metric registry (owned by the controller). Gauges are refreshed by
 * js_controller_refresh_metrics(). */
struct js_metrics *js_controller_metrics(struct js_controller *c);

/** Update the gauges (queue depth, leader, cache sizes) before a scrape. */
void js_controller_refresh_metrics(struct js_controller *c);

#endif
