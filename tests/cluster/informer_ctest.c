/*
 * informer_ctest.c - list+watch informer against the real API server:
 * label-scoped sync, managedFields stripped, namespace and owner-uid
 * indexes, add/update/delete handlers (including leaving the selector),
 * resuming after server-side watch timeouts without relisting, stall
 * detection reconnecting a silent watch, and metadata-only caches
 * (PartialObjectMetadata: no data, labels and deletions as usual).
 */
#include <errno.h>
#include <pthread.h>

#include "cluster/kt.h"
#include "kube/informer.h"

static struct js_client *C;
static const char *NS;
static char NSUID[64];

struct counts {
	pthread_mutex_t lock;
	int adds, updates, deletes, unknown_deletes;
};

static void on_add(void *u, const void *rec, const json_t *o)
{
	struct counts *c = u;
	(void)rec;
	(void)o;
	pthread_mutex_lock(&c->lock);
	c->adds++;
	pthread_mutex_unlock(&c->lock);
}

static void on_update(void *u, const void *old, const void *rec, const json_t *o)
{
	struct counts *c = u;
	(void)old;
	(void)rec;
	(void)o;
	pthread_mutex_lock(&c->lock);
	c->updates++;
	pthread_mutex_unlock(&c->lock);
}

static void on_delete(void *u, const void *rec, const json_t *o, bool unknown)
{
	struct counts *c = u;
	(void)rec;
	(void)o;
	pthread_mutex_lock(&c->lock);
	c->deletes++;
	c->unknown_deletes += unknown;
	pthread_mutex_unlock(&c->lock);
}

/* The store is updated before handlers run (as in client-go), so a test
 * that saw the store change waits for the handler separately. */
static bool wait_count(struct counts *c, const int *field, int want, int timeout_ms)
{
	uint64_t end = kt_now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		pthread_mutex_lock(&c->lock);
		int v = *field;
		pthread_mutex_unlock(&c->lock);
		if (v >= want)
			return true;
		if (kt_now_ms() >= end)
			return false;
		struct timespec ts = {0, 5 * 1000000L};
		nanosleep(&ts, NULL);
	}
}

static int setup(void **state)
{
	(void)state;
	C = kt_client(NULL);
	NS = kt_namespace(C, "kube-inf");
	json_t *ns = NULL;
	if (js_client_get(C, &js_client_res_namespaces, NULL, NS, NULL, &ns, NULL) < 0)
		KT_DIE("namespace vanished");
	snprintf(NSUID, sizeof NSUID, "%s", js_json_str(json_object_get(ns, "metadata"), "uid"));
	json_decref(ns);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	kt_delete_namespace(C, NS);
	C = js_client_free(C);
	return 0;
}

static void put(const char *name, const char *app, const char *value)
{
	json_t *cm = kt_configmap(NS, name, app, value);
	struct js_apierr e = {0};
	KT_OK(js_client_create(C, &js_client_res_configmaps, NULL, cm, NULL, NULL, &e), &e);
	json_decref(cm);
	js_apierr_done(&e);
}

/* Wait until the cached `name` has data.v == value (NULL: until absent). */
static bool wait_value(struct js_informer *inf, const char *name, const char *value, int timeout_ms)
{
	uint64_t end = kt_now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		uint64_t gen = js_informer_generation(inf);
		json_t *o = js_informer_get_json(inf, NS, name);
		const char *v = js_json_str(json_object_get(o, "data"), "v");
		bool ok = value ? (v && strcmp(v, value) == 0) : !o;
		json_decref(o);
		if (ok)
			return true;
		uint64_t now = kt_now_ms();
		if (now >= end)
			return false;
		if (js_informer_wait_change(inf, gen, (int)(end - now)) < 0 && kt_now_ms() >= end)
			return false;
	}
}

static void test_sync_scope_indexes_events(void **state)
{
	(void)state;
	put("w1", "w", "1");
	put("w2", "w", "1");
	put("other", "x", "1");
	json_t *owned = kt_configmap(NS, "w3", "w", "1");
	json_object_set_new(json_object_get(owned, "metadata"), "ownerReferences",
			    json_pack("[{s:s,s:s,s:s,s:s}]", "apiVersion", "v1", "kind", "Namespace", "name", NS, "uid",
				      NSUID));
	struct js_apierr e = {0};
	KT_OK(js_client_create(C, &js_client_res_configmaps, NULL, owned, NULL, NULL, &e), &e);
	json_decref(owned);

	struct counts cnt = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct js_informer_opts o = {.res = &js_client_res_configmaps, .namespace = NS, .label_selector = "app=w",
				     .handlers = {on_add, on_update, on_delete, &cnt}};
	struct js_informer *inf = NULL;
	assert_int_equal(js_informer_new(C, &o, &inf), 0);
	assert_int_equal(js_informer_add_index(inf, JS_INFORMER_INDEX_NAMESPACE, js_store_index_namespace), 0);
	assert_int_equal(js_informer_add_index(inf, JS_INFORMER_INDEX_OWNER_UID, js_store_index_owner_uids), 0);
	assert_int_equal(js_informer_start(inf), 0);
	assert_int_equal(js_informer_wait_synced(inf, 20000), 0);
	assert_int_equal(js_informer_len(inf), 3);
	assert_true(wait_count(&cnt, &cnt.adds, 3, 5000));
	json_t *w1 = js_informer_get_json(inf, NS, "w1");
	assert_non_null(w1);
	assert_null(json_object_get(json_object_get(w1, "metadata"), "managedFields"));
	json_decref(w1);
	assert_null(js_informer_get(inf, NS, "other"));
	assert_false(js_informer_has(inf, NS, "other"));
	const void **byns = NULL;
	assert_int_equal(js_informer_by_index(inf, JS_INFORMER_INDEX_NAMESPACE, NS, &byns), 3);
	js_informer_release(inf, byns, 3);
	const void **byown = NULL;
	assert_int_equal(js_informer_by_index(inf, JS_INFORMER_INDEX_OWNER_UID, NSUID, &byown), 1);
	assert_string_equal(js_json_str(json_object_get(byown[0], "metadata"), "name"), "w3");
	js_informer_release(inf, byown, 1);

	/* update */
	json_t *p = json_pack("{s:{s:s}}", "data", "v", "2");
	KT_OK(js_client_patch(C, &js_client_res_configmaps, NS, "w1", JS_PATCH_MERGE, p, NULL, NULL, &e), &e);
	json_decref(p);
	assert_true(wait_value(inf, "w1", "2", 10000));
	assert_true(wait_count(&cnt, &cnt.updates, 1, 5000));
	/* create */
	put("w4", "w", "4");
	assert_true(wait_value(inf, "w4", "4", 10000));
	/* delete */
	KT_OK(js_client_delete(C, &js_client_res_configmaps, NS, "w2", NULL, NULL, &e), &e);
	assert_true(wait_value(inf, "w2", NULL, 10000));
	/* leaving the label selector is a delete for this informer */
	p = json_pack("{s:{s:{s:s}}}", "metadata", "labels", "app", "gone");
	KT_OK(js_client_patch(C, &js_client_res_configmaps, NS, "w3", JS_PATCH_MERGE, p, NULL, NULL, &e), &e);
	json_decref(p);
	assert_true(wait_value(inf, "w3", NULL, 10000));
	const void **byown2 = NULL;
	assert_int_equal(js_informer_by_index(inf, JS_INFORMER_INDEX_OWNER_UID, NSUID, &byown2), 0);
	assert_true(wait_count(&cnt, &cnt.deletes, 2, 5000));
	pthread_mutex_lock(&cnt.lock);
	assert_int_equal(cnt.deletes, 2);
	assert_int_equal(cnt.unknown_deletes, 0);
	pthread_mutex_unlock(&cnt.lock);
	struct js_informer_stats st;
	js_informer_stats(inf, &st);
	assert_int_equal(st.lists, 1);
	assert_int_equal(st.relists_gone, 0);
	assert_int_equal(js_informer_free(inf), -EBUSY); /* still running */
	assert_int_equal(js_informer_stop(inf), 0);
	assert_int_equal(js_informer_free(inf), 0);
	js_apierr_done(&e);
}

/* Poll a stats counter until it reaches `want` (a condition with a deadline). */
static bool wait_stat(struct js_informer *inf, size_t off, uint64_t want, int timeout_ms)
{
	uint64_t end = kt_now_ms() + (uint64_t)timeout_ms;
	while (kt_now_ms() < end) {
		struct js_informer_stats st;
		js_informer_stats(inf, &st);
		if (*(const uint64_t *)((const char *)&st + off) >= want)
			return true;
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
	return false;
}

static void test_watch_timeout_resumes_without_relist(void **state)
{
	(void)state;
	struct js_informer_opts o = {.res = &js_client_res_configmaps, .namespace = NS, .label_selector = "app=t",
				     .watch_timeout_s = 1};
	struct js_informer *inf = NULL;
	assert_int_equal(js_informer_new(C, &o, &inf), 0);
	assert_int_equal(js_informer_start(inf), 0);
	assert_int_equal(js_informer_wait_synced(inf, 20000), 0);
	/* Three server-side timeouts in a row... */
	assert_true(wait_stat(inf, offsetof(struct js_informer_stats, watches), 4, 15000));
	put("t1", "t", "after-timeouts");
	assert_true(wait_value(inf, "t1", "after-timeouts", 10000));
	struct js_informer_stats st;
	js_informer_stats(inf, &st);
	/* ...are resumed from the last resourceVersion: one LIST only. */
	assert_int_equal(st.lists, 1);
	assert_int_equal(st.watch_errors, 0);
	assert_int_equal(js_informer_stop(inf), 0);
	assert_int_equal(js_informer_free(inf), 0);
}

static void test_stall_detection_reconnects(void **state)
{
	(void)state;
	struct js_informer_opts o = {.res = &js_client_res_configmaps, .namespace = NS, .label_selector = "app=s",
				     .stall_s = 1, .backoff_initial_ms = 50};
	struct js_informer *inf = NULL;
	assert_int_equal(js_informer_new(C, &o, &inf), 0);
	assert_int_equal(js_informer_start(inf), 0);
	assert_int_equal(js_informer_wait_synced(inf, 20000), 0);
	uint64_t t0 = kt_now_ms();
	/* A silent stream (no events, no bookmark yet) is declared dead. */
	assert_true(wait_stat(inf, offsetof(struct js_informer_stats, stalls), 1, 10000));
	print_message("stall detected %llu ms after sync (stall_s=1)\n", (unsigned long long)(kt_now_ms() - t0));
	put("s1", "s", "after-stall");
	assert_true(wait_value(inf, "s1", "after-stall", 10000));
	struct js_informer_stats st;
	js_informer_stats(inf, &st);
	assert_int_equal(st.lists, 1);
	assert_true(st.watches >= 2);
	assert_int_equal(js_informer_stop(inf), 0);
	assert_int_equal(js_informer_free(inf), 0);
}

/* metadata_only: the LIST and the WATCH answer PartialObjectMetadata, so
 * the cache holds no data (a ConfigMap's data would be its spec), while
 * names, labels, changes and deletes arrive as in a full cache. */
static void test_metadata_only(void **state)
{
	(void)state;
	put("m1", "m", "1");
	struct counts cnt = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct js_informer_opts o = {.res = &js_client_res_configmaps, .namespace = NS, .label_selector = "app=m",
				     .page_size = 1, .metadata_only = true,
				     .handlers = {on_add, on_update, on_delete, &cnt}};
	struct js_informer *inf = NULL;
	assert_int_equal(js_informer_new(C, &o, &inf), 0);
	assert_int_equal(js_informer_start(inf), 0);
	assert_int_equal(js_informer_wait_synced(inf, 20000), 0);
	json_t *m1 = js_informer_get_json(inf, NS, "m1");
	assert_non_null(m1);
	assert_string_equal(js_json_str(m1, "kind"), "PartialObjectMetadata");
	assert_null(json_object_get(m1, "data"));
	assert_string_equal(js_json_str(json_object_get(json_object_get(m1, "metadata"), "labels"), "app"), "m");
	json_decref(m1);
	/* From the watch: a new object, a label change, a delete. */
	put("m2", "m", "2");
	assert_true(wait_count(&cnt, &cnt.adds, 2, 10000));
	json_t *m2 = js_informer_get_json(inf, NS, "m2");
	assert_non_null(m2);
	assert_string_equal(js_json_str(m2, "kind"), "PartialObjectMetadata");
	assert_null(json_object_get(m2, "data"));
	json_decref(m2);
	struct js_apierr e = {0};
	json_t *p = json_pack("{s:{s:{s:s}}}", "metadata", "labels", "extra", "x");
	KT_OK(js_client_patch(C, &js_client_res_configmaps, NS, "m2", JS_PATCH_MERGE, p, NULL, NULL, &e), &e);
	json_decref(p);
	assert_true(wait_count(&cnt, &cnt.updates, 1, 10000));
	KT_OK(js_client_delete(C, &js_client_res_configmaps, NS, "m1", NULL, NULL, &e), &e);
	assert_true(wait_count(&cnt, &cnt.deletes, 1, 10000));
	assert_false(js_informer_has(inf, NS, "m1"));
	/* A metadata-only LIST through the client, paginated. */
	struct js_list_opts lo = {.label_selector = "app=m", .limit = 1, .accept = JS_CLIENT_ACCEPT_METADATA_LIST};
	json_t *l = NULL;
	KT_OK(js_client_list(C, &js_client_res_configmaps, NS, &lo, &l, &e), &e);
	assert_string_equal(js_json_str(l, "kind"), "PartialObjectMetadataList");
	assert_int_equal(json_array_size(json_object_get(l, "items")), 1);
	assert_null(json_object_get(json_array_get(json_object_get(l, "items"), 0), "data"));
	json_decref(l);
	js_apierr_done(&e);
	assert_int_equal(js_informer_stop(inf), 0);
	assert_int_equal(js_informer_free(inf), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sync_scope_indexes_events),
		cmocka_unit_test(test_watch_timeout_resumes_without_relist),
		cmocka_unit_test(test_stall_detection_reconnects),
		cmocka_unit_test(test_metadata_only),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
