/*
 * progress.c - hang detection's one rule (progress.h).
 */
#include "core/progress.h"

#include "base/time.h"

static bool in_range(int64_t s)
{
	return s >= 1 && s <= JS_PROGRESS_MAX_SECONDS;
}

int js_progress_check(const struct js_progress_in *in, struct js_progress_out *ret)
{
	if (!in_range(in->deadline_s) || !in_range(in->startup_s))
		return JS_EINVALID;
	struct js_progress_out out = {.verdict = JS_PROGRESS_OK};
	/* A file left by the previous run of the containers says nothing about
	 * this one: the startup allowance applies again after every restart. */
	out.first = !in->has_beat || in->beat_ms < in->start_ms;
	int64_t last = out.first ? in->start_ms : in->beat_ms;
	/* A heartbeat "in the future" means the clock went back; taking it as
	 * now keeps the deadline no later than the workload could expect. */
	if (last > in->now_ms)
		last = in->now_ms;
	out.last_ms = last;
	out.due_ms = js_sat_add(last, js_sat_s_to_ms(out.first ? in->startup_s : in->deadline_s));
	if (in->now_ms > out.due_ms) {
		out.verdict = JS_PROGRESS_EXCEEDED;
		out.late_ms = js_sat_sub(in->now_ms, out.due_ms);
		out.next_ms = in->now_ms;
	} else {
		out.next_ms = js_sat_add(out.due_ms, 1);
		/* Before the first heartbeat the allowance may be longer than
		 * the deadline, and a heartbeat coming right now would make the
		 * pod due at now + the deadline, before due_ms. Neither body sees
		 * a heartbeat come (they stat the file when they look), so they
		 * must look again by then: else the first heartbeat's deadline
		 * would be checked only when the allowance ran out (seen on real
		 * nodes: a watcher 4.6 s late with a 3 s deadline, 10 s allowance). */
		int64_t soon = js_sat_add(js_sat_add(in->now_ms, js_sat_s_to_ms(in->deadline_s)), 1);
		if (out.first && soon < out.next_ms)
			out.next_ms = soon;
	}
	*ret = out;
	return 0;
}
