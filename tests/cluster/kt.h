/*
 * kt.h - helpers shared by the cluster tests (tests/cluster/NAME_ctest.c):
 * connect to the control plane named by KUBECONFIG, make a throw-away
 * namespace, wait for conditions with deadlines. A missing or unreachable
 * cluster is a test FAILURE, never a skip. Header-only (static functions).
 */
#ifndef JS_KT_H
#define JS_KT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "kube/apierr.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"

static inline uint64_t kt_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#define KT_DIE(...)                                                                                                    \
	do {                                                                                                           \
		fprintf(stderr, "CLUSTER TEST FAILURE: " __VA_ARGS__);                                                 \
		fprintf(stderr, "\n");                                                                                 \
		exit(1);                                                                                               \
	} while (0)

/* Assert an int result with both values and the API error text. */
#define KT_OK(expr, err)                                                                                               \
	do {                                                                                                           \
		int kt_r_ = (expr);                                                                                    \
		if (kt_r_ != 0)                                                                                        \
			fail_msg("%s = %d (%s) http=%ld reason=%s msg=%s", #expr, kt_r_, js_apierr_strerror(kt_r_),   \
				 (err)->http_code, (err)->reason ? (err)->reason : "-",                                \
				 (err)->message ? (err)->message : "-");                                               \
	} while (0)

/* Load the kubeconfig from $KUBECONFIG; exit(1) loudly when unusable. */
static inline void kt_config(struct js_kubeconfig *kc)
{
	const char *p = getenv("KUBECONFIG");
	if (!p || !*p)
		KT_DIE("KUBECONFIG is not set: bring the control plane up (hack/cluster up) and "
		       "eval \"$(hack/cluster env)\" before running label 'cluster'");
	struct js_diag d = {0};
	int r = js_kubeconfig_load(p, NULL, &d, kc);
	if (r < 0)
		KT_DIE("cannot load kubeconfig '%s': %s (%s)", p, js_strerror(r), d.n ? d.items[0].message : "");
	js_diag_done(&d);
}

/* A client for $KUBECONFIG that has answered GET /version. */
static inline struct js_client *kt_client(const struct js_client_opts *o)
{
	static bool inited;
	if (!inited) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		signal(SIGPIPE, SIG_IGN);
		inited = true;
	}
	struct js_kubeconfig kc = {0};
	kt_config(&kc);
	struct js_client *c = NULL;
	struct js_client_opts def = {.qps = -1};
	int r = js_client_new(&kc, o ? o : &def, &c);
	if (r < 0)
		KT_DIE("cannot create client for %s: %s", kc.server, js_strerror(r));
	json_t *v = NULL;
	struct js_apierr e = {0};
	r = js_client_call(c, "GET", "/version", NULL, NULL, &v, &e);
	if (r < 0)
		KT_DIE("control plane at %s does not answer: %s (%s)", kc.server, js_apierr_strerror(r),
		       e.message ? e.message : "");
	json_decref(v);
	js_apierr_done(&e);
	js_kubeconfig_done(&kc);
	return c;
}

/* Create namespace "<prefix>-<pid>-<n>" and return its name (static). */
static inline const char *kt_namespace(struct js_client *c, const char *prefix)
{
	static char name[64];
	static int n;
	snprintf(name, sizeof name, "%s-%d-%d", prefix, (int)getpid(), n++);
	json_t *ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name", name);
	struct js_apierr e = {0};
	int r = js_client_create(c, &js_client_res_namespaces, NULL, ns, NULL, NULL, &e);
	json_decref(ns);
	if (r < 0)
		KT_DIE("cannot create namespace %s: %s", name, js_apierr_strerror(r));
	js_apierr_done(&e);
	return name;
}

static inline void kt_delete_namespace(struct js_client *c, const char *name)
{
	struct js_apierr e = {0};
	int r = js_client_delete(c, &js_client_res_namespaces, NULL, name, NULL, NULL, &e);
	(void)r; /* best effort: a namespace left behind is harmless on a test plane */
	js_apierr_done(&e);
}

/* A ConfigMap object (new reference). */
static inline json_t *kt_configmap(const char *ns, const char *name, const char *label_app, const char *value)
{
	json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
			      "name", name, "namespace", ns, "data", "v", value);
	if (label_app)
		json_object_set_new(json_object_get(o, "metadata"), "labels", json_pack("{s:s}", "app", label_app));
	return o;
}

#endif
