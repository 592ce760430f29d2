/*
 * observe.c - what one reconcile sees of a JobSet (ctrl/sync_int.h).
 *
 * Observing borrows: the JobSet and its Jobs are the records the informers
 * made at ingest (ctrl/cache.h); a reconcile takes references to them and
 * never decodes or copies them. Jobs are found through the owner-uid index,
 * the Service and the PVCs by key. Only KEP-969's Workload and PodGroups
 * are read from the API server (no cache of them).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/render.h"
#include "api/sched.h"
#include "base/arena.h"
#include "base/buf.h"
#include "base/hmap.h"
#include "base/json.h"
#include "ctrl/owner.h"
#include "ctrl/sync_int.h"

void js__observed_done(struct js_controller *c, struct js__observed *o)
{
	js_informer_unref(c->jobsets, o->rec);
	js_informer_release(c->jobs, o->jobs, o->n_jobs);
	if (c->ipods)
		js_informer_release(c->ipods, o->ipod_recs, o->n_ipods);
	if (c->opods)
		js_informer_release(c->opods, o->opod_recs, o->n_opod_recs);
	json_decref(o->regarding);
	js_hmap_free(o->by_name);
}

const char *js__observed_job_uid(struct js__observed *o, const char *name)
{
	if (!o->by_name) {
		static const struct js_hmap_type borrowed = {.borrow_keys = true};
		o->by_name = js_hmap_new(&borrowed);
		for (size_t i = 0; i < o->n_jobs; i++) {
			const struct js_obsjob *j = o->jobs[i];
			if (!js_hmap_has(o->by_name, j->name)) /* the first of a name wins, as in the core */
				js_hmap_put(o->by_name, j->name, (void *)(uintptr_t)j, NULL);
		}
	}
	const struct js_obsjob *j = js_hmap_get(o->by_name, name);
	return j ? j->uid : NULL;
}

/* PVCs the JobSet asks for that exist: from the label-scoped PVC cache
 * (every PVC we create carries jobset-name, SPEC §8), not a GET each. */
static void observe_pvcs(struct js_controller *c, struct js_arena *a, struct js__observed *o)
{
	json_t *pvcs = js_render_pvcs(o->rec->js);
	size_t i;
	json_t *p;
	o->pvcs = js_arena_calloc(a, json_array_size(pvcs) + 1, sizeof(char *));
	json_array_foreach(pvcs, i, p)
	{
		const char *name = js_json_str(json_object_get(p, "metadata"), "name");
		if (name && js_informer_has(c->pvcs, o->ns, name))
			o->pvcs[o->n_pvcs++] = js_arena_strdup(a, name);
	}
	json_decref(pvcs);
}

/* KEP-969: the JobSet's Workload and PodGroups, read from the API server
 * on each reconcile of a JobSet with spec.scheduling (a GET and a
 * label-scoped LIST, no informer: the scheduling.k8s.io/v1alpha2 API exists
 * only on clusters that enable it, and a cache of an absent resource would
 * never sync; docs/differences.md). Only objects the JobSet controls count.
 * Returns 0 or the read's error. */
static int observe_sched(struct js_controller *c, struct js_arena *a, struct js__observed *o)
{
	struct js_apierr err = {0};
	json_t *obj = NULL;
	const char *uid = o->rec->uid ? o->rec->uid : "";
	int r = js_client_get(c->client, &js_client_res_workloads, o->ns, js_sched_workload_name(o->rec->js), NULL,
			      &obj, &err);
	js__count(c, "GET", r == JS_ENOTFOUND ? 0 : r, &err, r == JS_ENOTFOUND ? 404 : 200);
	if (r < 0 && r != JS_ENOTFOUND)
		goto fail;
	bool ours = r == 0 && js_json_controller_uid(obj) && strcmp(js_json_controller_uid(obj), uid) == 0;
	bool going = ours && js_json_path(obj, "metadata.deletionTimestamp");
	o->workload_exists = ours && !going;
	o->sched_deleting = going;
	json_decref(obj);
	obj = NULL;
	js_apierr_done(&err);
	char *sel = js_buf_format("%s=%s", JS_LABEL_JOBSET_NAME, o->name);
	struct js_list_opts lo = {.label_selector = sel};
	r = js_client_list(c->client, &js_client_res_podgroups, o->ns, &lo, &obj, &err);
	free(sel);
	js__count(c, "GET", r, &err, 200); /* a LIST is a GET on the wire */
	if (r < 0)
		goto fail;
	const json_t *items = json_object_get(obj, "items");
	o->podgroups = js_arena_calloc(a, json_array_size(items) + 1, sizeof(char *));
	for (size_t i = 0; i < json_array_size(items); i++) {
		const json_t *pg = json_array_get(items, i);
		const char *name = json_string_value(js_json_path(pg, "metadata.name"));
		const char *owner = js_json_controller_uid(pg);
		if (!name || !owner || strcmp(owner, uid) != 0)
			continue;
		if (js_json_path(pg, "metadata.deletionTimestamp"))
			o->sched_deleting = true;
		else
			o->podgroups[o->n_podgroups++] = js_arena_strdup(a, name);
	}
	json_decref(obj);
	return 0;
fail:
	js__ctrl_logf(c, JS_CONTROLLER_LOG_ERROR, "jobset '%s/%s': reading its Workload and PodGroups: %s", o->ns,
		      o->name, err.message ? err.message : js_apierr_strerror(r));
	js_apierr_done(&err);
	json_decref(obj);
	return r;
}

/* Jobs labelled with this JobSet's name that it does not control (an
 * orphaned child, JS__CTRL_INDEX_UNOWNED), after its own: the core takes
 * their names as held and says so (JobCreationBlocked), where creating
 * over them would only be answered AlreadyExists. Usually none. */
static void observe_unowned(struct js_controller *c, const char *key, struct js__observed *o)
{
	const void **more = NULL;
	size_t n = js_informer_by_index(c->jobs, JS__CTRL_INDEX_UNOWNED, key, &more);
	if (n == 0) {
		free((void *)more);
		return;
	}
	const void **all = js_xrealloc((void *)o->jobs, (o->n_jobs + n) * sizeof(*all));
	memcpy(all + o->n_jobs, more, n * sizeof(*all));
	free((void *)more);
	o->jobs = all;
	o->n_jobs += n;
}

int js__observe(struct js_controller *c, struct js_arena *a, const char *key, struct js__observed *o)
{
	const char *slash = strchr(key, '/');
	if (!slash || !slash[1] || strchr(slash + 1, '/'))
		return 0;
	o->ns = js_arena_strndup(a, key, (size_t)(slash - key));
	o->name = slash + 1;
	o->rec = js_informer_get(c->jobsets, o->ns, o->name);
	if (!o->rec)
		return 0; /* R1: gone; its children go by garbage collection */
	if (!o->rec->js) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_ERROR, "jobset '%s': cannot decode: %s, ignoring", key,
			      o->rec->error);
		return 0;
	}
	const struct js_jobset *js = o->rec->js;
	if (o->rec->uid)
		o->n_jobs = js_informer_by_index(c->jobs, JS__CTRL_INDEX_OWNER, o->rec->uid, &o->jobs);
	observe_unowned(c, key, o);
	/* Looked up whatever the stored spec says: the core defaults a JobSet
	 * that never met the webhook (enableDNSHostnames absent means true), so
	 * deciding here from the raw field made every reconcile of such a
	 * JobSet create its Service again (answered AlreadyExists; issue 13). */
	o->service_exists = js_informer_has(c->services, o->ns, js_jobset_subdomain(js));
	if (js->has_spec && js->spec.n_volume_claim_policies > 0)
		observe_pvcs(c, a, o);
	if (c->ipods && js__inplace_strategy(js))
		o->n_ipods = js__inplace_observe(c, a, key, &o->ipod_recs, &o->ipods);
	if (c->o.gates.workload_aware_scheduling && js->spec.scheduling && !js->meta.deletion_timestamp &&
	    observe_sched(c, a, o) < 0)
		return -1;
	return 1;
}
