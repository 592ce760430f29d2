/*
 * main.c - jobset-controller: flags and config (ctrl/config.h), the
 * Kubernetes client, the JobSet controller (ctrl/controller.h), /metrics
 * (an HTTPS server of webhook/webhook.h whose callers are checked by
 * ctrl/authz.h, as upstream's; plain HTTP with --metrics-secure=false) and
 * the health probes (plain HTTP, as upstream's), signals. The only file that
 * prints.
 *
 * Exit status: 0 after a graceful stop (SIGTERM/SIGINT), 1 on a startup
 * error or when leadership is lost, 2 for a usage error.
 */
#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/diag.h"
#include "base/limits.h"
#include "ctrl/authz.h"
#include "ctrl/certs.h"
#include "ctrl/config.h"
#include "ctrl/controller.h"
#include "ctrl/hooks.h"
#include "ctrl/metrics.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "webhook/webhook.h"

static struct js_config arg_cfg;
static int arg_verbosity;

static void logf_(int level, const char *fmt, ...) JS_PRINTF(2, 3);
static void logf_(int level, const char *fmt, ...)
{
	if (level > arg_verbosity && level > 1)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char stamp[32];
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	char line[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s.%03ldZ %s %s\n", stamp, ts.tv_nsec / 1000000, level == 0 ? "ERROR" : "INFO ", line);
}

static void ctrl_log(void *user, int level, const char *msg)
{
	(void)user;
	logf_(level, "%s", msg);
}

struct serve {
	struct js_controller *c;
	struct js_hooks *hooks; /* NULL without --enable-webhooks */
	struct js_authz *authz; /* NULL with --metrics-secure=false */
};

/* Metrics and probes are read-only: GET and HEAD, else 405 (false). */
static bool readable(const struct js_webhook_req *req, struct js_buf *body)
{
	const char *m = js_webhook_req_method(req);
	if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0)
		return true;
	(void)!js_buf_puts(body, "method not allowed\n");
	return false;
}

static int metrics_route(void *user, const struct js_webhook_req *req, struct js_buf *body, const char **ctype)
{
	struct serve *s = user;
	if (s->authz) {
		/* Who asks, before anything else (upstream's filter wraps the
		 * whole handler). Never log the header: it holds the token. */
		struct js_authz_result a;
		int code = js_authz_check(s->authz, js_webhook_req_header(req, "Authorization"),
					  js_webhook_req_method(req), js_webhook_req_path(req), &a);
		if (code != 200) {
			if (code == 500)
				logf_(0, "metrics: %s", a.message);
			else
				logf_(4, "metrics: %d %s%s", code, a.message, a.cached ? " (cached)" : "");
			(void)!js_buf_printf(body, "%s\n", a.message);
			return code;
		}
	}
	if (!readable(req, body))
		return 405;
	js_controller_refresh_metrics(s->c);
	*ctype = "text/plain; version=0.0.4; charset=utf-8";
	return js_metrics_expose(js_controller_metrics(s->c), body) < 0 ? 500 : 200;
}

static int healthz_route(void *user, const struct js_webhook_req *req, struct js_buf *body, const char **ctype)
{
	(void)user;
	(void)ctype;
	if (!readable(req, body))
		return 405;
	(void)!js_buf_puts(body, "ok\n");
	return 200;
}

static int readyz_route(void *user, const struct js_webhook_req *req, struct js_buf *body, const char **ctype)
{
	struct serve *s = user;
	(void)ctype;
	if (!readable(req, body))
		return 405;
	const char *why = NULL;
	if (s->hooks && !js_hooks_ready(s->hooks, &why)) {
		(void)!js_buf_printf(body, "%s\n", why);
		return 503;
	}
	if (js_controller_ready(s->c)) {
		(void)!js_buf_puts(body, "ok\n");
		return 200;
	}
	(void)!js_buf_puts(body, "caches are not synced\n");
	return 503;
}

static void http_log(void *user, int level, const char *msg)
{
	(void)user;
	/* The server's levels: 0 error, 1 warning, 2 info, 4 debug. */
	logf_(level == 0 ? 0 : level <= 2 ? 1 : 4, "%s", msg);
}

/* "/name" for a configured endpoint name, with or without its slash. */
static char *route_path(const char *name)
{
	return js_buf_format("/%s", name[0] == '/' ? name + 1 : name);
}

/* Stop and free a metrics or probe server (main's thread is never one of
 * its handlers, so neither call can fail). */
static void stop_http(struct js_webhook_server *srv)
{
	if (js_webhook_server_stop(srv) < 0 || js_webhook_server_free(srv) < 0)
		logf_(0, "internal error: an HTTP server would not stop");
}

static int load_config(struct js_kubeconfig *kc)
{
	const char *paths = arg_cfg.kubeconfig;
	if (!paths || !*paths)
		paths = getenv("KUBECONFIG");
	if (!paths || !*paths) {
		int r = js_kubeconfig_in_cluster(NULL, kc);
		if (r == 0)
			return 0;
		if (r != JS_ENOTFOUND) {
			logf_(0, "in-cluster configuration: %s", js_strerror(r));
			return -1;
		}
		paths = NULL; /* ~/.kube/config */
	}
	struct js_diag d = {0};
	int r = js_kubeconfig_load(paths, arg_cfg.context, &d, kc);
	if (r < 0) {
		logf_(0, "kubeconfig: %s", d.n ? d.items[0].message : js_strerror(r));
		js_diag_done(&d);
		return -1;
	}
	js_diag_done(&d);
	return 0;
}

static char *default_identity(void)
{
	char host[256] = "unknown";
	(void)gethostname(host, sizeof(host) - 1);
	unsigned rnd = 0;
	FILE *f = fopen("/dev/urandom", "rbe");
	if (f) {
		if (fread(&rnd, sizeof(rnd), 1, f) != 1)
			rnd = (unsigned)time(NULL);
		fclose(f);
	}
	char buf[400];
	snprintf(buf, sizeof(buf), "%s_%d_%08x", host, (int)getpid(), rnd);
	return strdup(buf);
}

/* SPEC §12.5: the operator namespace is the service account's, trimmed,
 * else jobset-system. */
static char *operator_namespace(void)
{
	FILE *f = fopen("/var/run/secrets/kubernetes.io/serviceaccount/namespace", "re");
	char buf[256] = "";
	if (f) {
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		fclose(f);
	}
	char *p = buf;
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	size_t n = strlen(p);
	while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\n' || p[n - 1] == '\t' || p[n - 1] == '\r'))
		p[--n] = '\0';
	return strdup(*p ? p : JS_CONFIG_CERT_NAMESPACE);
}

static bool file_readable(const char *dir, const char *name)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, R_OK) == 0;
}

struct sans {
	char *copy;      /* --cert-extra-sans, cut at the commas */
	const char *v[64];
	size_t n;
};

/* Split "a,b,c" (empty items skipped). Returns 0 or -1 (too many). */
static int split_sans(const char *s, struct sans *ret)
{
	ret->copy = strdup(s ? s : "");
	ret->n = 0;
	for (char *p = ret->copy; p && *p;) {
		size_t k = strcspn(p, ",");
		char *next = p[k] ? p + k + 1 : NULL;
		p[k] = '\0';
		if (*p) {
			if (ret->n == JS_ARRAY_SIZE(ret->v))
				return -1;
			ret->v[ret->n++] = p;
		}
		p = next;
	}
	return 0;
}

/* How a server of ours speaks TLS: a cert dir, or a pair in memory, and
 * the configured settings. NULL tls = plain HTTP. */
struct tls_setup {
	const char *cert_dir;
	const char *cert_pem, *key_pem;
	enum js_webhook_tls_min min;
	const char *ciphers;
};

/* A server for `routes` on `addr` (js_config_parse_addr's forms); *ret
 * stays NULL when the address says "off". */
static int start_http(const char *what, const char *addr, const struct tls_setup *tls,
		      const struct js_webhook_route *routes, size_t n, struct js_webhook_server **ret)
{
	bool off = false;
	char *host = NULL;
	int port = 0;
	if (js_config_parse_addr(addr, &off, &host, &port) < 0) {
		logf_(0, "%s: invalid address '%s'", what, addr);
		return -1;
	}
	if (off)
		return 0;
	/* One thread: these handlers are quick and read shared state (the
	 * metrics server's reviews, on a cache miss, wait for the API). */
	struct js_webhook_opts o = {.bind_address = host,
				    .port = (uint16_t)port,
				    .cert_dir = tls ? tls->cert_dir : NULL,
				    .cert_pem = tls ? tls->cert_pem : NULL,
				    .key_pem = tls ? tls->key_pem : NULL,
				    .tls_min = tls ? tls->min : JS_WEBHOOK_TLS_MIN_1_2,
				    .tls_ciphers = tls ? tls->ciphers : NULL,
				    .routes = routes,
				    .n_routes = n,
				    .threads = 1,
				    .max_connections = JS_LIMIT_PROBE_CONNS,
				    .log = http_log};
	int r = js_webhook_server_new(&o, ret);
	free(host);
	if (r < 0) {
		logf_(0, "%s: cannot serve on '%s': %s", what, addr, js_strerror(r));
		return -1;
	}
	logf_(1, "%s: serving %s on '%s' (port %u)", what, tls ? "HTTPS" : "plain HTTP", addr,
	      js_webhook_server_port(*ret));
	return 0;
}

/* The TLS settings (SPEC §12.2, §12.6) for both servers: *min, and *ciphers
 * (an OpenSSL list, caller frees; NULL = OpenSSL's). Returns 0 or -1
 * (logged, with upstream's wording). */
static int tls_settings(enum js_webhook_tls_min *min, char **ciphers)
{
	*min = arg_cfg.tls_min_version && strcmp(arg_cfg.tls_min_version, "VersionTLS13") == 0
		       ? JS_WEBHOOK_TLS_MIN_1_3
		       : JS_WEBHOOK_TLS_MIN_1_2;
	*ciphers = NULL;
	const char *list = arg_cfg.tls_cipher_suites;
	if (!list || !*list)
		return 0;
	struct sans names = {0};
	int r = split_sans(list, &names);
	char *err = NULL;
	if (r < 0)
		err = js_xstrdup("invalid cipher suites: too many");
	else
		r = js_webhook_tls_ciphers(names.v, names.n, ciphers, &err);
	free(names.copy);
	if (r < 0) {
		logf_(0, "%s", err ? err : js_strerror(r));
		free(err);
		return -1;
	}
	return 0;
}

/* Where the metrics server's certificate comes from (upstream's rule, SPEC
 * §12.2): metrics.certDir when set; the default metrics cert dir when
 * internal certificate management is turned off and that dir holds a pair;
 * else a self-signed certificate for localhost made now, kept in memory
 * (*self, caller frees). Returns 0 or -1 (logged). */
static int metrics_cert(struct tls_setup *t, struct js_certs *self)
{
	if (arg_cfg.metrics_cert_dir && *arg_cfg.metrics_cert_dir) {
		t->cert_dir = arg_cfg.metrics_cert_dir;
		return 0;
	}
	if (arg_cfg.cert_management && strcmp(arg_cfg.cert_management, "none") == 0 &&
	    file_readable(JS_CONFIG_METRICS_CERT_DIR, "tls.crt") && file_readable(JS_CONFIG_METRICS_CERT_DIR, "tls.key")) {
		t->cert_dir = JS_CONFIG_METRICS_CERT_DIR;
		return 0;
	}
	static const char *const dns[] = {"localhost"};
	static const char *const ips[] = {"127.0.0.1", "::1"};
	struct js_certs_names names = {dns, 1, ips, 2};
	int r = js_certs_generate(&names, (int64_t)time(NULL), self);
	if (r < 0) {
		logf_(0, "metrics: cannot make a self-signed certificate: %s", js_strerror(r));
		return -1;
	}
	t->cert_pem = self->tls_crt;
	t->key_pem = self->tls_key;
	return 0;
}

/* The admission webhooks and, when on, internal certificate management. */
static int start_hooks(struct js_client *client, const struct tls_setup *tls, struct sans *sans, char **cert_ns,
		       struct js_hooks **ret)
{
	const char *dir = arg_cfg.webhook_cert_dir;
	const char *mode = arg_cfg.cert_management;
	/* Default: internal, unless certificates were provided (cert-manager,
	 * a mounted Secret someone else fills). deploy/ says internal. */
	bool internal = mode ? strcmp(mode, "internal") == 0
			     : !(file_readable(dir, "tls.crt") && file_readable(dir, "tls.key"));
	if (split_sans(arg_cfg.cert_extra_sans, sans) < 0) {
		logf_(0, "--cert-extra-sans: at most %zu names", JS_ARRAY_SIZE(sans->v));
		return -1;
	}
	*cert_ns = arg_cfg.cert_namespace && *arg_cfg.cert_namespace ? strdup(arg_cfg.cert_namespace)
								     : operator_namespace();
	struct js_hooks_opts ho = {
		.client = client,
		.host = arg_cfg.webhook_host,
		.port = arg_cfg.webhook_port,
		.cert_dir = dir,
		.gates = arg_cfg.gates,
		.strict = true,
		.placement = arg_cfg.placement,
		.watcher_image = arg_cfg.watcher_image,
		.tls_min = tls->min,
		.tls_ciphers = tls->ciphers,
		.internal = internal,
		.rotator = {.namespace_ = *cert_ns,
			    .secret_name = arg_cfg.secret_name,
			    .service_name = arg_cfg.service_name,
			    .mutating_name = arg_cfg.mutating_name,
			    .validating_name = arg_cfg.validating_name,
			    .extra_sans = sans->v,
			    .n_extra_sans = sans->n,
			    .interval_ms = arg_cfg.cert_interval_ms},
		.log = ctrl_log,
	};
	int r = js_hooks_new(&ho, ret);
	if (r == 0)
		r = js_hooks_start(*ret);
	if (r < 0) {
		logf_(0, "webhooks: %s", r == JS_EINVALID ? "invalid options (a --cert-extra-sans name?)" : js_strerror(r));
		return -1;
	}
	if (internal)
		logf_(1, "webhooks: internal certificate management: secret '%s/%s', service '%s', CA bundle into '%s' "
			 "and '%s', every %d s",
		      *cert_ns, arg_cfg.secret_name, arg_cfg.service_name, arg_cfg.mutating_name,
		      arg_cfg.validating_name, arg_cfg.cert_interval_ms / 1000);
	else
		logf_(1, "webhooks: certificates provided in '%s' (no internal certificate management)", dir);
	return 0;
}

/* Wait for SIGTERM/SIGINT, or for leadership to be lost. Returns the signal
 * number, or 0 when the lease was lost. */
static int wait_stop(struct js_controller *c, const sigset_t *set)
{
	for (;;) {
		struct timespec ts = {.tv_sec = 0, .tv_nsec = 200 * 1000000L};
		int sig = sigtimedwait(set, NULL, &ts);
		if (sig > 0)
			return sig;
		if (js_controller_lost(c))
			return 0;
	}
}

int main(int argc, char **argv)
{
	js_config_defaults(&arg_cfg);
	char *err = NULL;
	if (js_config_parse_args(&arg_cfg, argc, argv, &err) < 0) {
		fprintf(stderr, "jobset-controller: %s\n%s", err, js_config_usage());
		free(err);
		js_config_done(&arg_cfg);
		return 2;
	}
	if (arg_cfg.help || arg_cfg.version) {
		fputs(arg_cfg.help ? js_config_usage() : "jobset-controller " JS_VERSION "\n", stdout);
		js_config_done(&arg_cfg);
		return 0;
	}
	arg_verbosity = arg_cfg.verbosity;
	/* Once, at start: the old gate name still works for one release. */
	if (arg_cfg.gate_warning)
		logf_(1, "warning: %s", arg_cfg.gate_warning);

	/* Signals are taken synchronously by main; every thread inherits the mask. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);

	int rc = 1;
	struct js_kubeconfig kc = {0};
	struct js_client *client = NULL;
	struct js_controller *ctl = NULL;
	struct js_webhook_server *metrics = NULL, *probes = NULL;
	struct serve sv = {0};
	char *healthz = NULL, *readyz = NULL;
	struct js_hooks *hooks = NULL;
	struct sans sans = {0};
	char *cert_ns = NULL;
	struct tls_setup tls = {0};
	char *ciphers = NULL;
	struct js_certs self_signed = {0};
	char *identity = arg_cfg.identity ? strdup(arg_cfg.identity) : default_identity();
	if (tls_settings(&tls.min, &ciphers) < 0 || load_config(&kc) < 0)
		goto out;
	tls.ciphers = ciphers;
	char ua[128];
	snprintf(ua, sizeof(ua), "jobset-controller/%s", JS_VERSION);
	struct js_client_opts co = {.qps = arg_cfg.qps, .burst = arg_cfg.burst, .user_agent = ua};
	int r = js_client_new(&kc, &co, &client);
	if (r < 0) {
		logf_(0, "client: %s", js_strerror(r));
		goto out;
	}
	const char *lease_ns = arg_cfg.lease_namespace && *arg_cfg.lease_namespace ? arg_cfg.lease_namespace
										      : js_client_namespace(client);
	struct js_controller_opts o = {
		.client = client,
		.workers = arg_cfg.concurrency,
		.gates = arg_cfg.gates,
		.leader_elect = arg_cfg.leader_elect,
		.lease_namespace = lease_ns,
		.lease_name = arg_cfg.lease_name,
		.identity = identity,
		.lease_duration_ms = arg_cfg.lease_duration_ms,
		.renew_deadline_ms = arg_cfg.renew_deadline_ms,
		.retry_period_ms = arg_cfg.retry_period_ms,
		.fold_window_ms = arg_cfg.fold_window_ms,
		.placement = arg_cfg.placement,
		.cleanup_direct = !arg_cfg.restart_foreground,
		.log = ctrl_log,
	};
	r = js_controller_new(&o, &ctl);
	if (r < 0) {
		logf_(0, "controller: %s", js_strerror(r));
		goto out;
	}
	/* Webhooks run on every replica, leader or not (SPEC §12). */
	if (arg_cfg.webhooks && start_hooks(client, &tls, &sans, &cert_ns, &hooks) < 0)
		goto out;
	sv = (struct serve){.c = ctl, .hooks = hooks};
	struct tls_setup mtls = tls;
	if (arg_cfg.metrics_secure) {
		struct js_authz_opts ao = {.client = client};
		if (metrics_cert(&mtls, &self_signed) < 0 || js_authz_new(&ao, &sv.authz) < 0)
			goto out;
	}
	healthz = route_path(arg_cfg.healthz_path);
	readyz = route_path(arg_cfg.readyz_path);
	const struct js_webhook_route mroutes[] = {{"/metrics", metrics_route, &sv}};
	const struct js_webhook_route proutes[] = {{healthz, healthz_route, &sv}, {readyz, readyz_route, &sv}};
	if (start_http("metrics", arg_cfg.metrics_addr, arg_cfg.metrics_secure ? &mtls : NULL, mroutes,
		       JS_ARRAY_SIZE(mroutes), &metrics) < 0 ||
	    start_http("health probes", arg_cfg.health_addr, NULL, proutes, JS_ARRAY_SIZE(proutes), &probes) < 0)
		goto out;
	if (metrics)
		logf_(1, "metrics: %s", !arg_cfg.metrics_secure ? "no authentication (--metrics-secure=false)"
					: mtls.cert_dir ? "callers checked by TokenReview and SubjectAccessReview; "
							  "certificate from the metrics cert dir"
							: "callers checked by TokenReview and SubjectAccessReview; "
							  "self-signed certificate");
	r = js_controller_start(ctl);
	if (r < 0) {
		logf_(0, "start: %s", js_strerror(r));
		goto out;
	}
	logf_(1, "jobset-controller %s: server %s, qps %.0f burst %d, %d workers, leader election %s (%s/%s as %s)",
	      JS_VERSION, kc.server, arg_cfg.qps, arg_cfg.burst, arg_cfg.concurrency,
	      arg_cfg.leader_elect ? "on" : "off", lease_ns, arg_cfg.lease_name, identity);
	int sig = wait_stop(ctl, &set);
	if (sig > 0) {
		logf_(1, "%s: stopping: finishing in-flight reconciles, then releasing the lease",
		      sig == SIGTERM ? "SIGTERM" : "SIGINT");
		rc = js_controller_stop(ctl, 30000) == 0 ? 0 : 1;
	} else {
		logf_(0, "leader election lost: exiting");
		(void)js_controller_stop(ctl, 5000);
		rc = 1;
	}
	logf_(1, "stopped");
out:
	/* Probes and metrics first: their handlers read the hooks and the
	 * controller. */
	stop_http(probes);
	stop_http(metrics);
	sv.authz = js_authz_free(sv.authz);
	js_certs_done(&self_signed);
	free(ciphers);
	free(healthz);
	free(readyz);
	hooks = js_hooks_free(hooks);
	free(sans.copy);
	free(cert_ns);
	/* After an early failure the controller may be half started: stop is
	 * what makes free possible (it never returns with a worker running). */
	if (ctl)
		(void)js_controller_stop(ctl, 5000);
	if (js_controller_free(ctl) < 0)
		rc = 1; /* logged by the controller; exiting ends the threads */
	client = js_client_free(client);
	js_kubeconfig_done(&kc);
	free(identity);
	js_config_done(&arg_cfg);
	curl_global_cleanup();
	return rc;
}
