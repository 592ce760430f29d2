/*
 * hooks.c - the webhook server hosted by jobset-controller: lookups through
 * the API client, deferred start until certificates exist. See hooks.h.
 */
#include "ctrl/hooks.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/buf.h"
#include "webhook/webhook.h"

/* How often the server start is retried until the certificates load. */
#define HOOKS_RETRY_MS 250

static const struct js_resource res_nodes = {"", "v1", "nodes", false};

struct js_hooks {
	struct js_hooks_opts o;
	char *host, *cert_dir, *tls_ciphers;
	struct js_rotator *rot;
	struct js_webhook_server *srv; /* written by the thread before `serving` is set */
	atomic_bool serving;
	atomic_uint port;

	pthread_t thread;
	bool running;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool stop; /* guarded by mu */
};

static void logf_(struct js_hooks *h, int level, const char *fmt, ...) JS_PRINTF(3, 4);
static void logf_(struct js_hooks *h, int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	js_log_vprintf(h->o.log, h->o.log_user, level, fmt, ap);
	va_end(ap);
}

/* ---- lookups (server threads; the client is thread-safe) ---- */

static char *err_text(const struct js_apierr *e, int r)
{
	return js_xstrdup(e->message ? e->message : js_strerror(r));
}

static enum js_pvc_lookup pvc_lookup(void *ctx, const char *ns, const char *name, json_t **ret_spec, char **ret_err)
{
	struct js_hooks *h = ctx;
	struct js_apierr e = {0};
	json_t *pvc = NULL;
	int r = js_client_get(h->o.client, &js_client_res_pvcs, ns, name, NULL, &pvc, &e);
	enum js_pvc_lookup out = JS_PVC_FOUND;
	if (r == JS_ENOTFOUND) {
		out = JS_PVC_NOT_FOUND;
	} else if (r < 0) {
		*ret_err = err_text(&e, r);
		out = JS_PVC_ERROR;
	} else {
		json_t *spec = json_object_get(pvc, "spec");
		*ret_spec = spec ? json_incref(spec) : json_object();
	}
	json_decref(pvc);
	js_apierr_done(&e);
	return out;
}

static int list_pods(void *ctx, const char *ns, const json_t *match, json_t **ret_pods, char **ret_err)
{
	struct js_hooks *h = ctx;
	struct js_buf sel;
	js_buf_init(&sel, 4096);
	const char *k;
	const json_t *v;
	int r = 0;
	json_object_foreach((json_t *)(uintptr_t)match, k, v)
	{
		if (r == 0 && json_is_string(v))
			r = js_buf_printf(&sel, "%s%s=%s", sel.len ? "," : "", k, json_string_value(v));
	}
	/* Never an unscoped LIST of every pod: the webhook always passes the
	 * jobset-name label. */
	if (r == 0 && sel.len == 0)
		r = JS_EINVALID;
	struct js_list_opts lo = {.label_selector = js_buf_str(&sel)};
	struct js_apierr e = {0};
	json_t *list = NULL;
	if (r == 0)
		r = js_client_list(h->o.client, &js_client_res_pods, ns, &lo, &list, &e);
	if (r < 0) {
		*ret_err = err_text(&e, r);
	} else {
		json_t *items = json_object_get(list, "items");
		*ret_pods = items ? json_incref(items) : json_array();
	}
	json_decref(list);
	js_apierr_done(&e);
	js_buf_done(&sel);
	return r;
}

static int get_node(void *ctx, const char *name, json_t **ret_node, int *ret_code, char **ret_err)
{
	struct js_hooks *h = ctx;
	struct js_apierr e = {0};
	int r = js_client_get(h->o.client, &res_nodes, NULL, name, NULL, ret_node, &e);
	if (r < 0) {
		*ret_code = r == JS_ENOTFOUND ? 404 : e.http_code ? (int)e.http_code : 500;
		*ret_err = err_text(&e, r);
	}
	js_apierr_done(&e);
	return r;
}

static void server_log(void *ctx, int level, const char *msg)
{
	struct js_hooks *h = ctx;
	if (h->o.log)
		h->o.log(h->o.log_user, level >= 2 ? (level == 2 ? 1 : 4) : 0, msg);
}

/* ---- starting the server once the certificates are there ---- */

static bool certs_present(struct js_hooks *h)
{
	if (h->rot)
		return js_rotator_ready(h->rot);
	char p[4096];
	snprintf(p, sizeof(p), "%s/tls.crt", h->cert_dir);
	bool ok = access(p, R_OK) == 0;
	snprintf(p, sizeof(p), "%s/tls.key", h->cert_dir);
	return ok && access(p, R_OK) == 0;
}

static int try_start(struct js_hooks *h, int *last_err)
{
	struct js_webhook_opts wo = {
		.bind_address = h->host,
		.port = (uint16_t)h->o.port,
		.cert_dir = h->cert_dir,
		.tls_min = h->o.tls_min,
		.tls_ciphers = h->tls_ciphers,
		.admission = true,
		.admit = {.gates = h->o.gates,
			  .strict = h->o.strict,
			  .placement = h->o.placement,
			  .watcher_image = h->o.watcher_image,
			  .lookups = {h, pvc_lookup, list_pods, get_node}},
		.log = server_log,
		.log_ctx = h,
	};
	struct js_webhook_server *srv = NULL;
	int r = js_webhook_server_new(&wo, &srv);
	if (r < 0) {
		if (r != *last_err)
			logf_(h, 0, "webhook server on port %d: %s (retrying)", h->o.port, js_strerror(r));
		*last_err = r;
		return r;
	}
	h->srv = srv;
	atomic_store(&h->port, js_webhook_server_port(srv));
	atomic_store(&h->serving, true);
	logf_(h, 1, "webhook server: serving the admission webhooks on https://%s:%u (certificates from '%s')",
	      h->host ? h->host : "0.0.0.0", js_webhook_server_port(srv), h->cert_dir);
	return 0;
}

static void *run(void *arg)
{
	struct js_hooks *h = arg;
	int last_err = 0;
	pthread_mutex_lock(&h->mu);
	while (!h->stop && !atomic_load(&h->serving)) {
		pthread_mutex_unlock(&h->mu);
		if (certs_present(h))
			(void)!try_start(h, &last_err);
		struct timespec dl = js_clock_deadline_ts(HOOKS_RETRY_MS);
		pthread_mutex_lock(&h->mu);
		while (!h->stop && !atomic_load(&h->serving) &&
		       pthread_cond_timedwait(&h->cond, &h->mu, &dl) != ETIMEDOUT) {
		}
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* ---- lifecycle ---- */

int js_hooks_new(const struct js_hooks_opts *opts, struct js_hooks **ret)
{
	if (!opts->client || !opts->cert_dir || !*opts->cert_dir || opts->port < 0 || opts->port > 65535)
		return JS_EINVALID;
	struct js_hooks *h = js_xcalloc(1, sizeof(*h));
	h->o = *opts;
	h->host = opts->host && *opts->host ? js_xstrdup(opts->host) : NULL;
	h->cert_dir = js_xstrdup(opts->cert_dir);
	h->tls_ciphers = opts->tls_ciphers ? js_xstrdup(opts->tls_ciphers) : NULL;
	h->o.tls_ciphers = NULL; /* ours is h->tls_ciphers */
	pthread_mutex_init(&h->mu, NULL);
	js_clock_cond_init(&h->cond);
	if (opts->internal) {
		struct js_rotator_opts ro = opts->rotator;
		ro.client = opts->client;
		ro.cert_dir = h->cert_dir;
		if (!ro.log) {
			ro.log = opts->log;
			ro.log_user = opts->log_user;
		}
		int r = js_rotator_new(&ro, &h->rot);
		if (r < 0) {
			(void)js_hooks_free(h);
			return r;
		}
	}
	memset(&h->o.rotator, 0, sizeof(h->o.rotator));
	*ret = h;
	return 0;
}

int js_hooks_start(struct js_hooks *h)
{
	if (h->running)
		return -EBUSY;
	if (h->rot) {
		int r = js_rotator_start(h->rot);
		if (r < 0)
			return r;
	}
	int r = pthread_create(&h->thread, NULL, run, h);
	if (r != 0)
		return -r;
	h->running = true;
	return 0;
}

bool js_hooks_ready(struct js_hooks *h, const char **ret_reason)
{
	bool ok = atomic_load(&h->serving) && (!h->rot || js_rotator_ready(h->rot)) &&
		  js_webhook_server_ready(h->srv);
	if (!ok && ret_reason)
		*ret_reason = "certificates are not ready";
	return ok;
}

uint16_t js_hooks_port(struct js_hooks *h)
{
	return (uint16_t)atomic_load(&h->port);
}

struct js_hooks *js_hooks_free(struct js_hooks *h)
{
	if (!h)
		return NULL;
	if (h->running) {
		pthread_mutex_lock(&h->mu);
		h->stop = true;
		pthread_cond_broadcast(&h->cond);
		pthread_mutex_unlock(&h->mu);
		pthread_join(h->thread, NULL);
	}
	/* The server first: its lookups use the client, the rotator nothing
	 * the server needs. Once stop has returned no lookup runs; it fails
	 * only when called from a handler, which the hooks never do. */
	if (js_webhook_server_stop(h->srv) == 0 && js_webhook_server_free(h->srv) == 0)
		h->srv = NULL;
	if (h->rot) {
		(void)js_rotator_stop(h->rot);
		(void)!js_rotator_free(h->rot); /* stopped: cannot refuse */
		h->rot = NULL;
	}
	free(h->host);
	free(h->cert_dir);
	free(h->tls_ciphers);
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->mu);
	free(h);
	return NULL;
}
