/*
 * oldpods.c - what the controller knows of the pods of older restart
 * attempts, for the restart cleanup "direct" (the rules and the invariant
 * they keep are the core's: core/cleanup.h).
 *
 * A cache, not a LIST per pass: one informer of the JobSet pods that are
 * neither Succeeded nor Failed (label selector jobset.sigs.k8s.io/jobset-name,
 * field selector on status.phase), read as PartialObjectMetadata - the API
 * server sends each pod's metadata only, and the records keep only what
 * the cleanup reads (ctrl/cache.h struct js_cache_metapod), indexed by
 * JobSet. A pass takes the old ones of its JobSet from it (the core's
 * js_cleanup_classify_pod decides which are old). A pod that leaves the
 * cache (deleted, or turned terminal, which the field selector turns into
 * a delete) enqueues its JobSet when it was of an older attempt, so a name
 * it held is created without waiting for a timer; a pod of an older attempt
 * that arrives late enqueues it too, to be deleted.
 *
 * Because a cache can lag (a pod the Job controller created just before its
 * Job was deleted), the core asks once per attempt for a confirming LIST
 * (plan->confirm_old_pods): one label-scoped, paginated (500 a page),
 * metadata-only LIST of the older attempts' non-terminal pods of that
 * JobSet. Its pods are merged into every pass's view until the cache has
 * caught up with the LIST (its resourceVersion at least the LIST's, or 30 s
 * when a resourceVersion is not a number), and the attempt it was made at
 * is passed as js_reconcile_input.old_pods_confirmed_attempt. The record of
 * it is dropped when the JobSet is gone, finished, or no longer restarted.
 *
 * A pod can also leave the cache while it still runs: a user who removes its
 * jobset-name label takes it out of the label-scoped watch, which the API
 * server reports as a delete - carrying the pod's previous state, labels
 * included, so it cannot be told from a real delete or a turn to a terminal
 * phase (and a metadata-only object has no phase). So every pod of an older
 * attempt that leaves the cache while its JobSet needs its old pods is held
 * (ctrl/holdpods.h) with the Job name and attempt the cache recorded at
 * first sight, counted as an old pod by its JobSet's passes, and a GET of it
 * confirms its end: NotFound, another uid, Succeeded or Failed (nearly
 * always at the first check, the pass after it went). A GET is made only
 * when its Job name is not held anyway by an old pod still cached, at most
 * CHECKS_PER_PASS a pass, with backoff for a pod that still runs. Cost: at
 * most one GET per old pod and restart, the count of the DeletePods this
 * mode already sends. Upstream's Foreground deletion waits for such a pod
 * by ownerReference; this keeps its hostname held meanwhile.
 *
 * Threading: the informer's handlers run on its thread; the confirmations
 * are shared by the workers under their own lock (a key is in one worker at
 * a time, but the map is shared).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/hmap.h"
#include "base/json.h"
#include "base/parse.h"
#include "core/cleanup.h"
#include "ctrl/holdpods.h"
#include "ctrl/owner.h"
#include "ctrl/sync_int.h"

#define CONFIRM_PAGE 500
#define FIELD_SELECTOR "status.phase!=Succeeded,status.phase!=Failed"
/* When a resourceVersion is not a number, a LIST's pods are trusted over
 * the cache this long (the cache is seconds behind at worst). */
#define CATCH_UP_NS (30ull * 1000000000ull)
/* A pod this process deleted counts as marked for this long, or until the
 * cache shows the mark: a pass in between would delete it again. */
#define DELETED_NS (30ull * 1000000000ull)
/* GETs of held pods one pass makes at most (the rest wait for the next). */
#define CHECKS_PER_PASS 64

/* A pod the confirming LIST saw. */
struct listed {
	char *name, *job_name;
	bool deleting, attempt_unknown;
};

/* One JobSet's confirmation (key "<namespace>/<name>"). */
struct confirm {
	char *uid;       /* the JobSet incarnation it is for */
	int32_t attempt; /* its status.restarts when listed */
	bool rv_known;
	uint64_t rv;     /* the LIST's resourceVersion */
	uint64_t at_ns;  /* when */
	struct listed *pods; /* until the cache has caught up; NULL after */
	size_t n;
};

struct js__oldpods {
	pthread_mutex_t mu;
	struct js_hmap *confirmed; /* key -> struct confirm */
	struct js_hmap *deleted;   /* "<namespace>/<pod>" -> uint64_t, when this
				      process deleted it (js__oldpods_note_deleted) */
	uint64_t swept_ns;         /* last sweep of `deleted` */
	struct js_holdpods *held;  /* pods that left the cache but may still run (own lock) */
};

static void listed_free(struct confirm *k)
{
	for (size_t i = 0; i < k->n; i++) {
		free(k->pods[i].name);
		free(k->pods[i].job_name);
	}
	free(k->pods);
	k->pods = NULL;
	k->n = 0;
}

static void confirm_free(void *v)
{
	struct confirm *k = v;
	listed_free(k);
	free(k->uid);
	free(k);
}

static bool parse_rv(const char *s, uint64_t *ret)
{
	int64_t v;
	if (!s || js_parse_i64_in(s, strlen(s), 0, INT64_MAX, &v) < 0)
		return false;
	*ret = (uint64_t)v;
	return true;
}

static bool same_str(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* A pod of JobSet `js` (matched by key) that the cleanup must know: of an
 * older attempt, or of an unknown one; never a pod of another incarnation
 * of the same name (its jobset-uid label differs). */
static enum js_cleanup_pod_kind kind_of(const struct js_jobset *js, const struct js_cache_metapod *p)
{
	if (p->jobset_uid && js->meta.uid && strcmp(p->jobset_uid, js->meta.uid) != 0)
		return JS_CLEANUP_POD_CURRENT; /* not this JobSet's: ignored */
	return js_cleanup_classify_pod(js, p->attempt);
}

/* ---- the cache's event handlers ---- */

/* Hold pod `p` of JobSet `js` (key p->jobset_key), last seen as `obj` (may
 * be NULL), until a GET confirms its end. */
static void hold(struct js_controller *c, const struct js_jobset *js, const struct js_cache_metapod *p,
		 const json_t *obj)
{
	const json_t *md = json_object_get(obj, "metadata");
	struct js_holdpod h = {.name = p->name, .uid = js_json_str(md, "uid"), .job_name = p->job_name,
			       .attempt = p->attempt,
			       .deleting = p->deleting || js_json_str(md, "deletionTimestamp")};
	if (!js_holdpods_add(c->oldpods->held, p->jobset_key, js->meta.uid, &h, js_clock_now_ns()))
		js__ctrl_logf(c, JS_CONTROLLER_LOG_ERROR,
			      "pod '%s' of jobset '%s' left the cache of JobSet pods while it may still run, and %zu "
			      "such pods are held already: its hostname is not held",
			      p->name ? p->name : "", p->jobset_key, js_holdpods_count(c->oldpods->held));
}

/* Enqueue the pod's JobSet when the pod is of an older attempt of it: its
 * going may free a name; its arrival is a pod to delete. Its going (`gone`,
 * last seen as `obj`, NULL when unknown) holds it first while the JobSet
 * needs its old pods: the delete does not say whether the pod ended or left
 * the label selection (the API server reports that as a delete carrying the
 * pod's previous state, labels included). */
static void op_event(struct js_controller *c, const struct js_cache_metapod *p, bool gone, const json_t *obj)
{
	char *ns = NULL, *name = NULL;
	if (!p->jobset_key || js_owner_split_key(p->jobset_key, &ns, &name) < 0)
		return;
	const struct js_cache_jobset *rec = js_informer_get(c->jobsets, ns, name);
	free(ns);
	free(name);
	bool old = rec && rec->js && kind_of(rec->js, p) != JS_CLEANUP_POD_CURRENT;
	if (old && gone &&
	    js_cleanup_wants_old_pods(rec->js, c->o.cleanup_direct))
		hold(c, rec->js, p, obj);
	js_informer_unref(c->jobsets, rec);
	if (old)
		js__ctrl_enqueue(c, p->jobset_key, true, "pods");
}

static void op_add(void *user, const void *rec, const json_t *obj)
{
	(void)obj;
	op_event(js__ctrl_of(user), rec, false, NULL);
}

static void op_delete(void *user, const void *rec, const json_t *obj, bool unknown)
{
	(void)unknown;
	op_event(js__ctrl_of(user), rec, true, obj);
}

int js__oldpods_informer(struct js_controller *c)
{
	c->opods_ctx = (struct js__ctrl_cache){c, "JobSet pods' metadata"};
	struct js_informer_opts io = {
		.res = &js_client_res_pods,
		.type = &js_cache_metapod_type,
		.label_selector = JS_LABEL_JOBSET_NAME,
		.field_selector = FIELD_SELECTOR,
		.metadata_only = true,
		/* Updates change nothing the cleanup reads but deletionTimestamp,
		 * which needs no pass: no update handler. */
		.handlers = {.on_add = op_add, .on_delete = op_delete, .on_error = js__ctrl_cache_error,
			     .user = &c->opods_ctx},
	};
	int r = js_informer_new(c->client, &io, &c->opods);
	if (r == 0)
		r = js_informer_add_index(c->opods, JS_CACHE_INDEX_POD_JOBSET, js_cache_index_pod_jobset);
	if (r == 0) {
		static const struct js_hmap_type by_key = {.free_value = confirm_free};
		c->oldpods = js_xcalloc(1, sizeof(*c->oldpods));
		pthread_mutex_init(&c->oldpods->mu, NULL);
		c->oldpods->confirmed = js_hmap_new(&by_key);
		static const struct js_hmap_type times = {.free_value = free};
		c->oldpods->deleted = js_hmap_new(&times);
		c->oldpods->held = js_holdpods_new(NULL);
	}
	return r;
}

void js__oldpods_free(struct js_controller *c)
{
	if (!c->oldpods)
		return;
	js_hmap_free(c->oldpods->confirmed);
	js_hmap_free(c->oldpods->deleted);
	js_holdpods_free(c->oldpods->held);
	pthread_mutex_destroy(&c->oldpods->mu);
	free(c->oldpods);
	c->oldpods = NULL;
}

void js__oldpods_forget(struct js_controller *c, const char *key)
{
	if (!c->oldpods)
		return;
	pthread_mutex_lock(&c->oldpods->mu);
	(void)js_hmap_del(c->oldpods->confirmed, key, NULL);
	pthread_mutex_unlock(&c->oldpods->mu);
	js_holdpods_forget(c->oldpods->held, key);
}

void js__oldpods_note_deleted(struct js_controller *c, const char *ns, const char *pod)
{
	if (!c->oldpods)
		return;
	char *key = js_buf_format("%s/%s", ns, pod);
	uint64_t *at = js_xmalloc(sizeof(*at));
	*at = js_clock_now_ns();
	pthread_mutex_lock(&c->oldpods->mu);
	(void)js_hmap_put(c->oldpods->deleted, key, at, NULL);
	pthread_mutex_unlock(&c->oldpods->mu);
	free(key);
}

/* Drop the deletions older than DELETED_NS, at most every few seconds
 * (under the lock): the map holds what was deleted in the last 30 s. */
static void sweep_deleted(struct js__oldpods *op, uint64_t now)
{
	if (now - op->swept_ns < DELETED_NS / 4)
		return;
	op->swept_ns = now;
	struct js_buf old;
	js_buf_init(&old, 0);
	struct js_hmap_iter it = {0};
	const char *k;
	void *v;
	while (js_hmap_next(op->deleted, &it, &k, &v))
		if (now - *(uint64_t *)v >= DELETED_NS && js_buf_add(&old, k, strlen(k) + 1) < 0)
			break; /* past the ceiling: the rest at the next sweep */
	for (size_t at = 0; at < old.len; at += strlen(old.p + at) + 1)
		(void)js_hmap_del(op->deleted, old.p + at, NULL);
	js_buf_done(&old);
}

/* Deleted by this process within DELETED_NS and not yet marked in the
 * cache (under the lock); forgets it once the cache shows the mark. */
static bool deleted_here(struct js__oldpods *op, const char *ns, const char *pod, bool deleting, uint64_t now)
{
	if (!js_hmap_len(op->deleted))
		return false;
	char *key = js_buf_format("%s/%s", ns, pod);
	uint64_t *at = js_hmap_get(op->deleted, key);
	bool yes = at && !deleting && now - *at < DELETED_NS;
	if (at && deleting)
		(void)js_hmap_del(op->deleted, key, NULL);
	free(key);
	return yes;
}

/* The cache has seen everything the LIST of `k` saw (under the lock). */
static bool caught_up(struct js_controller *c, const struct confirm *k)
{
	char buf[64];
	uint64_t rv;
	js_informer_resource_version(c->opods, buf, sizeof buf);
	if (k->rv_known && parse_rv(buf, &rv))
		return rv >= k->rv;
	return js_clock_now_ns() - k->at_ns >= CATCH_UP_NS;
}

/* What a GET of held pod `p` found. */
static enum js_holdpods_seen check_one(struct js_controller *c, const char *ns, const struct js_holdpod *p)
{
	json_t *pod = NULL;
	struct js_apierr err = {0};
	int r = js_client_get(c->client, &js_client_res_pods, ns, p->name, NULL, &pod, &err);
	js__count(c, "GET", r, &err, 200);
	enum js_holdpods_seen seen = JS_HOLDPODS_ERROR;
	if (r == JS_ENOTFOUND) {
		seen = JS_HOLDPODS_GONE;
	} else if (r < 0) {
		if (!js__aborted(c))
			js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "pod '%s/%s' of an older attempt: GET: %s (retrying)", ns,
				      p->name, js__why(&err, r));
	} else {
		const json_t *md = json_object_get(pod, "metadata");
		const char *uid = js_json_str(md, "uid");
		const char *phase = js_json_str(json_object_get(pod, "status"), "phase");
		if ((p->uid && !same_str(uid, p->uid)) || same_str(phase, "Succeeded") || same_str(phase, "Failed"))
			seen = JS_HOLDPODS_GONE;
		else
			seen = js_json_str(md, "deletionTimestamp") ? JS_HOLDPODS_MARKED : JS_HOLDPODS_RUNNING;
	}
	js_apierr_done(&err);
	json_decref(pod);
	return seen;
}

/* A held pod whose Job name an old pod still in the cache holds: checking
 * it frees nothing while that pod runs. */
static bool name_busy(const struct js_holdpod *p, const struct js_hmap *busy)
{
	return p->job_name && js_hmap_has(busy, p->job_name);
}

/* The held pods of `o`'s JobSet, after a GET of those due (CHECKS_PER_PASS
 * at most); those the cache sees again (`cached`, by name) are no longer
 * held. A pod whose Job name a cached old pod holds anyway (`busy`) is not
 * checked yet: its check could free nothing. Sets o->n_held and
 * o->held_wait_s. */
static size_t held_pods(struct js_controller *c, struct js_arena *a, struct js__observed *o, struct js_hmap *cached,
			struct js_hmap *busy, struct js_holdpod **ret)
{
	const struct js_jobset *js = o->rec->js;
	struct js_holdpods *h = c->oldpods->held;
	struct js_holdpod *v;
	uint64_t wait;
	size_t n = js_holdpods_list(h, o->rec->key, js->meta.uid, a, &v, js_clock_now_ns(), &wait);
	size_t checks = 0;
	for (size_t i = 0; i < n; i++) {
		if (js_hmap_has(cached, v[i].name))
			js_holdpods_drop(h, o->rec->key, v[i].name);
		else if (v[i].due && !name_busy(&v[i], busy) && checks++ < CHECKS_PER_PASS &&
			 !js__aborted(c))
			js_holdpods_checked(h, o->rec->key, v[i].name, check_one(c, o->ns, &v[i]), js_clock_now_ns());
	}
	if (n)
		n = js_holdpods_list(h, o->rec->key, js->meta.uid, a, &v, js_clock_now_ns(), &wait);
	/* When to come back, in seconds rounded up. A check left due by the
	 * per-pass bound (or an abort) is work waiting: at once. A check left
	 * due because an old pod still cached holds its Job name is not: that
	 * pod's end is an event of the pod cache, which reconciles the JobSet,
	 * so a slow look once a second is enough. Coming back at once for it
	 * spun the worker through thousands of empty passes a second for as
	 * long as the other old pods of the Job ran their grace periods (seen
	 * on real nodes by bench/controller/recovery.sh). */
	bool again = false, busy_due = false;
	for (size_t i = 0; i < n; i++) {
		if (!v[i].due)
			continue;
		if (name_busy(&v[i], busy))
			busy_due = true;
		else
			again = true;
	}
	o->n_held = n;
	if (!n || again)
		o->held_wait_s = 0;
	else if (busy_due)
		o->held_wait_s = 1;
	else
		o->held_wait_s = wait == 0 ? 0 : (int64_t)((wait + 999999999ull) / 1000000000ull);
	*ret = v;
	return n;
}

/* The JobSet's pod records, taken from the cache once per pass. */
static void read_records(struct js_controller *c, struct js__observed *o)
{
	if (o->opods_read)
		return;
	o->opods_read = true;
	o->n_opod_recs = js_informer_by_index(c->opods, JS_CACHE_INDEX_POD_JOBSET, o->rec->key, &o->opod_recs);
}

int32_t js__oldpods_top_attempt(struct js_controller *c, struct js__observed *o)
{
	const struct js_jobset *js = o->rec->js;
	read_records(c, o);
	int32_t top = 0;
	for (size_t i = 0; js->meta.uid && i < o->n_opod_recs; i++) {
		const struct js_cache_metapod *p = o->opod_recs[i];
		int64_t v;
		/* Only a pod labelled with this incarnation's uid: a pod of an
		 * earlier JobSet of the same name must not raise the counter. */
		if (same_str(p->jobset_uid, js->meta.uid) && p->attempt &&
		    js_parse_i64_in(p->attempt, strlen(p->attempt), 0, INT32_MAX, &v) == 0 && v > top)
			top = (int32_t)v;
	}
	return top;
}

void js__oldpods_observe(struct js_controller *c, struct js_arena *a, struct js__observed *o,
			 struct js_reconcile_input *in)
{
	const struct js_jobset *js = o->rec->js;
	in->old_pods_cached = true;
	in->old_pods_known = js_informer_has_synced(c->opods);
	in->old_pods_confirmed_attempt = -1;
	read_records(c, o);
	static const struct js_hmap_type borrowed = {.borrow_keys = true};
	struct js_hmap *seen = js_hmap_new(&borrowed), *busy = js_hmap_new(&borrowed);
	for (size_t i = 0; i < o->n_opod_recs; i++) {
		const struct js_cache_metapod *p = o->opod_recs[i];
		if (p->name)
			(void)js_hmap_put(seen, p->name, (void *)(uintptr_t)1, NULL);
		if (p->job_name && kind_of(js, p) != JS_CLEANUP_POD_CURRENT)
			(void)js_hmap_put(busy, p->job_name, (void *)(uintptr_t)1, NULL);
	}
	struct js_holdpod *held;
	size_t n_held = held_pods(c, a, o, seen, busy, &held);
	js_hmap_free(busy);
	uint64_t now = js_clock_now_ns();
	pthread_mutex_lock(&c->oldpods->mu);
	sweep_deleted(c->oldpods, now);
	struct confirm *k = js_hmap_get(c->oldpods->confirmed, o->rec->key);
	if (k && (!same_str(k->uid, js->meta.uid) || k->attempt != js->status.restarts)) {
		(void)js_hmap_del(c->oldpods->confirmed, o->rec->key, NULL); /* another incarnation or attempt */
		k = NULL;
	}
	if (k && k->pods && caught_up(c, k))
		listed_free(k);
	size_t n_listed = k ? k->n : 0;
	struct js_oldpod *v = js_arena_calloc(a, o->n_opod_recs + n_listed + n_held + 1, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; i < o->n_opod_recs; i++) {
		const struct js_cache_metapod *p = o->opod_recs[i];
		enum js_cleanup_pod_kind kind = kind_of(js, p);
		if (kind == JS_CLEANUP_POD_CURRENT || !p->name)
			continue;
		v[n++] = (struct js_oldpod){.name = p->name, .job_name = p->job_name,
					   .deleting = p->deleting || deleted_here(c->oldpods, o->ns, p->name, p->deleting, now),
					   .attempt_unknown = kind == JS_CLEANUP_POD_UNKNOWN};
	}
	/* Held pods: out of the cache, maybe still running (the cache's pods
	 * are not among them). */
	for (size_t i = 0; i < n_held; i++) {
		const struct js_holdpod *p = &held[i];
		enum js_cleanup_pod_kind kind = js_cleanup_classify_pod(js, p->attempt);
		if (kind == JS_CLEANUP_POD_CURRENT || js_hmap_has(seen, p->name))
			continue;
		v[n++] = (struct js_oldpod){.name = p->name, .job_name = p->job_name,
					   .deleting = p->deleting || deleted_here(c->oldpods, o->ns, p->name, p->deleting, now),
					   .attempt_unknown = kind == JS_CLEANUP_POD_UNKNOWN};
		(void)js_hmap_put(seen, p->name, (void *)(uintptr_t)1, NULL);
	}
	/* What the LIST saw and the cache not yet (copied: the entry may be
	 * freed by the next pass while this one still runs). */
	for (size_t i = 0; i < n_listed; i++) {
		const struct listed *l = &k->pods[i];
		if (js_hmap_has(seen, l->name))
			continue;
		v[n++] = (struct js_oldpod){.name = js_arena_strdup(a, l->name),
					   .job_name = l->job_name ? js_arena_strdup(a, l->job_name) : NULL,
					   .deleting = l->deleting, .attempt_unknown = l->attempt_unknown};
	}
	if (k)
		in->old_pods_confirmed_attempt = k->attempt;
	pthread_mutex_unlock(&c->oldpods->mu);
	js_hmap_free(seen);
	in->old_pods = v;
	in->n_old_pods = n;
}

/* Append the pods of one LIST page to `k`. */
static void add_page(struct confirm *k, const struct js_jobset *js, const json_t *page, size_t *cap)
{
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(page, "items"), i, p)
	{
		const json_t *md = json_object_get(p, "metadata");
		const json_t *lb = json_object_get(md, "labels");
		const char *name = js_json_str(md, "name");
		const char *job = js_json_str(lb, "batch.kubernetes.io/job-name");
		if (!job)
			job = js_json_str(lb, "job-name");
		enum js_cleanup_pod_kind kind = js_cleanup_classify_pod(js, js_json_str(lb, JS_LABEL_RESTART_ATTEMPT));
		if (!name || kind == JS_CLEANUP_POD_CURRENT)
			continue;
		if (k->n == *cap) {
			*cap = *cap ? *cap * 2 : 16;
			k->pods = js_xrealloc(k->pods, *cap * sizeof(*k->pods));
		}
		k->pods[k->n++] = (struct listed){.name = js_xstrdup(name), .job_name = job ? js_xstrdup(job) : NULL,
						  .deleting = js_json_str(md, "deletionTimestamp") != NULL,
						  .attempt_unknown = kind == JS_CLEANUP_POD_UNKNOWN};
	}
}

int js__oldpods_confirm(struct js_controller *c, const struct js__observed *o)
{
	const struct js_jobset *js = o->rec->js;
	struct js_buf sel;
	js_buf_init(&sel, 256);
	int r = js_cleanup_old_pods_selector(js, &sel);
	struct confirm *k = js_xcalloc(1, sizeof(*k));
	k->uid = js->meta.uid ? js_xstrdup(js->meta.uid) : NULL;
	k->attempt = js->status.restarts;
	k->at_ns = js_clock_now_ns();
	size_t cap = 0;
	char *cont = NULL;
	struct js_apierr err = {0};
	while (r == 0) {
		struct js_list_opts lo = {.label_selector = js_buf_str(&sel), .field_selector = FIELD_SELECTOR,
					  .limit = CONFIRM_PAGE, .continue_token = cont,
					  .accept = JS_CLIENT_ACCEPT_METADATA_LIST};
		json_t *page = NULL;
		js_apierr_done(&err);
		r = js_client_list(c->client, &js_client_res_pods, o->ns, &lo, &page, &err);
		js__count(c, "GET", r, &err, 200); /* a LIST is a GET on the wire */
		if (r < 0)
			break;
		const json_t *md = json_object_get(page, "metadata");
		if (!cont) /* every page is of the first one's snapshot */
			k->rv_known = parse_rv(js_json_str(md, "resourceVersion"), &k->rv);
		add_page(k, js, page, &cap);
		free(cont);
		const char *next = js_json_str(md, "continue");
		cont = next && *next ? js_xstrdup(next) : NULL;
		json_decref(page);
		if (!cont)
			break;
	}
	free(cont);
	js_buf_done(&sel);
	if (r < 0) {
		if (!js__aborted(c))
			js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO,
				      "jobset '%s/%s': listing the pods of older attempts: %s", o->ns, o->name,
				      js__why(&err, r));
		js_apierr_done(&err);
		confirm_free(k);
		return r;
	}
	js_apierr_done(&err);
	pthread_mutex_lock(&c->oldpods->mu);
	(void)js_hmap_put(c->oldpods->confirmed, o->rec->key, k, NULL);
	pthread_mutex_unlock(&c->oldpods->mu);
	return 0;
}
