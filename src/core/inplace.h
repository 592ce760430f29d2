/*
 * inplace.h - the decisions of the in-place restart agent (KEP-467, SPEC
 * §13; docs/in-place-restart.md): given what the agent last saw of its
 * JobSet and what it has done so far, what to do next. Pure: no I/O, no
 * clock. src/agent (the in-place-restart-agent binary) feeds it every
 * version of the JobSet its watch delivers and carries out the answer; the
 * controller's side of the protocol is js_reconcile_run's §11.16 step.
 *
 * The protocol, in one paragraph: at start-up the agent writes its pod's
 * attempt (annotation jobset.sigs.k8s.io/in-place-restart-attempt) as
 * status.currentInPlaceRestartAttempt + 1, or 0 when the JobSet has none
 * yet; it then waits at a barrier. The controller raises
 * currentInPlaceRestartAttempt once every pod reports the same attempt -
 * the barrier lifts where pod attempt == current - and raises
 * previousInPlaceRestartAttempt to (largest attempt - 1) while they differ -
 * an agent whose attempt is <= previous exits with its restart exit code,
 * which the pod's restartPolicyRules turn into an in-place restart.
 *
 * Threading: every function is reentrant.
 */
#ifndef JS_CORE_INPLACE_H
#define JS_CORE_INPLACE_H

#include <stdbool.h>
#include <stdint.h>

#include "api/jobset.h"
#include "base/common.h"

/** What the agent reads of its JobSet (SPEC §13). */
struct js_inplace_view {
	bool bypass;       /* annotation jobset.sigs.k8s.io/disable-in-place-restart
			      present, or no failurePolicy, or restartStrategy
			      other than InPlaceRestart */
	bool has_current;  /* status.currentInPlaceRestartAttempt set */
	int32_t current;
	bool has_previous; /* status.previousInPlaceRestartAttempt set */
	int32_t previous;
};

/** The agent's own state; starts zeroed except barrier_active = true. */
struct js_inplace_agent {
	bool has_attempt;  /* the pod's attempt was written (this process) */
	int32_t attempt;
	bool barrier_active;
};

/** What to do, in this order. At most one of patch and exit is set. */
struct js_inplace_step {
	bool patch;            /* write the pod's attempt annotation as
				  `patch_attempt`, then (on success) set
				  has_attempt/attempt and ask again */
	int32_t patch_attempt;
	bool exit;             /* exit with the restart exit code: the pod
				  restarts in place */
	bool lift;             /* lift the barrier (start the probe endpoint,
				  or the worker command), then clear
				  barrier_active */
};

/** The view of decoded JobSet `js` (NULL: none seen yet, which is a
 * bypass-free view with nothing set). Source: SPEC §13 step 1. */
struct js_inplace_view js_inplace_view_of(const struct js_jobset *js);

/**
 * Decide the agent's next step for `view` in state `st` (SPEC §13 steps
 * 1-4): bypass lifts the barrier and nothing else; an agent without an
 * attempt writes current + 1 (0 without current); an agent at or below
 * previous exits; an agent at current lifts its barrier. Returns 0, or
 * JS_EINVALID when current + 1 would overflow int32 (nothing to do then).
 */
JS_WARN_UNUSED int js_inplace_agent_step(const struct js_inplace_view *view, const struct js_inplace_agent *st,
					 struct js_inplace_step *ret);

#endif
