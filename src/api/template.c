/*
 * template.c - typed reads of the embedded batch/v1 JobTemplateSpec.
 */
#include "api/template.h"

#include <string.h>

#include "base/json.h"

json_t *js_tmpl_job_spec(const struct js_rjob *rjob)
{
	json_t *s = json_object_get(rjob->template_, "spec");
	return json_is_object(s) ? s : NULL;
}

json_t *js_tmpl_pod_spec(const struct js_rjob *rjob)
{
	json_t *s = js_json_path(rjob->template_, "spec.template.spec");
	return json_is_object(s) ? s : NULL;
}

bool js_tmpl_i32(const struct js_rjob *rjob, const char *field, int32_t *ret)
{
	json_t *v = json_object_get(js_tmpl_job_spec(rjob), field);
	if (!json_is_integer(v))
		return false;
	json_int_t x = json_integer_value(v);
	if (x < INT32_MIN || x > INT32_MAX)
		return false;
	*ret = (int32_t)x;
	return true;
}

const char *js_tmpl_str(const struct js_rjob *rjob, const char *field)
{
	return json_string_value(json_object_get(js_tmpl_job_spec(rjob), field));
}

bool js_tmpl_indexed(const struct js_rjob *rjob)
{
	const char *m = js_tmpl_str(rjob, "completionMode");
	return m && strcmp(m, "Indexed") == 0;
}

const char *js_tmpl_annotation(const struct js_rjob *rjob, const char *key)
{
	return json_string_value(json_object_get(js_json_path(rjob->template_, "metadata.annotations"), key));
}

bool js_tmpl_pod_mounts(const json_t *pod_spec, const char *name)
{
	static const char *const lists[] = {"containers", "initContainers"};
	for (size_t l = 0; l < 2; l++) {
		size_t i;
		json_t *c;
		json_array_foreach(json_object_get(pod_spec, lists[l]), i, c) {
			size_t j;
			json_t *m;
			json_array_foreach(json_object_get(c, "volumeMounts"), j, m) {
				const char *mn = js_json_str(m, "name");
				if (mn && strcmp(mn, name) == 0)
					return true;
			}
		}
	}
	return false;
}
