/*
 * workqueue.c - dedupe, delays and rate limiting for keys (workqueue.h).
 *
 * Sets and per-key counters are base/hmap tables (string keys, O(1));
 * counters and due times are stored in the value pointer itself. The ready
 * queue is a FIFO array; delayed keys sit in a binary min-heap by due time,
 * with `waiting` recording each key's current due time so a superseded heap
 * entry is recognised and dropped when it surfaces.
 */
#include "kube/workqueue.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/hmap.h"
#include "base/time.h"
#include "kube/kube_int.h"
#include "kube/ratelimit.h"

struct delayed {
	uint64_t due;
	char *key;
};

struct js_workqueue {
	struct js_workqueue_opts o;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	char **fifo;
	size_t head, tail, cap;
	struct js_hmap *dirty, *processing; /* sets: key -> NULL */
	struct js_hmap *failures;           /* key -> failure count */
	struct js_hmap *waiting;            /* key -> due time, ns */
	struct delayed *heap;
	size_t nheap, capheap;
	struct js_ratelimit bucket;
	bool shutting_down;
};

/* Counters and due times travel in the value pointer. */
_Static_assert(sizeof(uintptr_t) >= sizeof(uint64_t), "64-bit pointers");

static void *u64_ptr(uint64_t v)
{
	return (void *)(uintptr_t)v;
}

static uint64_t ptr_u64(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static uint64_t now(const struct js_workqueue *q)
{
	return q->o.now_ns ? q->o.now_ns(q->o.clock_user) : js_clock_now_ns();
}

int js_workqueue_new(const struct js_workqueue_opts *opts, struct js_workqueue **ret)
{
	struct js_workqueue *q = js_xcalloc(1, sizeof *q);
	if (opts)
		q->o = *opts;
	if (!q->o.base_delay_ns)
		q->o.base_delay_ns = 5000000u;
	if (!q->o.max_delay_ns)
		q->o.max_delay_ns = 1000ull * 1000000000ull;
	if (q->o.qps == 0)
		q->o.qps = 10;
	if (q->o.burst == 0)
		q->o.burst = 100;
	pthread_mutex_init(&q->lock, NULL);
	js_clock_cond_init(&q->cond);
	q->dirty = js_hmap_new(NULL);
	q->processing = js_hmap_new(NULL);
	q->failures = js_hmap_new(NULL);
	q->waiting = js_hmap_new(NULL);
	js_ratelimit_init(&q->bucket, q->o.qps, q->o.burst, now(q));
	*ret = q;
	return 0;
}

struct js_workqueue *js_workqueue_free(struct js_workqueue *q)
{
	if (!q)
		return NULL;
	for (size_t i = q->head; i < q->tail; i++)
		free(q->fifo[i]);
	free(q->fifo);
	for (size_t i = 0; i < q->nheap; i++)
		free(q->heap[i].key);
	free(q->heap);
	js_hmap_free(q->dirty);
	js_hmap_free(q->processing);
	js_hmap_free(q->failures);
	js_hmap_free(q->waiting);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
	free(q);
	return NULL;
}

static void fifo_push(struct js_workqueue *q, const char *key)
{
	if (q->tail == q->cap) {
		if (q->head > q->cap / 2) {
			memmove(q->fifo, q->fifo + q->head, (q->tail - q->head) * sizeof *q->fifo);
			q->tail -= q->head;
			q->head = 0;
		} else {
			q->cap = q->cap ? q->cap * 2 : 16;
			q->fifo = js_xrealloc(q->fifo, q->cap * sizeof *q->fifo);
		}
	}
	q->fifo[q->tail++] = js_xstrdup(key);
}

/* Under the lock. */
static void add_locked(struct js_workqueue *q, const char *key)
{
	if (q->shutting_down || js_hmap_has(q->dirty, key))
		return;
	js_hmap_put(q->dirty, key, NULL, NULL);
	if (js_hmap_has(q->processing, key))
		return;
	fifo_push(q, key);
	pthread_cond_signal(&q->cond);
}

static void heap_push(struct js_workqueue *q, uint64_t due, const char *key)
{
	if (q->nheap == q->capheap) {
		q->capheap = q->capheap ? q->capheap * 2 : 16;
		q->heap = js_xrealloc(q->heap, q->capheap * sizeof *q->heap);
	}
	size_t i = q->nheap++;
	q->heap[i] = (struct delayed){due, js_xstrdup(key)};
	while (i && q->heap[(i - 1) / 2].due > q->heap[i].due) {
		struct delayed t = q->heap[i];
		q->heap[i] = q->heap[(i - 1) / 2];
		q->heap[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static struct delayed heap_pop(struct js_workqueue *q)
{
	struct delayed top = q->heap[0];
	q->heap[0] = q->heap[--q->nheap];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < q->nheap && q->heap[l].due < q->heap[m].due)
			m = l;
		if (r < q->nheap && q->heap[r].due < q->heap[m].due)
			m = r;
		if (m == i)
			break;
		struct delayed t = q->heap[i];
		q->heap[i] = q->heap[m];
		q->heap[m] = t;
		i = m;
	}
	return top;
}

/* Move every delayed key that is due to the ready queue. */
static void promote(struct js_workqueue *q, uint64_t t)
{
	while (q->nheap && q->heap[0].due <= t) {
		struct delayed d = heap_pop(q);
		if (js_hmap_has(q->waiting, d.key) && ptr_u64(js_hmap_get(q->waiting, d.key)) == d.due) {
			js_hmap_del(q->waiting, d.key, NULL);
			add_locked(q, d.key);
		}
		free(d.key);
	}
}

void js_workqueue_add(struct js_workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	add_locked(q, key);
	pthread_mutex_unlock(&q->lock);
}

static void add_after_locked(struct js_workqueue *q, const char *key, uint64_t delay_ns)
{
	if (q->shutting_down)
		return;
	if (!delay_ns) {
		add_locked(q, key);
		return;
	}
	/* Queued to run now (and not running): that run sees the latest state. */
	if (js_hmap_has(q->dirty, key) && !js_hmap_has(q->processing, key))
		return;
	uint64_t due = js_sat_add_u64(now(q), delay_ns); /* any delay: never wraps into the past */
	if (js_hmap_has(q->waiting, key) && ptr_u64(js_hmap_get(q->waiting, key)) <= due)
		return;
	js_hmap_put(q->waiting, key, u64_ptr(due), NULL);
	heap_push(q, due, key);
	/* A waiter may be sleeping until a later due time. */
	pthread_cond_broadcast(&q->cond);
}

void js_workqueue_add_after(struct js_workqueue *q, const char *key, uint64_t delay_ns)
{
	pthread_mutex_lock(&q->lock);
	add_after_locked(q, key, delay_ns);
	pthread_mutex_unlock(&q->lock);
}

uint64_t js_workqueue_add_rate_limited(struct js_workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	uint64_t n = ptr_u64(js_hmap_get(q->failures, key));
	js_hmap_put(q->failures, key, u64_ptr(n + 1), NULL);
	/* base * 2^n, saturating well before overflow */
	uint64_t exp = q->o.max_delay_ns;
	if (n < 63) {
		uint64_t mult = 1ull << n;
		if (q->o.base_delay_ns <= q->o.max_delay_ns / mult)
			exp = q->o.base_delay_ns * mult;
	}
	uint64_t bucket = q->o.qps > 0 ? js_ratelimit_reserve(&q->bucket, now(q)) : 0;
	uint64_t d = exp > bucket ? exp : bucket;
	add_after_locked(q, key, d);
	pthread_mutex_unlock(&q->lock);
	return d;
}

void js_workqueue_forget(struct js_workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	js_hmap_del(q->failures, key, NULL);
	pthread_mutex_unlock(&q->lock);
}

unsigned js_workqueue_num_requeues(struct js_workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	unsigned n = (unsigned)ptr_u64(js_hmap_get(q->failures, key));
	pthread_mutex_unlock(&q->lock);
	return n;
}

int js_workqueue_get(struct js_workqueue *q, int timeout_ms, char **ret_key)
{
	uint64_t start = js_clock_now_ns();
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : js_sat_add_u64(start, js_sat_scale_u64(timeout_ms, 1000000u));
	pthread_mutex_lock(&q->lock);
	for (;;) {
		promote(q, now(q));
		if (q->head < q->tail)
			break;
		if (q->shutting_down) {
			pthread_mutex_unlock(&q->lock);
			return -ESHUTDOWN;
		}
		uint64_t t = js_clock_now_ns();
		if (t >= deadline) {
			pthread_mutex_unlock(&q->lock);
			return -ETIMEDOUT;
		}
		/* Sleep until the deadline or the next delayed key, whichever is
		 * first (with a real clock; a fake one is only polled). */
		uint64_t until = deadline;
		if (q->nheap && !q->o.now_ns) {
			uint64_t n = now(q);
			uint64_t due = q->heap[0].due > n ? q->heap[0].due - n : 0;
			if (js_sat_add_u64(t, due) < until)
				until = js_sat_add_u64(t, due);
		}
		if (until == UINT64_MAX) {
			pthread_cond_wait(&q->cond, &q->lock);
		} else {
			struct timespec ts = js_clock_ts(until);
			pthread_cond_timedwait(&q->cond, &q->lock, &ts);
		}
	}
	char *key = q->fifo[q->head++];
	js_hmap_put(q->processing, key, NULL, NULL);
	js_hmap_del(q->dirty, key, NULL);
	pthread_mutex_unlock(&q->lock);
	*ret_key = key;
	return 0;
}

void js_workqueue_done(struct js_workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	js_hmap_del(q->processing, key, NULL);
	if (js_hmap_has(q->dirty, key)) {
		fifo_push(q, key);
		pthread_cond_signal(&q->cond);
	}
	if (js_hmap_len(q->processing) == 0)
		pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

void js_workqueue_shutdown(struct js_workqueue *q)
{
	pthread_mutex_lock(&q->lock);
	q->shutting_down = true;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

int js_workqueue_shutdown_drain(struct js_workqueue *q, int timeout_ms)
{
	js_workqueue_shutdown(q);
	struct timespec ts = js_clock_deadline_ts(timeout_ms);
	pthread_mutex_lock(&q->lock);
	while (js_hmap_len(q->processing) > 0)
		if (pthread_cond_timedwait(&q->cond, &q->lock, &ts) == ETIMEDOUT)
			break;
	int r = js_hmap_len(q->processing) ? -ETIMEDOUT : 0;
	pthread_mutex_unlock(&q->lock);
	return r;
}

size_t js_workqueue_len(struct js_workqueue *q)
{
	pthread_mutex_lock(&q->lock);
	promote(q, now(q));
	size_t n = q->tail - q->head;
	pthread_mutex_unlock(&q->lock);
	return n;
}

size_t js_workqueue_delayed(struct js_workqueue *q)
{
	pthread_mutex_lock(&q->lock);
	size_t n = js_hmap_len(q->waiting);
	pthread_mutex_unlock(&q->lock);
	return n;
}
