/*
 * httpd.h - a small plain-HTTP server (libmicrohttpd, its own polling
 * thread) for /metrics, /healthz and /readyz. GET and HEAD only; each
 * request is answered by one handler that fills a body.
 *
 * Does not do TLS or authentication: upstream serves /metrics over HTTPS
 * behind a TokenReview (SPEC §12.7); ours binds where the flags say and is
 * meant for a cluster-internal port (docs/controller.md).
 *
 * Threading: the handler runs on the server's thread, one request at a time,
 * and must not block for long.
 */
#ifndef JS_HTTPD_H
#define JS_HTTPD_H

#include "base/buf.h"
#include "base/common.h"

/** Answer GET `path` (without the query): append the body to `body`, set
 * *content_type (static; default text/plain) and return the HTTP status. */
typedef int js_httpd_handler_fn(void *user, const char *path, struct js_buf *body, const char **content_type);

struct js_httpd_opts {
	const char *host;   /* numeric IPv4/IPv6 address or "localhost"; NULL = all interfaces */
	int port;           /* 0 = any free port (see js_httpd_port) */
	js_httpd_handler_fn *handler; /* required */
	void *user;
};

struct js_httpd;

/** Bind and start serving. Returns 0, JS_EINVALID (bad host, no handler),
 * or -errno (-EADDRINUSE, ...). */
JS_WARN_UNUSED int js_httpd_new(const struct js_httpd_opts *opts, struct js_httpd **ret);

/** The bound port. */
int js_httpd_port(const struct js_httpd *h);

/** Stop (in-flight answers finish) and free. NULL is a no-op. Returns NULL. */
struct js_httpd *js_httpd_free(struct js_httpd *h);

#endif
