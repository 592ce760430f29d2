/*
 * attempts.c - execution attempts (KEP-1282, gate ExecutionAttemptsTracking):
 * status.executionAttempts counts execution lifecycles - the first run, each
 * resume after a suspend and each whole-JobSet restart - and every Job and
 * pod template carries the current value in the annotation
 * jobset.sigs.k8s.io/execution-attempt, so logs can be split per cycle.
 *
 * Level-based like the rest of the core: the counter moves only together
 * with a persisted change that marks the event (the restart counter, the
 * Suspended condition turning False), so a retried reconcile never counts an
 * event twice. The executor writes the status after the Job patches (exec.h),
 * not before as the KEP's controller does; a resume whose patches landed but
 * whose status write did not is recognised by the annotation on the resumed
 * Jobs (KEP "Atomicity of Updates on Resume"). The annotation travels in the
 * same patch that clears spec.suspend, so no pod starts with a stale value.
 *
 * With the gate off nothing here writes anything: an absent counter stays
 * absent, a present one is kept as it is, and no annotation is set (KEP
 * "Feature Gate Disabled Behavior").
 */
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "core/core_int.h"

static bool gate(const struct js__ctx *c)
{
	return c->in->gates.execution_attempts;
}

/* The count after `v`: the field is an int32 anyone allowed to patch the
 * status can set to 2147483647, and one more would wrap (undefined
 * behaviour; in practice a negative count). It stays at the top instead:
 * the counter only labels logs, and a restart past it is refused by the
 * restart counters' own bound (failure.c). Issue 22. */
static int32_t next(int32_t v)
{
	return v < INT32_MAX ? v + 1 : INT32_MAX;
}

static void set(struct js__ctx *c, int32_t v)
{
	struct js_status *st = &c->js->status;
	if (st->has_execution_attempts && st->execution_attempts == v)
		return;
	st->has_execution_attempts = true;
	st->execution_attempts = v;
	c->js->has_status = true;
	c->dirty = true;
}

void js__attempts_init(struct js__ctx *c)
{
	const struct js_jobset *js = c->js;
	if (!gate(c) || js->status.has_execution_attempts)
		return;
	/* KEP §1 "Upgrade Semantics": a JobSet that has restarted keeps
	 * executionAttempts >= restarts, suspended or not. */
	if (js->status.restarts > 0) {
		set(c, js->status.restarts);
		return;
	}
	/* KEP §1 "New Workloads & Pre-Upgrade Suspended Workloads": with no
	 * restarts, a suspended JobSet - never run, or run and suspended
	 * before the gate was on - has no counter while suspended, and the
	 * pass that resumes it starts it at 0 instead of counting the resume
	 * (as upstream's PR #1283). A running one ("Running Workloads")
	 * starts at 0 = restarts. Either way, a resume whose status write was
	 * lost comes back here with the counter still absent and gets 0
	 * again, so it is not counted twice. */
	if (js->spec.has_suspend && js->spec.suspend)
		return;
	set(c, 0);
	c->attempts_first_run = true;
}

void js__attempts_resume(struct js__ctx *c)
{
	const struct js_status *st = &c->js->status;
	if (!gate(c) || (c->js->spec.has_suspend && c->js->spec.suspend) ||
	    !js_jobset_condition_true(c->js, JS_COND_SUSPENDED) || c->attempts_first_run)
		return;
	/* KEP §2: once per suspend -> unsuspend transition. The transition is
	 * over once the status says Suspended=False; until then (InOrder
	 * startup resumes one ReplicatedJob per pass, a failed pass is
	 * retried) a Job that runs again shows it was counted, and its
	 * annotation says as what. */
	bool counted = false;
	int32_t seen = -1;
	for (size_t i = 0; i < c->active.n; i++) {
		const struct js_obsjob *j = c->active.items[i];
		int32_t a;
		if (j->has_suspend && j->suspend)
			continue;
		counted = true;
		if (js__parse_i32(j->execution_attempt, &a) && a > seen)
			seen = a;
	}
	if (!counted)
		set(c, next(st->execution_attempts));
	else if (seen > st->execution_attempts)
		set(c, seen);
}

void js__attempts_restart(struct js__ctx *c)
{
	const struct js_status *st = &c->js->status;
	/* KEP §3: once per whole-JobSet restart, in the status write that
	 * counts the restart itself. */
	if (gate(c))
		set(c, st->has_execution_attempts ? next(st->execution_attempts) : st->restarts);
}

void js__attempts_annotate(const struct js__ctx *c, json_t *patch)
{
	const struct js_status *st = &c->js->status;
	if (!gate(c))
		return;
	/* KEP §4 "Data Propagation": on the Job and on its pod template. */
	char v[16];
	snprintf(v, sizeof(v), "%d", st->has_execution_attempts ? st->execution_attempts : 0);
	json_object_set_new(js_json_path_make(patch, "metadata.annotations"), JS_ANN_EXECUTION_ATTEMPT,
			    json_string(v));
	json_object_set_new(js_json_path_make(patch, "spec.template.metadata.annotations"), JS_ANN_EXECUTION_ATTEMPT,
			    json_string(v));
}
