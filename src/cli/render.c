/*
 * render.c - `jobset render FILE`: the child Jobs and headless Service the
 * controller would create, byte for byte (SPEC §6-§8).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/render.h"
#include "base/emit.h"
#include "base/limits.h"
#include "cli/cli.h"
#include "cli/manifest.h"

static const char usage[] =
	"usage: jobset render [--attempt N] [-o yaml|json] [--feature-gates G=true,...] FILE\n"
	"\n"
	"Print the objects the controller creates for each JobSet in FILE ('-' for\n"
	"standard input), after defaulting and validation: the headless Service,\n"
	"the PersistentVolumeClaims of volumeClaimPolicies, and every child Job.\n"
	"\n"
	"  --attempt N          render Jobs of restart attempt N (default: status.restarts, 0)\n"
	"  -o, --output FORMAT  yaml (default: a multi-document stream) or json (a v1 List)\n"
	"  --feature-gates LIST enable gates: RestartJob, InPlaceRestart, ElasticJobSet\n"
	"  -h, --help           this help\n"
	"\n"
	"Exit status: 0 rendered, 1 invalid input, 2 usage or I/O error.\n";

static int parse_attempt(const char *s, int32_t *out)
{
	char *end = NULL;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || v < 0 || v > INT32_MAX)
		return -1;
	*out = (int32_t)v;
	return 0;
}

void js_cli_render_collect(const struct js_jobset *js, const struct js_render_opts *ro, json_t *items)
{
	if (js_jobset_dns_hostnames(js))
		json_array_append_new(items, js_render_service(js));
	json_t *pvcs = js_render_pvcs(js);
	json_array_extend(items, pvcs);
	json_decref(pvcs);
	for (size_t r = 0; r < js->spec.n_replicated_jobs; r++) {
		const struct js_rjob *rj = &js->spec.replicated_jobs[r];
		for (int32_t j = 0; j < (rj->has_replicas ? rj->replicas : 1); j++)
			json_array_append_new(items, js_render_job(js, r, j, ro));
	}
}

int js_cli_render(int argc, char **argv)
{
	static const struct option opts[] = {
		{"attempt", required_argument, NULL, 'a'},
		{"output", required_argument, NULL, 'o'},
		{"feature-gates", required_argument, NULL, 'g'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct js_render_opts ro = {0};
	bool json_out = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			if (parse_attempt(optarg, &ro.attempt) < 0) {
				fprintf(stderr, "jobset render: --attempt takes a whole number from 0 to 2147483647, not '%s'\n",
					optarg);
				return JS_EXIT_USAGE;
			}
			ro.has_attempt = true;
			break;
		case 'o':
			if (js_cli_opt_output("render", optarg, "yaml", &json_out) != JS_EXIT_OK)
				return JS_EXIT_USAGE;
			break;
		case 'g':
			if (js_cli_opt_gates("render", optarg, &ro.gates) != JS_EXIT_OK)
				return JS_EXIT_USAGE;
			break;
		case 'h':
			fputs(usage, stdout);
			return JS_EXIT_OK;
		default:
			fputs(usage, stderr);
			return JS_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fputs(usage, stderr);
		return JS_EXIT_USAGE;
	}
	struct js_diag diag;
	js_diag_init(&diag);
	struct js_docs *docs = NULL;
	int r = js_docs_load_file(argv[optind], &diag, &docs);
	if (r < 0) {
		js_cli_print_diag(stderr, &diag);
		js_diag_done(&diag);
		return (r == JS_EINVALID || r == JS_ETOOLARGE) ? JS_EXIT_INVALID : JS_EXIT_USAGE;
	}
	int rc = JS_EXIT_OK;
	json_t *items = json_array();
	size_t jobsets = 0;
	for (size_t i = 0; i < js_docs_count(docs); i++) {
		char desc[512];
		struct js_jobset *js = NULL;
		enum js_cli_doc_kind k = js_cli_read_doc(docs, i, &ro.gates, &diag, &js, desc, sizeof(desc));
		if (k == JS_CLI_DOC_OTHER) {
			fprintf(stderr, "%s:%d: skipping %s: not a JobSet\n", js_docs_file(docs), js_docs_line(docs, i), desc);
			continue;
		}
		jobsets++;
		if (k == JS_CLI_DOC_INVALID) {
			rc = JS_EXIT_INVALID;
			continue;
		}
		int64_t total = (int64_t)json_array_size(items) + 1 + (int64_t)js->spec.n_volume_claim_policies * JS_LIMIT_VCP;
		for (size_t q = 0; q < js->spec.n_replicated_jobs; q++) {
			const struct js_rjob *rj = &js->spec.replicated_jobs[q];
			total += rj->has_replicas ? rj->replicas : 1;
		}
		if (total > JS_LIMIT_RENDER_OBJECTS) {
			fprintf(stderr,
				"%s:%d: %s would print %lld objects; render prints at most %d (use 'jobset simulate' to "
				"explore a JobSet this large)\n",
				js_docs_file(docs), js_docs_line(docs, i), desc, (long long)total, JS_LIMIT_RENDER_OBJECTS);
			rc = JS_EXIT_INVALID;
			js_jobset_free(js);
			break;
		}
		js_cli_render_collect(js, &ro, items);
		js_jobset_free(js);
	}
	if (rc != JS_EXIT_OK) {
		js_cli_print_diag(stderr, &diag); /* empty when a limit stopped us */
	} else if (jobsets == 0) {
		fprintf(stderr, "%s: no JobSet documents found\n", js_docs_file(docs));
		rc = JS_EXIT_INVALID;
	} else {
		struct js_buf out;
		js_buf_init(&out, 0);
		int er = 0;
		if (json_out) {
			json_t *list = json_pack("{s:s, s:s, s:O}", "apiVersion", "v1", "kind", "List", "items", items);
			er = js_emit_json(list, &out);
			json_decref(list);
		} else {
			for (size_t i = 0; i < json_array_size(items) && er == 0; i++)
				er = js_emit_yaml(json_array_get(items, i), 1, &out);
		}
		if (er == 0)
			fputs(js_buf_str(&out), stdout);
		else {
			fprintf(stderr, "jobset render: output too large\n");
			rc = JS_EXIT_USAGE;
		}
		js_buf_done(&out);
	}
	json_decref(items);
	js_docs_free(docs);
	js_diag_done(&diag);
	return rc;
}
