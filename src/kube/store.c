/*
 * store.c - typed records in a hash map, indexes as maps of sets (store.h).
 *
 * Each stored object is one `struct entry`, allocated in one block with its
 * key, its resourceVersion and its index values packed behind it, and
 * replaced whole on every update (the resourceVersion and the index values
 * change together). The main map borrows the entry's key; an index maps a
 * value to a set (another map) from object key to entry, so an index read
 * never goes back to the main map.
 */
#include "kube/store.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/hmap.h"
#include "base/json.h"

#define MAX_INDEXES 8

struct ival {
	unsigned idx;    /* which index */
	const char *val; /* packed behind the entry */
};

struct entry {
	const void *rec; /* one reference */
	const char *rv;  /* resourceVersion, "" when absent */
	uint64_t epoch;  /* relist in which it was last seen */
	size_t n_vals;
	struct ival *vals;
	char key[];
};

struct index {
	char *name;
	js_store_index_fn *fn;
	struct js_hmap *map; /* value -> struct js_hmap * (key -> struct entry *) */
};

struct js_store {
	const struct js_store_type *t;
	pthread_rwlock_t rw;
	struct js_hmap *objs; /* key (borrowed from the entry) -> struct entry * */
	struct index idx[MAX_INDEXES];
	size_t nidx;
	uint64_t epoch;
};

/* ---- the JSON record type ---- */

static const void *json_transform(const json_t *obj, int *ret_err)
{
	(void)ret_err;
	return json_incref(js_json_unconst(obj));
}

static const void *json_ref(const void *rec)
{
	return json_incref(js_json_unconst(rec));
}

static void json_unref(const void *rec)
{
	json_decref(js_json_unconst(rec));
}

const struct js_store_type js_store_type_json = {
	.transform = json_transform,
	.ref = json_ref,
	.unref = json_unref,
};

/* ---- built-in index functions ---- */

void js_store_index_namespace(const json_t *obj, js_store_emit_fn *emit, void *ctx)
{
	const char *ns = js_json_str(json_object_get(obj, "metadata"), "namespace");
	emit(ctx, ns ? ns : "");
}

void js_store_index_owner_uids(const json_t *obj, js_store_emit_fn *emit, void *ctx)
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

/* ---- lifecycle ---- */

static void free_set(void *set)
{
	js_hmap_free(set);
}

static const struct js_hmap_type objs_type = {.borrow_keys = true, .free_value = NULL};
static const struct js_hmap_type index_type = {.borrow_keys = false, .free_value = free_set};
static const struct js_hmap_type set_type = {.borrow_keys = true, .free_value = NULL};

struct js_store *js_store_new(const struct js_store_type *t)
{
	struct js_store *st = js_xcalloc(1, sizeof *st);
	st->t = t ? t : &js_store_type_json;
	pthread_rwlock_init(&st->rw, NULL);
	st->objs = js_hmap_new(&objs_type);
	return st;
}

static void entry_free(struct js_store *st, struct entry *e)
{
	if (!e)
		return;
	st->t->unref(e->rec);
	free(e);
}

struct js_store *js_store_free(struct js_store *st)
{
	if (!st)
		return NULL;
	struct js_hmap_iter it = {0};
	void *v;
	while (js_hmap_next(st->objs, &it, NULL, &v))
		entry_free(st, v);
	js_hmap_free(st->objs);
	for (size_t i = 0; i < st->nidx; i++) {
		free(st->idx[i].name);
		js_hmap_free(st->idx[i].map);
	}
	pthread_rwlock_destroy(&st->rw);
	free(st);
	return NULL;
}

int js_store_add_index(struct js_store *st, const char *name, js_store_index_fn *fn)
{
	if (js_hmap_len(st->objs) > 0)
		return -EBUSY;
	if (st->nidx == MAX_INDEXES)
		return JS_ETOOLARGE;
	for (size_t i = 0; i < st->nidx; i++)
		if (strcmp(st->idx[i].name, name) == 0)
			return JS_EEXISTS;
	st->idx[st->nidx] = (struct index){js_xstrdup(name), fn, js_hmap_new(&index_type)};
	st->nidx++;
	return 0;
}

/* ---- building an entry ---- */

int js_store_key(const char *ns, const char *name, char *buf, size_t len)
{
	int n = ns && *ns ? snprintf(buf, len, "%s/%s", ns, name) : snprintf(buf, len, "%s", name);
	return n < 0 || (size_t)n >= len ? JS_ETOOLARGE : 0;
}

/* Index values collected from the JSON before the entry is allocated. */
struct collect {
	unsigned idx;
	struct js_buf bytes;   /* the values, NUL-separated */
	unsigned *owners;      /* index of each value */
	size_t n, cap;
};

static void collect_value(void *ctx, const char *value)
{
	struct collect *c = ctx;
	if (js_buf_add(&c->bytes, value, strlen(value) + 1) < 0)
		return; /* cannot happen: the buffer is unbounded */
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 8;
		c->owners = js_xrealloc(c->owners, c->cap * sizeof *c->owners);
	}
	c->owners[c->n++] = c->idx;
}

/* One block: entry, ival array, key, rv, values. */
static struct entry *entry_new(const struct js_store *st, const json_t *obj, const char *key, const char *rv)
{
	struct collect c = {0};
	js_buf_init(&c.bytes, 0);
	for (size_t i = 0; i < st->nidx; i++) {
		c.idx = (unsigned)i;
		st->idx[i].fn(obj, collect_value, &c);
	}
	size_t klen = strlen(key) + 1, rlen = strlen(rv) + 1;
	size_t size = sizeof(struct entry) + klen + c.n * sizeof(struct ival) + rlen + c.bytes.len;
	/* the ival array must be aligned: place it first after the header,
	 * then the strings */
	struct entry *e = js_xmalloc(size + _Alignof(struct ival));
	memset(e, 0, sizeof *e);
	char *p = e->key;
	memcpy(p, key, klen);
	p += klen;
	uintptr_t a = ((uintptr_t)p + _Alignof(struct ival) - 1) & ~(uintptr_t)(_Alignof(struct ival) - 1);
	e->vals = (struct ival *)a;
	e->n_vals = c.n;
	p = (char *)(e->vals + c.n);
	memcpy(p, rv, rlen);
	e->rv = p;
	p += rlen;
	const char *v = c.bytes.p;
	for (size_t i = 0; i < c.n; i++) {
		size_t n = strlen(v) + 1;
		memcpy(p, v, n);
		e->vals[i] = (struct ival){c.owners[i], p};
		p += n;
		v += n;
	}
	js_buf_done(&c.bytes);
	free(c.owners);
	return e;
}

/* Under the write lock. */
static void index_add(struct js_store *st, struct entry *e)
{
	for (size_t i = 0; i < e->n_vals; i++) {
		struct js_hmap *map = st->idx[e->vals[i].idx].map;
		struct js_hmap *set = js_hmap_get(map, e->vals[i].val);
		if (!set) {
			set = js_hmap_new(&set_type);
			js_hmap_put(map, e->vals[i].val, set, NULL);
		}
		js_hmap_put(set, e->key, e, NULL);
	}
}

static void index_del(struct js_store *st, const struct entry *e)
{
	for (size_t i = 0; i < e->n_vals; i++) {
		struct js_hmap *map = st->idx[e->vals[i].idx].map;
		struct js_hmap *set = js_hmap_get(map, e->vals[i].val);
		if (!set)
			continue; /* a value emitted twice: already gone */
		js_hmap_del(set, e->key, NULL);
		if (js_hmap_len(set) == 0)
			js_hmap_del(map, e->vals[i].val, NULL);
	}
}

/* ---- writes ---- */

/* Under the write lock: unlink the entry of `key`, hand its record to *ch. */
static void remove_locked(struct js_store *st, const char *key, struct js_store_change *ch)
{
	void *old = NULL;
	struct entry *e = js_hmap_get(st->objs, key);
	if (!e)
		return;
	index_del(st, e);
	js_hmap_del(st->objs, key, &old);
	ch->op = JS_STORE_DELETED;
	ch->old = e->rec;
	free(e);
}

int js_store_upsert(struct js_store *st, json_t *obj, struct js_store_change *ret)
{
	*ret = (struct js_store_change){JS_STORE_NONE, NULL, NULL};
	json_t *md = json_object_get(obj, "metadata");
	const char *name = js_json_str(md, "name");
	if (!name)
		return JS_EINVALID;
	char key[512];
	int r = js_store_key(js_json_str(md, "namespace"), name, key, sizeof key);
	if (r < 0)
		return r;
	const char *rv = js_json_str(md, "resourceVersion");
	rv = rv ? rv : "";

	/* Unchanged since stored (a relist of an object that did not move):
	 * nothing to transform. Only this thread writes, so reading the map
	 * without the write lock is safe here. */
	struct entry *cur = js_hmap_get(st->objs, key);
	if (cur && *rv && strcmp(cur->rv, rv) == 0) {
		cur->epoch = st->epoch;
		return 0;
	}
	/* Large and never read; gone before any transform sees the object. */
	json_object_del(md, "managedFields");
	const void *rec = st->t->transform_from ? st->t->transform_from(obj, cur ? cur->rec : NULL, &r)
					       : st->t->transform(obj, &r);
	if (!rec) {
		pthread_rwlock_wrlock(&st->rw);
		remove_locked(st, key, ret);
		pthread_rwlock_unlock(&st->rw);
		return r < 0 ? r : JS_EINVALID;
	}
	struct entry *e = entry_new(st, obj, key, rv);
	e->rec = rec;
	e->epoch = st->epoch;

	pthread_rwlock_wrlock(&st->rw);
	void *prev = NULL;
	js_hmap_put(st->objs, e->key, e, &prev);
	struct entry *old = prev;
	if (old)
		index_del(st, old);
	index_add(st, e);
	pthread_rwlock_unlock(&st->rw);

	ret->rec = rec;
	if (old) {
		ret->old = old->rec;
		ret->op = st->t->same && st->t->same(old->rec, rec) ? JS_STORE_SAME : JS_STORE_UPDATED;
		free(old);
	} else {
		ret->op = JS_STORE_ADDED;
	}
	return 0;
}

void js_store_delete(struct js_store *st, const char *key, struct js_store_change *ret)
{
	*ret = (struct js_store_change){JS_STORE_NONE, NULL, NULL};
	pthread_rwlock_wrlock(&st->rw);
	remove_locked(st, key, ret);
	pthread_rwlock_unlock(&st->rw);
}

void js_store_change_done(struct js_store *st, struct js_store_change *ch)
{
	if (ch->old)
		st->t->unref(ch->old);
	*ch = (struct js_store_change){JS_STORE_NONE, NULL, NULL};
}

void js_store_relist_begin(struct js_store *st)
{
	st->epoch++;
}

size_t js_store_relist_end(struct js_store *st,
			   void (*on_delete)(void *user, const char *key, const struct js_store_change *ch),
			   void *user)
{
	/* Collect first: deleting invalidates the iteration. */
	size_t n = 0, cap = 0;
	char **gone = NULL;
	struct js_hmap_iter it = {0};
	const char *k;
	void *v;
	while (js_hmap_next(st->objs, &it, &k, &v)) {
		if (((struct entry *)v)->epoch == st->epoch)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			gone = js_xrealloc(gone, cap * sizeof *gone);
		}
		gone[n++] = js_xstrdup(k);
	}
	for (size_t i = 0; i < n; i++) {
		struct js_store_change ch;
		js_store_delete(st, gone[i], &ch);
		if (on_delete && ch.op == JS_STORE_DELETED)
			on_delete(user, gone[i], &ch);
		js_store_change_done(st, &ch);
		free(gone[i]);
	}
	free(gone);
	return n;
}

/* ---- reads ---- */

const void *js_store_get(struct js_store *st, const char *key)
{
	pthread_rwlock_rdlock(&st->rw);
	struct entry *e = js_hmap_get(st->objs, key);
	const void *rec = e ? st->t->ref(e->rec) : NULL;
	pthread_rwlock_unlock(&st->rw);
	return rec;
}

bool js_store_has(struct js_store *st, const char *key)
{
	pthread_rwlock_rdlock(&st->rw);
	bool has = js_hmap_has(st->objs, key);
	pthread_rwlock_unlock(&st->rw);
	return has;
}

int js_store_resource_version(struct js_store *st, const char *key, char *buf, size_t len)
{
	int r = JS_ENOTFOUND;
	pthread_rwlock_rdlock(&st->rw);
	struct entry *e = js_hmap_get(st->objs, key);
	if (e) {
		int n = snprintf(buf, len, "%s", e->rv);
		r = n < 0 || (size_t)n >= len ? JS_ETOOLARGE : 0;
	}
	pthread_rwlock_unlock(&st->rw);
	return r;
}

/* Under the read lock: references to every entry of `map`. */
static size_t refs_of(struct js_store *st, const struct js_hmap *map, const void ***ret)
{
	size_t n = map ? js_hmap_len(map) : 0;
	*ret = NULL;
	if (n == 0)
		return 0;
	const void **recs = js_xmalloc(n * sizeof *recs);
	struct js_hmap_iter it = {0};
	void *v;
	size_t i = 0;
	while (i < n && js_hmap_next(map, &it, NULL, &v))
		recs[i++] = st->t->ref(((struct entry *)v)->rec);
	*ret = recs;
	return i;
}

size_t js_store_by_index(struct js_store *st, const char *index, const char *value, const void ***ret)
{
	size_t n = 0;
	*ret = NULL;
	pthread_rwlock_rdlock(&st->rw);
	for (size_t i = 0; i < st->nidx; i++)
		if (strcmp(st->idx[i].name, index) == 0)
			n = refs_of(st, js_hmap_get(st->idx[i].map, value), ret);
	pthread_rwlock_unlock(&st->rw);
	return n;
}

size_t js_store_list(struct js_store *st, const void ***ret)
{
	pthread_rwlock_rdlock(&st->rw);
	size_t n = refs_of(st, st->objs, ret);
	pthread_rwlock_unlock(&st->rw);
	return n;
}

size_t js_store_len(struct js_store *st)
{
	pthread_rwlock_rdlock(&st->rw);
	size_t n = js_hmap_len(st->objs);
	pthread_rwlock_unlock(&st->rw);
	return n;
}

size_t js_store_index_len(struct js_store *st, const char *index)
{
	size_t n = 0;
	pthread_rwlock_rdlock(&st->rw);
	for (size_t i = 0; i < st->nidx; i++)
		if (strcmp(st->idx[i].name, index) == 0)
			n = js_hmap_len(st->idx[i].map);
	pthread_rwlock_unlock(&st->rw);
	return n;
}

void js_store_unref(struct js_store *st, const void *rec)
{
	if (rec)
		st->t->unref(rec);
}

void js_store_release(struct js_store *st, const void **recs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		js_store_unref(st, recs[i]);
	free((void *)recs);
}
