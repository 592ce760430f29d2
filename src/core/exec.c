/*
 * exec.c - js_exec_apply: the rules of applying a plan (core/exec.h), written
 * once for every body.
 */
#include "core/exec.h"

#include <stdlib.h>

/* Length of the run of CreateJob, DeleteJob, DeletePod or PatchJob actions starting at `i`: the
 * same kind, at most ops->max_run (0 = unlimited). */
static size_t run_length(const struct js_exec_ops *ops, const struct js_plan *plan, size_t i)
{
	enum js_action_kind k = plan->actions[i].kind;
	size_t n = 1;
	while (i + n < plan->n_actions && plan->actions[i + n].kind == k && (ops->max_run == 0 || n < ops->max_run))
		n++;
	return n;
}

struct js_exec_run {
	const struct js_plan *plan;
	const struct js_action *acts;
};

json_t *js_exec_render(const struct js_exec_run *run, size_t i)
{
	return js_plan_render_job(run->plan, &run->acts[i]);
}

/* Hand a run of creates to the body, which renders each Job as it sends
 * it. A plan whose JobSet was taken cannot render: fail before any send. */
static int create_run(const struct js_exec_ops *ops, void *self, const struct js_plan *plan,
		      const struct js_action *acts, size_t n)
{
	if (!plan->jobset)
		return JS_EINVALID;
	const struct js_exec_run run = {plan, acts};
	return ops->create_jobs(self, acts, n, &run);
}

/* One step: a run of `n` creates or deletes, or one other action. */
static int step(const struct js_exec_ops *ops, void *self, const struct js_plan *plan, const struct js_action *a,
		size_t n)
{
	switch (a->kind) {
	case JS_ACTION_CREATE_JOB:
		return ops->create_jobs ? create_run(ops, self, plan, a, n) : JS_EUNSUPPORTED;
	case JS_ACTION_DELETE_JOB:
		return ops->delete_jobs ? ops->delete_jobs(self, a, n) : JS_EUNSUPPORTED;
	case JS_ACTION_PATCH_JOB:
		if (ops->patch_jobs)
			return ops->patch_jobs(self, a, n);
		return ops->patch_job ? ops->patch_job(self, a) : JS_EUNSUPPORTED;
	case JS_ACTION_PATCH_JOB_STATUS:
		return ops->patch_job ? ops->patch_job(self, a) : JS_EUNSUPPORTED;
	case JS_ACTION_DELETE_POD:
		return ops->delete_pods ? ops->delete_pods(self, a, n) : JS_EUNSUPPORTED;
	case JS_ACTION_CREATE_SERVICE:
	case JS_ACTION_CREATE_PVC:
	case JS_ACTION_DELETE_JOBSET:
		return ops->apply_other ? ops->apply_other(self, a) : JS_EUNSUPPORTED;
	case JS_ACTION__INVALID:
	case JS_ACTION__COUNT:
		break;
	}
	return JS_EINVALID;
}

int js_exec_apply(const struct js_exec_ops *ops, void *self, const struct js_plan *plan, size_t *ret_failed_at)
{
	size_t failed = SIZE_MAX;
	int r = 0;

	for (size_t i = 0; i < plan->n_actions;) {
		const struct js_action *a = &plan->actions[i];
		bool batch = a->kind == JS_ACTION_CREATE_JOB || a->kind == JS_ACTION_DELETE_JOB ||
			     a->kind == JS_ACTION_DELETE_POD ||
			     (a->kind == JS_ACTION_PATCH_JOB && ops->patch_jobs);
		size_t n = batch ? run_length(ops, plan, i) : 1;
		r = step(ops, self, plan, a, n);
		if (r < 0) {
			/* SPEC §11.2: stop; no status write, no events. */
			failed = i;
			goto out;
		}
		i += n;
	}
	if (plan->status_changed) {
		r = ops->write_status ? ops->write_status(self, plan) : JS_EUNSUPPORTED;
		if (r < 0) {
			failed = plan->n_actions;
			goto out;
		}
	}
	/* Only now: a failed write never emits or counts twice (§16.11). */
	for (size_t i = 0; ops->emit_event && i < plan->n_events; i++)
		ops->emit_event(self, &plan->events[i]);
	if (ops->count_metrics)
		ops->count_metrics(self, plan);
	if (plan->has_requeue_after && ops->requeue_after)
		ops->requeue_after(self, plan->requeue_after);
	r = 0;
out:
	if (ret_failed_at)
		*ret_failed_at = failed;
	return r;
}
