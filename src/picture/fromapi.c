/*
 * fromapi.c - a cluster JobSet's timeline from its API objects
 * (fromapi.h): restarts from the JobSet's events and its Jobs, pods seen
 * from their objects, pods gone rebuilt from their events, and "no
 * record" rows for what is lost.
 */
#include "picture/fromapi.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "api/codec.h"
#include "api/describe.h"
#include "api/jobset.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/parse.h"
#include "core/phase.h"

/* The Job controller's labels and the reasons of its events. */
#define LABEL_JOB_NAME "batch.kubernetes.io/job-name"
#define LABEL_JOB_NAME_OLD "job-name"
#define CREATED_POD "Created pod: "
#define DELETED_POD "Deleted pod: "

/* The JobSet's events that begin a new attempt (core/failure.c). */
static const char *const restart_reasons[] = {"RestartJobSetFailurePolicyAction",
					      "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction", "RestartRequested"};
/* A Job's events that say it failed (the Job controller's reasons). */
static const char *const job_failed_reasons[] = {"BackoffLimitExceeded", "DeadlineExceeded", "PodFailurePolicy",
						 "FailedIndexes", "MaxFailedIndexesExceeded"};

/* A pod as collected, before it goes into the timeline (its end may still
 * change with its Job's events); `job_uid` ties a pod known from events to
 * its Job's. */
struct cpod {
	struct js_timeline_pod p;
	const char *job_uid;
};

struct build {
	const struct js_fromapi_input *in;
	struct js_timeline *t;
	const char *name;
	const json_t *rjobs;         /* spec.replicatedJobs */
	int32_t restarts;            /* status.restarts */
	/* The attempts tracked: the latest n_att, att0 to status.restarts
	 * (att0 > 0 past JS_TIMELINE_MAX_RESTARTS restarts: attempt att0 is
	 * then the base, timed but not marked, like attempt 0). */
	int32_t att0;
	size_t n_att;
	int64_t *att_start;          /* [a - att0]: when attempt a began, 0 unknown */
	bool *att_approx;            /* [a - att0]: placed at its first Job's creation */
	const json_t **evs;          /* the JobSet's events, oldest first */
	size_t n_evs;
	struct cpod *pods;
	size_t n_pods, cap_pods;
	char **owned;                /* strings made here, freed at the end */
	size_t n_owned;
};

static const char *own(struct build *b, char *s)
{
	b->owned = js_xrealloc(b->owned, (b->n_owned + 1) * sizeof(*b->owned));
	b->owned[b->n_owned++] = s;
	return s;
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; s && i < n; i++) {
		if (strcmp(s, list[i]) == 0)
			return true;
	}
	return false;
}

/* A time field of `o` at dotted `path` in Unix ms, 0 when absent or bad. */
static int64_t tms(const json_t *o, const char *path)
{
	int64_t t;
	return js_describe_time_ms(json_string_value(js_json_path(o, path)), &t) == 0 ? t : 0;
}

/* A label or annotation as a number in [0, INT32_MAX], or -1. */
static int32_t num(const json_t *map, const char *key)
{
	const char *v = js_json_str(map, key);
	int64_t n;
	return v && js_parse_i64_in(v, strlen(v), 0, INT32_MAX, &n) == 0 ? (int32_t)n : -1;
}

static const json_t *condition(const json_t *obj, const char *type)
{
	const json_t *conds = js_json_path(obj, "status.conditions");
	for (size_t i = 0; i < json_array_size(conds); i++) {
		const char *ty = js_json_str(json_array_get(conds, i), "type");
		if (ty && strcmp(ty, type) == 0)
			return json_array_get(conds, i);
	}
	return NULL;
}

static bool condition_true(const json_t *obj, const char *type)
{
	const char *s = js_json_str(condition(obj, type), "status");
	return s && strcmp(s, "True") == 0;
}

/* ---- names ---- */

/* "<jobset>-<rjob>-<i>": the ReplicatedJob (borrowed from the spec) and i,
 * else false. The longest ReplicatedJob name that fits wins ("w" and
 * "w-1" both prefix "js-w-1-0"). */
static bool parse_job_name(const struct build *b, const char *job, const char **ret_rjob, int32_t *ret_index)
{
	size_t n = strlen(b->name), best = 0;
	if (!job || strncmp(job, b->name, n) != 0 || job[n] != '-')
		return false;
	const char *rest = job + n + 1;
	for (size_t i = 0; i < json_array_size(b->rjobs); i++) {
		const char *rj = js_json_str(json_array_get(b->rjobs, i), "name");
		size_t m = rj ? strlen(rj) : 0;
		int64_t idx;
		if (!m || m <= best || strncmp(rest, rj, m) != 0 || rest[m] != '-' ||
		    js_parse_i64_in(rest + m + 1, strlen(rest + m + 1), 0, INT32_MAX, &idx) != 0)
			continue;
		best = m;
		*ret_rjob = rj;
		*ret_index = (int32_t)idx;
	}
	return best > 0;
}

/* A pod's completion index from its name "<job>-<index>-<suffix>", or -1
 * (NonIndexed pods are "<job>-<suffix>"). */
static int32_t index_from_name(const char *pod, const char *job)
{
	size_t n = strlen(job);
	if (strncmp(pod, job, n) != 0 || pod[n] != '-')
		return -1;
	const char *p = pod + n + 1, *q = p;
	while (isdigit((unsigned char)*q))
		q++;
	int64_t idx;
	if (q == p || *q != '-' || js_parse_i64_in(p, (size_t)(q - p), 0, INT32_MAX, &idx) != 0)
		return -1;
	return (int32_t)idx;
}

/* ---- events ---- */

static int by_event_time(const void *va, const void *vb)
{
	int64_t a = js_describe_event_time_ms(*(const json_t *const *)va);
	int64_t b = js_describe_event_time_ms(*(const json_t *const *)vb);
	return a < b ? -1 : a > b;
}

static const char *event_kind(const json_t *e)
{
	return js_json_str(json_object_get(e, "regarding"), "kind");
}

static const char *event_name(const json_t *e)
{
	return js_json_str(json_object_get(e, "regarding"), "name");
}

/* The JobSet's events, oldest first, into the timeline's table too (kinds
 * as the local run spells them: "pod", "job", "jobset"). */
static void collect_events(struct build *b)
{
	const json_t *all = b->in->events;
	b->evs = js_xcalloc(json_array_size(all) + 1, sizeof(*b->evs));
	for (size_t i = 0; i < json_array_size(all); i++) {
		const json_t *e = json_array_get(all, i);
		if (js_describe_event_regards(b->in->jobset, b->in->jobs, b->in->pods, e))
			b->evs[b->n_evs++] = e;
	}
	qsort(b->evs, b->n_evs, sizeof(*b->evs), by_event_time);
	for (size_t i = 0; i < b->n_evs; i++) {
		const json_t *e = b->evs[i];
		char kind[32];
		const char *k = event_kind(e);
		size_t n = 0;
		for (; k[n] && n + 1 < sizeof(kind); n++)
			kind[n] = (char)tolower((unsigned char)k[n]);
		kind[n] = '\0';
		struct js_timeline_event te = {js_describe_event_time_ms(e), js_json_str(e, "type"), js_json_str(e, "reason"),
					       kind, event_name(e), js_json_str(e, "note")};
		js_timeline_add_event(b->t, &te);
	}
}

/* ---- attempts ---- */

/* When each attempt began: the JobSet's restart events, newest to the
 * highest attempts (events expire oldest first; a series of repeats
 * counts each, its first and last times known), then the creation of an
 * attempt's first Job for a restart whose event is gone. */
static void attempts(struct build *b)
{
	const char **reason = js_xcalloc(b->n_att + 1, sizeof(*reason));
	const char **message = js_xcalloc(b->n_att + 1, sizeof(*message));
	if (b->att0 == 0)
		b->att_start[0] = b->t->start_ms;
	int64_t a = b->restarts;
	for (size_t i = b->n_evs; i-- > 0 && a >= 1 && a >= b->att0;) {
		const json_t *e = b->evs[i];
		const char *k = event_kind(e), *r = js_json_str(e, "reason");
		if (!k || strcmp(k, "JobSet") != 0 || !in_list(r, restart_reasons, JS_ARRAY_SIZE(restart_reasons)))
			continue;
		json_int_t c = json_integer_value(js_json_path(e, "series.count"));
		if (c < 1)
			c = json_integer_value(json_object_get(e, "deprecatedCount"));
		if (c < 1)
			c = 1;
		int64_t times[2] = {js_describe_event_time_ms(e), js_describe_event_first_ms(e)};
		int64_t at[2] = {a, a - c + 1};
		for (int j = 0; j < (c > 1 ? 2 : 1); j++) {
			int64_t x = at[j] - b->att0;
			if (at[j] >= 1 && x >= 0 && (size_t)x < b->n_att) {
				b->att_start[x] = times[j];
				reason[x] = r;
				message[x] = js_json_str(e, "note");
			}
		}
		a -= c;
	}
	for (size_t i = 0; i < json_array_size(b->in->jobs); i++) {
		const json_t *job = json_array_get(b->in->jobs, i);
		int32_t att = num(js_json_path(job, "metadata.labels"), JS_LABEL_RESTART_ATTEMPT);
		int64_t created = tms(job, "metadata.creationTimestamp"), x = (int64_t)att - b->att0;
		if (att < 1 || x < 0 || (size_t)x >= b->n_att || !created || reason[x])
			continue;
		if (!b->att_start[x] || created < b->att_start[x]) {
			b->att_start[x] = created;
			b->att_approx[x] = true;
		}
	}
	for (size_t i = 1; i < b->n_att; i++) {
		if (!b->att_start[i])
			continue;
		js_timeline_add_restart(b->t, b->att_start[i], b->att0 + (int32_t)i, reason[i],
					b->att_approx[i] ? "placed at the creation of the attempt's first Job: the restart's "
							   "event has expired"
							 : message[i]);
	}
	free(reason);
	free(message);
}

/* The attempt of a pod created at `ms` whose Job is gone: the latest
 * attempt known to have begun by then; -1 when the next attempt's start
 * is not known (the pod may be of either) or none tracked began by then. */
static int32_t attempt_at(const struct build *b, int64_t ms)
{
	for (size_t a = b->n_att; a-- > 0;) {
		if (b->att_start[a] && b->att_start[a] <= ms)
			return a + 1 < b->n_att && !b->att_start[a + 1] ? -1 : b->att0 + (int32_t)a;
	}
	return -1;
}

/* ---- pods ---- */

static struct cpod *new_pod(struct build *b)
{
	if (b->n_pods == b->cap_pods) {
		b->cap_pods = b->cap_pods ? b->cap_pods * 2 : 16;
		b->pods = js_xrealloc(b->pods, b->cap_pods * sizeof(*b->pods));
	}
	struct cpod *c = &b->pods[b->n_pods++];
	*c = (struct cpod){.p = {.name = "", .rjob = "", .job = "", .job_index = -1, .index = -1, .attempt = -1,
				 .reason = "", .detail = ""},
			   .job_uid = ""};
	return c;
}

static struct cpod *find_pod(struct build *b, const char *name)
{
	for (size_t i = 0; name && i < b->n_pods; i++) {
		if (strcmp(b->pods[i].p.name, name) == 0)
			return &b->pods[i];
	}
	return NULL;
}

/* Start and finish from the containers' states (init containers too): the
 * first start, the last finish; and the container whose exit decided a
 * failure, with every non-zero exit in `detail`. */
static void container_times(struct build *b, const json_t *pod, struct js_timeline_pod *p, bool terminal)
{
	static const char *const lists[] = {"status.initContainerStatuses", "status.containerStatuses"};
	struct js_buf d;
	js_buf_init(&d, 4096);
	bool decided = false;
	/* Regular containers decide before init containers: an init
	 * container that failed shows only when no regular one did. */
	for (int pass = 1; pass >= 0; pass--) {
		const json_t *cs = js_json_path(pod, lists[pass]);
		for (size_t i = 0; i < json_array_size(cs); i++) {
			const json_t *c = json_array_get(cs, i);
			static const char *const starts[] = {"state.running.startedAt", "state.terminated.startedAt",
							     "lastState.terminated.startedAt"};
			for (size_t k = 0; k < JS_ARRAY_SIZE(starts); k++) {
				int64_t s = tms(c, starts[k]);
				if (s && (!p->started_ms || s < p->started_ms))
					p->started_ms = s;
			}
			const json_t *term = js_json_path(c, "state.terminated");
			int64_t f = tms(term, "finishedAt");
			if (terminal && f > p->finished_ms)
				p->finished_ms = f;
			const json_t *code = json_object_get(term, "exitCode");
			if (!json_is_integer(code) || json_integer_value(code) == 0)
				continue;
			const char *reason = js_json_str(term, "reason");
			const char *cname = js_json_str(c, "name");
			int r = js_buf_printf(&d, "%s%s: exit code %lld (%s)", d.len ? "; " : "", cname ? cname : "?",
					      (long long)json_integer_value(code), reason ? reason : "Error");
			(void)r; /* bounded: keeps what fits */
			if (!decided) {
				json_int_t v = json_integer_value(code);
				p->exit_code = v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : (int32_t)v;
				p->has_exit_code = true;
				p->reason = reason ? reason : "Error";
				decided = true;
			}
		}
	}
	if (d.len)
		p->detail = own(b, js_xstrdup(js_buf_str(&d)));
	js_buf_done(&d);
}

/* Whether a failed pod was stopped by its deletion rather than failing on
 * its own, as the local run tells them apart: it finished after its
 * deletion began. Times are whole seconds, so a finish in the deletion's
 * second counts as the deletion's only when it is the signal's exit (143
 * SIGTERM, 137 SIGKILL) or none: a pod that failed and was deleted for it
 * in the same second (a restart is that quick) stays a failure. */
static bool stopped_by_deletion(const struct js_timeline_pod *p)
{
	if (!p->deleted_ms)
		return false;
	if (!p->finished_ms || p->finished_ms > p->deleted_ms)
		return true;
	return p->finished_ms == p->deleted_ms &&
	       (!p->has_exit_code || p->exit_code == 143 || p->exit_code == 137);
}

/* A pod object: what it says, no more. */
static void seen_pod(struct build *b, const json_t *pod)
{
	const json_t *md = json_object_get(pod, "metadata");
	const char *name = js_json_str(md, "name");
	if (!name || find_pod(b, name))
		return;
	const json_t *labels = json_object_get(md, "labels");
	struct cpod *c = new_pod(b);
	struct js_timeline_pod *p = &c->p;
	p->name = name;
	const char *job = js_json_str(labels, LABEL_JOB_NAME);
	if (!job)
		job = js_json_str(labels, LABEL_JOB_NAME_OLD);
	p->job = job ? job : "";
	const char *rjob = js_json_str(labels, JS_LABEL_RJOB_NAME);
	int32_t jidx = -1;
	if (!rjob && parse_job_name(b, p->job, &rjob, &jidx))
		p->job_index = jidx;
	p->rjob = rjob ? rjob : "";
	if (num(labels, JS_LABEL_JOB_INDEX) >= 0)
		p->job_index = num(labels, JS_LABEL_JOB_INDEX);
	p->index = num(labels, JS_ANN_JOB_COMPLETION_INDEX);
	if (p->index < 0)
		p->index = num(json_object_get(md, "annotations"), JS_ANN_JOB_COMPLETION_INDEX);
	p->attempt = num(labels, JS_LABEL_RESTART_ATTEMPT);
	p->created_ms = tms(md, "creationTimestamp");
	const char *phase = js_json_str(json_object_get(pod, "status"), "phase");
	bool succeeded = phase && strcmp(phase, "Succeeded") == 0, failed = phase && strcmp(phase, "Failed") == 0;
	container_times(b, pod, p, succeeded || failed);
	/* deletionTimestamp is when the grace period ends: the deletion
	 * began that many seconds before. */
	int64_t del = tms(md, "deletionTimestamp");
	json_int_t grace = json_integer_value(json_object_get(md, "deletionGracePeriodSeconds"));
	if (del && grace > 0 && grace < INT32_MAX)
		del -= (int64_t)grace * 1000;
	p->deleted_ms = del > 0 && del >= p->created_ms ? del : 0;
	const json_t *refs = json_object_get(md, "ownerReferences");
	for (size_t i = 0; i < json_array_size(refs); i++) {
		const json_t *ref = json_array_get(refs, i);
		const char *kind = js_json_str(ref, "kind"), *uid = js_json_str(ref, "uid");
		if (kind && uid && strcmp(kind, "Job") == 0)
			c->job_uid = uid;
	}
	bool evicted = condition_true(pod, "DisruptionTarget");
	const char *why = js_json_str(json_object_get(pod, "status"), "reason");
	if (succeeded)
		p->end = JS_TIMELINE_SUCCEEDED;
	else if (!failed)
		p->end = JS_TIMELINE_UNFINISHED;
	else if (evicted || (why && strcmp(why, "Evicted") == 0))
		p->end = JS_TIMELINE_FAILED, p->reason = "Evicted";
	else if (stopped_by_deletion(p))
		p->end = JS_TIMELINE_STOPPED;
	else
		p->end = JS_TIMELINE_FAILED;
	if (p->end == JS_TIMELINE_FAILED && !p->reason[0])
		p->reason = why ? why : "Failed";
	if (p->end != JS_TIMELINE_FAILED) {
		p->detail = "";
		p->reason = "";
	}
}

/* Object times are whole seconds, cut down: a pod of attempt a created
 * at 4.9 s reads "4 s", before a restart recorded at 4.38 s. A time less
 * than a second before its attempt began is that cut, so it is lifted to
 * the attempt's start rather than drawn in the attempt before. */
static void lift(const struct build *b, struct js_timeline_pod *p)
{
	int64_t x = (int64_t)p->attempt - b->att0;
	if (p->attempt < 1 || x < 0 || (size_t)x >= b->n_att || !b->att_start[x])
		return;
	int64_t s = b->att_start[x];
	int64_t *times[] = {&p->created_ms, &p->started_ms, &p->deleted_ms, &p->finished_ms};
	for (size_t i = 0; i < JS_ARRAY_SIZE(times); i++) {
		if (*times[i] && *times[i] < s && s - *times[i] < 1000)
			*times[i] = s;
	}
}

/* The attempt of a Job by uid, from the Jobs listed; -1 when gone. */
static int32_t job_attempt(const struct build *b, const char *uid)
{
	for (size_t i = 0; uid && *uid && i < json_array_size(b->in->jobs); i++) {
		const json_t *job = json_array_get(b->in->jobs, i);
		const char *u = js_json_str(js_json_path(job, "metadata"), "uid");
		if (u && strcmp(u, uid) == 0)
			return num(js_json_path(job, "metadata.labels"), JS_LABEL_RESTART_ATTEMPT);
	}
	return -1;
}

/* The pods gone but named in their Job's events ("Created pod: NAME"),
 * with what the events say of them. */
static void event_pods(struct build *b)
{
	for (size_t i = 0; i < b->n_evs; i++) {
		const json_t *e = b->evs[i];
		const char *k = event_kind(e), *r = js_json_str(e, "reason"), *note = js_json_str(e, "note");
		if (!k || strcmp(k, "Job") != 0 || !r || strcmp(r, "SuccessfulCreate") != 0 || !note ||
		    strncmp(note, CREATED_POD, strlen(CREATED_POD)) != 0)
			continue;
		const char *pod = note + strlen(CREATED_POD);
		if (!*pod || find_pod(b, pod))
			continue;
		struct cpod *c = new_pod(b);
		struct js_timeline_pod *p = &c->p;
		p->source = JS_TIMELINE_FROM_EVENTS;
		p->end = JS_TIMELINE_END_UNKNOWN;
		p->name = pod;
		p->job = event_name(e);
		c->job_uid = js_json_str(json_object_get(e, "regarding"), "uid");
		if (!c->job_uid)
			c->job_uid = "";
		const char *rjob = NULL;
		int32_t jidx = -1;
		if (parse_job_name(b, p->job, &rjob, &jidx)) {
			p->rjob = rjob;
			p->job_index = jidx;
		}
		p->index = index_from_name(pod, p->job);
		p->created_ms = js_describe_event_first_ms(e);
		p->attempt = job_attempt(b, c->job_uid);
		if (p->attempt < 0)
			p->attempt = attempt_at(b, p->created_ms);
	}
	/* What else the events say of them: a start a kubelet recorded, the
	 * deletion, and a Job's end when the Job had that one pod. */
	for (size_t i = 0; i < b->n_evs; i++) {
		const json_t *e = b->evs[i];
		const char *k = event_kind(e), *r = js_json_str(e, "reason"), *note = js_json_str(e, "note");
		int64_t at = js_describe_event_first_ms(e);
		if (!k || !r)
			continue;
		if (strcmp(k, "Pod") == 0) {
			struct cpod *c = find_pod(b, event_name(e));
			if (!c || c->p.source != JS_TIMELINE_FROM_EVENTS)
				continue;
			if (strcmp(r, "Started") == 0 && (!c->p.started_ms || at < c->p.started_ms))
				c->p.started_ms = at;
			else if (strcmp(r, "Killing") == 0 && !c->p.deleted_ms)
				c->p.deleted_ms = at;
			continue;
		}
		if (strcmp(k, "Job") != 0)
			continue;
		if (strcmp(r, "SuccessfulDelete") == 0 && note && strncmp(note, DELETED_POD, strlen(DELETED_POD)) == 0) {
			struct cpod *c = find_pod(b, note + strlen(DELETED_POD));
			if (c && c->p.source == JS_TIMELINE_FROM_EVENTS && !c->p.deleted_ms)
				c->p.deleted_ms = at;
			continue;
		}
		bool fail = in_list(r, job_failed_reasons, JS_ARRAY_SIZE(job_failed_reasons));
		if (!fail && strcmp(r, "Completed") != 0)
			continue;
		const char *uid = js_json_str(json_object_get(e, "regarding"), "uid");
		struct cpod *only = NULL;
		size_t n = 0;
		for (size_t j = 0; uid && j < b->n_pods; j++) {
			if (strcmp(b->pods[j].job_uid, uid) == 0) {
				only = &b->pods[j];
				n++;
			}
		}
		/* A Job's event names no pod: it tells a pod's end only when
		 * the Job made that one pod. */
		if (n != 1 || only->p.source != JS_TIMELINE_FROM_EVENTS)
			continue;
		only->p.end = fail ? JS_TIMELINE_FAILED : JS_TIMELINE_SUCCEEDED;
		only->p.finished_ms = at;
		if (fail) {
			only->p.reason = r;
			only->p.detail = own(b, js_buf_format("its Job failed: %s", note ? note : r));
		}
	}
}

/* "No record" rows: each pod position seen in some attempt gets one for
 * every earlier attempt that left nothing of it, spanning that attempt
 * when its bounds are known. Returns how many were left out past
 * JS_FROMAPI_MAX_NO_RECORD. */
static size_t no_record(struct build *b, size_t *ret_added)
{
	size_t known = b->n_pods, added = 0, left = 0;
	/* Attempts with no pod known at all need no search per position: a
	 * JobSet restarted hundreds of times keeps pods or events of a few
	 * attempts at most. */
	bool *any = js_xcalloc(b->n_att, sizeof(*any));
	for (size_t i = 0; i < known; i++) {
		int64_t x = (int64_t)b->pods[i].p.attempt - b->att0;
		if (b->pods[i].p.attempt >= 0 && x >= 0 && (size_t)x < b->n_att)
			any[x] = true;
	}
	for (size_t i = 0; i < known; i++) {
		const struct js_timeline_pod *p = &b->pods[i].p;
		if (p->attempt < 0 || !p->job[0])
			continue;
		/* Once per position: its first pod in the list. */
		bool first = true;
		for (size_t j = 0; j < i && first; j++) {
			const struct js_timeline_pod *q = &b->pods[j].p;
			first = !(q->attempt >= 0 && strcmp(q->job, p->job) == 0 && q->index == p->index &&
				  (p->index >= 0 || strcmp(q->name, p->name) == 0));
		}
		if (!first || p->index < 0)
			continue; /* a NonIndexed pod's position is its own name */
		for (size_t a = 0; a + 1 < b->n_att; a++) {
			bool have = false;
			for (size_t j = 0; any[a] && j < known && !have; j++) {
				const struct js_timeline_pod *q = &b->pods[j].p;
				have = q->attempt == b->att0 + (int32_t)a && strcmp(q->job, p->job) == 0 &&
				       q->index == p->index;
			}
			if (have)
				continue;
			if (added >= JS_FROMAPI_MAX_NO_RECORD) {
				left++;
				continue;
			}
			struct cpod *c = new_pod(b);
			p = &b->pods[i].p; /* new_pod may move the array */
			c->p.source = JS_TIMELINE_NO_RECORD;
			c->p.end = JS_TIMELINE_END_UNKNOWN;
			c->p.rjob = p->rjob;
			c->p.job = p->job;
			c->p.job_index = p->job_index;
			c->p.index = p->index;
			c->p.attempt = b->att0 + (int32_t)a;
			c->p.created_ms = b->att_start[a];
			c->p.finished_ms = b->att_start[a + 1];
			if (!c->p.created_ms || !c->p.finished_ms)
				c->p.created_ms = c->p.finished_ms = 0; /* bounds unknown: nothing to draw */
			added++;
		}
	}
	free(any);
	*ret_added = added;
	return left;
}

/* ---- the whole ---- */

/* The phase the status puts the JobSet in now, in core/phase's words, and
 * why there are no totals. */
static char *phases_note(const struct build *b)
{
	struct js_buf s;
	js_buf_init(&s, 4096);
	int r = js_buf_printf(&s, "Phase totals and goodput are not shown: the JobSet's status keeps only the last "
				  "transition of each condition, so how long earlier attempts were pending, running or "
				  "restarting is not recorded anywhere the API serves. jobset-controller counts them "
				  "while it runs (metrics jobset_phase_duration_seconds and jobset_goodput_ratio, "
				  "docs/metrics.md).");
	struct js_diag d = {0};
	struct js_jobset *js = NULL;
	if (js_codec_decode_jobset(b->in->jobset, JS_CODEC_LENIENT, &d, &js) == 0) {
		struct js_phase_obs obs;
		js_phase_observe(js, &obs);
		r = js_buf_printf(&s, " Now: %s", js_phase_name(obs.phase));
		if (obs.since_ms > 0)
			r = js_buf_printf(&s, " since +%.1f s", (double)(obs.since_ms - b->t->start_ms) / 1000.0);
		r = js_buf_printf(&s, " (core/phase, from the JobSet's conditions).");
	}
	(void)r; /* bounded: keeps what fits */
	js_jobset_free(js);
	js_diag_done(&d);
	char *out = js_xstrdup(js_buf_str(&s));
	js_buf_done(&s);
	return out;
}

/* The end of the picture: a finished JobSet's Completed or Failed time,
 * or later when a pod or event is (pods stop after the condition); a
 * running one's is now. */
static int64_t end_time(const struct build *b, const char **ret_result)
{
	const json_t *js = b->in->jobset;
	const char *term = js_json_str(json_object_get(js, "status"), "terminalState");
	const char *done = condition_true(js, "Completed") ? "Completed" : condition_true(js, "Failed") ? "Failed" : NULL;
	*ret_result = term ? term : done ? done : "";
	if (!term && !done)
		return b->in->now_ms > b->t->start_ms ? b->in->now_ms : b->t->start_ms;
	int64_t end = tms(condition(js, done ? done : term), "lastTransitionTime");
	for (size_t i = 0; i < b->n_pods; i++) {
		const struct js_timeline_pod *p = &b->pods[i].p;
		int64_t last = p->finished_ms > p->deleted_ms ? p->finished_ms : p->deleted_ms;
		if (last > end)
			end = last;
	}
	for (size_t i = 0; i < b->n_evs; i++) {
		int64_t t = js_describe_event_time_ms(b->evs[i]);
		if (t > end)
			end = t;
	}
	return end > b->t->start_ms ? end : b->in->now_ms;
}

static void notes(struct build *b, size_t no_rec, size_t no_rec_left)
{
	js_timeline_add_note(b->t, "A restart deletes the Jobs of the attempt that ended and their pods: such pods are "
				   "rebuilt from their events (hatched: their phases are not recorded, and a failure's "
				   "exit code only if a pod object showed it), and events expire (the API server's "
				   "--event-ttl, 1 hour by default).");
	if (!b->in->events)
		js_timeline_add_note(b->t, own(b, js_buf_format("The events could not be read (%s): pods already deleted "
								"cannot be rebuilt and the events table is empty.",
								b->in->events_error ? b->in->events_error : "unknown error")));
	size_t approx = 0, unknown = 0;
	for (size_t a = 1; a < b->n_att; a++) {
		approx += b->att_approx[a];
		unknown += !b->att_start[a];
	}
	if (approx)
		js_timeline_add_note(b->t, own(b, js_buf_format("%zu restart%s placed at the creation of the attempt's "
								"first Job, the restart's own event having expired: its "
								"reason is not recorded.",
								approx, approx == 1 ? " is" : "s are")));
	if (unknown)
		js_timeline_add_note(b->t, own(b, js_buf_format("%zu restart%s no time left at all (no event, no Job): "
								"counted in the header, not drawn.",
								unknown, unknown == 1 ? " has" : "s have")));
	if (no_rec)
		js_timeline_add_note(b->t, own(b, js_buf_format("%zu pod%s of earlier attempts left no record (the pods "
								"and their events are gone): drawn as their attempt's "
								"span, hatched%s.",
								no_rec, no_rec == 1 ? "" : "s",
								no_rec_left ? ", the rest not drawn" : "")));
	js_timeline_add_note(b->t, "Times of objects (creation, container start and finish) are whole seconds; only "
				   "event times have fractions.");
}

int js_fromapi_timeline(const struct js_fromapi_input *in, struct js_timeline **ret_t)
{
	const char *name = js_json_str(js_json_path(in->jobset, "metadata"), "name");
	if (!json_is_object(in->jobset) || !name)
		return JS_EINVALID;
	struct build b = {.in = in, .name = name, .rjobs = js_json_path(in->jobset, "spec.replicatedJobs")};
	size_t nr = json_array_size(b.rjobs);
	const char **rjobs = js_xcalloc(nr + 1, sizeof(*rjobs));
	size_t k = 0;
	for (size_t i = 0; i < nr; i++) {
		const char *rj = js_json_str(json_array_get(b.rjobs, i), "name");
		if (rj)
			rjobs[k++] = rj;
	}
	int64_t start = tms(in->jobset, "metadata.creationTimestamp");
	b.t = js_timeline_new_named(name, js_json_str(js_json_path(in->jobset, "metadata"), "namespace"), rjobs, k,
				    start ? start : in->now_ms);
	free(rjobs);
	b.t->origin = JS_TIMELINE_CLUSTER;
	json_int_t restarts = json_integer_value(js_json_path(in->jobset, "status.restarts"));
	b.restarts = restarts < 0 ? 0 : restarts > INT32_MAX ? INT32_MAX : (int32_t)restarts;
	/* The latest attempts: after a bad night, the recent restarts are the
	 * ones looked at, and the ones whose events have not expired. */
	b.n_att = (size_t)(b.restarts < JS_TIMELINE_MAX_RESTARTS ? b.restarts : JS_TIMELINE_MAX_RESTARTS) + 1;
	b.att0 = b.restarts + 1 - (int32_t)b.n_att;
	js_timeline_drop_restarts(b.t, (size_t)b.att0);
	b.att_start = js_xcalloc(b.n_att, sizeof(*b.att_start));
	b.att_approx = js_xcalloc(b.n_att, sizeof(*b.att_approx));

	collect_events(&b);
	attempts(&b);
	for (size_t i = 0; i < json_array_size(in->pods); i++)
		seen_pod(&b, json_array_get(in->pods, i));
	for (size_t i = 0; i < b.n_pods; i++)
		lift(&b, &b.pods[i].p);
	event_pods(&b);
	size_t no_rec = 0, left = no_record(&b, &no_rec);
	for (size_t i = 0; i < b.n_pods; i++)
		js_timeline_add_pod(b.t, &b.pods[i].p);
	notes(&b, no_rec, left);
	const char *result;
	int64_t end = end_time(&b, &result);
	char *note = phases_note(&b);
	js_timeline_end(b.t, end, result, b.restarts, NULL, note);
	free(note);

	for (size_t i = 0; i < b.n_owned; i++)
		free(b.owned[i]);
	free(b.owned);
	free(b.pods);
	free(b.evs);
	free(b.att_start);
	free(b.att_approx);
	*ret_t = b.t;
	return 0;
}
