/*
 * clock_test.c - deadlines of the monotonic clock (base/clock.h): a
 * negative wait is no wait, a wait past the end of the clock saturates
 * instead of wrapping to the past, and nanoseconds carry into seconds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/clock.h"
#include "base/common.h"

static void test_after(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		int64_t ms;
		uint64_t min_ns, max_ns; /* after - before, bounds */
		bool saturated;
	} cases[] = {
		{"zero", 0, 0, 1000000000u, false},
		{"negative is now", -5000, 0, 1000000000u, false},
		{"INT64_MIN is now", INT64_MIN, 0, 1000000000u, false},
		{"1500 ms", 1500, 1500000000u, 2500000000u, false},
		{"INT64_MAX saturates", INT64_MAX, 0, 0, true},
	};
	for (size_t i = 0; i < JS_ARRAY_SIZE(cases); i++) {
		uint64_t before = js_clock_now_ns();
		uint64_t at = js_clock_after_ns(cases[i].ms);
		if (cases[i].saturated) {
			if (at != UINT64_MAX)
				fail_msg("%s: %llu, want UINT64_MAX", cases[i].name, (unsigned long long)at);
			continue;
		}
		if (at < before || at - before < cases[i].min_ns || at - before > cases[i].max_ns)
			fail_msg("%s: %llu ns after now", cases[i].name, (unsigned long long)(at - before));
	}
}

static void test_ts(void **state)
{
	(void)state;
	struct timespec ts = js_clock_ts(3999999999u);
	assert_int_equal(ts.tv_sec, 3);
	assert_int_equal(ts.tv_nsec, 999999999);
	ts = js_clock_ts(4000000000u);
	assert_int_equal(ts.tv_sec, 4);
	assert_int_equal(ts.tv_nsec, 0);
	ts = js_clock_deadline_ts(-1);
	assert_true(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_after),
		cmocka_unit_test(test_ts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
