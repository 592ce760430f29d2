/*
 * jsonpatch.c - RFC 6902 diff and apply (see jsonpatch.h).
 */
#include "webhook/jsonpatch.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/limits.h"

/* Appends whose buffers have ceilings far above anything bounded input
 * can produce; a truncated message is still a message. */
static void best_effort(int r)
{
	(void)r;
}

/* Longest pointer we build: nesting is bounded by JS_LIMIT_NESTING_DEPTH and
 * every key by the manifest size, so 1 MiB is generous and still bounded. */
#define POINTER_MAX (1u << 20)

static void add_op(json_t *ops, const char *op, const char *path, const json_t *value)
{
	json_t *o = json_object();
	json_object_set_new(o, "op", json_string(op));
	json_object_set_new(o, "path", json_string(path));
	if (value)
		json_object_set_new(o, "value", json_deep_copy(value));
	json_array_append_new(ops, o);
}

/* Append "/<escaped key>" to `p`. Returns the old length so the caller can
 * cut back after the recursive call. */
static size_t push_key(struct js_buf *p, const char *key)
{
	size_t old = p->len;
	int r = js_buf_puts(p, "/");
	for (const char *c = key; r == 0 && *c; c++) {
		if (*c == '~')
			r = js_buf_puts(p, "~0");
		else if (*c == '/')
			r = js_buf_puts(p, "~1");
		else
			r = js_buf_add(p, c, 1);
	}
	(void)r; /* the ceiling is far above any path a bounded input can make */
	return old;
}

static size_t push_index(struct js_buf *p, size_t i)
{
	size_t old = p->len;
	best_effort(js_buf_printf(p, "/%zu", i));
	return old;
}

static void cut(struct js_buf *p, size_t len)
{
	p->len = len;
	if (p->p)
		p->p[len] = '\0';
}

static void diff(json_t *ops, struct js_buf *path, const json_t *a, const json_t *b, int depth)
{
	if (json_equal(a, b))
		return;
	if (depth < JS_LIMIT_NESTING_DEPTH && json_is_object(a) && json_is_object(b)) {
		const char *k;
		json_t *va;
		json_object_foreach(js_json_unconst(a), k, va)
		{
			json_t *vb = json_object_get(b, k);
			size_t old = push_key(path, k);
			if (!vb)
				add_op(ops, "remove", js_buf_str(path), NULL);
			else
				diff(ops, path, va, vb, depth + 1);
			cut(path, old);
		}
		json_t *vb;
		json_object_foreach(js_json_unconst(b), k, vb)
		{
			if (json_object_get(a, k))
				continue;
			size_t old = push_key(path, k);
			add_op(ops, "add", js_buf_str(path), vb);
			cut(path, old);
		}
		return;
	}
	if (depth < JS_LIMIT_NESTING_DEPTH && json_is_array(a) && json_is_array(b) &&
	    json_array_size(a) == json_array_size(b)) {
		for (size_t i = 0; i < json_array_size(a); i++) {
			size_t old = push_index(path, i);
			diff(ops, path, json_array_get(a, i), json_array_get(b, i), depth + 1);
			cut(path, old);
		}
		return;
	}
	add_op(ops, "replace", path->len ? js_buf_str(path) : "", b);
}

json_t *js_jsonpatch_diff(const json_t *from, const json_t *to)
{
	json_t *ops = json_array();
	struct js_buf path;
	js_buf_init(&path, POINTER_MAX);
	diff(ops, &path, from, to, 0);
	js_buf_done(&path);
	return ops;
}

/* ---- apply ---- */

/* Decode one reference token [s, s+n) into `out` (NUL-terminated). */
static int unescape(const char *s, size_t n, struct js_buf *out)
{
	js_buf_clear(out);
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '~') {
			if (i + 1 >= n || (s[i + 1] != '0' && s[i + 1] != '1'))
				return JS_EINVALID;
			c = s[i + 1] == '0' ? '~' : '/';
			i++;
		}
		if (js_buf_add(out, &c, 1) < 0)
			return JS_ETOOLARGE;
	}
	return js_buf_puts(out, "") < 0 ? JS_ETOOLARGE : 0;
}

/* A strict array index: digits only, no leading zero, below `limit`. */
static bool parse_index(const char *s, size_t limit, size_t *ret)
{
	size_t v = 0;
	if (!*s || (s[0] == '0' && s[1]))
		return false;
	for (const char *c = s; *c; c++) {
		if (*c < '0' || *c > '9' || v > limit)
			return false;
		v = v * 10 + (size_t)(*c - '0');
	}
	if (v > limit)
		return false;
	*ret = v;
	return true;
}

static int apply_one(json_t *doc, const json_t *op)
{
	const char *kind = json_string_value(json_object_get(op, "op"));
	const char *path = json_string_value(json_object_get(op, "path"));
	json_t *value = json_object_get(op, "value");
	if (!kind || !path || path[0] != '/')
		return JS_EINVALID;
	bool is_add = strcmp(kind, "add") == 0, is_rm = strcmp(kind, "remove") == 0,
	     is_rep = strcmp(kind, "replace") == 0;
	if (!is_add && !is_rm && !is_rep)
		return JS_EINVALID;
	if (!is_rm && !value)
		return JS_EINVALID;
	struct js_buf tok;
	js_buf_init(&tok, POINTER_MAX);
	json_t *parent = doc;
	int r = 0;
	const char *p = path + 1;
	for (;;) {
		size_t n = strcspn(p, "/");
		r = unescape(p, n, &tok);
		if (r < 0)
			break;
		bool last = p[n] == '\0';
		const char *key = js_buf_str(&tok);
		if (last) {
			if (json_is_object(parent)) {
				bool has = json_object_get(parent, key) != NULL;
				if ((is_rm || is_rep) && !has)
					r = JS_EINVALID;
				else if (is_rm)
					json_object_del(parent, key);
				else
					json_object_set(parent, key, value);
			} else if (json_is_array(parent)) {
				size_t i, sz = json_array_size(parent);
				if (is_add && strcmp(key, "-") == 0)
					json_array_append(parent, value);
				else if (!parse_index(key, is_add ? sz : sz - 1, &i) || (!is_add && sz == 0))
					r = JS_EINVALID;
				else if (is_add)
					json_array_insert(parent, i, value);
				else if (is_rm)
					json_array_remove(parent, i);
				else
					json_array_set(parent, i, value);
			} else {
				r = JS_EINVALID;
			}
			break;
		}
		json_t *next = NULL;
		size_t i;
		if (json_is_object(parent))
			next = json_object_get(parent, key);
		else if (json_is_array(parent) && json_array_size(parent) > 0 &&
			 parse_index(key, json_array_size(parent) - 1, &i))
			next = json_array_get(parent, i);
		if (!next) {
			r = JS_EINVALID;
			break;
		}
		parent = next;
		p += n + 1;
	}
	js_buf_done(&tok);
	return r;
}

int js_jsonpatch_apply(json_t *doc, const json_t *patch)
{
	if (!json_is_array(patch))
		return JS_EINVALID;
	size_t i;
	json_t *op;
	json_array_foreach(patch, i, op)
	{
		int r = apply_one(doc, op);
		if (r < 0)
			return r;
	}
	return 0;
}
