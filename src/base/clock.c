/*
 * clock.c - the monotonic clock (clock.h).
 */
#include "base/clock.h"

#include "base/time.h"

uint64_t js_clock_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t js_clock_after_ns(int64_t ms)
{
	return js_sat_add_u64(js_clock_now_ns(), js_sat_scale_u64(ms, 1000000u));
}

struct timespec js_clock_ts(uint64_t ns)
{
	/* time_t is signed 64-bit here; UINT64_MAX ns is ~584 years. */
	return (struct timespec){.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
}

struct timespec js_clock_deadline_ts(int64_t ms)
{
	return js_clock_ts(js_clock_after_ns(ms));
}

void js_clock_cond_init(pthread_cond_t *cond)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &ca);
	pthread_condattr_destroy(&ca);
}
