/*
 * validate_template.c - checks of the embedded batch/v1 Job template that
 * the Job API would otherwise make only when the controller creates the
 * child Job, long after submit (upstream #422, #1024). Each error names the
 * full field path under spec.replicatedJobs[i].template.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api/api_int.h"
#include "api/validate.h"
#include "base/json.h"

/* Job spec integer fields and their bounds: batch/v1 validation asks each
 * to be >= 0, and the type's range is the upper bound (activeDeadlineSeconds
 * is the one int64; 0 and its largest value are valid, issue 22). */
static const struct {
	const char *field;
	long long min, max;
} job_ints[] = {
	{"parallelism", 0, INT32_MAX},           {"completions", 0, INT32_MAX},
	{"backoffLimit", 0, INT32_MAX},          {"backoffLimitPerIndex", 0, INT32_MAX},
	{"maxFailedIndexes", 0, INT32_MAX},      {"activeDeadlineSeconds", 0, INT64_MAX},
	{"ttlSecondsAfterFinished", 0, INT32_MAX},
};

/* Job API cap on Indexed completions and parallelism. */
#define INDEXED_MAX 100000

static void check_type(struct js_vctx *v, const char *path, const json_t *val, json_type want, const char *want_name)
{
	if (val && json_typeof(val) != want && !(want == JSON_TRUE && json_is_boolean(val)))
		js__vadd(v, JS_DIAG_TYPE, path, val, "expected %s, got %s", want_name, js_codec_json_type_name(val));
}

static void check_containers(struct js_vctx *v, const char *pod_path, const json_t *pod_spec, json_t *seen,
			     const char *list, bool required)
{
	char path[512];
	snprintf(path, sizeof(path), "%s.%s", pod_path, list);
	const json_t *cs = json_object_get(pod_spec, list);
	if (!cs || json_is_null(cs)) {
		if (required)
			js__vadd(v, JS_DIAG_REQUIRED, path, NULL,
				 "a pod needs at least one container; add one under %s", list);
		return;
	}
	if (!json_is_array(cs)) {
		check_type(v, path, cs, JSON_ARRAY, "a list of containers");
		return;
	}
	if (required && json_array_size(cs) == 0)
		js__vadd(v, JS_DIAG_REQUIRED, path, NULL, "a pod needs at least one container; the list is empty");
	size_t i;
	json_t *c;
	json_array_foreach(cs, i, c) {
		char cpath[600];
		snprintf(cpath, sizeof(cpath), "%s[%zu]", path, i);
		if (!json_is_object(c)) {
			check_type(v, cpath, c, JSON_OBJECT, "a container object");
			continue;
		}
		char fpath[640];
		snprintf(fpath, sizeof(fpath), "%s.name", cpath);
		const json_t *name = json_object_get(c, "name");
		if (!json_is_string(name)) {
			if (name)
				check_type(v, fpath, name, JSON_STRING, "string");
			else
				js__vadd(v, JS_DIAG_REQUIRED, fpath, NULL, "every container needs a name");
		} else if (!js_is_dns1123_label(json_string_value(name))) {
			js__vadd(v, JS_DIAG_INVALID, fpath, name,
				 "a container name must be a DNS-1123 label: at most 63 lower-case letters, digits "
				 "or '-', starting and ending with a letter or digit");
		} else if (json_object_get(seen, json_string_value(name))) {
			js__vadd(v, JS_DIAG_DUPLICATE, fpath, name,
				 "two containers of this pod share the name; names must be unique across "
				 "containers and initContainers");
		} else {
			json_object_set_new(seen, json_string_value(name), json_true());
		}
		snprintf(fpath, sizeof(fpath), "%s.image", cpath);
		const json_t *image = json_object_get(c, "image");
		if (image && !json_is_string(image))
			check_type(v, fpath, image, JSON_STRING, "string");
		else if (!image || !json_string_value(image)[0])
			js__vadd(v, JS_DIAG_REQUIRED, fpath, NULL,
				 "the Job API requires an image for every container");
		static const char *const lists[] = {"command", "args"};
		for (int l = 0; l < 2; l++) {
			const json_t *a = json_object_get(c, lists[l]);
			snprintf(fpath, sizeof(fpath), "%s.%s", cpath, lists[l]);
			if (a && !json_is_array(a)) {
				check_type(v, fpath, a, JSON_ARRAY, "a list of strings");
				continue;
			}
			size_t k;
			json_t *s;
			json_array_foreach(a, k, s) {
				if (!json_is_string(s)) {
					char epath[700];
					snprintf(epath, sizeof(epath), "%s[%zu]", fpath, k);
					check_type(v, epath, s, JSON_STRING, "string");
				}
			}
		}
	}
}

static void check_pod_spec(struct js_vctx *v, const char *tpath, const json_t *job_spec, bool indexed)
{
	char pod_path[512];
	snprintf(pod_path, sizeof(pod_path), "%s.spec.template.spec", tpath);
	const json_t *pod_tmpl = json_object_get(job_spec, "template");
	if (!json_is_object(pod_tmpl)) {
		char p[512];
		snprintf(p, sizeof(p), "%s.spec.template", tpath);
		if (pod_tmpl)
			check_type(v, p, pod_tmpl, JSON_OBJECT, "a pod template object");
		else
			js__vadd(v, JS_DIAG_REQUIRED, p, NULL, "a Job template needs a pod template (spec.template)");
		return;
	}
	const json_t *pod_spec = json_object_get(pod_tmpl, "spec");
	if (!json_is_object(pod_spec)) {
		if (pod_spec)
			check_type(v, pod_path, pod_spec, JSON_OBJECT, "a pod spec object");
		else
			js__vadd(v, JS_DIAG_REQUIRED, pod_path, NULL, "a pod template needs a spec with containers");
		return;
	}
	json_t *seen = json_object();
	check_containers(v, pod_path, pod_spec, seen, "containers", true);
	check_containers(v, pod_path, pod_spec, seen, "initContainers", false);
	json_decref(seen);

	char p[600];
	snprintf(p, sizeof(p), "%s.restartPolicy", pod_path);
	const json_t *rp = json_object_get(pod_spec, "restartPolicy");
	if (rp && !json_is_string(rp)) {
		check_type(v, p, rp, JSON_STRING, "string");
	} else if (rp) {
		const char *s = json_string_value(rp);
		if (strcmp(s, "OnFailure") != 0 && strcmp(s, "Never") != 0)
			js__vadd(v, JS_DIAG_NOT_SUPPORTED, p, rp,
				 "pods of a Job may only use \"OnFailure\" or \"Never\"; the Job API refuses %s",
				 s[0] ? "\"Always\" and any other value" : "an empty value");
		else if (strcmp(s, "Never") != 0 && json_object_get(job_spec, "podFailurePolicy"))
			js__vadd(v, JS_DIAG_INVALID, p, rp,
				 "a Job with a podFailurePolicy needs restartPolicy \"Never\" in its pod template");
	}
	const json_t *sub = json_object_get(pod_spec, "subdomain");
	snprintf(p, sizeof(p), "%s.subdomain", pod_path);
	if (sub)
		check_type(v, p, sub, JSON_STRING, "string");
	(void)indexed;
}

void js__validate_template(struct js_vctx *v, size_t ri)
{
	const struct js_rjob *r = &v->js->spec.replicated_jobs[ri];
	char tpath[256];
	snprintf(tpath, sizeof(tpath), "spec.replicatedJobs[%zu].template", ri);
	if (!r->template_)
		return; /* the codec already reported a missing template */
	const json_t *spec = json_object_get(r->template_, "spec");
	char p[512];
	snprintf(p, sizeof(p), "%s.spec", tpath);
	if (!json_is_object(spec)) {
		if (spec)
			check_type(v, p, spec, JSON_OBJECT, "a Job spec object");
		else
			js__vadd(v, JS_DIAG_REQUIRED, p, NULL, "a ReplicatedJob template needs a Job spec");
		return;
	}
	for (size_t i = 0; i < JS_ARRAY_SIZE(job_ints); i++) {
		const json_t *x = json_object_get(spec, job_ints[i].field);
		snprintf(p, sizeof(p), "%s.spec.%s", tpath, job_ints[i].field);
		if (!x || json_is_null(x))
			continue;
		if (!json_is_integer(x))
			check_type(v, p, x, JSON_INTEGER, "integer");
		else if (json_integer_value(x) < job_ints[i].min || json_integer_value(x) > job_ints[i].max)
			js__vadd(v, JS_DIAG_INVALID, p, x, "must be between %lld and %lld", job_ints[i].min,
				 job_ints[i].max);
	}
	const json_t *mode = json_object_get(spec, "completionMode");
	bool indexed = json_is_string(mode) && strcmp(json_string_value(mode), "Indexed") == 0;
	snprintf(p, sizeof(p), "%s.spec.completionMode", tpath);
	if (mode && !json_is_null(mode)) {
		if (!json_is_string(mode))
			check_type(v, p, mode, JSON_STRING, "string");
		else if (!indexed && strcmp(json_string_value(mode), "NonIndexed") != 0)
			js__vadd(v, JS_DIAG_NOT_SUPPORTED, p, mode, "completionMode is \"Indexed\" or \"NonIndexed\"");
	}
	int32_t completions = 0, parallelism = 0;
	bool has_c = js_tmpl_i32(r, "completions", &completions);
	bool has_p = js_tmpl_i32(r, "parallelism", &parallelism);
	if (indexed) {
		snprintf(p, sizeof(p), "%s.spec.completions", tpath);
		if (!has_c && has_p)
			js__vadd(v, JS_DIAG_REQUIRED, p, NULL,
				 "an Indexed Job with parallelism needs completions (the number of indexes); the Job "
				 "API refuses it otherwise");
		else if (completions > INDEXED_MAX)
			js__vadd(v, JS_DIAG_INVALID, p, json_object_get(spec, "completions"),
				 "an Indexed Job may have at most %d completions", INDEXED_MAX);
		snprintf(p, sizeof(p), "%s.spec.parallelism", tpath);
		if (has_p && parallelism > INDEXED_MAX)
			js__vadd(v, JS_DIAG_INVALID, p, json_object_get(spec, "parallelism"),
				 "an Indexed Job may have a parallelism of at most %d", INDEXED_MAX);
	}
	int32_t bpi = 0, mfi = 0;
	bool has_bpi = js_tmpl_i32(r, "backoffLimitPerIndex", &bpi);
	bool has_mfi = js_tmpl_i32(r, "maxFailedIndexes", &mfi);
	if (has_bpi && !indexed) {
		snprintf(p, sizeof(p), "%s.spec.backoffLimitPerIndex", tpath);
		js__vadd(v, JS_DIAG_INVALID, p, json_object_get(spec, "backoffLimitPerIndex"),
			 "backoffLimitPerIndex needs completionMode \"Indexed\"");
	}
	if (has_mfi) {
		snprintf(p, sizeof(p), "%s.spec.maxFailedIndexes", tpath);
		if (!has_bpi)
			js__vadd(v, JS_DIAG_INVALID, p, json_object_get(spec, "maxFailedIndexes"),
				 "maxFailedIndexes needs backoffLimitPerIndex to be set");
		else if (has_c && mfi > completions)
			js__vadd(v, JS_DIAG_INVALID, p, json_object_get(spec, "maxFailedIndexes"),
				 "maxFailedIndexes may not exceed completions (%d)", completions);
	}
	const json_t *prp = json_object_get(spec, "podReplacementPolicy");
	if (prp && !json_is_null(prp)) {
		snprintf(p, sizeof(p), "%s.spec.podReplacementPolicy", tpath);
		const char *s = json_string_value(prp);
		if (!s)
			check_type(v, p, prp, JSON_STRING, "string");
		else if (strcmp(s, "Failed") != 0 && strcmp(s, "TerminatingOrFailed") != 0)
			js__vadd(v, JS_DIAG_NOT_SUPPORTED, p, prp,
				 "podReplacementPolicy is \"TerminatingOrFailed\" or \"Failed\"");
		else if (strcmp(s, "Failed") != 0 && json_object_get(spec, "podFailurePolicy"))
			js__vadd(v, JS_DIAG_INVALID, p, prp, "a Job with a podFailurePolicy needs podReplacementPolicy \"Failed\"");
	}
	const json_t *meta = json_object_get(r->template_, "metadata");
	static const char *const maps[] = {"labels", "annotations"};
	for (int m = 0; m < 2; m++) {
		const json_t *mv = json_object_get(meta, maps[m]);
		snprintf(p, sizeof(p), "%s.metadata.%s", tpath, maps[m]);
		if (mv && !json_is_object(mv)) {
			check_type(v, p, mv, JSON_OBJECT, "a map of strings");
			continue;
		}
		const char *k;
		json_t *val;
		json_object_foreach(js_json_unconst(mv), k, val) {
			if (!json_is_string(val)) {
				char kp[700];
				snprintf(kp, sizeof(kp), "%s[%s]", p, k);
				check_type(v, kp, val, JSON_STRING, "string");
			}
		}
	}
	check_pod_spec(v, tpath, spec, indexed);
}
