/*
 * diag.h - user-facing diagnostics as data.
 *
 * Parsing and validation append entries here instead of printing or stopping
 * at the first problem. Each entry carries a Kubernetes field path
 * (`spec.replicatedJobs[1].name`), a Kubernetes error type (Required, Invalid,
 * ...), the offending value when there is one, a message in our words, and
 * the `file:line:col` when the loader could tell where the value was written.
 * The CLI and the admission webhook render the same list. Not thread-safe.
 */
#ifndef JS_DIAG_H
#define JS_DIAG_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/common.h"

/** Kubernetes field.ErrorType, plus the loader's own kinds. */
enum js_diag_type {
	JS_DIAG__INVALID = -1,
	JS_DIAG_REQUIRED,      /* "Required value" */
	JS_DIAG_INVALID,       /* "Invalid value" */
	JS_DIAG_NOT_SUPPORTED, /* "Unsupported value" (enum outside its set) */
	JS_DIAG_DUPLICATE,     /* "Duplicate value" */
	JS_DIAG_TOO_LONG,      /* "Too long" */
	JS_DIAG_TOO_MANY,      /* "Too many" */
	JS_DIAG_FORBIDDEN,     /* "Forbidden" */
	JS_DIAG_INTERNAL,      /* "Internal error": upstream's field-less errors */
	JS_DIAG_UNKNOWN_FIELD, /* "Unknown field" (strict decoding) */
	JS_DIAG_TYPE,          /* "Invalid type": a number where a string belongs */
	JS_DIAG_SYNTAX,        /* "Syntax error": malformed YAML/JSON */
	JS_DIAG_LIMIT,         /* "Limit exceeded": base/limits.h */
	JS_DIAG__COUNT
};

/** One diagnostic. Strings are owned by the list. */
struct js_diag_entry {
	enum js_diag_type type;
	char *path;    /* field path, "" when the error has none (upstream "<nil>") */
	char *value;   /* offending value as JSON text, or NULL */
	char *message; /* our words */
	char *file;    /* source file, or NULL */
	int line, col; /* 1-based position, 0 when unknown */
};

/** A list of diagnostics. Zero-initialise or js_diag_init(). */
struct js_diag {
	size_t n, cap;
	struct js_diag_entry *items;
};

void js_diag_init(struct js_diag *d);

/** Free every entry; the struct is the caller's. */
void js_diag_done(struct js_diag *d);

/** Append an entry. `path` and `value` are copied (NULL path = ""; NULL value
 * = none); `fmt` formats the message, truncated to JS_LIMIT_DIAG_MSG bytes.
 * Returns the new entry, borrowed until the list changes. */
struct js_diag_entry *js_diag_add(struct js_diag *d, enum js_diag_type type, const char *path,
				  const char *value, const char *fmt, ...) JS_PRINTF(5, 6);

/** Record where an entry's value was written (copies `file`). */
void js_diag_set_pos(struct js_diag_entry *e, const char *file, int line, int col);

/** Move every entry of `src` to the end of `dst`, leaving `src` empty. */
void js_diag_move(struct js_diag *dst, struct js_diag *src);

/** Kubernetes text for a type ("Invalid value"). */
const char *js_diag_type_to_string(enum js_diag_type t);

/** Render one entry on one line:
 *  `file:line:col: path: Type: value: message` (absent parts left out; an
 *  entry without a path renders `<nil>` as upstream does for internal errors
 *  only when `nil_path` is true). Errors as js_buf_add. */
JS_WARN_UNUSED int js_diag_format(const struct js_diag_entry *e, bool nil_path, struct js_buf *out);

/** True when some entry's message contains `needle` (and, when `path` is not
 * NULL, its path equals `path`). For tests and callers that branch on text. */
bool js_diag_has(const struct js_diag *d, const char *path, const char *needle);

#endif
