/*
 * jobset_admit.c - the JobSet admission webhooks mjobset.kb.io and
 * vjobset.kb.io (SPEC §4.2, §5.3, §5.4) over the api layer: decode, then
 * js_default_jobset (answered as a JSON patch) or js_validate_create /
 * js_validate_update (answered as a 422 Invalid Status).
 */
#include <stdlib.h>
#include <string.h>

#include "api/codec.h"
#include "api/defaults.h"
#include "api/render.h"
#include "api/sched.h"
#include "api/validate.h"
#include "base/buf.h"
#include "webhook/jsonpatch.h"
#include "webhook/webhook_int.h"

static bool op_is(const struct js_admission_req *req, const char *op)
{
	return req->operation && strcmp(req->operation, op) == 0;
}

/* The object's name for messages: metadata.name, else the request's name. */
static const char *object_name(const struct js_admission_req *req, const struct js_jobset *js)
{
	const char *n = js ? js_jobset_name(js) : "";
	if (n[0])
		return n;
	return req->name ? req->name : "";
}

/* Decode a JobSet the API server sent. The server has already pruned
 * unknown fields and checked types against the CRD schema, so decoding is
 * lenient; what still fails to decode is answered as 422 Invalid. */
static struct js_jobset *decode(const struct js_admission_req *req, const json_t *obj, struct js_admission_resp *resp)
{
	struct js_diag d = {0};
	struct js_jobset *js = NULL;
	if (!obj) {
		resp->allowed = false;
		resp->status = js_admission_status(400, "BadRequest", "AdmissionReview request has no object");
		return NULL;
	}
	if (js_codec_decode_jobset(obj, JS_CODEC_LENIENT, &d, &js) < 0) {
		resp->allowed = false;
		resp->status = js_admission_status_invalid(JS_API_GROUP, JS_KIND, object_name(req, NULL), &d);
	}
	js_diag_done(&d);
	return js;
}

void js__jobset_admit_mutate(const struct js_webhook_admit_cfg *cfg, const struct js_admission_req *req,
			     struct js_admission_resp *resp)
{
	(void)cfg;
	resp->allowed = true;
	/* Registered for CREATE only (SPEC §4.2); anything else passes untouched
	 * so that re-applying a defaulted object never changes it (#926). */
	if (!op_is(req, "CREATE"))
		return;
	struct js_jobset *js = decode(req, req->object, resp);
	if (!js)
		return;
	json_t *before = js_codec_encode_jobset(js);
	js_default_jobset(js);
	json_t *after = js_codec_encode_jobset(js);
	json_t *patch = js_jsonpatch_diff(before, after);
	/* The diff is taken between two encodings of our model; check that it
	 * applies to the object exactly as the API server sent it, so that a
	 * codec normalisation can never turn into a failing patch. */
	json_t *check = json_deep_copy(req->object);
	if (js_jsonpatch_apply(check, patch) < 0) {
		resp->allowed = false;
		resp->status = js_admission_status(500, "InternalError",
						   "defaulting produced a patch that does not apply to the object");
		json_decref(patch);
	} else {
		resp->patch = patch;
	}
	json_decref(check);
	json_decref(before);
	json_decref(after);
	js_jobset_free(js);
}

void js__jobset_admit_validate(const struct js_webhook_admit_cfg *cfg, const struct js_admission_req *req,
			       struct js_admission_resp *resp)
{
	resp->allowed = true;
	bool create = op_is(req, "CREATE"), update = op_is(req, "UPDATE");
	/* DELETE and CONNECT are never validated (SPEC §5.4). */
	if (!create && !update)
		return;
	struct js_jobset *js = decode(req, req->object, resp);
	if (!js)
		return;
	struct js_jobset *old = NULL;
	if (update && !(old = decode(req, req->old_object, resp))) {
		js_jobset_free(js);
		return;
	}
	struct js_validate_opts vo = {
		.gates = cfg->gates,
		.pvc_lookup = cfg->lookups.pvc_lookup,
		.pvc_ctx = cfg->lookups.ctx,
		.strict = cfg->strict,
	};
	struct js_diag d = {0};
	int r = create ? js_validate_create(js, &vo, &d) : js_validate_update(old, js, &vo, &d);
	if (r < 0 || d.n > 0) {
		resp->allowed = false;
		resp->status = js_admission_status_invalid(JS_API_GROUP, JS_KIND, object_name(req, js), &d);
	}
	/* KEP-969's renamed fields: the old names still work for one release,
	 * and kubectl shows these next to the answer. */
	if (js->spec.scheduling) {
		json_t *w = js_sched_warnings(js);
		if (json_array_size(w) > 0)
			resp->warnings = w;
		else
			json_decref(w);
	}
	js_diag_done(&d);
	js_jobset_free(old);
	js_jobset_free(js);
}
