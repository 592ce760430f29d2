/*
 * expect.c - expectations of this process's writes per JobSet key
 * (ctrl/expect.h).
 *
 * A key holds its writes in an array in the order they were recorded and
 * the index of the first one the cache has not been seen to show: creates
 * are answered, and watched, about in order, so a check walks forward from
 * there and stops at the first write still missing.
 */
#include "ctrl/expect.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/hmap.h"

struct write {
	enum js_expect_want want;
	char *name, *uid, *rv; /* as struct js_expect_write, owned copies */
};

struct keyexp {
	char *owner;        /* the JobSet uid the writes were made for; NULL: unknown */
	uint64_t deadline;  /* monotonic ns: given up after this */
	uint64_t since;     /* monotonic ns of the first write still held */
	struct write *w;
	size_t n, cap, done; /* w[done..n) are still missing */
};

struct js_expect {
	pthread_mutex_t mu;
	struct js_hmap *keys; /* key -> struct keyexp */
	uint64_t timeout_ns;
	size_t max_names;
	size_t names;         /* w[done..n) summed over keys */
	uint64_t next_sweep;  /* monotonic ns */
};

static void write_done(struct write *w)
{
	free(w->name);
	free(w->uid);
	free(w->rv);
}

static char *dup_or_null(const char *s)
{
	return s ? js_xstrdup(s) : NULL;
}

static void keyexp_free(void *p)
{
	struct keyexp *k = p;
	for (size_t i = k->done; i < k->n; i++)
		write_done(&k->w[i]);
	free(k->w);
	free(k->owner);
	free(k);
}

static const struct js_hmap_type keys_type = {.free_value = keyexp_free};

struct js_expect *js_expect_new(const struct js_expect_opts *opts)
{
	struct js_expect *e = js_xcalloc(1, sizeof *e);
	pthread_mutex_init(&e->mu, NULL);
	e->keys = js_hmap_new(&keys_type);
	e->timeout_ns = opts && opts->timeout_ns ? opts->timeout_ns : JS_EXPECT_TIMEOUT_NS;
	e->max_names = opts && opts->max_names ? opts->max_names : JS_EXPECT_MAX_NAMES;
	return e;
}

void js_expect_free(struct js_expect *e)
{
	if (!e)
		return;
	js_hmap_free(e->keys);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

/* Drop `key` (held under the lock). */
static void drop(struct js_expect *e, const char *key, struct keyexp *k)
{
	e->names -= k->n - k->done;
	js_hmap_del(e->keys, key, NULL);
}

static bool same_owner(const struct keyexp *k, const char *owner_uid)
{
	if (!k->owner || !owner_uid)
		return k->owner == owner_uid;
	return strcmp(k->owner, owner_uid) == 0;
}

/* Keys whose JobSet was never reconciled again after their deadline (a
 * delete whose reconcile was lost): dropped a timeout after it, so that a
 * key still checked normally meets its own expiry, and its log line. */
static void sweep(struct js_expect *e, uint64_t now_ns)
{
	if (now_ns < e->next_sweep)
		return;
	e->next_sweep = now_ns + e->timeout_ns;
	for (;;) {
		struct js_hmap_iter it = {0};
		const char *key;
		void *v;
		bool dropped = false;
		while (js_hmap_next(e->keys, &it, &key, &v)) {
			struct keyexp *k = v;
			if (now_ns >= k->deadline && now_ns - k->deadline >= e->timeout_ns) {
				char *copy = js_xstrdup(key); /* the map's own copy goes with the entry */
				drop(e, copy, k); /* invalidates the iteration: start again */
				free(copy);
				dropped = true;
				break;
			}
		}
		if (!dropped)
			return;
	}
}

int js_expect_add(struct js_expect *e, const char *key, const char *owner_uid, const struct js_expect_write *w,
		  size_t n, uint64_t now_ns)
{
	if (n == 0)
		return 0;
	int r = 0;
	pthread_mutex_lock(&e->mu);
	sweep(e, now_ns);
	struct keyexp *k = js_hmap_get(e->keys, key);
	if (k && !same_owner(k, owner_uid)) {
		drop(e, key, k);
		k = NULL;
	}
	if (n > e->max_names - e->names) {
		r = JS_ETOOLARGE;
		goto out;
	}
	if (!k) {
		k = js_xcalloc(1, sizeof *k);
		k->owner = owner_uid ? js_xstrdup(owner_uid) : NULL;
		k->since = now_ns;
		js_hmap_put(e->keys, key, k, NULL);
	}
	if (k->done > 0) { /* reuse the slots of writes already seen */
		memmove(k->w, k->w + k->done, (k->n - k->done) * sizeof *k->w);
		k->n -= k->done;
		k->done = 0;
	}
	if (k->n + n > k->cap) {
		k->cap = k->n + n > 2 * k->cap ? k->n + n : 2 * k->cap;
		k->w = js_xrealloc(k->w, k->cap * sizeof *k->w);
	}
	for (size_t i = 0; i < n; i++)
		k->w[k->n++] = (struct write){.want = w[i].want,
					      .name = js_xstrdup(w[i].name),
					      .uid = dup_or_null(w[i].uid),
					      .rv = dup_or_null(w[i].rv)};
	e->names += n;
	k->deadline = now_ns + e->timeout_ns;
out:
	pthread_mutex_unlock(&e->mu);
	return r;
}

const char *js_expect_want_name(enum js_expect_want want)
{
	switch (want) {
	case JS_EXPECT_EXISTS:
		return "create";
	case JS_EXPECT_GONE:
		return "delete";
	case JS_EXPECT_SUSPENDED:
		return "suspend";
	case JS_EXPECT_RESUMED:
		return "resume";
	case JS_EXPECT_STATUS:
		return "status write";
	case JS_EXPECT__COUNT:
		break;
	}
	return "write";
}

/* The log line of an expired key: how many, how long, the first few. */
static char *expired_line(const struct keyexp *k, uint64_t now_ns)
{
	struct js_buf b;
	js_buf_init(&b, 4096);
	size_t missing = k->n - k->done;
	(void)!js_buf_printf(&b, "the caches still do not show %zu of this process's writes after %.1f s (", missing,
			     (double)(now_ns - k->since) / 1e9);
	size_t show = missing < 5 ? missing : 5;
	for (size_t i = 0; i < show; i++) {
		const struct write *w = &k->w[k->done + i];
		if (w->want == JS_EXPECT_STATUS)
			(void)!js_buf_printf(&b, "%sstatus write at resourceVersion %s", i ? ", " : "",
					     w->rv ? w->rv : "?");
		else
			(void)!js_buf_printf(&b, "%s%s of Job %s", i ? ", " : "", js_expect_want_name(w->want),
					     w->name);
	}
	(void)!js_buf_printf(&b, "%s); reconciling on the cache as it is", missing > show ? ", ..." : "");
	char *s = js_xstrdup(js_buf_str(&b));
	js_buf_done(&b);
	return s;
}

size_t js_expect_check(struct js_expect *e, const char *key, const char *owner_uid, js_expect_seen_fn *seen,
		       void *user, uint64_t now_ns, struct js_expect_result *res)
{
	memset(res, 0, sizeof *res);
	pthread_mutex_lock(&e->mu);
	struct keyexp *k = js_hmap_get(e->keys, key);
	if (k && !same_owner(k, owner_uid)) {
		drop(e, key, k); /* a new incarnation: the old one's writes say nothing about it */
		k = NULL;
	}
	while (k && k->done < k->n) {
		struct write *w = &k->w[k->done];
		struct js_expect_write view = {w->want, w->name, w->uid, w->rv};
		if (!seen(user, &view))
			break;
		write_done(w);
		k->done++;
		e->names--;
	}
	if (k && k->done == k->n) {
		drop(e, key, k);
	} else if (k && now_ns >= k->deadline) {
		res->expired = expired_line(k, now_ns);
		drop(e, key, k);
	} else if (k) {
		res->pending = k->n - k->done;
		res->left_ns = k->deadline - now_ns;
	}
	pthread_mutex_unlock(&e->mu);
	return res->pending;
}

void js_expect_forget(struct js_expect *e, const char *key)
{
	pthread_mutex_lock(&e->mu);
	struct keyexp *k = js_hmap_get(e->keys, key);
	if (k)
		drop(e, key, k);
	pthread_mutex_unlock(&e->mu);
}

size_t js_expect_names(struct js_expect *e)
{
	pthread_mutex_lock(&e->mu);
	size_t n = e->names;
	pthread_mutex_unlock(&e->mu);
	return n;
}
