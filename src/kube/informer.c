/*
 * informer.c - reflector, indexed store and handlers (informer.h).
 *
 * The store is a jansson object used as a hash map, key -> object ("ns/name"
 * or "name"), and each index is a map value -> {key: true}. Writers are the
 * reflector thread only; readers take the read lock and leave with a new
 * reference, so objects are shared, never copied, and never mutated.
 */
#include "kube/informer.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/json.h"
#include "kube/kube_int.h"
#include "kube/watch.h"

#define MAX_INDEXES 8

struct index {
	char *name;
	js_informer_index_fn *fn;
	json_t *map; /* value -> {key: true} */
};

struct js_informer {
	struct js_client *c;
	struct js_informer_opts o;
	char *ns, *lsel, *fsel;
	const struct js_resource *res;

	pthread_rwlock_t rw;
	json_t *objs;
	struct index idx[MAX_INDEXES];
	size_t nidx;

	pthread_mutex_t lock; /* below: state shared with readers/waiters */
	pthread_cond_t cond;
	bool started, stop, synced;
	uint64_t gen;
	char rv[128];
	struct js_informer_stats st;
	pthread_t thread;
	unsigned seed;

	/* the current watch stream, shared with the client's I/O thread */
	struct js_buf wbuf;
	bool wdone;
	atomic_bool wcancel;
};

/* ------------------------------------------------------------ indexes */

static void index_namespace(const json_t *obj, js_informer_emit_fn *emit, void *ctx)
{
	const char *ns = js_json_str(json_object_get(obj, "metadata"), "namespace");
	emit(ctx, ns ? ns : "");
}

static void index_owner(const json_t *obj, js_informer_emit_fn *emit, void *ctx)
{
	json_t *refs = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
	size_t i;
	json_t *r;
	json_array_foreach(refs, i, r) {
		const char *uid = js_json_str(r, "uid");
		if (uid)
			emit(ctx, uid);
	}
}

struct emit_ctx {
	json_t *map;
	const char *key;
	bool add;
};

static void emit_value(void *ctx, const char *value)
{
	struct emit_ctx *e = ctx;
	json_t *set = json_object_get(e->map, value);
	if (e->add) {
		if (!set) {
			set = json_object();
			json_object_set_new(e->map, value, set);
		}
		json_object_set_new(set, e->key, json_true());
	} else if (set) {
		json_object_del(set, e->key);
		if (json_object_size(set) == 0)
			json_object_del(e->map, value);
	}
}

static void index_update(struct js_informer *inf, const char *key, const json_t *old, const json_t *obj)
{
	for (size_t i = 0; i < inf->nidx; i++) {
		struct emit_ctx e = {.map = inf->idx[i].map, .key = key};
		if (old) {
			e.add = false;
			inf->idx[i].fn(old, emit_value, &e);
		}
		if (obj) {
			e.add = true;
			inf->idx[i].fn(obj, emit_value, &e);
		}
	}
}

/* ------------------------------------------------------------ lifecycle */

static void add_index(struct js_informer *inf, const char *name, js_informer_index_fn *fn)
{
	inf->idx[inf->nidx].name = js_xstrdup(name);
	inf->idx[inf->nidx].fn = fn;
	inf->idx[inf->nidx].map = json_object();
	inf->nidx++;
}

int js_informer_new(struct js_client *c, const struct js_informer_opts *opts, struct js_informer **ret)
{
	if (!opts || !opts->res)
		return JS_EINVALID;
	struct js_informer *inf = js_xcalloc(1, sizeof *inf);
	inf->c = c;
	inf->o = *opts;
	inf->res = opts->res;
	inf->ns = opts->namespace ? js_xstrdup(opts->namespace) : NULL;
	inf->lsel = opts->label_selector ? js_xstrdup(opts->label_selector) : NULL;
	inf->fsel = opts->field_selector ? js_xstrdup(opts->field_selector) : NULL;
	inf->o.namespace = inf->o.label_selector = inf->o.field_selector = NULL;
	if (inf->o.page_size <= 0)
		inf->o.page_size = 500;
	if (inf->o.stall_s <= 0)
		inf->o.stall_s = 90;
	if (inf->o.backoff_initial_ms <= 0)
		inf->o.backoff_initial_ms = 200;
	if (inf->o.backoff_max_ms <= 0)
		inf->o.backoff_max_ms = 30000;
	pthread_rwlock_init(&inf->rw, NULL);
	pthread_mutex_init(&inf->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&inf->cond, &ca);
	pthread_condattr_destroy(&ca);
	inf->objs = json_object();
	inf->seed = (unsigned)(js__kutil_now_ns() ^ (uintptr_t)inf);
	js_buf_init(&inf->wbuf, JS__KUBE_MAX_EVENT);
	atomic_init(&inf->wcancel, false);
	add_index(inf, JS_INFORMER_INDEX_NAMESPACE, index_namespace);
	add_index(inf, JS_INFORMER_INDEX_OWNER_UID, index_owner);
	*ret = inf;
	return 0;
}

int js_informer_add_index(struct js_informer *inf, const char *name, js_informer_index_fn *fn)
{
	if (inf->started)
		return -EBUSY;
	if (inf->nidx == MAX_INDEXES)
		return JS_ETOOLARGE;
	for (size_t i = 0; i < inf->nidx; i++)
		if (strcmp(inf->idx[i].name, name) == 0)
			return JS_EEXISTS;
	add_index(inf, name, fn);
	return 0;
}

static void *run(void *arg);

int js_informer_start(struct js_informer *inf)
{
	if (inf->started)
		return -EBUSY;
	inf->started = true;
	int r = pthread_create(&inf->thread, NULL, run, inf);
	if (r) {
		inf->started = false;
		return -r;
	}
	return 0;
}

struct js_informer *js_informer_free(struct js_informer *inf)
{
	if (!inf)
		return NULL;
	if (inf->started) {
		pthread_mutex_lock(&inf->lock);
		inf->stop = true;
		atomic_store(&inf->wcancel, true);
		pthread_cond_broadcast(&inf->cond);
		pthread_mutex_unlock(&inf->lock);
		js_client_wakeup(inf->c);
		pthread_join(inf->thread, NULL);
	}
	json_decref(inf->objs);
	for (size_t i = 0; i < inf->nidx; i++) {
		free(inf->idx[i].name);
		json_decref(inf->idx[i].map);
	}
	js_buf_done(&inf->wbuf);
	pthread_rwlock_destroy(&inf->rw);
	pthread_mutex_destroy(&inf->lock);
	pthread_cond_destroy(&inf->cond);
	free(inf->ns);
	free(inf->lsel);
	free(inf->fsel);
	free(inf);
	return NULL;
}

/* ------------------------------------------------------------ readers */

static struct timespec deadline_after(int timeout_ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

int js_informer_wait_synced(struct js_informer *inf, int timeout_ms)
{
	struct timespec dl = deadline_after(timeout_ms);
	int r = 0;
	pthread_mutex_lock(&inf->lock);
	while (!inf->synced && r == 0)
		r = pthread_cond_timedwait(&inf->cond, &inf->lock, &dl) == ETIMEDOUT ? -ETIMEDOUT : 0;
	r = inf->synced ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&inf->lock);
	return r;
}

bool js_informer_has_synced(struct js_informer *inf)
{
	pthread_mutex_lock(&inf->lock);
	bool s = inf->synced;
	pthread_mutex_unlock(&inf->lock);
	return s;
}

uint64_t js_informer_generation(struct js_informer *inf)
{
	pthread_mutex_lock(&inf->lock);
	uint64_t g = inf->gen;
	pthread_mutex_unlock(&inf->lock);
	return g;
}

int js_informer_wait_change(struct js_informer *inf, uint64_t gen, int timeout_ms)
{
	struct timespec dl = deadline_after(timeout_ms);
	pthread_mutex_lock(&inf->lock);
	while (inf->gen <= gen)
		if (pthread_cond_timedwait(&inf->cond, &inf->lock, &dl) == ETIMEDOUT)
			break;
	int r = inf->gen > gen ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&inf->lock);
	return r;
}

static int make_key(struct js_buf *b, const char *ns, const char *name)
{
	return ns && *ns ? js_buf_printf(b, "%s/%s", ns, name) : js_buf_puts(b, name);
}

json_t *js_informer_get(struct js_informer *inf, const char *ns, const char *name)
{
	struct js_buf k;
	js_buf_init(&k, 0);
	json_t *o = NULL;
	if (make_key(&k, ns, name) == 0) {
		pthread_rwlock_rdlock(&inf->rw);
		o = json_incref(json_object_get(inf->objs, js_buf_str(&k)));
		pthread_rwlock_unlock(&inf->rw);
	}
	js_buf_done(&k);
	return o;
}

json_t *js_informer_list(struct js_informer *inf)
{
	json_t *a = json_array();
	const char *k;
	json_t *v;
	pthread_rwlock_rdlock(&inf->rw);
	json_object_foreach(inf->objs, k, v) json_array_append(a, v);
	pthread_rwlock_unlock(&inf->rw);
	return a;
}

json_t *js_informer_by_index(struct js_informer *inf, const char *index, const char *value)
{
	json_t *a = json_array();
	pthread_rwlock_rdlock(&inf->rw);
	for (size_t i = 0; i < inf->nidx; i++) {
		if (strcmp(inf->idx[i].name, index) != 0)
			continue;
		json_t *set = json_object_get(inf->idx[i].map, value);
		const char *k;
		json_t *v;
		json_object_foreach(set, k, v) {
			json_t *o = json_object_get(inf->objs, k);
			if (o)
				json_array_append(a, o);
		}
	}
	pthread_rwlock_unlock(&inf->rw);
	return a;
}

size_t js_informer_len(struct js_informer *inf)
{
	pthread_rwlock_rdlock(&inf->rw);
	size_t n = json_object_size(inf->objs);
	pthread_rwlock_unlock(&inf->rw);
	return n;
}

void js_informer_resource_version(struct js_informer *inf, char *buf, size_t len)
{
	pthread_mutex_lock(&inf->lock);
	snprintf(buf, len, "%s", inf->rv);
	pthread_mutex_unlock(&inf->lock);
}

void js_informer_stats(struct js_informer *inf, struct js_informer_stats *ret)
{
	pthread_mutex_lock(&inf->lock);
	*ret = inf->st;
	pthread_mutex_unlock(&inf->lock);
}

/* ------------------------------------------------------------ store writes */

static void set_rv(struct js_informer *inf, const char *rv)
{
	if (!rv || !*rv)
		return;
	pthread_mutex_lock(&inf->lock);
	snprintf(inf->rv, sizeof inf->rv, "%s", rv);
	pthread_mutex_unlock(&inf->lock);
}

static void bump(struct js_informer *inf)
{
	pthread_mutex_lock(&inf->lock);
	inf->gen++;
	pthread_cond_broadcast(&inf->cond);
	pthread_mutex_unlock(&inf->lock);
}

static int obj_key(const json_t *obj, struct js_buf *k)
{
	json_t *md = json_object_get(obj, "metadata");
	const char *name = js_json_str(md, "name");
	if (!name)
		return JS_EINVALID;
	return make_key(k, js_json_str(md, "namespace"), name);
}

/* Insert or replace `obj` (a reference is taken). */
static void upsert(struct js_informer *inf, json_t *obj)
{
	struct js_buf k;
	js_buf_init(&k, 0);
	if (obj_key(obj, &k) < 0) {
		js_buf_done(&k);
		return;
	}
	/* The cache's own trim: managedFields are large and never read. */
	json_object_del(json_object_get(obj, "metadata"), "managedFields");
	pthread_rwlock_wrlock(&inf->rw);
	json_t *old = json_incref(json_object_get(inf->objs, js_buf_str(&k)));
	json_object_set(inf->objs, js_buf_str(&k), obj);
	index_update(inf, js_buf_str(&k), old, obj);
	pthread_rwlock_unlock(&inf->rw);
	bump(inf);
	const struct js_informer_handlers *h = &inf->o.handlers;
	if (old && h->on_update)
		h->on_update(h->user, old, obj);
	else if (!old && h->on_add)
		h->on_add(h->user, obj);
	json_decref(old);
	js_buf_done(&k);
}

static void remove_key(struct js_informer *inf, const char *key, const json_t *final, bool unknown)
{
	pthread_rwlock_wrlock(&inf->rw);
	json_t *old = json_incref(json_object_get(inf->objs, key));
	if (old) {
		index_update(inf, key, old, NULL);
		json_object_del(inf->objs, key);
	}
	pthread_rwlock_unlock(&inf->rw);
	if (old) {
		bump(inf);
		if (inf->o.handlers.on_delete)
			inf->o.handlers.on_delete(inf->o.handlers.user, final ? final : old, unknown);
	}
	json_decref(old);
}

/* ------------------------------------------------------------ list */

static int base_query(struct js_informer *inf, struct js_buf *p, char *sep)
{
	int r = js_client_path(inf->res, inf->ns, NULL, NULL, p);
	*sep = '?';
	if (r == 0 && inf->lsel) {
		r = js_buf_printf(p, "%clabelSelector=", *sep);
		if (r == 0)
			r = js__kutil_escape(p, inf->lsel);
		*sep = '&';
	}
	if (r == 0 && inf->fsel) {
		r = js_buf_printf(p, "%cfieldSelector=", *sep);
		if (r == 0)
			r = js__kutil_escape(p, inf->fsel);
		*sep = '&';
	}
	return r;
}

static int do_list(struct js_informer *inf)
{
	json_t *items = json_array();
	char *cont = NULL, *rv = NULL;
	int r;
	for (;;) {
		struct js_list_opts lo = {.label_selector = inf->lsel, .field_selector = inf->fsel,
					  .continue_token = cont, .limit = inf->o.page_size};
		json_t *page = NULL;
		r = js_client_list(inf->c, inf->res, inf->ns, &lo, &page, NULL);
		if (r < 0)
			break;
		json_array_extend(items, json_object_get(page, "items"));
		json_t *md = json_object_get(page, "metadata");
		free(rv);
		rv = js_json_str(md, "resourceVersion") ? js_xstrdup(js_json_str(md, "resourceVersion")) : NULL;
		free(cont);
		const char *c = js_json_str(md, "continue");
		cont = c && *c ? js_xstrdup(c) : NULL;
		json_decref(page);
		if (!cont)
			break;
	}
	free(cont);
	if (r < 0) {
		json_decref(items);
		free(rv);
		return r;
	}
	/* Apply: upsert what is listed, then drop what is no longer there. */
	json_t *seen = json_object();
	size_t i;
	json_t *o;
	json_array_foreach(items, i, o) {
		struct js_buf k;
		js_buf_init(&k, 0);
		if (obj_key(o, &k) == 0) {
			json_object_set_new(seen, js_buf_str(&k), json_true());
			json_t *cur = js_informer_get(inf, NULL, js_buf_str(&k));
			const char *crv = js_json_str(json_object_get(cur, "metadata"), "resourceVersion");
			const char *nrv = js_json_str(json_object_get(o, "metadata"), "resourceVersion");
			if (!cur || !crv || !nrv || strcmp(crv, nrv) != 0)
				upsert(inf, o);
			json_decref(cur);
		}
		js_buf_done(&k);
	}
	json_t *all = json_object();
	pthread_rwlock_rdlock(&inf->rw);
	json_object_update(all, inf->objs);
	pthread_rwlock_unlock(&inf->rw);
	const char *k;
	json_t *v;
	uint64_t dropped = 0;
	json_object_foreach(all, k, v) {
		if (!json_object_get(seen, k)) {
			remove_key(inf, k, NULL, true);
			dropped++;
		}
	}
	json_decref(all);
	json_decref(seen);
	json_decref(items);
	set_rv(inf, rv);
	free(rv);
	pthread_mutex_lock(&inf->lock);
	inf->st.lists++;
	inf->st.relist_deletes += dropped;
	if (!inf->synced) {
		inf->synced = true;
	}
	inf->gen++;
	pthread_cond_broadcast(&inf->cond);
	pthread_mutex_unlock(&inf->lock);
	return 0;
}

/* ------------------------------------------------------------ watch */

static int on_data(void *user, const char *p, size_t n)
{
	struct js_informer *inf = user;
	pthread_mutex_lock(&inf->lock);
	int r = js_buf_add(&inf->wbuf, p, n);
	pthread_cond_broadcast(&inf->cond);
	pthread_mutex_unlock(&inf->lock);
	return r < 0 ? 1 : 0;
}

static void on_done(void *user)
{
	struct js_informer *inf = user;
	pthread_mutex_lock(&inf->lock);
	inf->wdone = true;
	pthread_cond_broadcast(&inf->cond);
	pthread_mutex_unlock(&inf->lock);
}

struct line_ctx {
	struct js_informer *inf;
	int err;    /* ERROR event code */
	bool got;   /* an event was applied */
};

static int on_line(void *user, const char *line, size_t len)
{
	struct line_ctx *lc = user;
	struct js_informer *inf = lc->inf;
	struct js_watch_event ev;
	if (js_watch_decode(line, len, &ev) < 0)
		return JS_EINVALID;
	int r = 0;
	const char *rv = js_json_str(json_object_get(ev.object, "metadata"), "resourceVersion");
	switch (ev.type) {
	case JS_WATCH_ADDED:
	case JS_WATCH_MODIFIED:
		upsert(inf, ev.object);
		set_rv(inf, rv);
		break;
	case JS_WATCH_DELETED: {
		struct js_buf k;
		js_buf_init(&k, 0);
		if (obj_key(ev.object, &k) == 0) {
			json_object_del(json_object_get(ev.object, "metadata"), "managedFields");
			remove_key(inf, js_buf_str(&k), ev.object, false);
		}
		js_buf_done(&k);
		set_rv(inf, rv);
		break;
	}
	case JS_WATCH_BOOKMARK:
		set_rv(inf, rv);
		break;
	case JS_WATCH_ERROR:
	default:
		lc->err = ev.err ? ev.err : JS_APIERR_EOTHER;
		r = lc->err;
		break;
	}
	pthread_mutex_lock(&inf->lock);
	if (ev.type == JS_WATCH_BOOKMARK)
		inf->st.bookmarks++;
	else if (ev.type != JS_WATCH_ERROR)
		inf->st.events++;
	pthread_mutex_unlock(&inf->lock);
	lc->got = true;
	json_decref(ev.object);
	return r;
}

/* One watch stream. Returns 0 when the server ended it cleanly, JS_EGONE to
 * relist, -ECANCELED when stopping, another negative code on failure;
 * *healthy tells whether the stream delivered anything. */
static int do_watch(struct js_informer *inf, bool *healthy)
{
	struct js_buf p;
	char sep;
	js_buf_init(&p, 0);
	int timeout = inf->o.watch_timeout_s > 0 ? inf->o.watch_timeout_s : 300 + (int)(rand_r(&inf->seed) % 300);
	char rv[128];
	js_informer_resource_version(inf, rv, sizeof rv);
	int r = base_query(inf, &p, &sep);
	if (r == 0)
		r = js_buf_printf(&p, "%cwatch=1&allowWatchBookmarks=true&timeoutSeconds=%d&resourceVersion=", sep,
				  timeout);
	if (r == 0)
		r = js__kutil_escape(&p, rv);
	if (r < 0) {
		js_buf_done(&p);
		return r;
	}
	pthread_mutex_lock(&inf->lock);
	js_buf_clear(&inf->wbuf);
	inf->wdone = false;
	inf->st.watches++;
	bool stopping = inf->stop;
	pthread_mutex_unlock(&inf->lock);
	if (stopping) {
		js_buf_done(&p);
		return -ECANCELED;
	}
	struct js_client_req req = {.method = "GET", .path = js_buf_str(&p), .on_data = on_data,
				    .on_done = on_done, .user = inf, .stall_s = inf->o.stall_s,
				    .no_timeout = true, .cancel = &inf->wcancel};
	struct js_client_xfer *x = NULL;
	r = js_client_submit(inf->c, &req, &x);
	js_buf_done(&p);
	if (r < 0)
		return r;

	struct js_watch_framer fr;
	js_watch_framer_init(&fr, 0);
	struct line_ctx lc = {.inf = inf};
	int stream_err = 0;
	bool cancel_sent = false;
	for (;;) {
		pthread_mutex_lock(&inf->lock);
		/* Once stop has been answered with a cancel, wait for on_done. */
		while (!inf->wbuf.len && !inf->wdone && !(inf->stop && !cancel_sent))
			pthread_cond_wait(&inf->cond, &inf->lock);
		char *chunk = NULL;
		size_t n = inf->wbuf.len;
		if (n)
			chunk = js_buf_take(&inf->wbuf);
		bool done = inf->wdone, stop = inf->stop;
		pthread_mutex_unlock(&inf->lock);
		if (chunk && !stream_err) {
			stream_err = js_watch_framer_feed(&fr, chunk, n, on_line, &lc);
			if (stream_err < 0) {
				/* 410 or a broken stream: end this watch now. */
				atomic_store(&inf->wcancel, true);
				js_client_wakeup(inf->c);
			}
		}
		free(chunk);
		if (done)
			break;
		if (stop && !cancel_sent) {
			/* js_informer_free set the cancel flag; make sure the I/O
			 * thread looks at it, then wait for on_done. */
			js_client_wakeup(inf->c);
			cancel_sent = true;
		}
	}
	js_watch_framer_done(&fr);
	struct js_client_resp resp = {0};
	r = js_client_xfer_wait(x, &resp, NULL, 0);
	atomic_store(&inf->wcancel, false);
	*healthy = lc.got;
	bool stop_now;
	pthread_mutex_lock(&inf->lock);
	stop_now = inf->stop;
	if (r == 0 && resp.code == 200)
		inf->st.watch_ok++;
	pthread_mutex_unlock(&inf->lock);
	if (stop_now) {
		js_client_resp_done(&resp);
		return -ECANCELED;
	}
	if (stream_err < 0) {
		js_client_resp_done(&resp);
		return stream_err;
	}
	if (r == 0 && resp.code != 200)
		r = js_apierr_decode(resp.code, resp.body, resp.len, 0, NULL);
	if (r == -ETIMEDOUT) {
		pthread_mutex_lock(&inf->lock);
		inf->st.stalls++;
		pthread_mutex_unlock(&inf->lock);
	}
	js_client_resp_done(&resp);
	return r;
}

/* Wait `ms` or until stopped. Returns true when stopping. */
static bool pause_ms(struct js_informer *inf, int ms)
{
	struct timespec dl = deadline_after(ms);
	pthread_mutex_lock(&inf->lock);
	while (!inf->stop)
		if (pthread_cond_timedwait(&inf->cond, &inf->lock, &dl) == ETIMEDOUT)
			break;
	bool s = inf->stop;
	pthread_mutex_unlock(&inf->lock);
	return s;
}

static bool stopping(struct js_informer *inf)
{
	pthread_mutex_lock(&inf->lock);
	bool s = inf->stop;
	pthread_mutex_unlock(&inf->lock);
	return s;
}

static void *run(void *arg)
{
	struct js_informer *inf = arg;
	int backoff = inf->o.backoff_initial_ms;
	while (!stopping(inf)) {
		if (do_list(inf) < 0) {
			if (pause_ms(inf, backoff))
				break;
			backoff = backoff * 2 > inf->o.backoff_max_ms ? inf->o.backoff_max_ms : backoff * 2;
			continue;
		}
		backoff = inf->o.backoff_initial_ms;
		for (;;) {
			bool healthy = false;
			int r = do_watch(inf, &healthy);
			if (r == -ECANCELED && stopping(inf))
				return NULL;
			if (r == JS_EGONE) {
				pthread_mutex_lock(&inf->lock);
				inf->st.relists_gone++;
				pthread_mutex_unlock(&inf->lock);
				break;
			}
			if (healthy)
				backoff = inf->o.backoff_initial_ms;
			if (r == 0)
				continue; /* server-side timeout: resume at once */
			pthread_mutex_lock(&inf->lock);
			inf->st.watch_errors++;
			pthread_mutex_unlock(&inf->lock);
			if (pause_ms(inf, backoff))
				return NULL;
			backoff = backoff * 2 > inf->o.backoff_max_ms ? inf->o.backoff_max_ms : backoff * 2;
		}
	}
	return NULL;
}
