/*
 * hmap.h - a hash map from NUL-terminated string keys to pointers.
 *
 * The typed container of the project (STYLE §18: typed containers, not
 * jansson objects used as maps): the informer stores and their indexes, the
 * reconcile core's Job-by-name index, the workqueue's sets. The map never
 * knows what it stores; a small type table (Redis `dictType` style) says
 * whether keys are copied and how a value is released when the map drops it.
 *
 * Open addressing with linear probing and backward-shift deletion (no
 * tombstones), so lookups stay short after many deletes. The table doubles
 * at 3/4 load and never shrinks below what it once held until cleared.
 * Lookups and updates are O(1) expected. Iteration order is unspecified and
 * is invalidated by any insert or delete.
 *
 * Not thread-safe: one owner, or the owner's lock.
 */
#ifndef JS_HMAP_H
#define JS_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

/** What the map does with its keys and values. Tables are usually static
 * const and must outlive the map. */
struct js_hmap_type {
	/* true: keys are borrowed and must outlive their entry (typically a
	 * key that points into the value itself); false: the map copies each
	 * key and frees the copy */
	bool borrow_keys;
	/* called on a value when the map drops it (del, replace, clear, free);
	 * NULL: values are not the map's to free */
	void (*free_value)(void *value);
};

struct js_hmap;

/** Iterator: zero-initialise, then call js_hmap_next until it returns false. */
struct js_hmap_iter {
	size_t i;
};

/** A new empty map of type `t` (NULL: copied keys, values not freed).
 * Caller frees with js_hmap_free. Aborts on OOM (js_xmalloc). */
struct js_hmap *js_hmap_new(const struct js_hmap_type *t);

/** Free the map, its key copies, and (through the type) its values. NULL is a
 * no-op. Returns NULL. */
struct js_hmap *js_hmap_free(struct js_hmap *m);

/** Drop every entry (values released through the type) but keep the table. */
void js_hmap_clear(struct js_hmap *m);

/** Number of entries. */
size_t js_hmap_len(const struct js_hmap *m);

/** The value stored under `key`, or NULL. Borrowed: valid until the entry is
 * replaced or deleted. */
void *js_hmap_get(const struct js_hmap *m, const char *key);

/** As js_hmap_get for the first `n` bytes of `key` (no NUL needed). */
void *js_hmap_get_n(const struct js_hmap *m, const char *key, size_t n);

/** True when `key` has an entry (whose value may be NULL). */
bool js_hmap_has(const struct js_hmap *m, const char *key);

/**
 * Store `value` under `key`, taking ownership of `value` as the type says.
 * An existing value under `key` is released through the type (or, when
 * `ret_old` is not NULL, handed to the caller in *ret_old instead, NULL when
 * there was none). A borrowed key is replaced by the new `key` pointer.
 * Returns true when the key was new.
 */
bool js_hmap_put(struct js_hmap *m, const char *key, void *value, void **ret_old);

/**
 * Remove `key`. Its value is released through the type, or handed to the
 * caller in *ret_old when that is not NULL. Returns true when the key was
 * present.
 */
bool js_hmap_del(struct js_hmap *m, const char *key, void **ret_old);

/** Next entry: fills *ret_key and *ret_value (either may be NULL) and
 * returns true, or returns false at the end. Pointers are borrowed. */
bool js_hmap_next(const struct js_hmap *m, struct js_hmap_iter *it, const char **ret_key, void **ret_value);

/** The FNV-1a offset basis: the hash of no bytes, where js_hash_fnv starts. */
#define JS_HASH_FNV_SEED 14695981039346656037ull

/** Continue the 64-bit FNV-1a hash `h` (JS_HASH_FNV_SEED to start) over
 *  `n` bytes at `p` (NULL only with n == 0); for hashing several pieces as
 *  one without joining them. Pure; never fails. */
uint64_t js_hash_fnv(uint64_t h, const void *p, size_t n);

/** 64-bit FNV-1a hash of `n` bytes; the map's hash, exposed for tests and
 * for callers that shard by key. */
uint64_t js_hash_bytes(const void *p, size_t n);

#endif
