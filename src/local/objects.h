/*
 * objects.h - the other objects of a manifest stream that a local run
 * serves to its pods, as an API server would: ConfigMaps and Secrets (for
 * configMap/secret volumes, env valueFrom configMapKeyRef/secretKeyRef and
 * envFrom) and PersistentVolumeClaims (claims that exist before the run,
 * each a directory of the run, local/volumes.h).
 *
 * Objects are checked when added, as the API server would check them on
 * create: a name, keys of the allowed characters, string values, valid
 * base64 where the API says base64 (Secret data, ConfigMap binaryData), no
 * key twice, at most JS_LIMIT_CONFIGMAP_BYTES of values. Values are kept
 * decoded. The objects' namespaces are not compared with the JobSet's: a
 * manifest stream is one namespace's worth of objects (docs/local.md).
 *
 * Other kinds are not this module's: js_objects_add says so and keeps
 * nothing. Not thread-safe; filled before a run starts, read-only after.
 */
#ifndef JS_OBJECTS_H
#define JS_OBJECTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/common.h"

enum js_objects_kind {
	JS_OBJECTS_CONFIGMAP,
	JS_OBJECTS_SECRET,
	JS_OBJECTS__COUNT,
	JS_OBJECTS__INVALID = -1,
};

/** One key of a ConfigMap or Secret, its value decoded (binary safe: `len`
 * bytes, NUL-terminated after them). */
struct js_objects_entry {
	char *key;
	char *value;
	size_t len;
};

/** A ConfigMap or Secret: its keys in sorted order (the order the kubelet
 * writes files and envFrom sets variables in). */
struct js_objects_data {
	char *name;
	size_t n;
	struct js_objects_entry *entries;
};

struct js_objects;

/** An empty store. Free with js_objects_free. */
struct js_objects *js_objects_new(void);

/** Free the store and everything in it. NULL is a no-op. Returns NULL. */
struct js_objects *js_objects_free(struct js_objects *o);

/**
 * Add `obj` (a decoded manifest document; borrowed) if it is a v1
 * ConfigMap, Secret or PersistentVolumeClaim. Returns 1 when it was taken,
 * 0 when it is some other kind (nothing kept), or JS_EINVALID with *ret_err
 * (caller frees; it starts with "Kind/name: ") when it is one of those
 * kinds but malformed, or a second object of the same kind and name.
 */
JS_WARN_UNUSED int js_objects_add(struct js_objects *o, const json_t *obj, char **ret_err);

/** The ConfigMap or Secret `name`, or NULL. Borrowed until js_objects_free. */
const struct js_objects_data *js_objects_find(const struct js_objects *o, enum js_objects_kind kind,
					      const char *name);

/** The entry `key` of `d`, or NULL. Borrowed like `d`. */
const struct js_objects_entry *js_objects_key(const struct js_objects_data *d, const char *key);

/** Number of PersistentVolumeClaims added, and the name of claim `i`
 * (borrowed until js_objects_free). */
size_t js_objects_n_claims(const struct js_objects *o);
const char *js_objects_claim(const struct js_objects *o, size_t i);

/** "ConfigMap", "Secret" (static). */
const char *js_objects_kind_name(enum js_objects_kind kind);

/** True when `key` is a valid ConfigMap/Secret key (`[-._a-zA-Z0-9]+`, at
 * most 253 bytes, not "." or ".."): file names under a volume and envFrom
 * variable names come from keys. */
bool js_objects_valid_key(const char *key);

/* ---- container env from ConfigMaps and Secrets ---- */

/**
 * The value of an env entry's `valueFrom` that is a configMapKeyRef or
 * secretKeyRef ({name, key, optional}). Returns 0 and *ret_value (caller
 * frees; NULL when the reference is optional and its object or key is
 * missing: the variable is not set, as the kubelet does), JS_ENOTFOUND when
 * `value_from` is neither kind, or JS_EINVALID with *ret_err (caller frees)
 * for a missing object or key that is not optional.
 */
JS_WARN_UNUSED int js_objects_env_value(const struct js_objects *o, const json_t *value_from, char **ret_value,
					char **ret_err);

/** Called for each variable envFrom sets, name and value borrowed. */
typedef void (*js_objects_env_fn)(void *ctx, const char *name, const char *value);

/**
 * Walk `env_from` (a container's envFrom list, or NULL): for each source in
 * order, every key of its ConfigMap or Secret (sorted) as prefix+key. `fn`
 * may be NULL to check only. Returns 0, or JS_EINVALID with *ret_err
 * (caller frees) for a source that is not optional and not in the manifest,
 * or that names neither a configMapRef nor a secretRef.
 */
JS_WARN_UNUSED int js_objects_env_from(const struct js_objects *o, const json_t *env_from, js_objects_env_fn fn,
				       void *ctx, char **ret_err);

#endif
