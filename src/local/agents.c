/*
 * agents.c - in-place restart, the agents' part (docs/in-place-restart.md,
 * KEP-467 behind the gate InPlaceRestart): each pod of a JobSet that
 * restarts in place has an agent here, as on a cluster it has the
 * in-place-restart-agent sidecar, taking the same decisions
 * (core/inplace.h) over the JobSet as the core last wrote it.
 */
#include "local/local_int.h"

#include <stdio.h>

#include "api/render.h"
#include "core/inplace.h"
#include "local/jobctl.h"

/** The JobSet restarts in place here: gate and strategy (KEP-467). */
bool js__agents_in_place(const struct js_local *l)
{
	const struct js_failure_policy *fp = l->js->has_spec ? l->js->spec.failure_policy : NULL;
	return l->opts.gates.in_place_restart && fp && fp->has_restart_strategy &&
	       fp->restart_strategy == JS_RESTART_STRATEGY_IN_PLACE;
}

/* Writing the
 * attempt is setting the pod's annotation (and the downward API's view of
 * it); exiting with the restart code is js_pod_restart_in_place; lifting
 * the barrier is js_pod_release. Returns true when anything changed (the
 * core must look again). */
bool js__agents_step(struct js_local *l, int64_t t)
{
	if (!js__agents_in_place(l))
		return false;
	struct js_inplace_view view = js_inplace_view_of(l->js);
	bool changed = false;
	for (size_t i = 0; i < l->n_jobs; i++) {
		for (size_t k = 0; !l->jobs[i].deleting && k < l->jobs[i].n_pods; k++) {
			struct js_pod *p = l->jobs[i].pods[k];
			struct js_inplace_agent *ag = js_pod_agent(p);
			struct js_pod_info pi;
			js_pod_info(p, &pi);
			if (!ag || js_pod_restarting(p) || pi.stop != JS_POD_STOP_NONE ||
			    js_pod_phase(p) >= JS_JOBCTL_SUCCEEDED)
				continue;
			struct js_inplace_step s;
			if (js_inplace_agent_step(&view, ag, &s) < 0)
				continue;
			if (s.patch) {
				char v[16];
				snprintf(v, sizeof(v), "%d", (int)s.patch_attempt);
				js_pod_set_annotation(p, JS_ANN_IN_PLACE_RESTART_ATTEMPT, v);
				ag->has_attempt = true;
				ag->attempt = s.patch_attempt;
				changed = true;
				if (js_inplace_agent_step(&view, ag, &s) < 0)
					continue;
			}
			if (s.exit) {
				js__report_event(l, "Normal", "InPlaceRestart", "pod", js_pod_name(p),
						 "attempt %d is outdated (previousInPlaceRestartAttempt %d): restarting the "
						 "pod's containers in place", (int)ag->attempt, (int)view.previous);
				js_pod_restart_in_place(p, &l->host, t);
				changed = true;
			} else if (s.lift) {
				js_pod_release(p);
				ag->barrier_active = false;
				changed = true;
				/* Start its containers now: a held pod has nothing
				 * running that would wake the loop. */
				for (int n = 0; n < 8 && js_pod_step(p, &l->host, t); n++)
					;
			}
		}
	}
	return changed;
}
