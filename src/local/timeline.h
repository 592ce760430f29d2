/*
 * timeline.h - what a run's picture (report.html, local/html.h) is drawn
 * from: every pod's life (created, started, deletion begun, finished, how
 * it ended, with its exit code and reason), every whole-JobSet restart
 * (when, which attempt began, why), the run's events, and the phase and
 * goodput summary of core/phase (the numbers the run's summary prints).
 *
 * Data flows one way: the runner records each pod once, when it is final
 * (its Job collected, or the run ended), each restart when the core's
 * status counts it, each event as it is emitted; html.c renders the whole
 * record once, at the end. Nothing here reads a clock or the pods.
 *
 * The structs are plain data, so a test can build a timeline from static
 * arrays; a recorded one owns its strings (an arena) and is freed with
 * js_timeline_free. Times are wall-clock Unix milliseconds, 0 when a thing
 * did not happen. Not thread-safe: the runner's thread.
 */
#ifndef JS_TIMELINE_H
#define JS_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "local/local.h"

/* Events kept for the picture's table: a run of 1,000 pods emits about
 * 4,000; past this the table says how many more events.log has. */
#define JS_TIMELINE_MAX_EVENTS 5000
/* Restarts drawn as attempt markers; maxRestarts may be any int32, but a
 * picture with more markers than pixels says nothing more. */
#define JS_TIMELINE_MAX_RESTARTS 1000

/** How a pod ended, as the run's events and summary tell it. */
enum js_timeline_end {
	JS_TIMELINE_END__INVALID = -1,
	JS_TIMELINE_UNFINISHED, /* still pending or running when the run ended */
	JS_TIMELINE_SUCCEEDED,
	JS_TIMELINE_FAILED,     /* failed on its own (evictions included) */
	JS_TIMELINE_STOPPED,    /* deleted while it ran: not a failure */
	JS_TIMELINE_END__COUNT
};

/** One pod. Strings borrowed from the timeline. */
struct js_timeline_pod {
	const char *name;
	const char *rjob;       /* its ReplicatedJob ("" when unknown) */
	const char *job;        /* its Job's name */
	int32_t job_index;      /* the Job's index in its ReplicatedJob, -1 unknown */
	int32_t index;          /* completion index, -1 NonIndexed */
	int32_t attempt;        /* the JobSet restart attempt it belongs to */
	int64_t created_ms, started_ms, deleted_ms, finished_ms;
	enum js_timeline_end end;
	int32_t exit_code;      /* the container that decided a failure (else 0) */
	const char *reason;     /* its reason ("Error", "StartError", "Evicted"), or "" */
	const char *detail;     /* every deciding container's exit, as the pod's
				   event says it ("worker: exit code 1 (Error)") */
};

/** One whole-JobSet restart: attempt `attempt` began at `at_ms`. */
struct js_timeline_restart {
	int64_t at_ms;
	int32_t attempt;
	const char *reason;     /* RestartingJobSet's reason (DefaultFailurePolicy, ...) */
	const char *message;
};

/** One event, as events.log has it. */
struct js_timeline_event {
	int64_t time_ms;
	const char *type, *reason, *kind, *name, *message;
};

/** A run's record. Fields are read-only to callers but for tests, which
 * build one whole. */
struct js_timeline {
	const char *name, *namespace_;
	const char *result;     /* "Completed", "Failed", "Interrupted",
				   "Stalled"; "" while running */
	int64_t start_ms, end_ms;
	int32_t restarts;       /* status.restarts at the end */
	const char *const *rjobs; /* the ReplicatedJobs in spec order */
	size_t n_rjobs;
	const struct js_timeline_pod *pods;
	size_t n_pods;
	const struct js_timeline_restart *restarts_at;
	size_t n_restarts;      /* recorded (restarts past the cap are not) */
	const struct js_timeline_event *events;
	size_t n_events;
	size_t events_dropped;  /* past JS_TIMELINE_MAX_EVENTS */
	struct js_local_phases phases; /* core/phase's numbers (js_local_phases) */
	struct js_timeline_store *store; /* owned memory of a recorded one */
};

/* ---- recording (the runner) ---- */

/** A new record of the run of `js` (its name, namespace and ReplicatedJobs
 * are copied), begun at `start_ms`. Free with js_timeline_free. */
struct js_timeline *js_timeline_new(const struct js_jobset *js, int64_t start_ms);

/** Free a recorded timeline. NULL is a no-op; returns NULL. */
struct js_timeline *js_timeline_free(struct js_timeline *t);

/** Record pod `p` (its strings are copied). A pod is recorded once, when
 * it is final: its Job collected, or the run ended. */
void js_timeline_add_pod(struct js_timeline *t, const struct js_timeline_pod *p);

/** Record that attempt `attempt` began at `at_ms` (strings copied, NULL
 * taken as ""). Restarts past JS_TIMELINE_MAX_RESTARTS are not recorded. */
void js_timeline_add_restart(struct js_timeline *t, int64_t at_ms, int32_t attempt, const char *reason,
			     const char *message);

/** Record event `e` (copied), or count it past JS_TIMELINE_MAX_EVENTS. */
void js_timeline_add_event(struct js_timeline *t, const struct js_local_event *e);

/** The run ended at `end_ms` with `result` (static) after `restarts`
 * restarts; `phases` are the run's numbers (js_local_phases), copied. */
void js_timeline_end(struct js_timeline *t, int64_t end_ms, const char *result, int32_t restarts,
		     const struct js_local_phases *phases);

#endif
