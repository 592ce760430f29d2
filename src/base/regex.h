/*
 * regex.h - RE2 regular expressions behind a C interface.
 *
 * Failure-policy message patterns are user input matched against Job failure
 * messages; RE2 guarantees linear-time matching, so a hostile pattern cannot
 * stall a reconcile (SPEC §11.8: "RE2 syntax, unanchored find"). Compiled
 * patterns are immutable and may be shared between threads.
 */
#ifndef JS_REGEX_H
#define JS_REGEX_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct js_regex;

/**
 * Compile `pattern` with RE2 syntax. Returns 0 and *ret_re (free with
 * js_regex_free), or -22 (-EINVAL) when the pattern does not compile; then
 * `err` (if not NULL) receives RE2's explanation, truncated to `errlen`.
 */
int js_regex_compile(const char *pattern, struct js_regex **ret_re, char *err, size_t errlen);

/** True when `re` matches anywhere in `text` (unanchored search). */
bool js_regex_search(const struct js_regex *re, const char *text);

/** Free a compiled pattern. NULL is a no-op. Returns NULL. */
struct js_regex *js_regex_free(struct js_regex *re);

#ifdef __cplusplus
}
#endif

#endif
