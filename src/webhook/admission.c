/*
 * admission.c - AdmissionReview v1 decode/encode and rejection Statuses (see
 * admission.h).
 */
#include "webhook/admission.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/limits.h"

/* Appends whose buffers have ceilings far above anything bounded input
 * can produce; a truncated message is still a message. */
static void best_effort(int r)
{
	(void)r;
}

#define REVIEW_API_VERSION "admission.k8s.io/v1"

static char *dup_str(const json_t *o, const char *key)
{
	const char *s = js_json_str(o, key);
	return s ? js_xstrdup(s) : NULL;
}

static json_t *ref_obj(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_object(v) ? json_incref(v) : NULL;
}

int js_admission_decode(const json_t *review, struct js_admission_req *ret, char **ret_err)
{
	const char *why = NULL;
	const json_t *req = json_object_get(review, "request");
	const char *av = js_json_str(review, "apiVersion");
	if (!json_is_object(review))
		why = "body is not a JSON object";
	else if (!av || strcmp(av, REVIEW_API_VERSION) != 0)
		why = "apiVersion must be " REVIEW_API_VERSION;
	else if (!js_json_str(review, "kind") || strcmp(js_json_str(review, "kind"), "AdmissionReview") != 0)
		why = "kind must be AdmissionReview";
	else if (!json_is_object(req))
		why = "AdmissionReview has no request";
	else if (!js_json_str(req, "uid") || !js_json_str(req, "uid")[0])
		why = "AdmissionReview request has no uid";
	if (why) {
		if (ret_err)
			*ret_err = js_xstrdup(why);
		return JS_EINVALID;
	}
	struct js_admission_req r = {0};
	r.api_version = js_xstrdup(av);
	r.uid = dup_str(req, "uid");
	const json_t *kind = json_object_get(req, "kind");
	r.group = dup_str(kind, "group");
	r.version = dup_str(kind, "version");
	r.kind = dup_str(kind, "kind");
	r.resource = dup_str(json_object_get(req, "resource"), "resource");
	r.subresource = dup_str(req, "subResource");
	r.operation = dup_str(req, "operation");
	r.name = dup_str(req, "name");
	r.namespace_ = dup_str(req, "namespace");
	r.dry_run = json_is_true(json_object_get(req, "dryRun"));
	r.object = ref_obj(req, "object");
	r.old_object = ref_obj(req, "oldObject");
	*ret = r;
	return 0;
}

void js_admission_req_done(struct js_admission_req *r)
{
	if (!r)
		return;
	free(r->api_version);
	free(r->uid);
	free(r->group);
	free(r->version);
	free(r->kind);
	free(r->resource);
	free(r->subresource);
	free(r->operation);
	free(r->name);
	free(r->namespace_);
	json_decref(r->object);
	json_decref(r->old_object);
	memset(r, 0, sizeof(*r));
}

void js_admission_resp_done(struct js_admission_resp *r)
{
	if (!r)
		return;
	json_decref(r->patch);
	json_decref(r->status);
	json_decref(r->warnings);
	memset(r, 0, sizeof(*r));
}

char *js_admission_base64(const void *data, size_t n)
{
	static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = data;
	char *out = js_xmalloc((n + 2) / 3 * 4 + 1);
	size_t o = 0, i = 0;
	for (; i + 2 < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
		out[o++] = tbl[v >> 18 & 63];
		out[o++] = tbl[v >> 12 & 63];
		out[o++] = tbl[v >> 6 & 63];
		out[o++] = tbl[v & 63];
	}
	if (i < n) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0);
		out[o++] = tbl[v >> 18 & 63];
		out[o++] = tbl[v >> 12 & 63];
		out[o++] = i + 1 < n ? tbl[v >> 6 & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	return out;
}

json_t *js_admission_encode(const struct js_admission_req *req, const struct js_admission_resp *resp)
{
	json_t *r = json_object();
	json_object_set_new(r, "uid", json_string(req->uid ? req->uid : ""));
	json_object_set_new(r, "allowed", json_boolean(resp->allowed));
	if (resp->patch && json_array_size(resp->patch) > 0) {
		char *text = json_dumps(resp->patch, JSON_COMPACT);
		char *b64 = js_admission_base64(text, strlen(text));
		json_object_set_new(r, "patchType", json_string("JSONPatch"));
		json_object_set_new(r, "patch", json_string(b64));
		free(b64);
		free(text);
	}
	if (resp->status)
		json_object_set(r, "status", resp->status);
	if (resp->warnings && json_array_size(resp->warnings) > 0)
		json_object_set(r, "warnings", resp->warnings);
	json_t *review = json_object();
	json_object_set_new(review, "apiVersion",
			    json_string(req->api_version ? req->api_version : REVIEW_API_VERSION));
	json_object_set_new(review, "kind", json_string("AdmissionReview"));
	json_object_set_new(review, "response", r);
	return review;
}

static const char *const cause_types[JS_DIAG__COUNT] = {
	[JS_DIAG_REQUIRED] = "FieldValueRequired",
	[JS_DIAG_INVALID] = "FieldValueInvalid",
	[JS_DIAG_NOT_SUPPORTED] = "FieldValueNotSupported",
	[JS_DIAG_DUPLICATE] = "FieldValueDuplicate",
	[JS_DIAG_TOO_LONG] = "FieldValueTooLong",
	[JS_DIAG_TOO_MANY] = "FieldValueTooMany",
	[JS_DIAG_FORBIDDEN] = "FieldValueForbidden",
	[JS_DIAG_INTERNAL] = "InternalError",
	[JS_DIAG_UNKNOWN_FIELD] = "FieldValueNotFound",
	[JS_DIAG_TYPE] = "FieldValueTypeInvalid",
	[JS_DIAG_SYNTAX] = "FieldValueInvalid",
	[JS_DIAG_LIMIT] = "FieldValueTooLong",
};

const char *js_admission_cause_type(enum js_diag_type t)
{
	if (t < 0 || t >= JS_DIAG__COUNT)
		return "FieldValueInvalid";
	return cause_types[t];
}

json_t *js_admission_status(int code, const char *reason, const char *message)
{
	json_t *st = json_object();
	json_object_set_new(st, "metadata", json_object());
	json_object_set_new(st, "status", json_string("Failure"));
	json_object_set_new(st, "message", json_string(message ? message : ""));
	json_object_set_new(st, "reason", json_string(reason ? reason : ""));
	json_object_set_new(st, "code", json_integer(code));
	return st;
}

/* One error as Kubernetes renders it: "<path>: <Type>: <value>: <detail>",
 * with "<nil>" for an error without a field. Positions are never shown: the
 * API server's caller has no file. */
static void format_entry(const struct js_diag_entry *e, bool with_path, struct js_buf *out)
{
	struct js_diag_entry bare = *e;
	bare.file = NULL;
	bare.line = bare.col = 0;
	if (!with_path)
		bare.path = (char *)"";
	best_effort(js_diag_format(&bare, with_path, out));
}

json_t *js_admission_status_invalid(const char *group, const char *kind, const char *name, const struct js_diag *d)
{
	struct js_buf msg, one;
	js_buf_init(&msg, JS_LIMIT_DIAG_MSG * 64u);
	js_buf_init(&one, JS_LIMIT_DIAG_MSG * 2u);
	json_t *causes = json_array();
	json_t *seen = json_object(); /* messages already in the aggregate, as Kubernetes de-duplicates */
	size_t shown = 0;
	best_effort(js_buf_printf(&msg, "%s.%s \"%s\" is invalid: ", kind, group, name ? name : ""));
	size_t head = msg.len;
	for (size_t i = 0; i < d->n; i++) {
		const struct js_diag_entry *e = &d->items[i];
		js_buf_clear(&one);
		format_entry(e, true, &one);
		if (!json_object_get(seen, js_buf_str(&one))) {
			json_object_set_new(seen, js_buf_str(&one), json_true());
			best_effort(js_buf_puts(&msg, shown ? ", " : ""));
			best_effort(js_buf_puts(&msg, js_buf_str(&one)));
			shown++;
		}
		js_buf_clear(&one);
		format_entry(e, false, &one);
		json_t *c = json_object();
		json_object_set_new(c, "reason", json_string(js_admission_cause_type(e->type)));
		json_object_set_new(c, "message", json_string(js_buf_str(&one)));
		json_object_set_new(c, "field", json_string(e->path[0] ? e->path : "<nil>"));
		json_array_append_new(causes, c);
	}
	if (shown > 1) {
		/* Several errors are bracketed: "is invalid: [e1, e2]". */
		struct js_buf b;
		js_buf_init(&b, msg.max + 2);
		best_effort(js_buf_add(&b, msg.p, head));
		best_effort(js_buf_puts(&b, "["));
		best_effort(js_buf_puts(&b, msg.p + head));
		best_effort(js_buf_puts(&b, "]"));
		js_buf_done(&msg);
		msg = b;
	}
	json_t *st = js_admission_status(422, "Invalid", js_buf_str(&msg));
	json_t *details = json_object();
	json_object_set_new(details, "name", json_string(name ? name : ""));
	json_object_set_new(details, "group", json_string(group));
	json_object_set_new(details, "kind", json_string(kind));
	json_object_set_new(details, "causes", causes);
	json_object_set_new(st, "details", details);
	json_decref(seen);
	js_buf_done(&one);
	js_buf_done(&msg);
	return st;
}
