/*
 * runs.c - the windowed runs of a plan (ctrl/sync_int.h): a run of
 * consecutive CreateJob (or DeleteJob, PatchJob, DeletePod) actions - the
 * whole run of the plan - goes out through one sliding window of IN_FLIGHT
 * requests (kube/batch.h); each Job is rendered just before it is sent, so
 * the window never drains between batches and only the window's Jobs exist
 * as text at once. The run still fails as a whole if one of them fails,
 * and nothing is sent after.
 *
 * Idempotence: child names are deterministic, so a create answered
 * AlreadyExists is success when the existing object's controller owner is
 * this JobSet (a controller killed mid-creation and restarted, or a stale
 * cache), and an error otherwise (#1165: never adopt). Deletes carry the
 * observed uid as a precondition so a newer incarnation is never deleted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/json.h"
#include "ctrl/owner.h"
#include "ctrl/sync_int.h"
#include "kube/batch.h"

/* Creates and deletes in flight. Upstream allows 50 (SPEC §6.4); with 50 a
 * loaded API server answered ours at 0.6 - 0.7 x the raw create loop's rate
 * (100 in flight), because each answer takes about a second there and the
 * window, not the server, set the pace (BENCHMARKS.md, session 3). 100 stay
 * within one HTTP/2 connection (kube/client.c allows 200 streams) and within
 * the client's QPS limit, which still bounds the rate. */
#ifndef JS_CTRL_IN_FLIGHT
#define JS_CTRL_IN_FLIGHT 100
#endif
#define IN_FLIGHT JS_CTRL_IN_FLIGHT

/* One run in the window: what the batch callbacks see. */
struct run {
	struct js__body *b;
	const struct js_action *acts;
	const struct js_exec_run *run; /* creates only */
	struct js_buf msgs;            /* "name: why; ..." of the failures */
	const char **rvs;              /* arena: the resourceVersion each 2xx answer carried */
};

/* Our Job `obj` (GET by name after a create met it) lacks the label our
 * label-scoped Job cache selects on (controller.h: another user removed
 * it), so the cache cannot show it, and without this every pass of the
 * JobSet would create it again and wait for it in vain (issue 22).
 * Upstream finds child Jobs by owner uid in a cache of every Job and still
 * sees it; we own the Job, so we put the label back (docs/differences.md)
 * with a merge patch at the resourceVersion read, which a concurrent
 * change turns into a conflict (retried with the pass). Returns 0 with the
 * resourceVersion the patch gave in *ret_rv (arena), or the error. */
static int restore_label(struct js__body *b, const json_t *obj, const char **ret_rv)
{
	struct js_controller *c = b->c;
	struct js__observed *o = b->o;
	const json_t *md = json_object_get(obj, "metadata");
	const char *name = js_json_str(md, "name"), *rv = js_json_str(md, "resourceVersion");
	if (!name || !rv)
		return JS_EINVALID;
	js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO,
		      "jobset '%s/%s': Job %s was made for it but lacks label %s, which the Job cache selects on: "
		      "putting it back",
		      o->ns, o->name, name, JS_LABEL_JOBSET_NAME);
	json_t *patch = json_pack("{s:{s:s, s:{s:s}}}", "metadata", "resourceVersion", rv, "labels",
				  JS_LABEL_JOBSET_NAME, o->name);
	json_t *got = NULL;
	struct js_apierr err = {0};
	int r = js_client_patch(c->client, &js_client_res_jobs, o->ns, name, JS_PATCH_MERGE, patch, NULL, &got, &err);
	js__count(c, "PATCH", r, &err, 200);
	json_decref(patch);
	if (r == 0) {
		const char *nrv = js_json_str(json_object_get(got, "metadata"), "resourceVersion");
		*ret_rv = nrv ? js_arena_strdup(b->a, nrv) : NULL;
	} else if (!js__aborted(c)) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': putting label %s back on Job %s: %s", o->ns,
			      o->name, JS_LABEL_JOBSET_NAME, name, js__why(&err, r));
	}
	json_decref(got);
	js_apierr_done(&err);
	return r;
}

/* An existing Job named like one we create: ours iff its controller owner
 * is this JobSet's uid (#1165). Cache first, then the API; one of ours the
 * cache cannot show gets its label back (restore_label), with the
 * resourceVersion that gave it in *ret_rv. So does one made for this
 * JobSet that another user orphaned (its pod template, which cannot change
 * once it ran, carries our uid): it is not adopted, but once in the cache
 * the core sees it and says why it waits (JobCreationBlocked,
 * JS__CTRL_INDEX_UNOWNED) instead of failing creates in silence. */
static int owned_existing(struct js__body *b, const char *name, const char **ret_rv)
{
	struct js_controller *c = b->c;
	const struct js__observed *o = b->o;
	const char *uid = o->rec->uid;
	const struct js_obsjob *j = js_informer_get(c->jobs, o->ns, name);
	if (j) {
		bool ours = j->owner_uid && uid && strcmp(j->owner_uid, uid) == 0;
		js_informer_unref(c->jobs, j);
		return ours ? 0 : JS_EEXISTS;
	}
	json_t *obj = NULL;
	struct js_apierr err = {0};
	int r = js_client_get(c->client, &js_client_res_jobs, o->ns, name, NULL, &obj, &err);
	js__count(c, "GET", r, &err, 200);
	js_apierr_done(&err);
	if (r == JS_ENOTFOUND)
		return -EAGAIN; /* deleted meanwhile: create again next pass */
	if (r < 0)
		return r;
	const char *owner = js_owner_jobset_uid(obj);
	bool ours = owner && uid && strcmp(owner, uid) == 0;
	const char *made_for = js_json_str(js_json_path(obj, "spec.template.metadata.labels"), JS_LABEL_JOBSET_UID);
	bool made_for_us = made_for && uid && strcmp(made_for, uid) == 0;
	/* Labelled but not cached yet: the cache lags (the key's
	 * expectations wait for it). */
	if ((ours || made_for_us) && !json_object_get(js_json_path(obj, "metadata.labels"), JS_LABEL_JOBSET_NAME)) {
		const char *rv = NULL;
		r = restore_label(b, obj, &rv);
		if (ours)
			*ret_rv = rv;
	}
	json_decref(obj);
	return r < 0 ? r : ours ? 0 : JS_EEXISTS;
}

static void append_err(struct js_buf *msgs, const char *name, const char *what)
{
	(void)!js_buf_printf(msgs, "%s%s: %s", msgs->len ? "; " : "", name, what);
}

/* The DeleteOptions body of a Job delete: propagation and, when the Job is
 * known, its uid as a precondition (a newer incarnation is never deleted).
 * Caller frees. */
static char *delete_body(struct js__observed *o, const struct js_action *a)
{
	json_t *opts = json_pack("{s:s, s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1", "propagationPolicy",
				 js_reconcile_propagation_name(a->propagation));
	const char *uid = js__observed_job_uid(o, a->name);
	if (uid)
		json_object_set_new(opts, "preconditions", json_pack("{s:s}", "uid", uid));
	char *s = json_dumps(opts, JSON_COMPACT);
	json_decref(opts);
	return s;
}

/* The HTTP method of a windowed action (CreateJob, DeleteJob, DeletePod,
 * PatchJob). */
static const char *run_method(const struct js_action *a)
{
	return a->kind == JS_ACTION_CREATE_JOB ? "POST" : a->kind == JS_ACTION_PATCH_JOB ? "PATCH" : "DELETE";
}

/* kube/batch.h request: a create (rendered from the run), a delete or a
 * merge patch. */
static int run_request(void *self, size_t i, struct js_batch_req *req)
{
	struct run *rn = self;
	struct js__observed *o = rn->b->o;
	const struct js_action *a = &rn->acts[i];
	bool create = a->kind == JS_ACTION_CREATE_JOB;
	bool patch = a->kind == JS_ACTION_PATCH_JOB;
	bool pod = a->kind == JS_ACTION_DELETE_POD;
	req->method = run_method(a);
	req->content_type = patch ? "application/merge-patch+json" : "application/json";
	int r = js_client_path(pod ? &js_client_res_pods : &js_client_res_jobs, o->ns, create ? NULL : a->name, NULL,
			       &req->path);
	if (r == 0 && pod) {
		/* Background: its Job is gone, nothing depends on the pod. */
		req->body = js_xstrdup(
			"{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":\"Background\"}");
	} else if (r == 0 && patch) {
		req->body = json_dumps(a->object, JSON_COMPACT);
		r = req->body ? 0 : -ENOMEM;
	} else if (r == 0 && create) {
		/* Rendered just before it is sent: only the window's Jobs exist
		 * as text at any time (core/exec.h rule 3). */
		json_t *body = js_exec_render(rn->run, i);
		req->body = body ? json_dumps(body, JSON_COMPACT) : NULL;
		json_decref(body);
		r = body ? 0 : JS_EINVALID;
	} else if (r == 0) {
		req->body = delete_body(o, a);
	}
	return r;
}

static void run_answered(void *self, size_t i, const char *method, long code)
{
	(void)i;
	struct run *rn = self;
	js__ctrl_count_request(rn->b->c, method, code);
}

/* The resourceVersion in the metadata of an answer's object (the first
 * after "metadata": the API server writes ObjectMeta's fields in their
 * declared order, resourceVersion before labels and annotations), without
 * decoding the whole Job; NULL when there is none (a Status). */
static const char *answer_rv(struct js_arena *a, const char *body, size_t len)
{
	static const char md[] = "\"metadata\":{", key[] = "\"resourceVersion\":\"";
	const char *p = body ? memmem(body, len, md, sizeof md - 1) : NULL;
	if (p)
		p = memmem(p, len - (size_t)(p - body), key, sizeof key - 1);
	if (!p)
		return NULL;
	p += sizeof key - 1;
	size_t n = 0;
	while (p + n < body + len && n < 32 && p[n] >= '0' && p[n] <= '9')
		n++;
	return n > 0 && p + n < body + len && p[n] == '"' ? js_arena_strndup(a, p, n) : NULL;
}

/* kube/batch.h ok_body: keep the resourceVersion the write was given. */
static void run_ok_body(void *self, size_t i, const char *body, size_t len)
{
	struct run *rn = self;
	rn->rvs[i] = answer_rv(rn->b->a, body, len);
}

/* A patch of spec.suspend that landed, given `rv`: the cache must show it
 * before the next pass (rw.c). */
static void note_suspend_patch(struct js__body *b, const struct js_action *a, const char *rv)
{
	const json_t *s = json_object_get(json_object_get(a->object, "spec"), "suspend");
	if (json_is_true(s))
		js__rw_note(b, JS_EXPECT_SUSPENDED, a->name, NULL, rv);
	else if (json_is_false(s))
		js__rw_note(b, JS_EXPECT_RESUMED, a->name, NULL, rv);
}

/* kube/batch.h finish: the AlreadyExists/NotFound rules (a Job gone before
 * its delete or patch needs nothing more: the next pass sees it gone), the
 * count, and what the caches must show before the next reconcile of the
 * key (rw.c). */
static int run_finish(void *self, size_t i, int r, const struct js_apierr *err)
{
	struct run *rn = self;
	struct js__body *b = rn->b;
	struct js_controller *c = b->c;
	const struct js_action *a = &rn->acts[i];
	bool create = a->kind == JS_ACTION_CREATE_JOB;
	if (create && r == JS_EEXISTS) {
		r = owned_existing(b, a->name, &rn->rvs[i]);
		if (r == JS_EEXISTS)
			append_err(&rn->msgs, a->name, "exists and is not controlled by this JobSet");
		else if (r < 0)
			append_err(&rn->msgs, a->name, r == -EAGAIN ? "exists, then was deleted: created again on a later pass"
								: js_apierr_strerror(r));
	} else if (!create && r == JS_ENOTFOUND) {
		r = 0; /* already gone */
	} else if (a->kind == JS_ACTION_DELETE_JOB && r == JS_ECONFLICT) {
		r = 0; /* uid precondition: a newer incarnation; ours is gone */
	} else if (r < 0) {
		append_err(&rn->msgs, a->name, err->message ? err->message : js_apierr_strerror(r));
	}
	js__count_action(c, a->kind, r);
	/* A delete of a Job we never saw has nothing to wait for. */
	const char *uid = a->kind == JS_ACTION_DELETE_JOB ? js__observed_job_uid(b->o, a->name) : NULL;
	if (r == 0 && create)
		js__rw_note(b, JS_EXPECT_EXISTS, a->name, NULL, rn->rvs[i]);
	else if (r == 0 && uid)
		js__rw_note(b, JS_EXPECT_GONE, a->name, uid, rn->rvs[i]);
	else if (r == 0 && a->kind == JS_ACTION_PATCH_JOB)
		note_suspend_patch(b, a, rn->rvs[i]);
	else if (r == 0 && a->kind == JS_ACTION_DELETE_POD)
		js__oldpods_note_deleted(c, b->o->ns, a->name);
	return r;
}

static const struct js_batch_ops run_ops = {
	.request = run_request,
	.answered = run_answered,
	.ok_body = run_ok_body,
	.finish = run_finish,
};

int js__runs_apply(struct js__body *b, const struct js_action *acts, const struct js_exec_run *run, size_t n)
{
	struct js_controller *c = b->c;
	struct js__observed *o = b->o;
	bool create = acts[0].kind == JS_ACTION_CREATE_JOB;
	struct run rn = {.b = b, .acts = acts, .run = run, .rvs = js_arena_calloc(b->a, n, sizeof(char *))};
	js_buf_init(&rn.msgs, 16384);
	size_t failed_at = SIZE_MAX;
	int first = js_batch_run(c->client, n, IN_FLIGHT, &run_ops, &rn, &failed_at);
	const struct js_action *failed = failed_at < n ? &acts[failed_at] : NULL;
	const char *kind = js_reconcile_action_kind_name(acts[0].kind);
	if (first < 0 && !js__aborted(c)) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': %s: %s", o->ns, o->name, kind,
			      js_buf_str(&rn.msgs));
		if (create)
			js__event(c, o, "Warning", "JobCreationFailed", js_buf_str(&rn.msgs));
		else if (failed && failed->fail_reason)
			js__fail_event(c, o, failed, js_buf_str(&rn.msgs));
	} else if (first == 0) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_DEBUG, "jobset '%s/%s': %s x%zu", o->ns, o->name, kind, n);
	}
	js_buf_done(&rn.msgs);
	return first;
}
