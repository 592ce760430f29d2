/*
 * core_int.h - what the files of src/core share while one reconcile runs.
 * Nothing outside src/core includes this.
 *
 * One struct js__ctx lives for one js_reconcile_run() call: the input, the
 * defaulted working copy of the JobSet (whose status is the new status), the
 * observed Jobs by name, the children sorted into buckets, and the plan being
 * built. Every step (status.c, failure.c, create.c, suspend.c, finish.c -
 * which also holds the success policy) reads and writes only through it.
 * Scratch memory (buckets, actions, events, strings) comes from the plan's
 * arena, so nothing here is freed one by one.
 */
#ifndef JS_CORE_INT_H
#define JS_CORE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/hmap.h"
#include "base/time.h"
#include "core/reconcile.h"

struct js_quarantine_rules;

/* Condition types, reasons and messages (SPEC §11.6). */
#define JS_COND_COMPLETED "Completed"
#define JS_COND_FAILED "Failed"
#define JS_COND_SUSPENDED "Suspended"
#define JS_COND_RESTARTING "RestartingJobSet"
#define JS_COND_SP_IN_PROGRESS "StartupPolicyInProgress"
#define JS_COND_SP_COMPLETED "StartupPolicyCompleted"
/* Ours (upstream has no such condition; its reason JobCreationFailed is an
 * event's): True while a Job name the JobSet must create is held by a Job
 * it does not control (create.c; docs/differences.md). */
#define JS_COND_JOB_BLOCKED "JobCreationBlocked"

/** A bucket of children (borrowed pointers into the input). */
struct js__bucket {
	size_t n, cap;
	const struct js_obsjob **items; /* plan arena */
};

struct js__ctx {
	const struct js_reconcile_input *in;
	struct js_jobset *js;      /* working copy; js->status is the new status */
	struct js_plan *plan;       /* its arena holds everything below */
	struct js_action *actions;  /* the plan's, while being built */
	size_t n_actions, cap_actions;
	struct js_event *events;
	size_t n_events, cap_events;
	struct js_plan_restart *restarts;
	size_t n_restarts, cap_restarts;

	struct js_hmap *by_name;    /* every input Job by name (borrowed keys
				       and values): lookups are O(1), so a
				       reconcile is linear in its Jobs */
	struct {                    /* cleanup.c, filled by js__cleanup_run */
		struct js_hmap *held;   /* names of Jobs with a running pod of
					   an older attempt (borrowed keys) */
		bool hold_every_name;   /* such a pod without a Job name */
		bool unmarked_old_jobs; /* a Job of an older attempt is only
					   being deleted by this pass */
	} cleanup;
	struct js__bucket owned;    /* every child (owner uid matches) */
	struct js__bucket active, succeeded, failed, previous;

	struct {                    /* create.c: names held by a Job this
				       JobSet does not control */
		size_t n;
		const char *first;  /* borrowed from the input */
	} blocked;

	struct {                    /* avoid.c: node quarantine */
		bool read;          /* rules looked up */
		const struct js_quarantine_rules *rules; /* or NULL: none */
	} avoid;

	bool dirty;                 /* status must be written */
	bool hold;                  /* suspended since creation: no Job, no
				       Service until first resumed (#535) */
	bool attempts_first_run;    /* KEP-1282: this pass started the
				       counter at 0 (attempts.c) */
	const struct js_policy *policy; /* in->policy, or own_policy once built */
	struct js_policy *own_policy;   /* compiled by this pass (no in->policy) */
	char now[21];               /* RFC 3339 of in->now */
	const char *err;            /* reconcile error message, or NULL */
};

/* ---- reconcile.c: plan building ---- */

/** Append an action; `name` is copied, `object` (may be NULL) is taken.
 * Returns it (in the plan arena) for fields beyond these. */
struct js_action *js__ctx_action(struct js__ctx *c, enum js_action_kind kind, const char *name, json_t *object,
				 const char *why);

/** Queue an event (emitted after the status write). Strings (never NULL)
 * are copied. */
void js__ctx_event(struct js__ctx *c, const char *type, const char *reason, const char *message);

/** Record a whole-JobSet or per-Job restart (plan->restarts): `action`
 * (static) for the failed Job `j`, or NULL for a restart on request
 * (reason RestartRequested). */
void js__ctx_restart(struct js__ctx *c, const char *action, const struct js_obsjob *j);

/** Ask to be reconciled again after `seconds` at the latest: the smaller of
 * this and any requeue already planned. */
void js__ctx_requeue(struct js__ctx *c, int64_t seconds);

/** Record a reconcile error (first one wins). Returns JS_EINVALID. */
int js__ctx_fail(struct js__ctx *c, const char *fmt, ...) JS_PRINTF(2, 3);

/** printf into the plan arena (freed with the plan). */
const char *js__fmt(struct js__ctx *c, const char *fmt, ...) JS_PRINTF(2, 3);

/** `items` (n used of *cap entries of `size` bytes) with room for one more:
 * the same array, or a copy twice as large in the plan arena. */
void *js__grow(struct js__ctx *c, void *items, size_t n, size_t *cap, size_t size);

/** Strict decimal int32 ("-3", "12"); false on anything else. */
bool js__parse_i32(const char *s, int32_t *ret);

/** Replicas of rjob `i` (absent counts as 1, the CRD default). */
int32_t js__replicas(const struct js_rjob *r);

/** The rjob status entry named `name` in the working status, or NULL. */
struct js_rjob_status *js__rjob_status(struct js__ctx *c, const char *name);

/* ---- status.c: classification, replicatedJobsStatus, conditions ---- */

/** Sort owned Jobs into buckets (SPEC §11.3). JS_EINVALID on bad labels. */
int js__status_classify(struct js__ctx *c);
/* Raise status.restarts of the pass's copy to the highest restart-attempt
 * label of the owned Jobs when someone wrote a lower number (status.c). */
void js__status_restore_restarts(struct js__ctx *c);

/** Recompute replicatedJobsStatus (SPEC §11.4), marking dirty on change. */
void js__status_compute(struct js__ctx *c);

/**
 * Set a condition with SPEC §11.5 semantics; queues an event of
 * `event_type` on change. Returns true when the status changed.
 */
bool js__status_set_condition(struct js__ctx *c, const char *type, bool status, const char *reason,
			      const char *message, const char *event_type);

/** Terminal transitions (SPEC §11.6 C1/C11, C2-C5/C10). */
void js__status_set_completed(struct js__ctx *c);
void js__status_set_failed(struct js__ctx *c, const char *reason, const char *message);

/** True when Completed=True or Failed=True, or terminalState is Completed or Failed. */
bool js__status_finished(const struct js_jobset *js);

/** Failure condition of a failed Job: Failed=True, else FailureTarget=True
 * (difference (b), #928/#979). */
const struct js_jobcond *js__status_failure_cond(const struct js_obsjob *j);

/* ---- failure.c (SPEC §11.8) ---- */

/** Run the failure policy over the failed bucket (non-empty). */
int js__failure_run(struct js__ctx *c);

/**
 * A restart on request (docs/differences.md "Restart on request"): when the
 * JobSet's annotation JS_ANN_RESTART_REQUEST names the current
 * status.restarts and the JobSet is not suspended, start a new attempt as
 * RestartJobSetAndIgnoreMaxRestarts does (restarts+1, restartsCountTowardsMax
 * unchanged; RestartingJobSet=True reason RestartRequested, a Normal event)
 * and return true. Otherwise change nothing and return false.
 */
bool js__failure_requested(struct js__ctx *c);

#define JS_REASON_RESTART_REQUESTED "RestartRequested"

/* Failed reason of a JobSet over a size bound of base/limits.h that never
 * met the webhook (ours: docs/differences.md, "Size limits"). */
#define JS_REASON_LIMIT_EXCEEDED "LimitExceeded"

/** True when failure-policy rule number `rule` (of the working JobSet's
 * spec.failurePolicy.rules) applies to failed Job `j`. Message patterns
 * match through c->policy, compiled on first use when the input gave none. */
bool js__failure_rule_applies(struct js__ctx *c, size_t rule, const struct js_obsjob *j);

/* ---- finish.c: the success policy (SPEC §11.10) ---- */

/** Evaluate the success policy; true (and Completed set) when satisfied. */
bool js__success_run(struct js__ctx *c);

/* ---- create.c (SPEC §6.1, §7, §8, §11.11, §11.12, §11.15) ---- */

/** Actions for the headless Service, the PVCs and elastic patches. */
void js__create_dependents(struct js__ctx *c);

/* gang.c: the Workload and PodGroups of spec.scheduling (KEP-969). */
void js__gang_run(struct js__ctx *c);

/** Create the missing Jobs (R14). */
void js__create_jobs(struct js__ctx *c);

/** dependsOn of rjob index `ri` satisfied (SPEC §11.12). */
bool js__create_depends_ok(struct js__ctx *c, size_t ri);

/** rjob index `ri` has started: replicas == ready + succeeded + failed. */
bool js__create_started(struct js__ctx *c, size_t ri);

/** startupPolicy InOrder in effect. */
bool js__create_in_order(const struct js_jobset *js);

/* ---- suspend.c (SPEC §11.13, §11.16) ---- */

/** The suspend or the resume pass (R15). */
void js__suspend_run(struct js__ctx *c);

/** In-place restart bookkeeping (R16). */
int js__suspend_in_place(struct js__ctx *c);

/* ---- attempts.c: execution attempts (KEP-1282) ---- */

/** KEP-1282 "1. Initialization and Upgrade Migration": with the gate on and
 * no status.executionAttempts, start it at status.restarts when the JobSet
 * has restarted; otherwise leave it absent while spec.suspend is true and
 * start it at 0 in the first pass that runs or resumes it (that resume is
 * not counted again by js__attempts_resume). */
void js__attempts_init(struct js__ctx *c);

/** KEP-1282 "2. Increment on resume": count a suspend -> unsuspend
 * transition once (before any Job is created or resumed in the pass). */
void js__attempts_resume(struct js__ctx *c);

/** KEP-1282 "3. Increment on restart": count a whole-JobSet restart. */
void js__attempts_restart(struct js__ctx *c);

/** KEP-1282 "4. Data Propagation": with the gate on, put the annotation
 * with the current value on the Job and pod-template metadata of the merge
 * patch `patch`. */
void js__attempts_annotate(const struct js__ctx *c, json_t *patch);

/* ---- deadline.c: activeDeadlineSeconds (KEP-1186) ---- */

/** KEP-1186 "Controller Logic", startTime maintenance: set while active,
 * cleared while suspended (gate on only). */
void js__deadline_start_time(struct js__ctx *c);

/** KEP-1186 "3. Interaction with failurePolicy restarts": a whole-JobSet
 * restart starts the clock again (gate on only). */
void js__deadline_restart(struct js__ctx *c);

/** Gate on and spec.activeDeadlineSeconds set: the pass checks success,
 * then the deadline, then failures (KEP-1186 "Controller Logic"). */
bool js__deadline_applies(const struct js__ctx *c);

/** KEP-1186 deadline check: true when the deadline has passed (active Jobs
 * deleted, Failed=True reason DeadlineExceeded); otherwise asks for a
 * requeue when it falls. */
bool js__deadline_run(struct js__ctx *c);

/* ---- cleanup.c: the restart cleanup (core/cleanup.h, its invariant) ---- */

/** R7: delete the Jobs of older attempts (Foreground, or in direct mode
 * Background) and, in direct mode, the old pods the runtime passed; note
 * which names they hold. */
void js__cleanup_run(struct js__ctx *c);

/** No Job may be created this pass (BlockingRecreate, or rules (1)-(2) of
 * cleanup.h); asks for a requeue or a confirming LIST as needed. */
bool js__cleanup_hold_all(struct js__ctx *c);

/** Job name `name`, not observed, may not be created this pass (rules (3)
 * and (4)); asks for a requeue or a confirming LIST as needed. */
bool js__cleanup_hold_name(struct js__ctx *c, const char *name);

/** Free what js__cleanup_run built (end of the pass). */
void js__cleanup_done(struct js__ctx *c);

/* ---- avoid.c: node quarantine (ours, gate NodeQuarantine) ---- */

/** Before a whole-JobSet or per-Job restart caused by failed Jobs: true when the
 * JobSet has quarantine rules and the runtime did not pass the failed pods;
 * then plan->want_failed_pods is set and the restart waits for them. */
bool js__avoid_hold(struct js__ctx *c);

/** Right after a whole-JobSet restart was decided (status.restarts already
 * the new attempt): the new attempt's list (the ended attempt's, past
 * entries dropped, plus each node a failed pod blames), the
 * NodesQuarantined condition and a NodeQuarantined event per node added. */
void js__avoid_restart(struct js__ctx *c);

/** Right after a per-Job restart of `j` was counted (its jobRestarts entry
 * already the new one; the attempt unchanged): the current attempt's list
 * plus each node a failed pod of `j` (of its job-restart-attempt) blames,
 * kept off through attempt status.restarts + node-quarantine-attempts - 1;
 * the condition and a NodeQuarantined event per node added. */
void js__avoid_restart_job(struct js__ctx *c, const struct js_obsjob *j);

/** A pass that may create Jobs: the current attempt's list for them
 * (plan->quarantine) and the condition. */
void js__avoid_current(struct js__ctx *c);

/* ---- noroom.c: no room left by node quarantine (ours, gate NodeQuarantine) ---- */

/** After js__avoid_current: the QuarantineLeavesNoRoom condition from the
 * pods that wait to be scheduled, asking the runtime for them
 * (plan->want_pending_pods) at most once per JS_NOROOM_INTERVAL_S while the
 * list applies and a Job of the attempt has pods not ready. */
void js__noroom_run(struct js__ctx *c);

/** A finished JobSet: the condition, if True, goes False. */
void js__noroom_finished(struct js__ctx *c);

/* ---- finish.c (SPEC §11.2 R6, §11.14) ---- */

/** Delete the Jobs of a bucket that are not already being deleted. */
void js__finish_delete(struct js__ctx *c, const struct js__bucket *b, const char *why);

/** TTL after finished: delete the JobSet or requeue. */
int js__finish_ttl(struct js__ctx *c);

#endif
