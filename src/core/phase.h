/*
 * phase.h - phase and goodput accounting of one JobSet: which phase its
 * status puts it in, how long it spent in each phase, how long each wait
 * for all-ready took, and its goodput (all-ready time over wall time since
 * it first started). Issue 16 item 2 (metrics) and item 4 (local parity).
 *
 * One accountant for every body: jobset-controller feeds it the status each
 * reconcile wrote and turns the numbers into metrics (docs/metrics.md);
 * `jobset run` feeds it the status of its own reconciles and prints the
 * summary (docs/local.md). So both report the same numbers for the same
 * timeline.
 *
 * Pure: no clock reads. Times are milliseconds on any clock the caller
 * chooses (the controller: Unix ms; the local runtime: CLOCK_MONOTONIC ms),
 * as long as one accountant is fed from one clock; timestamps read from the
 * status (js_phase_observe) are Unix ms, so a caller on another clock
 * converts them or passes -1. A time earlier than the previous one (a
 * clock step) counts as no time passing.
 *
 * Plain data, no allocation; not thread-safe (one owner).
 */
#ifndef JS_PHASE_H
#define JS_PHASE_H

#include <stdbool.h>
#include <stdint.h>

#include "api/jobset.h"

/** Phases. Exactly one holds at a time (js_phase_observe says which). */
enum js_phase {
	JS_PHASE__INVALID = -1,
	JS_PHASE_PENDING,    /* "pending": not all Jobs ready, not restarting */
	JS_PHASE_RUNNING,    /* "running": every Job ready (or succeeded) */
	JS_PHASE_RESTARTING, /* "restarting": RestartingJobSet=True */
	JS_PHASE_SUSPENDED,  /* "suspended": spec.suspend */
	JS_PHASE_FINISHED,   /* "finished": Completed or Failed (not exported
				as a metric phase: nothing runs) */
	JS_PHASE__COUNT
};

/** What a wait for all-ready began with. */
enum js_phase_trigger {
	JS_PHASE_TRIGGER_NONE = -1,
	JS_PHASE_TRIGGER_CREATION, /* "creation": the JobSet was created unsuspended */
	JS_PHASE_TRIGGER_RESUME,   /* "resume": spec.suspend went false */
	JS_PHASE_TRIGGER_RESTART,  /* "restart": a whole-JobSet restart was
				      decided (RestartingJobSet=True): the
				      failure was observed */
	JS_PHASE_TRIGGER__COUNT
};

/** "pending", "running", ... (static); "" for an invalid value. */
const char *js_phase_name(enum js_phase p);

/** "creation", "resume", "restart" (static); "" for an invalid value. */
const char *js_phase_trigger_name(enum js_phase_trigger t);

/**
 * True when every Job of `js` is ready or succeeded: the sum of
 * status.replicatedJobsStatus ready + succeeded equals the sum of the
 * ReplicatedJobs' replicas (the test of reconcile step R8, which clears
 * RestartingJobSet). NULL is false.
 */
bool js_phase_all_ready(const struct js_jobset *js);

/** What a JobSet's object says about its phase. */
struct js_phase_obs {
	enum js_phase phase;
	int64_t since_ms;              /* Unix ms the phase began, as the status
					  says (the deciding condition's
					  lastTransitionTime; creationTimestamp
					  for a pending JobSet never suspended
					  nor restarted); -1 when it does not say */
	enum js_phase_trigger wait;    /* the wait for all-ready in progress
					  (pending after creation or a resume,
					  restarting), else NONE */
	int64_t wait_since_ms;         /* Unix ms that wait began, or -1 */
};

/**
 * The phase of `js` (spec and status, SPEC §3.12): finished when Completed
 * or Failed is True; else suspended when spec.suspend; else restarting when
 * RestartingJobSet is True; else running when js_phase_all_ready; else
 * pending. Fills *out (see struct js_phase_obs for the times). NULL `js`
 * gives pending, all times -1.
 */
void js_phase_observe(const struct js_jobset *js, struct js_phase_obs *out);

/** The accountant of one JobSet. Fields are read-only to callers. */
struct js_phase_acct {
	enum js_phase phase;             /* current */
	int64_t since_ms;                /* when it began */
	int64_t ms[JS_PHASE__COUNT];     /* time in each phase, closed intervals */
	int64_t first_start_ms;          /* first time seen not suspended (the
					    goodput's wall clock starts), or -1 */
	int64_t end_ms;                  /* when it finished, or -1 */
	enum js_phase_trigger wait;      /* the wait for all-ready in progress */
	int64_t wait_since_ms;
	int restarts;                    /* waits begun by a restart */
};

/**
 * Start accounting at the first observation `obs` (js_phase_observe, times
 * on the caller's clock or -1), at `now_ms`. What the observation says
 * about the past is trusted only as far as the current phase goes: that
 * phase is counted from obs->since_ms (now when unknown or later), and
 * nothing before it is attributed to any phase - a controller that
 * restarts starts its accounting over from what it observes. A wait in
 * progress keeps its start (obs->wait_since_ms, else the phase's start).
 */
void js_phase_acct_init(struct js_phase_acct *a, const struct js_phase_obs *obs, int64_t now_ms);

/** A wait for all-ready that just ended. */
struct js_phase_ready {
	enum js_phase_trigger trigger;
	double seconds; /* from the wait's start to the all-ready observation */
};

/**
 * Feed the phase observed at `now_ms`. Closes the current interval when
 * the phase changed; starts a wait on a resume (suspended -> not
 * suspended) or a restart (-> restarting); ends it when the JobSet is seen
 * running. Returns true and fills *ret (may be NULL) when a wait ended by
 * this observation; a suspend or finish abandons a wait silently.
 */
bool js_phase_acct_step(struct js_phase_acct *a, enum js_phase phase, int64_t now_ms, struct js_phase_ready *ret);

/** Totals up to `now_ms` (the open interval included). */
struct js_phase_summary {
	double seconds[JS_PHASE__COUNT]; /* per phase */
	double wall_seconds;             /* from the first start to the finish
					    (or now); 0 before any start */
	double goodput;                  /* seconds[RUNNING] / wall_seconds, in
					    [0, 1]; 0 while wall_seconds is 0 */
	int restarts;                    /* whole-JobSet restarts seen */
};

/** Fill *out with the totals of `a` at `now_ms`. */
void js_phase_acct_summary(const struct js_phase_acct *a, int64_t now_ms, struct js_phase_summary *out);

#endif
