/*
 * sync.c - one reconcile of one JobSet key (SPEC §11.2, core/reconcile.h):
 * observe from the caches, run the core, apply the plan through the client,
 * write the status, then emit events and count metrics.
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

/* kube/client.h has no PersistentVolumeClaim resource (yet). */
static const struct js_resource res_pvcs = {"", "v1", "persistentvolumeclaims", true};

/* Observed state of one key, owned. */
struct observed {
	char *ns, *name;
	json_t *obj;           /* the cached JobSet */
	struct js_jobset *js;  /* decoded */
	const struct js_obsjob **jobs;
	size_t n_jobs;
	char **pvcs;
	size_t n_pvcs;
	bool service_exists;
};

static void observed_done(struct observed *o)
{
	free(o->ns);
	free(o->name);
	json_decref(o->obj);
	js_jobset_free(o->js);
	for (size_t i = 0; i < o->n_jobs; i++)
		js_job_unref(o->jobs[i]);
	free(o->jobs);
	for (size_t i = 0; i < o->n_pvcs; i++)
		free(o->pvcs[i]);
	free(o->pvcs);
}

static const char *job_uid(const struct observed *o, const char *name)
{
	for (size_t i = 0; i < o->n_jobs; i++) {
		if (strcmp(o->jobs[i]->name, name) == 0)
			return o->jobs[i]->uid;
	}
	return NULL;
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

static int observe_pvcs(struct js_controller *c, struct observed *o)
{
	json_t *pvcs = js_render_pvcs(o->js);
	size_t i;
	json_t *p;
	int r = 0;
	o->pvcs = js_xcalloc(json_array_size(pvcs) + 1, sizeof(char *));
	json_array_foreach(pvcs, i, p)
	{
		const char *name = js_json_str(json_object_get(p, "metadata"), "name");
		if (!name)
			continue;
		struct js_apierr err = {0};
		json_t *got = NULL;
		r = js_client_get(c->client, &res_pvcs, o->ns, name, NULL, &got, &err);
		count(c, "GET", r, &err, 200);
		js_apierr_done(&err);
		json_decref(got);
		if (r == 0)
			o->pvcs[o->n_pvcs++] = js_xstrdup(name);
		else if (r == JS_ENOTFOUND)
			r = 0;
		else
			break;
	}
	json_decref(pvcs);
	return r;
}

/* Returns 1 when there is a JobSet to reconcile, 0 when it is gone, or an
 * error. */
static int observe(struct js_controller *c, const char *key, struct observed *o)
{
	if (js_owner_split_key(key, &o->ns, &o->name) < 0)
		return 0;
	o->obj = js_informer_get(c->jobsets, o->ns, o->name);
	if (!o->obj)
		return 0; /* R1: gone; its children go by garbage collection */
	struct js_diag d = {0};
	int r = js_codec_decode_jobset(o->obj, JS_CODEC_LENIENT, &d, &o->js);
	if (r < 0) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_ERROR, "jobset '%s': cannot decode: %s, ignoring", key,
			      d.n ? d.items[0].message : js_strerror(r));
		js_diag_done(&d);
		return 0;
	}
	js_diag_done(&d);
	const char *uid = o->js->meta.uid;
	json_t *jobs = uid ? js_informer_by_index(c->jobs, JS__CTRL_INDEX_OWNER, uid) : json_array();
	o->jobs = js_xcalloc(json_array_size(jobs) + 1, sizeof(*o->jobs));
	size_t i;
	json_t *j;
	json_array_foreach(jobs, i, j)
	{
		const struct js_obsjob *rec = js_job_from_json(j, NULL);
		if (rec)
			o->jobs[o->n_jobs++] = rec;
	}
	json_decref(jobs);
	if (js_jobset_dns_hostnames(o->js)) {
		json_t *svc = js_informer_get(c->services, o->ns, js_jobset_subdomain(o->js));
		o->service_exists = svc != NULL;
		json_decref(svc);
	}
	if (o->js->has_spec && o->js->spec.n_volume_claim_policies > 0) {
		r = observe_pvcs(c, o);
		if (r < 0)
			return r;
	}
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
static void wait_jobs(struct js_controller *c, const char *ns, const char *const *names, size_t n, bool gone)
{
	if (c->o.cache_wait_ms < 0 || n == 0)
		return;
	uint64_t dl = deadline_after(c->o.cache_wait_ms);
	size_t done = 0;
	while (done < n) {
		uint64_t gen = js_informer_generation(c->jobs);
		while (done < n) {
			json_t *j = js_informer_get(c->jobs, ns, names[done]);
			bool ok = gone ? (!j || js_json_path(j, "metadata.deletionTimestamp")) : j != NULL;
			json_decref(j);
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
	for (;;) {
		uint64_t gen = js_informer_generation(c->jobsets);
		json_t *cur = js_informer_get(c->jobsets, o->ns, o->name);
		const char *crv = js_json_str(json_object_get(cur, "metadata"), "resourceVersion");
		bool ok = !cur || (crv && strcmp(crv, rv) == 0);
		json_decref(cur);
		if (ok || left_ms(dl) == 0 || js_informer_wait_change(c->jobsets, gen, left_ms(dl)) < 0)
			return;
	}
}

/* ---- apply ---- */

static void warn_event(struct js_controller *c, const struct observed *o, const char *reason, const char *msg)
{
	int r = js_recorder_eventf(c->rec, o->obj, "Warning", reason, "Reconciling", "%s", msg);
	if (r < 0)
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': event %s: %s, ignoring", o->ns, o->name,
			      reason, js_apierr_strerror(r));
}

/* An existing object named like one we create: ours iff its controller
 * owner is this JobSet's uid (#1165). Cache first, then the API. */
static int owned_existing(struct js_controller *c, const struct observed *o, const struct js_resource *res,
			  struct js_informer *cache, const char *name)
{
	json_t *obj = cache ? js_informer_get(cache, o->ns, name) : NULL;
	if (!obj) {
		struct js_apierr err = {0};
		int r = js_client_get(c->client, res, o->ns, name, NULL, &obj, &err);
		count(c, "GET", r, &err, 200);
		js_apierr_done(&err);
		if (r == JS_ENOTFOUND)
			return -EAGAIN; /* deleted meanwhile: create again next pass */
		if (r < 0)
			return r;
	}
	const char *uid = js_owner_jobset_uid(obj);
	bool ours = uid && o->js->meta.uid && strcmp(uid, o->js->meta.uid) == 0;
	json_decref(obj);
	return ours ? 0 : JS_EEXISTS;
}

struct pending {
	struct js_client_xfer *x;
	const struct js_action *a;
	int submit_err;
};

static void append_err(struct js_buf *msgs, const char *name, const char *what)
{
	(void)!js_buf_printf(msgs, "%s%s: %s", msgs->len ? "; " : "", name, what);
}

/* Submit every action of a run (all CreateJob or all DeleteJob), then wait
 * for all. Returns 0 or the first error. */
static int apply_run(struct js_controller *c, const struct observed *o, const struct js_plan *plan,
		     const struct js_action *acts, size_t n)
{
	enum js_action_kind kind = acts[0].kind;
	bool create = kind == JS_ACTION_CREATE_JOB;
	struct pending *p = js_xcalloc(n, sizeof(*p));
	char **bodies = js_xcalloc(n, sizeof(char *));
	char **paths = js_xcalloc(n, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		const struct js_action *a = &acts[i];
		struct js_buf path;
		js_buf_init(&path, 4096);
		int r = js_client_path(&js_client_res_jobs, o->ns, create ? NULL : a->name, NULL, &path);
		if (r == 0 && !create) {
			json_t *opts = json_pack("{s:s, s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1",
						 "propagationPolicy", js_reconcile_propagation_name(a->propagation));
			const char *uid = job_uid(o, a->name);
			if (uid)
				json_object_set_new(opts, "preconditions", json_pack("{s:s}", "uid", uid));
			bodies[i] = json_dumps(opts, JSON_COMPACT);
			json_decref(opts);
		} else if (r == 0) {
			json_t *job = js_plan_render_job(plan, a);
			bodies[i] = json_dumps(job, JSON_COMPACT);
			json_decref(job);
		}
		paths[i] = js_buf_take(&path);
		p[i].a = a;
		struct js_client_req req = {
			.method = create ? "POST" : "DELETE",
			.path = paths[i],
			.content_type = "application/json",
			.body = bodies[i],
			.body_len = bodies[i] ? strlen(bodies[i]) : 0,
		};
		p[i].submit_err = r < 0 ? r : js_client_submit(c->client, &req, &p[i].x);
	}
	int first = 0;
	struct js_buf msgs;
	js_buf_init(&msgs, 16384);
	const char **created = js_xcalloc(n, sizeof(char *));
	size_t n_created = 0;
	for (size_t i = 0; i < n; i++) {
		const struct js_action *a = p[i].a;
		int r = p[i].submit_err;
		struct js_apierr err = {0};
		if (r == 0) {
			struct js_client_resp resp = {0};
			char why[256] = "";
			r = js_client_xfer_wait(p[i].x, &resp, why, sizeof(why));
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
			r = owned_existing(c, o, &js_client_res_jobs, c->jobs, a->name);
			if (r == JS_EEXISTS)
				append_err(&msgs, a->name, "exists and is not controlled by this JobSet");
		} else if (!create && r == JS_ENOTFOUND) {
			r = 0; /* already gone */
		} else if (!create && r == JS_ECONFLICT) {
			r = 0; /* uid precondition: a newer incarnation; ours is gone */
		} else if (r < 0) {
			append_err(&msgs, a->name, err.message ? err.message : js_apierr_strerror(r));
		}
		if (r == 0 && (create || job_uid(o, a->name)))
			created[n_created++] = a->name;
		count_action(c, kind, r);
		js_apierr_done(&err);
		if (r < 0 && first == 0)
			first = r;
		free(bodies[i]);
		free(paths[i]);
	}
	if (first < 0) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': %s: %s", o->ns, o->name,
			      js_reconcile_action_kind_name(kind), js_buf_str(&msgs));
		if (create)
			warn_event(c, o, "JobCreationFailed", js_buf_str(&msgs));
	} else {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_DEBUG, "jobset '%s/%s': %s x%zu", o->ns, o->name,
			      js_reconcile_action_kind_name(kind), n);
		wait_jobs(c, o->ns, created, n_created, !create);
	}
	js_buf_done(&msgs);
	free(created);
	free(bodies);
	free(paths);
	free(p);
	return first;
}

static int apply_one(struct js_controller *c, const struct observed *o, const struct js_action *a)
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
		else if (r < 0)
			warn_event(c, o, "HeadlessServiceCreationFailed", err.message ? err.message : js_apierr_strerror(r));
		break;
	}
	case JS_ACTION_CREATE_PVC:
		method = "POST";
		r = js_client_create(c->client, &res_pvcs, o->ns, a->object, &wo, NULL, &err);
		if (r == JS_EEXISTS)
			r = 0;
		else if (r < 0)
			warn_event(c, o, "PVCCreationFailed", err.message ? err.message : js_apierr_strerror(r));
		break;
	case JS_ACTION_DELETE_JOBSET: {
		method = "DELETE";
		struct js_delete_opts dopts = {.propagation = js_reconcile_propagation_name(a->propagation),
					       .precondition_uid = o->js->meta.uid};
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
	if (r < 0)
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': %s %s: %s", o->ns, o->name,
			      js_reconcile_action_kind_name(a->kind), a->name,
			      err.message ? err.message : js_apierr_strerror(r));
	js_apierr_done(&err);
	return r;
}

static int apply_actions(struct js_controller *c, const struct observed *o, const struct js_plan *plan)
{
	size_t i = 0;
	while (i < plan->n_actions) {
		const struct js_action *a = &plan->actions[i];
		int r;
		if (a->kind == JS_ACTION_CREATE_JOB || a->kind == JS_ACTION_DELETE_JOB) {
			size_t n = 1;
			/* At most RUN_MAX requests in flight. */
			while (i + n < plan->n_actions && plan->actions[i + n].kind == a->kind && n < RUN_MAX)
				n++;
			r = apply_run(c, o, plan, a, n);
			i += n;
		} else {
			r = apply_one(c, o, a);
			i++;
		}
		if (r < 0)
			return r; /* SPEC §11.2: stop, no status write */
	}
	return 0;
}

/* ---- status, events, metrics ---- */

static int write_status(struct js_controller *c, const struct observed *o, const struct js_plan *plan, bool *conflict)
{
	json_t *body = json_deep_copy(o->obj);
	json_object_set_new(body, "status", js_codec_encode_status(plan->status));
	struct js_write_opts wo = {.subresource = "status"};
	struct js_apierr err = {0};
	json_t *got = NULL;
	int r = js_client_update(c->client, &js_client_res_jobsets, o->ns, body, &wo, &got, &err);
	count(c, "PUT", r, &err, 200);
	json_decref(body);
	if (r == JS_ECONFLICT) {
		*conflict = true;
		(void)js_metrics_add(c->metrics, JS__M_STATUS_CONFLICTS, NULL, 1);
	} else if (r < 0) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': status write: %s", o->ns, o->name,
			      err.message ? err.message : js_apierr_strerror(r));
	} else {
		wait_jobset_rv(c, o, js_json_str(json_object_get(got, "metadata"), "resourceVersion"));
	}
	json_decref(got);
	js_apierr_done(&err);
	return r;
}

static void after_write(struct js_controller *c, const struct observed *o, const struct js_plan *plan)
{
	for (size_t i = 0; i < plan->n_events; i++) {
		const struct js_event *e = &plan->events[i];
		int r = js_recorder_eventf(c->rec, o->obj, e->type, e->reason, "Reconciling", "%s", e->message);
		if (r < 0)
			js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': event %s: %s, ignoring", o->ns,
				      o->name, e->reason, js_apierr_strerror(r));
	}
	const char *v[] = {o->name, o->ns};
	if (plan->metric_completed > 0)
		(void)js_metrics_add(c->metrics, JS__M_COMPLETED, v, plan->metric_completed);
	if (plan->metric_failed > 0)
		(void)js_metrics_add(c->metrics, JS__M_FAILED, v, plan->metric_failed);
	int32_t before = o->js->has_status ? o->js->status.restarts : 0;
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
		.jobset = o.js,
		.jobs = o.jobs,
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
	observed_done(&o);
}
