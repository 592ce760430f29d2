/*
 * klogs.c - `kubectl jobset logs NAME [--rjob R] [--index I] [--attempt A]
 * [-c C] [--tail N] [-f]` (docs/kubectl-jobset.md): the logs of the pods of
 * one restart attempt (default: the current one, status.restarts) through
 * the pods/log subresource. With several pods each line is prefixed
 * "[pod/NAME/CONTAINER] " as `kubectl logs --prefix` does; with -f every
 * pod is followed at once (HTTP/2 streams on the one client) until all end.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jobset.h"
#include "base/json.h"
#include "cli/cli.h"
#include "cli/kubectl.h"

/* One followed stream: bytes arrive on the client's I/O thread, which is
 * the only writer of stdout while streams run; a partial line waits here. */
struct stream {
	char prefix[600];
	struct js_buf line;
	struct js_buf path; /* the pods/log request */
	struct js_client_xfer *x;
};

static void emit(struct stream *s, const char *p, size_t n)
{
	fputs(s->prefix, stdout);
	fwrite(p, 1, n, stdout);
}

/* A last line without its newline, once its stream has ended. */
static void flush_partial(struct stream *s)
{
	if (s->line.len) {
		emit(s, s->line.p, s->line.len);
		fputc('\n', stdout);
		js_buf_clear(&s->line);
	}
}

static int on_data(void *user, const char *p, size_t n)
{
	struct stream *s = user;
	if (!s->prefix[0]) {
		fwrite(p, 1, n, stdout);
	} else {
		while (n > 0) {
			const char *nl = memchr(p, '\n', n);
			size_t k = nl ? (size_t)(nl - p) + 1 : n;
			if (!nl) {
				if (js_buf_add(&s->line, p, k) < 0)
					return 1;
			} else if (s->line.len) {
				if (js_buf_add(&s->line, p, k) < 0)
					return 1;
				emit(s, s->line.p, s->line.len);
				js_buf_clear(&s->line);
			} else {
				emit(s, p, k);
			}
			p += k;
			n -= k;
		}
	}
	fflush(stdout);
	return 0;
}

static bool whole(const char *s, long long *ret)
{
	char *end = NULL;
	long long v = s && *s ? strtoll(s, &end, 10) : -1;
	if (!s || !*s || *end || v < 0 || v > INT32_MAX)
		return false;
	*ret = v;
	return true;
}

/* The container to read: -c, else the kubectl.kubernetes.io/default-container
 * annotation, else the first (as kubectl picks). */
static const char *container_of(const struct kctx *k, const json_t *pod)
{
	if (k->container)
		return k->container;
	const char *d = json_string_value(
		json_object_get(js_json_path(pod, "metadata.annotations"), "kubectl.kubernetes.io/default-container"));
	return d ? d : js_json_str(json_array_get(js_json_path(pod, "spec.containers"), 0), "name");
}

/* True when `pod` has a container (init and ephemeral ones too) named `name`. */
static bool has_container(const json_t *pod, const char *name)
{
	static const char *const lists[] = {"spec.containers", "spec.initContainers", "spec.ephemeralContainers"};
	for (size_t l = 0; l < JS_ARRAY_SIZE(lists); l++) {
		const json_t *a = js_json_path(pod, lists[l]);
		for (size_t i = 0; i < json_array_size(a); i++) {
			const char *n = js_json_str(json_array_get(a, i), "name");
			if (n && strcmp(n, name) == 0)
				return true;
		}
	}
	return false;
}

static int by_name(const void *a, const void *b)
{
	const char *x = js_json_str(js_json_path(*(json_t *const *)a, "metadata"), "name");
	const char *y = js_json_str(js_json_path(*(json_t *const *)b, "metadata"), "name");
	return strcmp(x ? x : "", y ? y : "");
}

/* Check --rjob and --index against the spec; build the label selector. */
static int selector(struct kctx *k, const json_t *js, const char *name, char *sel, size_t len)
{
	long long idx = 0, att = 0;
	const json_t *rjobs = js_json_path(js, "spec.replicatedJobs");
	const json_t *rj = NULL;
	if (k->rjob) {
		for (size_t i = 0; i < json_array_size(rjobs) && !rj; i++) {
			const char *n = js_json_str(json_array_get(rjobs, i), "name");
			if (n && strcmp(n, k->rjob) == 0)
				rj = json_array_get(rjobs, i);
		}
		if (!rj) {
			fprintf(stderr, "error: --rjob \"%s\": jobset %s has no ReplicatedJob of that name; valid:", k->rjob,
				name);
			for (size_t i = 0; i < json_array_size(rjobs); i++)
				fprintf(stderr, "%s %s", i ? "," : "", js_json_str(json_array_get(rjobs, i), "name"));
			fputc('\n', stderr);
			return JS_EXIT_USAGE;
		}
	}
	if (k->index) {
		json_t *rep = rj ? json_object_get(rj, "replicas") : NULL;
		long long max = rj ? (json_is_integer(rep) ? (long long)json_integer_value(rep) : 1) : INT32_MAX;
		if (!whole(k->index, &idx) || idx >= max) {
			if (rj)
				fprintf(stderr, "error: --index \"%s\": ReplicatedJob %s has Job indexes 0 to %lld\n", k->index,
					k->rjob, max - 1);
			else
				fprintf(stderr, "error: --index \"%s\": a Job index is a whole number from 0\n", k->index);
			return JS_EXIT_USAGE;
		}
	}
	long long cur = (long long)json_integer_value(js_json_path(js, "status.restarts"));
	if (k->attempt && (!whole(k->attempt, &att) || att > cur)) {
		fprintf(stderr, "error: --attempt \"%s\": jobset %s has attempts 0 to %lld (status.restarts)\n", k->attempt,
			name, cur);
		return JS_EXIT_USAGE;
	}
	if (!k->attempt)
		att = cur;
	int n = snprintf(sel, len, "%s=%s,%s=%lld", JS_LABEL_JOBSET_NAME, name, JS_LABEL_RESTART_ATTEMPT, att);
	if (k->rjob)
		n += snprintf(sel + n, len - (size_t)n, ",%s=%s", JS_LABEL_RJOB_NAME, k->rjob);
	if (k->index)
		(void)snprintf(sel + n, len - (size_t)n, ",%s=%lld", JS_LABEL_JOB_INDEX, idx);
	return 0;
}

static int log_path(const struct kctx *k, const json_t *pod, const char *container, struct js_buf *path)
{
	char *c = curl_easy_escape(NULL, container, 0);
	if (!c)
		return -ENOMEM;
	int r = js_buf_printf(path, "/api/v1/namespaces/%s/pods/%s/log?container=%s%s", k->ns,
			      js_json_str(js_json_path(pod, "metadata"), "name"), c, k->follow ? "&follow=true" : "");
	curl_free(c);
	if (r == 0 && k->has_tail)
		r = js_buf_printf(path, "&tailLines=%lld", k->tail);
	return r;
}

static int answer_error(const char *pod, const struct js_client_resp *resp, int r, const char *why)
{
	struct js_apierr e = {0};
	if (r < 0)
		js_apierr_set_transport(&e, r, why);
	else
		r = js_apierr_decode(resp->code, resp->body, resp->len, resp->retry_after_s, &e);
	int rc = kjs_api_error(pod, r, &e);
	js_apierr_done(&e);
	return rc;
}

int kjs_logs(struct kctx *k)
{
	if (k->npos != 1)
		return kjs_usage(k, "logs takes the JobSet's NAME (pods are chosen with --rjob, --index, --attempt)");
	int rc = kjs_connect(k);
	if (rc)
		return rc;
	const char *name = k->pos[0];
	json_t *js = NULL, *pods = NULL;
	char sel[1024];
	if ((rc = kjs_get_jobset(k, name, &js)) != 0)
		return rc;
	rc = selector(k, js, name, sel, sizeof(sel));
	json_decref(js);
	if (rc || (rc = kjs_list_all(k, &js_client_res_pods, k->ns, sel, &pods)) != 0)
		return rc;
	size_t n = json_array_size(pods);
	if (n == 0) {
		fprintf(stderr, "error: no pods of jobset %s match %s\n", name, sel);
		json_decref(pods);
		return JS_EXIT_INVALID;
	}
	json_t **sorted = js_xcalloc(n, sizeof(*sorted));
	for (size_t i = 0; i < n; i++)
		sorted[i] = json_array_get(pods, i);
	qsort(sorted, n, sizeof(*sorted), by_name);
	struct stream *ss = js_xcalloc(n, sizeof(*ss));
	/* Every pod's container and path first, so nothing is streaming yet
	 * when one is refused. */
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *pn = js_json_str(js_json_path(sorted[i], "metadata"), "name");
		const char *cn = container_of(k, sorted[i]);
		js_buf_init(&ss[i].line, 1 << 20);
		js_buf_init(&ss[i].path, 0);
		if (cn && !has_container(sorted[i], cn)) /* kubectl's check and words */
			rc = (fprintf(stderr, "error: container %s is not valid for pod %s\n", cn, pn), JS_EXIT_INVALID);
		else if (!cn || log_path(k, sorted[i], cn, &ss[i].path) < 0)
			rc = (fprintf(stderr, "error: pod %s has no container to read\n", pn), JS_EXIT_INVALID);
		else if (n > 1)
			(void)snprintf(ss[i].prefix, sizeof(ss[i].prefix), "[pod/%s/%s] ", pn, cn);
	}
	atomic_bool stop = false;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *pn = js_json_str(js_json_path(sorted[i], "metadata"), "name");
		struct js_client_req req = {.method = "GET", .path = js_buf_str(&ss[i].path)};
		if (!k->follow) {
			struct js_client_resp resp = {0};
			char why[256] = "";
			int r = js_client_do(k->client, &req, &resp, why, sizeof(why));
			if (r < 0 || resp.code / 100 != 2)
				rc = answer_error(pn, &resp, r, why);
			else
				(void)on_data(&ss[i], resp.body, resp.len);
			js_client_resp_done(&resp);
			flush_partial(&ss[i]);
			continue;
		}
		req.on_data = on_data;
		req.user = &ss[i];
		req.no_timeout = true;
		req.cancel = &stop;
		int r = js_client_submit(k->client, &req, &ss[i].x);
		if (r < 0)
			rc = (fprintf(stderr, "error: pod %s: %s\n", pn, js_strerror(r)), JS_EXIT_INVALID);
	}
	if (rc) { /* streams already open would follow forever */
		atomic_store(&stop, true);
		js_client_wakeup(k->client);
	}
	for (size_t i = 0; i < n; i++) {
		if (ss[i].x) {
			struct js_client_resp resp = {0};
			char why[256] = "";
			int r = js_client_xfer_wait(ss[i].x, &resp, why, sizeof(why));
			if ((r < 0 || resp.code / 100 != 2) && rc == 0)
				rc = answer_error(js_json_str(js_json_path(sorted[i], "metadata"), "name"), &resp, r, why);
			js_client_resp_done(&resp);
			flush_partial(&ss[i]);
		}
		js_buf_done(&ss[i].line);
		js_buf_done(&ss[i].path);
	}
	free(ss);
	free(sorted);
	json_decref(pods);
	return rc;
}
