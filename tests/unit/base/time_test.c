/*
 * time_test.c - the saturating duration helpers of base/time.h (issue 22):
 * every value the schema allows for a duration (int64 max, int32 max, 0,
 * negative) converts and adds without overflow, clamped to the type's
 * range, and ordinary values are exact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/time.h"

static void test_add(void **state)
{
	(void)state;
	static const struct {
		int64_t a, b, want;
	} rows[] = {
		{1, 2, 3},
		{INT64_MAX, 1, INT64_MAX},
		{INT64_MAX, INT64_MAX, INT64_MAX},
		{INT64_MIN, -1, INT64_MIN},
		{INT64_MIN, INT64_MIN, INT64_MIN},
		{INT64_MAX, INT64_MIN, -1},
		{-5, 3, -2},
		{1700000000000, INT64_MAX, INT64_MAX}, /* a clock reading plus the longest delay */
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		assert_int_equal(js_sat_add(rows[i].a, rows[i].b), rows[i].want);
}

static void test_mul_and_seconds(void **state)
{
	(void)state;
	static const struct {
		int64_t s, want_ms;
	} rows[] = {
		{0, 0},
		{1, 1000},
		{-1, -1000},
		{INT32_MAX, 2147483647000},
		{INT64_MAX, INT64_MAX},
		{INT64_MAX / 1000, INT64_MAX / 1000 * 1000},
		{INT64_MAX / 1000 + 1, INT64_MAX}, /* the smallest that overflows */
		{INT64_MIN, INT64_MIN},
		{INT64_MIN / 1000 - 1, INT64_MIN},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		assert_int_equal(js_sat_s_to_ms(rows[i].s), rows[i].want_ms);
	assert_int_equal(js_sat_mul(INT64_MAX, -2), INT64_MIN);
	assert_int_equal(js_sat_mul(-3, -4), 12);
	assert_int_equal(js_sat_mul(INT64_MIN, -1), INT64_MAX);
}

static void test_unsigned(void **state)
{
	(void)state;
	assert_true(js_sat_scale_u64(INT64_MAX, 1000000000u) == UINT64_MAX);
	assert_true(js_sat_scale_u64(INT32_MAX, 1000000000u) == 2147483647000000000ull);
	assert_true(js_sat_scale_u64(0, 1000000000u) == 0);
	assert_true(js_sat_scale_u64(-1, 1000000000u) == 0);
	assert_true(js_sat_scale_u64(INT64_MIN, 1000u) == 0);
	assert_true(js_sat_add_u64(UINT64_MAX - 1, 5) == UINT64_MAX);
	assert_true(js_sat_add_u64(7, 5) == 12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add),
		cmocka_unit_test(test_mul_and_seconds),
		cmocka_unit_test(test_unsigned),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
