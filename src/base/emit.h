/*
 * emit.h - write JSON trees as YAML or JSON text, byte-stable.
 *
 * Keys are sorted, so the same object always prints the same bytes (golden
 * tests and `jobset render` rely on it). In YAML, a string that would read
 * back as another type under YAML 1.1 (e.g. "true", "0755", "yes", "") is
 * quoted, so the output loads back to exactly the input. Pure.
 */
#ifndef JS_EMIT_H
#define JS_EMIT_H

#include <jansson.h>

#include "base/buf.h"
#include "base/common.h"

/** Append `v` as one YAML document (starting with "---\n" when
 * `doc_start`). Errors: -E2BIG past the buffer's ceiling, -ENOMEM. */
JS_WARN_UNUSED int js_emit_yaml(const json_t *v, int doc_start, struct js_buf *out);

/** Append `v` as indented JSON with sorted keys and a final newline. */
JS_WARN_UNUSED int js_emit_json(const json_t *v, struct js_buf *out);

#endif
