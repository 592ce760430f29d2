/*
 * suspend.c - the suspend and resume passes (SPEC §11.13) and the
 * controller side of in-place restart (§11.16).
 *
 * Resuming a Job carries the scheduling directives edited on the JobSet
 * while it was suspended (by a user or by Kueue) into the Job's pod
 * template: labels and annotations are merged (the JobSet's values win);
 * nodeSelector, tolerations and schedulingGates are rebuilt from the
 * template, keeping only the entries the JobSet itself adds at creation
 * (exclusive placement's), so what an earlier admission put there (a Kueue
 * flavor's selector) does not survive a re-admission to another flavor.
 * Upstream v0.12.0 merges them instead (SPEC §16.18; its fix is the open
 * PR #1294; docs/differences.md).
 */
#include <stdlib.h>
#include <string.h>

#include "api/template.h"
#include "base/json.h"
#include "core/core_int.h"

#define MSG_MAX_RESTARTS_IN_PLACE "jobset failed due to reaching max number of restarts"

/* Placement entries a Job carries that are the JobSet's own, not the
 * template's: exclusive placement's nodeSelector key and toleration
 * (api/render.c). A rebuild keeps them, as creation adds them. */
static bool own_toleration(const json_t *t)
{
	const char *k = js_json_str(t, "key");
	return k && strcmp(k, JS_TOLERATION_NO_SCHEDULE) == 0;
}

static bool array_has(const json_t *a, const json_t *v)
{
	size_t i;
	json_t *x;
	json_array_foreach(a, i, x) {
		if (json_equal(x, v))
			return true;
	}
	return false;
}

/* The list the Job's field `have` must become: the template's `tmpl`, then
 * the Job's own entries (`own`, may be NULL) that the template lacks. NULL
 * when that is what the Job has (the patch leaves the field alone), JSON
 * null when the field must go. New reference. */
static json_t *rebuild_list(const json_t *have, const json_t *tmpl, bool (*own)(const json_t *))
{
	json_t *out = json_is_array(tmpl) ? json_deep_copy(tmpl) : json_array();
	size_t i;
	json_t *x;
	json_array_foreach(have, i, x) {
		if (own && own(x) && !array_has(out, x))
			json_array_append(out, x);
	}
	size_t n_have = json_array_size(have);
	if ((n_have == 0 && json_array_size(out) == 0) || (json_is_array(have) && json_equal(out, have))) {
		json_decref(out);
		return NULL;
	}
	if (json_array_size(out) == 0) {
		json_decref(out);
		return json_null();
	}
	return out;
}

/* The merge patch that turns the Job's nodeSelector `have` into the
 * template's `tmpl` plus the JobSet's own namespaced-job key: stale keys
 * set to null, or the whole field null when nothing is left. NULL when
 * nothing changes. New reference. */
static json_t *rebuild_selector(const json_t *have, const json_t *tmpl)
{
	json_t *want = json_is_object(tmpl) ? json_deep_copy(tmpl) : json_object();
	const json_t *own = json_object_get(have, JS_NODE_SELECTOR_NAMESPACED_JOB);
	if (own && !json_object_get(want, JS_NODE_SELECTOR_NAMESPACED_JOB))
		json_object_set(want, JS_NODE_SELECTOR_NAMESPACED_JOB, js_json_unconst(own));
	if (json_object_size(want) == 0) {
		json_decref(want);
		return json_object_size(have) > 0 ? json_null() : NULL;
	}
	json_t *patch = json_object();
	const char *k;
	json_t *v;
	json_object_foreach(want, k, v) {
		if (!json_equal(json_object_get(have, k), v))
			json_object_set(patch, k, v);
	}
	json_object_foreach(js_json_unconst(have), k, v) {
		if (!json_object_get(want, k))
			json_object_set_new(patch, k, json_null());
	}
	json_decref(want);
	if (json_object_size(patch) == 0) {
		json_decref(patch);
		return NULL;
	}
	return patch;
}

/* Copy object member `key` of `from` into `to` when it is a non-empty
 * object (a merge patch then merges it key by key, template winning). */
static void merge_map(json_t *to, const char *key, const json_t *from)
{
	json_t *m = json_object_get(from, key);
	if (json_is_object(m) && json_object_size(m) > 0)
		json_object_set_new(to, key, json_deep_copy(m));
}

/* The merge patch that resumes Job `j` of rjob `r` (§11.13.2 b, c). */
static json_t *resume_patch(const struct js_obsjob *j, const struct js_rjob *r)
{
	json_t *patch = json_pack("{s:{s:b}}", "spec", "suspend", 0);
	const char *rname = j->rjob_name;
	if (!rname || !*rname)
		return patch;
	const json_t *tmpl = js_json_path(r->template_, "spec.template");
	const json_t *tspec = json_object_get(tmpl, "spec");
	json_t *meta = json_object(), *spec = json_object();

	merge_map(meta, "labels", json_object_get(tmpl, "metadata"));
	merge_map(meta, "annotations", json_object_get(tmpl, "metadata"));
	json_t *sel = rebuild_selector(j->node_selector, json_object_get(tspec, "nodeSelector"));
	if (sel)
		json_object_set_new(spec, "nodeSelector", sel);
	json_t *tol = rebuild_list(j->tolerations, json_object_get(tspec, "tolerations"), own_toleration);
	if (tol)
		json_object_set_new(spec, "tolerations", tol);
	json_t *gates = rebuild_list(j->scheduling_gates, json_object_get(tspec, "schedulingGates"), NULL);
	if (gates)
		json_object_set_new(spec, "schedulingGates", gates);
	json_t *pt = json_object();
	if (json_object_size(meta))
		json_object_set(pt, "metadata", meta);
	if (json_object_size(spec))
		json_object_set(pt, "spec", spec);
	if (json_object_size(pt))
		json_object_set(json_object_get(patch, "spec"), "template", pt);
	json_decref(pt);
	json_decref(meta);
	json_decref(spec);
	return patch;
}

/* Container `name` of template list `l`, or NULL. */
static const json_t *container_named(const json_t *l, const char *name)
{
	size_t i;
	json_t *x;
	json_array_foreach(l, i, x) {
		const char *n = js_json_str(x, "name");
		if (n && strcmp(n, name) == 0)
			return x;
	}
	return NULL;
}

/* The Job's container list `have` with resources.requests and
 * resources.limits of each container taken from the template container of
 * the same name in `tmpl` (absent there: removed); resources.claims and
 * every other field, and containers the template does not name (a sidecar
 * a mutating webhook added), stay the Job's. NULL when that changes
 * nothing. New reference. */
static json_t *merge_resources(const json_t *have, const json_t *tmpl)
{
	if (!json_is_array(have))
		return NULL;
	json_t *out = json_deep_copy(have);
	size_t i;
	json_t *c;
	json_array_foreach(out, i, c) {
		const char *name = js_json_str(c, "name");
		const json_t *t = name ? container_named(tmpl, name) : NULL;
		if (!json_is_object(c) || !t)
			continue;
		const json_t *tres = json_object_get(t, "resources");
		json_t *res = json_object_get(c, "resources");
		if (!json_is_object(res)) {
			res = json_object();
			json_object_set_new(c, "resources", res);
		}
		static const char *const keys[] = {"requests", "limits"};
		for (size_t k = 0; k < JS_ARRAY_SIZE(keys); k++) {
			const json_t *v = json_object_get(tres, keys[k]);
			if (v)
				json_object_set_new(res, keys[k], json_deep_copy(v));
			else
				json_object_del(res, keys[k]);
		}
		if (json_object_size(res) == 0 && !json_object_get(json_array_get(have, i), "resources"))
			json_object_del(c, "resources");
	}
	if (json_equal(out, have)) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* KEP-1150 "Controller Changes": with MutablePodResourcesForSuspendedJobSets
 * on, the resources edited on the template while suspended are merged into
 * the Job's containers and init containers by container name. A merge patch
 * replaces a list whole, so the patch carries the Job's own lists with only
 * requests and limits changed: whatever else set the Job's containers when
 * it was created (a mutating webhook's env or sidecar, API-server defaults)
 * stays, and the API server sees a change of resources only. Returns true
 * when the patch carries containers (a list that would not change is left
 * out, so a resume without edits needs no API-server gate). */
static bool resume_resources(json_t *patch, const struct js_obsjob *j, const struct js_rjob *r)
{
	static const char *const lists[] = {"containers", "initContainers"};
	const json_t *have[] = {j->containers, j->init_containers};
	const json_t *pod = js_json_path(r->template_, "spec.template.spec");
	bool any = false;
	for (size_t i = 0; i < JS_ARRAY_SIZE(lists); i++) {
		json_t *l = merge_resources(have[i], json_object_get(pod, lists[i]));
		if (!l)
			continue;
		json_object_set_new(js_json_path_make(patch, "spec.template.spec"), lists[i], l);
		any = true;
	}
	return any;
}

static void resume_job(struct js__ctx *c, const struct js_obsjob *j, const struct js_rjob *r)
{
	/* The Job API refuses template changes while startTime is set, so
	 * it is cleared through the status subresource first. */
	if (j->has_start_time)
		js__ctx_action(c, JS_ACTION_PATCH_JOB_STATUS, j->name, json_pack("{s:{s:n}}", "status", "startTime"),
			       "resume: clear startTime");
	json_t *patch = resume_patch(j, r);
	js__attempts_annotate(c, patch); /* KEP-1282 §4 */
	bool res = c->in->gates.mutable_pod_resources && resume_resources(patch, j, r);
	struct js_action *a = js__ctx_action(c, JS_ACTION_PATCH_JOB, j->name, patch, "resume");
	if (res) {
		/* KEP-1150 "Risks and Mitigations": a refusal (the API server
		 * without MutablePodResourcesForSuspendedJobs) is announced,
		 * not only retried, with the API server's error. */
		a->fail_reason = "FailedResourcePropagation";
		a->fail_message = "Failed to propagate mutated resources to child Job";
		a->fail_hint = "Ensure MutablePodResourcesForSuspendedJobs is enabled on the API server.";
	}
}

static void suspend_pass(struct js__ctx *c)
{
	for (size_t i = 0; i < c->active.n; i++) {
		const struct js_obsjob *j = c->active.items[i];
		if (!(j->has_suspend && j->suspend))
			js__ctx_action(c, JS_ACTION_PATCH_JOB, j->name, json_pack("{s:{s:b}}", "spec", "suspend", 1),
				       "suspend");
	}
	(void)js__status_set_condition(c, JS_COND_SUSPENDED, true, "SuspendedJobs", "jobset is suspended", "Normal");
	(void)js__status_set_condition(c, JS_COND_RESTARTING, false, "JobSetSuspended", "jobset is suspended",
				       "Normal");
}

void js__suspend_run(struct js__ctx *c)
{
	const struct js_jobset *js = c->js;
	bool in_order = js__create_in_order(js);

	if (js->spec.has_suspend && js->spec.suspend) {
		suspend_pass(c);
		return;
	}
	for (size_t ri = 0; ri < js->spec.n_replicated_jobs; ri++) {
		const struct js_rjob *r = &js->spec.replicated_jobs[ri];
		if (!js__create_depends_ok(c, ri))
			continue;
		if (in_order && js__create_started(c, ri))
			continue;
		for (size_t i = 0; i < c->active.n; i++) {
			const struct js_obsjob *j = c->active.items[i];
			const char *rn = j->rjob_name;
			if (rn && r->name && strcmp(rn, r->name) == 0 && j->has_suspend && j->suspend)
				resume_job(c, j, r);
		}
		if (in_order) {
			(void)js__status_set_condition(c, JS_COND_SP_IN_PROGRESS, true, "InOrderStartupPolicyInProgress",
						       "in order startup policy is in progress", "Normal");
			return;
		}
	}
	(void)js__status_set_condition(c, JS_COND_SUSPENDED, false, "ResumeJobs", "jobset is resumed", "Normal");
}

int js__suspend_in_place(struct js__ctx *c)
{
	const struct js_jobset *js = c->js;
	struct js_status *st = &c->js->status;
	const struct js_failure_policy *fp = js->spec.failure_policy;
	int32_t max = fp->has_max_restarts ? fp->max_restarts : 0;
	int32_t max_rc = 0, max_att = 0, first = 0;
	size_t n_att = 0;
	bool all_equal = true;

	for (size_t i = 0; i < c->in->n_pods; i++) {
		const struct js_obspod *p = &c->in->pods[i];
		int32_t a;
		if (p->max_restart_count > max_rc)
			max_rc = p->max_restart_count;
		if (p->failed || !p->in_place_attempt)
			continue;
		if (!js__parse_i32(p->in_place_attempt, &a) || a < 0)
			return js__ctx_fail(c, "invalid value for annotation %s, must be non-negative integer",
					    JS_ANN_IN_PLACE_RESTART_ATTEMPT);
		if (n_att == 0)
			first = a;
		all_equal = all_equal && a == first;
		max_att = a > max_att ? a : max_att;
		n_att++;
	}
	if (max_rc > max || (int64_t)max_att - ((int64_t)st->restarts - st->restarts_count_towards_max) > max) {
		js__status_set_failed(c, "ReachedMaxRestarts", MSG_MAX_RESTARTS_IN_PLACE);
		return 0;
	}
	int64_t expected = 0;
	for (size_t ri = 0; ri < js->spec.n_replicated_jobs; ri++) {
		const struct js_rjob *r = &js->spec.replicated_jobs[ri];
		int32_t p, k;
		if (!js_tmpl_i32(r, "parallelism", &p) || !js_tmpl_i32(r, "completions", &k) || p != k)
			return js__ctx_fail(c,
					    "%s: in-place restart requires jobTemplate.spec.completions == "
					    "jobTemplate.spec.parallelism != nil",
					    r->name ? r->name : "");
		expected += (int64_t)js__replicas(r) * p;
	}
	if (n_att > 0 && (int64_t)n_att == expected && all_equal) {
		if (!st->has_current_in_place_restart_attempt || st->current_in_place_restart_attempt != first) {
			st->has_current_in_place_restart_attempt = true;
			st->current_in_place_restart_attempt = first;
			c->dirty = true;
		}
		return 0;
	}
	if (n_att == 0 || max_att == 0)
		return 0;
	int32_t prev = max_att - 1;
	if (st->has_previous_in_place_restart_attempt && prev <= st->previous_in_place_restart_attempt)
		return 0;
	st->has_previous_in_place_restart_attempt = true;
	st->previous_in_place_restart_attempt = prev;
	c->dirty = true;
	return 0;
}
