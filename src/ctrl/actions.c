/*
 * actions.c - the one-off actions of a plan (ctrl/sync_int.h), one request
 * each: the headless Service and the PVCs (used when they exist, whoever
 * made them: SPEC §7, §8), KEP-969's Workload and PodGroups, the JobSet's
 * own delete (uid precondition), and single merge patches of a Job or its
 * status. Each is counted and, when it fails, logged.
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "ctrl/sync_int.h"

/* Count and log one action's request. */
static int done_one(struct js__body *b, const struct js_action *a, const char *method, int r, struct js_apierr *err)
{
	struct js_controller *c = b->c;
	js__count(c, method, r, err, strcmp(method, "POST") == 0 ? 201 : 200);
	js__count_action(c, a->kind, r);
	if (r < 0 && !js__aborted(c))
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': %s %s: %s", b->o->ns, b->o->name,
			      js_reconcile_action_kind_name(a->kind), a->name, js__why(err, r));
	js_apierr_done(err);
	return r;
}

int js__actions_patch_job(struct js__body *b, const struct js_action *a)
{
	struct js_apierr err = {0};
	struct js_write_opts wo = {.subresource = a->kind == JS_ACTION_PATCH_JOB_STATUS ? "status" : NULL};
	int r = js_client_patch(b->c->client, &js_client_res_jobs, b->o->ns, a->name, JS_PATCH_MERGE, a->object, &wo,
				NULL, &err);
	if (r < 0 && r != JS_ENOTFOUND && a->fail_reason && !js__aborted(b->c)) {
		char *why = js_buf_format("%s: %s", a->name, js__why(&err, r));
		js__fail_event(b->c, b->o, a, why);
		free(why);
	}
	return done_one(b, a, "PATCH", r, &err);
}

static int create_service(struct js__body *b, const struct js_action *a, struct js_apierr *err)
{
	/* Labelled so that our label-scoped Service cache sees it. */
	json_t *svc = json_deep_copy(a->object);
	json_t *labels = js_json_path_make(svc, "metadata.labels");
	json_object_set_new(labels, JS_LABEL_JOBSET_NAME, json_string(b->o->name));
	int r = js_client_create(b->c->client, &js_client_res_services, b->o->ns, svc, NULL, NULL, err);
	json_decref(svc);
	if (r == JS_EEXISTS)
		return 0; /* SPEC §7: an existing Service, whoever owns it, is used */
	if (r < 0 && !js__aborted(b->c))
		js__event(b->c, b->o, "Warning", "HeadlessServiceCreationFailed", js__why(err, r));
	return r;
}

static int create_pvc(struct js__body *b, const struct js_action *a, struct js_apierr *err)
{
	int r = js_client_create(b->c->client, &js_client_res_pvcs, b->o->ns, a->object, NULL, NULL, err);
	if (r == JS_EEXISTS)
		return 0; /* SPEC §8: never updated, never adopted */
	if (r < 0 && !js__aborted(b->c))
		js__event(b->c, b->o, "Warning", "PVCCreationFailed", js__why(err, r));
	return r;
}

int js__actions_apply_other(struct js__body *b, const struct js_action *a)
{
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
