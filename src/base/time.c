/*
 * time.c - RFC 3339 timestamps without the C library's time zone state
 * (civil-date arithmetic after H. Hinnant's days_from_civil).
 */
#include "base/time.h"

#include <stdbool.h>
#include <string.h>

#include "base/common.h"

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int64_t *m, int64_t *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp + (mp < 10 ? 3 : -9);
	*y = yoe + era * 400 + (*m <= 2);
}

/* Read exactly `n` digits at *p. */
static bool digits(const char **p, int n, int64_t *ret)
{
	int64_t v = 0;
	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return false;
		v = v * 10 + (c - '0');
	}
	*p += n;
	*ret = v;
	return true;
}

int js_time_parse_rfc3339(const char *s, int64_t *ret)
{
	int64_t y, mo, d, h, mi, se, oh = 0, om = 0;
	const char *p = s;

	if (!s)
		return JS_EINVALID;
	if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' || !digits(&p, 2, &d))
		return JS_EINVALID;
	if (*p != 'T' && *p != 't' && *p != ' ')
		return JS_EINVALID;
	p++;
	if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' || !digits(&p, 2, &se))
		return JS_EINVALID;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
		return JS_EINVALID;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return JS_EINVALID;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	int sign = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p == '+' ? 1 : -1;
		p++;
		if (!digits(&p, 2, &oh) || *p++ != ':' || !digits(&p, 2, &om))
			return JS_EINVALID;
	} else {
		return JS_EINVALID;
	}
	if (*p)
		return JS_EINVALID;
	*ret = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - sign * (oh * 3600 + om * 60);
	return 0;
}

void js_time_format_rfc3339(int64_t t, char out[21])
{
	int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
	int64_t rem = t - days * 86400, y, m, d;
	civil_from_days(days, &y, &m, &d);
	if (y < 0 || y > 9999) { /* RFC 3339 has four year digits; clamp */
		memcpy(out, y < 0 ? "0000-01-01T00:00:00Z" : "9999-12-31T23:59:59Z", 21);
		return;
	}
	int64_t v[6] = {y, m, d, rem / 3600, rem / 60 % 60, rem % 60};
	static const char sep[6] = {'-', '-', 'T', ':', ':', 'Z'};
	char *o = out;
	for (int i = 0; i < 6; i++) {
		int w = i == 0 ? 4 : 2;
		for (int k = w - 1; k >= 0; k--) {
			o[k] = (char)('0' + v[i] % 10);
			v[i] /= 10;
		}
		o += w;
		*o++ = sep[i];
	}
	*o = '\0';
}

