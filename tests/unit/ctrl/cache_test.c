/*
 * cache_test.c - the controller's cache records and change filters
 * (ctrl/cache.h): which JobSet updates enqueue a reconcile and which do not
 * (a table of old/new pairs), what the JobSet, Service and PVC records keep,
 * and that Job records compare equal exactly when nothing the core reads
 * changed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "core/policy.h"
#include "ctrl/cache.h"
#include "kube/store.h"
#include "support/testutil.h"

/* A JobSet in the API server's shape, with a merge patch on top. */
static json_t *jobset(const char *patch)
{
	json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:i, s:{s:s}}, s:{s:[{s:s, s:i, s:{s:{s:{s:{s:[{s:s, "
			      "s:s}]}}}}}]}, s:{s:i}}",
			      "apiVersion", "jobset.x-k8s.io/v1alpha2", "kind", "JobSet", "metadata", "name", "js",
			      "namespace", "ns", "uid", "u1", "resourceVersion", "5", "generation", 1, "labels", "a",
			      "1", "spec", "replicatedJobs", "name", "w", "replicas", 1, "template", "spec", "template",
			      "spec", "containers", "name", "c", "image", "i", "status", "restarts", 0);
	tu_merge_patch(o, patch);
	return o;
}

static const struct js_cache_jobset *record(const char *patch)
{
	json_t *o = jobset(patch);
	int err = 0;
	const void *r = js_cache_jobset_type.transform(o, &err);
	json_decref(o);
	assert_non_null(r);
	return r;
}

struct fcase {
	const char *name;
	const char *old_patch, *new_patch; /* on jobset() */
	const char *written_rv;            /* what our last status write returned, or NULL */
	const char *written_status;        /* the status it asked for (JSON), or NULL */
	bool enqueue;
};

static const struct fcase filter_cases[] = {
	{"our own counters write comes back", NULL,
	 "{\"metadata\":{\"resourceVersion\":\"6\"},\"status\":{\"replicatedJobsStatus\":[{\"name\":\"w\",\"ready\":1}]}}",
	 "6", NULL, false},
	{"our own restart write comes back: the next pass acts on it", NULL,
	 "{\"metadata\":{\"resourceVersion\":\"6\"},\"status\":{\"restarts\":1}}", "6", NULL, true},
	{"someone else's status write", NULL, "{\"metadata\":{\"resourceVersion\":\"7\"},\"status\":{\"restarts\":1}}", "6", NULL,
	 true},
	{"a status write before we wrote any", NULL, "{\"metadata\":{\"resourceVersion\":\"6\"},\"status\":{\"restarts\":1}}",
	 NULL, NULL, true},
	{"nothing we read changed (finalizers)", NULL,
	 "{\"metadata\":{\"resourceVersion\":\"6\",\"finalizers\":[\"x\"]}}", NULL, NULL, false},
	{"the spec changed (generation)", NULL,
	 "{\"metadata\":{\"resourceVersion\":\"6\",\"generation\":2},\"status\":{\"restarts\":1}}", "6", NULL, true},
	{"a label changed", NULL, "{\"metadata\":{\"resourceVersion\":\"6\",\"labels\":{\"a\":\"2\"}}}", "6", NULL, true},
	{"an annotation appeared", NULL,
	 "{\"metadata\":{\"resourceVersion\":\"6\",\"annotations\":{\"b\":\"x\"}}}", "6", NULL, true},
	{"deletion started", NULL,
	 "{\"metadata\":{\"resourceVersion\":\"6\",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"}}", "6", NULL, true},
	{"a new incarnation (uid)", NULL, "{\"metadata\":{\"resourceVersion\":\"6\",\"uid\":\"u2\"}}", NULL, NULL, true},
	{"it no longer decodes", NULL, "{\"metadata\":{\"resourceVersion\":\"6\"},\"spec\":{\"replicatedJobs\":7}}",
	 NULL, NULL, true},
	{"it decodes again", "{\"spec\":{\"replicatedJobs\":7}}", "{\"metadata\":{\"resourceVersion\":\"6\"}}", NULL, NULL,
	 true},
	{"our counters again, other fields equal", "{\"status\":{\"replicatedJobsStatus\":[{\"name\":\"w\",\"ready\":1}]}}",
	 "{\"metadata\":{\"resourceVersion\":\"9\"},\"status\":{\"replicatedJobsStatus\":[{\"name\":\"w\",\"ready\":2}]}}",
	 "9", NULL, false},
	{"our counters and a new condition", NULL,
	 "{\"metadata\":{\"resourceVersion\":\"9\"},\"status\":{\"conditions\":[{\"type\":\"Completed\"}],"
	 "\"replicatedJobsStatus\":[{\"name\":\"w\",\"succeeded\":1}]}}",
	 "9", NULL, true},
	{"our write's echo before its answer (status equal to what we asked)", NULL,
	 "{\"metadata\":{\"resourceVersion\":\"6\"},\"status\":{\"restarts\":0,\"replicatedJobsStatus\":[{\"name\":\"w\",\"ready\":1}]}}",
	 NULL, "{\"restarts\":0,\"replicatedJobsStatus\":[{\"name\":\"w\",\"ready\":1}]}", false},
	{"a status other than the one we asked for", NULL,
	 "{\"metadata\":{\"resourceVersion\":\"7\"},\"status\":{\"restarts\":2}}", "6", "{\"restarts\":1}", true},
};

static void test_jobset_filter(void **state)
{
	(void)state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(filter_cases); i++) {
		const struct fcase *k = &filter_cases[i];
		const struct js_cache_jobset *old = record(k->old_patch), *cur = record(k->new_patch);
		json_t *ws = k->written_status ? json_loads(k->written_status, 0, NULL) : NULL;
		struct js_cache_written w = {k->written_rv, ws};
		bool wrote = k->written_rv || ws;
		bool got = js_cache_jobset_changed(old, cur, wrote ? &w : NULL);
		json_decref(ws);
		if (got != k->enqueue)
			fail_msg("%s: enqueue %d, want %d", k->name, got, k->enqueue);
		/* The informer-level same() is stricter: any status change counts. */
		bool same = js_cache_jobset_type.same(old, cur);
		if (same && got)
			fail_msg("%s: same() but enqueued", k->name);
		js_cache_jobset_type.unref(old);
		js_cache_jobset_type.unref(cur);
	}
}

static void test_jobset_record(void **state)
{
	(void)state;
	const struct js_cache_jobset *r = record("{\"metadata\":{\"managedFields\":[{\"manager\":\"m\"}]}}");
	assert_string_equal(r->key, "ns/js");
	assert_string_equal(r->rv, "5");
	assert_string_equal(r->uid, "u1");
	assert_non_null(r->js);
	assert_null(r->error);
	assert_int_equal(json_integer_value(json_object_get(r->status, "restarts")), 0);
	assert_true(r->has_generation);
	assert_int_equal(r->generation, 1);
	assert_false(r->deleting);
	/* References are counted: a reader's outlives the cache's. */
	const void *again = js_cache_jobset_type.ref(r);
	js_cache_jobset_type.unref(r);
	assert_string_equal(((const struct js_cache_jobset *)again)->key, "ns/js");
	js_cache_jobset_type.unref(again);

	r = record("{\"spec\":{\"replicatedJobs\":\"x\"}}");
	assert_null(r->js);
	assert_non_null(r->error);
	js_cache_jobset_type.unref(r);

	json_t *noname = json_pack("{s:{s:s}}", "metadata", "namespace", "ns");
	int err = 0;
	assert_null(js_cache_jobset_type.transform(noname, &err));
	json_decref(noname);
}

struct ccase {
	const char *name;
	const struct js_store_type *type;
	const char *json;
	const char *key; /* expected jobset_key, NULL = none */
};

static const struct ccase child_cases[] = {
	{"service owned by a JobSet", &js_cache_service_type,
	 "{\"metadata\":{\"name\":\"s\",\"namespace\":\"ns\",\"ownerReferences\":[{\"apiVersion\":\"jobset.x-k8s.io/"
	 "v1alpha2\",\"kind\":\"JobSet\",\"name\":\"js\",\"uid\":\"u\",\"controller\":true}]}}",
	 "ns/js"},
	{"service labelled only", &js_cache_service_type,
	 "{\"metadata\":{\"name\":\"s\",\"namespace\":\"ns\",\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"x\"}}}",
	 "ns/x"},
	{"service of nobody", &js_cache_service_type, "{\"metadata\":{\"name\":\"s\",\"namespace\":\"ns\"}}", NULL},
	{"pvc labelled", &js_cache_pvc_type,
	 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"js\"}}}",
	 "ns/js"},
	{"pvc with an empty label", &js_cache_pvc_type,
	 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"\"}}}",
	 NULL},
};

static void test_child_records(void **state)
{
	(void)state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(child_cases); i++) {
		const struct ccase *k = &child_cases[i];
		json_t *o = json_loads(k->json, 0, NULL);
		assert_non_null(o);
		int err = 0;
		const struct js_cache_child *a = k->type->transform(o, &err);
		const struct js_cache_child *b = k->type->transform(o, &err);
		json_decref(o);
		if (k->key ? !a->jobset_key || strcmp(a->jobset_key, k->key) != 0 : a->jobset_key != NULL)
			fail_msg("%s: jobset_key '%s', want '%s'", k->name, a->jobset_key ? a->jobset_key : "(null)",
				 k->key ? k->key : "(null)");
		assert_true(k->type->same(a, b));
		k->type->unref(a);
		k->type->unref(b);
	}
}

/* JobSet pods (gate InPlaceRestart): what the record keeps, and which
 * updates are events (SPEC §11.16 reads only these fields). */
#define POD(md, st) "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"" md "},\"status\":" st "}"
#define JSL ",\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"js\"}"
#define ATT(v) ",\"annotations\":{\"jobset.sigs.k8s.io/in-place-restart-attempt\":\"" v "\"}"

static const struct {
	const char *name, *json;
	const char *key, *attempt; /* NULL: none */
	bool failed;
	int32_t max_rc;
} pod_rows[] = {
	{"running, no attempt yet", POD(JSL, "{\"phase\":\"Running\"}"), "ns/js", NULL, false, 0},
	{"attempt written", POD(JSL ATT("3"), "{\"phase\":\"Running\"}"), "ns/js", "3", false, 0},
	{"failed", POD(JSL, "{\"phase\":\"Failed\"}"), "ns/js", NULL, true, 0},
	{"restart counts, init and regular",
	 POD(JSL, "{\"initContainerStatuses\":[{\"restartCount\":4}],\"containerStatuses\":[{\"restartCount\":2}]}"),
	 "ns/js", NULL, false, 4},
	{"no jobset label", POD("", "{}"), NULL, NULL, false, 0},
	{"empty jobset label", POD(",\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"\"}", "{}"), NULL, NULL, false, 0},
};

static const void *pod_rec(const char *json)
{
	json_t *o = json_loads(json, 0, NULL);
	assert_non_null(o);
	int err = 0;
	const void *r = js_cache_pod_type.transform(o, &err);
	json_decref(o);
	assert_non_null(r);
	return r;
}

static bool streq_or_null(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static void test_pod_records(void **state)
{
	(void)state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(pod_rows); i++) {
		const struct js_cache_pod *r = pod_rec(pod_rows[i].json);
		if (!streq_or_null(r->jobset_key, pod_rows[i].key) || !streq_or_null(r->attempt, pod_rows[i].attempt) ||
		    r->failed != pod_rows[i].failed || r->max_restart_count != pod_rows[i].max_rc ||
		    strcmp(r->name, "p") != 0)
			fail_msg("%s: key %s attempt %s failed %d max_rc %d", pod_rows[i].name,
				 r->jobset_key ? r->jobset_key : "(null)", r->attempt ? r->attempt : "(null)", r->failed,
				 r->max_restart_count);
		js_cache_pod_type.unref(r);
	}
	/* Updates: only a change of a field the bookkeeping reads is an event. */
	static const struct {
		const char *name, *a, *b;
		bool same;
	} upd[] = {
		{"a condition changes", POD(JSL ATT("1"), "{\"phase\":\"Running\"}"),
		 POD(JSL ATT("1"), "{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\"}]}"), true},
		{"the attempt changes", POD(JSL ATT("1"), "{}"), POD(JSL ATT("2"), "{}"), false},
		{"the attempt appears", POD(JSL, "{}"), POD(JSL ATT("0"), "{}"), false},
		{"it fails", POD(JSL, "{\"phase\":\"Running\"}"), POD(JSL, "{\"phase\":\"Failed\"}"), false},
		{"a container restarts", POD(JSL, "{\"containerStatuses\":[{\"restartCount\":0}]}"),
		 POD(JSL, "{\"containerStatuses\":[{\"restartCount\":1}]}"), false},
	};
	for (size_t i = 0; i < JS_ARRAY_SIZE(upd); i++) {
		const void *a = pod_rec(upd[i].a), *b = pod_rec(upd[i].b);
		if (js_cache_pod_type.same(a, b) != upd[i].same)
			fail_msg("%s: same() is %d", upd[i].name, !upd[i].same);
		const void *a2 = js_cache_pod_type.ref(a);
		js_cache_pod_type.unref(a);
		js_cache_pod_type.unref(a2);
		js_cache_pod_type.unref(b);
	}
}

/* A pod's metadata as PartialObjectMetadata (the restart cleanup's cache):
 * what the record keeps, and that only those fields make an update. */
#define META(md) "{\"kind\":\"PartialObjectMetadata\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"" md "}}"
#define MLABELS(l) ",\"labels\":{" l "}"
#define MJS "\"jobset.sigs.k8s.io/jobset-name\":\"js\",\"jobset.sigs.k8s.io/jobset-uid\":\"u1\""
#define MJOB ",\"batch.kubernetes.io/job-name\":\"js-w-0\""
#define MATT(a) ",\"jobset.sigs.k8s.io/restart-attempt\":\"" a "\""

static void test_metapod_records(void **state)
{
	(void)state;
	static const struct {
		const char *name, *json;
		const char *key, *uid, *job, *attempt; /* NULL: none */
		bool deleting;
	} rows[] = {
		{"every label", META(MLABELS(MJS MJOB MATT("2"))), "ns/js", "u1", "js-w-0", "2", false},
		{"being deleted", META(MLABELS(MJS MJOB MATT("0")) ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\""),
		 "ns/js", "u1", "js-w-0", "0", true},
		{"the older job-name label", META(MLABELS(MJS ",\"job-name\":\"js-w-1\"")), "ns/js", "u1", "js-w-1", NULL,
		 false},
		{"no labels", META(""), NULL, NULL, NULL, NULL, false},
	};
	for (size_t i = 0; i < JS_ARRAY_SIZE(rows); i++) {
		json_t *o = json_loads(rows[i].json, 0, NULL);
		assert_non_null(o);
		int err = 0;
		const struct js_cache_metapod *r = js_cache_metapod_type.transform(o, &err);
		json_decref(o);
		assert_non_null(r);
		if (!streq_or_null(r->jobset_key, rows[i].key) || !streq_or_null(r->jobset_uid, rows[i].uid) ||
		    !streq_or_null(r->job_name, rows[i].job) || !streq_or_null(r->attempt, rows[i].attempt) ||
		    r->deleting != rows[i].deleting || !streq_or_null(r->name, "p"))
			fail_msg("%s: key %s uid %s job %s attempt %s deleting %d", rows[i].name,
				 r->jobset_key ? r->jobset_key : "(null)", r->jobset_uid ? r->jobset_uid : "(null)",
				 r->job_name ? r->job_name : "(null)", r->attempt ? r->attempt : "(null)", r->deleting);
		o = json_loads(rows[i].json, 0, NULL);
		const void *again = js_cache_metapod_type.transform(o, &err);
		json_decref(o);
		assert_true(js_cache_metapod_type.same(r, again));
		js_cache_metapod_type.unref(again);
		js_cache_metapod_type.unref(r);
	}
	static const struct {
		const char *name, *a, *b;
		bool same;
	} upd[] = {
		{"an annotation changes", META(MLABELS(MJS MATT("1"))), META(MLABELS(MJS MATT("1")) ",\"annotations\":{\"x\":\"y\"}"),
		 true},
		{"marked for deletion", META(MLABELS(MJS MATT("1"))),
		 META(MLABELS(MJS MATT("1")) ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\""), false},
		{"the attempt label is edited", META(MLABELS(MJS MATT("1"))), META(MLABELS(MJS MATT("2"))), false},
	};
	for (size_t i = 0; i < JS_ARRAY_SIZE(upd); i++) {
		int err = 0;
		json_t *ja = json_loads(upd[i].a, 0, NULL), *jb = json_loads(upd[i].b, 0, NULL);
		const void *a = js_cache_metapod_type.transform(ja, &err), *b = js_cache_metapod_type.transform(jb, &err);
		json_decref(ja);
		json_decref(jb);
		if (js_cache_metapod_type.same(a, b) != upd[i].same)
			fail_msg("%s: same() is %d", upd[i].name, !upd[i].same);
		js_cache_metapod_type.unref(a);
		js_cache_metapod_type.unref(b);
	}
}

/* Issue 22: a pod's restart attempt and Job name are those of its first
 * sight in the cache. A user who relabels a pod of an older attempt as the
 * current one (or as another Job's) does not make it stop holding its
 * hostname; the rest of the record follows the pod. A pod gone from the
 * cache and seen again is seen afresh. Through the store, as the informer
 * writes it. */
static void test_metapod_labels_kept_from_first_sight(void **state)
{
	(void)state;
#define MRV(rv) ",\"resourceVersion\":\"" rv "\""
	static const struct {
		const char *json;
		bool delete_first;         /* delete the stored pod before this write */
		const char *job, *attempt; /* the record after the write */
		bool deleting;
	} steps[] = {
		{META(MRV("1") MLABELS(MJS MJOB MATT("0"))), false, "js-w-0", "0", false},
		{META(MRV("2") MLABELS(MJS ",\"batch.kubernetes.io/job-name\":\"js-w-9\"" MATT("1"))), false, "js-w-0", "0",
		 false},
		{META(MRV("3") MLABELS(MJS) ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\""), false, "js-w-0", "0", true},
		{META(MRV("4") MLABELS(MJS MJOB MATT("1"))), true, "js-w-0", "1", false},
	};
#undef MRV
	struct js_store *st = js_store_new(&js_cache_metapod_type);
	for (size_t i = 0; i < JS_ARRAY_SIZE(steps); i++) {
		struct js_store_change ch;
		if (steps[i].delete_first) {
			js_store_delete(st, "ns/p", &ch);
			js_store_change_done(st, &ch);
		}
		json_t *o = json_loads(steps[i].json, 0, NULL);
		assert_non_null(o);
		assert_int_equal(js_store_upsert(st, o, &ch), 0);
		js_store_change_done(st, &ch);
		json_decref(o);
		const struct js_cache_metapod *r = js_store_get(st, "ns/p");
		assert_non_null(r);
		if (!streq_or_null(r->job_name, steps[i].job) || !streq_or_null(r->attempt, steps[i].attempt) ||
		    r->deleting != steps[i].deleting)
			fail_msg("step %zu: job %s attempt %s deleting %d, want %s %s %d", i,
				 r->job_name ? r->job_name : "(null)", r->attempt ? r->attempt : "(null)", r->deleting,
				 steps[i].job, steps[i].attempt, steps[i].deleting);
		js_store_unref(st, r); /* js_store_get gave a reference */
	}
	js_store_free(st);
}

/* Records are shared by the informer's thread and the workers, and the
 * last holder frees: every type's unref from many threads at once. Checked
 * by ThreadSanitizer in the tsan tier (the free must happen after every
 * other holder's decrement; the Job record's once used a fence TSan does
 * not model, and it reported the free as a race), and by ASan (no double
 * free, no leak). */
#define HOLDERS 8

struct holder {
	const struct js_store_type *type;
	const void *rec;
};

static void *drop(void *arg)
{
	struct holder *h = arg;
	h->type->unref(h->rec);
	return NULL;
}

static void test_shared_unref(void **state)
{
	(void)state;
	static const struct {
		const struct js_store_type *type;
		const char *json;
	} kinds[] = {
		{&js_cache_jobset_type, "{\"metadata\":{\"name\":\"js\",\"namespace\":\"ns\",\"uid\":\"u\"},"
					 "\"spec\":{\"replicatedJobs\":[]},\"status\":{\"restarts\":1}}"},
		{&js_cache_job_type, "{\"metadata\":{\"name\":\"j\",\"namespace\":\"ns\"},\"spec\":{\"template\":"
				      "{\"spec\":{\"tolerations\":[{\"key\":\"k\"}]}}}}"},
		{&js_cache_service_type, "{\"metadata\":{\"name\":\"s\",\"namespace\":\"ns\"}}"},
		{&js_cache_pvc_type, "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"}}"},
		{&js_cache_pod_type, POD(JSL ATT("1"), "{\"phase\":\"Running\"}")},
		{&js_cache_metapod_type, META(MLABELS(MJS MJOB MATT("1")))},
	};
	for (size_t k = 0; k < JS_ARRAY_SIZE(kinds); k++) {
		for (int round = 0; round < 50; round++) {
			json_t *o = json_loads(kinds[k].json, 0, NULL);
			assert_non_null(o);
			int err = 0;
			const void *rec = kinds[k].type->transform(o, &err);
			json_decref(o);
			assert_non_null(rec);
			pthread_t t[HOLDERS];
			struct holder h[HOLDERS];
			for (int i = 0; i < HOLDERS; i++)
				h[i] = (struct holder){kinds[k].type, i ? kinds[k].type->ref(rec) : rec};
			for (int i = 0; i < HOLDERS; i++)
				assert_int_equal(pthread_create(&t[i], NULL, drop, &h[i]), 0);
			for (int i = 0; i < HOLDERS; i++)
				pthread_join(t[i], NULL);
		}
	}
}

/* The failure policy's patterns are compiled once per generation (issue
 * 22): each update of the JobSet goes through a store as the informer
 * sends it, and the record's compiled policy is either its predecessor's
 * (same pointer) or a new one. */
static void test_policy_per_generation(void **state)
{
	(void)state;
#define FP(pat) "\"spec\":{\"failurePolicy\":{\"rules\":[{\"name\":\"r\",\"action\":\"FailJobSet\"," \
		"\"onJobFailureMessagePatterns\":[\"" pat "\",\"exit [0-9]+\"]}]}}"
	static const struct {
		const char *name;
		const char *patch; /* on jobset() */
		bool shared;       /* the previous record's policy */
		size_t compiled;   /* patterns compiled into the record's policy */
	} steps[] = {
		{"added", "{\"metadata\":{\"resourceVersion\":\"5\"}," FP("oom") "}", false, 2},
		{"status update, same generation", "{\"metadata\":{\"resourceVersion\":\"6\"}," FP("oom")
		 ",\"status\":{\"restarts\":1}}", true, 2},
		{"label edit, same generation", "{\"metadata\":{\"resourceVersion\":\"7\",\"labels\":{\"a\":\"2\"}},"
		 FP("oom") "}", true, 2},
		{"spec change: new generation", "{\"metadata\":{\"resourceVersion\":\"8\",\"generation\":2},"
		 FP("OOMKilled") "}", false, 2},
		{"status update of generation 2", "{\"metadata\":{\"resourceVersion\":\"9\",\"generation\":2},"
		 FP("OOMKilled") ",\"status\":{\"restarts\":2}}", true, 2},
		{"same generation, other patterns (no generation bump seen)",
		 "{\"metadata\":{\"resourceVersion\":\"10\",\"generation\":2}," FP("other") "}", false, 2},
		{"new incarnation, same name and generation", "{\"metadata\":{\"resourceVersion\":\"11\","
		 "\"generation\":2,\"uid\":\"u2\"}," FP("other") "}", false, 2},
		{"no failure policy", "{\"metadata\":{\"resourceVersion\":\"12\",\"generation\":3,\"uid\":\"u2\"}}",
		 false, 0},
	};
#undef FP
	struct js_store *st = js_store_new(&js_cache_jobset_type);
	const struct js_policy *prev = NULL;
	for (size_t i = 0; i < JS_ARRAY_SIZE(steps); i++) {
		json_t *o = jobset(steps[i].patch);
		struct js_store_change ch;
		assert_int_equal(js_store_upsert(st, o, &ch), 0);
		json_decref(o);
		const struct js_cache_jobset *r = js_store_get(st, "ns/js");
		assert_non_null(r);
		assert_non_null(r->policy);
		if ((r->policy == prev) != steps[i].shared)
			fail_msg("%s: policy %s", steps[i].name, steps[i].shared ? "compiled again" : "shared");
		if (js_policy_compiled(r->policy) != steps[i].compiled)
			fail_msg("%s: %zu patterns compiled, want %zu", steps[i].name,
				 js_policy_compiled(r->policy), steps[i].compiled);
		prev = r->policy;
		js_store_unref(st, r);
		js_store_change_done(st, &ch); /* drops the old record: a shared policy lives on */
	}
	js_store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jobset_filter),
		cmocka_unit_test(test_jobset_record),
		cmocka_unit_test(test_policy_per_generation),
		cmocka_unit_test(test_child_records),
		cmocka_unit_test(test_pod_records),
		cmocka_unit_test(test_metapod_records),
		cmocka_unit_test(test_metapod_labels_kept_from_first_sight),
		cmocka_unit_test(test_shared_unref),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
