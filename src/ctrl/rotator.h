/*
 * rotator.h - internal certificate management of jobset-controller (SPEC
 * §12.5, upstream's cert rotator), the I/O half of ctrl/certs.h.
 *
 * One thread, on every replica (not only the leader), runs a check at start
 * and then every `interval_ms` (sooner, with backoff from 500 ms, after a
 * failure):
 *
 *  1. Secret <namespace>/<secret_name>: GET; when it is missing, its
 *     certificates do not parse, do not cover the service names (and the
 *     extra names), or expire within 90 days, generate a new CA and serving
 *     certificate and write them (CREATE when absent, else UPDATE at the
 *     resourceVersion read; a conflict or AlreadyExists means another
 *     replica won, and the next round uses its certificates).
 *  2. The cert dir: when tls.crt/tls.key differ from the Secret, write them
 *     (key first, each through a temporary file and rename, so the webhook
 *     server's reload never sees a half-written file). A read-only dir (the
 *     Deployment mounts the Secret there) is not an error: the kubelet's
 *     volume sync brings the files, and the rotator waits for them to match.
 *  3. The CA bundle: GET each named webhook configuration and UPDATE it when
 *     an entry's clientConfig.caBundle is not our CA (RBAC grants update,
 *     not patch; SPEC §12.9). A missing configuration is logged and retried.
 *
 * js_rotator_ready() is true once the cert dir holds the Secret's current
 * serving pair: what /readyz needs before the webhook server can serve.
 *
 * Threading: new/start/stop/free from one owner thread; ready/rounds from
 * any.
 */
#ifndef JS_ROTATOR_H
#define JS_ROTATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "base/common.h"
#include "kube/client.h"

/** Receives one line (no newline): level 0 error, 1 info, 4 debug. From the
 * rotator's thread. */
typedef js_log_fn js_rotator_log_fn;

struct js_rotator_opts {
	struct js_client *client;       /* required; must outlive the rotator */
	const char *namespace_;         /* of the Secret and the Service; required */
	const char *secret_name;        /* required */
	const char *service_name;       /* required: names <svc>.<ns>.svc[.cluster.local] */
	const char *mutating_name;      /* MutatingWebhookConfiguration; NULL/"" = none */
	const char *validating_name;    /* ValidatingWebhookConfiguration; NULL/"" = none */
	const char *cert_dir;           /* required */
	const char *const *extra_sans;  /* more DNS names or IP addresses */
	size_t n_extra_sans;
	int interval_ms;                /* between checks; 0 = 60000 */
	js_rotator_log_fn *log;         /* may be NULL */
	void *log_user;
};

struct js_rotator;

/** Create (not started); copies the options. Returns 0, or JS_EINVALID
 * (a required option is missing, or an extra name is neither a DNS name nor
 * an IP address). */
JS_WARN_UNUSED int js_rotator_new(const struct js_rotator_opts *opts, struct js_rotator **ret);

/** Start the thread (first check at once). Returns 0 or -errno. */
JS_WARN_UNUSED int js_rotator_start(struct js_rotator *r);

/** True while the cert dir holds the Secret's current serving pair. */
bool js_rotator_ready(struct js_rotator *r);

/** Number of completed checks, successful or not (tests wait on it). */
uint64_t js_rotator_rounds(struct js_rotator *r);

/** Stop the thread and join it: a check in flight ends at its next step
 * (its API request is cancelled; a file write completes). Idempotent.
 * Returns 0, or -EDEADLK from the rotator's own thread. */
int js_rotator_stop(struct js_rotator *r);

/** Free. NULL is a no-op. Returns 0, or -EBUSY (nothing freed) while the
 * thread runs: call js_rotator_stop first (ctrl/controller.h lifecycle). */
JS_WARN_UNUSED int js_rotator_free(struct js_rotator *r);

#endif
