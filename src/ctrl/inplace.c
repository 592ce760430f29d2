/*
 * inplace.c - the pods of the in-place restart protocol (KEP-467, SPEC
 * §11.16, gate InPlaceRestart; docs/in-place-restart.md): a cache of the
 * pods that carry the jobset-name label, indexed by "<namespace>/<JobSet
 * name>", whose changes enqueue their JobSet when that JobSet restarts in
 * place, and the observed-pod records (core/reconcile.h struct js_obspod)
 * one reconcile of such a JobSet reads. The bookkeeping itself is the
 * core's (js__suspend_in_place); this file only observes.
 *
 * The cache exists only with the gate on (upstream, too, watches and
 * indexes pods only then). Its records (ctrl/cache.h struct js_cache_pod)
 * keep per pod only what §11.16 reads: its JobSet, whether it failed, its
 * largest container restart count and the attempt annotation the agent
 * wrote.
 */
#include <stdlib.h>
#include <string.h>

#include "api/jobset.h"
#include "base/arena.h"
#include "base/buf.h"
#include "base/json.h"
#include "core/reconcile.h"
#include "ctrl/ctrl_int.h"

/* ---- event handlers ---- */

/* Enqueue the pod's JobSet, but only when it restarts in place: pods of
 * every other JobSet change nothing the controller reads. */
static void ip_event(struct js_controller *c, const struct js_cache_pod *r)
{
	if (!r->jobset_key)
		return;
	const char *slash = strchr(r->jobset_key, '/');
	char *ns = js_xstrndup(r->jobset_key, (size_t)(slash - r->jobset_key));
	const struct js_cache_jobset *rec = js_informer_get(c->jobsets, ns, slash + 1);
	free(ns);
	bool in_place = rec && js__inplace_strategy(rec->js);
	js_informer_unref(c->jobsets, rec);
	if (in_place)
		js__ctrl_enqueue(c, r->jobset_key, true, "pods");
}

static void ip_add(void *user, const void *rec, const json_t *obj)
{
	(void)obj;
	ip_event(js__ctrl_of(user), rec);
}

static void ip_update(void *user, const void *old_rec, const void *rec, const json_t *obj)
{
	(void)obj;
	(void)old_rec;
	ip_event(js__ctrl_of(user), rec);
}

static void ip_delete(void *user, const void *rec, const json_t *obj, bool unknown)
{
	(void)obj;
	(void)unknown;
	ip_event(js__ctrl_of(user), rec);
}

bool js__inplace_strategy(const struct js_jobset *js)
{
	const struct js_failure_policy *fp = js && js->has_spec ? js->spec.failure_policy : NULL;
	return fp && fp->has_restart_strategy && fp->restart_strategy == JS_RESTART_STRATEGY_IN_PLACE;
}

int js__inplace_informer(struct js_controller *c)
{
	c->ipods_ctx = (struct js__ctrl_cache){c, "JobSet pods"};
	struct js_informer_opts io = {
		.res = &js_client_res_pods,
		.type = &js_cache_pod_type,
		/* The pods of JobSets (the Job controller copies the label from
		 * the pod template), never every pod of the cluster. */
		.label_selector = JS_LABEL_JOBSET_NAME,
		.handlers = {.on_add = ip_add, .on_update = ip_update, .on_delete = ip_delete,
			     .on_error = js__ctrl_cache_error, .user = &c->ipods_ctx},
	};
	int r = js_informer_new(c->client, &io, &c->ipods);
	return r < 0 ? r : js_informer_add_index(c->ipods, JS_CACHE_INDEX_POD_JOBSET, js_cache_index_pod_jobset);
}

size_t js__inplace_observe(struct js_controller *c, struct js_arena *a, const char *key, const void ***ret_recs,
			   struct js_obspod **ret_pods)
{
	*ret_recs = NULL;
	*ret_pods = NULL;
	if (!c->ipods)
		return 0;
	const void **recs = NULL;
	size_t n = js_informer_by_index(c->ipods, JS_CACHE_INDEX_POD_JOBSET, key, &recs);
	struct js_obspod *pods = js_arena_calloc(a, n + 1, sizeof *pods);
	for (size_t i = 0; i < n; i++) {
		const struct js_cache_pod *r = recs[i];
		pods[i] = (struct js_obspod){.name = r->name, .failed = r->failed,
					     .max_restart_count = r->max_restart_count, .in_place_attempt = r->attempt};
	}
	*ret_recs = recs;
	*ret_pods = pods;
	return n;
}
