/*
 * kprint.h - kubectl's output conventions as pure functions, for the
 * `kubectl jobset` commands (docs/kubectl-jobset.md): ages as kubectl
 * prints them, tab-aligned tables, and the live object cut down to the
 * fields a rendered one sets (for `diff`). No I/O, no JobSet knowledge.
 */
#ifndef JS_KPRINT_H
#define JS_KPRINT_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/common.h"

/** Room for any age js_kprint_duration writes, NUL included. */
#define JS_KPRINT_AGE_LEN 48

/**
 * Format a duration of `seconds` as kubectl's ages ("45s", "5m3s", "3h",
 * "2d4h", "3y"), rule for rule as apimachinery's duration.HumanDuration:
 * under -1 s is "<invalid>", -1 s is "0s". `out` gets at most JS_KPRINT_AGE_LEN bytes with
 * the NUL; returns `out`.
 */
const char *js_kprint_duration(int64_t seconds, char out[JS_KPRINT_AGE_LEN]);

/**
 * The age of an RFC 3339 `timestamp` at `now` (Unix seconds) as
 * js_kprint_duration formats it; "<unknown>" when `timestamp` is NULL or
 * not RFC 3339 (kubectl's text for a missing date). Returns `out`.
 */
const char *js_kprint_age(const char *timestamp, int64_t now, char out[JS_KPRINT_AGE_LEN]);

/** A table of string cells, printed as kubectl's tabwriter does. */
struct js_ktable;

/** A table with `ncols` columns. Never NULL (aborts on out of memory). */
struct js_ktable *js_ktable_new(size_t ncols);
/** Free; NULL is a no-op. Returns NULL. */
struct js_ktable *js_ktable_free(struct js_ktable *t);
/** Append a row of `ncols` cells (copied; NULL prints as empty). */
void js_ktable_add(struct js_ktable *t, const char *const *cells);
/** Rows added so far. */
size_t js_ktable_rows(const struct js_ktable *t);
/**
 * Append the table to `out`, each line prefixed by `indent`: every column
 * but the last padded to its widest cell plus 3 spaces and at least 6
 * (kubectl's tabwriter: minwidth 6, padding 3); cells are measured in
 * bytes, and a newline in a cell ends it with "..." as kubectl does.
 * Returns 0, or JS_ETOOLARGE when `out` is full.
 */
JS_WARN_UNUSED int js_ktable_print(const struct js_ktable *t, const char *indent, struct js_buf *out);

/**
 * `live` cut down to the shape of `shape`: of an object, the members
 * `shape` has (recursively; a member `live` lacks stays absent); of two
 * arrays of equal length, element by element; anything else is `live`
 * itself. So a diff of the result against `shape` shows only what `shape`
 * sets differently, not what the server added (defaults, status, uid).
 * Returns a new reference; NULL when `live` is NULL.
 */
json_t *js_kprint_prune(const json_t *live, const json_t *shape);

#endif
