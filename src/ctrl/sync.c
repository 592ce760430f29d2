/*
 * sync.c - one reconcile of one JobSet key (SPEC §11.2, core/reconcile.h):
 * observe from the caches, run the core, and be the Kubernetes body of the
 * plan executor (core/exec.h): js_exec_apply() decides the order, the runs
 * and the stop-at-first-failure; the ops here do the API calls.
 *
 * Observing borrows: the JobSet and its Jobs are the records the informers
 * made at ingest (ctrl/cache.h); a reconcile takes references to them and
 * never decodes or copies them. Jobs are found through the owner-uid index,
 * the Service and the PVCs by key.
 *
 * Applying: a run of consecutive CreateJob (or DeleteJob) actions - the
 * whole run of the plan - goes out through one sliding window of IN_FLIGHT
 * requests (the client multiplexes them over HTTP/2 within its rate limit);
 * each Job is rendered just before it is sent, so the window never drains
 * between batches and only the window's Jobs exist as text at once. The run
 * still fails as a whole if one of them fails, and nothing is sent after.
 *
 * Memory: a reconcile's scratch (names, paths, bookkeeping) comes from the
 * worker's arena, reset after each reconcile (STYLE §12).
 *
 * Idempotence: child names are deterministic, so a create answered
 * AlreadyExists is success when the existing object's controller owner is
 * this JobSet (a controller killed mid-creation and restarted, or a stale
 * cache), and an error otherwise (#1165: never adopt). Deletes carry the
 * observed uid as a precondition so a newer incarnation is never deleted.
 *
 * Read-your-writes: after writing, the worker waits (bounded) until its own
 * caches show what it wrote, so the next reconcile of the key does not act
 * on a view older than its own last write.
 *
 * The status write is a merge patch of the status subresource carrying only
 * the members that changed, with the resourceVersion the JobSet was read at
 * as a precondition (a conflict retries the key).
 *
 * Cancellation: every request of a worker is bound to the controller's
 * abort flag (controller.c), and the waits here give up once it is set, so
 * a stop past its grace period ends a reconcile within a request's time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/codec.h"
#include "api/render.h"
#include "api/sched.h"
#include "base/arena.h"
#include "base/buf.h"
#include "base/hmap.h"
#include "base/json.h"
#include "core/exec.h"
#include "core/reconcile.h"
#include "ctrl/ctrl_int.h"
#include "ctrl/owner.h"

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

/* Observed state of one key: references to cached records. */
struct observed {
	const char *ns, *name;             /* arena */
	const struct js_cache_jobset *rec; /* the JobSet, one reference */
	const void **jobs;                 /* its Jobs (struct js_obsjob), one reference each */
	size_t n_jobs;
	const char **pvcs;                 /* arena */
	size_t n_pvcs;
	bool service_exists;
	const void **ipod_recs;            /* in-place restart: the pod records, one reference each */
	struct js_obspod *ipods;           /* arena: what the core reads of them (§11.16) */
	size_t n_ipods;
	bool workload_exists;              /* KEP-969 */
	const char **podgroups;            /* arena; not being deleted */
	size_t n_podgroups;
	bool sched_deleting;               /* one is being deleted */
	json_t *regarding;                 /* what events are about (built once, lazily) */
	struct js_hmap *by_name;           /* name -> observed Job, built on first use */
};

static void observed_done(struct js_controller *c, struct observed *o)
{
	js_informer_unref(c->jobsets, o->rec);
	js_informer_release(c->jobs, o->jobs, o->n_jobs);
	if (c->ipods)
		js_informer_release(c->ipods, o->ipod_recs, o->n_ipods);
	json_decref(o->regarding);
	js_hmap_free(o->by_name);
}

/* The uid of the observed Job `name`, or NULL: a hash lookup, so deleting
 * N Jobs stays linear (issue 9). The observed Jobs, not the cache by name:
 * a delete's precondition is the incarnation the core decided about. */
static const char *job_uid(struct observed *o, const char *name)
{
	if (!o->by_name) {
		static const struct js_hmap_type borrowed = {.borrow_keys = true};
		o->by_name = js_hmap_new(&borrowed);
		for (size_t i = 0; i < o->n_jobs; i++) {
			const struct js_obsjob *j = o->jobs[i];
			if (!js_hmap_has(o->by_name, j->name)) /* the first of a name wins, as in the core */
				js_hmap_put(o->by_name, j->name, (void *)(uintptr_t)j, NULL);
		}
	}
	const struct js_obsjob *j = js_hmap_get(o->by_name, name);
	return j ? j->uid : NULL;
}

static bool aborted(struct js_controller *c)
{
	return atomic_load(&c->abort);
}

/* ---- counted client calls ---- */

static void count(struct js_controller *c, const char *method, int r, const struct js_apierr *err, long ok_code)
{
	js__ctrl_count_request(c, method, r == 0 ? ok_code : err->http_code);
}

static void count_action(struct js_controller *c, enum js_action_kind k, int r)
{
	const char *v[] = {js_reconcile_action_kind_name(k), r == 0 ? "ok" : "error"};
	(void)js_metrics_add(c->metrics, JS__M_ACTIONS, v, 1);
}

/* ---- observe ---- */

/* PVCs the JobSet asks for that exist: from the label-scoped PVC cache
 * (every PVC we create carries jobset-name, SPEC §8), not a GET each. */
static void observe_pvcs(struct js_controller *c, struct js_arena *a, struct observed *o)
{
	json_t *pvcs = js_render_pvcs(o->rec->js);
	size_t i;
	json_t *p;
	o->pvcs = js_arena_calloc(a, json_array_size(pvcs) + 1, sizeof(char *));
	json_array_foreach(pvcs, i, p)
	{
		const char *name = js_json_str(json_object_get(p, "metadata"), "name");
		if (name && js_informer_has(c->pvcs, o->ns, name))
			o->pvcs[o->n_pvcs++] = js_arena_strdup(a, name);
	}
	json_decref(pvcs);
}

/* KEP-969: the JobSet's Workload and PodGroups, read from the API server
 * on each reconcile of a JobSet with spec.scheduling (a GET and a
 * label-scoped LIST, no informer: the scheduling.k8s.io/v1alpha2 API exists
 * only on clusters that enable it, and a cache of an absent resource would
 * never sync; docs/differences.md). Only objects the JobSet controls count.
 * Returns 0 or the read's error. */
static int observe_sched(struct js_controller *c, struct js_arena *a, struct observed *o)
{
	struct js_apierr err = {0};
	json_t *obj = NULL;
	const char *uid = o->rec->uid ? o->rec->uid : "";
	int r = js_client_get(c->client, &js_client_res_workloads, o->ns, js_sched_workload_name(o->rec->js), NULL,
			      &obj, &err);
	count(c, "GET", r == JS_ENOTFOUND ? 0 : r, &err, r == JS_ENOTFOUND ? 404 : 200);
	if (r < 0 && r != JS_ENOTFOUND)
		goto fail;
	bool ours = r == 0 && js_json_controller_uid(obj) && strcmp(js_json_controller_uid(obj), uid) == 0;
	bool going = ours && js_json_path(obj, "metadata.deletionTimestamp");
	o->workload_exists = ours && !going;
	o->sched_deleting = going;
	json_decref(obj);
	obj = NULL;
	js_apierr_done(&err);
	char *sel = js_buf_format("%s=%s", JS_LABEL_JOBSET_NAME, o->name);
	struct js_list_opts lo = {.label_selector = sel};
	r = js_client_list(c->client, &js_client_res_podgroups, o->ns, &lo, &obj, &err);
	free(sel);
	count(c, "GET", r, &err, 200); /* a LIST is a GET on the wire */
	if (r < 0)
		goto fail;
	const json_t *items = json_object_get(obj, "items");
	o->podgroups = js_arena_calloc(a, json_array_size(items) + 1, sizeof(char *));
	for (size_t i = 0; i < json_array_size(items); i++) {
		const json_t *pg = json_array_get(items, i);
		const char *name = json_string_value(js_json_path(pg, "metadata.name"));
		const char *owner = js_json_controller_uid(pg);
		if (!name || !owner || strcmp(owner, uid) != 0)
			continue;
		if (js_json_path(pg, "metadata.deletionTimestamp"))
			o->sched_deleting = true;
		else
			o->podgroups[o->n_podgroups++] = js_arena_strdup(a, name);
	}
	json_decref(obj);
	return 0;
fail:
	js__ctrl_logf(c, JS_CONTROLLER_LOG_ERROR, "jobset '%s/%s': reading its Workload and PodGroups: %s", o->ns,
		      o->name, err.message ? err.message : js_apierr_strerror(r));
	js_apierr_done(&err);
	json_decref(obj);
	return r;
}

/* Returns 1 when there is a JobSet to reconcile, 0 when it is gone. */
static int observe(struct js_controller *c, struct js_arena *a, const char *key, struct observed *o)
{
	const char *slash = strchr(key, '/');
	if (!slash || !slash[1] || strchr(slash + 1, '/'))
		return 0;
	o->ns = js_arena_strndup(a, key, (size_t)(slash - key));
	o->name = slash + 1;
	o->rec = js_informer_get(c->jobsets, o->ns, o->name);
	if (!o->rec)
		return 0; /* R1: gone; its children go by garbage collection */
	if (!o->rec->js) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_ERROR, "jobset '%s': cannot decode: %s, ignoring", key,
			      o->rec->error);
		return 0;
	}
	const struct js_jobset *js = o->rec->js;
	if (o->rec->uid)
		o->n_jobs = js_informer_by_index(c->jobs, JS__CTRL_INDEX_OWNER, o->rec->uid, &o->jobs);
	/* Looked up whatever the stored spec says: the core defaults a JobSet
	 * that never met the webhook (enableDNSHostnames absent means true), so
	 * deciding here from the raw field made every reconcile of such a
	 * JobSet create its Service again (answered AlreadyExists; issue 13). */
	o->service_exists = js_informer_has(c->services, o->ns, js_jobset_subdomain(js));
	if (js->has_spec && js->spec.n_volume_claim_policies > 0)
		observe_pvcs(c, a, o);
	if (c->ipods && js__inplace_strategy(js))
		o->n_ipods = js__inplace_observe(c, a, key, &o->ipod_recs, &o->ipods);
	if (c->o.gates.workload_aware_scheduling && js->spec.scheduling && !js->meta.deletion_timestamp &&
	    observe_sched(c, a, o) < 0)
		return -1;
	return 1;
}

/* ---- read-your-writes ---- */

static uint64_t deadline_after(int ms)
{
	return js__ctrl_now_ns() + (uint64_t)(ms > 0 ? ms : 0) * 1000000u;
}

static int left_ms(uint64_t dl)
{
	uint64_t now = js__ctrl_now_ns();
	return now >= dl ? 0 : (int)((dl - now) / 1000000u) + 1;
}

/* Wait until every Job in `names` is in the cache (or gone: `gone`). */
/* What the cache must show of a Job this pass wrote. */
enum rw_want {
	RW_EXISTS,    /* created */
	RW_GONE,      /* deleted: absent or marked for deletion */
	RW_SUSPENDED, /* patched spec.suspend true (or gone) */
	RW_RESUMED,   /* patched spec.suspend false (or gone) */
};

static bool rw_shows(const struct js_obsjob *j, enum rw_want w)
{
	switch (w) {
	case RW_EXISTS:
		return j != NULL;
	case RW_GONE:
		return !j || j->deleting;
	case RW_SUSPENDED:
	case RW_RESUMED:
		/* Without this a pass soon after would patch the same Jobs
		 * again: a suspend of 1,000 Jobs sent half as often again. */
		return !j || (j->has_suspend && j->suspend) == (w == RW_SUSPENDED);
	}
	return true;
}

static void wait_jobs(struct js_controller *c, const char *ns, const char *const *names, size_t n,
		      enum rw_want want)
{
	if (c->o.cache_wait_ms < 0 || n == 0)
		return;
	uint64_t dl = deadline_after(c->o.cache_wait_ms);
	size_t done = 0;
	while (done < n && !aborted(c)) {
		uint64_t gen = js_informer_generation(c->jobs);
		while (done < n) {
			const struct js_obsjob *j = js_informer_get(c->jobs, ns, names[done]);
			bool ok = rw_shows(j, want);
			js_informer_unref(c->jobs, j);
			if (!ok)
				break;
			done++;
		}
		if (done == n || left_ms(dl) == 0 || js_informer_wait_change(c->jobs, gen, left_ms(dl)) < 0)
			break;
	}
}

static void wait_jobset_rv(struct js_controller *c, const struct observed *o, const char *rv)
{
	if (c->o.cache_wait_ms < 0 || !rv)
		return;
	uint64_t dl = deadline_after(c->o.cache_wait_ms);
	while (!aborted(c)) {
		uint64_t gen = js_informer_generation(c->jobsets);
		char crv[128];
		int r = js_informer_object_rv(c->jobsets, o->ns, o->name, crv, sizeof crv);
		bool ok = r == JS_ENOTFOUND || (r == 0 && strcmp(crv, rv) == 0);
		if (ok || left_ms(dl) == 0 || js_informer_wait_change(c->jobsets, gen, left_ms(dl)) < 0)
			return;
	}
}

/* ---- the body (core/exec.h) ---- */

/* The controller body's context for one reconcile. */
struct body {
	struct js_controller *c;
	struct observed *o;
	struct js_arena *a;   /* the worker's scratch, reset after the reconcile */
	/* Jobs this pass created and deleted (names borrowed from the plan):
	 * the read-your-writes wait for them comes once, at the end of the
	 * pass, so runs of creates follow each other without a watch round
	 * trip in between. */
	const char **created, **deleted, **suspended, **resumed;
	size_t n_created, n_deleted, n_suspended, n_resumed;
	bool conflict;        /* the status write met a newer resourceVersion */
	bool has_requeue_after;
	int64_t requeue_after;
};

/* ---- events ---- */

/* The JobSet as an event's `regarding` (kube/recorder.h). */
static const json_t *regarding(struct observed *o)
{
	if (!o->regarding) {
		o->regarding = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "apiVersion", JS_API_VERSION, "kind", JS_KIND,
					 "metadata", "name", o->name, "namespace", o->ns, "resourceVersion",
					 o->rec->rv);
		if (o->rec->uid)
			json_object_set_new(json_object_get(o->regarding, "metadata"), "uid",
					    json_string(o->rec->uid));
	}
	return o->regarding;
}

static void event(struct js_controller *c, struct observed *o, const char *type, const char *reason,
		  const char *msg)
{
	int r = js_recorder_eventf(c->rec, regarding(o), type, reason, "Reconciling", "%s", msg);
	if (r < 0 && !aborted(c))
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': event %s: %s, ignoring", o->ns, o->name,
			      reason, js_apierr_strerror(r));
}

/* ---- creates and deletes ---- */

/* An existing Job named like one we create: ours iff its controller owner
 * is this JobSet's uid (#1165). Cache first, then the API. */
static int owned_existing(struct js_controller *c, const struct observed *o, const char *name)
{
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
	count(c, "GET", r, &err, 200);
	js_apierr_done(&err);
	if (r == JS_ENOTFOUND)
		return -EAGAIN; /* deleted meanwhile: create again next pass */
	if (r < 0)
		return r;
	const char *owner = js_owner_jobset_uid(obj);
	bool ours = owner && uid && strcmp(owner, uid) == 0;
	json_decref(obj);
	return ours ? 0 : JS_EEXISTS;
}

static void append_err(struct js_buf *msgs, const char *name, const char *what)
{
	(void)!js_buf_printf(msgs, "%s%s: %s", msgs->len ? "; " : "", name, what);
}

/* The DeleteOptions body of a Job delete: propagation and, when the Job is
 * known, its uid as a precondition (a newer incarnation is never deleted).
 * Caller frees. */
static char *delete_body(struct observed *o, const struct js_action *a)
{
	json_t *opts = json_pack("{s:s, s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1", "propagationPolicy",
				 js_reconcile_propagation_name(a->propagation));
	const char *uid = job_uid(o, a->name);
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

/* Submit one create (`body`), delete or merge patch; 0 and *ret, or the
 * error. */
static int submit_one(struct js_controller *c, struct observed *o, const struct js_action *a,
		      const struct js_exec_run *run, size_t i, struct js_client_xfer **ret)
{
	bool create = a->kind == JS_ACTION_CREATE_JOB;
	bool patch = a->kind == JS_ACTION_PATCH_JOB;
	struct js_buf path;
	js_buf_init(&path, 4096);
	char *text = NULL;
	bool pod = a->kind == JS_ACTION_DELETE_POD;
	int r = js_client_path(pod ? &js_client_res_pods : &js_client_res_jobs, o->ns, create ? NULL : a->name, NULL,
			       &path);
	if (r == 0 && pod) {
		/* Background: its Job is gone, nothing depends on the pod. */
		text = js_xstrdup("{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":\"Background\"}");
	} else if (r == 0 && patch) {
		text = json_dumps(a->object, JSON_COMPACT);
		r = text ? 0 : -ENOMEM;
	} else if (r == 0 && create) {
		/* Rendered just before it is sent: only the window's Jobs exist
		 * as text at any time (core/exec.h rule 3). */
		json_t *body = js_exec_render(run, i);
		text = body ? json_dumps(body, JSON_COMPACT) : NULL;
		json_decref(body);
		r = body ? 0 : JS_EINVALID;
	} else if (r == 0) {
		text = delete_body(o, a);
	}
	struct js_client_req req = {
		.method = run_method(a),
		.path = js_buf_str(&path),
		.content_type = patch ? "application/merge-patch+json" : "application/json",
		.body = text,
		.body_len = text ? strlen(text) : 0,
	};
	if (r == 0)
		r = js_client_submit(c->client, &req, ret); /* copies path and body */
	free(text);
	js_buf_done(&path);
	return r;
}

/* Wait for one submitted create/delete/patch (action `i` of `run`),
 * repeating it when the answer asks to with Retry-After (client.h, as
 * client-go does for every verb), and apply the AlreadyExists/NotFound
 * rules (a Job gone before its delete or patch needs nothing more: the next
 * pass sees it gone). Returns 0 or the error; appends a message to `msgs` on
 * error. */
static int finish_one(struct js_controller *c, struct observed *o, const struct js_action *a,
		      const struct js_exec_run *run, size_t i, struct js_client_xfer *x, int submit_err,
		      struct js_buf *msgs)
{
	bool create = a->kind == JS_ACTION_CREATE_JOB;
	int r = submit_err;
	struct js_apierr err = {0};
	for (int tries = 0; r == 0; tries++) {
		struct js_client_resp resp = {0};
		char why[256] = "";
		r = js_client_xfer_wait(x, &resp, why, sizeof(why));
		uint64_t again = r == 0 ? js_client_retry_after_ms(&resp, tries) : 0;
		if (r == 0) {
			js__ctrl_count_request(c, run_method(a), resp.code);
			if (resp.code < 200 || resp.code > 299)
				r = js_apierr_decode(resp.code, resp.body, resp.len, resp.retry_after_s, &err);
		} else {
			js__ctrl_count_request(c, run_method(a), 0);
			js_apierr_set_transport(&err, r, why);
		}
		js_client_resp_done(&resp);
		if (!again || js_client_pause(c->client, again) < 0)
			break;
		js_apierr_done(&err);
		r = submit_one(c, o, a, run, i, &x);
		if (r < 0)
			js_apierr_set_transport(&err, r, "submitting again after Retry-After");
		else
			r = 0;
	}
	if (create && r == JS_EEXISTS) {
		r = owned_existing(c, o, a->name);
		if (r == JS_EEXISTS)
			append_err(msgs, a->name, "exists and is not controlled by this JobSet");
	} else if (!create && r == JS_ENOTFOUND) {
		r = 0; /* already gone */
	} else if (a->kind == JS_ACTION_DELETE_JOB && r == JS_ECONFLICT) {
		r = 0; /* uid precondition: a newer incarnation; ours is gone */
	} else if (r < 0) {
		append_err(msgs, a->name, err.message ? err.message : js_apierr_strerror(r));
	}
	count_action(c, a->kind, r);
	js_apierr_done(&err);
	return r;
}

/* The Warning event a plan asks for when action `a` fails (plan.h
 * fail_reason, e.g. KEP-1150 FailedResourcePropagation). */
static void fail_event(struct js_controller *c, struct observed *o, const struct js_action *a, const char *err)
{
	char *msg = js_buf_format("%s: %s", a->fail_message ? a->fail_message : a->why, err);
	event(c, o, "Warning", a->fail_reason, msg);
	free(msg);
}

/* A patch of spec.suspend that landed: the cache must show it before the
 * next pass (wait_jobs). */
static void note_suspend_patch(struct body *b, const struct js_action *a)
{
	const json_t *s = json_object_get(json_object_get(a->object, "spec"), "suspend");
	if (json_is_true(s))
		b->suspended[b->n_suspended++] = a->name;
	else if (json_is_false(s))
		b->resumed[b->n_resumed++] = a->name;
}

/* Submit every action of a run (all CreateJob, rendered from `run`, all
 * DeleteJob, all DeletePod or all PatchJob) through the sliding window, wait for all, and
 * note what the cache must show before the next reconcile (waited for at the
 * end of the pass).
 * Returns 0 or the first error. */
static int apply_run(struct body *b, const struct js_action *acts, const struct js_exec_run *run, size_t n)
{
	struct js_controller *c = b->c;
	struct observed *o = b->o;
	bool create = acts[0].kind == JS_ACTION_CREATE_JOB;
	struct js_client_xfer **x = js_arena_calloc(b->a, n, sizeof(*x));
	int *submit_err = js_arena_calloc(b->a, n, sizeof(*submit_err));
	size_t sent = 0;
	for (; sent < n && sent < IN_FLIGHT; sent++)
		submit_err[sent] = submit_one(c, o, &acts[sent], run, sent, &x[sent]);
	int first = 0;
	const struct js_action *failed = NULL;
	struct js_buf msgs;
	js_buf_init(&msgs, 16384);
	for (size_t i = 0; i < sent; i++) {
		int r = finish_one(c, o, &acts[i], run, i, x[i], submit_err[i], &msgs);
		if (r < 0 && !failed)
			failed = &acts[i];
		/* Answers come back about in order: the oldest one frees a slot.
		 * After a failure nothing more is sent (the pass stops, SPEC
		 * §11.2); what is in flight is still waited for. */
		if (sent < n && first == 0 && r == 0) {
			submit_err[sent] = submit_one(c, o, &acts[sent], run, sent, &x[sent]);
			sent++;
		}
		/* A delete of a Job we never saw has nothing to wait for. */
		if (r == 0 && create)
			b->created[b->n_created++] = acts[i].name;
		else if (r == 0 && acts[i].kind == JS_ACTION_DELETE_JOB && job_uid(o, acts[i].name))
			b->deleted[b->n_deleted++] = acts[i].name;
		else if (r == 0 && acts[i].kind == JS_ACTION_PATCH_JOB)
			note_suspend_patch(b, &acts[i]);
		if (r < 0 && first == 0)
			first = r;
	}
	const char *kind = js_reconcile_action_kind_name(acts[0].kind);
	if (first < 0 && !aborted(c)) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': %s: %s", o->ns, o->name, kind,
			      js_buf_str(&msgs));
		if (create)
			event(c, o, "Warning", "JobCreationFailed", js_buf_str(&msgs));
		else if (failed && failed->fail_reason)
			fail_event(c, o, failed, js_buf_str(&msgs));
	} else if (first == 0) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_DEBUG, "jobset '%s/%s': %s x%zu", o->ns, o->name, kind, sent);
	}
	js_buf_done(&msgs);
	return first;
}

static int op_create_jobs(void *self, const struct js_action *acts, size_t n, const struct js_exec_run *run)
{
	return apply_run(self, acts, run, n);
}

static int op_delete_jobs(void *self, const struct js_action *acts, size_t n)
{
	return apply_run(self, acts, NULL, n);
}

static int op_patch_jobs(void *self, const struct js_action *acts, size_t n)
{
	return apply_run(self, acts, NULL, n);
}

static int op_delete_pods(void *self, const struct js_action *acts, size_t n)
{
	return apply_run(self, acts, NULL, n);
}

/* ---- one-off actions ---- */

/* What failed, for logs and Warning events. */
static const char *why(const struct js_apierr *err, int r)
{
	return err->message ? err->message : js_apierr_strerror(r);
}

/* Count and log one action's request. */
static int done_one(struct body *b, const struct js_action *a, const char *method, int r, struct js_apierr *err)
{
	struct js_controller *c = b->c;
	count(c, method, r, err, strcmp(method, "POST") == 0 ? 201 : 200);
	count_action(c, a->kind, r);
	if (r < 0 && !aborted(c))
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': %s %s: %s", b->o->ns, b->o->name,
			      js_reconcile_action_kind_name(a->kind), a->name, why(err, r));
	js_apierr_done(err);
	return r;
}

static int op_patch_job(void *self, const struct js_action *a)
{
	struct body *b = self;
	struct js_apierr err = {0};
	struct js_write_opts wo = {.subresource = a->kind == JS_ACTION_PATCH_JOB_STATUS ? "status" : NULL};
	int r = js_client_patch(b->c->client, &js_client_res_jobs, b->o->ns, a->name, JS_PATCH_MERGE, a->object, &wo,
				NULL, &err);
	if (r < 0 && r != JS_ENOTFOUND && a->fail_reason && !aborted(b->c))
		fail_event(b->c, b->o, a, why(&err, r));
	return done_one(b, a, "PATCH", r, &err);
}

static int create_service(struct body *b, const struct js_action *a, struct js_apierr *err)
{
	/* Labelled so that our label-scoped Service cache sees it. */
	json_t *svc = json_deep_copy(a->object);
	json_t *labels = js_json_path_make(svc, "metadata.labels");
	json_object_set_new(labels, JS_LABEL_JOBSET_NAME, json_string(b->o->name));
	int r = js_client_create(b->c->client, &js_client_res_services, b->o->ns, svc, NULL, NULL, err);
	json_decref(svc);
	if (r == JS_EEXISTS)
		return 0; /* SPEC §7: an existing Service, whoever owns it, is used */
	if (r < 0 && !aborted(b->c))
		event(b->c, b->o, "Warning", "HeadlessServiceCreationFailed", why(err, r));
	return r;
}

static int create_pvc(struct body *b, const struct js_action *a, struct js_apierr *err)
{
	int r = js_client_create(b->c->client, &js_client_res_pvcs, b->o->ns, a->object, NULL, NULL, err);
	if (r == JS_EEXISTS)
		return 0; /* SPEC §8: never updated, never adopted */
	if (r < 0 && !aborted(b->c))
		event(b->c, b->o, "Warning", "PVCCreationFailed", why(err, r));
	return r;
}

static int op_apply_other(void *self, const struct js_action *a)
{
	struct body *b = self;
	struct js_apierr err = {0};
	switch (a->kind) {
	case JS_ACTION_CREATE_SERVICE:
		return done_one(b, a, "POST", create_service(b, a, &err), &err);
	case JS_ACTION_CREATE_PVC:
		return done_one(b, a, "POST", create_pvc(b, a, &err), &err);
	case JS_ACTION_DELETE_JOBSET: {
		struct js_delete_opts dopts = {.propagation = js_reconcile_propagation_name(a->propagation),
					       .precondition_uid = b->o->rec->uid};
		int r = js_client_delete(b->c->client, &js_client_res_jobsets, b->o->ns, a->name, &dopts, NULL, &err);
		if (r == JS_ENOTFOUND || r == JS_ECONFLICT)
			r = 0; /* gone, or a newer incarnation that is not ours to delete */
		return done_one(b, a, "DELETE", r, &err);
	}
	case JS_ACTION_CREATE_WORKLOAD:
	case JS_ACTION_CREATE_PODGROUP: {
		const struct js_resource *res =
			a->kind == JS_ACTION_CREATE_WORKLOAD ? &js_client_res_workloads : &js_client_res_podgroups;
		int r = js_client_create(b->c->client, res, b->o->ns, a->object, NULL, NULL, &err);
		if (r == JS_EEXISTS)
			r = 0; /* made by an earlier pass whose answer was lost */
		return done_one(b, a, "POST", r, &err);
	}
	case JS_ACTION_DELETE_WORKLOAD:
	case JS_ACTION_DELETE_PODGROUP: {
		const struct js_resource *res =
			a->kind == JS_ACTION_DELETE_WORKLOAD ? &js_client_res_workloads : &js_client_res_podgroups;
		struct js_delete_opts dopts = {.propagation = "Background"};
		int r = js_client_delete(b->c->client, res, b->o->ns, a->name, &dopts, NULL, &err);
		if (r == JS_ENOTFOUND)
			r = 0;
		return done_one(b, a, "DELETE", r, &err);
	}
	default:
		return JS_EUNSUPPORTED;
	}
}

/* ---- status, events, metrics ---- */

/* Did the status write land although no answer said so? The write is sent
 * once (js_write_opts.once): a reset connection or a lost answer leaves its
 * outcome unknown - repeating it would meet its own resourceVersion change
 * as a conflict, and the restart it carries would then never be counted or
 * announced (issue 13). So the JobSet is read back: it landed when this
 * incarnation moved past the resourceVersion we wrote at and its status
 * already says all we wrote. Returns the object read (caller frees) when it
 * landed, else NULL. */
static json_t *status_landed(struct js_controller *c, const struct observed *o, const json_t *want)
{
	json_t *cur = NULL;
	struct js_apierr err = {0};
	int r = js_client_get(c->client, &js_client_res_jobsets, o->ns, o->name, NULL, &cur, &err);
	count(c, "GET", r, &err, 200);
	js_apierr_done(&err);
	if (r < 0)
		return NULL;
	const json_t *md = json_object_get(cur, "metadata");
	const char *uid = js_json_str(md, "uid"), *rv = js_json_str(md, "resourceVersion");
	bool landed = uid && o->rec->uid && strcmp(uid, o->rec->uid) == 0 && rv && strcmp(rv, o->rec->rv) != 0;
	json_t *diff = landed ? js_json_merge_diff(json_object_get(cur, "status"), want) : NULL;
	if (!landed || diff) {
		json_decref(diff);
		json_decref(cur);
		return NULL;
	}
	return cur;
}

/* Merge patch of the status subresource: only what changed, at the
 * resourceVersion the JobSet was read at. */
static int op_write_status(void *self, const struct js_plan *plan)
{
	struct body *b = self;
	struct js_controller *c = b->c;
	struct observed *o = b->o;
	json_t *want = js_codec_encode_status(plan->status);
	json_t *diff = js_json_merge_diff(o->rec->status, want);
	if (!diff) {
		json_decref(want);
		return 0; /* the stored status already says so */
	}
	/* Before the write: its watch event may come before its answer. */
	js__ctrl_note_written(c, o->rec->key, NULL, want);
	json_t *body = json_pack("{s:{s:s}, s:o}", "metadata", "resourceVersion", o->rec->rv, "status", diff);
	struct js_write_opts wo = {.subresource = "status", .once = true};
	struct js_apierr err = {0};
	json_t *got = NULL;
	int r = js_client_patch(c->client, &js_client_res_jobsets, o->ns, o->name, JS_PATCH_MERGE, body, &wo, &got,
				&err);
	count(c, "PATCH", r, &err, 200);
	json_decref(body);
	if (r < 0 && err.http_code == 0 && !aborted(c)) {
		got = status_landed(c, o, want);
		if (got) {
			js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO,
				      "jobset '%s/%s': status write: %s, but it landed (read back)", o->ns, o->name,
				      why(&err, r));
			r = 0;
		}
	}
	if (r == JS_ECONFLICT) {
		b->conflict = true;
		(void)js_metrics_add(c->metrics, JS__M_STATUS_CONFLICTS, NULL, 1);
	} else if (r < 0) {
		if (!aborted(c))
			js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': status write: %s", o->ns, o->name,
				      why(&err, r));
	} else {
		const char *rv = js_json_str(json_object_get(got, "metadata"), "resourceVersion");
		js__ctrl_note_written(c, o->rec->key, rv, want);
		wait_jobset_rv(c, o, rv);
	}
	json_decref(want);
	json_decref(got);
	js_apierr_done(&err);
	return r;
}

static void op_emit_event(void *self, const struct js_event *e)
{
	struct body *b = self;
	event(b->c, b->o, e->type, e->reason, e->message);
}

static void op_count_metrics(void *self, const struct js_plan *plan)
{
	struct body *b = self;
	struct js_controller *c = b->c;
	const char *v[] = {b->o->name, b->o->ns};
	if (plan->metric_completed > 0)
		(void)js_metrics_add(c->metrics, JS__M_COMPLETED, v, plan->metric_completed);
	if (plan->metric_failed > 0)
		(void)js_metrics_add(c->metrics, JS__M_FAILED, v, plan->metric_failed);
	if (plan->metric_deadline_exceeded > 0)
		(void)js_metrics_add(c->metrics, JS__M_DEADLINE_EXCEEDED, v, plan->metric_deadline_exceeded);
	const struct js_jobset *js = b->o->rec->js;
	int32_t before = js->has_status ? js->status.restarts : 0;
	int32_t after = plan->status ? plan->status->restarts : 0;
	if (after > before)
		(void)js_metrics_add(c->metrics, JS__M_RESTARTS, v, after - before);
	if (!plan->skipped || strcmp(plan->skipped, "deleting") != 0)
		js__phases_observe(c, b->o->rec->key, plan->jobset ? plan->jobset : js, plan);
}

static void op_requeue_after(void *self, int64_t seconds)
{
	struct body *b = self;
	b->has_requeue_after = true;
	b->requeue_after = seconds;
}

static const struct js_exec_ops body_ops = {
	.max_run = 0, /* the whole run through one window */
	.create_jobs = op_create_jobs,
	.delete_jobs = op_delete_jobs,
	.patch_job = op_patch_job,
	.patch_jobs = op_patch_jobs,
	.delete_pods = op_delete_pods,
	.apply_other = op_apply_other,
	.write_status = op_write_status,
	.emit_event = op_emit_event,
	.count_metrics = op_count_metrics,
	.requeue_after = op_requeue_after,
};

/* Restart cleanup "direct" (core/reconcile.h): the pods of older restart
 * attempts that are not Succeeded or Failed, by one label- and
 * field-selected LIST. Pods are not cached (memory: issue 9), and this runs
 * only while the JobSet is restarting. Returns 0 with the pods in *ret
 * (arena `a`), or the error (the pass then fails and is retried: never
 * create blind). */
static int list_old_pods(struct js_controller *c, struct js_arena *a, const struct observed *o,
			 struct js_oldpod **ret, size_t *ret_n)
{
	struct js_buf sel;
	js_buf_init(&sel, 256);
	int r = js_reconcile_old_pods_selector(o->rec->js, &sel);
	struct js_list_opts lo = {.label_selector = js_buf_str(&sel),
				  .field_selector = "status.phase!=Succeeded,status.phase!=Failed"};
	json_t *list = NULL;
	struct js_apierr err = {0};
	if (r == 0)
		r = js_client_list(c->client, &js_client_res_pods, o->ns, &lo, &list, &err);
	count(c, "GET", r, &err, 200); /* a LIST is a GET on the wire */
	if (r < 0 && !aborted(c))
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': listing the pods of older attempts: %s", o->ns,
			      o->name, why(&err, r));
	js_apierr_done(&err);
	js_buf_done(&sel);
	const json_t *items = json_object_get(list, "items");
	size_t n = 0, i;
	json_t *p;
	*ret = js_arena_calloc(a, json_array_size(items) + 1, sizeof(**ret));
	json_array_foreach(items, i, p) {
		const json_t *md = json_object_get(p, "metadata");
		const json_t *lb = json_object_get(md, "labels");
		const char *name = js_json_str(md, "name");
		const char *job = js_json_str(lb, "batch.kubernetes.io/job-name");
		if (!job)
			job = js_json_str(lb, "job-name");
		if (!name)
			continue;
		(*ret)[n++] = (struct js_oldpod){.name = js_arena_strdup(a, name),
						 .job_name = job ? js_arena_strdup(a, job) : NULL,
						 .deleting = js_json_str(md, "deletionTimestamp") != NULL};
	}
	*ret_n = n;
	json_decref(list);
	return r;
}

void js__sync_key(struct js_controller *c, const char *key, struct js_arena *arena, struct js__sync_result *res)
{
	struct observed o = {0};
	memset(res, 0, sizeof(*res));
	int r = observe(c, arena, key, &o);
	if (r <= 0) {
		res->error = r < 0;
		goto out;
	}
	struct js_reconcile_input in = {
		.jobset = o.rec->js,
		/* the cache's records, borrowed as they are: no copy */
		.jobs = (const struct js_obsjob *const *)(const void *)o.jobs,
		.n_jobs = o.n_jobs,
		.service_exists = o.service_exists,
		.pvcs = o.pvcs,
		.n_pvcs = o.n_pvcs,
		.pods = o.ipods,
		.n_pods = o.n_ipods,
		.workload_exists = o.workload_exists,
		.podgroups = o.podgroups,
		.n_podgroups = o.n_podgroups,
		.sched_deleting = o.sched_deleting,
		.gates = c->o.gates,
		.cleanup_direct = c->o.cleanup_direct,
		.now = (int64_t)time(NULL),
	};
	if (c->o.cleanup_direct && js_reconcile_wants_old_pods(o.rec->js)) {
		struct js_oldpod *pods = NULL;
		if (list_old_pods(c, arena, &o, &pods, &in.n_old_pods) < 0) {
			res->error = true;
			goto out;
		}
		in.old_pods = pods;
		in.old_pods_known = true;
	}
	struct js_plan *plan = NULL;
	char *msg = NULL;
	r = js_reconcile_run(&in, &plan, &msg);
	if (r < 0) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_ERROR, "jobset '%s': %s", key, msg ? msg : js_strerror(r));
		free(msg);
		res->error = true;
		goto out;
	}
	if (plan->skipped)
		js__ctrl_logf(c, JS_CONTROLLER_LOG_DEBUG, "jobset '%s': skipped (%s)", key, plan->skipped);
	struct body b = {.c = c, .o = &o, .a = arena};
	b.created = js_arena_calloc(arena, plan->n_actions + 1, sizeof(*b.created));
	b.deleted = js_arena_calloc(arena, plan->n_actions + 1, sizeof(*b.deleted));
	b.suspended = js_arena_calloc(arena, plan->n_actions + 1, sizeof(*b.suspended));
	b.resumed = js_arena_calloc(arena, plan->n_actions + 1, sizeof(*b.resumed));
	size_t failed_at = SIZE_MAX;
	r = js_exec_apply(&body_ops, &b, plan, &failed_at);
	/* Read-your-writes, even after a failed pass: what was written must
	 * show before the next reconcile of this key reads the cache. */
	wait_jobs(c, o.ns, b.created, b.n_created, RW_EXISTS);
	wait_jobs(c, o.ns, b.deleted, b.n_deleted, RW_GONE);
	wait_jobs(c, o.ns, b.suspended, b.n_suspended, RW_SUSPENDED);
	wait_jobs(c, o.ns, b.resumed, b.n_resumed, RW_RESUMED);
	res->error = r < 0;
	res->conflict = b.conflict;
	res->has_requeue_after = b.has_requeue_after;
	res->requeue_after = b.requeue_after;
	js__ctrl_logf(c, JS_CONTROLLER_LOG_DEBUG, "jobset '%s': %zu actions, status %s, %s", key, plan->n_actions,
		      plan->status_changed ? "written" : "unchanged", r == 0 ? "ok" : js_apierr_strerror(r));
	js_reconcile_plan_free(plan);
out:
	observed_done(c, &o);
}
