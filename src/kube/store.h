/*
 * store.h - the indexed, typed object cache behind an informer (client-go's
 * thread-safe store with indexers, plus its SetTransform hook).
 *
 * The store keeps one *record* per object, keyed "namespace/name" (or "name"
 * for cluster-scoped objects). A record is whatever the store's type makes of
 * the object at ingest: a compact, immutable, reference-counted struct (the
 * controller's Jobs become core/job.h records, its Services mere existence),
 * or, with no type, the json_t itself. The JSON an object arrived as is only
 * borrowed by the store: once js_store_upsert() returns, the caller frees it,
 * and the store holds records only.
 *
 * Indexes map a value (the object's namespace, an owner uid, ...) to the set
 * of objects that have it. Index functions run at ingest, on the JSON, and
 * the store remembers each object's values, so indexes never need the JSON
 * again. The map and the sets are base/hmap tables; lookups are O(1) and an
 * index read costs one reference per record returned.
 *
 * Change detection: every write reports what happened (added, updated,
 * deleted, or "same": the type's same() found the new record equal to the
 * old one in every field its readers use). A relist (begin, upserts, end)
 * deletes the objects the new list no longer has.
 *
 * Threading: one writer (the informer's thread) and any number of readers.
 * Reads take a read lock and return new references; records are immutable,
 * so readers never copy them. Not reentrant from a type's callbacks.
 */
#ifndef JS_STORE_H
#define JS_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

/**
 * What a store makes of its objects (a Redis dictType for records). The
 * table must outlive the store; it is usually static const.
 */
struct js_store_type {
	/* Build the record for `obj` (borrowed; never kept). Returns a new
	 * record holding one reference, or NULL with *ret_err set (the object
	 * is then not stored, and a stored older version is dropped). */
	const void *(*transform)(const json_t *obj, int *ret_err);
	/* Take one more reference; returns `rec`. */
	const void *(*ref)(const void *rec);
	/* Drop one reference (frees at zero). */
	void (*unref)(const void *rec);
	/* Optional: true when `a` and `b` are equal in every field any reader
	 * uses; such an update is reported as JS_STORE_SAME. */
	bool (*same)(const void *a, const void *b);
	/* Optional, called instead of transform when set: the same, also
	 * given the record stored now under the object's key (NULL when
	 * none; borrowed for the call), whose immutable parts the new record
	 * may share by reference - what depends only on an unchanged spec,
	 * say, need not be built again for a status update. */
	const void *(*transform_from)(const json_t *obj, const void *prev, int *ret_err);
};

/** The record type of a store created with no type: records are the
 * json_t objects themselves (metadata.managedFields removed). */
extern const struct js_store_type js_store_type_json;

/** Values of one object for an index: call emit(ctx, value) per value. */
typedef void js_store_emit_fn(void *ctx, const char *value);
typedef void js_store_index_fn(const json_t *obj, js_store_emit_fn *emit, void *ctx);

/** Index function: metadata.namespace ("" for cluster-scoped objects). */
void js_store_index_namespace(const json_t *obj, js_store_emit_fn *emit, void *ctx);

/** Index function: every metadata.ownerReferences[].uid. */
void js_store_index_owner_uids(const json_t *obj, js_store_emit_fn *emit, void *ctx);

/** What one write did. */
enum js_store_op {
	JS_STORE_NONE,    /* nothing: same resourceVersion as stored, or not stored */
	JS_STORE_ADDED,   /* a new key */
	JS_STORE_UPDATED, /* replaced a record that differs (or the type has no same()) */
	JS_STORE_SAME,    /* replaced a record its type's same() finds equal */
	JS_STORE_DELETED, /* removed */
};

/** The outcome of a write. `old` holds one reference the caller releases
 * with js_store_change_done(); `rec` is borrowed until the next write. */
struct js_store_change {
	enum js_store_op op;
	const void *old; /* UPDATED, SAME, DELETED: the record before */
	const void *rec; /* ADDED, UPDATED, SAME: the record now stored */
};

struct js_store;

/** A new empty store of records of type `t` (NULL: js_store_type_json).
 * Caller frees with js_store_free. */
struct js_store *js_store_new(const struct js_store_type *t);

/** Free the store and drop its references. NULL is a no-op. Returns NULL.
 * No reader or writer may be using it. */
struct js_store *js_store_free(struct js_store *st);

/** Add an index named `name` before the first write. Returns 0,
 * JS_EEXISTS (name taken), JS_ETOOLARGE (more than 8 indexes) or -EBUSY
 * (objects already stored). */
JS_WARN_UNUSED int js_store_add_index(struct js_store *st, const char *name, js_store_index_fn *fn);

/* ---- Writes (one writer thread) ---- */

/**
 * Insert or replace the object `obj` (borrowed, but the store removes its
 * metadata.managedFields before the transform sees it; with the JSON type
 * the store keeps a reference, so it must not be modified afterwards). When a stored object has the same key and the
 * same resourceVersion, nothing changes (JS_STORE_NONE; a relist in progress
 * counts it as seen). Fills *ret (release with js_store_change_done).
 * Returns 0, JS_EINVALID (no metadata.name), or the transform's error (then
 * a stored older version was deleted and *ret says so).
 */
JS_WARN_UNUSED int js_store_upsert(struct js_store *st, json_t *obj, struct js_store_change *ret);

/** Delete the object of `key`. *ret.op is JS_STORE_DELETED, or
 * JS_STORE_NONE when the key was not stored. */
void js_store_delete(struct js_store *st, const char *key, struct js_store_change *ret);

/** Release what a change holds. */
void js_store_change_done(struct js_store *st, struct js_store_change *ch);

/** Start a relist: objects not upserted before js_store_relist_end() go. */
void js_store_relist_begin(struct js_store *st);

/** End a relist: delete every object not upserted since begin, calling
 * on_delete(user, key, change) for each (the change is released after the
 * call). Returns the number deleted. */
size_t js_store_relist_end(struct js_store *st,
			   void (*on_delete)(void *user, const char *key, const struct js_store_change *ch),
			   void *user);

/* ---- Reads (any thread) ---- */

/** Write "ns/name" (or "name" when `ns` is NULL or empty) into `buf`.
 * Returns 0 or JS_ETOOLARGE when it does not fit. */
JS_WARN_UNUSED int js_store_key(const char *ns, const char *name, char *buf, size_t len);

/** The record of `key`, a new reference (js_store_unref), or NULL. */
const void *js_store_get(struct js_store *st, const char *key);

/** True when `key` is stored (no reference taken). */
bool js_store_has(struct js_store *st, const char *key);

/** Copy the stored resourceVersion of `key` into `buf` ("" when the object
 * had none). Returns 0, JS_ENOTFOUND or JS_ETOOLARGE. */
JS_WARN_UNUSED int js_store_resource_version(struct js_store *st, const char *key, char *buf, size_t len);

/** Records whose index `index` has `value`: *ret (malloc'd array of new
 * references; release with js_store_release) and the count. An unknown
 * index or value gives 0 and *ret NULL. */
size_t js_store_by_index(struct js_store *st, const char *index, const char *value, const void ***ret);

/** Every record, as js_store_by_index. */
size_t js_store_list(struct js_store *st, const void ***ret);

/** Number of stored objects. */
size_t js_store_len(struct js_store *st);

/** Number of distinct values of index `index` (0 when unknown); for tests. */
size_t js_store_index_len(struct js_store *st, const char *index);

/** Drop one reference to a record of this store. NULL is a no-op. */
void js_store_unref(struct js_store *st, const void *rec);

/** Drop the references of an array from by_index/list, then free it. */
void js_store_release(struct js_store *st, const void **recs, size_t n);

#endif
