/*
 * parse.h - strict parsing of numbers (and booleans) from text (CLI flags,
 * annotations, labels, feature gates): the whole input must be the number, with no whitespace, no base
 * prefix and no trailing characters, and the value must fit. The rules are
 * Go's strconv.ParseInt(s, 10, 64), which is how Kubernetes components read
 * the same text: an optional '+' or '-', then one or more decimal digits
 * (leading zeros allowed).
 *
 * Replaces strtol/strtoll/atoi (STYLE §3 #14), which skip whitespace, accept
 * trailing garbage and hex/octal prefixes, and report overflow through errno.
 *
 * Pure functions; thread-safe.
 */
#ifndef JS_PARSE_H
#define JS_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

/**
 * Parse the `n` bytes at `p` (need not be NUL-terminated; NULL only with
 * n == 0) as a signed decimal 64-bit integer.
 * Returns 0 and *ret; -EINVAL when the text is not a number (empty, a sign
 * alone, any other character, embedded NUL); -ERANGE when it is a number
 * outside int64_t. *ret is untouched on failure.
 */
JS_WARN_UNUSED int js_parse_i64(const char *p, size_t n, int64_t *ret);

/**
 * As js_parse_i64, and the value must also lie in [min, max]: -ERANGE
 * otherwise. Syntax errors win over range errors.
 */
JS_WARN_UNUSED int js_parse_i64_in(const char *p, size_t n, int64_t min, int64_t max, int64_t *ret);

/**
 * Parse the `n` bytes at `p` as a boolean by Go's strconv.ParseBool, which
 * Kubernetes components use for boolean flags and --feature-gates values:
 * true is "1", "t", "T", "true", "TRUE", "True"; false is "0", "f", "F",
 * "false", "FALSE", "False". Nothing else (no "yes", no whitespace).
 * Returns 0 and *ret; -EINVAL otherwise, *ret untouched.
 */
JS_WARN_UNUSED int js_parse_bool(const char *p, size_t n, bool *ret);

#endif
