/*
 * common.c - error names and the allocation choke point.
 */
#include "base/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *js_strerror(int err)
{
	switch (err) {
	case 0: return "success";
	case JS_EINVALID: return "invalid input";
	case JS_ETOOLARGE: return "input exceeds a limit";
	case JS_ENOTFOUND: return "not found";
	case JS_ECONFLICT: return "conflict";
	case JS_EGONE: return "resource version too old";
	case JS_EEXISTS: return "already exists";
	case JS_EUNSUPPORTED: return "not supported";
	default: break;
	}
	if (err < 0 && err > -4096)
		return strerror(-err);
	return "unknown error";
}

static void oom(size_t n)
{
	/* The one place below main that prints: there is nobody to return to. */
	fprintf(stderr, "jobset: out of memory allocating %zu bytes\n", n);
	abort();
}

void *js_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *js_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom(n * size);
	return p;
}

void *js_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom(n);
	return q;
}

char *js_xstrdup(const char *s)
{
	return js_xstrndup(s, strlen(s));
}

char *js_xstrndup(const char *s, size_t n)
{
	char *p = js_xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}
