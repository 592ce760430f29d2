/*
 * jobset-webhook - a small host for the admission webhook server
 * (src/webhook) until jobset-controller serves it: the four admission paths
 * over TLS, /healthz and /readyz, with PVC, pod and node lookups made as
 * direct API calls through src/kube. Used by tests/e2e/cluster.
 *
 *   jobset-webhook --cert-dir DIR [--bind 127.0.0.1] [--port 9443]
 *                  [--kubeconfig FILE] [--feature-gates RestartJob=true,...]
 *                  [--port-file FILE] [--upstream-checks-only]
 *
 * Runs until SIGTERM or SIGINT. Exit status 0 after a signal, 1 on a start-up
 * error, 2 on a usage error.
 */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/gates.h"
#include "base/buf.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "webhook/webhook.h"

static const struct js_resource res_pvcs = {"", "v1", "persistentvolumeclaims", true};
static const struct js_resource res_nodes = {"", "v1", "nodes", false};

static char *err_text(const struct js_apierr *e, int r)
{
	return strdup(e->message ? e->message : js_apierr_strerror(r));
}

static enum js_pvc_lookup pvc_lookup(void *ctx, const char *ns, const char *name, json_t **ret_spec, char **ret_err)
{
	struct js_apierr e = {0};
	json_t *pvc = NULL;
	int r = js_client_get(ctx, &res_pvcs, ns, name, NULL, &pvc, &e);
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
	struct js_buf sel;
	js_buf_init(&sel, 4096);
	const char *k;
	json_t *v;
	int r = 0;
	json_object_foreach((json_t *)(uintptr_t)match, k, v)
	{
		if (r == 0)
			r = js_buf_printf(&sel, "%s%s=%s", sel.len ? "," : "", k, json_string_value(v));
	}
	struct js_list_opts lo = {.label_selector = js_buf_str(&sel)};
	struct js_apierr e = {0};
	json_t *list = NULL;
	if (r == 0)
		r = js_client_list(ctx, &js_client_res_pods, ns, &lo, &list, &e);
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
	struct js_apierr e = {0};
	int r = js_client_get(ctx, &res_nodes, NULL, name, NULL, ret_node, &e);
	if (r < 0) {
		*ret_code = e.http_code ? (int)e.http_code : 500;
		*ret_err = err_text(&e, r);
	}
	js_apierr_done(&e);
	return r;
}

static int healthz(void *ctx, const struct js_webhook_req *req, struct js_buf *body, const char **ret_ctype)
{
	(void)ctx;
	(void)req;
	(void)ret_ctype;
	return js_buf_puts(body, "ok") < 0 ? 500 : 200;
}

static int readyz(void *ctx, const struct js_webhook_req *req, struct js_buf *body, const char **ret_ctype)
{
	(void)req;
	(void)ret_ctype;
	bool ok = js_webhook_server_ready(*(struct js_webhook_server **)ctx);
	return js_buf_puts(body, ok ? "ok" : "certificates are not ready") < 0 ? 500 : ok ? 200 : 500;
}

static void log_line(void *ctx, int level, const char *msg)
{
	(void)ctx;
	if (level <= 2)
		fprintf(stderr, "jobset-webhook: %s\n", msg);
}

/* A decimal port 0..65535, digits only. Returns 0 or -1. */
static int parse_port(const char *s, long *ret)
{
	long v = 0;
	if (!*s || strlen(s) > 5)
		return -1;
	for (const char *c = s; *c; c++) {
		if (*c < '0' || *c > '9')
			return -1;
		v = v * 10 + (*c - '0');
	}
	if (v > 65535)
		return -1;
	*ret = v;
	return 0;
}

int main(int argc, char **argv)
{
	const char *bind = "127.0.0.1", *cert_dir = NULL, *kubeconfig = NULL, *port_file = NULL;
	long port = 9443;
	struct js_webhook_opts o = {.admission = true, .admit = {.strict = true}};
	static const struct option opts[] = {
		{"bind", required_argument, NULL, 'b'},       {"port", required_argument, NULL, 'p'},
		{"cert-dir", required_argument, NULL, 'c'},   {"kubeconfig", required_argument, NULL, 'k'},
		{"feature-gates", required_argument, NULL, 'g'}, {"port-file", required_argument, NULL, 'f'},
		{"upstream-checks-only", no_argument, NULL, 'u'}, {NULL, 0, NULL, 0},
	};
	int c;
	char *gerr = NULL;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'b': bind = optarg; break;
		case 'p':
			if (parse_port(optarg, &port) < 0) {
				fprintf(stderr, "jobset-webhook: bad --port '%s'\n", optarg);
				return 2;
			}
			break;
		case 'c': cert_dir = optarg; break;
		case 'k': kubeconfig = optarg; break;
		case 'f': port_file = optarg; break;
		case 'u': o.admit.strict = false; break;
		case 'g':
			if (js_gates_parse(optarg, &o.admit.gates, &gerr) < 0) {
				fprintf(stderr, "jobset-webhook: --feature-gates: %s\n", gerr);
				free(gerr);
				return 2;
			}
			break;
		default: return 2;
		}
	}
	if (!cert_dir) {
		fprintf(stderr, "jobset-webhook: --cert-dir is required\n");
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	signal(SIGPIPE, SIG_IGN);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* before any thread starts */

	struct js_diag d = {0};
	struct js_kubeconfig kc;
	struct js_client *client = NULL;
	int r = js_kubeconfig_load(kubeconfig, NULL, &d, &kc);
	if (r == 0) {
		r = js_client_new(&kc, &(struct js_client_opts){.qps = 50, .burst = 100}, &client);
		js_kubeconfig_done(&kc);
	}
	if (r < 0) {
		fprintf(stderr, "jobset-webhook: no API client: %s\n", js_strerror(r));
		for (size_t i = 0; i < d.n; i++)
			fprintf(stderr, "  %s\n", d.items[i].message);
		js_diag_done(&d);
		return 1;
	}
	js_diag_done(&d);

	struct js_webhook_server *srv = NULL;
	struct js_webhook_route routes[] = {{"/healthz", healthz, NULL}, {"/readyz", readyz, &srv}};
	o.bind_address = bind;
	o.port = (uint16_t)port;
	o.cert_dir = cert_dir;
	o.routes = routes;
	o.n_routes = 2;
	o.log = log_line;
	o.admit.lookups = (struct js_webhook_lookups){client, pvc_lookup, list_pods, get_node};
	r = js_webhook_server_new(&o, &srv);
	if (r < 0) {
		fprintf(stderr, "jobset-webhook: cannot serve on %s:%ld: %s\n", bind, port, js_strerror(r));
		js_client_free(client);
		return 1;
	}
	fprintf(stderr, "jobset-webhook: serving on https://%s:%u\n", bind, js_webhook_server_port(srv));
	if (port_file) {
		FILE *f = fopen(port_file, "we");
		if (f) {
			fprintf(f, "%u\n", js_webhook_server_port(srv));
			fclose(f);
		}
	}
	int sig = 0;
	sigwait(&set, &sig);
	fprintf(stderr, "jobset-webhook: signal %d, stopping\n", sig);
	js_webhook_server_free(srv);
	js_client_free(client);
	curl_global_cleanup();
	return 0;
}
