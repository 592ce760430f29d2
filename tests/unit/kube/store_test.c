/*
 * store_test.c - the typed, indexed store behind the informers
 * (kube/store.h).
 *
 * Scripts of writes (upsert, delete, relist) run on a store whose records
 * are counted: after every step the test checks the change the store
 * reported, its length and the size of index sets; at the end of each
 * script every record has been released exactly once. Objects are written
 * as compact one-line specs ("ns/name rv data owner...") so a script reads
 * as a table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "kube/store.h"

/* ---- a counted record type ---- */

struct rec {
	atomic_int refs;
	char *name, *data;
};

static int live;        /* records alive */
static int transforms;  /* transform calls */

static const void *rec_transform(const json_t *obj, int *ret_err)
{
	const char *data = js_json_str(json_object_get(obj, "spec"), "data");
	if (data && strcmp(data, "reject") == 0) {
		*ret_err = JS_EINVALID;
		return NULL;
	}
	struct rec *r = calloc(1, sizeof *r);
	atomic_init(&r->refs, 1);
	r->name = strdup(js_json_str(json_object_get(obj, "metadata"), "name"));
	r->data = strdup(data ? data : "");
	live++;
	transforms++;
	return r;
}

static const void *rec_ref(const void *p)
{
	struct rec *r = (struct rec *)(uintptr_t)p;
	atomic_fetch_add(&r->refs, 1);
	return r;
}

static void rec_unref(const void *p)
{
	struct rec *r = (struct rec *)(uintptr_t)p;
	if (atomic_fetch_sub(&r->refs, 1) == 1) {
		free(r->name);
		free(r->data);
		free(r);
		live--;
	}
}

static bool rec_same(const void *a, const void *b)
{
	return strcmp(((const struct rec *)a)->data, ((const struct rec *)b)->data) == 0;
}

static const struct js_store_type rec_type = {
	.transform = rec_transform,
	.ref = rec_ref,
	.unref = rec_unref,
	.same = rec_same,
};

/* "ns/name rv data owner1,owner2" ("-" for an absent field) -> Job-like JSON */
static json_t *obj(const char *spec)
{
	char key[128], rv[32], data[32], owners[128];
	assert_int_equal(sscanf(spec, "%127s %31s %31s %127s", key, rv, data, owners), 4);
	json_t *md = json_object();
	char *slash = strchr(key, '/');
	if (slash) {
		*slash = '\0';
		json_object_set_new(md, "namespace", json_string(key));
		json_object_set_new(md, "name", json_string(slash + 1));
	} else if (strcmp(key, "-") != 0) {
		json_object_set_new(md, "name", json_string(key));
	}
	if (strcmp(rv, "-") != 0)
		json_object_set_new(md, "resourceVersion", json_string(rv));
	if (strcmp(owners, "-") != 0) {
		json_t *refs = json_array();
		for (char *o = owners; o;) {
			char *comma = strchr(o, ',');
			if (comma)
				*comma = '\0';
			json_array_append_new(refs, json_pack("{s:s}", "uid", o));
			o = comma ? comma + 1 : NULL;
		}
		json_object_set_new(md, "ownerReferences", refs);
	}
	json_object_set_new(md, "managedFields", json_pack("[{s:s}]", "manager", "kubectl"));
	json_t *o = json_pack("{s:o}", "metadata", md);
	if (strcmp(data, "-") != 0)
		json_object_set_new(o, "spec", json_pack("{s:s}", "data", data));
	return o;
}

/* ---- scripts ---- */

struct check {
	const char *index, *value;
	size_t n; /* records the index returns for value */
};

struct step {
	char kind;            /* 'u' upsert, 'd' delete, 'b' relist begin, 'e' relist end */
	const char *arg;      /* object spec ('u') or key ('d') */
	int err;              /* expected return of upsert */
	enum js_store_op op;  /* expected change ('u', 'd') */
	size_t n_deleted;     /* expected by 'e' */
	size_t len;           /* store length afterwards */
	struct check checks[3];
};

struct script {
	const char *name;
	struct step steps[10];
};

#define NS "namespace"
#define OW "owner"

static const struct script scripts[] = {
	{"add, same rv, same, update, delete",
	 {{'u', "a/x 1 d1 u1", 0, JS_STORE_ADDED, 0, 1, {{OW, "u1", 1}, {NS, "a", 1}}},
	  {'u', "a/x 1 d1 u1", 0, JS_STORE_NONE, 0, 1, {{OW, "u1", 1}}},
	  {'u', "a/x 2 d1 u1", 0, JS_STORE_SAME, 0, 1, {{OW, "u1", 1}}},
	  {'u', "a/x 3 d2 u2", 0, JS_STORE_UPDATED, 0, 1, {{OW, "u1", 0}, {OW, "u2", 1}}},
	  {'d', "a/x", 0, JS_STORE_DELETED, 0, 0, {{OW, "u2", 0}, {NS, "a", 0}}},
	  {'d', "a/x", 0, JS_STORE_NONE, 0, 0, {{0}}},
	  {0}}},
	{"relist drops what the list no longer has",
	 {{'u', "a/x 1 d u1", 0, JS_STORE_ADDED, 0, 1, {{0}}},
	  {'u', "a/y 1 d u1", 0, JS_STORE_ADDED, 0, 2, {{OW, "u1", 2}}},
	  {'u', "b/z 1 d u2", 0, JS_STORE_ADDED, 0, 3, {{NS, "a", 2}, {NS, "b", 1}}},
	  {'b', NULL, 0, 0, 0, 3, {{0}}},
	  {'u', "a/x 1 d u1", 0, JS_STORE_NONE, 0, 3, {{0}}},
	  {'u', "b/z 2 e u2", 0, JS_STORE_UPDATED, 0, 3, {{0}}},
	  {'e', NULL, 0, 0, 1, 2, {{OW, "u1", 1}, {NS, "a", 1}, {NS, "b", 1}}},
	  {'b', NULL, 0, 0, 0, 2, {{0}}},
	  {'e', NULL, 0, 0, 2, 0, {{OW, "u1", 0}, {NS, "b", 0}}},
	  {0}}},
	{"owners move between index values",
	 {{'u', "a/x 1 d u1,u2", 0, JS_STORE_ADDED, 0, 1, {{OW, "u1", 1}, {OW, "u2", 1}}},
	  {'u', "a/y 1 d u2", 0, JS_STORE_ADDED, 0, 2, {{OW, "u2", 2}}},
	  {'u', "a/x 2 d u3", 0, JS_STORE_SAME, 0, 2, {{OW, "u1", 0}, {OW, "u2", 1}, {OW, "u3", 1}}},
	  {'u', "a/y 2 d u1,u1", 0, JS_STORE_SAME, 0, 2, {{OW, "u1", 1}, {OW, "u2", 0}}},
	  {'d', "a/y", 0, JS_STORE_DELETED, 0, 1, {{OW, "u1", 0}, {OW, "u3", 1}}},
	  {0}}},
	{"cluster-scoped keys, no name, refused records",
	 {{'u', "n1 1 d -", 0, JS_STORE_ADDED, 0, 1, {{NS, "", 1}}},
	  {'u', "- 1 d -", JS_EINVALID, JS_STORE_NONE, 0, 1, {{0}}},
	  {'u', "n2 1 reject -", JS_EINVALID, JS_STORE_NONE, 0, 1, {{0}}},
	  {'u', "n1 2 reject -", JS_EINVALID, JS_STORE_DELETED, 0, 0, {{NS, "", 0}}},
	  {'u', "n1 3 d -", 0, JS_STORE_ADDED, 0, 1, {{0}}},
	  {'d', "n1", 0, JS_STORE_DELETED, 0, 0, {{0}}},
	  {0}}},
	{"no resourceVersion: always transformed",
	 {{'u', "a/x - d -", 0, JS_STORE_ADDED, 0, 1, {{0}}},
	  {'u', "a/x - d -", 0, JS_STORE_SAME, 0, 1, {{0}}},
	  {0}}},
};

static void run_step(struct js_store *st, const struct script *sc, size_t i)
{
	const struct step *s = &sc->steps[i];
	struct js_store_change ch = {0};
	size_t deleted = 0;
	switch (s->kind) {
	case 'u': {
		json_t *o = obj(s->arg);
		int r = js_store_upsert(st, o, &ch);
		json_decref(o); /* the store keeps records only */
		if (r != s->err)
			fail_msg("%s, step %zu (upsert '%s'): returned %d, want %d", sc->name, i, s->arg, r, s->err);
		break;
	}
	case 'd':
		js_store_delete(st, s->arg, &ch);
		break;
	case 'b':
		js_store_relist_begin(st);
		break;
	case 'e':
		deleted = js_store_relist_end(st, NULL, NULL);
		if (deleted != s->n_deleted)
			fail_msg("%s, step %zu: relist deleted %zu, want %zu", sc->name, i, deleted, s->n_deleted);
		break;
	default:
		fail_msg("bad step kind");
	}
	if ((s->kind == 'u' || s->kind == 'd') && ch.op != s->op)
		fail_msg("%s, step %zu ('%s'): op %d, want %d", sc->name, i, s->arg, ch.op, s->op);
	/* A change's records: `old` is ours to release, `rec` is the stored one. */
	if (ch.op == JS_STORE_UPDATED || ch.op == JS_STORE_SAME || ch.op == JS_STORE_DELETED)
		assert_non_null(ch.old);
	js_store_change_done(st, &ch);
	if (js_store_len(st) != s->len)
		fail_msg("%s, step %zu: len %zu, want %zu", sc->name, i, js_store_len(st), s->len);
	for (size_t c = 0; c < JS_ARRAY_SIZE(s->checks) && s->checks[c].index; c++) {
		const struct check *k = &s->checks[c];
		const void **recs = NULL;
		size_t n = js_store_by_index(st, k->index, k->value, &recs);
		if (n != k->n)
			fail_msg("%s, step %zu: index %s['%s'] has %zu, want %zu", sc->name, i, k->index, k->value, n,
				 k->n);
		js_store_release(st, recs, n);
	}
	/* Records alive: one per stored object (no reader holds any). */
	if ((size_t)live != js_store_len(st))
		fail_msg("%s, step %zu: %d records alive for %zu objects", sc->name, i, live, js_store_len(st));
}

static void test_scripts(void **state)
{
	(void)state;
	for (size_t c = 0; c < JS_ARRAY_SIZE(scripts); c++) {
		struct js_store *st = js_store_new(&rec_type);
		assert_int_equal(js_store_add_index(st, NS, js_store_index_namespace), 0);
		assert_int_equal(js_store_add_index(st, OW, js_store_index_owner_uids), 0);
		for (size_t i = 0; i < JS_ARRAY_SIZE(scripts[c].steps) && scripts[c].steps[i].kind; i++)
			run_step(st, &scripts[c], i);
		js_store_free(st);
		if (live != 0)
			fail_msg("%s: %d records leaked", scripts[c].name, live);
	}
}

/* A reader's reference outlives the object's deletion and replacement. */
static void test_reader_refs(void **state)
{
	(void)state;
	struct js_store *st = js_store_new(&rec_type);
	json_t *o = obj("a/x 1 d1 u1");
	struct js_store_change ch;
	assert_int_equal(js_store_upsert(st, o, &ch), 0);
	js_store_change_done(st, &ch);
	json_decref(o);
	const struct rec *r = js_store_get(st, "a/x");
	assert_non_null(r);
	assert_string_equal(r->data, "d1");
	assert_null(js_store_get(st, "a/y"));
	assert_true(js_store_has(st, "a/x"));
	char rv[16];
	assert_int_equal(js_store_resource_version(st, "a/x", rv, sizeof rv), 0);
	assert_string_equal(rv, "1");
	assert_int_equal(js_store_resource_version(st, "a/y", rv, sizeof rv), JS_ENOTFOUND);
	assert_int_equal(js_store_resource_version(st, "a/x", rv, 1), JS_ETOOLARGE);

	o = obj("a/x 2 d2 u1");
	assert_int_equal(js_store_upsert(st, o, &ch), 0);
	json_decref(o);
	assert_int_equal(ch.op, JS_STORE_UPDATED);
	assert_ptr_equal(ch.old, r);
	js_store_change_done(st, &ch);
	js_store_delete(st, "a/x", &ch);
	js_store_change_done(st, &ch);
	assert_int_equal(live, 1); /* ours */
	assert_string_equal(r->data, "d1");
	js_store_unref(st, r);
	assert_int_equal(live, 0);

	/* Indexes are fixed once objects are stored. */
	o = obj("a/x 3 d u1");
	assert_int_equal(js_store_upsert(st, o, &ch), 0);
	js_store_change_done(st, &ch);
	json_decref(o);
	assert_int_equal(js_store_add_index(st, "late", js_store_index_namespace), -EBUSY);
	const void **all = NULL;
	assert_int_equal(js_store_list(st, &all), 1);
	js_store_release(st, all, 1);
	assert_int_equal(js_store_by_index(st, "unknown", "x", &all), 0);
	assert_null(all);
	js_store_free(st);
	assert_int_equal(live, 0);
}

/* Without a type the record is the JSON, trimmed of managedFields. */
static void test_json_records(void **state)
{
	(void)state;
	struct js_store *st = js_store_new(NULL);
	assert_int_equal(js_store_add_index(st, NS, js_store_index_namespace), 0);
	assert_int_equal(js_store_add_index(st, NS, js_store_index_namespace), JS_EEXISTS);
	json_t *o = obj("a/x 1 d u1");
	struct js_store_change ch;
	assert_int_equal(js_store_upsert(st, o, &ch), 0);
	assert_ptr_equal(ch.rec, o);
	js_store_change_done(st, &ch);
	json_decref(o);
	json_t *got = (json_t *)(uintptr_t)js_store_get(st, "a/x");
	assert_ptr_equal(got, o);
	assert_null(json_object_get(json_object_get(got, "metadata"), "managedFields"));
	assert_int_equal(got->refcount, 2);
	json_decref(got);
	/* The same resourceVersion again is not even looked at. */
	json_t *again = obj("a/x 1 other u1");
	assert_int_equal(js_store_upsert(st, again, &ch), 0);
	assert_int_equal(ch.op, JS_STORE_NONE);
	json_decref(again);
	js_store_free(st);
}

/* Keys: namespaced, cluster-scoped, and too long for the buffer. */
static void test_keys(void **state)
{
	(void)state;
	char buf[8];
	assert_int_equal(js_store_key("a", "b", buf, sizeof buf), 0);
	assert_string_equal(buf, "a/b");
	assert_int_equal(js_store_key(NULL, "b", buf, sizeof buf), 0);
	assert_string_equal(buf, "b");
	assert_int_equal(js_store_key("", "b", buf, sizeof buf), 0);
	assert_string_equal(buf, "b");
	assert_int_equal(js_store_key("abcd", "efgh", buf, sizeof buf), JS_ETOOLARGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scripts),
		cmocka_unit_test(test_reader_refs),
		cmocka_unit_test(test_json_records),
		cmocka_unit_test(test_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
