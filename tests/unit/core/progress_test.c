/* core/progress.h: hang detection's rule, one row per case, with the
 * extremes of every input (a deadline of 2^31-1 s, times at the int64
 * bounds): sums saturate, never wrap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "core/progress.h"

#define MAXS ((int64_t)JS_PROGRESS_MAX_SECONDS)
#define MAXMS (MAXS * 1000)

static void test_check(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		struct js_progress_in in; /* start, has_beat, beat, deadline_s, startup_s, now */
		int want_r;
		enum js_progress_verdict verdict;
		bool first;
		int64_t last, due, next, late;
	} rows[] = {
		/* Startup allowance before the first heartbeat. */
		{"no beat, within startup", {1000, false, 0, 2, 5, 3000}, 0, JS_PROGRESS_OK, true, 1000, 6000, 5001, 0},
		/* A heartbeat may come any moment and bring the due time forward
		 * (a deadline shorter than the allowance): look again by now +
		 * the deadline. */
		{"no beat, allowance longer than the deadline", {1000, false, 0, 2, 60, 3000}, 0, JS_PROGRESS_OK, true, 1000,
		 61000, 5001, 0},
		{"no beat, at the last allowed instant", {1000, false, 0, 2, 5, 6000}, 0, JS_PROGRESS_OK, true, 1000, 6000,
		 6001, 0},
		{"no beat, 1 ms over startup", {1000, false, 0, 2, 5, 6001}, 0, JS_PROGRESS_EXCEEDED, true, 1000, 6000, 6001,
		 1},
		/* The deadline between heartbeats. */
		{"beat, within deadline", {1000, true, 4000, 2, 5, 5000}, 0, JS_PROGRESS_OK, false, 4000, 6000, 6001, 0},
		{"beat, over deadline", {1000, true, 4000, 2, 5, 9500}, 0, JS_PROGRESS_EXCEEDED, false, 4000, 6000, 9500,
		 3500},
		{"beat at start counts", {1000, true, 1000, 2, 5, 3001}, 0, JS_PROGRESS_EXCEEDED, false, 1000, 3000, 3001, 1},
		/* A file from the run before a restart does not count. */
		{"stale beat from before the start", {10000, true, 9999, 2, 5, 14000}, 0, JS_PROGRESS_OK, true, 10000,
		 15000, 15001, 0},
		{"stale beat, over startup", {10000, true, 9999, 2, 5, 15001}, 0, JS_PROGRESS_EXCEEDED, true, 10000, 15000,
		 15001, 1},
		/* A clock stepped back: a beat (or start) in the future counts as now. */
		{"beat in the future", {1000, true, 50000, 2, 5, 3000}, 0, JS_PROGRESS_OK, false, 3000, 5000, 5001, 0},
		{"start in the future", {90000, false, 0, 2, 5, 3000}, 0, JS_PROGRESS_OK, true, 3000, 8000, 5001, 0},
		/* Extremes: 2^31-1 s, int64 bounds. */
		{"max deadline from 0", {0, true, 0, MAXS, MAXS, 1}, 0, JS_PROGRESS_OK, false, 0, MAXMS, MAXMS + 1, 0},
		{"max deadline near INT64_MAX saturates", {INT64_MAX - 5, true, INT64_MAX - 5, MAXS, 1, INT64_MAX}, 0,
		 JS_PROGRESS_OK, false, INT64_MAX - 5, INT64_MAX, INT64_MAX, 0},
		{"max startup near INT64_MAX saturates", {INT64_MAX - 1, false, 0, 1, MAXS, INT64_MAX}, 0, JS_PROGRESS_OK,
		 true, INT64_MAX - 1, INT64_MAX, INT64_MAX, 0},
		{"late saturates from INT64_MIN", {INT64_MIN, false, 0, 1, 1, INT64_MAX}, 0, JS_PROGRESS_EXCEEDED, true,
		 INT64_MIN, INT64_MIN + 1000, INT64_MAX, INT64_MAX},
		{"negative times work", {-10000, true, -9000, 2, 5, -6999}, 0, JS_PROGRESS_EXCEEDED, false, -9000, -7000,
		 -6999, 1},
		/* Out of range. */
		{"deadline 0", {0, false, 0, 0, 5, 0}, JS_EINVALID, JS_PROGRESS_OK, false, 0, 0, 0, 0},
		{"startup 0", {0, false, 0, 2, 0, 0}, JS_EINVALID, JS_PROGRESS_OK, false, 0, 0, 0, 0},
		{"deadline 2^31", {0, false, 0, MAXS + 1, 5, 0}, JS_EINVALID, JS_PROGRESS_OK, false, 0, 0, 0, 0},
		{"startup negative", {0, false, 0, 2, -1, 0}, JS_EINVALID, JS_PROGRESS_OK, false, 0, 0, 0, 0},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct js_progress_out o, untouched;
		memset(&o, 0x5a, sizeof(o));
		memcpy(&untouched, &o, sizeof(o));
		int r = js_progress_check(&rows[i].in, &o);
		if (r != rows[i].want_r)
			fail_msg("%s: r=%d, want %d", rows[i].name, r, rows[i].want_r);
		if (r < 0) {
			if (memcmp(&o, &untouched, sizeof(o)) != 0)
				fail_msg("%s: output written on failure", rows[i].name);
			continue;
		}
		if (o.verdict != rows[i].verdict || o.first != rows[i].first || o.last_ms != rows[i].last ||
		    o.due_ms != rows[i].due || o.next_ms != rows[i].next ||
		    (o.verdict == JS_PROGRESS_EXCEEDED && o.late_ms != rows[i].late))
			fail_msg("%s: verdict=%d first=%d last=%lld due=%lld next=%lld late=%lld; want %d %d %lld %lld %lld "
				 "%lld",
				 rows[i].name, o.verdict, o.first, (long long)o.last_ms, (long long)o.due_ms,
				 (long long)o.next_ms, (long long)o.late_ms, rows[i].verdict, rows[i].first,
				 (long long)rows[i].last, (long long)rows[i].due, (long long)rows[i].next,
				 (long long)rows[i].late);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
