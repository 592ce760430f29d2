/*
 * finish.c - deleting the Jobs of a finished JobSet (SPEC §11.2 R6), the
 * success policy (§11.10) and the TTL of a finished JobSet (§11.14). The
 * Jobs of older restart attempts go in cleanup.c (R7, §11.9).
 */
#include <string.h>

#include "api/render.h"
#include "core/core_int.h"

void js__finish_delete(struct js__ctx *c, const struct js__bucket *b, const char *why)
{
	/* Foreground: the Job lingers until its pods are gone, which is what
	 * blocks re-creation of its name (SPEC §6.1). A Job already being
	 * deleted is not deleted again. */
	for (size_t i = 0; i < b->n; i++)
		if (!b->items[i]->deleting)
			js__ctx_action(c, JS_ACTION_DELETE_JOB, b->items[i]->name, NULL, why);
}

bool js__success_run(struct js__ctx *c)
{
	const struct js_jobset *js = c->js;
	const struct js_success_policy *sp = js->spec.success_policy;
	/* A nil policy (never defaulted) is All with no targets (§11.10). */
	bool any = sp && sp->has_operator && sp->operator_ == JS_SUCCESS_OP_ANY;
	static const struct js_strlist none = {0};
	const struct js_strlist *targets = sp ? &sp->target_replicated_jobs : &none;
	int64_t matching = 0, required = 0;

	for (size_t i = 0; i < c->succeeded.n; i++) {
		const char *r = c->succeeded.items[i]->rjob_name;
		if (targets->n == 0 || js_strlist_has(targets, r))
			matching++;
	}
	if (any) {
		required = 1;
	} else {
		for (size_t i = 0; i < js->spec.n_replicated_jobs; i++) {
			const struct js_rjob *r = &js->spec.replicated_jobs[i];
			if (targets->n == 0 || js_strlist_has(targets, r->name))
				required += js__replicas(r);
		}
	}
	if (matching < required)
		return false;
	js__status_set_completed(c);
	return true;
}

/* Go's zero time, 0001-01-01T00:00:00Z, in Unix seconds. */
#define GO_ZERO_TIME (-62135596800LL)

int js__finish_ttl(struct js__ctx *c)
{
	const struct js_jobset *js = c->js;
	const struct js_condition *fin = NULL;
	int64_t at;

	if (!js->spec.has_ttl_seconds_after_finished)
		return 0;
	for (size_t i = 0; i < js->status.n_conditions && !fin; i++) {
		const struct js_condition *k = &js->status.conditions[i];
		if (k->type && k->status && strcmp(k->status, "True") == 0 &&
		    (strcmp(k->type, JS_COND_COMPLETED) == 0 || strcmp(k->type, JS_COND_FAILED) == 0))
			fin = k;
	}
	if (!fin)
		return js__ctx_fail(c, "unable to find the status of the finished JobSet %s/%s",
				    js_jobset_namespace(js), js_jobset_name(js));
	if (js_time_parse_rfc3339(fin->last_transition_time, &at) < 0 || at <= GO_ZERO_TIME)
		return js__ctx_fail(c, "unable to find the time when the JobSet %s/%s finished",
				    js_jobset_namespace(js), js_jobset_name(js));
	int64_t remaining = at + js->spec.ttl_seconds_after_finished - c->in->now;
	if (remaining <= 0) {
		js__ctx_action(c, JS_ACTION_DELETE_JOBSET, js_jobset_name(js), NULL, "ttlSecondsAfterFinished expired");
		return 0;
	}
	c->plan->has_requeue_after = true;
	c->plan->requeue_after = remaining;
	return 0;
}
