/*
 * parse_test.c - strict integer parsing, table-driven: each case is the
 * input text (with an explicit length, so embedded NULs and unterminated
 * views are covered), an optional range, and the expected result.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/parse.h"

struct pcase {
	const char *name;
	const char *text;
	size_t n;           /* 0: strlen(text) */
	bool ranged;
	int64_t min, max;
	int want_rc;
	int64_t want;
};

#define NO_RANGE false, 0, 0

static const struct pcase cases[] = {
	{"zero", "0", 0, NO_RANGE, 0, 0},
	{"positive", "42", 0, NO_RANGE, 0, 42},
	{"negative", "-42", 0, NO_RANGE, 0, -42},
	{"plus sign", "+7", 0, NO_RANGE, 0, 7},
	{"leading zeros", "007", 0, NO_RANGE, 0, 7},
	{"minus zero", "-0", 0, NO_RANGE, 0, 0},
	{"int64 max", "9223372036854775807", 0, NO_RANGE, 0, INT64_MAX},
	{"int64 min", "-9223372036854775808", 0, NO_RANGE, 0, INT64_MIN},
	{"max plus one", "9223372036854775808", 0, NO_RANGE, -ERANGE, 0},
	{"min minus one", "-9223372036854775809", 0, NO_RANGE, -ERANGE, 0},
	{"far too big", "123456789012345678901234567890", 0, NO_RANGE, -ERANGE, 0},
	{"empty", "", 0, NO_RANGE, -EINVAL, 0},
	{"sign alone", "-", 0, NO_RANGE, -EINVAL, 0},
	{"two signs", "--1", 0, NO_RANGE, -EINVAL, 0},
	{"leading space", " 1", 0, NO_RANGE, -EINVAL, 0},
	{"trailing space", "1 ", 0, NO_RANGE, -EINVAL, 0},
	{"trailing garbage", "12ms", 0, NO_RANGE, -EINVAL, 0},
	{"hex prefix", "0x10", 0, NO_RANGE, -EINVAL, 0},
	{"decimal point", "1.5", 0, NO_RANGE, -EINVAL, 0},
	{"exponent", "1e3", 0, NO_RANGE, -EINVAL, 0},
	{"underscore", "1_000", 0, NO_RANGE, -EINVAL, 0},
	{"syntax beats range", "99999999999999999999x", 0, NO_RANGE, -EINVAL, 0},
	{"embedded NUL", "1\0002", 3, NO_RANGE, -EINVAL, 0},
	{"view stops at n", "1234", 2, NO_RANGE, 0, 12},
	{"in range", "50", 0, true, 1, 3600000, 0, 50},
	{"range low edge", "1", 0, true, 1, 3600000, 0, 1},
	{"range high edge", "3600000", 0, true, 1, 3600000, 0, 3600000},
	{"below range", "0", 0, true, 1, 3600000, -ERANGE, 0},
	{"above range", "3600001", 0, true, 1, 3600000, -ERANGE, 0},
	{"negative below range", "-5", 0, true, 1, 10, -ERANGE, 0},
	{"ranged syntax error", "x", 0, true, 1, 10, -EINVAL, 0},
	{"ranged overflow", "99999999999999999999", 0, true, 1, 10, -ERANGE, 0},
};

static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct pcase *c = &cases[i];
		size_t n = c->n ? c->n : strlen(c->text);
		const int64_t sentinel = 0x5a5a5a5a;
		int64_t got = sentinel;
		int rc = c->ranged ? js_parse_i64_in(c->text, n, c->min, c->max, &got) : js_parse_i64(c->text, n, &got);
		if (rc != c->want_rc || (rc == 0 && got != c->want) || (rc < 0 && got != sentinel))
			fail_msg("case '%s': want rc %d value %lld, got rc %d value %lld%s", c->name, c->want_rc,
				 (long long)c->want, rc, (long long)got,
				 rc < 0 && got != sentinel ? " (output written on failure)" : "");
	}
}

static const struct bcase {
	const char *text;
	size_t n; /* 0: strlen(text) */
	int want_rc;
	bool want;
} bool_cases[] = {
	{"true", 0, 0, true},      {"True", 0, 0, true},     {"TRUE", 0, 0, true},    {"t", 0, 0, true},
	{"T", 0, 0, true},         {"1", 0, 0, true},        {"false", 0, 0, false},  {"False", 0, 0, false},
	{"FALSE", 0, 0, false},    {"f", 0, 0, false},       {"F", 0, 0, false},      {"0", 0, 0, false},
	{"yes", 0, -EINVAL, 0},    {"on", 0, -EINVAL, 0},    {"tRUE", 0, -EINVAL, 0}, {"", 0, -EINVAL, 0},
	{" true", 0, -EINVAL, 0},  {"true ", 0, -EINVAL, 0}, {"2", 0, -EINVAL, 0},    {"truex", 4, 0, true},
	{"true\0", 5, -EINVAL, 0},
};

/* Go's strconv.ParseBool words, nothing else; *ret untouched on failure. */
static void test_bool(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bool_cases) / sizeof(bool_cases[0]); i++) {
		const struct bcase *c = &bool_cases[i];
		size_t n = c->n ? c->n : strlen(c->text);
		bool got = !c->want;
		bool before = got;
		int rc = js_parse_bool(c->text, n, &got);
		if (rc != c->want_rc || (rc == 0 && got != c->want) || (rc < 0 && got != before))
			fail_msg("bool '%.*s': want rc %d value %d, got rc %d value %d", (int)n, c->text, c->want_rc,
				 c->want, rc, got);
	}
}

static void test_null_view(void **state)
{
	(void)state;
	int64_t v = 3;
	assert_int_equal(js_parse_i64(NULL, 0, &v), -EINVAL);
	assert_int_equal(v, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_null_view),
		cmocka_unit_test(test_bool),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
