/*
 * client.h - the Kubernetes REST client: one HTTP/2 transport (libcurl
 * multi, owned by one I/O thread) shared by every caller, a client-side
 * token-bucket rate limiter, credentials (client certs, bearer tokens, token
 * files, exec plugins), and the verbs GET, LIST, CREATE, UPDATE, PATCH
 * (merge, JSON, strategic, server-side apply) and DELETE, with subresources
 * such as `status`.
 *
 * Threading: every function is thread-safe. Blocking calls (all verbs,
 * js_client_do, js_client_xfer_wait) may be made from any thread except the
 * client's own I/O thread, which runs only the on_data/on_done callbacks of
 * streaming requests; those must not block. Requests are served in
 * submission order as the rate limiter allows; HTTP/2 multiplexes them over
 * few connections.
 *
 * Retries: a request that fails before any HTTP answer (connection refused
 * or reset, HTTP/2 GOAWAY/stream refusal) is retried up to 3 times with
 * backoff (a write whose answer was lost too, unless sent `once`). A GET
 * answered 429/5xx with Retry-After is retried up to 10 times, waiting as
 * asked (at most 10 s each); other verbs return the error with
 * js_apierr.retry_after_s set, since the caller knows whether repeating the
 * write is safe (an eviction blocked by a budget, for instance): the
 * controller repeats its Job creates and deletes the same way
 * (js_client_retry_after_ms, js_client_pause), as client-go would. A 401
 * refreshes exec/token-file credentials once and retries. Streaming requests
 * are never retried.
 *
 * Errors: verbs return 0 or a negative code: JS_ENOTFOUND, JS_EEXISTS,
 * JS_ECONFLICT, JS_EGONE, JS_EINVALID, JS_APIERR_* (apierr.h) for API
 * answers (details in `struct js_apierr` when the caller passes one), and
 * -errno for transport failures (-ECONNREFUSED, -ECONNRESET, -ETIMEDOUT,
 * -EPROTO for TLS, -EIO otherwise). Library code never prints.
 */
#ifndef JS_CLIENT_H
#define JS_CLIENT_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/common.h"
#include "kube/apierr.h"
#include "kube/kubeconfig.h"

/* ---- Resources --------------------------------------------------------- */

/** A resource type: API group ("" for core), version, plural name. */
struct js_resource {
	const char *group;
	const char *version;
	const char *resource;
	bool namespaced;
};

extern const struct js_resource js_client_res_namespaces;
extern const struct js_resource js_client_res_configmaps;
extern const struct js_resource js_client_res_secrets;
extern const struct js_resource js_client_res_pods;
extern const struct js_resource js_client_res_services;
extern const struct js_resource js_client_res_serviceaccounts;
extern const struct js_resource js_client_res_jobs;
extern const struct js_resource js_client_res_leases;
extern const struct js_resource js_client_res_events;
extern const struct js_resource js_client_res_jobsets;
extern const struct js_resource js_client_res_pdbs;
extern const struct js_resource js_client_res_pvcs;
/* Kubernetes 1.36's gang-scheduling objects (KEP-969). */
extern const struct js_resource js_client_res_workloads;
extern const struct js_resource js_client_res_podgroups;

/* ---- Lifecycle --------------------------------------------------------- */

struct js_client;

/** Options; zero-initialised fields take the defaults. */
struct js_client_opts {
	double qps;          /* client-side rate, requests/s; 0 = 5 (client-go); < 0 = unlimited */
	int burst;           /* bucket size; 0 = 10 */
	int timeout_ms;      /* per non-streaming request; 0 = 60000 */
	const char *user_agent; /* 0 = "jobset/<version>" */
	bool http1;          /* force HTTP/1.1 (comparisons only) */
};

/**
 * Create a client for `kc` (copied; the caller keeps its own). Starts the I/O
 * thread. Call curl_global_init once in main() before, and ignore SIGPIPE.
 * Returns 0, JS_EINVALID for an unusable server URL, or -errno.
 */
JS_WARN_UNUSED int js_client_new(const struct js_kubeconfig *kc, const struct js_client_opts *opts,
				 struct js_client **ret);

/** Stop the I/O thread (in-flight requests end with -ECANCELED; callers must
 * be gone) and free. NULL is a no-op. Returns NULL. */
struct js_client *js_client_free(struct js_client *c);

/** The configuration's namespace (context or in-cluster), or "default". */
const char *js_client_namespace(const struct js_client *c);

/* ---- Verbs ------------------------------------------------------------- */

/** LIST options; NULL/0 fields are left out of the query. */
struct js_list_opts {
	const char *label_selector;
	const char *field_selector;
	const char *resource_version;
	const char *resource_version_match; /* "NotOlderThan", "Exact" */
	const char *continue_token;
	long limit;
	const char *accept; /* Accept header; NULL: application/json. A
			       metadata-only list: JS_CLIENT_ACCEPT_METADATA_LIST */
};

/* Accept headers of metadata-only reads: the API server answers with
 * PartialObjectMetadataList / PartialObjectMetadata (meta.k8s.io/v1) - each
 * object's metadata only (name, namespace, uid, resourceVersion, labels,
 * annotations, ownerReferences, deletionTimestamp, ...), none of its spec
 * or status. Source: Kubernetes API concepts, "Receiving resources as
 * Tables / partial object metadata" (client-go's metadata client). */
#define JS_CLIENT_ACCEPT_METADATA_LIST "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
#define JS_CLIENT_ACCEPT_METADATA "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"

/** Write options. */
struct js_write_opts {
	const char *subresource;   /* "status", "scale", ... or NULL */
	const char *field_manager; /* required for JS_PATCH_APPLY */
	bool force;                /* apply: take ownership of conflicting fields */
	bool dry_run;
	bool once;                 /* never repeated after a transport failure (js_client_req.once) */
};

enum js_patch_type {
	JS_PATCH__INVALID = -1,
	JS_PATCH_MERGE,     /* application/merge-patch+json (RFC 7386) */
	JS_PATCH_JSON,      /* application/json-patch+json (RFC 6902) */
	JS_PATCH_STRATEGIC, /* application/strategic-merge-patch+json (built-in kinds) */
	JS_PATCH_APPLY,     /* application/apply-patch+yaml: server-side apply */
	JS_PATCH__COUNT
};

/** DELETE options. */
struct js_delete_opts {
	const char *propagation;      /* "Foreground", "Background", "Orphan" or NULL */
	const char *precondition_uid; /* delete only this incarnation */
	const char *precondition_rv;  /* delete only at this resourceVersion */
	bool has_grace;
	long grace_period_s;
};

/** GET one object. *ret is a new reference (json_decref). */
JS_WARN_UNUSED int js_client_get(struct js_client *c, const struct js_resource *res, const char *ns,
				 const char *name, const char *subresource, json_t **ret, struct js_apierr *err);

/** LIST one page (`ns` NULL = all namespaces). *ret is the List object. */
JS_WARN_UNUSED int js_client_list(struct js_client *c, const struct js_resource *res, const char *ns,
				  const struct js_list_opts *lo, json_t **ret, struct js_apierr *err);

/** CREATE `obj` (namespace from `ns`, else obj.metadata.namespace). *ret (may
 * be NULL) gets the created object. */
JS_WARN_UNUSED int js_client_create(struct js_client *c, const struct js_resource *res, const char *ns,
				    const json_t *obj, const struct js_write_opts *wo, json_t **ret,
				    struct js_apierr *err);

/** UPDATE (PUT) `obj`; name and resourceVersion come from obj.metadata (a
 * stale resourceVersion gives JS_ECONFLICT). wo->subresource "status" writes
 * only the status. */
JS_WARN_UNUSED int js_client_update(struct js_client *c, const struct js_resource *res, const char *ns,
				    const json_t *obj, const struct js_write_opts *wo, json_t **ret,
				    struct js_apierr *err);

/** PATCH `name` with `patch` (an object, or an array for JS_PATCH_JSON). */
JS_WARN_UNUSED int js_client_patch(struct js_client *c, const struct js_resource *res, const char *ns,
				   const char *name, enum js_patch_type type, const json_t *patch,
				   const struct js_write_opts *wo, json_t **ret, struct js_apierr *err);

/** DELETE `name`. *ret (may be NULL) gets the server's answer (the object
 * when deletion is deferred by finalizers, else a Status). */
JS_WARN_UNUSED int js_client_delete(struct js_client *c, const struct js_resource *res, const char *ns,
				    const char *name, const struct js_delete_opts *dopts, json_t **ret,
				    struct js_apierr *err);

/** Any JSON call: `method` on `path` (with query) with optional `body`
 * (sent as `content_type`, default application/json). */
JS_WARN_UNUSED int js_client_call(struct js_client *c, const char *method, const char *path,
				  const char *content_type, const json_t *body, json_t **ret, struct js_apierr *err);

/** Append the REST path of `res` (ns/name/subresource optional) to `out`. */
JS_WARN_UNUSED int js_client_path(const struct js_resource *res, const char *ns, const char *name,
				  const char *subresource, struct js_buf *out);

/* ---- Transport --------------------------------------------------------- */

/** Streaming callback: `n` body bytes of a 2xx answer, on the I/O thread.
 * Return 0 to continue, non-zero to abort the transfer. */
typedef int js_client_data_fn(void *user, const char *p, size_t n);

/** A raw request. Strings are copied by js_client_submit. */
struct js_client_req {
	const char *method;       /* "GET", "POST", ... */
	const char *path;         /* "/api/v1/...", with query */
	const char *content_type; /* of the body, or NULL */
	const char *accept;       /* Accept header; NULL: application/json */
	const char *body;
	size_t body_len;
	js_client_data_fn *on_data; /* streaming: 2xx bytes go here, not to resp.body */
	void (*on_done)(void *user); /* I/O thread, once, when the transfer ends */
	void *user;
	int stall_s;       /* streaming: abort when under 1 byte/s for this long; 0 = never */
	bool no_timeout;   /* no total deadline (watches) */
	bool once;         /* js_client_do: not repeated once it may have reached the server (a
			      reset or lost answer; a refused connection still is): the server
			      may have acted on it, and the caller resolves that itself */
	atomic_bool *cancel; /* caller sets it, then js_client_wakeup(): ends with -ECANCELED */
};

/** An answer. `body` is NUL-terminated (owned; js_client_resp_done). */
struct js_client_resp {
	long code;
	char *body;
	size_t len;
	long retry_after_s;
	long http_version; /* 11, 2 (HTTP/2) */
};

void js_client_resp_done(struct js_client_resp *r);

struct js_client_xfer;

/** Queue `req` (rate limited). Returns 0 and a transfer to wait on, or
 * -EDEADLK from the I/O thread, -ESHUTDOWN when the client is stopping. */
JS_WARN_UNUSED int js_client_submit(struct js_client *c, const struct js_client_req *req,
				    struct js_client_xfer **ret);

/** Wait for the transfer to end. Returns 0 with an answer in `ret` (any HTTP
 * code), or a transport error (-ECANCELED, -ETIMEDOUT, ...; `why`, when not
 * NULL, gets curl's text). Frees the transfer. */
JS_WARN_UNUSED int js_client_xfer_wait(struct js_client_xfer *x, struct js_client_resp *ret, char *why,
				       size_t why_len);

/** Wake the I/O thread so it notices a cancel flag. */
void js_client_wakeup(struct js_client *c);

/**
 * Bind `flag` (NULL unbinds) to the calling thread: every request this
 * thread submits on `c` without a cancel flag of its own - the verbs
 * included - uses it. Once *flag is set (then js_client_wakeup()), those
 * requests end with -ECANCELED wherever they are (rate-limit queue, in
 * flight, or a retry's wait), and new ones fail with -ECANCELED at once.
 * This is how an owner stops its threads within a bounded time (the
 * controller's workers, the rotator; ctrl/controller.h lifecycle). `flag`
 * must outlive the binding; the binding is per client and per thread.
 */
void js_client_bind_cancel(struct js_client *c, atomic_bool *flag);

/**
 * How long to wait before repeating a request answered `r` after `tries`
 * repeats already, by the Retry-After rule above (for any verb the caller
 * knows to be safe to repeat): the milliseconds (at most 10 s), or 0 when it
 * is not to be repeated (no Retry-After, another code, or 10 repeats done).
 * Source: client-go rest.Request (checkWait), which repeats every verb.
 */
uint64_t js_client_retry_after_ms(const struct js_client_resp *r, int tries);

/**
 * Sleep `ms` milliseconds in slices of at most 100 ms, giving up as soon as
 * the calling thread's bound cancel flag (js_client_bind_cancel) is set.
 * Returns 0, or -ECANCELED.
 */
JS_WARN_UNUSED int js_client_pause(struct js_client *c, uint64_t ms);

/**
 * Bind a deadline (`*deadline_ns`, CLOCK_MONOTONIC ns; 0 = none; NULL
 * unbinds) to the calling thread: every non-streaming request it submits on
 * `c` - the verbs included - must end by then: its total timeout is cut to
 * what is left, and once the deadline has passed, submitting fails with
 * -ETIMEDOUT at once. The caller may change *deadline_ns between requests;
 * the variable must outlive the binding. This is how the leader elector
 * keeps a hanging renewal from outliving its renew deadline (kube/leader.h).
 */
void js_client_bind_deadline(struct js_client *c, const uint64_t *deadline_ns);

/** Submit and wait, with the retry rules above. */
JS_WARN_UNUSED int js_client_do(struct js_client *c, const struct js_client_req *req, struct js_client_resp *ret,
				char *why, size_t why_len);

/* ---- Observability ------------------------------------------------------ */

struct js_client_stats {
	uint64_t submitted;   /* requests queued */
	uint64_t dispatched;  /* requests handed to curl (after the rate limiter) */
	uint64_t throttled;   /* requests that had to wait for a token */
	uint64_t throttle_ns; /* total time spent waiting for tokens */
	uint64_t retries;
	uint64_t connects;    /* new TCP connections opened */
	uint64_t http2;       /* answers received over HTTP/2 */
	uint64_t http1;       /* answers received over HTTP/1.x */
};

void js_client_stats(struct js_client *c, struct js_client_stats *ret);

/** Copy the monotonic dispatch times (ns, oldest first) of the last
 * requests, at most `max` (the client keeps 4096). Returns the count. */
size_t js_client_dispatch_times(struct js_client *c, uint64_t *ret, size_t max);

#endif
