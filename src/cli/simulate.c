/*
 * simulate.c - `jobset simulate FILE --events EVENTS`: ask the reconcile
 * core "what does my JobSet do if job X fails with reason Y?" without a
 * cluster. The JobSet runs in the simulated world of sim/sim.h; after
 * every event the world is reconciled until nothing is left to do, and each
 * pass prints its actions, events and the resulting status.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/load.h"
#include "cli/cli.h"
#include "cli/manifest.h"
#include "sim/sim.h"

static const char usage[] =
	"usage: jobset simulate FILE [--events EVENTS] [-e EVENT]... [--feature-gates A=true,...] [--now SECONDS]\n"
	"\n"
	"Run the JobSet in FILE against a simulated cluster and print what the controller does.\n"
	"EVENTS is a file of event lines ('-' for standard input); -e gives one line. Lines:\n"
	"  fail JOB [reason=R] [message=\"M\"]   failtarget JOB ...   complete JOB   ready JOB   activate JOB\n"
	"  finalize JOB   remove JOB   suspend   resume   advance SECONDS   patch {merge patch}\n"
	"  expect ...   (see src/sim/sim.c)\n"
	"JOB is a Job name, 'all', a 'prefix*' or '#N' (N-th live Job by name).\n"
	"Example: jobset simulate js.yaml -e 'fail js-workers-0 reason=BackoffLimitExceeded'\n";

static int run_line(struct js_sim *sim, const char *line, bool quiet_status)
{
	struct js_buf out;
	char *err = NULL;
	js_buf_init(&out, 0);
	printf("> %s\n", line);
	int r = js_sim_exec(sim, line, &out, &err);
	fputs(js_buf_str(&out), stdout);
	if (r == 0 && !quiet_status && strncmp(line, "expect", 6) != 0) {
		js_buf_clear(&out);
		js_sim_print_status(sim, &out);
		fputs(js_buf_str(&out), stdout);
	}
	js_buf_done(&out);
	if (r < 0) {
		fprintf(stderr, "jobset simulate: %s: %s\n", line, err ? err : "failed");
		free(err);
		return JS_EXIT_INVALID;
	}
	return JS_EXIT_OK;
}

static int run_events_file(struct js_sim *sim, const char *path)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "re");
	char line[4096];
	int rc = JS_EXIT_OK;
	if (!f) {
		fprintf(stderr, "jobset simulate: cannot open '%s'\n", path);
		return JS_EXIT_USAGE;
	}
	while (rc == JS_EXIT_OK && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = '\0';
		const char *p = line + strspn(line, " \t");
		if (!*p || *p == '#')
			continue;
		rc = run_line(sim, p, false);
	}
	if (f != stdin)
		fclose(f);
	return rc;
}

int js_cli_simulate(int argc, char **argv)
{
	static const struct option opts[] = {
		{"events", required_argument, NULL, 'E'}, {"event", required_argument, NULL, 'e'},
		{"feature-gates", required_argument, NULL, 'g'}, {"now", required_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'h'},	     {NULL, 0, NULL, 0},
	};
	struct js_gates gates = {0};
	const char *events = NULL;
	char **lines = js_xcalloc((size_t)argc + 1, sizeof(*lines));
	size_t n_lines = 0;
	long long now = 1700000000;
	int c, rc = JS_EXIT_USAGE;

	optind = 1;
	while ((c = getopt_long(argc, argv, "e:h", opts, NULL)) != -1) {
		char *end = NULL;
		switch (c) {
		case 'E':
			events = optarg;
			break;
		case 'e':
			lines[n_lines++] = optarg;
			break;
		case 'g':
			if (js_cli_opt_gates("simulate", optarg, &gates) != JS_EXIT_OK)
				goto out;
			break;
		case 'n':
			now = strtoll(optarg, &end, 10);
			if (!end || *end || now < 0) {
				fprintf(stderr, "jobset simulate: --now takes Unix seconds, not '%s'\n", optarg);
				goto out;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			rc = JS_EXIT_OK;
			goto out;
		default:
			fputs(usage, stderr);
			goto out;
		}
	}
	if (optind != argc - 1) {
		fputs(usage, stderr);
		goto out;
	}
	if (js_cli_refuse_in_place("simulate", &gates, "the simulator models Jobs, not Pods") != JS_EXIT_OK ||
	    js_cli_refuse_gang("simulate", &gates) != JS_EXIT_OK)
		goto out;
	struct js_diag diag;
	js_diag_init(&diag);
	struct js_docs *docs = NULL;
	int r = js_docs_load_file(argv[optind], &diag, &docs);
	struct js_jobset *js = NULL;
	if (r == 0) {
		for (size_t i = 0; i < js_docs_count(docs) && !js; i++) {
			char desc[512];
			enum js_cli_doc_kind k = js_cli_read_doc(docs, i, &gates, &diag, &js, desc, sizeof(desc));
			if (k == JS_CLI_DOC_INVALID)
				break;
		}
	}
	if (!js) {
		js_cli_print_diag(stderr, &diag);
		if (r == 0 && diag.n == 0)
			fprintf(stderr, "jobset simulate: %s: no JobSet found\n", argv[optind]);
		js_diag_done(&diag);
		js_docs_free(docs);
		rc = r < 0 && r != JS_EINVALID && r != JS_ETOOLARGE ? JS_EXIT_USAGE : JS_EXIT_INVALID;
		goto out;
	}
	js_diag_done(&diag);
	js_docs_free(docs);

	struct js_sim *sim = js_sim_new(js, gates, now);
	js_jobset_free(js);
	js_sim_set_auto_settle(sim, true);
	rc = run_line(sim, "settle", false);
	if (rc == JS_EXIT_OK && events)
		rc = run_events_file(sim, events);
	for (size_t i = 0; rc == JS_EXIT_OK && i < n_lines; i++)
		rc = run_line(sim, lines[i], false);
	js_sim_free(sim);
out:
	free(lines);
	return rc;
}
