/*
 * json.c - small helpers over jansson.
 */
#include "base/json.h"

#include <string.h>

#include "base/common.h"

json_t *js_json_path(const json_t *root, const char *dotted)
{
	const json_t *cur = root;
	const char *p = dotted;
	while (cur && *p) {
		size_t n = strcspn(p, ".");
		char key[128];
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, p, n);
		key[n] = '\0';
		cur = json_object_get(cur, key);
		p += n;
		if (*p == '.')
			p++;
	}
	return js_json_unconst(cur);
}

json_t *js_json_path_make(json_t *root, const char *dotted)
{
	json_t *cur = root;
	const char *p = dotted;
	while (*p) {
		size_t n = strcspn(p, ".");
		char key[128];
		if (n >= sizeof(key))
			n = sizeof(key) - 1;
		memcpy(key, p, n);
		key[n] = '\0';
		json_t *next = json_object_get(cur, key);
		if (!json_is_object(next)) {
			next = json_object();
			json_object_set_new(cur, key, next);
		}
		cur = next;
		p += n;
		if (*p == '.')
			p++;
	}
	return cur;
}

char *js_json_dump_sorted(const json_t *v, bool pretty)
{
	size_t flags = JSON_SORT_KEYS | JSON_ENCODE_ANY | (pretty ? JSON_INDENT(2) : JSON_COMPACT);
	char *s = json_dumps(v, flags);
	return s ? s : js_xstrdup("null");
}

json_t *js_json_merge_diff(const json_t *from, const json_t *to)
{
	if (!json_is_object(to) || !json_is_object(from))
		return from && to && json_equal(from, to) ? NULL : json_incref(js_json_unconst(to));
	json_t *patch = json_object();
	const char *k;
	json_t *v;
	json_object_foreach(js_json_unconst(to), k, v) {
		json_t *d = js_json_merge_diff(json_object_get(from, k), v);
		if (d)
			json_object_set_new(patch, k, d);
	}
	json_object_foreach(js_json_unconst(from), k, v) {
		if (!json_object_get(to, k))
			json_object_set_new(patch, k, json_null());
	}
	if (json_object_size(patch) == 0) {
		json_decref(patch);
		return NULL;
	}
	return patch;
}

void js_json_merge_patch(json_t *target, const json_t *patch)
{
	const char *k;
	json_t *v;
	json_object_foreach(js_json_unconst(patch), k, v) {
		if (json_is_null(v)) {
			json_object_del(target, k);
		} else if (json_is_object(v)) {
			json_t *t = json_object_get(target, k);
			if (!json_is_object(t)) {
				t = json_object();
				json_object_set_new(target, k, t);
			}
			js_json_merge_patch(t, v);
		} else {
			json_object_set_new(target, k, json_deep_copy(v));
		}
	}
}

const char *js_json_controller_uid(const json_t *obj)
{
	size_t i;
	json_t *ref;
	json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i, ref)
	{
		if (json_is_true(json_object_get(ref, "controller")))
			return js_json_str(ref, "uid");
	}
	return NULL;
}
