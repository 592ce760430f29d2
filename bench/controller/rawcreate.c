/*
 * rawcreate.c - the baseline of the controller benchmark: create a list of
 * objects (the Service and 1,000 Jobs that `jobset render -o json` prints
 * for the benchmark JobSet) as fast as the API server takes them, with no
 * controller logic at all.  Requests go through our client (src/kube:
 * libcurl multi, HTTP/2, one I/O thread) with a sliding window of W in
 * flight, so the only limits are W, the client's QPS/burst (unlimited by
 * default) and the API server.
 *
 *   rawcreate [--kubeconfig F] [--namespace NS] [--qps Q] [--burst B] [--window W] [--http1] LIST.json
 *
 * ownerReferences are dropped (there is no JobSet to own them).  Objects
 * that fail before an HTTP answer (transport errors) are retried once, one
 * at a time, with the client's own retry rules.  Prints one JSON line:
 * {"created":N,"failed":N,"retried":N,"seconds":S,...}.  Exit 0 when every
 * object was created.
 */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/common.h"
#include "base/diag.h"
#include "kube/apierr.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const struct js_resource *resource_of(const char *kind)
{
	if (!kind)
		return NULL;
	if (!strcmp(kind, "Job"))
		return &js_client_res_jobs;
	if (!strcmp(kind, "Service"))
		return &js_client_res_services;
	if (!strcmp(kind, "PersistentVolumeClaim"))
		return NULL;
	return NULL;
}

struct item {
	const struct js_resource *res;
	json_t *obj;
	char *path;
	char *body;
	struct js_client_xfer *x;
	long code;
	int err;
};

static void submit(struct js_client *c, struct item *it)
{
	struct js_client_req req = {.method = "POST",
				    .path = it->path,
				    .content_type = "application/json",
				    .body = it->body,
				    .body_len = strlen(it->body)};
	it->err = js_client_submit(c, &req, &it->x);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: rawcreate [--kubeconfig F] [--namespace NS] [--qps Q] [--burst B] [--window W] [--http1] LIST.json\n"
		   "  --qps Q      client rate, requests/s (default: unlimited)\n"
		   "  --burst B    client burst (default: the number of objects)\n"
		   "  --window W   requests in flight at most (default 100; 0 = all at once)\n");
}

int main(int argc, char **argv)
{
	const char *kcpath = NULL, *ns = "default";
	double qps = -1;
	int burst = 0, window = 100;
	bool http1 = false;
	static const struct option lo[] = {
		{"kubeconfig", required_argument, 0, 'k'}, {"namespace", required_argument, 0, 'n'},
		{"qps", required_argument, 0, 'q'},        {"burst", required_argument, 0, 'b'},
		{"http1", no_argument, 0, '1'},            {"help", no_argument, 0, 'h'},
		{"window", required_argument, 0, 'w'},
		{0, 0, 0, 0},
	};
	int o;
	while ((o = getopt_long(argc, argv, "k:n:q:b:w:1h", lo, NULL)) != -1) {
		switch (o) {
		case 'k': kcpath = optarg; break;
		case 'n': ns = optarg; break;
		case 'q': qps = atof(optarg); break;
		case 'b': burst = atoi(optarg); break;
		case 'w': window = atoi(optarg); break;
		case '1': http1 = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}

	json_error_t jerr;
	json_t *list = json_load_file(argv[optind], 0, &jerr);
	json_t *items_j = list ? json_object_get(list, "items") : NULL;
	if (!json_is_array(items_j)) {
		fprintf(stderr, "rawcreate: %s: not a List: %s\n", argv[optind], list ? "no items" : jerr.text);
		return 2;
	}

	curl_global_init(CURL_GLOBAL_DEFAULT);
	signal(SIGPIPE, SIG_IGN);
	struct js_kubeconfig kc = {0};
	struct js_diag d = {0};
	int r = js_kubeconfig_load(kcpath, NULL, &d, &kc);
	if (r < 0) {
		fprintf(stderr, "rawcreate: kubeconfig: %s (%s)\n", js_strerror(r), d.n ? d.items[0].message : "");
		return 2;
	}
	js_diag_done(&d);

	size_t n = json_array_size(items_j), m = 0;
	struct item *it = calloc(n ? n : 1, sizeof *it);
	if (!it)
		return 1;
	for (size_t i = 0; i < n; i++) {
		json_t *obj = json_array_get(items_j, i);
		const struct js_resource *res = resource_of(json_string_value(json_object_get(obj, "kind")));
		if (!res) {
			fprintf(stderr, "rawcreate: skipping kind %s\n",
				json_string_value(json_object_get(obj, "kind")));
			continue;
		}
		json_t *md = json_object_get(obj, "metadata");
		json_object_del(md, "ownerReferences");
		json_object_set_new(md, "namespace", json_string(ns));
		struct js_buf p;
		js_buf_init(&p, 0);
		if (js_client_path(res, ns, NULL, NULL, &p) < 0)
			return 1;
		it[m].res = res;
		it[m].obj = obj;
		it[m].path = js_buf_take(&p);
		it[m].body = json_dumps(obj, JSON_COMPACT);
		if (!it[m].path || !it[m].body)
			return 1;
		m++;
	}

	struct js_client_opts co = {.qps = qps, .burst = burst > 0 ? burst : (int)(m ? m : 1), .http1 = http1,
				    .user_agent = "jobset-bench-rawcreate"};
	struct js_client *c = NULL;
	r = js_client_new(&kc, &co, &c);
	if (r < 0) {
		fprintf(stderr, "rawcreate: client: %s\n", js_strerror(r));
		return 2;
	}

	/* A sliding window of `window` requests in flight (0 = all at once);
	 * the I/O thread multiplexes them over HTTP/2. */
	size_t win = window > 0 ? (size_t)window : m, next = 0;
	double t0 = now_s();
	for (; next < m && next < win; next++)
		submit(c, &it[next]);
	size_t created = 0, failed = 0, retried = 0, exists = 0;
	long first_bad_code = 0;
	char first_bad[256] = "";
	for (size_t i = 0; i < m; i++) {
		struct js_client_resp resp = {0};
		char why[128] = "";
		if (it[i].err == 0)
			it[i].err = js_client_xfer_wait(it[i].x, &resp, why, sizeof why);
		if (next < m)
			submit(c, &it[next++]);
		if (it[i].err < 0) {
			/* No HTTP answer: once more through the retrying verb. */
			retried++;
			struct js_apierr e = {0};
			int rr = js_client_create(c, it[i].res, ns, it[i].obj, NULL, NULL, &e);
			if (rr == 0 || rr == JS_EEXISTS) {
				created += rr == 0;
				exists += rr == JS_EEXISTS;
			} else {
				failed++;
				if (!*first_bad)
					snprintf(first_bad, sizeof first_bad, "%s (%s)", js_apierr_strerror(rr),
						 e.message ? e.message : why);
			}
			js_apierr_done(&e);
			continue;
		}
		if (resp.code == 201 || resp.code == 200) {
			created++;
		} else if (resp.code == 409) {
			exists++;
		} else {
			failed++;
			if (!first_bad_code) {
				first_bad_code = resp.code;
				snprintf(first_bad, sizeof first_bad, "%.200s", resp.body ? resp.body : "");
			}
		}
		js_client_resp_done(&resp);
	}
	double t1 = now_s();

	struct js_client_stats st;
	js_client_stats(c, &st);
	json_t *out = json_pack("{s:I,s:I,s:I,s:I,s:f,s:f,s:I,s:I,s:I,s:I,s:I,s:I}", "created", (json_int_t)created,
				"exists", (json_int_t)exists, "failed", (json_int_t)failed, "retried",
				(json_int_t)retried, "seconds", t1 - t0, "qps", qps, "burst", (json_int_t)co.burst, "window", (json_int_t)win,
				"dispatched", (json_int_t)st.dispatched, "connects", (json_int_t)st.connects, "http2",
				(json_int_t)st.http2, "http1", (json_int_t)st.http1);
	if (failed) {
		json_object_set_new(out, "first_error_code", json_integer(first_bad_code));
		json_object_set_new(out, "first_error", json_string(first_bad));
	}
	char *s = json_dumps(out, JSON_COMPACT);
	printf("%s\n", s);
	free(s);
	json_decref(out);

	c = js_client_free(c);
	for (size_t i = 0; i < m; i++) {
		free(it[i].path);
		free(it[i].body);
	}
	free(it);
	json_decref(list);
	js_kubeconfig_done(&kc);
	curl_global_cleanup();
	return failed ? 1 : 0;
}
