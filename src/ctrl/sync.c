/*
 * sync.c - one reconcile of one JobSet key (SPEC §11.2, core/reconcile.h):
 * observe from the caches, run the core, apply the plan through the client,
 * write the status, then emit events and count metrics.
 *
 * Observing borrows: the JobSet and its Jobs are the records the informers
 * made at ingest (ctrl/cache.h); a reconcile takes references to them and
 * never decodes or copies them. Jobs are found through the owner-uid index,
 * the Service and the PVCs by key.
 *
 * Applying: actions run in plan order and the first failure stops the pass
 * with no status write. Runs of consecutive CreateJob (or DeleteJob) actions
 * are submitted together and waited for together - the client multiplexes
 * them over HTTP/2 within its rate limit - which is what makes a 1,000-Job
 * JobSet quick; the run still fails as a whole if one of them fails.
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
#include "base/buf.h"
#include "base/json.h"
#include "core/reconcile.h"
#include "ctrl/ctrl_int.h"
#include "ctrl/owner.h"

/* Creates and deletes in flight per run of actions: upstream allows 50
 * (SPEC §6.4), and one HTTP/2 connection carries 100 streams, so more would
 * open extra TLS connections (measured in BENCHMARKS.md). */
#define RUN_MAX 50

/* Observed state of one key: references to cached records. */
struct observed {
	char *ns, *name;
	const struct js_cache_jobset *rec; /* the JobSet, one reference */
	const void **jobs;                 /* its Jobs (struct js_obsjob), one reference each */
	size_t n_jobs;
	struct js_obsjob *flat;            /* shallow copies for the core's input array */
	char **pvcs;
	size_t n_pvcs;
	bool service_exists;
	json_t *regarding;                 /* what events are about (built once, lazily) */
};

static void observed_done(struct js_controller *c, struct observed *o)
{
	free(o->ns);
	free(o->name);
	js_informer_unref(c->jobsets, o->rec);
	js_informer_release(c->jobs, o->jobs, o->n_jobs);
	free(o->flat); /* shallow: the records own the pointers */
	for (size_t i = 0; i < o->n_pvcs; i++)
		free(o->pvcs[i]);
	free(o->pvcs);
	json_decref(o->regarding);
}

static const struct js_obsjob *job_of(const struct observed *o, size_t i)
{
	return o->jobs[i];
}

static const char *job_uid(const struct observed *o, const char *name)
{
	for (size_t i = 0; i < o->n_jobs; i++) {
		if (strcmp(job_of(o, i)->name, name) == 0)
			return job_of(o, i)->uid;
	}
	return NULL;
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
static void observe_pvcs(struct js_controller *c, struct observed *o)
{
	json_t *pvcs = js_render_pvcs(o->rec->js);
	size_t i;
	json_t *p;
	o->pvcs = js_xcalloc(json_array_size(pvcs) + 1, sizeof(char *));
	json_array_foreach(pvcs, i, p)
	{
		const char *name = js_json_str(json_object_get(p, "metadata"), "name");
		if (name && js_informer_has(c->pvcs, o->ns, name))
			o->pvcs[o->n_pvcs++] = js_xstrdup(name);
	}
	json_decref(pvcs);
}

/* Returns 1 when there is a JobSet to reconcile, 0 when it is gone. */
static int observe(struct js_controller *c, const char *key, struct observed *o)
{
	if (js_owner_split_key(key, &o->ns, &o->name) < 0)
		return 0;
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
	o->flat = js_xcalloc(o->n_jobs + 1, sizeof(*o->flat));
	for (size_t i = 0; i < o->n_jobs; i++)
		o->flat[i] = *job_of(o, i);
	if (js_jobset_dns_hostnames(js))
		o->service_exists = js_informer_has(c->services, o->ns, js_jobset_subdomain(js));
	if (js->has_spec && js->spec.n_volume_claim_policies > 0)
		observe_pvcs(c, o);
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
static void wait_jobs(struct js_controller *c, const char *ns, char **names, size_t n, bool gone)
{
	if (c->o.cache_wait_ms < 0 || n == 0)
		return;
	uint64_t dl = deadline_after(c->o.cache_wait_ms);
	size_t done = 0;
	while (done < n && !aborted(c)) {
		uint64_t gen = js_informer_generation(c->jobs);
		while (done < n) {
			const struct js_obsjob *j = js_informer_get(c->jobs, ns, names[done]);
			bool ok = gone ? (!j || j->deleting) : j != NULL;
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

/* ---- apply ---- */

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

struct pending {
	struct js_client_xfer *x;
	int submit_err;
};

static void append_err(struct js_buf *msgs, const char *name, const char *what)
{
	(void)!js_buf_printf(msgs, "%s%s: %s", msgs->len ? "; " : "", name, what);
}

/* The DeleteOptions body of a Job delete: propagation and, when the Job is
 * known, its uid as a precondition. Caller frees. */
static char *delete_body(const struct observed *o, const struct js_action *a)
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

/* Wait for one submitted create/delete and apply the AlreadyExists/NotFound
 * rules. Returns 0 or the error; appends a message for `msgs` on error. */
static int finish_one(struct js_controller *c, const struct observed *o, const struct js_action *a, bool create,
		      struct pending *p, struct js_buf *msgs)
{
	int r = p->submit_err;
	struct js_apierr err = {0};
	if (r == 0) {
		struct js_client_resp resp = {0};
		char why[256] = "";
		r = js_client_xfer_wait(p->x, &resp, why, sizeof(why));
		if (r == 0) {
			js__ctrl_count_request(c, create ? "POST" : "DELETE", resp.code);
			if (resp.code < 200 || resp.code > 299)
				r = js_apierr_decode(resp.code, resp.body, resp.len, resp.retry_after_s, &err);
		} else {
			js__ctrl_count_request(c, create ? "POST" : "DELETE", 0);
			js_apierr_set_transport(&err, r, why);
		}
		js_client_resp_done(&resp);
	}
	if (create && r == JS_EEXISTS) {
		r = owned_existing(c, o, a->name);
		if (r == JS_EEXISTS)
			append_err(msgs, a->name, "exists and is not controlled by this JobSet");
	} else if (!create && r == JS_ENOTFOUND) {
		r = 0; /* already gone */
	} else if (!create && r == JS_ECONFLICT) {
		r = 0; /* uid precondition: a newer incarnation; ours is gone */
	} else if (r < 0) {
		append_err(msgs, a->name, err.message ? err.message : js_apierr_strerror(r));
	}
	count_action(c, a->kind, r);
	js_apierr_done(&err);
	return r;
}

/* Submit every action of a run (all CreateJob with `bodies`, or all
 * DeleteJob), then wait for all. Returns 0 or the first error. */
static int apply_run(struct js_controller *c, struct observed *o, const struct js_action *acts,
		     json_t *const *bodies, size_t n)
{
	bool create = acts[0].kind == JS_ACTION_CREATE_JOB;
	struct pending *p = js_xcalloc(n, sizeof(*p));
	for (size_t i = 0; i < n; i++) {
		const struct js_action *a = &acts[i];
		struct js_buf path;
		js_buf_init(&path, 4096);
		char *body = NULL;
		int r = js_client_path(&js_client_res_jobs, o->ns, create ? NULL : a->name, NULL, &path);
		if (r == 0)
			body = create ? json_dumps(bodies[i], JSON_COMPACT) : delete_body(o, a);
		struct js_client_req req = {
			.method = create ? "POST" : "DELETE",
			.path = js_buf_str(&path),
			.content_type = "application/json",
			.body = body,
			.body_len = body ? strlen(body) : 0,
		};
		/* The client copies path and body at submit. */
		p[i].submit_err = r < 0 ? r : js_client_submit(c->client, &req, &p[i].x);
		free(body);
		js_buf_done(&path);
	}
	int first = 0;
	struct js_buf msgs;
	js_buf_init(&msgs, 16384);
	char **done = js_xcalloc(n, sizeof(char *));
	size_t n_done = 0;
	for (size_t i = 0; i < n; i++) {
		int r = finish_one(c, o, &acts[i], create, &p[i], &msgs);
		if (r == 0 && (create || job_uid(o, acts[i].name)))
			done[n_done++] = acts[i].name;
		if (r < 0 && first == 0)
			first = r;
	}
	enum js_action_kind kind = acts[0].kind;
	if (first < 0) {
		if (!aborted(c))
			js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': %s: %s", o->ns, o->name,
				      js_reconcile_action_kind_name(kind), js_buf_str(&msgs));
		if (create && !aborted(c))
			event(c, o, "Warning", "JobCreationFailed", js_buf_str(&msgs));
	} else {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_DEBUG, "jobset '%s/%s': %s x%zu", o->ns, o->name,
			      js_reconcile_action_kind_name(kind), n);
		wait_jobs(c, o->ns, done, n_done, !create);
	}
	js_buf_done(&msgs);
	free(done);
	free(p);
	return first;
}

static int apply_one(struct js_controller *c, struct observed *o, const struct js_action *a)
{
	struct js_apierr err = {0};
	struct js_write_opts wo = {0};
	int r = JS_EINVALID;
	const char *method = "PATCH";
	switch (a->kind) {
	case JS_ACTION_PATCH_JOB:
		r = js_client_patch(c->client, &js_client_res_jobs, o->ns, a->name, JS_PATCH_MERGE, a->object, &wo, NULL,
				    &err);
		break;
	case JS_ACTION_PATCH_JOB_STATUS:
		wo.subresource = "status";
		r = js_client_patch(c->client, &js_client_res_jobs, o->ns, a->name, JS_PATCH_MERGE, a->object, &wo, NULL,
				    &err);
		break;
	case JS_ACTION_CREATE_SERVICE: {
		/* Labelled so that our label-scoped Service cache sees it. */
		json_t *svc = json_deep_copy(a->object);
		json_t *labels = js_json_path_make(svc, "metadata.labels");
		json_object_set_new(labels, JS_LABEL_JOBSET_NAME, json_string(o->name));
		method = "POST";
		r = js_client_create(c->client, &js_client_res_services, o->ns, svc, &wo, NULL, &err);
		json_decref(svc);
		if (r == JS_EEXISTS)
			r = 0; /* SPEC §7: an existing Service, whoever owns it, is used */
		else if (r < 0 && !aborted(c))
			event(c, o, "Warning", "HeadlessServiceCreationFailed",
			      err.message ? err.message : js_apierr_strerror(r));
		break;
	}
	case JS_ACTION_CREATE_PVC:
		method = "POST";
		r = js_client_create(c->client, &js_client_res_pvcs, o->ns, a->object, &wo, NULL, &err);
		if (r == JS_EEXISTS)
			r = 0; /* SPEC §8: never updated, never adopted */
		else if (r < 0 && !aborted(c))
			event(c, o, "Warning", "PVCCreationFailed", err.message ? err.message : js_apierr_strerror(r));
		break;
	case JS_ACTION_DELETE_JOBSET: {
		method = "DELETE";
		struct js_delete_opts dopts = {.propagation = js_reconcile_propagation_name(a->propagation),
					       .precondition_uid = o->rec->uid};
		r = js_client_delete(c->client, &js_client_res_jobsets, o->ns, a->name, &dopts, NULL, &err);
		if (r == JS_ENOTFOUND || r == JS_ECONFLICT)
			r = 0;
		break;
	}
	case JS_ACTION_CREATE_JOB:
	case JS_ACTION_DELETE_JOB:
	case JS_ACTION__INVALID:
	case JS_ACTION__COUNT:
		break;
	}
	count(c, method, r, &err, strcmp(method, "POST") == 0 ? 201 : 200);
	count_action(c, a->kind, r);
	if (r < 0 && !aborted(c))
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': %s %s: %s", o->ns, o->name,
			      js_reconcile_action_kind_name(a->kind), a->name,
			      err.message ? err.message : js_apierr_strerror(r));
	js_apierr_done(&err);
	return r;
}

static int apply_actions(struct js_controller *c, struct observed *o, const struct js_plan *plan)
{
	size_t i = 0;
	json_t **bodies = js_xcalloc(RUN_MAX, sizeof(*bodies));
	int r = 0;
	while (i < plan->n_actions && r == 0) {
		const struct js_action *a = &plan->actions[i];
		if (a->kind == JS_ACTION_CREATE_JOB || a->kind == JS_ACTION_DELETE_JOB) {
			size_t n = 1;
			/* At most RUN_MAX requests in flight. */
			while (i + n < plan->n_actions && plan->actions[i + n].kind == a->kind && n < RUN_MAX)
				n++;
			for (size_t k = 0; k < n; k++)
				bodies[k] = a[k].object;
			r = apply_run(c, o, a, bodies, n);
			i += n;
		} else {
			r = apply_one(c, o, a);
			i++;
		}
	}
	free(bodies);
	return r; /* SPEC §11.2: the first failure stops the pass, no status write */
}

/* ---- status, events, metrics ---- */

/* Merge patch of the status subresource: only what changed, at the
 * resourceVersion the JobSet was read at. */
static int write_status(struct js_controller *c, struct observed *o, const struct js_plan *plan, bool *conflict)
{
	json_t *want = js_codec_encode_status(plan->status);
	json_t *diff = js_json_merge_diff(o->rec->status, want);
	json_decref(want);
	if (!diff)
		return 0; /* the stored status already says so */
	json_t *body = json_pack("{s:{s:s}, s:o}", "metadata", "resourceVersion", o->rec->rv, "status", diff);
	struct js_write_opts wo = {.subresource = "status"};
	struct js_apierr err = {0};
	json_t *got = NULL;
	int r = js_client_patch(c->client, &js_client_res_jobsets, o->ns, o->name, JS_PATCH_MERGE, body, &wo, &got,
				&err);
	count(c, "PATCH", r, &err, 200);
	json_decref(body);
	if (r == JS_ECONFLICT) {
		*conflict = true;
		(void)js_metrics_add(c->metrics, JS__M_STATUS_CONFLICTS, NULL, 1);
	} else if (r < 0) {
		if (!aborted(c))
			js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': status write: %s", o->ns, o->name,
				      err.message ? err.message : js_apierr_strerror(r));
	} else {
		const char *rv = js_json_str(json_object_get(got, "metadata"), "resourceVersion");
		if (rv)
			js__ctrl_note_written(c, o->rec->key, rv);
		wait_jobset_rv(c, o, rv);
	}
	json_decref(got);
	js_apierr_done(&err);
	return r;
}

static void after_write(struct js_controller *c, struct observed *o, const struct js_plan *plan)
{
	for (size_t i = 0; i < plan->n_events; i++) {
		const struct js_event *e = &plan->events[i];
		event(c, o, e->type, e->reason, e->message);
	}
	const char *v[] = {o->name, o->ns};
	if (plan->metric_completed > 0)
		(void)js_metrics_add(c->metrics, JS__M_COMPLETED, v, plan->metric_completed);
	if (plan->metric_failed > 0)
		(void)js_metrics_add(c->metrics, JS__M_FAILED, v, plan->metric_failed);
	const struct js_jobset *js = o->rec->js;
	int32_t before = js->has_status ? js->status.restarts : 0;
	int32_t after = plan->status ? plan->status->restarts : 0;
	if (after > before)
		(void)js_metrics_add(c->metrics, JS__M_RESTARTS, v, after - before);
}

void js__sync_key(struct js_controller *c, const char *key, struct js__sync_result *res)
{
	struct observed o = {0};
	memset(res, 0, sizeof(*res));
	int r = observe(c, key, &o);
	if (r <= 0) {
		res->error = r < 0;
		goto out;
	}
	struct js_reconcile_input in = {
		.jobset = o.rec->js,
		.jobs = o.flat,
		.n_jobs = o.n_jobs,
		.service_exists = o.service_exists,
		.pvcs = (const char *const *)o.pvcs,
		.n_pvcs = o.n_pvcs,
		.gates = c->o.gates,
		.now = (int64_t)time(NULL),
	};
	struct js_plan *plan = NULL;
	char *msg = NULL;
	r = js_reconcile_run(&in, &plan, &msg);
	if (r < 0) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_ERROR, "jobset '%s': %s", key, msg ? msg : js_strerror(r));
		free(msg);
		res->error = true;
		goto out;
	}
	if (plan->skipped) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_DEBUG, "jobset '%s': skipped (%s)", key, plan->skipped);
	}
	r = apply_actions(c, &o, plan);
	if (r == 0 && plan->status_changed)
		r = write_status(c, &o, plan, &res->conflict);
	if (r == 0) {
		after_write(c, &o, plan);
		res->has_requeue_after = plan->has_requeue_after;
		res->requeue_after = plan->requeue_after;
	} else {
		res->error = true;
	}
	js__ctrl_logf(c, JS_CONTROLLER_LOG_DEBUG, "jobset '%s': %zu actions, status %s, %s", key, plan->n_actions,
		      plan->status_changed ? "written" : "unchanged", r == 0 ? "ok" : js_apierr_strerror(r));
	js_reconcile_plan_free(plan);
out:
	observed_done(c, &o);
}
