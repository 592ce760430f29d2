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

char *js_owner_unowned_key(const json_t *obj)
{
	const json_t *ref = js_render_jobset_owner(obj);
	const char *label = js_json_str(js_json_path(obj, "metadata.labels"), JS_LABEL_JOBSET_NAME);
	if (ref && label && str_same(js_json_str(ref, "name"), label))
		return NULL;
	return js_owner_label_key(obj);
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
