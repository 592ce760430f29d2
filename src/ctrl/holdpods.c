/*
 * holdpods.c - pods of older restart attempts held after they left the pod
 * cache (ctrl/holdpods.h): a map JobSet key -> its held pods, a small array
 * each (a JobSet holds few such pods; the total is bounded).
 */
#include "ctrl/holdpods.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"

#define FIRST_BACKOFF_NS 1000000000ull

struct held {
	char *name, *uid, *job_name, *attempt;
	bool deleting;
	uint64_t due_ns;     /* next check */
	uint64_t backoff_ns; /* wait after the next failed check */
};

struct set {
	char *jobset_uid;
	struct held *v;
	size_t n, cap;
};

struct js_holdpods {
	pthread_mutex_t mu;
	struct js_hmap *sets; /* key -> struct set */
	size_t total;
	size_t max_pods;
	uint64_t max_backoff_ns;
};

static void held_done(struct held *p)
{
	free(p->name);
	free(p->uid);
	free(p->job_name);
	free(p->attempt);
}

static void set_free(void *v)
{
	struct set *s = v;
	for (size_t i = 0; i < s->n; i++)
		held_done(&s->v[i]);
	free(s->v);
	free(s->jobset_uid);
	free(s);
}

static char *dup_or_null(const char *s)
{
	return s ? js_xstrdup(s) : NULL;
}

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

struct js_holdpods *js_holdpods_new(const struct js_holdpods_opts *opts)
{
	static const struct js_hmap_type by_key = {.free_value = set_free};
	struct js_holdpods *h = js_xcalloc(1, sizeof(*h));
	pthread_mutex_init(&h->mu, NULL);
	h->sets = js_hmap_new(&by_key);
	h->max_pods = opts && opts->max_pods ? opts->max_pods : JS_HOLDPODS_MAX_PODS;
	h->max_backoff_ns = opts && opts->max_backoff_ns ? opts->max_backoff_ns : JS_HOLDPODS_MAX_BACKOFF_NS;
	return h;
}

void js_holdpods_free(struct js_holdpods *h)
{
	if (!h)
		return;
	js_hmap_free(h->sets);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

/* Drop the set of `key` (under the lock). */
static void drop_set(struct js_holdpods *h, const char *key)
{
	struct set *s = js_hmap_get(h->sets, key);
	if (!s)
		return;
	h->total -= s->n;
	(void)js_hmap_del(h->sets, key, NULL);
}

static struct held *find(struct set *s, const char *name)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (strcmp(s->v[i].name, name) == 0)
			return &s->v[i];
	return NULL;
}

bool js_holdpods_add(struct js_holdpods *h, const char *key, const char *jobset_uid, const struct js_holdpod *p,
		     uint64_t now)
{
	if (!p->name)
		return false;
	bool ok = true;
	pthread_mutex_lock(&h->mu);
	struct set *s = js_hmap_get(h->sets, key);
	if (s && !same(s->jobset_uid, jobset_uid)) {
		drop_set(h, key); /* of another incarnation */
		s = NULL;
	}
	struct held *was = find(s, p->name);
	if (was) {
		if (p->uid && !same(was->uid, p->uid)) {
			free(was->uid);
			was->uid = js_xstrdup(p->uid);
		}
		was->deleting = was->deleting || p->deleting;
		was->due_ns = now;
		was->backoff_ns = FIRST_BACKOFF_NS;
	} else if (h->total >= h->max_pods) {
		ok = false;
	} else {
		if (!s) {
			s = js_xcalloc(1, sizeof(*s));
			s->jobset_uid = dup_or_null(jobset_uid);
			(void)js_hmap_put(h->sets, key, s, NULL);
		}
		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 4;
			s->v = js_xrealloc(s->v, s->cap * sizeof(*s->v));
		}
		s->v[s->n++] = (struct held){.name = js_xstrdup(p->name), .uid = dup_or_null(p->uid),
					     .job_name = dup_or_null(p->job_name), .attempt = dup_or_null(p->attempt),
					     .deleting = p->deleting, .due_ns = now, .backoff_ns = FIRST_BACKOFF_NS};
		h->total++;
	}
	pthread_mutex_unlock(&h->mu);
	return ok;
}

size_t js_holdpods_list(struct js_holdpods *h, const char *key, const char *jobset_uid, struct js_arena *a,
			struct js_holdpod **ret, uint64_t now, uint64_t *ret_wait_ns)
{
	uint64_t wait = UINT64_MAX;
	size_t n = 0;
	*ret = NULL;
	pthread_mutex_lock(&h->mu);
	struct set *s = js_hmap_get(h->sets, key);
	if (s && !same(s->jobset_uid, jobset_uid)) {
		drop_set(h, key);
		s = NULL;
	}
	if (s && s->n) {
		struct js_holdpod *v = js_arena_calloc(a, s->n, sizeof(*v));
		for (size_t i = 0; i < s->n; i++) {
			const struct held *p = &s->v[i];
			bool due = now >= p->due_ns;
			if (due)
				wait = 0;
			else if (p->due_ns - now < wait)
				wait = p->due_ns - now;
			v[n++] = (struct js_holdpod){.name = js_arena_strdup(a, p->name),
						     .uid = p->uid ? js_arena_strdup(a, p->uid) : NULL,
						     .job_name = p->job_name ? js_arena_strdup(a, p->job_name) : NULL,
						     .attempt = p->attempt ? js_arena_strdup(a, p->attempt) : NULL,
						     .deleting = p->deleting, .due = due};
		}
		*ret = v;
	}
	pthread_mutex_unlock(&h->mu);
	if (ret_wait_ns)
		*ret_wait_ns = wait;
	return n;
}

/* Remove `p`, an element of `s` of `key` (under the lock). */
static void remove_held(struct js_holdpods *h, const char *key, struct set *s, struct held *p)
{
	held_done(p);
	*p = s->v[--s->n];
	h->total--;
	if (!s->n)
		(void)js_hmap_del(h->sets, key, NULL);
}

void js_holdpods_checked(struct js_holdpods *h, const char *key, const char *name, enum js_holdpods_seen seen,
			 uint64_t now)
{
	pthread_mutex_lock(&h->mu);
	struct set *s = js_hmap_get(h->sets, key);
	struct held *p = find(s, name);
	if (p && seen == JS_HOLDPODS_GONE) {
		remove_held(h, key, s, p);
	} else if (p) {
		p->deleting = p->deleting || seen == JS_HOLDPODS_MARKED;
		p->due_ns = now + p->backoff_ns;
		p->backoff_ns = p->backoff_ns >= h->max_backoff_ns / 2 ? h->max_backoff_ns : p->backoff_ns * 2;
	}
	pthread_mutex_unlock(&h->mu);
}

void js_holdpods_drop(struct js_holdpods *h, const char *key, const char *name)
{
	pthread_mutex_lock(&h->mu);
	struct set *s = js_hmap_get(h->sets, key);
	struct held *p = find(s, name);
	if (p)
		remove_held(h, key, s, p);
	pthread_mutex_unlock(&h->mu);
}

void js_holdpods_forget(struct js_holdpods *h, const char *key)
{
	pthread_mutex_lock(&h->mu);
	drop_set(h, key);
	pthread_mutex_unlock(&h->mu);
}

size_t js_holdpods_count(struct js_holdpods *h)
{
	pthread_mutex_lock(&h->mu);
	size_t n = h->total;
	pthread_mutex_unlock(&h->mu);
	return n;
}
