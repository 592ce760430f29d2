/*
 * ratelimit_test.c - token bucket reservations (kube/ratelimit.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "kube/ratelimit.h"

#define MS 1000000ull

struct step {
	uint64_t at_ms;   /* reservation time */
	uint64_t wait_ms; /* expected wait, rounded down to ms */
};

static const struct rcase {
	const char *name;
	double qps;
	int burst;
	struct step steps[8];
	int n;
} cases[] = {
	{"burst then paced", 10, 3, {{0, 0}, {0, 0}, {0, 0}, {0, 100}, {0, 200}, {0, 300}}, 6},
	{"refill over time", 10, 2, {{0, 0}, {0, 0}, {100, 0}, {100, 100}, {1000, 0}, {1000, 0}, {1000, 100}}, 7},
	{"refill caps at burst", 1, 2, {{0, 0}, {10000, 0}, {10000, 0}, {10000, 1000}}, 4},
	{"unlimited", -1, 1, {{0, 0}, {0, 0}, {0, 0}, {0, 0}}, 4},
	{"burst below 1 is 1", 100, 0, {{0, 0}, {0, 10}, {0, 20}}, 3},
	{"clock going backwards refills nothing", 10, 1, {{500, 0}, {400, 100}}, 2},
};

static void test_table(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct js_ratelimit rl;
		js_ratelimit_init(&rl, cases[c].qps, cases[c].burst, 0);
		for (int i = 0; i < cases[c].n; i++) {
			uint64_t w = js_ratelimit_reserve(&rl, cases[c].steps[i].at_ms * MS) / MS;
			if (w != cases[c].steps[i].wait_ms)
				fail_msg("case '%s' step %d: wait %llu ms, expected %llu", cases[c].name, i,
					 (unsigned long long)w, (unsigned long long)cases[c].steps[i].wait_ms);
		}
	}
}

/* Property: with reservations arriving at arbitrary times, the due times
 * never put more than burst + qps*W + 1 actions in any window W. */
static void test_windows_hold(void **state)
{
	(void)state;
	const double qps = 50;
	const int burst = 7;
	struct js_ratelimit rl;
	js_ratelimit_init(&rl, qps, burst, 0);
	uint64_t due[400];
	uint64_t t = 0;
	unsigned seed = 12345;
	for (int i = 0; i < 400; i++) {
		seed = seed * 1103515245u + 12345u;
		t += (seed >> 16) % (30 * MS); /* bursty arrivals, 0-30 ms apart */
		due[i] = t + js_ratelimit_reserve(&rl, t);
	}
	for (int i = 0; i < 400; i++)
		for (int j = i; j < 400; j++) {
			assert_true(due[j] >= due[i]); /* FIFO */
			double w = (double)(due[j] - due[i]) / 1e9;
			assert_true((double)(j - i + 1) <= burst + qps * w + 1);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_windows_hold),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
