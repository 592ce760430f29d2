/*
 * deadline.c - activeDeadlineSeconds of a whole JobSet (KEP-1186, gate
 * JobSetActiveDeadlineSeconds).
 *
 * status.startTime is when the JobSet last became active: set on the first
 * pass that sees it unsuspended, cleared while it is suspended (so a resume
 * sets it afresh), and reset by a whole-JobSet restart; a RestartJob of one
 * Job leaves it alone (KEP "Semantics"). It is derived from the current
 * suspend state on every pass, so a repeated pass changes nothing. The
 * deadline is startTime + spec.activeDeadlineSeconds, read on every pass, so
 * changing the field on a running JobSet takes effect at once. On expiry the
 * active Jobs are deleted and the JobSet fails with reason DeadlineExceeded;
 * before that the pass asks to be run again when the deadline falls, since a
 * wedged JobSet produces no event that would wake the controller.
 *
 * With the gate off nothing here reads or writes anything: startTime keeps
 * whatever value it had (KEP "Feature Gate Disabled Behavior").
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/time.h"
#include "core/core_int.h"

#define MSG_DEADLINE "jobset was active longer than its deadline of %lld seconds"

static bool suspended(const struct js_jobset *js)
{
	return js->spec.has_suspend && js->spec.suspend;
}

static void set_start(struct js__ctx *c, const char *v)
{
	struct js_status *st = &c->js->status;
	if ((!v && !st->start_time) || (v && st->start_time && strcmp(v, st->start_time) == 0))
		return;
	free(st->start_time);
	st->start_time = v ? js_xstrdup(v) : NULL;
	c->js->has_status = true;
	c->dirty = true;
}

void js__deadline_start_time(struct js__ctx *c)
{
	if (!c->in->gates.active_deadline)
		return;
	if (suspended(c->js))
		set_start(c, NULL);
	else if (!c->js->status.start_time)
		set_start(c, c->now);
}

void js__deadline_restart(struct js__ctx *c)
{
	if (c->in->gates.active_deadline)
		set_start(c, c->now);
}

bool js__deadline_applies(const struct js__ctx *c)
{
	return c->in->gates.active_deadline && c->js->spec.has_active_deadline_seconds;
}

bool js__deadline_run(struct js__ctx *c)
{
	const struct js_jobset *js = c->js;
	int64_t start;
	if (!js__deadline_applies(c) || suspended(js) || !js->status.start_time)
		return false;
	/* A startTime that does not parse is treated as not started: the next
	 * suspend or restart writes a good one (and so does the API server's
	 * date-time format check, which refuses a bad one). */
	if (js_time_parse_rfc3339(js->status.start_time, &start) < 0)
		return false;
	int64_t ads = js->spec.active_deadline_seconds;
	/* Saturating: a huge deadline never wraps into the past. A startTime
	 * in the future (clock skew) only makes the remaining time longer. */
	int64_t remaining = js_sat_sub(js_sat_add(start, ads), c->in->now);
	if (remaining > 0) {
		c->plan->has_requeue_after = true;
		c->plan->requeue_after = remaining;
		return false;
	}
	js__finish_delete(c, &c->active, "activeDeadlineSeconds exceeded");
	js__status_set_failed(c, "DeadlineExceeded", js__fmt(c, MSG_DEADLINE, (long long)ads));
	c->plan->metric_deadline_exceeded++;
	return true;
}
