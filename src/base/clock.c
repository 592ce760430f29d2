/*
 * clock.c - the monotonic clock (clock.h).
 */
#include "base/clock.h"

uint64_t js_clock_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t js_clock_after_ns(int64_t ms)
{
	uint64_t now = js_clock_now_ns();
	if (ms <= 0)
		return now;
	if ((uint64_t)ms > (UINT64_MAX - now) / 1000000u)
		return UINT64_MAX;
	return now + (uint64_t)ms * 1000000u;
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
