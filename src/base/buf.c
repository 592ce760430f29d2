/*
 * buf.c - growable byte buffer with a ceiling.
 */
#include "base/buf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX (64u * 1024u * 1024u)

void js_buf_init(struct js_buf *b, size_t max)
{
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max ? max : DEFAULT_MAX;
}

void js_buf_done(struct js_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

void js_buf_clear(struct js_buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = '\0';
}

static int reserve(struct js_buf *b, size_t extra)
{
	if (extra > b->max || b->len > b->max - extra)
		return -E2BIG;
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	b->p = js_xrealloc(b->p, cap);
	b->cap = cap;
	return 0;
}

int js_buf_add(struct js_buf *b, const void *data, size_t n)
{
	int r = reserve(b, n);
	if (r < 0)
		return r;
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int js_buf_puts(struct js_buf *b, const char *s)
{
	return js_buf_add(b, s, strlen(s));
}

int js_buf_vprintf(struct js_buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return -EINVAL;
	int r = reserve(b, (size_t)n);
	if (r < 0)
		return r;
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int js_buf_printf(struct js_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = js_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return r;
}

char *js_buf_take(struct js_buf *b)
{
	char *p = b->p ? b->p : js_xstrdup("");
	b->p = NULL;
	b->len = b->cap = 0;
	return p;
}

const char *js_buf_str(const struct js_buf *b)
{
	return b->p ? b->p : "";
}

char *js_buf_format(const char *fmt, ...)
{
	struct js_buf b;
	js_buf_init(&b, 0);
	va_list ap;
	va_start(ap, fmt);
	if (js_buf_vprintf(&b, fmt, ap) < 0)
		js_buf_clear(&b);
	va_end(ap);
	return js_buf_take(&b);
}
