/*
 * sim.h - the simulator: an in-memory world for the reconcile core - one
 * JobSet, its Jobs as JSON objects, the Service and PVCs, a clock - and the
 * third body of the plan executor (core/exec.h), beside the controller and
 * the local runtime. Plans are applied to it the way the API server plus an
 * [api]-level test harness would (Foreground deletes leave the Job with a
 * deletionTimestamp until `finalize`; Background deletes remove it), and a small script language drives
 * it. Used by `jobset simulate` and by the scenario tests
 * (tests/cases/core/, tests/unit/sim/). Layer: base, api, core.
 *
 * Every reconcile also checks the core's invariants: the same input gives
 * the same plan; a create never names an existing Job; restart counters
 * never decrease; a finished JobSet never creates a Job; no Job is created
 * or resumed while a pod of an older attempt of its name runs (with
 * BlockingRecreate: any such pod), nor created while a `pods` pod of its
 * name of another attempt than the create's runs, core/cleanup.h's
 * invariant. A violation
 * makes the step fail.
 *
 * Script (one command per line, `#` comments; JOB is a name, `all`, a
 * `prefix*`, or `#N` for the N-th live Job in name order):
 *   reconcile | settle               one pass | passes until nothing to do
 *   fail JOB [reason=R] [message=M]  Failed=True (+FailureTarget)
 *   failtarget JOB [reason=R] [message=M]   FailureTarget=True only
 *   complete JOB | ready JOB | activate JOB | finalize JOB | remove JOB
 *   restart-cleanup direct|foreground   js_reconcile_input.cleanup_direct
 *   old-pods unknown | none | JOB/POD[/deleting|/lagging|/unlabelled]...
 *                                    the older attempts' running pods as
 *                                    the world has them (JOB "-": no
 *                                    job-name label); passed to the core
 *                                    when js_cleanup_wants_old_pods says so;
 *                                    DeletePod marks one deleting
 *   pods none | JOB/POD/ATTEMPT...   the JobSet's running pods with the
 *                                    restart attempt each was made in (of
 *                                    its uid): the highest goes to
 *                                    js_reconcile_input.pods_top_attempt;
 *                                    not passed as old pods (old-pods)
 *   restarts-seen N                  js_reconcile_input.restarts_seen: the
 *                                    highest status.restarts the runtime's
 *                                    watch delivered (default 0, unknown)
 *   old-pods-source list|cache       a quorum LIST each pass (default), or
 *                                    a watch cache that misses the
 *                                    `lagging` pods until the core asks
 *                                    for its confirming LIST
 *   suspend | resume | patch {merge patch on the JobSet} | advance SECONDS
 *   gates Name=true|false,...        change feature gates (a controller
 *                                    restarted with other flags)
 *   delete-service | add-job {Job JSON} | delete-jobset
 *   patch-job JOB {merge patch}      another user edits a Job (labels,
 *                                    ownerReferences)
 *   expect ...                       see js_sim_exec() in sim.c
 *
 * Pure: no I/O, no clock (time only moves with `advance`). Not thread-safe.
 */
#ifndef JS_SIM_H
#define JS_SIM_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/jobset.h"
#include "base/buf.h"
#include "base/common.h"
#include "core/reconcile.h"

struct js_sim;

/** A world holding a copy of `js` (given a uid, namespace and creation time
 * when absent), at time `now` (Unix seconds). Free with js_sim_free. */
struct js_sim *js_sim_new(const struct js_jobset *js, struct js_gates gates, int64_t now);

/** Free the world. NULL is a no-op. Returns NULL. */
struct js_sim *js_sim_free(struct js_sim *sim);

/** When on, every command that changes the world is followed by `settle`
 * (the CLI's mode); scenario files reconcile explicitly. */
void js_sim_set_auto_settle(struct js_sim *sim, bool on);

/**
 * Run one script line. A human-readable account of what happened (plans,
 * status) is appended to `out` (may be NULL).
 * Returns 0; JS_EINVALID for a malformed line; JS_ECONFLICT when an
 * `expect` is not met or an invariant is violated. Then *reterr_msg (if not
 * NULL) receives the reason (caller frees).
 */
JS_WARN_UNUSED int js_sim_exec(struct js_sim *sim, const char *line, struct js_buf *out, char **reterr_msg);

/** The stored JobSet (with the status written so far). Borrowed. */
const struct js_jobset *js_sim_jobset(const struct js_sim *sim);

/** The world's Jobs as a JSON array, in name order. Borrowed. */
const json_t *js_sim_jobs(const struct js_sim *sim);

/** Append a summary of the stored status to `out`. */
void js_sim_print_status(const struct js_sim *sim, struct js_buf *out);

#endif
