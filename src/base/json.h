/*
 * json.h - small helpers over jansson shared by every layer.
 */
#ifndef JS_JSON_H
#define JS_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/** jansson's iteration macros take non-const objects even for reads; this
 * drops const for such read-only walks without a cast-qual warning. Never
 * use it to modify a borrowed tree. */
static inline json_t *js_json_unconst(const json_t *v)
{
	return (json_t *)(uintptr_t)v;
}

/** String member `key` of object `o`, or NULL when absent or not a string. */
static inline const char *js_json_str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/** Walk a dotted path of object keys ("spec.template.spec"); NULL if absent. */
json_t *js_json_path(const json_t *root, const char *dotted);

/** The uid of the ownerReference marked `controller: true` in the
 *  Kubernetes object `obj`'s metadata.ownerReferences (API conventions:
 *  at most one controller), or NULL when there is none or it has no uid.
 *  Borrowed from `obj`. */
const char *js_json_controller_uid(const json_t *obj);

/** Object at dotted path, creating empty objects along the way (replacing
 * non-objects). Returns a borrowed reference. */
json_t *js_json_path_make(json_t *root, const char *dotted);

/**
 * Apply the RFC 7386 JSON merge patch `patch` (an object) to the object
 * `target` in place: null deletes a key, an object merges into the member
 * (replacing a non-object), anything else replaces the member with a copy.
 * `patch` is borrowed and never shared with `target`. The depth is that of
 * `patch`, which jansson bounds when it parses it.
 */
void js_json_merge_patch(json_t *target, const json_t *patch);

/** Encode with sorted keys, the project's canonical byte-stable form.
 * Caller frees the string. */
char *js_json_dump_sorted(const json_t *v, bool pretty);

/**
 * The RFC 7386 JSON merge patch that turns `from` into `to` (both borrowed;
 * `from` may be NULL, meaning absent): members of `to` that differ, diffed
 * recursively where both sides are objects; null for members `to` lacks.
 * Arrays and scalars are replaced whole. `to` must hold no null values (a
 * merge patch cannot express them). Returns a new reference, or NULL when
 * the two are equal.
 */
json_t *js_json_merge_diff(const json_t *from, const json_t *to);

#endif
