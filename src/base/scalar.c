/*
 * scalar.c - YAML 1.1 plain-scalar resolution (the rules of kubectl's YAML
 * library: booleans y/yes/on/true and their negatives in three casings, null
 * as ~/null/empty, Go base-prefixed integers with underscores, floats).
 */
#include "base/scalar.h"

#include <errno.h>
#include <math.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const true_words[] = {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"};
static const char *const false_words[] = {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"};
static const char *const null_words[] = {"", "~", "null", "Null", "NULL"};

static bool one_of(const char *s, const char *const *words, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, words[i]) == 0)
			return true;
	return false;
}

/* Go strconv.ParseInt(s, 0, 64) after removing '_' (what the YAML library
 * does): optional sign, then 0x/0o/0b prefix, a leading 0 for octal, or
 * decimal. Returns 1 parsed, 0 not an integer, -1 out of range. */
static int parse_int(const char *in, long long *out)
{
	char buf[128];
	size_t n = 0;
	for (const char *p = in; *p; p++) {
		if (*p == '_')
			continue;
		if (n + 1 >= sizeof(buf))
			return 0;
		buf[n++] = *p;
	}
	buf[n] = '\0';
	const char *p = buf;
	bool neg = false;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	int base = 10;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	} else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O')) {
		base = 8;
		p += 2;
	} else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B')) {
		base = 2;
		p += 2;
	} else if (p[0] == '0' && p[1]) {
		base = 8;
		p += 1;
	}
	if (!*p)
		return 0;
	unsigned long long v = 0;
	for (; *p; p++) {
		int d;
		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			d = *p - 'A' + 10;
		else
			return 0;
		if (d >= base)
			return 0;
		if (v > (ULLONG_MAX - (unsigned)d) / (unsigned)base)
			return -1;
		v = v * (unsigned)base + (unsigned)d;
	}
	if (!neg && v > (unsigned long long)LLONG_MAX)
		return -1;
	if (neg && v > (unsigned long long)LLONG_MAX + 1ULL)
		return -1;
	*out = neg ? (long long)(0ULL - v) : (long long)v;
	return 1;
}

/* ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ and the .inf/.nan words. */
static bool parse_float(const char *s, double *out)
{
	static const char *const inf[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"};
	static const char *const ninf[] = {"-.inf", "-.Inf", "-.INF"};
	static const char *const nan_[] = {".nan", ".NaN", ".NAN"};
	if (one_of(s, inf, 6)) {
		*out = INFINITY;
		return true;
	}
	if (one_of(s, ninf, 3)) {
		*out = -INFINITY;
		return true;
	}
	if (one_of(s, nan_, 3)) {
		*out = NAN;
		return true;
	}
	const char *p = s;
	if (*p == '+' || *p == '-')
		p++;
	size_t digits = 0, frac = 0;
	while (*p >= '0' && *p <= '9') {
		p++;
		digits++;
	}
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			p++;
			frac++;
		}
		if (!digits && !frac)
			return false;
	} else if (!digits) {
		return false;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p)
		return false;
	errno = 0;
	*out = strtod(s, NULL);
	return true;
}

/* JSON has no Inf/NaN: kubectl refuses them, and so do we (as a string). */
static json_t *number_from_float(double d)
{
	if (!isfinite(d))
		return NULL;
	/* kubectl's JSON conversion writes an integral float as an integer. */
	if (d == floor(d) && fabs(d) < 9.007199254740992e15)
		return json_integer((json_int_t)d);
	return json_real(d);
}

static json_t *resolve_plain(const char *s)
{
	if (one_of(s, null_words, JS_ARRAY_SIZE(null_words)))
		return json_null();
	if (one_of(s, true_words, JS_ARRAY_SIZE(true_words)))
		return json_true();
	if (one_of(s, false_words, JS_ARRAY_SIZE(false_words)))
		return json_false();
	if (strchr("+-.0123456789", s[0])) {
		long long i;
		int r = parse_int(s, &i);
		if (r == 1)
			return json_integer(i);
		double d;
		if (parse_float(s, &d)) {
			json_t *n = number_from_float(d);
			if (n)
				return n;
		}
	}
	return NULL;
}

static bool tag_is(const char *tag, const char *name)
{
	static const char prefix[] = "tag:yaml.org,2002:";
	return tag && strncmp(tag, prefix, sizeof(prefix) - 1) == 0 && strcmp(tag + sizeof(prefix) - 1, name) == 0;
}

int js_scalar_resolve(const char *text, const char *tag, bool quoted, json_t **ret)
{
	if (tag && strcmp(tag, "!") != 0) {
		json_t *v = NULL;
		if (tag_is(tag, "str")) {
			v = json_string(text);
		} else if (tag_is(tag, "null")) {
			v = json_null();
		} else if (tag_is(tag, "bool")) {
			if (one_of(text, true_words, JS_ARRAY_SIZE(true_words)))
				v = json_true();
			else if (one_of(text, false_words, JS_ARRAY_SIZE(false_words)))
				v = json_false();
		} else if (tag_is(tag, "int")) {
			long long i;
			if (parse_int(text, &i) == 1)
				v = json_integer(i);
		} else if (tag_is(tag, "float")) {
			double d;
			long long i;
			if (parse_int(text, &i) == 1)
				v = json_integer(i);
			else if (parse_float(text, &d))
				v = number_from_float(d);
		} else {
			/* Unknown local tags (e.g. !Ref) carry no meaning for Kubernetes. */
			v = json_string(text);
		}
		if (!v)
			return JS_EINVALID;
		*ret = v;
		return 0;
	}
	if (quoted || tag) {
		*ret = json_string(text);
		return 0;
	}
	json_t *v = resolve_plain(text);
	*ret = v ? v : json_string(text);
	return 0;
}

int js_scalar_key(const char *text, const char *tag, bool quoted, char **ret)
{
	json_t *v = NULL;
	int r = js_scalar_resolve(text, tag, quoted, &v);
	if (r < 0)
		return r;
	char *s;
	if (json_is_string(v))
		s = js_xstrdup(json_string_value(v));
	else if (json_is_null(v))
		s = js_xstrdup("null");
	else
		s = json_dumps(v, JSON_ENCODE_ANY);
	json_decref(v);
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

bool js_scalar_plain_is_string(const char *s)
{
	json_t *v = resolve_plain(s);
	if (!v)
		return true;
	json_decref(v);
	return false;
}
