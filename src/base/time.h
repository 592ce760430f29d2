/*
 * time.h - RFC 3339 timestamps <-> Unix seconds, and the one set of
 * saturating duration helpers. Pure: no clock reads, no time zone database,
 * so the reconcile core may use it.
 *
 * Durations come from the API and flags (activeDeadlineSeconds,
 * terminationGracePeriodSeconds, ttlSecondsAfterFinished, Retry-After, lease
 * durations, ...), and any schema-valid value will be used, the largest
 * included: converting units or adding a delay to a clock reading must not
 * overflow (undefined behaviour for signed values, a deadline in the past
 * for wrapped ones). These helpers clamp to the type's range instead: a
 * deadline too far to represent is "never" in practice (INT64_MAX ms is
 * 292 million years), and a negative duration, where one is not
 * meaningful, counts as none (0).
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

/** a + b, clamped to [INT64_MIN, INT64_MAX]. */
static inline int64_t js_sat_add(int64_t a, int64_t b)
{
	int64_t r;
	if (!__builtin_add_overflow(a, b, &r))
		return r;
	return b > 0 ? INT64_MAX : INT64_MIN;
}

/** a - b, clamped to [INT64_MIN, INT64_MAX]. */
static inline int64_t js_sat_sub(int64_t a, int64_t b)
{
	int64_t r;
	if (!__builtin_sub_overflow(a, b, &r))
		return r;
	return b < 0 ? INT64_MAX : INT64_MIN;
}

/** a * b, clamped to [INT64_MIN, INT64_MAX]. */
static inline int64_t js_sat_mul(int64_t a, int64_t b)
{
	int64_t r;
	if (!__builtin_mul_overflow(a, b, &r))
		return r;
	return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
}

/** a + b for unsigned clock values (ns), clamped at UINT64_MAX. */
static inline uint64_t js_sat_add_u64(uint64_t a, uint64_t b)
{
	uint64_t r;
	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/** A duration of `n` units as `per` smaller units (seconds to ms: per
 * 1000), for unsigned deadlines: a negative `n` is 0, a product past
 * UINT64_MAX is UINT64_MAX. */
static inline uint64_t js_sat_scale_u64(int64_t n, uint64_t per)
{
	uint64_t r;
	if (n <= 0)
		return 0;
	return __builtin_mul_overflow((uint64_t)n, per, &r) ? UINT64_MAX : r;
}

/** Seconds as milliseconds, clamped (negative stays negative). */
static inline int64_t js_sat_s_to_ms(int64_t s)
{
	return js_sat_mul(s, 1000);
}

#endif
