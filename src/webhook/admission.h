/*
 * admission.h - the admission.k8s.io/v1 AdmissionReview codec: decode the
 * request the API server sends to a webhook, encode the response it expects
 * back (SPEC §12.5), and build the metav1.Status of a rejection.
 *
 * A validation rejection is a 422 `Invalid` Status for the object's kind,
 * with message `<Kind>.<group> "<name>" is invalid: <errors>` and one
 * `details.causes` entry per error, each with the error's field path and
 * Kubernetes cause type (SPEC §5.1.7); a denial is a plain Status with a
 * code (403 unless the error carries another). Mutations travel as an RFC
 * 6902 patch, base64 in `response.patch` with `patchType: JSONPatch`. Pure.
 */
#ifndef JS_ADMISSION_H
#define JS_ADMISSION_H

#include <jansson.h>
#include <stdbool.h>

#include "base/common.h"
#include "base/diag.h"

/** The parts of an AdmissionRequest the handlers read. Strings are NULL when
 * absent; objects are new references (json_decref by js_admission_req_done). */
struct js_admission_req {
	char *api_version;  /* of the review: "admission.k8s.io/v1" */
	char *uid;          /* request.uid, echoed in the response */
	char *group, *version, *kind; /* request.kind */
	char *resource;     /* request.resource.resource ("jobsets", "pods") */
	char *subresource;  /* request.subResource, or NULL */
	char *operation;    /* CREATE, UPDATE, DELETE, CONNECT */
	char *name;         /* request.name (may be empty for generateName) */
	char *namespace_;   /* request.namespace */
	bool dry_run;
	json_t *object;     /* request.object, or NULL */
	json_t *old_object; /* request.oldObject, or NULL */
};

/** What a handler decided. Zero-initialise; js_admission_resp_done frees. */
struct js_admission_resp {
	bool allowed;
	json_t *patch;    /* JSON array of patch operations, or NULL (none) */
	json_t *status;   /* metav1.Status for a rejection (or a note), or NULL */
	json_t *warnings; /* JSON array of strings, or NULL */
};

/**
 * Decode an AdmissionReview. Returns 0 and fills *ret (free with
 * js_admission_req_done), or JS_EINVALID when `review` is not an
 * AdmissionReview v1 request with a uid; then *ret_err (may be NULL) gets a
 * malloc'd reason.
 */
JS_WARN_UNUSED int js_admission_decode(const json_t *review, struct js_admission_req *ret, char **ret_err);

void js_admission_req_done(struct js_admission_req *r);
void js_admission_resp_done(struct js_admission_resp *r);

/**
 * Encode the response AdmissionReview for `req` (its uid and apiVersion are
 * echoed). An empty patch array is left out. Returns a new reference.
 */
json_t *js_admission_encode(const struct js_admission_req *req, const struct js_admission_resp *resp);

/**
 * The 422 Status for validation errors `d` on object `name` of `kind` in
 * `group` (SPEC §5.1.7). Returns a new reference.
 */
json_t *js_admission_status_invalid(const char *group, const char *kind, const char *name, const struct js_diag *d);

/** A Status with `code`, `reason` (e.g. "Forbidden", "BadRequest") and
 * `message`. Returns a new reference. */
json_t *js_admission_status(int code, const char *reason, const char *message);

/** Kubernetes cause type of a diagnostic type ("FieldValueInvalid", ...). */
const char *js_admission_cause_type(enum js_diag_type t);

/** Standard base64 of `n` bytes; caller frees. */
char *js_admission_base64(const void *data, size_t n);

#endif
