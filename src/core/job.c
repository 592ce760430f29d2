/*
 * job.c - the observed child Job: decoding from batch/v1 JSON, copying,
 * RFC 3339 times without the C library's time zone machinery.
 */
#include "core/job.h"

#include <stdlib.h>
#include <string.h>

#include "api/jobset.h"
#include "base/json.h"

static char *dup_or_null(const char *s)
{
	return s ? js_xstrdup(s) : NULL;
}

static bool get_i32(const json_t *o, const char *key, int32_t *ret)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v))
		return false;
	json_int_t x = json_integer_value(v);
	if (x < INT32_MIN || x > INT32_MAX)
		return false;
	*ret = (int32_t)x;
	return true;
}

static json_t *copy_string_map(const json_t *v)
{
	return json_is_object(v) ? json_deep_copy(v) : NULL;
}

/* The controller owner reference of kind JobSet in our API version. */
static const char *owner_uid(const json_t *meta)
{
	json_t *refs = json_object_get(meta, "ownerReferences");
	size_t i;
	json_t *r;
	json_array_foreach(refs, i, r) {
		if (!json_is_true(json_object_get(r, "controller")))
			continue;
		const char *k = js_json_str(r, "kind"), *av = js_json_str(r, "apiVersion");
		if (k && av && strcmp(k, JS_KIND) == 0 && strcmp(av, JS_API_VERSION) == 0)
			return js_json_str(r, "uid");
	}
	return NULL;
}

int js_job_from_json(const json_t *job, struct js_obsjob *ret)
{
	const json_t *meta = json_object_get(job, "metadata");
	const json_t *spec = json_object_get(job, "spec");
	const json_t *st = json_object_get(job, "status");
	struct js_obsjob j = {0};

	if (!js_json_str(meta, "name"))
		return JS_EINVALID;
	j.name = js_xstrdup(js_json_str(meta, "name"));
	j.uid = dup_or_null(js_json_str(meta, "uid"));
	j.labels = copy_string_map(json_object_get(meta, "labels"));
	j.annotations = copy_string_map(json_object_get(meta, "annotations"));
	j.owner_uid = dup_or_null(owner_uid(meta));
	j.deleting = json_object_get(meta, "deletionTimestamp") && !json_is_null(json_object_get(meta, "deletionTimestamp"));

	json_t *susp = json_object_get(spec, "suspend");
	if (json_is_boolean(susp)) {
		j.has_suspend = true;
		j.suspend = json_is_true(susp);
	}
	j.has_parallelism = get_i32(spec, "parallelism", &j.parallelism);
	j.has_completions = get_i32(spec, "completions", &j.completions);
	if (json_is_object(json_object_get(spec, "template")))
		j.pod_template = json_deep_copy(json_object_get(spec, "template"));

	(void)get_i32(st, "active", &j.active);
	(void)get_i32(st, "succeeded", &j.succeeded);
	(void)get_i32(st, "failed", &j.failed);
	j.has_ready = get_i32(st, "ready", &j.ready);
	j.has_terminating = get_i32(st, "terminating", &j.terminating);
	j.has_start_time = js_time_parse_rfc3339(js_json_str(st, "startTime"), &j.start_time) == 0;

	json_t *conds = json_object_get(st, "conditions");
	if (json_is_array(conds) && json_array_size(conds) > 0) {
		j.conditions = js_xcalloc(json_array_size(conds), sizeof(*j.conditions));
		size_t i;
		json_t *c;
		json_array_foreach(conds, i, c) {
			if (!js_json_str(c, "type") || !js_json_str(c, "status"))
				continue;
			struct js_jobcond *jc = &j.conditions[j.n_conditions++];
			jc->type = js_xstrdup(js_json_str(c, "type"));
			jc->status = js_xstrdup(js_json_str(c, "status"));
			jc->reason = dup_or_null(js_json_str(c, "reason"));
			jc->message = dup_or_null(js_json_str(c, "message"));
			jc->has_last_transition_time =
				js_time_parse_rfc3339(js_json_str(c, "lastTransitionTime"), &jc->last_transition_time) == 0;
		}
	}
	*ret = j;
	return 0;
}

void js_job_done(struct js_obsjob *j)
{
	if (!j)
		return;
	free(j->name);
	free(j->uid);
	json_decref(j->labels);
	json_decref(j->annotations);
	free(j->owner_uid);
	json_decref(j->pod_template);
	for (size_t i = 0; i < j->n_conditions; i++) {
		free(j->conditions[i].type);
		free(j->conditions[i].status);
		free(j->conditions[i].reason);
		free(j->conditions[i].message);
	}
	free(j->conditions);
	memset(j, 0, sizeof(*j));
}

void js_job_copy(const struct js_obsjob *src, struct js_obsjob *ret)
{
	struct js_obsjob j = *src;
	j.name = dup_or_null(src->name);
	j.uid = dup_or_null(src->uid);
	j.labels = src->labels ? json_deep_copy(src->labels) : NULL;
	j.annotations = src->annotations ? json_deep_copy(src->annotations) : NULL;
	j.owner_uid = dup_or_null(src->owner_uid);
	j.pod_template = src->pod_template ? json_deep_copy(src->pod_template) : NULL;
	j.conditions = NULL;
	if (src->n_conditions) {
		j.conditions = js_xcalloc(src->n_conditions, sizeof(*j.conditions));
		for (size_t i = 0; i < src->n_conditions; i++) {
			j.conditions[i] = src->conditions[i];
			j.conditions[i].type = dup_or_null(src->conditions[i].type);
			j.conditions[i].status = dup_or_null(src->conditions[i].status);
			j.conditions[i].reason = dup_or_null(src->conditions[i].reason);
			j.conditions[i].message = dup_or_null(src->conditions[i].message);
		}
	}
	*ret = j;
}

const char *js_job_label(const struct js_obsjob *j, const char *key)
{
	return j->labels ? js_json_str(j->labels, key) : NULL;
}

const struct js_jobcond *js_job_condition_true(const struct js_obsjob *j, const char *type)
{
	for (size_t i = 0; i < j->n_conditions; i++) {
		const struct js_jobcond *c = &j->conditions[i];
		if (c->type && c->status && strcmp(c->type, type) == 0 && strcmp(c->status, "True") == 0)
			return c;
	}
	return NULL;
}
