/*
 * inplace.c - the in-place restart agent's decisions (core/inplace.h,
 * SPEC §13).
 */
#include "core/inplace.h"

#include <jansson.h>
#include <string.h>

struct js_inplace_view js_inplace_view_of(const struct js_jobset *js)
{
	struct js_inplace_view v = {0};
	if (!js)
		return v;
	const struct js_failure_policy *fp = js->has_spec ? js->spec.failure_policy : NULL;
	bool disabled = json_object_get(js->meta.annotations, JS_ANN_DISABLE_IN_PLACE_RESTART) != NULL;
	v.bypass = disabled || !fp || !fp->has_restart_strategy || fp->restart_strategy != JS_RESTART_STRATEGY_IN_PLACE;
	v.has_current = js->status.has_current_in_place_restart_attempt;
	v.current = js->status.current_in_place_restart_attempt;
	v.has_previous = js->status.has_previous_in_place_restart_attempt;
	v.previous = js->status.previous_in_place_restart_attempt;
	return v;
}

int js_inplace_agent_step(const struct js_inplace_view *view, const struct js_inplace_agent *st,
			  struct js_inplace_step *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (view->bypass) { /* 1: the agent is a no-op: let the worker run */
		ret->lift = st->barrier_active;
		return 0;
	}
	if (!st->has_attempt) { /* 2: once per process */
		if (view->has_current && view->current == INT32_MAX)
			return JS_EINVALID;
		ret->patch = true;
		ret->patch_attempt = view->has_current ? view->current + 1 : 0;
		return 0;
	}
	if (view->has_previous && st->attempt <= view->previous) { /* 3: outdated */
		ret->exit = true;
		return 0;
	}
	ret->lift = st->barrier_active && view->has_current && st->attempt == view->current; /* 4 */
	return 0;
}
