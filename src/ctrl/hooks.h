/*
 * hooks.h - the admission webhooks inside jobset-controller (SPEC §12,
 * §12.5): the src/webhook server on the webhook port, its lookups made
 * through the controller's API client, and, with internal certificate
 * management, the rotator (ctrl/rotator.h) that provides its certificates.
 *
 * Runs on every replica, leader or not, as upstream: admission must keep
 * working while a standby waits for the Lease.
 *
 * The server needs a certificate to start (webhook.h), and with internal
 * management the rotator writes it first; so a thread of ours starts the
 * server as soon as tls.crt/tls.key load (rotator ready, or, without it,
 * the files present), retrying every 250 ms. From then on the server
 * reloads rotated files by itself. js_hooks_ready() is what /readyz adds:
 * false ("certificates are not ready") until the server serves them.
 *
 * Lookups (webhook.h): PVC GET (SPEC §5.3.3), and, with
 * --exclusive-placement=webhook only, pods of one JobSet by LIST with the
 * follower's label selector in its namespace (SPEC §9.1) and Node GET. They
 * are direct API reads, not a cache: the controller keeps no Node cache and
 * never a cluster-wide Pod cache (upstream #778; its placement cache holds
 * labelled pods only, ctrl/placement.c), and a follower pod checked against
 * a stale view of its leader would be refused once more and wait out another
 * Job controller backoff.
 *
 * Threading: new/start/free from one owner thread; ready/port from any.
 */
#ifndef JS_HOOKS_H
#define JS_HOOKS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/log.h"
#include "api/jobset.h"
#include "base/common.h"
#include "ctrl/rotator.h"
#include "kube/client.h"
#include "webhook/webhook.h"

/** Receives one line (no newline): level 0 error, 1 info, 4 debug. */
typedef js_log_fn js_hooks_log_fn;

struct js_hooks_opts {
	struct js_client *client; /* required; must outlive the hooks */
	const char *host;         /* bind address; NULL/"" = all interfaces */
	int port;                 /* 0 = any free port (js_hooks_port) */
	const char *cert_dir;     /* required: tls.crt, tls.key */
	struct js_gates gates;
	bool strict;              /* our extra checks (api/validate.h); the controller sets it */
	enum js_placement_mode placement; /* pod webhooks: gates (ours) or upstream's rejections */
	const char *watcher_image; /* hang detection's watcher (webhook.h); must outlive the hooks */
	/* TLS settings (webhook.h; SPEC §12.6): minimum version, TLS 1.2
	 * ciphers (OpenSSL list, copied; NULL = OpenSSL's). */
	enum js_webhook_tls_min tls_min;
	const char *tls_ciphers;
	/* Internal certificate management: when `internal`, `rotator` (client
	 * and cert_dir are filled in from above) runs as ctrl/rotator.h says. */
	bool internal;
	struct js_rotator_opts rotator;
	js_hooks_log_fn *log; /* may be NULL */
	void *log_user;
};

struct js_hooks;

/** Create (not started); copies the options. Returns 0 or JS_EINVALID. */
JS_WARN_UNUSED int js_hooks_new(const struct js_hooks_opts *opts, struct js_hooks **ret);

/** Start the rotator (if any) and the thread that starts the server.
 * Returns 0 or -errno. */
JS_WARN_UNUSED int js_hooks_start(struct js_hooks *h);

/** True while the server serves a loaded certificate (and, with internal
 * management, the cert dir holds the Secret's pair). Otherwise false with
 * *ret_reason (static) when ret_reason is not NULL. */
bool js_hooks_ready(struct js_hooks *h, const char **ret_reason);

/** The bound port, 0 until the server runs. */
uint16_t js_hooks_port(struct js_hooks *h);

/** Stop the thread, the server (in-flight reviews finish) and the rotator;
 * free. NULL is a no-op. Returns NULL. */
struct js_hooks *js_hooks_free(struct js_hooks *h);

#endif
