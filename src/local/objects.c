/*
 * objects.c - ConfigMaps, Secrets and PersistentVolumeClaims of the manifest
 * stream (see objects.h).
 */
#include "local/objects.h"

#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/hmap.h"
#include "base/json.h"
#include "base/limits.h"

struct js_objects {
	struct js_hmap *by_kind[JS_OBJECTS__COUNT]; /* name -> js_objects_data */
	char **claims;
	size_t n_claims;
};

static const char *const kind_names[JS_OBJECTS__COUNT] = {"ConfigMap", "Secret"};

static void data_free(void *p)
{
	struct js_objects_data *d = p;
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		free(d->entries[i].key);
		free(d->entries[i].value);
	}
	free(d->entries);
	free(d->name);
	free(d);
}

static const struct js_hmap_type data_type = {.borrow_keys = false, .free_value = data_free};

struct js_objects *js_objects_new(void)
{
	struct js_objects *o = js_xcalloc(1, sizeof(*o));
	for (size_t k = 0; k < JS_OBJECTS__COUNT; k++)
		o->by_kind[k] = js_hmap_new(&data_type);
	return o;
}

struct js_objects *js_objects_free(struct js_objects *o)
{
	if (!o)
		return NULL;
	for (size_t k = 0; k < JS_OBJECTS__COUNT; k++)
		js_hmap_free(o->by_kind[k]);
	for (size_t i = 0; i < o->n_claims; i++)
		free(o->claims[i]);
	free(o->claims);
	free(o);
	return NULL;
}

const char *js_objects_kind_name(enum js_objects_kind kind)
{
	return kind >= 0 && kind < JS_OBJECTS__COUNT ? kind_names[kind] : "?";
}

bool js_objects_valid_key(const char *key)
{
	size_t n = strlen(key);
	if (n == 0 || n > JS_LIMIT_SUBDOMAIN_LEN || strcmp(key, ".") == 0 || strcmp(key, "..") == 0)
		return false;
	for (const char *p = key; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
		      c == '_' || c == '.'))
			return false;
	}
	return true;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct js_objects_entry *)a)->key, ((const struct js_objects_entry *)b)->key);
}

/** Add the members of `map` (field `field` of the object) to `d`: strings
 * as they are, or base64-decoded when `b64`. `replace` lets a key given
 * again win (Secret stringData over data). */
static int add_map(struct js_objects_data *d, const json_t *map, const char *field, bool b64, bool replace,
		   size_t *total, char **ret_err)
{
	if (!map)
		return 0;
	if (!json_is_object(map)) {
		*ret_err = js_buf_format("%s must be a map of keys to strings", field);
		return JS_EINVALID;
	}
	const char *key;
	json_t *v;
	json_object_foreach(js_json_unconst(map), key, v)
	{
		if (!js_objects_valid_key(key)) {
			*ret_err = js_buf_format("%s['%s']: a key must consist of alphanumeric characters, '-', '_' or "
						 "'.' (at most %d)",
						 field, key, JS_LIMIT_SUBDOMAIN_LEN);
			return JS_EINVALID;
		}
		if (!json_is_string(v)) {
			*ret_err = js_buf_format("%s['%s'] must be a string", field, key);
			return JS_EINVALID;
		}
		char *val = NULL;
		size_t len = json_string_length(v);
		if (b64) {
			if (js_base64_decode(json_string_value(v), len, &val, &len) < 0) {
				*ret_err = js_buf_format("%s['%s'] is not valid base64", field, key);
				return JS_EINVALID;
			}
		} else {
			val = js_xstrndup(json_string_value(v), len);
		}
		*total += len;
		size_t at = d->n;
		for (size_t i = 0; i < d->n; i++) {
			if (strcmp(d->entries[i].key, key) == 0)
				at = i;
		}
		if (at < d->n && !replace) {
			free(val);
			*ret_err = js_buf_format("%s['%s']: the key is given twice (data and binaryData)", field, key);
			return JS_EINVALID;
		}
		if (at < d->n) {
			free(d->entries[at].value);
		} else {
			d->entries = js_xrealloc(d->entries, (d->n + 1) * sizeof(*d->entries));
			d->entries[d->n++].key = js_xstrdup(key);
		}
		d->entries[at].value = val;
		d->entries[at].len = len;
	}
	return 0;
}

/** Parse a ConfigMap or Secret into a new js_objects_data. */
static int parse_data(const json_t *obj, enum js_objects_kind kind, const char *name,
		      struct js_objects_data **ret, char **ret_err)
{
	struct js_objects_data *d = js_xcalloc(1, sizeof(*d));
	d->name = js_xstrdup(name);
	size_t total = 0;
	int r;
	if (kind == JS_OBJECTS_CONFIGMAP) {
		r = add_map(d, json_object_get(obj, "data"), "data", false, false, &total, ret_err);
		if (r == 0)
			r = add_map(d, json_object_get(obj, "binaryData"), "binaryData", true, false, &total, ret_err);
	} else {
		r = add_map(d, json_object_get(obj, "data"), "data", true, false, &total, ret_err);
		if (r == 0)
			r = add_map(d, json_object_get(obj, "stringData"), "stringData", false, true, &total, ret_err);
	}
	if (r == 0 && total > JS_LIMIT_CONFIGMAP_BYTES) {
		*ret_err = js_buf_format("holds %zu bytes of data; at most %u are allowed", total,
					 JS_LIMIT_CONFIGMAP_BYTES);
		r = JS_EINVALID;
	}
	if (r < 0) {
		data_free(d);
		return r;
	}
	if (d->n > 1)
		qsort(d->entries, d->n, sizeof(*d->entries), cmp_entry);
	*ret = d;
	return 0;
}

int js_objects_add(struct js_objects *o, const json_t *obj, char **ret_err)
{
	const char *kind = js_json_str(obj, "kind");
	const char *api = js_json_str(obj, "apiVersion");
	if (!kind || !api || strcmp(api, "v1") != 0)
		return 0;
	enum js_objects_kind k = JS_OBJECTS__INVALID;
	for (size_t i = 0; i < JS_OBJECTS__COUNT; i++) {
		if (strcmp(kind, kind_names[i]) == 0)
			k = (enum js_objects_kind)i;
	}
	bool pvc = strcmp(kind, "PersistentVolumeClaim") == 0;
	if (k == JS_OBJECTS__INVALID && !pvc)
		return 0;
	const char *name = js_json_str(json_object_get(obj, "metadata"), "name");
	if (!name || !name[0] || strlen(name) > JS_LIMIT_SUBDOMAIN_LEN || strchr(name, '/')) {
		*ret_err = js_buf_format("%s/%s: metadata.name is required (a DNS subdomain, at most %d characters)",
					 kind, name ? name : "?", JS_LIMIT_SUBDOMAIN_LEN);
		return JS_EINVALID;
	}
	if (pvc) {
		for (size_t i = 0; i < o->n_claims; i++) {
			if (strcmp(o->claims[i], name) == 0) {
				*ret_err = js_buf_format("%s/%s: a second object of this kind and name", kind, name);
				return JS_EINVALID;
			}
		}
		o->claims = js_xrealloc(o->claims, (o->n_claims + 1) * sizeof(*o->claims));
		o->claims[o->n_claims++] = js_xstrdup(name);
		return 1;
	}
	if (js_hmap_has(o->by_kind[k], name)) {
		*ret_err = js_buf_format("%s/%s: a second object of this kind and name", kind, name);
		return JS_EINVALID;
	}
	struct js_objects_data *d = NULL;
	char *err = NULL;
	if (parse_data(obj, k, name, &d, &err) < 0) {
		*ret_err = js_buf_format("%s/%s: %s", kind, name, err);
		free(err);
		return JS_EINVALID;
	}
	js_hmap_put(o->by_kind[k], name, d, NULL);
	return 1;
}

const struct js_objects_data *js_objects_find(const struct js_objects *o, enum js_objects_kind kind,
					      const char *name)
{
	if (!o || kind < 0 || kind >= JS_OBJECTS__COUNT || !name)
		return NULL;
	return js_hmap_get(o->by_kind[kind], name);
}

const struct js_objects_entry *js_objects_key(const struct js_objects_data *d, const char *key)
{
	if (!d || !key || d->n == 0)
		return NULL;
	struct js_objects_entry probe = {.key = (char *)(uintptr_t)key};
	return bsearch(&probe, d->entries, d->n, sizeof(*d->entries), cmp_entry);
}

size_t js_objects_n_claims(const struct js_objects *o)
{
	return o ? o->n_claims : 0;
}

const char *js_objects_claim(const struct js_objects *o, size_t i)
{
	return o->claims[i];
}

/* ---- container env ---- */

int js_objects_env_value(const struct js_objects *o, const json_t *value_from, char **ret_value, char **ret_err)
{
	enum js_objects_kind kind = JS_OBJECTS_CONFIGMAP;
	const json_t *ref = json_object_get(value_from, "configMapKeyRef");
	if (!ref) {
		ref = json_object_get(value_from, "secretKeyRef");
		kind = JS_OBJECTS_SECRET;
	}
	if (!ref)
		return JS_ENOTFOUND;
	const char *name = js_json_str(ref, "name");
	const char *key = js_json_str(ref, "key");
	bool optional = json_is_true(json_object_get(ref, "optional"));
	const struct js_objects_data *d = js_objects_find(o, kind, name);
	const struct js_objects_entry *e = js_objects_key(d, key);
	if (e) {
		*ret_value = js_xstrndup(e->value, e->len);
		return 0;
	}
	if (optional) {
		*ret_value = NULL;
		return 0;
	}
	*ret_err = !d ? js_buf_format("%s '%s' is not in the manifest (add it as another document, or mark the "
				      "reference optional)",
				      js_objects_kind_name(kind), name ? name : "")
		      : js_buf_format("%s '%s' has no key '%s'", js_objects_kind_name(kind), name, key ? key : "");
	return JS_EINVALID;
}

int js_objects_env_from(const struct js_objects *o, const json_t *env_from, js_objects_env_fn fn, void *ctx,
			char **ret_err)
{
	size_t i;
	json_t *src;
	json_array_foreach(env_from, i, src)
	{
		enum js_objects_kind kind = JS_OBJECTS_CONFIGMAP;
		const json_t *ref = json_object_get(src, "configMapRef");
		if (!ref) {
			ref = json_object_get(src, "secretRef");
			kind = JS_OBJECTS_SECRET;
		}
		if (!ref) {
			*ret_err = js_buf_format("envFrom[%zu] needs a configMapRef or a secretRef", i);
			return JS_EINVALID;
		}
		const char *name = js_json_str(ref, "name");
		const struct js_objects_data *d = js_objects_find(o, kind, name);
		if (!d) {
			if (json_is_true(json_object_get(ref, "optional")))
				continue;
			*ret_err = js_buf_format("envFrom[%zu]: %s '%s' is not in the manifest (add it as another "
						 "document, or mark it optional)",
						 i, js_objects_kind_name(kind), name ? name : "");
			return JS_EINVALID;
		}
		const char *prefix = js_json_str(src, "prefix");
		for (size_t k = 0; fn && k < d->n; k++) {
			char *var = js_buf_format("%s%s", prefix ? prefix : "", d->entries[k].key);
			fn(ctx, var, d->entries[k].value);
			free(var);
		}
	}
	return 0;
}
