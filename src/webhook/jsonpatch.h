/*
 * jsonpatch.h - an RFC 6902 JSON Patch that turns one JSON document into
 * another, for the mutating webhooks' responses (patchType JSONPatch).
 *
 * The diff walks both trees: object members missing on the left are `add`ed,
 * members missing on the right are `remove`d, changed scalars are
 * `replace`d; arrays of the same length are compared element by element,
 * arrays of different lengths are replaced whole (the mutating webhooks never
 * change a list's length, so this is exact for them and correct otherwise).
 * Paths are RFC 6901 pointers (`~` as `~0`, `/` as `~1`). Pure.
 */
#ifndef JS_JSONPATCH_H
#define JS_JSONPATCH_H

#include <jansson.h>

#include "base/common.h"

/**
 * The patch that turns `from` into `to`, as a JSON array of operations
 * (empty when they are equal). Returns a new reference; never NULL. Both
 * inputs are borrowed.
 */
json_t *js_jsonpatch_diff(const json_t *from, const json_t *to);

/**
 * Apply `patch` (add, remove, replace operations) to `doc` in place; for
 * tests and for checking that a diff round-trips. Returns 0, or JS_EINVALID
 * when an operation is malformed or its path does not resolve (`doc` may
 * then be partly changed).
 */
JS_WARN_UNUSED int js_jsonpatch_apply(json_t *doc, const json_t *patch);

#endif
