/*
 * owner.c - object -> owning JobSet key. See owner.h.
 */
#include "ctrl/owner.h"

#include <string.h>

#include "api/jobset.h"
#include "api/render.h"
#include "base/buf.h"
#include "base/json.h"

const char *js_owner_jobset_uid(const json_t *obj)
{
	return js_json_str(js_render_jobset_owner(obj), "uid");
}

static bool str_same(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static char *make_key(const char *ns, const char *name)
{
	if (!name || !*name)
		return NULL;
	struct js_buf b;
	js_buf_init(&b, 1024);
	if (js_buf_printf(&b, "%s/%s", ns ? ns : "", name) < 0) {
		js_buf_done(&b);
		return NULL;
	}
	return js_buf_take(&b);
}

char *js_owner_jobset_key(const json_t *obj)
{
	const json_t *ref = js_render_jobset_owner(obj);
	if (!ref)
		return NULL;
	return make_key(js_json_str(json_object_get(obj, "metadata"), "namespace"), js_json_str(ref, "name"));
}

char *js_owner_label_key(const json_t *obj)
{
	const json_t *md = json_object_get(obj, "metadata");
	return make_key(js_json_str(md, "namespace"), js_json_str(json_object_get(md, "labels"), JS_LABEL_JOBSET_NAME));
}

size_t js_owner_unowned_keys(const json_t *obj, char *keys[2])
{
	const json_t *ref = js_render_jobset_owner(obj);
	const char *owner = ref ? js_json_str(ref, "name") : NULL;
	const char *names[2] = {
		js_json_str(js_json_path(obj, "metadata.labels"), JS_LABEL_JOBSET_NAME),
		js_json_str(js_json_path(obj, "spec.template.metadata.labels"), JS_LABEL_JOBSET_NAME),
	};
	const char *ns = js_json_str(json_object_get(obj, "metadata"), "namespace");
	size_t n = 0;
	for (size_t i = 0; i < 2; i++) {
		if (!names[i] || str_same(owner, names[i]) || (i == 1 && str_same(names[0], names[1])))
			continue;
		char *key = make_key(ns, names[i]);
		if (key)
			keys[n++] = key;
	}
	return n;
}

char *js_owner_object_key(const json_t *obj)
{
	const json_t *md = json_object_get(obj, "metadata");
	return make_key(js_json_str(md, "namespace"), js_json_str(md, "name"));
}

int js_owner_split_key(const char *key, char **ret_ns, char **ret_name)
{
	const char *slash = key ? strchr(key, '/') : NULL;
	if (!slash || !slash[1] || strchr(slash + 1, '/'))
		return JS_EINVALID;
	*ret_ns = js_xstrndup(key, (size_t)(slash - key));
	*ret_name = js_xstrdup(slash + 1);
	return 0;
}
