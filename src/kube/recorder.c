/*
 * recorder.c - events.k8s.io/v1 event recorder (recorder.h).
 */
#include "kube/recorder.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/hmap.h"
#include "base/json.h"
#include "kube/kube_int.h"

#define NOTE_MAX 1024
#define SERIES_WINDOW_NS (6ull * 60ull * 1000000000ull)
#define SERIES_CACHE_MAX 4096

struct js_recorder {
	struct js_client *c;
	char *controller, *instance;
	pthread_mutex_t lock;
	struct js_hmap *series; /* isomorphic key -> struct series */
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

int js_recorder_new(struct js_client *c, const struct js_recorder_opts *opts, struct js_recorder **ret)
{
	if (!opts || !opts->controller || !opts->instance)
		return JS_EINVALID;
	struct js_recorder *r = js_xcalloc(1, sizeof *r);
	r->c = c;
	r->controller = js_xstrdup(opts->controller);
	r->instance = js_xstrdup(opts->instance);
	pthread_mutex_init(&r->lock, NULL);
	r->series = js_hmap_new(&series_type);
	*ret = r;
	return 0;
}

struct js_recorder *js_recorder_free(struct js_recorder *r)
{
	if (!r)
		return NULL;
	free(r->controller);
	free(r->instance);
	js_hmap_free(r->series);
	pthread_mutex_destroy(&r->lock);
	free(r);
	return NULL;
}

static int record(struct js_recorder *r, const json_t *regarding, const char *type, const char *reason,
		  const char *action, const char *note)
{
	json_t *md = json_object_get(regarding, "metadata");
	const char *name = js_json_str(md, "name"), *ns = js_json_str(md, "namespace");
	const char *uid = js_json_str(md, "uid");
	if (!name || !reason || !action || !type || (strcmp(type, "Normal") != 0 && strcmp(type, "Warning") != 0))
		return JS_EINVALID;
	const char *evns = ns && *ns ? ns : "default";
	uint64_t wall = js__kutil_wall_ns();
	char now[48];
	js__kutil_microtime(wall, now);

	struct js_buf key;
	js_buf_init(&key, 0);
	if (js_buf_printf(&key, "%s/%s/%s\x1f%s\x1f%s\x1f%s\x1f%s", evns, name, uid ? uid : "", type, reason, action,
			  note) < 0) {
		js_buf_done(&key);
		return JS_ETOOLARGE;
	}
	/* A repeat within the window: bump the series of the first Event. */
	pthread_mutex_lock(&r->lock);
	struct series *s = js_hmap_get(r->series, js_buf_str(&key));
	if (s && wall - s->first > SERIES_WINDOW_NS) {
		js_hmap_del(r->series, js_buf_str(&key), NULL);
		s = NULL;
	}
	int64_t count = 0;
	char *sname = NULL, *sns = NULL; /* copies: the entry may go once unlocked */
	if (s) {
		count = ++s->count;
		sname = js_xstrdup(s->name);
		sns = js_xstrdup(s->ns);
	}
	pthread_mutex_unlock(&r->lock);
	int rc;
	if (sname) {
		json_t *patch = json_pack("{s:{s:I,s:s}}", "series", "count", (json_int_t)count, "lastObservedTime", now);
		rc = js_client_patch(r->c, &js_client_res_events, sns, sname, JS_PATCH_MERGE, patch, NULL, NULL, NULL);
		json_decref(patch);
		free(sname);
		free(sns);
		if (rc != JS_ENOTFOUND) {
			js_buf_done(&key);
			return rc;
		}
		/* The Event expired (events have a TTL): start afresh. */
		pthread_mutex_lock(&r->lock);
		js_hmap_del(r->series, js_buf_str(&key), NULL);
		pthread_mutex_unlock(&r->lock);
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
			       "reportingInstance", r->instance, "action", action, "reason", reason, "type", type,
			       "note", note, "regarding", reg);
	rc = js_client_create(r->c, &js_client_res_events, evns, ev, NULL, NULL, NULL);
	json_decref(ev);
	if (rc == 0) {
		struct series *n = js_xcalloc(1, sizeof *n);
		*n = (struct series){js_xstrdup(js_buf_str(&evname)), js_xstrdup(evns), wall, 1};
		pthread_mutex_lock(&r->lock);
		if (js_hmap_len(r->series) >= SERIES_CACHE_MAX)
			js_hmap_clear(r->series); /* crude bound; a miss only costs a new Event */
		js_hmap_put(r->series, js_buf_str(&key), n, NULL);
		pthread_mutex_unlock(&r->lock);
	}
	js_buf_done(&evname);
	js_buf_done(&key);
	return rc;
}

int js_recorder_eventf(struct js_recorder *r, const json_t *regarding, const char *type, const char *reason,
		       const char *action, const char *fmt, ...)
{
	char note[NOTE_MAX + 1];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(note, sizeof note, fmt, ap);
	va_end(ap);
	return record(r, regarding, type, reason, action, note);
}
