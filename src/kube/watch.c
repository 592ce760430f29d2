/*
 * watch.c - watch stream framing and event decoding (watch.h).
 */
#include "kube/watch.h"

#include <string.h>

#include "base/json.h"
#include "kube/apierr.h"
#include "kube/kube_int.h"

static const char *const type_names[JS_WATCH__COUNT] = {
	[JS_WATCH_ADDED] = "ADDED",     [JS_WATCH_MODIFIED] = "MODIFIED", [JS_WATCH_DELETED] = "DELETED",
	[JS_WATCH_BOOKMARK] = "BOOKMARK", [JS_WATCH_ERROR] = "ERROR",
};

const char *js_watch_type_to_string(enum js_watch_type t)
{
	return t >= 0 && t < JS_WATCH__COUNT ? type_names[t] : NULL;
}

enum js_watch_type js_watch_type_from_string(const char *s)
{
	for (int i = 0; s && i < JS_WATCH__COUNT; i++)
		if (strcmp(type_names[i], s) == 0)
			return (enum js_watch_type)i;
	return JS_WATCH__INVALID;
}

void js_watch_framer_init(struct js_watch_framer *f, size_t max_line)
{
	js_buf_init(&f->carry, max_line ? max_line : JS__KUBE_MAX_EVENT);
}

void js_watch_framer_done(struct js_watch_framer *f)
{
	js_buf_done(&f->carry);
}

size_t js_watch_framer_pending(const struct js_watch_framer *f)
{
	return f->carry.len;
}

static int emit(const char *line, size_t len, js_watch_line_fn *fn, void *user)
{
	if (len && line[len - 1] == '\r')
		len--;
	/* Blank lines carry nothing (some proxies send keep-alive newlines). */
	size_t i = 0;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (i == len)
		return 0;
	return fn(user, line, len);
}

int js_watch_framer_feed(struct js_watch_framer *f, const char *p, size_t n, js_watch_line_fn *fn, void *user)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		if (!nl) {
			if (js_buf_add(&f->carry, p, n) < 0)
				return JS_ETOOLARGE;
			return 0;
		}
		size_t take = (size_t)(nl - p);
		int r;
		if (f->carry.len) {
			/* Complete the carried line; it is consumed whatever fn says. */
			if (js_buf_add(&f->carry, p, take) < 0)
				return JS_ETOOLARGE;
			r = emit(f->carry.p, f->carry.len, fn, user);
			js_buf_clear(&f->carry);
		} else {
			if (take > f->carry.max)
				return JS_ETOOLARGE;
			r = emit(p, take, fn, user);
		}
		p = nl + 1;
		n -= take + 1;
		if (r < 0)
			return r;
	}
	return 0;
}

int js_watch_decode(const char *line, size_t len, struct js_watch_event *ret)
{
	json_t *ev = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
	if (!ev || !json_is_object(ev)) {
		json_decref(ev);
		return JS_EINVALID;
	}
	enum js_watch_type t = js_watch_type_from_string(js_json_str(ev, "type"));
	json_t *obj = json_object_get(ev, "object");
	if (t == JS_WATCH__INVALID || !json_is_object(obj)) {
		json_decref(ev);
		return JS_EINVALID;
	}
	ret->type = t;
	ret->object = json_incref(obj);
	ret->err = 0;
	if (t == JS_WATCH_ERROR) {
		json_t *code = json_object_get(obj, "code");
		ret->err = js_apierr_code(js_json_str(obj, "reason"), json_is_integer(code) ? (long)json_integer_value(code) : 0);
	}
	json_decref(ev);
	return 0;
}
