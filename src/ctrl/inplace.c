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
 * indexes pods only then). It keeps per pod only what §11.16 reads: its
 * JobSet, whether it failed, its largest container restart count and the
 * attempt annotation the agent wrote.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api/jobset.h"
#include "base/arena.h"
#include "base/buf.h"
#include "base/json.h"
#include "core/reconcile.h"
#include "ctrl/ctrl_int.h"

/* Index of the cache: "<namespace>/<value of the jobset-name label>". */
#define INDEX_JOBSET "jobset"

struct iprec {
	atomic_int refs;
	char *key;     /* "<namespace>/<JobSet name>", or NULL without a namespace */
	char *name;    /* pod name */
	char *attempt; /* JS_ANN_IN_PLACE_RESTART_ATTEMPT, or NULL */
	bool failed;
	int32_t max_restart_count;
};

static char *dup_or_null(const char *s)
{
	return s ? js_xstrdup(s) : NULL;
}

static int32_t max_restarts(const json_t *statuses, int32_t m)
{
	size_t i;
	json_t *s;
	json_array_foreach(statuses, i, s)
	{
		json_int_t rc = json_integer_value(json_object_get(s, "restartCount"));
		if (rc > m && rc <= INT32_MAX)
			m = (int32_t)rc;
	}
	return m;
}

static const void *ip_transform(const json_t *obj, int *ret_err)
{
	(void)ret_err;
	const json_t *md = json_object_get(obj, "metadata"), *st = json_object_get(obj, "status");
	const char *ns = js_json_str(md, "namespace");
	const char *js = js_json_str(json_object_get(md, "labels"), JS_LABEL_JOBSET_NAME);
	const char *phase = js_json_str(st, "phase");
	struct iprec *r = js_xcalloc(1, sizeof *r);
	atomic_init(&r->refs, 1);
	r->key = ns && js ? js_buf_format("%s/%s", ns, js) : NULL;
	r->name = dup_or_null(js_json_str(md, "name"));
	r->attempt = dup_or_null(js_json_str(json_object_get(md, "annotations"), JS_ANN_IN_PLACE_RESTART_ATTEMPT));
	r->failed = phase && strcmp(phase, "Failed") == 0;
	r->max_restart_count = max_restarts(json_object_get(st, "containerStatuses"),
					    max_restarts(json_object_get(st, "initContainerStatuses"), 0));
	return r;
}

static const void *ip_ref(const void *p)
{
	atomic_fetch_add(&((struct iprec *)(uintptr_t)p)->refs, 1);
	return p;
}

static void ip_unref(const void *p)
{
	struct iprec *r = (struct iprec *)(uintptr_t)p;
	if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	free(r->key);
	free(r->name);
	free(r->attempt);
	free(r);
}

static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Equal in everything §11.16 reads: the kubelet's other status updates
 * start no reconcile. */
static bool ip_same(const void *pa, const void *pb)
{
	const struct iprec *a = pa, *b = pb;
	return str_eq(a->key, b->key) && str_eq(a->name, b->name) && str_eq(a->attempt, b->attempt) &&
	       a->failed == b->failed && a->max_restart_count == b->max_restart_count;
}

static const struct js_store_type ip_type = {ip_transform, ip_ref, ip_unref, ip_same};

static void index_jobset(const json_t *obj, js_store_emit_fn *emit, void *ctx)
{
	const json_t *md = json_object_get(obj, "metadata");
	const char *ns = js_json_str(md, "namespace");
	const char *js = js_json_str(json_object_get(md, "labels"), JS_LABEL_JOBSET_NAME);
	if (!ns || !js)
		return;
	char *key = js_buf_format("%s/%s", ns, js);
	emit(ctx, key);
	free(key);
}

/* ---- event handlers ---- */

/* Enqueue the pod's JobSet, but only when it restarts in place: pods of
 * every other JobSet change nothing the controller reads. */
static void ip_event(struct js_controller *c, const struct iprec *r)
{
	if (!r->key)
		return;
	const char *slash = strchr(r->key, '/');
	char *ns = js_xstrndup(r->key, (size_t)(slash - r->key));
	const struct js_cache_jobset *rec = js_informer_get(c->jobsets, ns, slash + 1);
	free(ns);
	bool in_place = rec && js__inplace_strategy(rec->js);
	js_informer_unref(c->jobsets, rec);
	if (in_place)
		js__ctrl_enqueue(c, r->key, true, "pods");
}

static void ip_add(void *user, const void *rec, const json_t *obj)
{
	(void)obj;
	ip_event(user, rec);
}

static void ip_update(void *user, const void *old_rec, const void *rec, const json_t *obj)
{
	(void)obj;
	(void)old_rec;
	ip_event(user, rec);
}

static void ip_delete(void *user, const void *rec, const json_t *obj, bool unknown)
{
	(void)obj;
	(void)unknown;
	ip_event(user, rec);
}

static void ip_cache_error(void *user, const char *verb, int err, const char *msg)
{
	struct js_controller *c = user;
	if (!atomic_load(&c->stopping))
		js__ctrl_logf(c, JS_CONTROLLER_LOG_ERROR, "cache of JobSet pods: %s failed: %s (retrying)", verb,
			      msg ? msg : js_apierr_strerror(err));
}

bool js__inplace_strategy(const struct js_jobset *js)
{
	const struct js_failure_policy *fp = js && js->has_spec ? js->spec.failure_policy : NULL;
	return fp && fp->has_restart_strategy && fp->restart_strategy == JS_RESTART_STRATEGY_IN_PLACE;
}

int js__inplace_informer(struct js_controller *c)
{
	struct js_informer_opts io = {
		.res = &js_client_res_pods,
		.type = &ip_type,
		/* The pods of JobSets (the Job controller copies the label from
		 * the pod template), never every pod of the cluster. */
		.label_selector = JS_LABEL_JOBSET_NAME,
		.handlers = {.on_add = ip_add, .on_update = ip_update, .on_delete = ip_delete,
			     .on_error = ip_cache_error, .user = c},
	};
	int r = js_informer_new(c->client, &io, &c->ipods);
	return r < 0 ? r : js_informer_add_index(c->ipods, INDEX_JOBSET, index_jobset);
}

size_t js__inplace_observe(struct js_controller *c, struct js_arena *a, const char *key, const void ***ret_recs,
			   struct js_obspod **ret_pods)
{
	*ret_recs = NULL;
	*ret_pods = NULL;
	if (!c->ipods)
		return 0;
	const void **recs = NULL;
	size_t n = js_informer_by_index(c->ipods, INDEX_JOBSET, key, &recs);
	struct js_obspod *pods = js_arena_calloc(a, n + 1, sizeof *pods);
	for (size_t i = 0; i < n; i++) {
		const struct iprec *r = recs[i];
		pods[i] = (struct js_obspod){.name = r->name, .failed = r->failed,
					     .max_restart_count = r->max_restart_count, .in_place_attempt = r->attempt};
	}
	*ret_recs = recs;
	*ret_pods = pods;
	return n;
}
