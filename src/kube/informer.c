/*
 * informer.c - reflector and handlers over a typed store (informer.h,
 * kube/store.h).
 *
 * The reflector thread is the store's only writer. It binds its own cancel
 * flag to the client (js_client_bind_cancel), so a LIST in progress ends
 * when the informer stops, and the watch stream carries the same flag.
 */
#include "kube/informer.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "kube/kube_int.h"
#include "kube/watch.h"

struct js_informer {
	struct js_client *c;
	struct js_informer_opts o;
	char *ns, *lsel, *fsel;
	const struct js_resource *res;
	struct js_store *store;

	pthread_mutex_t lock; /* below: state shared with readers/waiters */
	pthread_cond_t cond;
	bool started, stop, joined, synced;
	uint64_t gen;
	char rv[128];
	struct js_informer_stats st;
	pthread_t thread;
	unsigned seed;

	/* set once by js_informer_stop: cancels the reflector's requests */
	atomic_bool cancel;
	/* the current watch stream, shared with the client's I/O thread;
	 * wcancel ends it (a broken stream, or stop) */
	struct js_buf wbuf;
	bool wdone;
	atomic_bool wcancel;
};

/* ------------------------------------------------------------ lifecycle */

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
	pthread_mutex_init(&inf->lock, NULL);
	js_clock_cond_init(&inf->cond);
	inf->store = js_store_new(opts->type);
	inf->seed = (unsigned)(js_clock_now_ns() ^ (uintptr_t)inf);
	js_buf_init(&inf->wbuf, JS__KUBE_MAX_EVENT);
	atomic_init(&inf->cancel, false);
	atomic_init(&inf->wcancel, false);
	*ret = inf;
	return 0;
}

int js_informer_add_index(struct js_informer *inf, const char *name, js_store_index_fn *fn)
{
	if (inf->started)
		return -EBUSY;
	return js_store_add_index(inf->store, name, fn);
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

int js_informer_stop(struct js_informer *inf)
{
	if (!inf->started || inf->joined)
		return 0;
	if (pthread_equal(pthread_self(), inf->thread))
		return -EDEADLK;
	pthread_mutex_lock(&inf->lock);
	inf->stop = true;
	atomic_store(&inf->cancel, true);
	atomic_store(&inf->wcancel, true);
	pthread_cond_broadcast(&inf->cond);
	pthread_mutex_unlock(&inf->lock);
	js_client_wakeup(inf->c);
	pthread_join(inf->thread, NULL);
	inf->joined = true;
	return 0;
}

int js_informer_free(struct js_informer *inf)
{
	if (!inf)
		return 0;
	if (inf->started && !inf->joined)
		return -EBUSY;
	js_store_free(inf->store);
	js_buf_done(&inf->wbuf);
	pthread_mutex_destroy(&inf->lock);
	pthread_cond_destroy(&inf->cond);
	free(inf->ns);
	free(inf->lsel);
	free(inf->fsel);
	free(inf);
	return 0;
}

/* ------------------------------------------------------------ readers */

int js_informer_wait_synced(struct js_informer *inf, int timeout_ms)
{
	struct timespec dl = js_clock_deadline_ts(timeout_ms);
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
	struct timespec dl = js_clock_deadline_ts(timeout_ms);
	pthread_mutex_lock(&inf->lock);
	while (inf->gen <= gen)
		if (pthread_cond_timedwait(&inf->cond, &inf->lock, &dl) == ETIMEDOUT)
			break;
	int r = inf->gen > gen ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&inf->lock);
	return r;
}

const void *js_informer_get(struct js_informer *inf, const char *ns, const char *name)
{
	char key[512];
	if (js_store_key(ns, name, key, sizeof key) < 0)
		return NULL;
	return js_store_get(inf->store, key);
}

json_t *js_informer_get_json(struct js_informer *inf, const char *ns, const char *name)
{
	if (inf->o.type && inf->o.type != &js_store_type_json)
		return NULL;
	return js_json_unconst(js_informer_get(inf, ns, name));
}

bool js_informer_has(struct js_informer *inf, const char *ns, const char *name)
{
	char key[512];
	return js_store_key(ns, name, key, sizeof key) == 0 && js_store_has(inf->store, key);
}

int js_informer_object_rv(struct js_informer *inf, const char *ns, const char *name, char *buf, size_t len)
{
	char key[512];
	int r = js_store_key(ns, name, key, sizeof key);
	return r < 0 ? JS_ENOTFOUND : js_store_resource_version(inf->store, key, buf, len);
}

size_t js_informer_list(struct js_informer *inf, const void ***ret)
{
	return js_store_list(inf->store, ret);
}

size_t js_informer_by_index(struct js_informer *inf, const char *index, const char *value, const void ***ret)
{
	return js_store_by_index(inf->store, index, value, ret);
}

void js_informer_unref(struct js_informer *inf, const void *rec)
{
	js_store_unref(inf->store, rec);
}

void js_informer_release(struct js_informer *inf, const void **recs, size_t n)
{
	js_store_release(inf->store, recs, n);
}

size_t js_informer_len(struct js_informer *inf)
{
	return js_store_len(inf->store);
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

static void count(struct js_informer *inf, uint64_t *field)
{
	pthread_mutex_lock(&inf->lock);
	(*field)++;
	pthread_mutex_unlock(&inf->lock);
}

/* Store `obj` (borrowed) and call the handler its change asks for. */
static void upsert(struct js_informer *inf, json_t *obj)
{
	struct js_store_change ch;
	if (js_store_upsert(inf->store, obj, &ch) < 0)
		count(inf, &inf->st.rejected); /* no name, or the transform refused it */
	const struct js_informer_handlers *h = &inf->o.handlers;
	switch (ch.op) {
	case JS_STORE_ADDED:
		bump(inf);
		if (h->on_add)
			h->on_add(h->user, ch.rec, obj);
		break;
	case JS_STORE_UPDATED:
		bump(inf);
		if (h->on_update)
			h->on_update(h->user, ch.old, ch.rec, obj);
		break;
	case JS_STORE_SAME:
		bump(inf);
		count(inf, &inf->st.unchanged);
		break;
	case JS_STORE_DELETED: /* the transform refused the new version */
		bump(inf);
		if (h->on_delete)
			h->on_delete(h->user, ch.old, obj, false);
		break;
	case JS_STORE_NONE:
		break;
	}
	js_store_change_done(inf->store, &ch);
}

static void remove_obj(struct js_informer *inf, const json_t *obj)
{
	json_t *md = json_object_get(obj, "metadata");
	const char *name = js_json_str(md, "name");
	char key[512];
	if (!name || js_store_key(js_json_str(md, "namespace"), name, key, sizeof key) < 0)
		return;
	struct js_store_change ch;
	js_store_delete(inf->store, key, &ch);
	if (ch.op == JS_STORE_DELETED) {
		bump(inf);
		if (inf->o.handlers.on_delete)
			inf->o.handlers.on_delete(inf->o.handlers.user, ch.old, obj, false);
	}
	js_store_change_done(inf->store, &ch);
}

static void relist_deleted(void *user, const char *key, const struct js_store_change *ch)
{
	(void)key;
	struct js_informer *inf = user;
	bump(inf);
	if (inf->o.handlers.on_delete)
		inf->o.handlers.on_delete(inf->o.handlers.user, ch->old, NULL, true);
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

/* LIST every page and apply each page as it arrives, so at most one page of
 * JSON is alive at a time; once the list is complete, drop what it did not
 * have. A failed list leaves the store as the applied pages made it; the
 * next attempt starts a new relist. */
static bool stopping(struct js_informer *inf);

/* Tell the owner that `verb` failed (never a cancellation while stopping). */
static void report(struct js_informer *inf, const char *verb, int err, const struct js_apierr *e)
{
	if (inf->o.handlers.on_error && !(err == -ECANCELED && stopping(inf)))
		inf->o.handlers.on_error(inf->o.handlers.user, verb, err, e ? e->message : NULL);
}

static int do_list(struct js_informer *inf)
{
	char *cont = NULL, *rv = NULL;
	int r;
	js_store_relist_begin(inf->store);
	for (;;) {
		struct js_list_opts lo = {.label_selector = inf->lsel, .field_selector = inf->fsel,
					  .continue_token = cont, .limit = inf->o.page_size,
					  .accept = inf->o.metadata_only ? JS_CLIENT_ACCEPT_METADATA_LIST : NULL};
		json_t *page = NULL;
		struct js_apierr e = {0};
		r = js_client_list(inf->c, inf->res, inf->ns, &lo, &page, &e);
		if (r < 0)
			report(inf, "list", r, &e);
		js_apierr_done(&e);
		if (r < 0)
			break;
		json_t *md = json_object_get(page, "metadata");
		free(rv);
		rv = js_json_str(md, "resourceVersion") ? js_xstrdup(js_json_str(md, "resourceVersion")) : NULL;
		free(cont);
		const char *c = js_json_str(md, "continue");
		cont = c && *c ? js_xstrdup(c) : NULL;
		size_t i;
		json_t *o;
		json_array_foreach(json_object_get(page, "items"), i, o) upsert(inf, o);
		json_decref(page);
		if (!cont)
			break;
	}
	free(cont);
	if (r < 0) {
		free(rv);
		return r;
	}
	size_t dropped = js_store_relist_end(inf->store, relist_deleted, inf);
	set_rv(inf, rv);
	free(rv);
	pthread_mutex_lock(&inf->lock);
	inf->st.lists++;
	inf->st.relist_deletes += dropped;
	inf->synced = true;
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
	case JS_WATCH_DELETED:
		remove_obj(inf, ev.object);
		set_rv(inf, rv);
		break;
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

int js_informer_replay(struct js_informer *inf, const char *const *chunks, const size_t *lens, size_t n)
{
	if (inf->started)
		return -EBUSY;
	/* The same framer and line handler as do_watch, minus the transfer. */
	struct js_watch_framer fr;
	js_watch_framer_init(&fr, 0);
	struct line_ctx lc = {.inf = inf};
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++)
		r = js_watch_framer_feed(&fr, chunks[i], lens[i], on_line, &lc);
	js_watch_framer_done(&fr);
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
				    .no_timeout = true, .cancel = &inf->wcancel,
				    .accept = inf->o.metadata_only ? JS_CLIENT_ACCEPT_METADATA : NULL};
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
			/* js_informer_stop set the cancel flag; make sure the I/O
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
	if (r == 0 && resp.code != 200) {
		struct js_apierr e = {0};
		r = js_apierr_decode(resp.code, resp.body, resp.len, 0, &e);
		if (r != JS_EGONE)
			report(inf, "watch", r, &e);
		js_apierr_done(&e);
	}
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
	struct timespec dl = js_clock_deadline_ts(ms);
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
	/* LISTs (the client's verbs) end when the informer stops. */
	js_client_bind_cancel(inf->c, &inf->cancel);
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
