/*
 * diag.c - user-facing diagnostics as data.
 */
#include "base/diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/limits.h"

static const char *const type_names[JS_DIAG__COUNT] = {
	[JS_DIAG_REQUIRED] = "Required value",
	[JS_DIAG_INVALID] = "Invalid value",
	[JS_DIAG_NOT_SUPPORTED] = "Unsupported value",
	[JS_DIAG_DUPLICATE] = "Duplicate value",
	[JS_DIAG_TOO_LONG] = "Too long",
	[JS_DIAG_TOO_MANY] = "Too many",
	[JS_DIAG_FORBIDDEN] = "Forbidden",
	[JS_DIAG_INTERNAL] = "Internal error",
	[JS_DIAG_UNKNOWN_FIELD] = "Unknown field",
	[JS_DIAG_TYPE] = "Invalid type",
	[JS_DIAG_SYNTAX] = "Syntax error",
	[JS_DIAG_LIMIT] = "Limit exceeded",
};

const char *js_diag_type_to_string(enum js_diag_type t)
{
	if (t < 0 || t >= JS_DIAG__COUNT)
		return "Error";
	return type_names[t];
}

void js_diag_init(struct js_diag *d)
{
	d->n = d->cap = 0;
	d->items = NULL;
}

static void entry_done(struct js_diag_entry *e)
{
	free(e->path);
	free(e->value);
	free(e->message);
	free(e->file);
}

void js_diag_done(struct js_diag *d)
{
	for (size_t i = 0; i < d->n; i++)
		entry_done(&d->items[i]);
	free(d->items);
	js_diag_init(d);
}

static struct js_diag_entry *push(struct js_diag *d)
{
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 8;
		d->items = js_xrealloc(d->items, d->cap * sizeof(*d->items));
	}
	struct js_diag_entry *e = &d->items[d->n++];
	memset(e, 0, sizeof(*e));
	return e;
}

struct js_diag_entry *js_diag_add(struct js_diag *d, enum js_diag_type type, const char *path,
				  const char *value, const char *fmt, ...)
{
	char msg[JS_LIMIT_DIAG_MSG];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	struct js_diag_entry *e = push(d);
	e->type = type;
	e->path = js_xstrdup(path ? path : "");
	e->value = value ? js_xstrdup(value) : NULL;
	e->message = js_xstrdup(msg);
	return e;
}

void js_diag_set_pos(struct js_diag_entry *e, const char *file, int line, int col)
{
	free(e->file);
	e->file = file ? js_xstrdup(file) : NULL;
	e->line = line;
	e->col = col;
}

void js_diag_move(struct js_diag *dst, struct js_diag *src)
{
	for (size_t i = 0; i < src->n; i++)
		*push(dst) = src->items[i];
	free(src->items);
	js_diag_init(src);
}

int js_diag_format(const struct js_diag_entry *e, bool nil_path, struct js_buf *out)
{
	int r = 0;
	if (e->file && e->line > 0)
		r = js_buf_printf(out, "%s:%d:%d: ", e->file, e->line, e->col);
	else if (e->file)
		r = js_buf_printf(out, "%s: ", e->file);
	if (r == 0 && e->path[0])
		r = js_buf_printf(out, "%s: ", e->path);
	else if (r == 0 && nil_path)
		r = js_buf_puts(out, "<nil>: ");
	if (r == 0)
		r = js_buf_printf(out, "%s: ", js_diag_type_to_string(e->type));
	if (r == 0 && e->value)
		r = js_buf_printf(out, "%s: ", e->value);
	if (r == 0)
		r = js_buf_puts(out, e->message);
	return r;
}

bool js_diag_has(const struct js_diag *d, const char *path, const char *needle)
{
	for (size_t i = 0; i < d->n; i++) {
		const struct js_diag_entry *e = &d->items[i];
		if (path && strcmp(e->path, path) != 0)
			continue;
		if (!needle || strstr(e->message, needle))
			return true;
	}
	return false;
}
