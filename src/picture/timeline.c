/*
 * timeline.c - a run's record for its picture (timeline.h): growable
 * arrays of pods, restarts and events, their strings in one arena.
 */
#include "picture/timeline.h"

#include <stdlib.h>
#include <string.h>

#include "api/render.h"
#include "base/arena.h"
#include "base/time.h"

/* The owned side of a recorded timeline: the arrays the public const
 * pointers show, with their capacities. */
struct js_timeline_store {
	struct js_arena *arena;
	char **rjobs;
	struct js_timeline_pod *pods;
	size_t cap_pods;
	struct js_timeline_restart *restarts;
	size_t cap_restarts;
	struct js_timeline_event *events;
	size_t cap_events;
	const char *notes[JS_TIMELINE_MAX_NOTES];
};

/* Room for one more element of `size` bytes in *arr (holding `n`, room for
 * *cap), doubling. */
static void *grow(void *arr, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return arr;
	*cap = *cap ? *cap * 2 : 16;
	return js_xrealloc(arr, *cap * size);
}

static const char *copy_str(struct js_timeline_store *s, const char *str)
{
	return js_arena_strdup(s->arena, str ? str : "");
}

struct js_timeline *js_timeline_new_named(const char *name, const char *namespace_, const char *const *rjobs,
					  size_t n_rjobs, int64_t start_ms)
{
	struct js_timeline *t = js_xcalloc(1, sizeof(*t));
	struct js_timeline_store *s = js_xcalloc(1, sizeof(*s));
	s->arena = js_arena_new(0);
	t->store = s;
	t->name = copy_str(s, name);
	t->namespace_ = copy_str(s, namespace_);
	t->result = "";
	t->phases_note = "";
	t->start_ms = t->end_ms = start_ms;
	s->rjobs = js_arena_calloc(s->arena, n_rjobs + 1, sizeof(*s->rjobs));
	for (size_t i = 0; i < n_rjobs; i++)
		s->rjobs[i] = js_arena_strdup(s->arena, rjobs[i] ? rjobs[i] : "");
	t->rjobs = (const char *const *)s->rjobs;
	t->n_rjobs = n_rjobs;
	t->notes = s->notes;
	return t;
}

struct js_timeline *js_timeline_new(const struct js_jobset *js, int64_t start_ms)
{
	size_t n = js->spec.n_replicated_jobs;
	const char **names = js_xcalloc(n + 1, sizeof(*names));
	for (size_t i = 0; i < n; i++)
		names[i] = js->spec.replicated_jobs[i].name;
	struct js_timeline *t = js_timeline_new_named(js_jobset_name(js), js_jobset_namespace(js), names, n, start_ms);
	free(names);
	return t;
}

struct js_timeline *js_timeline_free(struct js_timeline *t)
{
	if (!t)
		return NULL;
	if (t->store) {
		js_arena_free(t->store->arena);
		free(t->store->pods);
		for (size_t i = 0; i < t->n_restarts; i++) {
			free((char *)(uintptr_t)t->store->restarts[i].reason);
			free((char *)(uintptr_t)t->store->restarts[i].message);
		}
		free(t->store->restarts);
		free(t->store->events);
		free(t->store);
	}
	free(t);
	return NULL;
}

void js_timeline_add_pod(struct js_timeline *t, const struct js_timeline_pod *p)
{
	struct js_timeline_store *s = t->store;
	s->pods = grow(s->pods, t->n_pods, &s->cap_pods, sizeof(*s->pods));
	struct js_timeline_pod *q = &s->pods[t->n_pods++];
	*q = *p;
	q->name = copy_str(s, p->name);
	q->rjob = copy_str(s, p->rjob);
	q->job = copy_str(s, p->job);
	q->reason = copy_str(s, p->reason);
	q->detail = copy_str(s, p->detail);
	t->pods = s->pods;
}

void js_timeline_add_restart(struct js_timeline *t, int64_t at_ms, int32_t attempt, const char *reason,
			     const char *message)
{
	struct js_timeline_store *s = t->store;
	if (t->n_restarts >= JS_TIMELINE_MAX_RESTARTS) {
		/* Keep the latest: the oldest goes. Its strings are its own
		 * (not the arena's), so a JobSet restarting all night does not
		 * grow the record; the shift is 1,000 entries per restart, a
		 * restart's own cost dwarfs it. */
		free((char *)(uintptr_t)s->restarts[0].reason);
		free((char *)(uintptr_t)s->restarts[0].message);
		memmove(s->restarts, s->restarts + 1, (t->n_restarts - 1) * sizeof(*s->restarts));
		t->n_restarts--;
		t->restarts_dropped++;
	}
	s->restarts = grow(s->restarts, t->n_restarts, &s->cap_restarts, sizeof(*s->restarts));
	s->restarts[t->n_restarts++] = (struct js_timeline_restart){
		.at_ms = at_ms, .attempt = attempt, .reason = js_xstrdup(reason ? reason : ""),
		.message = js_xstrdup(message ? message : "")};
	t->restarts_at = s->restarts;
}

void js_timeline_drop_restarts(struct js_timeline *t, size_t n)
{
	t->restarts_dropped += n;
}

void js_timeline_add_event(struct js_timeline *t, const struct js_timeline_event *e)
{
	struct js_timeline_store *s = t->store;
	if (t->n_events >= JS_TIMELINE_MAX_EVENTS) {
		t->events_dropped++;
		return;
	}
	s->events = grow(s->events, t->n_events, &s->cap_events, sizeof(*s->events));
	s->events[t->n_events++] = (struct js_timeline_event){
		.time_ms = e->time_ms, .type = copy_str(s, e->type), .reason = copy_str(s, e->reason), .kind = copy_str(s, e->kind),
		.name = copy_str(s, e->name), .message = copy_str(s, e->message)};
	t->events = s->events;
}

void js_timeline_add_note(struct js_timeline *t, const char *note)
{
	if (t->n_notes < JS_TIMELINE_MAX_NOTES)
		t->store->notes[t->n_notes++] = copy_str(t->store, note);
}

void js_timeline_end(struct js_timeline *t, int64_t end_ms, const char *result, int32_t restarts,
		     const struct js_timeline_phases *phases, const char *phases_note)
{
	t->end_ms = end_ms;
	t->result = copy_str(t->store, result);
	t->restarts = restarts;
	if (phases)
		t->phases = *phases;
	else
		t->phases = (struct js_timeline_phases){.known = false};
	t->phases_note = copy_str(t->store, phases_note);
}

/* ---- JSON ---- */

static const char *const source_names[JS_TIMELINE_SOURCE__COUNT] = {"seen", "events", "none"};
static const char *const end_names[JS_TIMELINE_END__COUNT] = {"unfinished", "succeeded", "failed", "stopped",
							      "unknown"};

const char *js_timeline_source_name(enum js_timeline_source s)
{
	return s >= 0 && s < JS_TIMELINE_SOURCE__COUNT ? source_names[s] : "";
}

const char *js_timeline_end_name(enum js_timeline_end e)
{
	return e >= 0 && e < JS_TIMELINE_END__COUNT ? end_names[e] : "";
}

/* RFC 3339 with milliseconds, or null for a time that is not recorded. */
static json_t *jtime(int64_t ms)
{
	if (!ms)
		return json_null();
	char ts[32];
	int64_t s = ms / 1000, frac = ms % 1000;
	if (frac < 0) {
		s--;
		frac += 1000;
	}
	js_time_format_rfc3339(s, ts);
	/* "...:SSZ" -> "...:SS.mmmZ": the picture's times are milliseconds. */
	ts[19] = '.';
	ts[20] = (char)('0' + frac / 100);
	ts[21] = (char)('0' + frac / 10 % 10);
	ts[22] = (char)('0' + frac % 10);
	ts[23] = 'Z';
	ts[24] = '\0';
	return json_string(ts);
}

static json_t *pod_json(const struct js_timeline_pod *p)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:s, s:o, s:o, s:o, s:o, s:s, s:s, s:s}", "name",
			      p->name ? p->name : "", "replicatedJob", p->rjob ? p->rjob : "", "job", p->job ? p->job : "",
			      "jobIndex", (int)p->job_index, "index", (int)p->index, "attempt", (int)p->attempt, "source",
			      js_timeline_source_name(p->source), "created", jtime(p->created_ms), "started",
			      jtime(p->started_ms), "deleted", jtime(p->deleted_ms), "finished", jtime(p->finished_ms),
			      "end", js_timeline_end_name(p->end), "reason", p->reason ? p->reason : "", "detail",
			      p->detail ? p->detail : "");
	if (o && p->end == JS_TIMELINE_FAILED)
		json_object_set_new(o, "exitCode",
				    p->has_exit_code || p->source == JS_TIMELINE_SEEN ? json_integer(p->exit_code)
										     : json_null());
	return o;
}

static json_t *phases_json(const struct js_timeline_phases *ph)
{
	if (!ph->known)
		return json_null();
	const struct js_phase_summary *s = &ph->sum;
	json_t *ready = json_array();
	size_t n = ph->n_readies < JS_TIMELINE_MAX_READIES ? ph->n_readies : JS_TIMELINE_MAX_READIES;
	for (size_t i = 0; i < n; i++)
		json_array_append_new(ready, json_pack("{s:s, s:f}", "trigger", js_phase_trigger_name(ph->readies[i].trigger),
						       "seconds", ph->readies[i].seconds));
	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:o}", "pendingSeconds", s->seconds[JS_PHASE_PENDING],
			 "runningSeconds", s->seconds[JS_PHASE_RUNNING], "restartingSeconds",
			 s->seconds[JS_PHASE_RESTARTING], "suspendedSeconds", s->seconds[JS_PHASE_SUSPENDED],
			 "wallSeconds", s->wall_seconds, "goodput", s->goodput, "restarts", s->restarts, "timeToAllReady",
			 ready);
}

json_t *js_timeline_to_json(const struct js_timeline *t)
{
	json_t *rjobs = json_array(), *pods = json_array(), *rs = json_array(), *evs = json_array(),
	       *notes = json_array();
	for (size_t i = 0; i < t->n_rjobs; i++)
		json_array_append_new(rjobs, json_string(t->rjobs[i]));
	for (size_t i = 0; i < t->n_pods; i++)
		json_array_append_new(pods, pod_json(&t->pods[i]));
	for (size_t i = 0; i < t->n_restarts; i++) {
		const struct js_timeline_restart *r = &t->restarts_at[i];
		json_array_append_new(rs, json_pack("{s:o, s:i, s:s, s:s}", "time", jtime(r->at_ms), "attempt",
						    (int)r->attempt, "reason", r->reason, "message", r->message));
	}
	for (size_t i = 0; i < t->n_events; i++) {
		const struct js_timeline_event *e = &t->events[i];
		json_array_append_new(evs, json_pack("{s:o, s:s, s:s, s:s, s:s, s:s}", "time", jtime(e->time_ms), "type",
						     e->type, "reason", e->reason, "kind", e->kind, "name", e->name,
						     "message", e->message));
	}
	for (size_t i = 0; i < t->n_notes; i++)
		json_array_append_new(notes, json_string(t->notes[i]));
	return json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:i, s:o, s:o, s:o, s:I, s:o, s:I, s:o, s:s, s:o}", "name",
			 t->name, "namespace", t->namespace_, "origin",
			 t->origin == JS_TIMELINE_CLUSTER ? "cluster" : "local", "result", t->result ? t->result : "",
			 "start", jtime(t->start_ms), "end", jtime(t->end_ms), "restarts", (int)t->restarts,
			 "replicatedJobs", rjobs, "pods", pods, "restartsAt", rs, "restartsDropped",
			 (json_int_t)t->restarts_dropped, "events", evs, "eventsDropped", (json_int_t)t->events_dropped,
			 "phases", phases_json(&t->phases), "phasesNote", t->phases_note ? t->phases_note : "", "notes",
			 notes);
}
