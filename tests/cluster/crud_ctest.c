/*
 * crud_ctest.c - REST verbs and typed errors against the real API server:
 * GET/LIST/CREATE/UPDATE/PATCH (merge, JSON, apply)/DELETE, status
 * subresource, NotFound/AlreadyExists/Conflict/Invalid/TooManyRequests,
 * HTTP/2 multiplexing.
 */
#include <pthread.h>

#include "cluster/kt.h"

static struct js_client *C;
static const char *NS;

static int setup(void **state)
{
	(void)state;
	C = kt_client(NULL);
	NS = kt_namespace(C, "kube-crud");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	kt_delete_namespace(C, NS);
	C = js_client_free(C);
	return 0;
}

static void test_not_found(void **state)
{
	(void)state;
	struct js_apierr e = {0};
	json_t *o = NULL;
	int r = js_client_get(C, &js_client_res_configmaps, NS, "absent", NULL, &o, &e);
	assert_int_equal(r, JS_ENOTFOUND);
	assert_int_equal(e.http_code, 404);
	assert_string_equal(e.reason, "NotFound");
	assert_null(o);
	js_apierr_done(&e);
}

static void test_create_get_exists(void **state)
{
	(void)state;
	struct js_apierr e = {0};
	json_t *cm = kt_configmap(NS, "cm1", "a", "1"), *got = NULL, *created = NULL;
	KT_OK(js_client_create(C, &js_client_res_configmaps, NULL, cm, NULL, &created, &e), &e);
	assert_non_null(js_json_str(json_object_get(created, "metadata"), "uid"));
	int r = js_client_create(C, &js_client_res_configmaps, NULL, cm, NULL, NULL, &e);
	assert_int_equal(r, JS_EEXISTS);
	assert_int_equal(e.http_code, 409);
	assert_string_equal(e.reason, "AlreadyExists");
	KT_OK(js_client_get(C, &js_client_res_configmaps, NS, "cm1", NULL, &got, &e), &e);
	assert_string_equal(js_json_str(json_object_get(got, "data"), "v"), "1");
	json_decref(cm);
	json_decref(got);
	json_decref(created);
	js_apierr_done(&e);
}

static void test_update_conflict(void **state)
{
	(void)state;
	struct js_apierr e = {0};
	json_t *cm = kt_configmap(NS, "cm-upd", NULL, "1"), *v1 = NULL, *v2 = NULL;
	KT_OK(js_client_create(C, &js_client_res_configmaps, NULL, cm, NULL, &v1, &e), &e);
	json_t *stale = json_deep_copy(v1);
	json_object_set_new(json_object_get(v1, "data"), "v", json_string("2"));
	KT_OK(js_client_update(C, &js_client_res_configmaps, NULL, v1, NULL, &v2, &e), &e);
	assert_string_equal(js_json_str(json_object_get(v2, "data"), "v"), "2");
	/* The copy still carries the first resourceVersion. */
	json_object_set_new(json_object_get(stale, "data"), "v", json_string("3"));
	int r = js_client_update(C, &js_client_res_configmaps, NULL, stale, NULL, NULL, &e);
	assert_int_equal(r, JS_ECONFLICT);
	assert_int_equal(e.http_code, 409);
	assert_string_equal(e.reason, "Conflict");
	json_decref(cm);
	json_decref(v1);
	json_decref(v2);
	json_decref(stale);
	js_apierr_done(&e);
}

static void test_invalid_causes(void **state)
{
	(void)state;
	struct js_apierr e = {0};
	json_t *cm = kt_configmap(NS, "Bad_Name", NULL, "1");
	int r = js_client_create(C, &js_client_res_configmaps, NULL, cm, NULL, NULL, &e);
	assert_int_equal(r, JS_EINVALID);
	assert_int_equal(e.http_code, 422);
	assert_string_equal(e.reason, "Invalid");
	assert_true(e.ncauses >= 1);
	assert_string_equal(e.causes[0].field, "metadata.name");
	assert_string_equal(e.causes[0].type, "FieldValueInvalid");
	json_decref(cm);
	js_apierr_done(&e);
}

static void test_patches(void **state)
{
	(void)state;
	struct js_apierr e = {0};
	json_t *cm = kt_configmap(NS, "cm-patch", NULL, "1"), *out = NULL;
	KT_OK(js_client_create(C, &js_client_res_configmaps, NULL, cm, NULL, NULL, &e), &e);

	json_t *mp = json_pack("{s:{s:s}}", "data", "m", "merge");
	KT_OK(js_client_patch(C, &js_client_res_configmaps, NS, "cm-patch", JS_PATCH_MERGE, mp, NULL, &out, &e), &e);
	assert_string_equal(js_json_str(json_object_get(out, "data"), "m"), "merge");
	json_decref(out);

	json_t *jp = json_pack("[{s:s,s:s,s:s}]", "op", "add", "path", "/data/j", "value", "json");
	KT_OK(js_client_patch(C, &js_client_res_configmaps, NS, "cm-patch", JS_PATCH_JSON, jp, NULL, &out, &e), &e);
	assert_string_equal(js_json_str(json_object_get(out, "data"), "j"), "json");
	json_decref(out);

	json_t *sp = json_pack("{s:{s:s}}", "data", "s", "strategic");
	KT_OK(js_client_patch(C, &js_client_res_configmaps, NS, "cm-patch", JS_PATCH_STRATEGIC, sp, NULL, &out, &e),
	      &e);
	assert_string_equal(js_json_str(json_object_get(out, "data"), "s"), "strategic");
	json_decref(out);

	/* Server-side apply: manager A owns data.a; B applying a different
	 * value conflicts until it forces. */
	json_t *apA = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
				"name", "cm-patch", "namespace", NS, "data", "a", "A");
	struct js_write_opts wa = {.field_manager = "mgr-a"};
	KT_OK(js_client_patch(C, &js_client_res_configmaps, NS, "cm-patch", JS_PATCH_APPLY, apA, &wa, &out, &e), &e);
	assert_string_equal(js_json_str(json_object_get(out, "data"), "a"), "A");
	json_decref(out);
	json_t *apB = json_deep_copy(apA);
	json_object_set_new(json_object_get(apB, "data"), "a", json_string("B"));
	struct js_write_opts wb = {.field_manager = "mgr-b"};
	int r = js_client_patch(C, &js_client_res_configmaps, NS, "cm-patch", JS_PATCH_APPLY, apB, &wb, NULL, &e);
	assert_int_equal(r, JS_ECONFLICT);
	assert_true(e.ncauses >= 1); /* the conflicting field and its manager */
	wb.force = true;
	KT_OK(js_client_patch(C, &js_client_res_configmaps, NS, "cm-patch", JS_PATCH_APPLY, apB, &wb, &out, &e), &e);
	assert_string_equal(js_json_str(json_object_get(out, "data"), "a"), "B");
	json_decref(out);
	/* apply without a field manager is refused before any request */
	assert_int_equal(js_client_patch(C, &js_client_res_configmaps, NS, "cm-patch", JS_PATCH_APPLY, apB, NULL, NULL,
					 &e),
			 JS_EINVALID);
	json_decref(apA);
	json_decref(apB);
	json_decref(mp);
	json_decref(jp);
	json_decref(sp);
	json_decref(cm);
	js_apierr_done(&e);
}

static json_t *running_pod(const char *name, const char *app)
{
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:[{s:s,s:s}],s:s}}", "apiVersion", "v1", "kind", "Pod",
			 "metadata", "name", name, "namespace", NS, "labels", "app", app, "spec", "containers", "name",
			 "c", "image", "busybox", "nodeName", "no-such-node");
}

static void test_status_subresource(void **state)
{
	(void)state;
	struct js_apierr e = {0};
	json_t *pod = running_pod("pod-status", "st"), *out = NULL;
	KT_OK(js_client_create(C, &js_client_res_pods, NULL, pod, NULL, &out, &e), &e);
	/* Status write: phase changes; a spec change in the same body is ignored. */
	json_object_set_new(out, "status", json_pack("{s:s}", "phase", "Running"));
	json_object_set_new(json_object_get(out, "spec"), "activeDeadlineSeconds", json_integer(99));
	json_t *st = NULL;
	struct js_write_opts wo = {.subresource = "status"};
	KT_OK(js_client_update(C, &js_client_res_pods, NULL, out, &wo, &st, &e), &e);
	assert_string_equal(js_json_str(json_object_get(st, "status"), "phase"), "Running");
	assert_null(json_object_get(json_object_get(st, "spec"), "activeDeadlineSeconds"));
	json_decref(st);
	/* A status merge patch goes to /status too. */
	json_t *sp = json_pack("{s:{s:s}}", "status", "message", "patched");
	KT_OK(js_client_patch(C, &js_client_res_pods, NS, "pod-status", JS_PATCH_MERGE, sp, &wo, &st, &e), &e);
	assert_string_equal(js_json_str(json_object_get(st, "status"), "message"), "patched");
	json_decref(st);
	KT_OK(js_client_get(C, &js_client_res_pods, NS, "pod-status", "status", &st, &e), &e);
	assert_string_equal(js_json_str(json_object_get(st, "status"), "phase"), "Running");
	json_decref(st);
	json_decref(sp);
	json_decref(out);
	json_decref(pod);
	js_apierr_done(&e);
}

static void test_too_many_requests(void **state)
{
	(void)state;
	/* An eviction blocked by a PodDisruptionBudget the disruption
	 * controller has not processed yet is refused with 429 and a
	 * Retry-After: a real TooManyRequests without overloading anything. */
	struct js_apierr e = {0};
	json_t *pod = running_pod("pod-evict", "ev"), *out = NULL;
	KT_OK(js_client_create(C, &js_client_res_pods, NULL, pod, NULL, &out, &e), &e);
	json_object_set_new(out, "status", json_pack("{s:s}", "phase", "Running"));
	struct js_write_opts wo = {.subresource = "status"};
	KT_OK(js_client_update(C, &js_client_res_pods, NULL, out, &wo, NULL, &e), &e);
	json_t *pdb = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:i,s:{s:{s:s}}}}", "apiVersion", "policy/v1", "kind",
				"PodDisruptionBudget", "metadata", "name", "pdb", "namespace", NS, "spec",
				"minAvailable", 1, "selector", "matchLabels", "app", "ev");
	KT_OK(js_client_create(C, &js_client_res_pdbs, NULL, pdb, NULL, NULL, &e), &e);
	json_t *ev = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "policy/v1", "kind", "Eviction", "metadata",
			       "name", "pod-evict", "namespace", NS);
	struct js_buf p;
	js_buf_init(&p, 0);
	assert_int_equal(js_client_path(&js_client_res_pods, NS, "pod-evict", "eviction", &p), 0);
	int r = js_client_call(C, "POST", js_buf_str(&p), NULL, ev, NULL, &e);
	assert_int_equal(r, JS_APIERR_ETOOMANY);
	assert_int_equal(e.http_code, 429);
	assert_string_equal(e.reason, "TooManyRequests");
	assert_true(e.retry_after_s > 0);
	js_buf_done(&p);
	json_decref(ev);
	json_decref(pdb);
	json_decref(out);
	json_decref(pod);
	js_apierr_done(&e);
}

static void test_delete_preconditions_propagation(void **state)
{
	(void)state;
	struct js_apierr e = {0};
	json_t *cm = kt_configmap(NS, "cm-del", NULL, "1"), *created = NULL, *out = NULL;
	KT_OK(js_client_create(C, &js_client_res_configmaps, NULL, cm, NULL, &created, &e), &e);
	const char *uid = js_json_str(json_object_get(created, "metadata"), "uid");
	const char *rv = js_json_str(json_object_get(created, "metadata"), "resourceVersion");

	struct js_delete_opts wrong_uid = {.precondition_uid = "00000000-0000-0000-0000-000000000000"};
	assert_int_equal(js_client_delete(C, &js_client_res_configmaps, NS, "cm-del", &wrong_uid, NULL, &e),
			 JS_ECONFLICT);
	struct js_delete_opts wrong_rv = {.precondition_rv = "1"};
	assert_int_equal(js_client_delete(C, &js_client_res_configmaps, NS, "cm-del", &wrong_rv, NULL, &e),
			 JS_ECONFLICT);

	/* Foreground: the object stays, marked for deletion with the
	 * foregroundDeletion finalizer, until the garbage collector is done. */
	struct js_delete_opts fg = {.propagation = "Foreground", .precondition_uid = uid, .precondition_rv = rv};
	KT_OK(js_client_delete(C, &js_client_res_configmaps, NS, "cm-del", &fg, &out, &e), &e);
	json_t *md = json_object_get(out, "metadata");
	if (json_object_get(md, "deletionTimestamp")) {
		json_t *fin = json_object_get(md, "finalizers");
		assert_string_equal(json_string_value(json_array_get(fin, 0)), "foregroundDeletion");
		/* no garbage collector on an apiserver-only plane: let it go */
		json_t *clear = json_pack("{s:{s:n}}", "metadata", "finalizers");
		int r = js_client_patch(C, &js_client_res_configmaps, NS, "cm-del", JS_PATCH_MERGE, clear, NULL, NULL,
					&e);
		assert_true(r == 0 || r == JS_ENOTFOUND);
		json_decref(clear);
	}
	json_decref(out);

	json_t *cm2 = kt_configmap(NS, "cm-del2", NULL, "1");
	KT_OK(js_client_create(C, &js_client_res_configmaps, NULL, cm2, NULL, NULL, &e), &e);
	struct js_delete_opts bg = {.propagation = "Background", .has_grace = true, .grace_period_s = 0};
	KT_OK(js_client_delete(C, &js_client_res_configmaps, NS, "cm-del2", &bg, NULL, &e), &e);
	assert_int_equal(js_client_get(C, &js_client_res_configmaps, NS, "cm-del2", NULL, &out, &e), JS_ENOTFOUND);
	/* Deleting again is NotFound (callers treat it as done). */
	assert_int_equal(js_client_delete(C, &js_client_res_configmaps, NS, "cm-del2", NULL, NULL, &e), JS_ENOTFOUND);
	json_decref(cm);
	json_decref(cm2);
	json_decref(created);
	js_apierr_done(&e);
}

static void test_list_selector_pages(void **state)
{
	(void)state;
	struct js_apierr e = {0};
	for (int i = 0; i < 5; i++) {
		char name[32];
		snprintf(name, sizeof name, "cm-list-%d", i);
		json_t *cm = kt_configmap(NS, name, i < 4 ? "listed" : "other", "x");
		KT_OK(js_client_create(C, &js_client_res_configmaps, NULL, cm, NULL, NULL, &e), &e);
		json_decref(cm);
	}
	size_t total = 0, pages = 0;
	char *cont = NULL;
	do {
		struct js_list_opts lo = {.label_selector = "app=listed", .limit = 3, .continue_token = cont};
		json_t *page = NULL;
		KT_OK(js_client_list(C, &js_client_res_configmaps, NS, &lo, &page, &e), &e);
		total += json_array_size(json_object_get(page, "items"));
		pages++;
		free(cont);
		const char *c = js_json_str(json_object_get(page, "metadata"), "continue");
		cont = c && *c ? strdup(c) : NULL;
		json_decref(page);
	} while (cont);
	assert_int_equal(total, 4);
	assert_int_equal(pages, 2);
	js_apierr_done(&e);
}

struct par {
	int ok;
};

static void *par_get(void *arg)
{
	struct par *p = arg;
	for (int i = 0; i < 10; i++) {
		json_t *o = NULL;
		if (js_client_get(C, &js_client_res_configmaps, NS, "cm1", NULL, &o, NULL) == 0)
			p->ok++;
		json_decref(o);
	}
	return NULL;
}

static void test_http2_multiplexing(void **state)
{
	(void)state;
	struct js_client_stats before, after;
	js_client_stats(C, &before);
	pthread_t t[8];
	struct par p[8] = {{0}};
	for (int i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&t[i], NULL, par_get, &p[i]), 0);
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(p[i].ok, 10);
	}
	js_client_stats(C, &after);
	assert_int_equal(after.http1, 0);
	assert_true(after.http2 - before.http2 >= 80);
	/* 80 concurrent requests from 8 threads ride the connection(s) opened
	 * before: HTTP/2 streams, not new TLS handshakes per request. */
	print_message("http2 answers %llu, new connections during 80 parallel GETs: %llu (total %llu)\n",
		      (unsigned long long)(after.http2 - before.http2),
		      (unsigned long long)(after.connects - before.connects), (unsigned long long)after.connects);
	assert_true(after.connects - before.connects <= 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_create_get_exists),
		cmocka_unit_test(test_update_conflict),
		cmocka_unit_test(test_invalid_causes),
		cmocka_unit_test(test_patches),
		cmocka_unit_test(test_status_subresource),
		cmocka_unit_test(test_too_many_requests),
		cmocka_unit_test(test_delete_preconditions_propagation),
		cmocka_unit_test(test_list_selector_pages),
		cmocka_unit_test(test_http2_multiplexing),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
