/*
 * create.c - what the controller creates: the headless Service (SPEC §7),
 * PVCs (§8), elastic patches (§11.15) and the missing child Jobs (§6.1),
 * gated by dependsOn (§11.12) and startupPolicy InOrder (§11.11).
 */
#include <stdlib.h>
#include <string.h>

#include "api/render.h"
#include "api/template.h"
#include "base/hmap.h"
#include "base/json.h"
#include "core/core_int.h"

bool js__create_in_order(const struct js_jobset *js)
{
	return js->spec.startup_policy && js->spec.startup_policy->has_order &&
	       js->spec.startup_policy->order == JS_STARTUP_ORDER_IN;
}

bool js__create_started(struct js__ctx *c, size_t ri)
{
	const struct js_rjob *r = &c->js->spec.replicated_jobs[ri];
	const struct js_rjob_status *s = js__rjob_status(c, r->name);
	int64_t n = s ? (int64_t)s->ready + s->succeeded + s->failed : 0;
	return js__replicas(r) == n;
}

bool js__create_depends_ok(struct js__ctx *c, size_t ri)
{
	const struct js_spec *sp = &c->js->spec;
	const struct js_rjob *r = &sp->replicated_jobs[ri];

	for (size_t d = 0; d < r->n_depends_on; d++) {
		const struct js_depends_on *dep = &r->depends_on[d];
		const struct js_rjob_status *s = js__rjob_status(c, dep->name);
		int64_t replicas = 0;
		if (!s)
			return false;
		/* Replicas come from the rjobs seen so far in spec order,
		 * this one included, as upstream's map is filled (§11.11). */
		for (size_t k = 0; k <= ri; k++)
			if (sp->replicated_jobs[k].name && dep->name &&
			    strcmp(sp->replicated_jobs[k].name, dep->name) == 0)
				replicas = js__replicas(&sp->replicated_jobs[k]);
		bool ready = dep->has_status && dep->status == JS_DEPENDS_STATUS_READY;
		int64_t have = ready ? (int64_t)s->ready + s->failed + s->succeeded : s->succeeded;
		if (replicas != have)
			return false;
	}
	return true;
}

static bool pvc_exists(const struct js_reconcile_input *in, const char *name)
{
	for (size_t i = 0; name && i < in->n_pvcs; i++)
		if (in->pvcs[i] && strcmp(in->pvcs[i], name) == 0)
			return true;
	return false;
}

/* §11.15: P and C of the template, only when both present and equal (a
 * template with neither is left alone, SPEC §16.14). */
static void elastic(struct js__ctx *c)
{
	for (size_t i = 0; i < c->active.n; i++) {
		const struct js_obsjob *j = c->active.items[i];
		int ri = js_jobset_find_rjob(c->js, j->rjob_name);
		int32_t p, k;
		if (ri < 0)
			continue;
		const struct js_rjob *r = &c->js->spec.replicated_jobs[ri];
		if (!js_tmpl_i32(r, "parallelism", &p) || !js_tmpl_i32(r, "completions", &k) || p != k)
			continue;
		if (j->has_parallelism && j->parallelism == p && j->has_completions && j->completions == k)
			continue;
		json_t *patch = json_pack("{s:{s:i,s:i}}", "spec", "parallelism", p, "completions", k);
		js__ctx_action(c, JS_ACTION_PATCH_JOB, j->name, patch, "elastic scaling");
	}
}

void js__create_dependents(struct js__ctx *c)
{
	const struct js_jobset *js = c->js;

	if (!c->hold && js_jobset_dns_hostnames(js) && !c->in->service_exists)
		js__ctx_action(c, JS_ACTION_CREATE_SERVICE, js_jobset_subdomain(js), js_render_service(js),
			       "headless service missing");
	if (js->spec.n_volume_claim_policies > 0) {
		json_t *pvcs = js_render_pvcs(js), *pvc;
		size_t i;
		json_array_foreach(pvcs, i, pvc) {
			const char *name = js_json_str(json_object_get(pvc, "metadata"), "name");
			if (!pvc_exists(c->in, name))
				js__ctx_action(c, JS_ACTION_CREATE_PVC, name, json_incref(pvc), "volume claim missing");
		}
		json_decref(pvcs);
	}
	if (c->in->gates.elastic_jobset)
		elastic(c);
}

/* A name is taken by any Job we observe, owned or not: creating over it can
 * only fail (SPEC §6.4), and a Job of an older attempt still being deleted
 * blocks its own name only (§6.1, Recreate). */
static const struct js_obsjob *observed(const struct js__ctx *c, const char *name)
{
	return js_hmap_get(c->by_name, name);
}

static void create_rjob(struct js__ctx *c, size_t ri, struct js_buf *name)
{
	const struct js_rjob *r = &c->js->spec.replicated_jobs[ri];
	int32_t n = js__replicas(r);

	for (int32_t idx = 0; idx < n; idx++) {
		js_buf_clear(name);
		if (js_render_job_name_to(name, c->js, r, idx) < 0)
			continue; /* past 64 MiB: no such name can exist */
		const struct js_obsjob *o = observed(c, js_buf_str(name));
		if (!o && js__cleanup_hold_name(c, js_buf_str(name))) {
			/* An old pod of this hostname may still run (cleanup.h). */
		} else if (!o) {
			/* The body is rendered when the executor needs it
			 * (js_plan_render_job), not held by the plan. */
			struct js_action *a = js__ctx_action(c, JS_ACTION_CREATE_JOB, js_buf_str(name), NULL, "job missing");
			a->rjob = ri;
			a->job_index = idx;
		} else if (!o->owner_uid || !c->js->meta.uid || strcmp(o->owner_uid, c->js->meta.uid) != 0) {
			js__ctx_event(c, "Warning", "JobCreationFailed",
				      js__fmt(c,
					      "job \"%s\" creation failed with error: a Job of that name exists and "
					      "is not owned by this JobSet",
					      js_buf_str(name)));
			if (c->blocked.n++ == 0)
				c->blocked.first = o->name;
		}
	}
}

/*
 * JobCreationBlocked (ours): a Job name of this JobSet is held by a Job it
 * does not control, most often its own child whose controller
 * ownerReference another user removed or set to controller: false. It is
 * never adopted (#1165), and creating over it can only fail, so the JobSet
 * would wait with nothing but JobCreationFailed events (tests/chaos
 * "job-orphaned"). The condition names the Job and what ends the wait;
 * once the Job is deleted or controlled again the name is free or ours and
 * the condition goes False. Set only by a pass that looked at every name
 * it would create.
 */
static void blocked_condition(struct js__ctx *c)
{
	if (c->blocked.n == 0) {
		(void)js__status_set_condition(c, JS_COND_JOB_BLOCKED, false, "JobNamesFree",
					       "no Job name of this JobSet is held by a Job it does not control",
					       "Normal");
		return;
	}
	const char *more = c->blocked.n > 1 ? js__fmt(c, " (and %zu more)", c->blocked.n - 1) : "";
	(void)js__status_set_condition(
		c, JS_COND_JOB_BLOCKED, true, "JobNotControlled",
		js__fmt(c,
			"Job %s%s exists and is not controlled by this JobSet (it has no controller ownerReference "
			"with the JobSet's uid %s), so the JobSet cannot create its own Job of that name; it is "
			"never adopted: delete that Job, or restore its controller ownerReference to this JobSet, "
			"and the JobSet proceeds",
			c->blocked.first, more, c->js->meta.uid ? c->js->meta.uid : "(none)"),
		"Warning");
}

void js__create_jobs(struct js__ctx *c)
{
	const struct js_jobset *js = c->js;
	bool suspended = js->spec.has_suspend && js->spec.suspend;
	bool in_order = !suspended && js__create_in_order(js);

	struct js_buf name;

	if (c->hold)
		return;
	/* BlockingRecreate, or old pods not known yet (cleanup.h). */
	if (js__cleanup_hold_all(c))
		return;
	for (size_t ri = 0; ri < js->spec.n_replicated_jobs; ri++) {
		if (!js__create_depends_ok(c, ri))
			continue;
		if (in_order && js__create_started(c, ri))
			continue;
		js_buf_init(&name, 0);
		create_rjob(c, ri, &name);
		js_buf_done(&name);
		if (in_order) {
			(void)js__status_set_condition(c, JS_COND_SP_IN_PROGRESS, true, "InOrderStartupPolicyInProgress",
						       "in order startup policy is in progress", "Normal");
			blocked_condition(c);
			return;
		}
	}
	blocked_condition(c);
	if (in_order)
		(void)js__status_set_condition(c, JS_COND_SP_COMPLETED, true, "InOrderStartupPolicyCompleted",
					       "in order startup policy has completed", "Normal");
}
