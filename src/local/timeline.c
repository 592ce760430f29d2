/*
 * timeline.c - a run's record for its picture (timeline.h): growable
 * arrays of pods, restarts and events, their strings in one arena.
 */
#include "local/timeline.h"

#include <stdlib.h>
#include <string.h>

#include "api/render.h"
#include "base/arena.h"

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

struct js_timeline *js_timeline_new(const struct js_jobset *js, int64_t start_ms)
{
	struct js_timeline *t = js_xcalloc(1, sizeof(*t));
	struct js_timeline_store *s = js_xcalloc(1, sizeof(*s));
	s->arena = js_arena_new(0);
	t->store = s;
	t->name = copy_str(s, js_jobset_name(js));
	t->namespace_ = copy_str(s, js_jobset_namespace(js));
	t->result = "";
	t->start_ms = t->end_ms = start_ms;
	size_t n = js->spec.n_replicated_jobs;
	s->rjobs = js_arena_calloc(s->arena, n + 1, sizeof(*s->rjobs));
	for (size_t i = 0; i < n; i++)
		s->rjobs[i] = js_arena_strdup(s->arena, js->spec.replicated_jobs[i].name);
	t->rjobs = (const char *const *)s->rjobs;
	t->n_rjobs = n;
	return t;
}

struct js_timeline *js_timeline_free(struct js_timeline *t)
{
	if (!t)
		return NULL;
	if (t->store) {
		js_arena_free(t->store->arena);
		free(t->store->pods);
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
	if (t->n_restarts >= JS_TIMELINE_MAX_RESTARTS)
		return;
	s->restarts = grow(s->restarts, t->n_restarts, &s->cap_restarts, sizeof(*s->restarts));
	s->restarts[t->n_restarts++] = (struct js_timeline_restart){
		.at_ms = at_ms, .attempt = attempt, .reason = copy_str(s, reason), .message = copy_str(s, message)};
	t->restarts_at = s->restarts;
}

void js_timeline_add_event(struct js_timeline *t, const struct js_local_event *e)
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

void js_timeline_end(struct js_timeline *t, int64_t end_ms, const char *result, int32_t restarts,
		     const struct js_local_phases *phases)
{
	t->end_ms = end_ms;
	t->result = result;
	t->restarts = restarts;
	t->phases = *phases;
}
