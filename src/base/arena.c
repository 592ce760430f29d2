/*
 * arena.c - bump allocator (arena.h).
 */
#include "base/arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN _Alignof(max_align_t)
#define MAX_BLOCK ((size_t)1 << 20)

struct block {
	struct block *next;
	size_t cap, used;
	_Alignas(max_align_t) unsigned char data[];
};

struct js_arena {
	struct block *head;  /* current block; older ones follow */
	struct block *first; /* kept by reset */
	size_t next_cap;
	size_t used, capacity;
};

static struct block *block_new(size_t cap)
{
	struct block *b = js_xmalloc(sizeof(*b) + cap);
	b->next = NULL;
	b->cap = cap;
	b->used = 0;
	return b;
}

struct js_arena *js_arena_new(size_t block)
{
	struct js_arena *a = js_xcalloc(1, sizeof(*a));
	size_t cap = block ? block : 4096;
	a->first = a->head = block_new(cap);
	a->capacity = cap;
	a->next_cap = cap * 2 > MAX_BLOCK ? MAX_BLOCK : cap * 2;
	return a;
}

static void free_chain(struct block *b, const struct block *stop)
{
	while (b && b != stop) {
		struct block *n = b->next;
		free(b);
		b = n;
	}
}

struct js_arena *js_arena_free(struct js_arena *a)
{
	if (!a)
		return NULL;
	free_chain(a->head, NULL);
	free(a);
	return NULL;
}

void js_arena_reset(struct js_arena *a)
{
	free_chain(a->head, a->first);
	a->head = a->first;
	a->first->next = NULL;
	a->first->used = 0;
	a->used = 0;
	a->capacity = a->first->cap;
}

void *js_arena_alloc(struct js_arena *a, size_t n)
{
	size_t need = (n + ALIGN - 1) & ~(ALIGN - 1);
	if (need < n)
		abort(); /* overflow: a bug, as js_xmalloc would see it */
	if (need == 0)
		need = ALIGN;
	struct block *b = a->head;
	if (b->cap - b->used < need) {
		size_t cap = need > a->next_cap ? need : a->next_cap;
		b = block_new(cap);
		a->capacity += cap;
		if (a->next_cap < MAX_BLOCK)
			a->next_cap *= 2;
		/* The first block stays last in the chain so reset keeps it. */
		b->next = a->head;
		a->head = b;
	}
	void *p = b->data + b->used;
	b->used += need;
	a->used += need;
	return p;
}

void *js_arena_calloc(struct js_arena *a, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		abort();
	void *p = js_arena_alloc(a, n * size);
	memset(p, 0, n * size);
	return p;
}

char *js_arena_strndup(struct js_arena *a, const char *s, size_t n)
{
	char *p = js_arena_alloc(a, n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *js_arena_strdup(struct js_arena *a, const char *s)
{
	return s ? js_arena_strndup(a, s, strlen(s)) : NULL;
}

char *js_arena_vprintf(struct js_arena *a, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	if (n < 0)
		abort();
	char *p = js_arena_alloc(a, (size_t)n + 1);
	(void)vsnprintf(p, (size_t)n + 1, fmt, ap2);
	va_end(ap2);
	return p;
}

char *js_arena_printf(struct js_arena *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *p = js_arena_vprintf(a, fmt, ap);
	va_end(ap);
	return p;
}

size_t js_arena_used(const struct js_arena *a)
{
	return a->used;
}

size_t js_arena_capacity(const struct js_arena *a)
{
	return a->capacity;
}
