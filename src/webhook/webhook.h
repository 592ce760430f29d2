/*
 * webhook.h - the HTTPS server that serves JobSet's admission webhooks
 * (SPEC §4.2, §5.3-5.4, §9, §12.5), and, through extra handlers, whatever
 * else a process wants on a port: `/metrics`, `/healthz`, `/readyz`.
 *
 * One js_webhook_server is one listening socket served by libevent's evhttp
 * (HTTP/1.1 only, as upstream forces for its webhook and metrics servers,
 * SPEC §12.6), with TLS from OpenSSL, the product's only TLS library
 * (docs/webhooks.md "Why OpenSSL"). With a certificate directory it speaks
 * TLS (minimum TLS 1.2, or 1.3 when configured; the configured TLS 1.2
 * ciphers, SPEC §12.6) and re-reads `tls.crt`/`tls.key` when either file
 * changes, so a rotated certificate is served from the next handshake on
 * without a restart; the previous certificate keeps serving until a complete,
 * matching pair has been written; with a pair in memory (a self-signed
 * certificate, the metrics server's default) it speaks TLS with that pair
 * for its lifetime. Without either it speaks plain HTTP (probes).
 *
 * Admission: with `admission` on, the server answers AdmissionReview v1 POSTs
 * on the four upstream paths:
 *
 *   /mutate-jobset-x-k8s-io-v1alpha2-jobset    mjobset.kb.io (CREATE: defaulting)
 *   /validate-jobset-x-k8s-io-v1alpha2-jobset  vjobset.kb.io (CREATE, UPDATE)
 *   /mutate--v1-pod                            mpod.kb.io (exclusive placement)
 *   /validate--v1-pod                          vpod.kb.io (followers wait for the leader)
 *
 * The handlers are pure apart from the lookups in `struct js_webhook_lookups`
 * (PVCs for SPEC §5.3.3 P6-P8, pods and nodes for SPEC §9), which the host
 * process implements, from its informer cache or with direct API calls.
 *
 * Lifecycle (libuv's handle rule): new starts serving; stop stops accepting,
 * waits until no handler can run any more and closes the socket; only then
 * does free release the server, and free refuses (-EBUSY) a server that was
 * not stopped. So a host may free what its handlers and lookups use as soon
 * as stop has returned.
 *
 * Threading: handlers, extra handlers and lookups run on the server's own
 * threads (one event loop each), several at once; they must be thread-safe.
 * new, stop and free are never called at the same time for one server, and
 * stop and free never from the server's own handlers.
 * The server never prints; problems reach the host through return codes and,
 * while running, through the optional log callback.
 */
#ifndef JS_WEBHOOK_H
#define JS_WEBHOOK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/jobset.h"
#include "api/validate.h"
#include "base/buf.h"
#include "base/common.h"

/* ---- Paths (SPEC §12.5) ---- */
#define JS_WEBHOOK_PATH_MUTATE_JOBSET "/mutate-jobset-x-k8s-io-v1alpha2-jobset"
#define JS_WEBHOOK_PATH_VALIDATE_JOBSET "/validate-jobset-x-k8s-io-v1alpha2-jobset"
#define JS_WEBHOOK_PATH_MUTATE_POD "/mutate--v1-pod"
#define JS_WEBHOOK_PATH_VALIDATE_POD "/validate--v1-pod"

/* The watcher's image when none is configured: the controller's own, as
 * deploy/ names it (the Dockerfile ships the agent in it). */
#define JS_WEBHOOK_WATCHER_IMAGE "jobset-controller:" JS_VERSION
/* The agent in that image. */
#define JS_WEBHOOK_WATCHER_COMMAND "/usr/local/bin/in-place-restart-agent"

/* ---- Lookups the host provides ---- */

/**
 * List the pods of namespace `namespace_` whose labels include every
 * key/value of `match_labels` (a JSON object of strings). Used to find a
 * follower's leader (SPEC §9.1; the webhook passes the jobset-name,
 * replicatedjob-name and job-index labels and applies the rest of §9.1
 * itself). On success returns 0 and sets *ret_pods to a new reference to a
 * JSON array of Pod objects (possibly empty). On failure returns a negative
 * code and sets *ret_err to a malloc'd message. Runs on server threads.
 */
typedef int (*js_webhook_list_pods_fn)(void *ctx, const char *namespace_, const json_t *match_labels,
				       json_t **ret_pods, char **ret_err);

/**
 * Get Node `name`. On success returns 0 and sets *ret_node to a new
 * reference. On failure returns a negative code (JS_ENOTFOUND when the node
 * does not exist), sets *ret_code to the HTTP status to answer with (404 for
 * NotFound, 500 otherwise) and *ret_err to a malloc'd message.
 */
typedef int (*js_webhook_get_node_fn)(void *ctx, const char *name, json_t **ret_node, int *ret_code,
				      char **ret_err);

/** Everything the admission handlers may look up. NULL functions mean "never
 * found" (PVCs), "no pods" and "no nodes". */
struct js_webhook_lookups {
	void *ctx;                       /* passed to every function below */
	js_pvc_lookup_fn pvc_lookup;     /* SPEC §5.3.3 P6-P8 (api/validate.h) */
	js_webhook_list_pods_fn list_pods;
	js_webhook_get_node_fn get_node;
};

/** How admission behaves; shared by the server and the pure handlers. */
struct js_webhook_admit_cfg {
	struct js_gates gates;
	/* Also run the checks upstream does not make (embedded Job template,
	 * hostnames, ...; api/validate.h). The server turns it on by default. */
	bool strict;
	/* Pod webhooks (SPEC §9; docs/differences.md): JS_PLACEMENT_GATES (0)
	 * labels exclusive pods and gates followers, with no lookups;
	 * JS_PLACEMENT_WEBHOOK is upstream's lookup-and-reject behaviour. */
	enum js_placement_mode placement;
	/* Hang detection (gate ProgressDeadline; webhook/watcher.c): the image
	 * of the watcher sidecar mpod.kb.io gives a pod with a deadline, which
	 * must hold /usr/local/bin/in-place-restart-agent. Borrowed for the
	 * server's lifetime; NULL or "" is JS_WEBHOOK_WATCHER_IMAGE. */
	const char *watcher_image;
	struct js_webhook_lookups lookups;
};

/* ---- Extra handlers (/metrics, /healthz, /readyz, ...) ---- */

/** One HTTP request, borrowed for the duration of a handler call. */
struct js_webhook_req;

/** Method ("GET", "POST", ...). */
const char *js_webhook_req_method(const struct js_webhook_req *r);
/** Path without the query string. */
const char *js_webhook_req_path(const struct js_webhook_req *r);
/** Value of request header `name` (case-insensitive), or NULL. */
const char *js_webhook_req_header(const struct js_webhook_req *r, const char *name);
/** Body bytes (may be empty; NUL-terminated for convenience). */
const char *js_webhook_req_body(const struct js_webhook_req *r, size_t *ret_len);

/**
 * An extra handler: fill `body` (initialised, ceiling 64 MiB) and set
 * *ret_content_type (a static string; default "text/plain; charset=utf-8"),
 * return the HTTP status code (200, 403, 500, ...).
 */
typedef int (*js_webhook_handler_fn)(void *ctx, const struct js_webhook_req *req, struct js_buf *body,
				     const char **ret_content_type);

/** An extra route: exact path match, any method. */
struct js_webhook_route {
	const char *path; /* e.g. "/metrics"; copied */
	js_webhook_handler_fn fn;
	void *ctx;
};

/* ---- The server ---- */

/** Log callback: `level` 0 error, 1 warning, 2 info, 4 debug; `msg` one line,
 * borrowed. Called from server threads. */
typedef void (*js_webhook_log_fn)(void *ctx, int level, const char *msg);

/** Lowest TLS version a server accepts (upstream's `tls.minVersion`:
 * VersionTLS12, the default, or VersionTLS13; SPEC §12.2). */
enum js_webhook_tls_min {
	JS_WEBHOOK_TLS_MIN_1_2 = 0,
	JS_WEBHOOK_TLS_MIN_1_3,
};

struct js_webhook_opts {
	/* Numeric IPv4 or IPv6 address, or "localhost" (127.0.0.1). NULL or ""
	 * = all interfaces: IPv6 and IPv4 on one socket, IPv4 alone where the
	 * machine has no IPv6. */
	const char *bind_address;
	uint16_t port;            /* 0 = any free port (see js_webhook_server_port) */
	/* Directory holding tls.crt and tls.key (PEM; a chain is allowed in
	 * tls.crt). NULL = plain HTTP. Overridden by cert_file/key_file. */
	const char *cert_dir;
	const char *cert_file;    /* NULL = <cert_dir>/tls.crt */
	const char *key_file;     /* NULL = <cert_dir>/tls.key */
	/* A pair in memory (PEM text, copied), used instead of files and never
	 * reloaded. Both or neither. */
	const char *cert_pem, *key_pem;
	enum js_webhook_tls_min tls_min;
	/* OpenSSL cipher list for TLS 1.2 (js_webhook_tls_ciphers() makes one
	 * from upstream's names); NULL = OpenSSL's defaults. TLS 1.3 suites
	 * are not configurable, as in Go. */
	const char *tls_ciphers;
	/* Reload check interval, milliseconds: on a handshake, the files are
	 * stat()ed at most this often. 0 = 1000. */
	int reload_interval_ms;
	bool admission;           /* serve the four admission paths */
	struct js_webhook_admit_cfg admit;
	const struct js_webhook_route *routes; /* extra routes, copied; may be NULL */
	size_t n_routes;
	/* Threads, each an event loop serving its share of the connections
	 * (max_connections / threads at most); a handler that blocks holds up
	 * only its own thread's connections. 0 = 2. */
	unsigned threads;
	/* Connections open at once; past it new clients wait in the listen
	 * backlog until one closes. 0 or more than JS_LIMIT_WEBHOOK_CONNS =
	 * JS_LIMIT_WEBHOOK_CONNS. */
	unsigned max_connections;
	js_webhook_log_fn log;    /* may be NULL */
	void *log_ctx;
};

struct js_webhook_server;

/**
 * Bind, load the certificate (when TLS) and start serving. `opts` and
 * everything it points to are copied, except the contexts, which must
 * outlive the server. Returns 0 and *ret (stop it with
 * js_webhook_server_stop, then free it with js_webhook_server_free), or:
 * -errno when the socket cannot be bound (-EADDRINUSE, ...); -EINVAL for a
 * bind address that is not a numeric address; -errno (-ENOENT, ...) when
 * the certificate or key cannot be read; JS_ETOOLARGE for a PEM file over
 * JS_LIMIT_WEBHOOK_PEM; JS_EINVALID when they do not parse or do not match,
 * or when OpenSSL refuses `tls_ciphers`;
 * -ENOMEM or -errno when an event loop or thread cannot be set up. Nothing
 * is left running on failure.
 */
JS_WARN_UNUSED int js_webhook_server_new(const struct js_webhook_opts *opts, struct js_webhook_server **ret);

/**
 * Stop serving: no new connection is accepted, and once this returns no
 * handler, extra handler or lookup is running or will run again; a handler
 * already running when stop is called finishes first (stop waits for it,
 * without a deadline: bound the lookups instead). Open connections are then
 * closed and the listening socket with them, so clients see a refused
 * connection rather than a silent one. js_webhook_server_ready() turns false
 * when stop begins. Calling it again is a no-op. Returns 0, or -EDEADLK when
 * called from one of the server's own threads (a handler), which could never
 * finish; the server is then left running.
 */
int js_webhook_server_stop(struct js_webhook_server *s);

/**
 * Free a stopped server. Returns 0 (NULL is a no-op), or -EBUSY, leaving
 * the server untouched and serving, when js_webhook_server_stop has not
 * completed on it: freeing under running handlers would pull their memory
 * away from them.
 */
JS_WARN_UNUSED int js_webhook_server_free(struct js_webhook_server *s);

/** The port actually bound (useful with opts.port 0). */
uint16_t js_webhook_server_port(const struct js_webhook_server *s);

/** True while serving with a loaded certificate (plain HTTP: while
 * serving): what `/readyz` reports for the webhook (SPEC §12.5). */
bool js_webhook_server_ready(const struct js_webhook_server *s);

/** Number of times a changed certificate pair was loaded after start. */
uint64_t js_webhook_server_cert_reloads(const struct js_webhook_server *s);

/** Connections open right now (accepted and not yet closed), all threads
 * together; 0 once stopped. */
unsigned js_webhook_server_connections(const struct js_webhook_server *s);

/**
 * Turn cipher suite names as upstream's `tls.cipherSuites` takes them (IANA
 * names, e.g. "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", and Go's short
 * CHACHA20 aliases; SPEC §12.2) into an OpenSSL cipher list for
 * js_webhook_opts.tls_ciphers, in the given order. TLS 1.3 names are
 * accepted and skipped: those suites are always on, as in Go. Returns 0
 * and *ret_list (caller frees), or JS_EINVALID with *ret_err (caller frees)
 * naming the first unknown or unsupported name, or saying that no TLS 1.2
 * suite is left; -ENOMEM/-EIO when OpenSSL fails.
 */
JS_WARN_UNUSED int js_webhook_tls_ciphers(const char *const *names, size_t n, char **ret_list, char **ret_err);

/* ---- Admission without HTTP (tests, fuzzing, other transports) ---- */

/**
 * Answer one AdmissionReview v1 request body for admission path `path`, as
 * the server does. On 0, *ret_review is the response AdmissionReview (new
 * reference) and *ret_http 200. On a malformed request (not JSON, not an
 * AdmissionReview, no request.uid) or an unknown path, returns JS_EINVALID
 * or JS_ENOTFOUND with *ret_http 400 or 404 and *ret_review a Status-shaped
 * error body (new reference).
 */
JS_WARN_UNUSED int js_webhook_review(const struct js_webhook_admit_cfg *cfg, const char *path, const char *body,
				     size_t len, json_t **ret_review, int *ret_http);

#endif
