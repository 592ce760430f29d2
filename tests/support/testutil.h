/*
 * testutil.h - helpers shared by the unit tests: build JobSets from inline
 * YAML plus a JSON merge patch, and assertion helpers that print both sides.
 */
#ifndef JS_TESTUTIL_H
#define JS_TESTUTIL_H

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/diag.h"

struct js_jobset;

/** Parse a YAML string (one document) into JSON; fails the test on error.
 * Caller owns the result. */
json_t *tu_yaml(const char *yaml);

/** Apply an RFC 7386 JSON merge patch (given as JSON text, may be NULL) to
 * `target` in place. */
void tu_merge_patch(json_t *target, const char *patch_json);

/** Decode (strict) a JSON object into a JobSet; fails the test on error.
 * Only for tests of api and the layers on it (testutil_api.c). */
struct js_jobset *tu_decode(const json_t *j);

/** The JobSet of the YAML file at `rel` (under the source tree) with the
 * JSON merge patch `patch` (may be NULL) applied; fails the test on error.
 * Caller frees with js_jobset_free. */
struct js_jobset *tu_fixture(const char *rel, const char *patch);

/** Read a whole file into a malloc'd string (NULL if missing). */
char *tu_read_file(const char *path, size_t *len);

/** Path under the source tree (JS_SOURCE_DIR env set by CTest). Static buffer. */
const char *tu_src_path(const char *rel);

/** Print every diagnostic (for failing-test output). */
void tu_print_diag(const struct js_diag *d);

#endif
