/*
 * hmap.c - open-addressing string map (hmap.h).
 *
 * Slots keep the key's full hash so that a probe compares strings only on a
 * hash match, and so that growing never rehashes a string. Deletion shifts
 * the following run back into place (Knuth's algorithm R), which keeps every
 * probe sequence unbroken without tombstones.
 */
#include "base/hmap.h"

#include <stdlib.h>
#include <string.h>

struct slot {
	const char *key; /* NULL: empty */
	char *copy;      /* == key when the map owns it */
	uint64_t hash;
	void *value;
};

struct js_hmap {
	const struct js_hmap_type *t;
	struct slot *slots;
	size_t cap; /* power of two, or 0 */
	size_t len;
};

static const struct js_hmap_type default_type = {0};

uint64_t js_hash_fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 1099511628211ull;
	}
	return h;
}

uint64_t js_hash_bytes(const void *p, size_t n)
{
	uint64_t h = js_hash_fnv(JS_HASH_FNV_SEED, p, n);
	/* Mix the high bits down: the table indexes by the low bits. */
	h ^= h >> 32;
	return h;
}

struct js_hmap *js_hmap_new(const struct js_hmap_type *t)
{
	struct js_hmap *m = js_xcalloc(1, sizeof(*m));
	m->t = t ? t : &default_type;
	return m;
}

static void drop(struct js_hmap *m, struct slot *s)
{
	free(s->copy);
	s->copy = NULL;
	if (m->t->free_value && s->value)
		m->t->free_value(s->value);
	s->key = NULL;
	s->value = NULL;
}

void js_hmap_clear(struct js_hmap *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].key)
			drop(m, &m->slots[i]);
	m->len = 0;
}

struct js_hmap *js_hmap_free(struct js_hmap *m)
{
	if (!m)
		return NULL;
	js_hmap_clear(m);
	free(m->slots);
	free(m);
	return NULL;
}

size_t js_hmap_len(const struct js_hmap *m)
{
	return m ? m->len : 0;
}

/* Index of the slot holding `key`, or of the empty slot where it would go. */
static size_t probe(const struct js_hmap *m, const char *key, size_t n, uint64_t h)
{
	size_t mask = m->cap - 1, i = (size_t)h & mask;
	for (;;) {
		const struct slot *s = &m->slots[i];
		if (!s->key)
			return i;
		if (s->hash == h && strncmp(s->key, key, n) == 0 && s->key[n] == '\0')
			return i;
		i = (i + 1) & mask;
	}
}

static struct slot *find(const struct js_hmap *m, const char *key, size_t n)
{
	if (!m || m->len == 0 || !key)
		return NULL;
	struct slot *s = &m->slots[probe(m, key, n, js_hash_bytes(key, n))];
	return s->key ? s : NULL;
}

void *js_hmap_get_n(const struct js_hmap *m, const char *key, size_t n)
{
	struct slot *s = find(m, key, n);
	return s ? s->value : NULL;
}

void *js_hmap_get(const struct js_hmap *m, const char *key)
{
	return key ? js_hmap_get_n(m, key, strlen(key)) : NULL;
}

bool js_hmap_has(const struct js_hmap *m, const char *key)
{
	return key && find(m, key, strlen(key)) != NULL;
}

static void grow(struct js_hmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 8;
	struct slot *old = m->slots;
	size_t ocap = m->cap;
	m->slots = js_xcalloc(ncap, sizeof(*m->slots));
	m->cap = ncap;
	for (size_t i = 0; i < ocap; i++) {
		if (!old[i].key)
			continue;
		size_t mask = ncap - 1, j = (size_t)old[i].hash & mask;
		while (m->slots[j].key)
			j = (j + 1) & mask;
		m->slots[j] = old[i];
	}
	free(old);
}

bool js_hmap_put(struct js_hmap *m, const char *key, void *value, void **ret_old)
{
	size_t n = strlen(key);
	uint64_t h = js_hash_bytes(key, n);
	if (ret_old)
		*ret_old = NULL;
	if ((m->len + 1) * 4 > m->cap * 3)
		grow(m);
	struct slot *s = &m->slots[probe(m, key, n, h)];
	if (s->key) {
		if (ret_old)
			*ret_old = s->value;
		else if (m->t->free_value && s->value && s->value != value)
			m->t->free_value(s->value);
		if (m->t->borrow_keys)
			s->key = key;
		s->value = value;
		return false;
	}
	s->copy = m->t->borrow_keys ? NULL : js_xstrndup(key, n);
	s->key = s->copy ? s->copy : key;
	s->hash = h;
	s->value = value;
	m->len++;
	return true;
}

bool js_hmap_del(struct js_hmap *m, const char *key, void **ret_old)
{
	if (ret_old)
		*ret_old = NULL;
	struct slot *s = key ? find(m, key, strlen(key)) : NULL;
	if (!s)
		return false;
	if (ret_old) {
		*ret_old = s->value;
		s->value = NULL;
	}
	drop(m, s);
	m->len--;
	/* Backward shift: pull each later member of the run into the hole if
	 * its home slot does not lie cyclically between the hole and itself. */
	size_t mask = m->cap - 1, hole = (size_t)(s - m->slots), i = hole;
	for (;;) {
		i = (i + 1) & mask;
		struct slot *t = &m->slots[i];
		if (!t->key)
			break;
		size_t home = (size_t)t->hash & mask;
		bool stays = hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
		if (stays)
			continue;
		m->slots[hole] = *t;
		t->key = NULL;
		t->copy = NULL;
		t->value = NULL;
		hole = i;
	}
	return true;
}

bool js_hmap_next(const struct js_hmap *m, struct js_hmap_iter *it, const char **ret_key, void **ret_value)
{
	if (!m)
		return false;
	while (it->i < m->cap) {
		const struct slot *s = &m->slots[it->i++];
		if (!s->key)
			continue;
		if (ret_key)
			*ret_key = s->key;
		if (ret_value)
			*ret_value = s->value;
		return true;
	}
	return false;
}
