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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
