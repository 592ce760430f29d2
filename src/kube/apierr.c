/*
 * apierr.c - decode Kubernetes Status objects into error codes (apierr.h).
 */
#include "kube/apierr.h"

#include <stdlib.h>
#include <string.h>

#include "base/json.h"

void js_apierr_done(struct js_apierr *e)
{
	if (!e)
		return;
	free(e->reason);
	free(e->message);
	free(e->kind);
	free(e->name);
	for (size_t i = 0; i < e->ncauses; i++) {
		free(e->causes[i].type);
		free(e->causes[i].field);
		free(e->causes[i].message);
	}
	free(e->causes);
	memset(e, 0, sizeof *e);
}

static const struct {
	const char *reason;
	int err;
} reasons[] = {
	{"NotFound", JS_ENOTFOUND},
	{"AlreadyExists", JS_EEXISTS},
	{"Conflict", JS_ECONFLICT},
	{"Gone", JS_EGONE},
	{"Expired", JS_EGONE},
	{"Invalid", JS_EINVALID},
	{"TooManyRequests", JS_APIERR_ETOOMANY},
	{"Forbidden", JS_APIERR_EFORBIDDEN},
	{"Unauthorized", JS_APIERR_EUNAUTHORIZED},
	{"BadRequest", JS_APIERR_EBADREQUEST},
	{"ServerTimeout", JS_APIERR_ESERVER},
	{"InternalError", JS_APIERR_ESERVER},
	{"ServiceUnavailable", JS_APIERR_ESERVER},
	{"Timeout", JS_APIERR_ETIMEOUT},
	{"MethodNotAllowed", JS_APIERR_EMETHOD},
	{"UnsupportedMediaType", JS_APIERR_EUNSUPPORTED_MEDIA},
	{"RequestEntityTooLarge", JS_ETOOLARGE},
};

int js_apierr_code(const char *reason, long http_code)
{
	if (reason && *reason) {
		for (size_t i = 0; i < JS_ARRAY_SIZE(reasons); i++)
			if (strcmp(reasons[i].reason, reason) == 0)
				return reasons[i].err;
	}
	switch (http_code) {
	case 400: return JS_APIERR_EBADREQUEST;
	case 401: return JS_APIERR_EUNAUTHORIZED;
	case 403: return JS_APIERR_EFORBIDDEN;
	case 404: return JS_ENOTFOUND;
	case 405: return JS_APIERR_EMETHOD;
	/* 409 without a reason: a conflict is the safer guess (requeue). */
	case 409: return JS_ECONFLICT;
	case 410: return JS_EGONE;
	case 413: return JS_ETOOLARGE;
	case 415: return JS_APIERR_EUNSUPPORTED_MEDIA;
	case 422: return JS_EINVALID;
	case 429: return JS_APIERR_ETOOMANY;
	case 504: return JS_APIERR_ETIMEOUT;
	default: break;
	}
	if (http_code >= 500 && http_code < 600)
		return JS_APIERR_ESERVER;
	return JS_APIERR_EOTHER;
}

static char *dup_or_null(const char *s)
{
	return s ? js_xstrdup(s) : NULL;
}

int js_apierr_decode(long code, const char *body, size_t len, long retry_after_s, struct js_apierr *e)
{
	json_t *st = body && len ? json_loadb(body, len, 0, NULL) : NULL;
	const char *reason = NULL;

	/* Only a Status object is trusted for the reason; any other JSON (an
	 * aggregated API's error page) maps by HTTP code. */
	if (st && json_is_object(st) && (!js_json_str(st, "kind") || strcmp(js_json_str(st, "kind"), "Status") == 0))
		reason = js_json_str(st, "reason");
	else if (st) {
		json_decref(st);
		st = NULL;
	}
	int err = js_apierr_code(reason, code);
	if (e) {
		js_apierr_done(e);
		e->err = err;
		e->http_code = code;
		e->reason = dup_or_null(reason);
		e->retry_after_s = retry_after_s;
		if (st) {
			e->message = dup_or_null(js_json_str(st, "message"));
			json_t *d = json_object_get(st, "details");
			e->kind = dup_or_null(js_json_str(d, "kind"));
			e->name = dup_or_null(js_json_str(d, "name"));
			json_t *ra = json_object_get(d, "retryAfterSeconds");
			if (!e->retry_after_s && json_is_integer(ra) && json_integer_value(ra) > 0)
				e->retry_after_s = (long)json_integer_value(ra);
			json_t *causes = json_object_get(d, "causes");
			size_t n = json_is_array(causes) ? json_array_size(causes) : 0;
			if (n) {
				e->causes = js_xcalloc(n, sizeof *e->causes);
				for (size_t i = 0; i < n; i++) {
					json_t *c = json_array_get(causes, i);
					e->causes[e->ncauses].type = dup_or_null(js_json_str(c, "reason"));
					e->causes[e->ncauses].field = dup_or_null(js_json_str(c, "field"));
					e->causes[e->ncauses].message = dup_or_null(js_json_str(c, "message"));
					e->ncauses++;
				}
			}
		} else if (body && len) {
			e->message = js_xstrndup(body, len < 512 ? len : 512);
		}
	}
	json_decref(st);
	return err;
}

void js_apierr_set_transport(struct js_apierr *e, int err, const char *message)
{
	if (!e)
		return;
	js_apierr_done(e);
	e->err = err;
	e->message = dup_or_null(message);
}

const char *js_apierr_strerror(int err)
{
	switch (err) {
	case JS_APIERR_ETOOMANY: return "too many requests";
	case JS_APIERR_EFORBIDDEN: return "forbidden";
	case JS_APIERR_EUNAUTHORIZED: return "unauthorized";
	case JS_APIERR_EBADREQUEST: return "bad request";
	case JS_APIERR_ESERVER: return "server error";
	case JS_APIERR_ETIMEOUT: return "server timeout";
	case JS_APIERR_EMETHOD: return "method not allowed";
	case JS_APIERR_EUNSUPPORTED_MEDIA: return "unsupported media type";
	case JS_APIERR_EOTHER: return "unexpected HTTP status";
	default: return js_strerror(err);
	}
}
