/*
 * heartbeat.c - the hang-detection annotations (heartbeat.h) and their
 * validation (api_int.h, js__validate_progress).
 */
#include "api/heartbeat.h"

#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/parse.h"
#include "base/str.h"

static const char *const keys[] = {JS_ANN_PROGRESS_DEADLINE, JS_ANN_PROGRESS_STARTUP};

#define RANGE_MSG "a whole number of seconds from 1 to 2147483647, as a string (\"600\")"

int js_heartbeat_parse(const char *s, int32_t *ret)
{
	int64_t v;
	/* Strictly digits: js_parse_i64_in alone would take a sign. */
	if (!s || !*s || strspn(s, "0123456789") != strlen(s) ||
	    js_parse_i64_in(s, strlen(s), 1, INT32_MAX, &v) < 0)
		return JS_EINVALID;
	*ret = (int32_t)v;
	return 0;
}

static const json_t *rjob_annotations(const struct js_jobset *js, size_t i)
{
	return js_json_path(js->spec.replicated_jobs[i].template_, "metadata.annotations");
}

/* The value of `key` in effect for ReplicatedJob `i`: its own, else the
 * JobSet's, else NULL. */
static const json_t *in_effect(const struct js_jobset *js, size_t i, const char *key)
{
	const json_t *v = json_object_get(rjob_annotations(js, i), key);
	return v ? v : json_object_get(js->meta.annotations, key);
}

static int parse_json(const json_t *v, int32_t *ret)
{
	return js_heartbeat_parse(json_is_string(v) ? json_string_value(v) : NULL, ret);
}

int js_heartbeat_of(const struct js_jobset *js, size_t rjob, struct js_heartbeat *ret)
{
	if (rjob >= js->spec.n_replicated_jobs)
		return JS_EINVALID;
	const json_t *d = in_effect(js, rjob, JS_ANN_PROGRESS_DEADLINE);
	const json_t *s = in_effect(js, rjob, JS_ANN_PROGRESS_STARTUP);
	struct js_heartbeat h = {0};
	if (d) {
		if (parse_json(d, &h.deadline_s) < 0 || (s && parse_json(s, &h.startup_s) < 0))
			return JS_EINVALID;
		h.on = true;
		if (!s)
			h.startup_s = h.deadline_s;
	}
	*ret = h;
	return 0;
}

/* The same value at the same place in `old` (an update may keep what a
 * JobSet got while the gate was on, as KEP-1186's guard allows). */
static bool unchanged(const json_t *old_ann, const char *key, const json_t *v)
{
	return old_ann && json_equal(json_object_get(old_ann, key), v);
}

/* One map of annotations (the JobSet's or a ReplicatedJob template's):
 * refused while the gate is off, else each value in range. */
static void check_map(struct js_vctx *v, const char *meta_path, const json_t *ann, const json_t *old_ann)
{
	for (size_t k = 0; k < JS_ARRAY_SIZE(keys); k++) {
		const json_t *val = json_object_get(ann, keys[k]);
		if (!val)
			continue;
		char *p = js_buf_format("%s.annotations[%s]", meta_path, keys[k]);
		int32_t x;
		if (!v->opts->gates.progress_deadline) {
			if (!unchanged(old_ann, keys[k], val))
				js__vadd(v, JS_DIAG_FORBIDDEN, p, val,
					 "hang detection needs the ProgressDeadline feature gate, which is off (enable it "
					 "with the gate ProgressDeadline=true; docs/progress-deadline.md)");
		} else if (parse_json(val, &x) < 0) {
			js__vadd(v, JS_DIAG_INVALID, p, val, "must be " RANGE_MSG);
		}
		free(p);
	}
}

void js__validate_progress(struct js_vctx *v, const struct js_jobset *old)
{
	const struct js_jobset *js = v->js;
	size_t before = v->diag->n;
	check_map(v, "metadata", js->meta.annotations, old ? old->meta.annotations : NULL);
	for (size_t i = 0; i < js->spec.n_replicated_jobs; i++) {
		char *mp = js_buf_format("spec.replicatedJobs[%zu].template.metadata", i);
		const json_t *old_ann = old && i < old->spec.n_replicated_jobs ? rjob_annotations(old, i) : NULL;
		check_map(v, mp, rjob_annotations(js, i), old_ann);
		free(mp);
	}
	if (v->diag->n != before || !v->opts->gates.progress_deadline)
		return;
	/* A startup allowance with no deadline in effect would silently do
	 * nothing: say where it is and what it lacks. */
	bool top_reported = false;
	for (size_t i = 0; i < js->spec.n_replicated_jobs; i++) {
		if (in_effect(js, i, JS_ANN_PROGRESS_DEADLINE) || !in_effect(js, i, JS_ANN_PROGRESS_STARTUP))
			continue;
		bool own = json_object_get(rjob_annotations(js, i), JS_ANN_PROGRESS_STARTUP) != NULL;
		if (!own && top_reported)
			continue;
		top_reported |= !own;
		char *p = own ? js_buf_format("spec.replicatedJobs[%zu].template.metadata.annotations[%s]", i,
					      JS_ANN_PROGRESS_STARTUP)
			      : js_buf_format("metadata.annotations[%s]", JS_ANN_PROGRESS_STARTUP);
		js__vadd(v, JS_DIAG_INVALID, p, in_effect(js, i, JS_ANN_PROGRESS_STARTUP),
			 "a startup allowance needs a deadline: ReplicatedJob '%s' has no " JS_ANN_PROGRESS_DEADLINE
			 " (on the JobSet or its template)",
			 js->spec.replicated_jobs[i].name ? js->spec.replicated_jobs[i].name : "");
		free(p);
	}
}

char *js_heartbeat_report_format(const struct js_heartbeat_report *r, const char *message)
{
	json_t *o = json_object();
	json_object_set_new(o, "reason", json_string(JS_HEARTBEAT_CONDITION));
	json_object_set_new(o, "atMs", json_integer(r->at_ms));
	if (r->has_beat)
		json_object_set_new(o, "heartbeatMs", json_integer(r->beat_ms));
	char *base = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	/* Room for the message: what is left under the kubelet's cut, minus
	 * the member's own syntax and escapes at their worst (6 bytes per
	 * byte for control characters, which the watcher never writes). */
	size_t room = JS_HEARTBEAT_REPORT_MAX - 64 - strlen(base);
	free(base);
	if (message) {
		size_t n = strnlen(message, room / 6);
		json_object_set_new(o, "message", json_stringn(message, n));
	}
	char *out = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return out;
}

/* A non-negative JSON integer member, or absent. */
static int get_ms(const json_t *o, const char *key, bool *has, int64_t *ret)
{
	const json_t *v = json_object_get(o, key);
	*has = v != NULL;
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return JS_EINVALID;
	*ret = (int64_t)json_integer_value(v);
	return 0;
}

int js_heartbeat_report_parse(const char *s, struct js_heartbeat_report *ret)
{
	if (!s || strnlen(s, JS_HEARTBEAT_REPORT_MAX + 1) > JS_HEARTBEAT_REPORT_MAX)
		return JS_EINVALID;
	json_t *o = json_loads(s, JSON_REJECT_DUPLICATES, NULL);
	struct js_heartbeat_report r = {0};
	bool has_at = false;
	int rc = JS_EINVALID;
	if (json_is_object(o) && js_str_match(js_json_str(o, "reason"), JS_HEARTBEAT_CONDITION) &&
	    get_ms(o, "atMs", &has_at, &r.at_ms) == 0 && has_at &&
	    get_ms(o, "heartbeatMs", &r.has_beat, &r.beat_ms) == 0) {
		*ret = r;
		rc = 0;
	}
	json_decref(o);
	return rc;
}
