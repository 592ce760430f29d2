/*
 * gang.c - the Workload and PodGroups a JobSet with spec.scheduling stands
 * for (KEP-969, gate JobSetWorkloadAwareSchedulingAPI; the groups come from
 * api/sched.h).
 *
 * Lifecycle (KEP-969 "Workload Lifecycle"): created before the Jobs, so the
 * scheduler knows each gang before its first pod; deleted while the JobSet
 * is suspended (a suspended JobSet reserves nothing) and recreated on
 * resume; kept across restarts (the recreated Jobs map to the same groups);
 * removed with the JobSet by garbage collection (owner references).
 *
 * A deleted PodGroup lingers until no pod names it (Kubernetes'
 * podgroup-protection finalizer). Creating its name again meanwhile would
 * be answered AlreadyExists and leave no group behind once it is gone, and
 * nothing we watch changes when it goes; so a resume that finds one still
 * going creates nothing yet and asks to be reconciled again shortly.
 */
#include <string.h>

#include "api/sched.h"
#include "core/core_int.h"

/* How soon to look again while an old Workload or PodGroup is going. */
#define GANG_RECHECK_S 1

static bool podgroup_exists(const struct js_reconcile_input *in, const char *name)
{
	for (size_t i = 0; i < in->n_podgroups; i++)
		if (in->podgroups[i] && strcmp(in->podgroups[i], name) == 0)
			return true;
	return false;
}

void js__gang_run(struct js__ctx *c)
{
	const struct js_jobset *js = c->js;
	const struct js_reconcile_input *in = c->in;
	if (!in->gates.workload_aware_scheduling || !js->spec.scheduling)
		return;
	if ((js->spec.has_suspend && js->spec.suspend) || c->hold) {
		/* Every observed PodGroup of the JobSet goes, not only the
		 * ones the spec names now: there is nothing to keep. */
		for (size_t i = 0; i < in->n_podgroups; i++)
			if (in->podgroups[i])
				js__ctx_action(c, JS_ACTION_DELETE_PODGROUP, in->podgroups[i], NULL, "suspended");
		if (in->workload_exists)
			js__ctx_action(c, JS_ACTION_DELETE_WORKLOAD, js_sched_workload_name(js), NULL, "suspended");
		return;
	}
	if (in->sched_deleting) {
		js__ctx_requeue(c, GANG_RECHECK_S);
		return;
	}
	struct js_sched_groups *g = NULL;
	if (js_sched_groups(js, NULL, &g) < 0) {
		/* Validation refuses such a spec; one that got past it (an
		 * object stored with the gate off) makes no gang. */
		js__ctx_event(c, "Warning", "InvalidScheduling",
			      "spec.scheduling does not check out (see `jobset validate`); no Workload is created");
		return;
	}
	if (!in->workload_exists)
		js__ctx_action(c, JS_ACTION_CREATE_WORKLOAD, js_sched_workload_name(js), js_sched_render_workload(js, g),
			       "gang scheduling");
	for (size_t i = 0; i < g->n; i++)
		if (!podgroup_exists(in, g->items[i].name))
			js__ctx_action(c, JS_ACTION_CREATE_PODGROUP, g->items[i].name,
				       js_sched_render_podgroup(js, g, i), "gang scheduling");
	js_sched_groups_free(g);
}
