/*
 * manifest.c - the subcommands' shared options and reading JobSet documents
 * for the CLI.
 */
#include "cli/manifest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/codec.h"
#include "api/defaults.h"
#include "api/gates.h"
#include "api/sched.h"
#include "api/validate.h"
#include "base/buf.h"
#include "base/json.h"
#include "cli/cli.h"

int js_cli_opt_gates(const char *cmd, const char *arg, struct js_gates *gates)
{
	char *err = NULL;
	if (js_gates_parse(arg, gates, &err) == 0) {
		const char *w = js_gates_list_deprecated(arg);
		if (w)
			fprintf(stderr, "jobset %s: warning: %s\n", cmd, w);
		return JS_EXIT_OK;
	}
	fprintf(stderr, "jobset %s: %s\n", cmd, err);
	free(err);
	return JS_EXIT_USAGE;
}

int js_cli_opt_format(const char *cmd, const char *flag, const char *arg, const char *plain, bool *ret_json)
{
	if (strcmp(arg, "json") == 0 || strcmp(arg, plain) == 0) {
		*ret_json = strcmp(arg, "json") == 0;
		return JS_EXIT_OK;
	}
	fprintf(stderr, "jobset %s: %s takes %s or json, not '%s'\n", cmd, flag, plain, arg);
	return JS_EXIT_USAGE;
}

int js_cli_opt_output(const char *cmd, const char *arg, const char *plain, bool *ret_json)
{
	return js_cli_opt_format(cmd, "-o", arg, plain, ret_json);
}

int js_cli_refuse_gang(const char *cmd, const struct js_gates *gates)
{
	if (!gates->workload_aware_scheduling)
		return JS_EXIT_OK;
	fprintf(stderr,
		"jobset %s: --feature-gates JobSetWorkloadAwareSchedulingAPI=true is refused: gang scheduling makes Workload "
		"and PodGroup objects for the Kubernetes scheduler, which 'jobset %s' has not. 'jobset validate' and "
		"'jobset render' accept the gate for checking manifests (AllAlpha=true turns it on too: add "
		"JobSetWorkloadAwareSchedulingAPI=false)\n",
		cmd, cmd);
	return JS_EXIT_USAGE;
}

int js_cli_refuse_in_place(const char *cmd, const struct js_gates *gates, const char *missing)
{
	if (!gates->in_place_restart)
		return JS_EXIT_OK;
	fprintf(stderr,
		"jobset %s: --feature-gates InPlaceRestart=true is refused: in-place restart is not driven end to end "
		"here: %s, so the in-place step (SPEC §11.16) would never see a restart attempt. 'jobset run' "
		"restarts pods in place; 'jobset validate' and 'jobset render' accept the gate for checking "
		"manifests (AllAlpha=true turns it on too: add InPlaceRestart=false)\n",
		cmd, missing);
	return JS_EXIT_USAGE;
}

enum js_cli_doc_kind js_cli_read_doc(const struct js_docs *docs, size_t i, const struct js_gates *gates,
				     struct js_diag *diag, struct js_jobset **ret_js, char *desc, size_t desclen)
{
	const json_t *root = js_docs_root(docs, i);
	const char *kind = js_json_str(root, "kind");
	const char *api = js_json_str(root, "apiVersion");
	const char *name = json_string_value(js_json_path(root, "metadata.name"));
	if (!name)
		name = json_string_value(js_json_path(root, "metadata.generateName"));
	snprintf(desc, desclen, "%s/%s", kind ? kind : "?", name ? name : "?");
	size_t from = diag->n;
	if (!json_is_object(root)) {
		js_diag_add(diag, JS_DIAG_TYPE, "", NULL, "a document must be a Kubernetes object (a mapping), not %s",
			    js_codec_json_type_name(root));
		js_docs_locate(docs, i, diag, from);
		return JS_CLI_DOC_INVALID;
	}
	if (!kind || !api) {
		js_diag_add(diag, JS_DIAG_REQUIRED, kind ? "apiVersion" : "kind", NULL,
			    "not a Kubernetes object: apiVersion and kind are required (a JobSet has apiVersion %s, kind %s)",
			    JS_API_VERSION, JS_KIND);
		js_docs_locate(docs, i, diag, from);
		return JS_CLI_DOC_INVALID;
	}
	if (strcmp(kind, JS_KIND) != 0) {
		/* Our API group has one kind: a near miss ("Jobset") is a typo, not
		 * another object to skip. */
		if (strncmp(api, JS_API_GROUP "/", strlen(JS_API_GROUP) + 1) == 0) {
			json_t *v = json_string(kind);
			char *vs = json_dumps(v, JSON_ENCODE_ANY);
			js_diag_add(diag, JS_DIAG_NOT_SUPPORTED, "kind", vs, "the %s API has one kind; did you mean \"%s\"?",
				    JS_API_GROUP, JS_KIND);
			free(vs);
			json_decref(v);
			js_docs_locate(docs, i, diag, from);
			return JS_CLI_DOC_INVALID;
		}
		return JS_CLI_DOC_OTHER;
	}
	if (strcmp(api, JS_API_VERSION) != 0) {
		json_t *v = json_string(api);
		char *vs = json_dumps(v, JSON_ENCODE_ANY);
		js_diag_add(diag, JS_DIAG_NOT_SUPPORTED, "apiVersion", vs,
			    "this tool reads JobSet %s; other versions are not served", JS_API_VERSION);
		free(vs);
		json_decref(v);
		js_docs_locate(docs, i, diag, from);
		return JS_CLI_DOC_INVALID;
	}
	struct js_jobset *js = NULL;
	if (js_codec_decode_jobset(root, JS_CODEC_STRICT, diag, &js) < 0) {
		js_docs_locate(docs, i, diag, from);
		return JS_CLI_DOC_INVALID;
	}
	js_default_jobset(js);
	/* KEP-969's renamed spec.scheduling fields: the old names still work
	 * for one release; say which to use, valid or not. */
	json_t *warn = js_sched_warnings(js);
	size_t wi;
	const json_t *w;
	json_array_foreach(warn, wi, w)
		fprintf(stderr, "%s:%d: warning: %s\n", js_docs_file(docs), js_docs_line(docs, i), json_string_value(w));
	json_decref(warn);
	struct js_validate_opts opts = {.gates = *gates, .strict = true};
	if (js_validate_create(js, &opts, diag) < 0) {
		js_docs_locate(docs, i, diag, from);
		js_jobset_free(js);
		return JS_CLI_DOC_INVALID;
	}
	*ret_js = js;
	return JS_CLI_DOC_JOBSET;
}

void js_cli_print_diag(FILE *f, const struct js_diag *diag)
{
	struct js_buf b;
	js_buf_init(&b, 0);
	for (size_t i = 0; i < diag->n; i++) {
		js_buf_clear(&b);
		if (js_diag_format(&diag->items[i], false, &b) == 0)
			fprintf(f, "%s\n", js_buf_str(&b));
	}
	js_buf_done(&b);
}
