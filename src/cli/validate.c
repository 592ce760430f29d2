/*
 * validate.c - `jobset validate FILE...`: is my manifest right?
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/emit.h"
#include "cli/cli.h"
#include "cli/manifest.h"

static const char usage[] =
	"usage: jobset validate [-o text|json] [--feature-gates G=true,...] FILE...\n"
	"\n"
	"Check JobSet manifests (YAML or JSON; '-' reads standard input) as the API\n"
	"server and the JobSet webhooks would, plus the mistakes upstream finds only\n"
	"after submit. Every error is reported with file:line:col and field path.\n"
	"Documents of other kinds in a stream are skipped with a note.\n"
	"\n"
	"  -o, --output FORMAT      text (default) or json\n"
	"      --feature-gates LIST enable gates: RestartJob, InPlaceRestart, ElasticJobSet\n"
	"  -h, --help               this help\n"
	"\n"
	"Exit status: 0 all valid, 1 some input invalid, 2 usage or I/O error.\n";

static json_t *diag_json(const struct js_diag *d, size_t from)
{
	json_t *a = json_array();
	for (size_t i = from; i < d->n; i++) {
		const struct js_diag_entry *e = &d->items[i];
		json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:i}", "type", js_diag_type_to_string(e->type), "field",
				      e->path, "message", e->message, "line", e->line, "column", e->col);
		if (e->value)
			json_object_set_new(o, "value", json_string(e->value));
		json_array_append_new(a, o);
	}
	return a;
}

int js_cli_validate(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"feature-gates", required_argument, NULL, 'g'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json_out = false;
	struct js_gates gates = {0};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (js_cli_opt_output("validate", optarg, "text", &json_out) != JS_EXIT_OK)
				return JS_EXIT_USAGE;
			break;
		case 'g':
			if (js_cli_opt_gates("validate", optarg, &gates) != JS_EXIT_OK)
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
	if (optind >= argc) {
		fputs(usage, stderr);
		return JS_EXIT_USAGE;
	}
	int rc = JS_EXIT_OK;
	json_t *report = json_array();
	for (int f = optind; f < argc; f++) {
		struct js_diag diag;
		js_diag_init(&diag);
		struct js_docs *docs = NULL;
		int r = js_docs_load_file(argv[f], &diag, &docs);
		if (r < 0) {
			if (json_out)
				json_array_append_new(report, json_pack("{s:s, s:b, s:o}", "file", argv[f], "valid", 0,
									"errors", diag_json(&diag, 0)));
			else
				js_cli_print_diag(stderr, &diag);
			/* Unreadable is an I/O error; unparsable is invalid input. */
			rc = (r == JS_EINVALID || r == JS_ETOOLARGE) ? (rc == JS_EXIT_USAGE ? rc : JS_EXIT_INVALID)
								       : JS_EXIT_USAGE;
			js_diag_done(&diag);
			continue;
		}
		size_t n = js_docs_count(docs), jobsets = 0;
		for (size_t i = 0; i < n; i++) {
			char desc[512];
			struct js_jobset *js = NULL;
			size_t from = diag.n;
			enum js_cli_doc_kind k = js_cli_read_doc(docs, i, &gates, &diag, &js, desc, sizeof(desc));
			if (k == JS_CLI_DOC_OTHER) {
				if (!json_out)
					fprintf(stderr, "%s:%d: skipping %s: not a JobSet\n", js_docs_file(docs),
						js_docs_line(docs, i), desc);
				continue;
			}
			jobsets++;
			if (k == JS_CLI_DOC_INVALID && rc == JS_EXIT_OK)
				rc = JS_EXIT_INVALID;
			if (json_out) {
				json_array_append_new(report, json_pack("{s:s, s:i, s:s, s:b, s:o}", "file", js_docs_file(docs),
									"line", js_docs_line(docs, i), "object", desc,
									"valid", k == JS_CLI_DOC_JOBSET, "errors",
									diag_json(&diag, from)));
			} else if (k == JS_CLI_DOC_JOBSET) {
				printf("%s:%d: %s is valid\n", js_docs_file(docs), js_docs_line(docs, i), desc);
			} else {
				struct js_diag part = {.n = diag.n - from, .cap = 0, .items = diag.items + from};
				js_cli_print_diag(stderr, &part);
				fprintf(stderr, "%s:%d: %s is invalid: %zu error%s\n", js_docs_file(docs),
					js_docs_line(docs, i), desc, diag.n - from, diag.n - from == 1 ? "" : "s");
			}
			js_jobset_free(js);
		}
		if (jobsets == 0 && !json_out)
			fprintf(stderr, "%s: no JobSet documents found\n", js_docs_file(docs));
		js_docs_free(docs);
		js_diag_done(&diag);
	}
	if (json_out) {
		struct js_buf b;
		js_buf_init(&b, 0);
		if (js_emit_json(report, &b) == 0)
			fputs(js_buf_str(&b), stdout);
		js_buf_done(&b);
	}
	json_decref(report);
	return rc;
}
