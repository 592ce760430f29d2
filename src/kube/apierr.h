/*
 * apierr.h - Kubernetes API errors as data: the `Status` object an API server
 * returns with a failed request, decoded into an error code plus details.
 *
 * The code is chosen by `reason` first and the HTTP status second, as
 * client-go's apierrors does: 409 is JS_EEXISTS for reason AlreadyExists and
 * JS_ECONFLICT otherwise (kubernetes#61897); 410 and reason Expired are
 * JS_EGONE; 422/Invalid is JS_EINVALID with the field causes; 429 is
 * JS_APIERR_ETOOMANY with the Retry-After delay. Pure; no I/O.
 */
#ifndef JS_APIERR_H
#define JS_APIERR_H

#include <jansson.h>
#include <stddef.h>

#include "base/common.h"

/* Kubernetes-specific error codes, below the JS_E* block of common.h
 * (candidates for base/common.h). js_apierr_strerror() names them. */
enum {
	JS_APIERR_ETOOMANY = -1100,      /* 429 TooManyRequests; see retry_after_s */
	JS_APIERR_EFORBIDDEN = -1101,    /* 403 */
	JS_APIERR_EUNAUTHORIZED = -1102, /* 401 */
	JS_APIERR_EBADREQUEST = -1103,   /* 400 */
	JS_APIERR_ESERVER = -1104,       /* 5xx, ServerTimeout, InternalError */
	JS_APIERR_ETIMEOUT = -1105,      /* 504 or reason Timeout */
	JS_APIERR_EMETHOD = -1106,       /* 405 MethodNotAllowed */
	JS_APIERR_EUNSUPPORTED_MEDIA = -1107, /* 415 */
	JS_APIERR_EOTHER = -1199,        /* any other non-2xx answer */
};

/** One `details.causes[]` entry (owned strings, may be NULL). */
struct js_apierr_cause {
	char *type;    /* e.g. "FieldValueInvalid" */
	char *field;   /* e.g. "metadata.name" */
	char *message;
};

/** A decoded failure. Zero-initialise; release with js_apierr_done. */
struct js_apierr {
	int err;          /* the error code the call returned */
	long http_code;   /* HTTP status, 0 when no response (transport error) */
	char *reason;     /* Status.reason ("NotFound", "Conflict", ...) or NULL */
	char *message;    /* Status.message, or transport error text */
	char *kind;       /* details.kind */
	char *name;       /* details.name */
	long retry_after_s; /* Retry-After header or details.retryAfterSeconds; 0 = none */
	size_t ncauses;
	struct js_apierr_cause *causes;
};

/** Free the strings of `e` and zero it. NULL is a no-op. */
void js_apierr_done(struct js_apierr *e);

/**
 * Decode a non-2xx answer: HTTP `code`, the body (`len` bytes, may be NULL or
 * not JSON) and the Retry-After header value in seconds (`retry_after_s`, 0
 * when absent). Fills `e` (when not NULL; previous contents are released) and
 * returns the error code. Never fails: an undecodable body still maps by
 * HTTP code, with the body's start as the message.
 */
int js_apierr_decode(long code, const char *body, size_t len, long retry_after_s, struct js_apierr *e);

/** Map a Status reason and HTTP code to an error code (the rule above). */
int js_apierr_code(const char *reason, long http_code);

/** Text for a JS_APIERR_* code, falling back to js_strerror(). Static. */
const char *js_apierr_strerror(int err);

/** Record a transport failure (no HTTP answer) in `e` (may be NULL). */
void js_apierr_set_transport(struct js_apierr *e, int err, const char *message);

#endif
