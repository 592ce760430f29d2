/*
 * time.h - RFC 3339 timestamps <-> Unix seconds. Pure: no clock reads, no
 * time zone database, so the reconcile core may use it.
 */
#ifndef JS_TIME_H
#define JS_TIME_H

#include <stdint.h>

#include "base/common.h"

/**
 * Parse an RFC 3339 timestamp ("2024-05-01T10:00:00Z"; fractions and
 * numeric offsets accepted, fractions dropped) into Unix seconds. Returns 0
 * and *ret, or JS_EINVALID (NULL, malformed, or a field out of range).
 */
JS_WARN_UNUSED int js_time_parse_rfc3339(const char *s, int64_t *ret);

/** Format Unix seconds as RFC 3339 UTC ("2024-05-01T10:00:00Z"); writes 21
 * bytes including the NUL. Years outside 0000-9999 are clamped. */
void js_time_format_rfc3339(int64_t t, char out[21]);

#endif
