/*
 * manifest.c - reading JobSet documents for the CLI.
 */
#include "cli/manifest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/codec.h"
#include "api/defaults.h"
#include "api/validate.h"
#include "base/buf.h"
#include "base/json.h"

static const struct {
	const char *name;
	size_t off;
} gate_names[] = {
	{"RestartJob", offsetof(struct js_gates, restart_job)},
	{"InPlaceRestart", offsetof(struct js_gates, in_place_restart)},
	{"ElasticJobSet", offsetof(struct js_gates, elastic_jobset)},
};

/* One "Name[=true|false]" item of a gate list. */
static int parse_gate(const char *item, size_t n, struct js_gates *gates, char *err, size_t errlen)
{
	const char *eq = memchr(item, '=', n);
	size_t name_len = eq ? (size_t)(eq - item) : n;
	const char *val = eq ? eq + 1 : "true";
	size_t val_len = eq ? n - name_len - 1 : 4;
	bool on;
	if (val_len == 4 && strncmp(val, "true", 4) == 0)
		on = true;
	else if (val_len == 5 && strncmp(val, "false", 5) == 0)
		on = false;
	else {
		snprintf(err, errlen, "feature gate %.*s: value must be true or false, not '%.*s'", (int)name_len, item,
			 (int)val_len, val);
		return -EINVAL;
	}
	for (size_t i = 0; i < JS_ARRAY_SIZE(gate_names); i++)
		if (strlen(gate_names[i].name) == name_len && strncmp(gate_names[i].name, item, name_len) == 0) {
			*(bool *)((char *)gates + gate_names[i].off) = on;
			return 0;
		}
	snprintf(err, errlen, "unknown feature gate '%.*s' (known: RestartJob, InPlaceRestart, ElasticJobSet)", (int)name_len,
		 item);
	return -EINVAL;
}

int js_cli_parse_gates(const char *spec, struct js_gates *gates, char *err, size_t errlen)
{
	for (const char *p = spec; *p;) {
		size_t n = strcspn(p, ",");
		if (n > 0) {
			int r = parse_gate(p, n, gates, err, errlen);
			if (r < 0)
				return r;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
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
