/*
 * recorder.c - events.k8s.io/v1 event recorder (recorder.h): a bounded
 * queue (a ring of queue_max items) and one sender thread.
 */
#include "kube/recorder.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/hmap.h"
#include "base/json.h"
#include "kube/apierr.h"
#include "kube/kube_int.h"

#define NOTE_MAX JS_RECORDER_NOTE_MAX
#define SERIES_WINDOW_NS (6ull * 60ull * 1000000000ull)
#define SERIES_CACHE_MAX 4096
#define QUEUE_MAX_DEFAULT 1000

/* One queued event: owned copies of what the write needs. */
struct item {
	json_t *regarding; /* apiVersion, kind, metadata {name, namespace, uid, resourceVersion} */
	char *type, *reason, *action, *note;
	uint64_t wall; /* when it was recorded, ns since the epoch */
};

struct js_recorder {
	struct js_client *c;
	char *controller, *instance;
	void (*on_error)(void *user, const char *reason, int err, const char *message);
	void *user;

	pthread_mutex_t lock;   /* guards everything below */
	pthread_cond_t cond;    /* CLOCK_MONOTONIC; queue and progress changes */
	struct item **ring;
	size_t cap, head, len;  /* the queue: ring[head], ... (len items) */
	bool in_flight;         /* the sender is writing one */
	bool stopping;          /* shutdown begun: no new events */
	bool drop_rest;         /* the drain ran out: drop what is queued */
	bool shutting;          /* a js_recorder_shutdown is running or ran */
	bool joined;            /* ... and has joined the sender */
	int shutdown_result;
	uint64_t seq_queued, seq_done; /* events accepted; of those, handled */
	struct js_recorder_stats st;
	pthread_t thread;
	atomic_bool cancel;     /* bound to the sender's requests */

	struct js_hmap *series; /* isomorphic key -> struct series; sender thread only */
};

/* The first Event of a series of repeats. */
struct series {
	char *name, *ns;
	uint64_t first; /* wall ns */
	int64_t count;
};

static void series_free(void *p)
{
	struct series *s = p;
	free(s->name);
	free(s->ns);
	free(s);
}

static const struct js_hmap_type series_type = {.free_value = series_free};

static void item_free(struct item *it)
{
	if (!it)
		return;
	json_decref(it->regarding);
	free(it->type);
	free(it->reason);
	free(it->action);
	free(it->note);
	free(it);
}

/* Write one event: a new Event, or a merge patch of the series of its
 * first occurrence within the window. Returns 0 or the error; `err` says
 * what the API said. */
static int record(struct js_recorder *r, const struct item *it, struct js_apierr *err)
{
	const json_t *regarding = it->regarding;
	json_t *md = json_object_get(regarding, "metadata");
	const char *name = js_json_str(md, "name"), *ns = js_json_str(md, "namespace");
	const char *uid = js_json_str(md, "uid");
	const char *evns = ns && *ns ? ns : "default";
	uint64_t wall = it->wall;
	char now[48];
	js__kutil_microtime(wall, now);

	struct js_buf key;
	js_buf_init(&key, 0);
	if (js_buf_printf(&key, "%s/%s/%s\x1f%s\x1f%s\x1f%s\x1f%s", evns, name, uid ? uid : "", it->type, it->reason,
			  it->action, it->note) < 0) {
		js_buf_done(&key);
		return JS_ETOOLARGE;
	}
	/* A repeat within the window: bump the series of the first Event. */
	struct series *s = js_hmap_get(r->series, js_buf_str(&key));
	if (s && wall - s->first > SERIES_WINDOW_NS) {
		js_hmap_del(r->series, js_buf_str(&key), NULL);
		s = NULL;
	}
	int rc;
	if (s) {
		json_t *patch = json_pack("{s:{s:I,s:s}}", "series", "count", (json_int_t)(s->count + 1),
					  "lastObservedTime", now);
		rc = js_client_patch(r->c, &js_client_res_events, s->ns, s->name, JS_PATCH_MERGE, patch, NULL, NULL,
				     err);
		json_decref(patch);
		if (rc == 0)
			s->count++;
		if (rc != JS_ENOTFOUND) {
			js_buf_done(&key);
			return rc;
		}
		/* The Event expired (events have a TTL): start afresh. */
		js_apierr_done(err);
		js_hmap_del(r->series, js_buf_str(&key), NULL);
	}

	struct js_buf evname;
	js_buf_init(&evname, 0);
	if (js_buf_printf(&evname, "%s.%llx", name, (unsigned long long)wall) < 0) {
		js_buf_done(&evname);
		js_buf_done(&key);
		return JS_ETOOLARGE;
	}
	json_t *reg = json_pack("{s:s,s:s}", "kind", js_json_str(regarding, "kind") ? js_json_str(regarding, "kind") : "",
				"name", name);
	const char *av = js_json_str(regarding, "apiVersion");
	const char *rv = js_json_str(md, "resourceVersion");
	if (av)
		json_object_set_new(reg, "apiVersion", json_string(av));
	if (ns)
		json_object_set_new(reg, "namespace", json_string(ns));
	if (uid)
		json_object_set_new(reg, "uid", json_string(uid));
	if (rv)
		json_object_set_new(reg, "resourceVersion", json_string(rv));
	json_t *ev = json_pack("{s:s,s:s,s:{s:s,s:s},s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:o}", "apiVersion",
			       "events.k8s.io/v1", "kind", "Event", "metadata", "name", js_buf_str(&evname),
			       "namespace", evns, "eventTime", now, "reportingController", r->controller,
			       "reportingInstance", r->instance, "action", it->action, "reason", it->reason, "type",
			       it->type, "note", it->note, "regarding", reg);
	rc = js_client_create(r->c, &js_client_res_events, evns, ev, NULL, NULL, err);
	json_decref(ev);
	if (rc == 0) {
		struct series *n = js_xcalloc(1, sizeof *n);
		*n = (struct series){js_xstrdup(js_buf_str(&evname)), js_xstrdup(evns), wall, 1};
		if (js_hmap_len(r->series) >= SERIES_CACHE_MAX)
			js_hmap_clear(r->series); /* crude bound; a miss only costs a new Event */
		js_hmap_put(r->series, js_buf_str(&key), n, NULL);
	}
	js_buf_done(&evname);
	js_buf_done(&key);
	return rc;
}

static struct item *pop_locked(struct js_recorder *r)
{
	struct item *it = r->ring[r->head];
	r->ring[r->head] = NULL;
	r->head = (r->head + 1) % r->cap;
	r->len--;
	return it;
}

/* The sender: write queued events in order until shut down and drained
 * (or told to drop the rest). */
static void *sender_main(void *arg)
{
	struct js_recorder *r = arg;
	js_client_bind_cancel(r->c, &r->cancel);
	pthread_mutex_lock(&r->lock);
	for (;;) {
		while (r->len == 0 && !r->stopping)
			pthread_cond_wait(&r->cond, &r->lock);
		if (r->len == 0 || r->drop_rest)
			break;
		struct item *it = pop_locked(r);
		r->in_flight = true;
		pthread_mutex_unlock(&r->lock);

		struct js_apierr err = {0};
		int rc = record(r, it, &err);
		if (rc < 0 && r->on_error)
			r->on_error(r->user, it->reason, rc, err.message);
		js_apierr_done(&err);
		item_free(it);

		pthread_mutex_lock(&r->lock);
		r->in_flight = false;
		if (rc < 0)
			r->st.failed++;
		else
			r->st.sent++;
		r->seq_done++;
		pthread_cond_broadcast(&r->cond);
	}
	/* What the drain did not reach. */
	struct item **rest = js_xcalloc(r->len + 1, sizeof(*rest));
	size_t n = 0;
	while (r->len > 0)
		rest[n++] = pop_locked(r);
	r->st.dropped += n;
	r->seq_done += n;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	for (size_t i = 0; i < n; i++) {
		if (r->on_error)
			r->on_error(r->user, rest[i]->reason, -ECANCELED, "not sent: the recorder shut down");
		item_free(rest[i]);
	}
	free(rest);
	js_client_bind_cancel(r->c, NULL);
	return NULL;
}

int js_recorder_new(struct js_client *c, const struct js_recorder_opts *opts, struct js_recorder **ret)
{
	if (!opts || !opts->controller || !opts->instance)
		return JS_EINVALID;
	struct js_recorder *r = js_xcalloc(1, sizeof *r);
	r->c = c;
	r->controller = js_xstrdup(opts->controller);
	r->instance = js_xstrdup(opts->instance);
	r->on_error = opts->on_error;
	r->user = opts->user;
	r->cap = opts->queue_max ? opts->queue_max : QUEUE_MAX_DEFAULT;
	r->ring = js_xcalloc(r->cap, sizeof(*r->ring));
	pthread_mutex_init(&r->lock, NULL);
	js_clock_cond_init(&r->cond);
	atomic_init(&r->cancel, false);
	r->series = js_hmap_new(&series_type);
	int e = pthread_create(&r->thread, NULL, sender_main, r);
	if (e != 0) {
		r->shutting = r->joined = true;
		js_recorder_free(r);
		return -e;
	}
	*ret = r;
	return 0;
}

int js_recorder_shutdown(struct js_recorder *r, int timeout_ms)
{
	pthread_mutex_lock(&r->lock);
	if (r->shutting) {
		/* Another call shuts down (or did): its result. */
		while (!r->joined)
			pthread_cond_wait(&r->cond, &r->lock);
		int res = r->shutdown_result;
		pthread_mutex_unlock(&r->lock);
		return res;
	}
	r->shutting = true;
	r->stopping = true;
	pthread_cond_broadcast(&r->cond);
	struct timespec dl = js_clock_deadline_ts(timeout_ms);
	while ((r->len > 0 || r->in_flight) && timeout_ms > 0)
		if (pthread_cond_timedwait(&r->cond, &r->lock, &dl) == ETIMEDOUT)
			break;
	int res = r->len > 0 || r->in_flight ? -ETIMEDOUT : 0;
	if (res < 0) {
		/* The drain ran out: end the write in flight and drop the rest. */
		r->drop_rest = true;
		atomic_store(&r->cancel, true);
		pthread_cond_broadcast(&r->cond);
	}
	pthread_mutex_unlock(&r->lock);
	if (res < 0)
		js_client_wakeup(r->c);
	pthread_join(r->thread, NULL);
	pthread_mutex_lock(&r->lock);
	r->joined = true;
	r->shutdown_result = res;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	return res;
}

struct js_recorder *js_recorder_free(struct js_recorder *r)
{
	if (!r)
		return NULL;
	(void)js_recorder_shutdown(r, 0);
	free(r->controller);
	free(r->instance);
	js_hmap_free(r->series);
	free(r->ring);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
	return NULL;
}

/* A copy of what an Event says about `regarding`: never the whole object. */
static json_t *regarding_copy(const json_t *regarding)
{
	const json_t *md = json_object_get(regarding, "metadata");
	json_t *m = json_object();
	static const char *const keys[] = {"name", "namespace", "uid", "resourceVersion"};
	for (size_t i = 0; i < JS_ARRAY_SIZE(keys); i++)
		if (js_json_str(md, keys[i]))
			json_object_set_new(m, keys[i], json_string(js_json_str(md, keys[i])));
	json_t *o = json_pack("{s:o}", "metadata", m);
	if (js_json_str(regarding, "apiVersion"))
		json_object_set_new(o, "apiVersion", json_string(js_json_str(regarding, "apiVersion")));
	if (js_json_str(regarding, "kind"))
		json_object_set_new(o, "kind", json_string(js_json_str(regarding, "kind")));
	return o;
}

int js_recorder_eventf(struct js_recorder *r, const json_t *regarding, const char *type, const char *reason,
		       const char *action, const char *fmt, ...)
{
	const char *name = js_json_str(json_object_get(regarding, "metadata"), "name");
	if (!name || !reason || !action || !type || (strcmp(type, "Normal") != 0 && strcmp(type, "Warning") != 0))
		return JS_EINVALID;
	char note[NOTE_MAX + 1];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(note, sizeof note, fmt, ap);
	va_end(ap);

	pthread_mutex_lock(&r->lock);
	if (r->stopping) {
		pthread_mutex_unlock(&r->lock);
		return -ESHUTDOWN;
	}
	if (r->len == r->cap) {
		r->st.dropped++;
		pthread_mutex_unlock(&r->lock);
		if (r->on_error)
			r->on_error(r->user, reason, -ENOBUFS, "the event queue is full");
		return -ENOBUFS;
	}
	pthread_mutex_unlock(&r->lock);
	/* Built unlocked; the queue may have filled meanwhile (checked again). */
	struct item *it = js_xcalloc(1, sizeof *it);
	*it = (struct item){regarding_copy(regarding), js_xstrdup(type), js_xstrdup(reason), js_xstrdup(action),
			    js_xstrdup(note), js__kutil_wall_ns()};
	pthread_mutex_lock(&r->lock);
	if (r->stopping || r->len == r->cap) {
		int rc = r->stopping ? -ESHUTDOWN : -ENOBUFS;
		if (rc == -ENOBUFS)
			r->st.dropped++;
		pthread_mutex_unlock(&r->lock);
		if (rc == -ENOBUFS && r->on_error)
			r->on_error(r->user, reason, rc, "the event queue is full");
		item_free(it);
		return rc;
	}
	r->ring[(r->head + r->len) % r->cap] = it;
	r->len++;
	r->st.queued++;
	r->seq_queued++;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	return 0;
}

int js_recorder_flush(struct js_recorder *r, int timeout_ms)
{
	struct timespec dl = js_clock_deadline_ts(timeout_ms);
	pthread_mutex_lock(&r->lock);
	uint64_t want = r->seq_queued;
	while (r->seq_done < want)
		if (pthread_cond_timedwait(&r->cond, &r->lock, &dl) == ETIMEDOUT)
			break;
	int res = r->seq_done >= want ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&r->lock);
	return res;
}

void js_recorder_stats(struct js_recorder *r, struct js_recorder_stats *ret)
{
	pthread_mutex_lock(&r->lock);
	*ret = r->st;
	ret->pending = r->len + (r->in_flight ? 1 : 0);
	pthread_mutex_unlock(&r->lock);
}
