/*
 * timeline.h - what a run's picture (report.html, picture/html.h) is drawn
 * from: every pod's life (created, started, deletion begun, finished, how
 * it ended, with its exit code and reason), every whole-JobSet restart
 * (when, which attempt began, why), the run's events, and the phase and
 * goodput summary of core/phase (the numbers the run's summary prints).
 *
 * Two bodies fill it, one renderer draws it. Locally the runner records
 * each pod once, when it is final (its Job collected, or the run ended),
 * each restart when the core's status counts it, each event as it is
 * emitted (local/report.c). On a cluster picture/fromapi.h rebuilds it
 * from what the API still holds, and says what it could not: a pod may be
 * known only from its events, or not at all (its source), and the phase
 * totals may be unknown (phases.known, with the reason in phases_note).
 * html.c renders the whole record once. Nothing here reads a clock.
 *
 * The structs are plain data, so a test can build a timeline from static
 * arrays; a recorded one owns its strings (an arena) and is freed with
 * js_timeline_free. Times are wall-clock Unix milliseconds, 0 when a thing
 * did not happen. Not thread-safe: the runner's thread.
 */
#ifndef JS_TIMELINE_H
#define JS_TIMELINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "core/phase.h"

struct js_jobset;

/* Events kept for the picture's table: a run of 1,000 pods emits about
 * 4,000; past this the table says how many more events.log has. */
#define JS_TIMELINE_MAX_EVENTS 5000
/* Restarts drawn as attempt markers, the latest ones (the restarts of a
 * bad night are what an operator opens the page for); maxRestarts may be
 * any int32, but a picture with more markers than pixels says nothing
 * more. */
#define JS_TIMELINE_MAX_RESTARTS 1000
/* Waits for all-ready listed ("time to all ready"): the first ones. */
#define JS_TIMELINE_MAX_READIES 32
/* Sentences of what the page cannot show (a cluster's lost history). */
#define JS_TIMELINE_MAX_NOTES 16

/** Which body recorded the timeline: it names the page's generator and
 * where the rest of the record is. */
enum js_timeline_origin {
	JS_TIMELINE_LOCAL,   /* `jobset run`: events.log, jobs.json beside it */
	JS_TIMELINE_CLUSTER, /* `kubectl jobset report`: the API's objects */
};

/** Where a pod's row comes from. */
enum js_timeline_source {
	JS_TIMELINE_SEEN,        /* the pod itself (local: the runner's own;
				    cluster: the pod object) */
	JS_TIMELINE_FROM_EVENTS, /* the pod is gone; its name and times are
				    its events' (phase unknown when no start
				    was recorded) */
	JS_TIMELINE_NO_RECORD,   /* the pod is gone and its events too: only
				    its attempt's span is known */
	JS_TIMELINE_SOURCE__COUNT
};

/** How a pod ended, as the run's events and summary tell it. */
enum js_timeline_end {
	JS_TIMELINE_END__INVALID = -1,
	JS_TIMELINE_UNFINISHED, /* still pending or running when the run ended */
	JS_TIMELINE_SUCCEEDED,
	JS_TIMELINE_FAILED,     /* failed on its own (evictions included) */
	JS_TIMELINE_STOPPED,    /* deleted while it ran: not a failure */
	JS_TIMELINE_END_UNKNOWN, /* not recorded (a cluster's deleted pod) */
	JS_TIMELINE_END__COUNT
};

/** One pod. Strings borrowed from the timeline. */
struct js_timeline_pod {
	const char *name;
	const char *rjob;       /* its ReplicatedJob ("" when unknown) */
	const char *job;        /* its Job's name */
	int32_t job_index;      /* the Job's index in its ReplicatedJob, -1 unknown */
	int32_t index;          /* completion index, -1 NonIndexed */
	int32_t attempt;        /* the JobSet restart attempt it belongs to,
				   -1 when unknown */
	int64_t created_ms, started_ms, deleted_ms, finished_ms;
	enum js_timeline_end end;
	int32_t exit_code;      /* the container that decided a failure (else 0) */
	const char *reason;     /* its reason ("Error", "StartError", "Evicted"), or "" */
	const char *detail;     /* every deciding container's exit, as the pod's
				   event says it ("worker: exit code 1 (Error)") */
	enum js_timeline_source source; /* 0: seen */
	bool has_exit_code;     /* false: a failure whose exit code is not
				   recorded (known from its Job's event) */
};

/** One whole-JobSet restart: attempt `attempt` began at `at_ms`. */
struct js_timeline_restart {
	int64_t at_ms;
	int32_t attempt;
	const char *reason;     /* RestartingJobSet's reason (DefaultFailurePolicy, ...) */
	const char *message;
};

/** core/phase's numbers, when the body has them. */
struct js_timeline_phases {
	bool known;                   /* false: the page says phases_note */
	struct js_phase_summary sum;
	size_t n_readies;             /* waits for all-ready that ended */
	struct js_phase_ready readies[JS_TIMELINE_MAX_READIES]; /* the first ones */
};

/** One event, as events.log has it. */
struct js_timeline_event {
	int64_t time_ms;
	const char *type, *reason, *kind, *name, *message;
};

/** A run's record. Fields are read-only to callers but for tests, which
 * build one whole. */
struct js_timeline {
	enum js_timeline_origin origin;
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
	size_t n_restarts;      /* recorded: the latest JS_TIMELINE_MAX_RESTARTS */
	size_t restarts_dropped; /* the earliest restarts left out for them */
	const struct js_timeline_event *events;
	size_t n_events;
	size_t events_dropped;  /* past JS_TIMELINE_MAX_EVENTS */
	struct js_timeline_phases phases; /* core/phase's numbers */
	const char *phases_note; /* why the totals are missing, or what is
				    known instead ("" or NULL: nothing) */
	const char *const *notes; /* what the page cannot show, in sentences */
	size_t n_notes;
	struct js_timeline_store *store; /* owned memory of a recorded one */
};

/* ---- recording (the runner) ---- */

/** A new record of the run of `js` (its name, namespace and ReplicatedJobs
 * are copied), begun at `start_ms`. Free with js_timeline_free. */
struct js_timeline *js_timeline_new(const struct js_jobset *js, int64_t start_ms);

/** The same from the names alone (copied; NULL taken as ""): `rjobs` are
 * the n_rjobs ReplicatedJobs in spec order. */
struct js_timeline *js_timeline_new_named(const char *name, const char *namespace_, const char *const *rjobs,
					  size_t n_rjobs, int64_t start_ms);

/** Free a recorded timeline. NULL is a no-op; returns NULL. */
struct js_timeline *js_timeline_free(struct js_timeline *t);

/** Record pod `p` (its strings are copied). A pod is recorded once, when
 * it is final: its Job collected, or the run ended. */
void js_timeline_add_pod(struct js_timeline *t, const struct js_timeline_pod *p);

/** Record that attempt `attempt` began at `at_ms` (strings copied, NULL
 * taken as ""), restarts in the order they happened. Past
 * JS_TIMELINE_MAX_RESTARTS the earliest recorded one is left out for it
 * (and counted in restarts_dropped). */
void js_timeline_add_restart(struct js_timeline *t, int64_t at_ms, int32_t attempt, const char *reason,
			     const char *message);

/** Count `n` more of the earliest restarts as left out without recording
 * them: for a body that knows only how many there were (a cluster's
 * status.restarts) and records the latest. */
void js_timeline_drop_restarts(struct js_timeline *t, size_t n);

/** Record event `e` (copied, NULL strings taken as ""), or count it past
 * JS_TIMELINE_MAX_EVENTS. */
void js_timeline_add_event(struct js_timeline *t, const struct js_timeline_event *e);

/** Add a sentence on what the page cannot show (copied); past
 * JS_TIMELINE_MAX_NOTES it is dropped. */
void js_timeline_add_note(struct js_timeline *t, const char *note);

/** The run ended (or was looked at) at `end_ms` with `result` (copied;
 * "" while running) after `restarts` restarts; `phases` are its numbers
 * (copied), or NULL when unknown, and then `phases_note` (copied; may be
 * NULL) says why and what is known instead. */
void js_timeline_end(struct js_timeline *t, int64_t end_ms, const char *result, int32_t restarts,
		     const struct js_timeline_phases *phases, const char *phases_note);

/* ---- JSON (`kubectl jobset report -o json`) ---- */

/** The whole record as JSON: {"name", "namespace", "origin", "result",
 * "start", "end" (RFC 3339 with ms), "restarts", "replicatedJobs",
 * "pods": [{"name", "replicatedJob", "job", "jobIndex", "index",
 * "attempt", "source", "created", "started", "deleted", "finished", "end",
 * "exitCode", "reason", "detail"}], "restartsAt": [{"time", "attempt",
 * "reason", "message"}], "restartsDropped", "events": [...], "eventsDropped",
 * "phases" (null when unknown), "phasesNote", "notes"}; absent times are
 * null. New reference; NULL only when out of memory. */
json_t *js_timeline_to_json(const struct js_timeline *t);

/** "seen", "events", "none" (static); "" for an invalid value. */
const char *js_timeline_source_name(enum js_timeline_source s);

/** "unfinished", "succeeded", "failed", "stopped", "unknown" (static); ""
 * for an invalid value. */
const char *js_timeline_end_name(enum js_timeline_end e);

#endif
