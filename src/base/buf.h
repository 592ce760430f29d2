/*
 * buf.h - a growable, NUL-terminated byte buffer with a ceiling.
 *
 * Used to build strings (names, paths, messages, output documents) without
 * sprintf/strcat. Every buffer has a maximum size fixed at init: an append that
 * would cross it fails with -E2BIG and leaves the buffer as it was, so a
 * hostile input cannot grow one without bound. Not thread-safe; one owner.
 */
#ifndef JS_BUF_H
#define JS_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "base/common.h"

/** A byte buffer. Fields are read-only for users; `p` is NULL until the first
 * append and always NUL-terminated after it. */
struct js_buf {
	char *p;      /* contents, NUL-terminated (NULL when empty and unused) */
	size_t len;   /* bytes used, excluding the NUL */
	size_t cap;   /* bytes allocated */
	size_t max;   /* ceiling on len, bytes */
};

/** Initialise an empty buffer that may hold up to `max` bytes (0 = 64 MiB). */
void js_buf_init(struct js_buf *b, size_t max);

/** Free the contents and reset to empty; the struct itself is the caller's. */
void js_buf_done(struct js_buf *b);

/** Drop the contents but keep the allocation. */
void js_buf_clear(struct js_buf *b);

/** Append `n` bytes. Returns 0, or -E2BIG past the ceiling (buffer unchanged). */
JS_WARN_UNUSED int js_buf_add(struct js_buf *b, const void *data, size_t n);

/** Append a NUL-terminated string. Errors as js_buf_add. */
JS_WARN_UNUSED int js_buf_puts(struct js_buf *b, const char *s);

/** Append printf-formatted text. Errors as js_buf_add. */
JS_WARN_UNUSED int js_buf_printf(struct js_buf *b, const char *fmt, ...) JS_PRINTF(2, 3);

/** As js_buf_printf with a va_list. */
JS_WARN_UNUSED int js_buf_vprintf(struct js_buf *b, const char *fmt, va_list ap) JS_PRINTF(2, 0);

/** Format into a new malloc'd string (caller frees); never NULL. For the
 * bounded names and messages built all over the tree; output past the
 * default 64 MiB ceiling is truncated to empty, which bounded inputs never
 * reach. */
char *js_buf_format(const char *fmt, ...) JS_PRINTF(1, 2);

/** Hand the contents to the caller (free() them) and reset the buffer. Never
 * returns NULL: an unused buffer yields an empty string. */
char *js_buf_take(struct js_buf *b);

/** Contents as a string; "" when empty. Borrowed until the next change. */
const char *js_buf_str(const struct js_buf *b);

#endif
