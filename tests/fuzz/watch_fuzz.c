/*
 * watch_fuzz.c - libFuzzer target for the watch path of the controller's
 * informers: bytes of a WATCH response body, cut into slices anywhere,
 * through the reflector's framer and event decoder into the four stores the
 * controller keeps (JobSets, Jobs, Services, PVCs), with their record
 * transforms (ctrl/cache.h, core/job.h), the controller's indexes, and
 * handlers that run what the controller's handlers run on the records: the
 * JobSet change filter and the owner lookups (ctrl/owner.h).
 *
 * Input: byte 0 picks the informer (its low two bits: JobSets, Jobs,
 * Services, PVCs) and seeds the slicing (the other bits; 0: the stream in
 * one piece), the rest is the stream. Nothing may crash, leak, hang or trip a sanitizer; a bad line
 * only stops the replay with an error. Every run builds its informers
 * afresh: no state survives between inputs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "ctrl/cache.h"
#include "ctrl/owner.h"
#include "kube/client.h"
#include "kube/informer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SLICES 256

/* What the controller's handlers compute from a change. */
struct sink {
	size_t events, changed;
};

static void use_key(struct sink *s, char *key)
{
	s->events += key ? strlen(key) : 0;
	free(key);
}

static void jobset_add(void *user, const void *rec, const json_t *obj)
{
	(void)obj;
	struct sink *s = user;
	s->events += strlen(js_cache_jobset_of(rec)->key);
}

static void jobset_update(void *user, const void *old_rec, const void *rec, const json_t *obj)
{
	(void)obj;
	struct sink *s = user;
	const struct js_cache_jobset *old = js_cache_jobset_of(old_rec), *cur = js_cache_jobset_of(rec);
	/* Without a write of ours, then as the echo of a write that asked for
	 * the old status and got the new resourceVersion back. */
	s->changed += js_cache_jobset_changed(old, cur, NULL);
	struct js_cache_written w = {cur->rv, old->status};
	s->changed += js_cache_jobset_changed(old, cur, &w);
}

static void jobset_delete(void *user, const void *rec, const json_t *obj, bool unknown)
{
	(void)obj;
	(void)unknown;
	struct sink *s = user;
	s->events += strlen(js_cache_jobset_of(rec)->key);
}

static void job_event(void *user, const void *rec, const json_t *obj)
{
	struct sink *s = user;
	const struct js_obsjob *j = rec;
	if (obj)
		use_key(s, js_owner_jobset_key(obj));
	s->events += j->owner_uid ? strlen(j->owner_uid) : 0;
}

static void job_add(void *user, const void *rec, const json_t *obj)
{
	job_event(user, rec, obj);
}

static void job_update(void *user, const void *old_rec, const void *rec, const json_t *obj)
{
	job_event(user, rec, obj);
	job_event(user, old_rec, NULL);
}

static void job_delete(void *user, const void *rec, const json_t *obj, bool unknown)
{
	(void)unknown;
	job_event(user, rec, obj);
}

static void child_add(void *user, const void *rec, const json_t *obj)
{
	struct sink *s = user;
	const struct js_cache_child *c = rec;
	s->events += c->jobset_key ? strlen(c->jobset_key) : 0;
	if (obj)
		use_key(s, js_owner_jobset_key(obj));
}

static void child_update(void *user, const void *old_rec, const void *rec, const json_t *obj)
{
	child_add(user, old_rec, NULL);
	child_add(user, rec, obj);
}

static void child_delete(void *user, const void *rec, const json_t *obj, bool unknown)
{
	(void)unknown;
	child_add(user, rec, obj);
}

/* The controller's indexes (ctrl/controller.c). */
static void index_uid(const json_t *obj, js_store_emit_fn *emit, void *ctx)
{
	const char *uid = js_json_str(json_object_get(obj, "metadata"), "uid");
	if (uid)
		emit(ctx, uid);
}

static void index_owner(const json_t *obj, js_store_emit_fn *emit, void *ctx)
{
	const char *uid = js_owner_jobset_uid(obj);
	if (uid)
		emit(ctx, uid);
}

struct kind {
	const struct js_resource *res;
	const struct js_store_type *type;
	struct js_informer_handlers h;
	const char *index;
	js_store_index_fn *index_fn;
};

/* Split the stream into slices whose sizes come from a small LCG seeded by
 * `seed` (deterministic for a given input). */
static size_t slice(const char *p, size_t n, uint8_t seed, const char **chunks, size_t *lens)
{
	if (seed == 0 || n == 0) {
		chunks[0] = p;
		lens[0] = n;
		return 1;
	}
	uint32_t x = seed;
	size_t k = 0, off = 0;
	while (off < n && k < MAX_SLICES - 1) {
		x = x * 1103515245u + 12345u;
		size_t len = 1 + (x >> 16) % 97;
		if (len > n - off)
			len = n - off;
		chunks[k] = p + off;
		lens[k++] = len;
		off += len;
	}
	if (off < n) {
		chunks[k] = p + off;
		lens[k++] = n - off;
	}
	return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	struct sink s = {0};
	const struct kind kinds[] = {
		{&js_client_res_jobsets, &js_cache_jobset_type, {jobset_add, jobset_update, jobset_delete, &s, NULL}, "uid",
		 index_uid},
		{&js_client_res_jobs, &js_cache_job_type, {job_add, job_update, job_delete, &s, NULL}, "jobset-owner",
		 index_owner},
		{&js_client_res_services, &js_cache_service_type, {child_add, child_update, child_delete, &s, NULL},
		 JS_INFORMER_INDEX_NAMESPACE, js_store_index_namespace},
		{&js_client_res_pvcs, &js_cache_pvc_type, {child_add, child_update, child_delete, &s, NULL},
		 JS_INFORMER_INDEX_OWNER_UID, js_store_index_owner_uids},
	};
	const char *chunks[MAX_SLICES];
	size_t lens[MAX_SLICES];
	size_t n = slice((const char *)data + 1, size - 1, (uint8_t)(data[0] >> 2), chunks, lens);
	size_t k = data[0] & 3u;
	struct js_informer_opts o = {.res = kinds[k].res, .type = kinds[k].type, .handlers = kinds[k].h};
	struct js_informer *inf = NULL;
	if (js_informer_new(NULL, &o, &inf) < 0 || js_informer_add_index(inf, kinds[k].index, kinds[k].index_fn) < 0)
		abort();
	int r = js_informer_replay(inf, chunks, lens, n);
	(void)r;
	/* Read back what a worker reads: every record, and one index. */
	const void **recs = NULL;
	size_t nr = js_informer_list(inf, &recs);
	if (nr != js_informer_len(inf))
		abort();
	js_informer_release(inf, recs, nr);
	recs = NULL;
	nr = js_informer_by_index(inf, kinds[k].index, "u", &recs);
	js_informer_release(inf, recs, nr);
	char rv[128];
	js_informer_resource_version(inf, rv, sizeof rv);
	if (js_informer_free(inf) < 0)
		abort();
	(void)s;
	return 0;
}
