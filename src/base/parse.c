/*
 * parse.c - strict number parsing (see parse.h).
 */
#include "base/parse.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

int js_parse_i64(const char *p, size_t n, int64_t *ret)
{
	if (!p || n == 0)
		return -EINVAL;
	size_t i = 0;
	bool neg = false;
	if (p[0] == '+' || p[0] == '-') {
		neg = p[0] == '-';
		i = 1;
	}
	if (i == n)
		return -EINVAL;
	/* Check the syntax of the whole text first, so that "9...9x" is a
	 * syntax error, not a range error (as in Go). */
	for (size_t k = i; k < n; k++) {
		if (p[k] < '0' || p[k] > '9')
			return -EINVAL;
	}
	/* Accumulate as a negative number: its range is one larger, so
	 * INT64_MIN needs no special case. */
	int64_t v = 0;
	for (; i < n; i++) {
		int d = p[i] - '0';
		if (v < (INT64_MIN + d) / 10)
			return -ERANGE;
		v = v * 10 - d;
	}
	if (!neg) {
		if (v == INT64_MIN)
			return -ERANGE;
		v = -v;
	}
	*ret = v;
	return 0;
}

int js_parse_i64_in(const char *p, size_t n, int64_t min, int64_t max, int64_t *ret)
{
	int64_t v;
	int r = js_parse_i64(p, n, &v);
	if (r < 0)
		return r;
	if (v < min || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

int js_parse_bool(const char *p, size_t n, bool *ret)
{
	static const char *const words[][2] = {
		{"1", "0"}, {"t", "f"}, {"T", "F"}, {"true", "false"}, {"TRUE", "FALSE"}, {"True", "False"},
	};
	for (size_t i = 0; p && i < sizeof(words) / sizeof(words[0]); i++) {
		for (int on = 0; on < 2; on++) {
			const char *w = words[i][on];
			if (strlen(w) == n && memcmp(w, p, n) == 0) {
				*ret = on == 0;
				return 0;
			}
		}
	}
	return -EINVAL;
}
