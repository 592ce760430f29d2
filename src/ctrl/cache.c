/*
 * cache.c - record types of the controller's informers and the change
 * filter. See cache.h.
 */
#include "ctrl/cache.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/codec.h"
#include "base/buf.h"
#include "base/diag.h"
#include "base/json.h"
#include "base/str.h"
#include "ctrl/owner.h"

/* ---- JobSets ---- */

struct jsrec {
	atomic_int refs;
	struct js_cache_jobset pub;
	struct js_jobset *js;
	json_t *status, *labels, *annotations;
	char *key, *rv, *uid, *error;
};

#define JSREC(p) ((struct jsrec *)(uintptr_t)((const char *)(p) - offsetof(struct jsrec, pub)))

static json_t *take_member(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return v && !json_is_null(v) ? json_incref(v) : NULL;
}

/* The compiled failure-policy patterns of record `r`: its predecessor's
 * when that is the same incarnation at the same generation with the same
 * patterns (a status update), else compiled now - once per generation. */
static const struct js_policy *jobset_policy(const struct jsrec *r, const struct js_cache_jobset *prev)
{
	if (!r->js)
		return NULL;
	if (prev && prev->policy && prev->uid && r->uid && strcmp(prev->uid, r->uid) == 0 &&
	    prev->has_generation && r->pub.has_generation && prev->generation == r->pub.generation &&
	    js_policy_fits(prev->policy, r->js))
		return js_policy_ref(prev->policy);
	return js_policy_compile(r->js);
}

static const void *jobset_transform_from(const json_t *obj, const void *prev, int *ret_err)
{
	(void)ret_err;
	json_t *md = json_object_get(obj, "metadata");
	const char *name = js_json_str(md, "name");
	if (!name)
		return NULL;
	struct jsrec *r = js_xcalloc(1, sizeof *r);
	atomic_init(&r->refs, 1);
	const char *ns = js_json_str(md, "namespace");
	r->key = js_buf_format("%s/%s", ns ? ns : "", name);
	const char *rv = js_json_str(md, "resourceVersion");
	r->rv = js_xstrdup(rv ? rv : "");
	r->uid = js_json_str(md, "uid") ? js_xstrdup(js_json_str(md, "uid")) : NULL;
	r->status = take_member(obj, "status");
	r->labels = take_member(md, "labels");
	r->annotations = take_member(md, "annotations");
	json_t *gen = json_object_get(md, "generation");
	r->pub.has_generation = json_is_integer(gen);
	r->pub.generation = json_is_integer(gen) ? (int64_t)json_integer_value(gen) : 0;
	json_t *del = json_object_get(md, "deletionTimestamp");
	r->pub.deleting = del && !json_is_null(del);
	struct js_diag d = {0};
	if (js_codec_decode_jobset(obj, JS_CODEC_LENIENT, &d, &r->js) < 0) {
		r->js = NULL;
		r->error = js_xstrdup(d.n ? d.items[0].message : "cannot decode");
	}
	js_diag_done(&d);
	r->pub.policy = jobset_policy(r, prev);
	r->pub.key = r->key;
	r->pub.rv = r->rv;
	r->pub.uid = r->uid;
	r->pub.js = r->js;
	r->pub.error = r->error;
	r->pub.status = r->status;
	r->pub.labels = r->labels;
	r->pub.annotations = r->annotations;
	return &r->pub;
}

static const void *jobset_transform(const json_t *obj, int *ret_err)
{
	return jobset_transform_from(obj, NULL, ret_err);
}

static const void *jobset_ref(const void *p)
{
	atomic_fetch_add(&JSREC(p)->refs, 1);
	return p;
}

static void jobset_unref(const void *p)
{
	if (!p)
		return;
	struct jsrec *r = JSREC(p);
	if (atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	js_jobset_free(r->js);
	js_policy_unref(r->pub.policy);
	json_decref(r->status);
	json_decref(r->labels);
	json_decref(r->annotations);
	free(r->key);
	free(r->rv);
	free(r->uid);
	free(r->error);
	free(r);
}

/* JSON equality where NULL is an absent value. */
static bool json_eq(const json_t *a, const json_t *b)
{
	return (!a && !b) || (a && b && json_equal(a, b));
}

/* Everything but the status and rv: what the reconcile reads of a JobSet
 * besides its status. The spec is covered by the generation, which the API
 * server bumps on every spec change of a CRD with a status subresource. */
static bool same_inputs(const struct js_cache_jobset *a, const struct js_cache_jobset *b)
{
	return js_str_same(a->uid, b->uid) && a->has_generation == b->has_generation && a->generation == b->generation &&
	       a->deleting == b->deleting && (a->js != NULL) == (b->js != NULL) && json_eq(a->labels, b->labels) &&
	       json_eq(a->annotations, b->annotations);
}

static bool jobset_same(const void *a, const void *b)
{
	const struct js_cache_jobset *x = a, *y = b;
	return same_inputs(x, y) && json_eq(x->status, y->status);
}

const struct js_store_type js_cache_jobset_type = {
	.transform = jobset_transform,
	.ref = jobset_ref,
	.unref = jobset_unref,
	.same = jobset_same,
	.transform_from = jobset_transform_from,
};

/* What the core reads back from a status: every member but
 * replicatedJobsStatus, and of that list only the per-Job restart counts
 * (by ReplicatedJob name). New reference. */
static json_t *read_back(const json_t *status)
{
	static const char *const kept[] = {"jobRestarts", "jobRestartsCountTowardsMax"};
	json_t *s = json_copy(js_json_unconst(status));
	json_t *list = json_object_get(s, "replicatedJobsStatus");
	if (list) {
		json_t *restarts = json_object();
		size_t i;
		json_t *item;
		json_array_foreach(list, i, item) {
			const char *name = js_json_str(item, "name");
			for (size_t k = 0; name && k < JS_ARRAY_SIZE(kept); k++) {
				json_t *v = json_object_get(item, kept[k]);
				if (v)
					json_object_set(js_json_path_make(restarts, name), kept[k], v);
			}
		}
		json_object_del(s, "replicatedJobsStatus");
		if (json_object_size(restarts) > 0)
			json_object_set(s, "replicatedJobsStatus", restarts);
		json_decref(restarts);
	}
	return s;
}

/* True when two statuses differ only in the replicatedJobsStatus counters
 * (or the list itself). The core recomputes those from the spec and the
 * Jobs in every pass before anything reads them (core/reconcile.h: replicatedJobsStatus comes before every
 * decision), so a status write of counters alone gives the next pass
 * nothing new; conditions, restarts, the terminal state and the per-Job
 * restart counts are read back (a restart deletes the old attempt in the
 * pass after restarts grew). */
static bool only_counters_differ(const json_t *a, const json_t *b)
{
	if (!a || !b)
		return false;
	json_t *x = read_back(a), *y = read_back(b);
	bool same = json_equal(x, y);
	json_decref(x);
	json_decref(y);
	return same;
}

bool js_cache_jobset_changed(const struct js_cache_jobset *old, const struct js_cache_jobset *cur,
			     const struct js_cache_written *w)
{
	if (!same_inputs(old, cur))
		return true;
	if (json_eq(old->status, cur->status))
		return false;
	bool ours = w && ((w->rv && strcmp(w->rv, cur->rv) == 0) || (w->status && json_eq(w->status, cur->status)));
	return !ours || !only_counters_differ(old->status, cur->status);
}

/* ---- Jobs: the core's records, typed for the store ---- */

static const void *job_transform(const json_t *obj, int *ret_err)
{
	return js_job_from_json(obj, ret_err);
}

static const void *job_ref(const void *p)
{
	return js_job_ref(p);
}

static void job_unref(const void *p)
{
	js_job_unref(p);
}

static bool job_same(const void *a, const void *b)
{
	return js_job_same(a, b);
}

const struct js_store_type js_cache_job_type = {
	.transform = job_transform,
	.ref = job_ref,
	.unref = job_unref,
	.same = job_same,
};

/* ---- Services and PVCs ---- */

struct childrec {
	atomic_int refs;
	struct js_cache_child pub;
	char key[];
};

#define CHILDREC(p) ((struct childrec *)(uintptr_t)((const char *)(p) - offsetof(struct childrec, pub)))

static const void *child_new(char *jobset_key)
{
	size_t n = jobset_key ? strlen(jobset_key) + 1 : 0;
	struct childrec *r = js_xcalloc(1, sizeof *r + n);
	atomic_init(&r->refs, 1);
	if (jobset_key) {
		memcpy(r->key, jobset_key, n);
		r->pub.jobset_key = r->key;
	}
	free(jobset_key);
	return &r->pub;
}

static const void *service_transform(const json_t *obj, int *ret_err)
{
	(void)ret_err;
	char *key = js_owner_jobset_key(obj);
	return child_new(key ? key : js_owner_label_key(obj));
}

static const void *pvc_transform(const json_t *obj, int *ret_err)
{
	(void)ret_err;
	return child_new(js_owner_label_key(obj));
}

static const void *child_ref(const void *p)
{
	atomic_fetch_add(&CHILDREC(p)->refs, 1);
	return p;
}

static void child_unref(const void *p)
{
	if (p && atomic_fetch_sub(&CHILDREC(p)->refs, 1) == 1)
		free(CHILDREC(p));
}

static bool child_same(const void *a, const void *b)
{
	return js_str_same(((const struct js_cache_child *)a)->jobset_key, ((const struct js_cache_child *)b)->jobset_key);
}

const struct js_store_type js_cache_service_type = {
	.transform = service_transform,
	.ref = child_ref,
	.unref = child_unref,
	.same = child_same,
};
const struct js_store_type js_cache_pvc_type = {
	.transform = pvc_transform,
	.ref = child_ref,
	.unref = child_unref,
	.same = child_same,
};

/* ---- pods: one record of two kinds ----
 *
 * The in-place restart cache (struct js_cache_pod) and the placement cache
 * (struct js_cache_xpod) keep different fields of pods, with one
 * reference-counted record: the public part first, so that the record is
 * read as its public type. */

struct podrec {
	union {
		struct js_cache_pod ip;
		struct js_cache_xpod xp;
	} pub;
	bool placement; /* which member of pub */
	atomic_int refs;
};

static char *dup_or_null(const char *s)
{
	return s ? js_xstrdup(s) : NULL;
}

static struct podrec *podrec_new(bool placement)
{
	struct podrec *r = js_xcalloc(1, sizeof *r);
	r->placement = placement;
	atomic_init(&r->refs, 1);
	return r;
}

static const void *pod_ref(const void *p)
{
	atomic_fetch_add(&((struct podrec *)(uintptr_t)p)->refs, 1);
	return p;
}

static void pod_unref(const void *p)
{
	struct podrec *r = (struct podrec *)(uintptr_t)p;
	if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	if (r->placement) {
		const struct js_cache_xpod *x = &r->pub.xp;
		const char *strs[] = {x->ns, x->name, x->uid, x->owner_uid, x->owner_name, x->index, x->node, x->topology};
		for (size_t i = 0; i < JS_ARRAY_SIZE(strs); i++)
			free((char *)(uintptr_t)strs[i]);
		json_decref((json_t *)(uintptr_t)x->node_selector);
	} else {
		free((char *)(uintptr_t)r->pub.ip.jobset_key);
		free((char *)(uintptr_t)r->pub.ip.name);
		free((char *)(uintptr_t)r->pub.ip.attempt);
	}
	free(r);
}

/* ---- JobSet pods (gate InPlaceRestart) ---- */


static int32_t max_restarts(const json_t *statuses, int32_t m)
{
	size_t i;
	json_t *st;
	json_array_foreach(statuses, i, st)
	{
		json_int_t rc = json_integer_value(json_object_get(st, "restartCount"));
		if (rc > m && rc <= INT32_MAX)
			m = (int32_t)rc;
	}
	return m;
}

static const void *pod_transform(const json_t *obj, int *ret_err)
{
	(void)ret_err;
	const json_t *md = json_object_get(obj, "metadata"), *st = json_object_get(obj, "status");
	const char *ns = js_json_str(md, "namespace");
	const char *js = js_json_str(json_object_get(md, "labels"), JS_LABEL_JOBSET_NAME);
	const char *phase = js_json_str(st, "phase");
	struct podrec *r = podrec_new(false);
	r->pub.ip.jobset_key = ns && js && *js ? js_buf_format("%s/%s", ns, js) : NULL;
	r->pub.ip.name = dup_or_null(js_json_str(md, "name"));
	r->pub.ip.attempt = dup_or_null(js_json_str(json_object_get(md, "annotations"), JS_ANN_IN_PLACE_RESTART_ATTEMPT));
	r->pub.ip.failed = phase && strcmp(phase, "Failed") == 0;
	r->pub.ip.max_restart_count = max_restarts(json_object_get(st, "containerStatuses"),
						max_restarts(json_object_get(st, "initContainerStatuses"), 0));
	return r;
}

static bool pod_same(const void *pa, const void *pb)
{
	const struct js_cache_pod *a = pa, *b = pb;
	return js_str_same(a->jobset_key, b->jobset_key) && js_str_same(a->name, b->name) && js_str_same(a->attempt, b->attempt) &&
	       a->failed == b->failed && a->max_restart_count == b->max_restart_count;
}

const struct js_store_type js_cache_pod_type = {
	.transform = pod_transform,
	.ref = pod_ref,
	.unref = pod_unref,
	.same = pod_same,
};

void js_cache_index_pod_jobset(const json_t *obj, js_store_emit_fn *emit, void *ctx)
{
	const json_t *md = json_object_get(obj, "metadata");
	const char *ns = js_json_str(md, "namespace");
	const char *js = js_json_str(json_object_get(md, "labels"), JS_LABEL_JOBSET_NAME);
	if (!ns || !js || !*js)
		return;
	char *key = js_buf_format("%s/%s", ns, js);
	emit(ctx, key);
	free(key);
}

/* ---- JobSet pods' metadata (restart cleanup "direct") ---- */

/* One allocation per pod, its strings after the struct: a cache of 50,000
 * pods holds 50,000 blocks, not 300,000. */
struct metapodrec {
	struct js_cache_metapod pub; /* first: the record is read as the public type */
	atomic_int refs;
	char strings[];
};

/* Copy `s` (NULL stays NULL) to *at, advancing it. */
static const char *put_str(char **at, const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *d = memcpy(*at, s, n);
	*at += n;
	return d;
}

/* A pod's record. `prev` is the record of this pod the cache holds now
 * (NULL at first sight): its Job name and restart attempt are kept from
 * first sight. The Job controller sets those labels when it creates the pod
 * and never changes them; anyone allowed to edit pods can, and a pod of an
 * older attempt relabelled as the current one would otherwise stop holding
 * its hostname while it still runs (core/cleanup.h; issue 22, found trying
 * it: a new pod of the hostname started beside the old one in its grace
 * period). */
static const void *metapod_transform_from(const json_t *obj, const void *prev, int *ret_err)
{
	(void)ret_err;
	const struct js_cache_metapod *was = prev;
	const json_t *md = json_object_get(obj, "metadata");
	const json_t *lb = json_object_get(md, "labels");
	const char *ns = js_json_str(md, "namespace");
	const char *js = js_json_str(lb, JS_LABEL_JOBSET_NAME);
	const char *job = js_json_str(lb, "batch.kubernetes.io/job-name");
	if (!job)
		job = js_json_str(lb, "job-name");
	const char *attempt = js_json_str(lb, JS_LABEL_RESTART_ATTEMPT);
	if (was) {
		job = was->job_name;
		attempt = was->attempt;
	}
	char *key = ns && js && *js ? js_buf_format("%s/%s", ns, js) : NULL;
	const char *strs[] = {key, js_json_str(lb, JS_LABEL_JOBSET_UID), js_json_str(md, "name"), job, attempt};
	size_t len = 0;
	for (size_t i = 0; i < JS_ARRAY_SIZE(strs); i++)
		len += strs[i] ? strlen(strs[i]) + 1 : 0;
	struct metapodrec *r = js_xcalloc(1, sizeof *r + len);
	atomic_init(&r->refs, 1);
	char *at = r->strings;
	r->pub.jobset_key = put_str(&at, strs[0]);
	r->pub.jobset_uid = put_str(&at, strs[1]);
	r->pub.name = put_str(&at, strs[2]);
	r->pub.job_name = put_str(&at, strs[3]);
	r->pub.attempt = put_str(&at, strs[4]);
	r->pub.deleting = js_json_str(md, "deletionTimestamp") != NULL;
	free(key);
	return r;
}

static const void *metapod_transform(const json_t *obj, int *ret_err)
{
	return metapod_transform_from(obj, NULL, ret_err);
}

static const void *metapod_ref(const void *p)
{
	atomic_fetch_add(&((struct metapodrec *)(uintptr_t)p)->refs, 1);
	return p;
}

static void metapod_unref(const void *p)
{
	struct metapodrec *r = (struct metapodrec *)(uintptr_t)p;
	if (r && atomic_fetch_sub(&r->refs, 1) == 1)
		free(r);
}

static bool metapod_same(const void *pa, const void *pb)
{
	const struct js_cache_metapod *a = pa, *b = pb;
	return js_str_same(a->jobset_key, b->jobset_key) && js_str_same(a->jobset_uid, b->jobset_uid) &&
	       js_str_same(a->name, b->name) && js_str_same(a->job_name, b->job_name) && js_str_same(a->attempt, b->attempt) &&
	       a->deleting == b->deleting;
}

const struct js_store_type js_cache_metapod_type = {
	.transform = metapod_transform,
	.transform_from = metapod_transform_from,
	.ref = metapod_ref,
	.unref = metapod_unref,
	.same = metapod_same,
};

/* ---- pods of exclusive placement ---- */

/* Index of our gate in spec.schedulingGates, -1 none (a gate that is not
 * an object, or has no string name, is not ours). */
static int gate_index(const json_t *spec)
{
	size_t i;
	json_t *g;
	json_array_foreach(json_object_get(spec, "schedulingGates"), i, g)
	{
		const char *name = js_json_str(g, "name");
		if (name && strcmp(name, JS_GATE_EXCLUSIVE_PLACEMENT) == 0)
			return i <= INT32_MAX ? (int)i : -1;
	}
	return -1;
}

/* The controller ownerReference's name, when its uid is `uid`. */
static const char *controller_name(const json_t *obj, const char *uid)
{
	size_t i;
	json_t *ref;
	json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i, ref)
	{
		if (json_is_true(json_object_get(ref, "controller")))
			return js_str_match(js_json_str(ref, "uid"), uid) ? js_json_str(ref, "name") : NULL;
	}
	return NULL;
}

static const void *xpod_transform(const json_t *obj, int *ret_err)
{
	(void)ret_err;
	const json_t *md = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
	const char *phase = js_json_str(json_object_get(obj, "status"), "phase");
	const json_t *sel = json_object_get(spec, "nodeSelector");
	const json_t *del = json_object_get(md, "deletionTimestamp");
	struct podrec *r = podrec_new(true);
	struct js_cache_xpod *x = &r->pub.xp;
	x->ns = dup_or_null(js_json_str(md, "namespace"));
	x->name = dup_or_null(js_json_str(md, "name"));
	x->uid = dup_or_null(js_json_str(md, "uid"));
	x->owner_uid = dup_or_null(js_json_controller_uid(obj));
	x->owner_name = dup_or_null(controller_name(obj, x->owner_uid));
	x->index = dup_or_null(js_json_str(json_object_get(md, "annotations"), JS_ANN_JOB_COMPLETION_INDEX));
	x->node = dup_or_null(js_json_str(spec, "nodeName"));
	x->topology = dup_or_null(js_json_str(json_object_get(md, "annotations"), JS_ANN_EXCLUSIVE_TOPOLOGY));
	x->node_selector = json_is_object(sel) ? json_deep_copy(sel) : NULL;
	x->succeeded = phase && strcmp(phase, "Succeeded") == 0;
	x->terminal = x->succeeded || (phase && strcmp(phase, "Failed") == 0);
	x->deleting = del && !json_is_null(del);
	x->gate_at = gate_index(spec);
	x->elected = js_str_match(js_json_str(json_object_get(md, "annotations"), JS_ANN_PLACEMENT_LEADER),
				  JS_ANN_PLACEMENT_LEADER_ELECTED);
	return r;
}

/* Equal in everything the decisions read: kubelet status heartbeats and
 * other updates of a running pod start no reconcile. */
static bool xpod_same(const void *pa, const void *pb)
{
	const struct js_cache_xpod *a = pa, *b = pb;
	return js_str_same(a->ns, b->ns) && js_str_same(a->name, b->name) && js_str_same(a->uid, b->uid) &&
	       js_str_same(a->owner_uid, b->owner_uid) && js_str_same(a->owner_name, b->owner_name) &&
	       js_str_same(a->index, b->index) && js_str_same(a->node, b->node) &&
	       js_str_same(a->topology, b->topology) && json_eq(a->node_selector, b->node_selector) && a->terminal == b->terminal &&
	       a->deleting == b->deleting && a->gate_at == b->gate_at && a->elected == b->elected;
}

const struct js_store_type js_cache_xpod_type = {
	.transform = xpod_transform,
	.ref = pod_ref,
	.unref = pod_unref,
	.same = xpod_same,
};

struct js_placement_pod js_cache_xpod_view(const struct js_cache_xpod *p, const char *key)
{
	return (struct js_placement_pod){
		.name = p->name,
		.owner_uid = p->owner_uid,
		.completion_index = p->index,
		.node_name = p->node,
		.selector = key ? js_json_str(p->node_selector, key) : NULL,
		.terminal = p->terminal,
		.deleting = p->deleting,
		.gated = p->gate_at >= 0,
		.succeeded = p->succeeded,
		.elected = p->elected,
	};
}
