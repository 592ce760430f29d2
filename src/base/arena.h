/*
 * arena.h - a bump allocator freed in one call (STYLE §12, memory by
 * lifetime; h2o's h2o_mem_pool_t).
 *
 * Scratch memory whose lifetime is one unit of work - one reconcile, one
 * decoded object - comes from an arena: allocations are a pointer bump in
 * the current block, nothing is freed one by one, and js_arena_free (or
 * js_arena_reset, to reuse the first block) releases everything at once.
 * That keeps per-reconcile garbage out of malloc's per-thread arenas, whose
 * high-water marks were half of the controller's peak RSS (BENCHMARKS.md).
 *
 * Blocks grow geometrically from `block` bytes up to 1 MiB; an allocation
 * larger than a block gets a block of its own. Every allocation is aligned
 * for any type (max_align_t). Aborts on OOM like js_xmalloc.
 * Not thread-safe: one owner.
 */
#ifndef JS_ARENA_H
#define JS_ARENA_H

#include <stdarg.h>
#include <stddef.h>

#include "base/common.h"

struct js_arena;

/** A new arena whose first block holds `block` bytes (0 = 4 KiB). Caller frees
 * with js_arena_free. */
struct js_arena *js_arena_new(size_t block);

/** Free the arena and everything allocated from it. NULL is a no-op.
 * Returns NULL. */
struct js_arena *js_arena_free(struct js_arena *a);

/** Release every allocation but keep the first block for reuse. */
void js_arena_reset(struct js_arena *a);

/** `n` bytes (uninitialised), valid until reset/free. n = 0 gives a unique
 * non-NULL pointer. */
void *js_arena_alloc(struct js_arena *a, size_t n);

/** `n` zeroed elements of `size` bytes. Aborts when n * size overflows. */
void *js_arena_calloc(struct js_arena *a, size_t n, size_t size);

/** A copy of `s` (NULL gives NULL). */
char *js_arena_strdup(struct js_arena *a, const char *s);

/** A NUL-terminated copy of the first `n` bytes of `s`. */
char *js_arena_strndup(struct js_arena *a, const char *s, size_t n);

/** printf into arena memory. */
char *js_arena_printf(struct js_arena *a, const char *fmt, ...) JS_PRINTF(2, 3);

/** As js_arena_printf with a va_list (which it consumes, like vprintf). */
char *js_arena_vprintf(struct js_arena *a, const char *fmt, va_list ap) JS_PRINTF(2, 0);

/** Bytes handed out since the last reset (for tests and metrics). */
size_t js_arena_used(const struct js_arena *a);

/** Bytes held in blocks, first block included. */
size_t js_arena_capacity(const struct js_arena *a);

#endif
