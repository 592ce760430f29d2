/*
 * kdiff.c - `kubectl jobset diff FILE` (docs/kubectl-jobset.md): what
 * `jobset render FILE` would create against what exists in the cluster.
 *
 * As `kubectl diff` does, two directories of YAML files, LIVE and MERGED,
 * named group.version.kind.namespace.name, go to `diff -u -N` (or
 * $KUBECTL_EXTERNAL_DIFF): MERGED holds the JobSet of FILE (defaulted) and
 * the Service, PVCs and Jobs rendered for it at the live JobSet's attempt
 * (status.restarts) and uid; LIVE the objects that exist, cut down to the
 * fields the rendered object sets (kube/kprint.h js_kprint_prune), so the
 * server's defaults and status are no difference. A live Job of the JobSet
 * that the render has not (another attempt, a removed replica) shows as
 * removed. Exit status as kubectl diff: 0 none, 1 differences, 2 error.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/jobset.h"
#include "api/render.h"
#include "base/emit.h"
#include "base/file.h"
#include "base/json.h"
#include "base/load.h"
#include "cli/cli.h"
#include "cli/kubectl.h"
#include "cli/manifest.h"
#include "kube/kprint.h"

static const struct js_resource *resource_of(const char *kind)
{
	if (strcmp(kind, "Job") == 0)
		return &js_client_res_jobs;
	if (strcmp(kind, "Service") == 0)
		return &js_client_res_services;
	if (strcmp(kind, "PersistentVolumeClaim") == 0)
		return &js_client_res_pvcs;
	if (strcmp(kind, "JobSet") == 0)
		return &js_client_res_jobsets;
	return NULL;
}

/* Write `obj` as YAML to dir/group.version.kind.namespace.name. */
static int write_obj(const char *dir, const json_t *obj)
{
	const char *api = js_json_str(obj, "apiVersion"), *kind = js_json_str(obj, "kind");
	const json_t *m = json_object_get(obj, "metadata");
	char gv[256];
	(void)snprintf(gv, sizeof(gv), "%s", api ? api : "");
	for (char *p = gv; *p; p++)
		if (*p == '/')
			*p = '.';
	char *path = js_buf_format("%s/%s.%s.%s.%s", dir, gv, kind ? kind : "",
				   js_json_str(m, "namespace") ? js_json_str(m, "namespace") : "",
				   js_json_str(m, "name") ? js_json_str(m, "name") : "");
	struct js_buf out;
	js_buf_init(&out, 0);
	int r = js_emit_yaml(obj, 0, &out);
	FILE *f = r == 0 ? fopen(path, "we") : NULL;
	if (r == 0 && (!f || fputs(js_buf_str(&out), f) < 0))
		r = -errno;
	if (f && fclose(f) != 0 && r == 0)
		r = -errno;
	if (r < 0)
		fprintf(stderr, "error: writing %s: %s\n", path, js_strerror(r));
	js_buf_done(&out);
	free(path);
	return r;
}

/* The JobSet as diffed: the document as written (what kubectl diff
 * compares), in the namespace in effect; the server's defaults are no
 * difference. */
static json_t *jobset_shape(const json_t *doc, const char *ns)
{
	json_t *shape = json_deep_copy(doc);
	json_object_del(shape, "status");
	json_object_set_new(js_json_path_make(shape, "metadata"), "namespace", json_string(ns));
	return shape;
}

/* One JobSet of the file: its objects into live/ and merged/. */
static int diff_one(struct kctx *k, struct js_jobset *js, const json_t *doc, const char *live_dir,
		    const char *merged_dir)
{
	const char *name = js->meta.name;
	json_t *live_js = NULL;
	struct js_apierr e = {0};
	int r = js_client_get(k->client, &js_client_res_jobsets, k->ns, name, NULL, &live_js, &e);
	if (r < 0 && r != JS_ENOTFOUND) {
		int rc = kjs_api_error("get jobset", r, &e);
		js_apierr_done(&e);
		return rc;
	}
	js_apierr_done(&e);
	struct js_render_opts ro = {.gates = k->gates, .has_attempt = true};
	if (live_js) {
		free(js->meta.uid);
		js->meta.uid = js_xstrdup(js_json_str(js_json_path(live_js, "metadata"), "uid"));
		ro.attempt = (int32_t)json_integer_value(js_json_path(live_js, "status.restarts"));
	}
	json_t *items = json_array();
	json_array_append_new(items, jobset_shape(doc, k->ns));
	js_cli_render_collect(js, &ro, items);
	int rc = 0;
	for (size_t i = 0; i < json_array_size(items) && rc == 0; i++) {
		json_t *want = json_array_get(items, i);
		const char *kind = js_json_str(want, "kind");
		const struct js_resource *res = resource_of(kind ? kind : "");
		const char *oname = js_json_str(json_object_get(want, "metadata"), "name");
		json_t *have = NULL;
		if (i == 0) {
			have = json_incref(live_js);
		} else if (res) {
			r = js_client_get(k->client, res, k->ns, oname, NULL, &have, &e);
			if (r < 0 && r != JS_ENOTFOUND)
				rc = kjs_api_error(kind, r, &e);
			js_apierr_done(&e);
		}
		if (rc == 0 && have) {
			json_t *pruned = js_kprint_prune(have, want);
			rc = write_obj(live_dir, pruned) < 0 ? JS_EXIT_USAGE : 0;
			json_decref(pruned);
		}
		if (rc == 0)
			rc = write_obj(merged_dir, want) < 0 ? JS_EXIT_USAGE : 0;
		json_decref(have);
	}
	/* Live Jobs of this JobSet that the render has not. */
	json_t *jobs = NULL;
	char sel[512];
	(void)snprintf(sel, sizeof(sel), "%s=%s", JS_LABEL_JOBSET_NAME, name);
	if (rc == 0 && live_js && (rc = kjs_list_all(k, &js_client_res_jobs, k->ns, sel, &jobs)) == 0) {
		for (size_t i = 0; i < json_array_size(jobs) && rc == 0; i++) {
			json_t *j = json_array_get(jobs, i);
			const char *jn = js_json_str(json_object_get(j, "metadata"), "name");
			bool rendered = false;
			for (size_t q = 1; q < json_array_size(items) && !rendered; q++) {
				const char *n = js_json_str(json_object_get(json_array_get(items, q), "metadata"), "name");
				const char *kd = js_json_str(json_array_get(items, q), "kind");
				rendered = n && jn && kd && strcmp(kd, "Job") == 0 && strcmp(n, jn) == 0;
			}
			if (!rendered) {
				json_t *shape = json_pack("{s:s, s:s, s:{s:s, s:s, s:{}}}", "apiVersion", "batch/v1", "kind",
							  "Job", "metadata", "name", jn, "namespace", k->ns, "labels");
				json_t *pruned = js_kprint_prune(j, shape);
				rc = write_obj(live_dir, pruned) < 0 ? JS_EXIT_USAGE : 0;
				json_decref(pruned);
				json_decref(shape);
			}
		}
		json_decref(jobs);
	}
	json_decref(items);
	json_decref(live_js);
	return rc;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

/* diff -u -N -r LIVE MERGED, or $KUBECTL_EXTERNAL_DIFF (words split on
 * spaces, as kubectl does). Returns diff's exit status, or 2. */
static int run_diff(const char *live, const char *merged)
{
	const char *ext = getenv("KUBECTL_EXTERNAL_DIFF");
	char *argv[34];
	size_t n = 0;
	char *copy = js_xstrdup(ext && *ext ? ext : "diff -u -N -r");
	for (char *save = NULL, *w = strtok_r(copy, " ", &save); w && n < 31; w = strtok_r(NULL, " ", &save))
		argv[n++] = w;
	argv[n++] = (char *)(uintptr_t)live;
	argv[n++] = (char *)(uintptr_t)merged;
	argv[n] = NULL;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "error: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	int status = 0;
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	free(copy);
	if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) > 1)
		return JS_EXIT_USAGE;
	return WEXITSTATUS(status);
}

int kjs_diff(struct kctx *k)
{
	if (k->npos != 1)
		return kjs_usage(k, "diff takes one FILE ('-' for standard input)");
	struct js_diag diag;
	js_diag_init(&diag);
	struct js_docs *docs = NULL;
	int r = js_docs_load_file(k->pos[0], &diag, &docs);
	if (r < 0) {
		js_cli_print_diag(stderr, &diag);
		js_diag_done(&diag);
		return JS_EXIT_USAGE;
	}
	int rc = kjs_connect(k);
	char tmpl[] = "/tmp/kubectl-jobset-diff-XXXXXX";
	char *dir = rc ? NULL : mkdtemp(tmpl);
	if (!rc && !dir)
		rc = (fprintf(stderr, "error: cannot make a temporary directory: %s\n", strerror(errno)), JS_EXIT_USAGE);
	char *live = dir ? js_buf_format("%s/LIVE", dir) : NULL, *merged = dir ? js_buf_format("%s/MERGED", dir) : NULL;
	if (dir && (mkdir(live, 0700) < 0 || mkdir(merged, 0700) < 0))
		rc = JS_EXIT_USAGE;
	size_t jobsets = 0;
	for (size_t i = 0; rc == 0 && i < js_docs_count(docs); i++) {
		char desc[512];
		struct js_jobset *js = NULL;
		enum js_cli_doc_kind kd = js_cli_read_doc(docs, i, &k->gates, &diag, &js, desc, sizeof(desc));
		if (kd == JS_CLI_DOC_OTHER)
			continue;
		jobsets++;
		if (kd == JS_CLI_DOC_INVALID) {
			js_cli_print_diag(stderr, &diag);
			rc = JS_EXIT_USAGE;
			break;
		}
		const char *fns = js->meta.namespace_;
		if (fns && *fns && k->ns_flag && strcmp(fns, k->ns_flag) != 0) {
			fprintf(stderr, "error: the namespace from the provided object \"%s\" does not match the namespace "
					"\"%s\". You must pass '--namespace=%s' to perform this operation.\n",
				fns, k->ns_flag, fns);
			rc = JS_EXIT_USAGE;
		} else {
			const char *saved = k->ns;
			if (!fns || !*fns) {
				free(js->meta.namespace_);
				js->meta.namespace_ = js_xstrdup(k->ns);
			}
			k->ns = js->meta.namespace_;
			rc = diff_one(k, js, js_docs_root(docs, i), live, merged);
			k->ns = saved;
		}
		js_jobset_free(js);
	}
	if (rc == 0 && jobsets == 0)
		rc = (fprintf(stderr, "error: %s: no JobSet documents found\n", k->pos[0]), JS_EXIT_USAGE);
	if (rc == 0)
		rc = run_diff(live, merged);
	if (dir)
		(void)nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(live);
	free(merged);
	js_docs_free(docs);
	js_diag_done(&diag);
	return rc;
}
