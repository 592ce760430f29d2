/*
 * load.h - read YAML or JSON manifests into JSON trees, remembering where
 * every value was written.
 *
 * Accepts what kubectl accepts: multi-document YAML streams, JSON, anchors
 * and aliases (with merge keys `<<`), and the YAML 1.1 plain scalars that
 * kubectl's YAML library resolves (yes/no/on/off booleans, 0x/0o/0b and
 * leading-zero octal integers, `~` null, underscores in numbers). Quoted
 * scalars are always strings. Duplicate keys are errors.
 *
 * Bounded: input size (JS_LIMIT_MANIFEST_BYTES), nesting depth
 * (JS_LIMIT_NESTING_DEPTH), node count with aliases expanded
 * (JS_LIMIT_DOC_NODES, which stops alias bombs) and documents per stream.
 * Each problem is one diagnostic naming file:line:col.
 *
 * After loading, js_docs_locate() maps field paths from validation back to
 * file:line:col. Pure apart from js_docs_load_file(), which reads a file.
 */
#ifndef JS_LOAD_H
#define JS_LOAD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/common.h"
#include "base/diag.h"

/** A loaded stream of documents (opaque). */
struct js_docs;

/**
 * Parse `len` bytes of YAML or JSON named `file` (used in diagnostics).
 * Returns 0 and *ret_docs (free with js_docs_free) on success, even for an
 * empty stream. On malformed input or a limit exceeded returns JS_EINVALID or
 * JS_ETOOLARGE, appends one diagnostic with its position to `diag`, and leaves
 * *ret_docs untouched.
 */
JS_WARN_UNUSED int js_docs_load(const char *file, const char *data, size_t len, struct js_diag *diag,
				struct js_docs **ret_docs);

/**
 * Read `path` ("-" for standard input) and parse it as js_docs_load does.
 * Reading stops at JS_LIMIT_MANIFEST_BYTES + 1 so a huge input is refused
 * without being held in memory. Extra errors: -errno when the file cannot be
 * read (a diagnostic names it too).
 */
JS_WARN_UNUSED int js_docs_load_file(const char *path, struct js_diag *diag, struct js_docs **ret_docs);

/** Free a stream. NULL is a no-op. Returns NULL. */
struct js_docs *js_docs_free(struct js_docs *docs);

/** Number of documents (empty documents are dropped). */
size_t js_docs_count(const struct js_docs *docs);

/** Root of document `i`. Borrowed until js_docs_free. */
const json_t *js_docs_root(const struct js_docs *docs, size_t i);

/** First line (1-based) of document `i`. */
int js_docs_line(const struct js_docs *docs, size_t i);

/** File name given at load. Borrowed. */
const char *js_docs_file(const struct js_docs *docs);

/**
 * Position of the value at field path `path` (e.g.
 * `spec.replicatedJobs[0].template.spec.completions`, map keys in brackets)
 * in document `i`. A path that goes past what was written resolves to the
 * deepest value that exists. Returns false only when nothing matched.
 */
bool js_docs_pos(const struct js_docs *docs, size_t i, const char *path, int *ret_line, int *ret_col);

/** Set file:line:col on diagnostics `from`..end of `diag` by their paths. */
void js_docs_locate(const struct js_docs *docs, size_t i, struct js_diag *diag, size_t from);

#endif
