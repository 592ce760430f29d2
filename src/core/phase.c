/*
 * phase.c - phase and goodput accounting of one JobSet. See phase.h.
 */
#include "core/phase.h"

#include <string.h>

#include "base/time.h"
#include "core/core_int.h"

const char *js_phase_name(enum js_phase p)
{
	static const char *const names[JS_PHASE__COUNT] = {"pending", "running", "restarting", "suspended",
							   "finished"};
	return p >= 0 && p < JS_PHASE__COUNT ? names[p] : "";
}

const char *js_phase_trigger_name(enum js_phase_trigger t)
{
	static const char *const names[JS_PHASE_TRIGGER__COUNT] = {"creation", "resume", "restart"};
	return t >= 0 && t < JS_PHASE_TRIGGER__COUNT ? names[t] : "";
}

bool js_phase_all_ready(const struct js_jobset *js)
{
	if (!js)
		return false;
	int64_t want = 0, have = 0;
	for (size_t i = 0; i < js->spec.n_replicated_jobs; i++)
		want += js__replicas(&js->spec.replicated_jobs[i]);
	for (size_t i = 0; i < js->status.n_replicated_jobs_status; i++)
		have += (int64_t)js->status.replicated_jobs_status[i].ready +
			js->status.replicated_jobs_status[i].succeeded;
	return want == have;
}

/* Unix ms of an RFC 3339 timestamp, or -1. */
static int64_t stamp_ms(const char *s)
{
	int64_t t;
	return s && js_time_parse_rfc3339(s, &t) == 0 ? t * 1000 : -1;
}

/* Unix ms of the last transition of condition `type` when its status is
 * `status`, else -1. */
static int64_t cond_since(const struct js_jobset *js, const char *type, const char *status)
{
	const struct js_condition *c = js_jobset_condition(js, type);
	return c && c->status && strcmp(c->status, status) == 0 ? stamp_ms(c->last_transition_time) : -1;
}

void js_phase_observe(const struct js_jobset *js, struct js_phase_obs *out)
{
	*out = (struct js_phase_obs){JS_PHASE_PENDING, -1, JS_PHASE_TRIGGER_NONE, -1};
	if (!js)
		return;
	if (js_jobset_condition_true(js, JS_COND_COMPLETED) || js_jobset_condition_true(js, JS_COND_FAILED)) {
		out->phase = JS_PHASE_FINISHED;
		int64_t c = cond_since(js, JS_COND_COMPLETED, "True");
		out->since_ms = c >= 0 ? c : cond_since(js, JS_COND_FAILED, "True");
		return;
	}
	if (js->spec.has_suspend && js->spec.suspend) {
		out->phase = JS_PHASE_SUSPENDED;
		int64_t s = cond_since(js, JS_COND_SUSPENDED, "True");
		/* Held since creation: suspended from the start. */
		out->since_ms = s >= 0 ? s : stamp_ms(js->meta.creation_timestamp);
		return;
	}
	if (js_jobset_condition_true(js, JS_COND_RESTARTING)) {
		out->phase = JS_PHASE_RESTARTING;
		out->since_ms = cond_since(js, JS_COND_RESTARTING, "True");
		out->wait = JS_PHASE_TRIGGER_RESTART;
		out->wait_since_ms = out->since_ms;
		return;
	}
	/* The last resume leaves Suspended=False behind (SPEC §11.13). */
	int64_t resumed = cond_since(js, JS_COND_SUSPENDED, "False");
	if (js_phase_all_ready(js)) {
		out->phase = JS_PHASE_RUNNING;
		/* RestartingJobSet=False (JobsReady) marks the last all-ready
		 * after a restart; otherwise the status does not say. */
		out->since_ms = cond_since(js, JS_COND_RESTARTING, "False");
		return;
	}
	out->phase = JS_PHASE_PENDING;
	if (resumed >= 0) {
		out->wait = JS_PHASE_TRIGGER_RESUME;
		out->since_ms = out->wait_since_ms = resumed;
	} else if (js->status.restarts == 0 && !js_jobset_condition(js, JS_COND_RESTARTING)) {
		out->wait = JS_PHASE_TRIGGER_CREATION;
		out->since_ms = out->wait_since_ms = stamp_ms(js->meta.creation_timestamp);
	}
}

void js_phase_acct_init(struct js_phase_acct *a, const struct js_phase_obs *obs, int64_t now_ms)
{
	*a = (struct js_phase_acct){.phase = obs->phase, .first_start_ms = -1, .end_ms = -1,
				    .wait = JS_PHASE_TRIGGER_NONE, .wait_since_ms = -1};
	a->since_ms = obs->since_ms >= 0 && obs->since_ms <= now_ms ? obs->since_ms : now_ms;
	/* First seen finished (a controller that started after the end): its
	 * history is not known, so there is no start and no goodput to tell,
	 * rather than a run of no length with goodput 0. */
	if (obs->phase != JS_PHASE_SUSPENDED && obs->phase != JS_PHASE_FINISHED)
		a->first_start_ms = a->since_ms;
	if (obs->phase == JS_PHASE_FINISHED)
		a->end_ms = a->since_ms;
	if (obs->wait != JS_PHASE_TRIGGER_NONE) {
		a->wait = obs->wait;
		a->wait_since_ms = obs->wait_since_ms >= 0 && obs->wait_since_ms <= a->since_ms ? obs->wait_since_ms
											      : a->since_ms;
		if (a->wait_since_ms < a->first_start_ms)
			a->first_start_ms = a->wait_since_ms;
	}
}

bool js_phase_acct_step(struct js_phase_acct *a, enum js_phase phase, int64_t now_ms, struct js_phase_ready *ret)
{
	if (now_ms < a->since_ms)
		now_ms = a->since_ms; /* a clock step back: no time passed */
	if (phase < 0 || phase >= JS_PHASE__COUNT || phase == a->phase)
		return false;
	enum js_phase old = a->phase;
	a->ms[old] += now_ms - a->since_ms;
	a->phase = phase;
	a->since_ms = now_ms;
	if (phase != JS_PHASE_SUSPENDED && a->first_start_ms < 0)
		a->first_start_ms = now_ms;
	switch (phase) {
	case JS_PHASE_RESTARTING:
		a->wait = JS_PHASE_TRIGGER_RESTART;
		a->wait_since_ms = now_ms;
		a->restarts++;
		return false;
	case JS_PHASE_SUSPENDED:
		a->wait = JS_PHASE_TRIGGER_NONE;
		return false;
	case JS_PHASE_FINISHED:
		a->wait = JS_PHASE_TRIGGER_NONE;
		a->end_ms = now_ms;
		return false;
	case JS_PHASE_RUNNING:
		if (old == JS_PHASE_SUSPENDED) /* resumed straight to all-ready */
			a->wait = JS_PHASE_TRIGGER_NONE;
		if (a->wait == JS_PHASE_TRIGGER_NONE)
			return false;
		if (ret)
			*ret = (struct js_phase_ready){a->wait, (double)(now_ms - a->wait_since_ms) / 1000.0};
		a->wait = JS_PHASE_TRIGGER_NONE;
		return true;
	default: /* pending */
		if (old == JS_PHASE_SUSPENDED) {
			a->wait = JS_PHASE_TRIGGER_RESUME;
			a->wait_since_ms = now_ms;
		}
		return false;
	}
}

void js_phase_acct_summary(const struct js_phase_acct *a, int64_t now_ms, struct js_phase_summary *out)
{
	*out = (struct js_phase_summary){.restarts = a->restarts};
	if (now_ms < a->since_ms)
		now_ms = a->since_ms;
	for (int p = 0; p < JS_PHASE__COUNT; p++) {
		int64_t ms = a->ms[p] + (p == (int)a->phase ? now_ms - a->since_ms : 0);
		out->seconds[p] = (double)ms / 1000.0;
	}
	if (a->first_start_ms < 0)
		return;
	int64_t end = a->end_ms >= 0 ? a->end_ms : now_ms;
	if (end > a->first_start_ms)
		out->wall_seconds = (double)(end - a->first_start_ms) / 1000.0;
	if (out->wall_seconds > 0) {
		out->goodput = out->seconds[JS_PHASE_RUNNING] / out->wall_seconds;
		if (out->goodput > 1)
			out->goodput = 1;
	}
}
