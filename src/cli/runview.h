/*
 * runview.h - what `jobset run` prints while it runs and when it ends: the
 * live view on a terminal (one row per ReplicatedJob, clipped to the
 * terminal's height), events as text lines or JSON lines, container output
 * with --follow, and the summary as text (compose-like "Exited (1)" per
 * failed pod) or one JSON object (-o json).
 *
 * Where things go: the summary (-o json) alone on stdout; events on stdout,
 * or on stderr when stdout carries container output (--follow) or the JSON
 * summary; on a terminal without --follow only Warning events, above the
 * live view. A closed stdout (`jobset run ... | head`) loses output, never
 * the run: the runner ignores SIGPIPE and keeps writing its files.
 *
 * Not thread-safe; one per run.
 */
#ifndef JS_CLI_RUNVIEW_H
#define JS_CLI_RUNVIEW_H

#include <jansson.h>
#include <stdbool.h>

#include "local/local.h"

struct js_cli_runview {
	bool tty;          /* stdout is a terminal: draw the live view */
	bool quiet;        /* only errors */
	bool follow;       /* container output on stdout */
	bool events_json;  /* --events json */
	bool output_json;  /* -o json */
	const char *name;  /* the JobSet's */
	size_t drawn;      /* lines of the live view on screen */
};

/** The callbacks for struct js_local_opts (ctx: a struct js_cli_runview). */
void js_cli_runview_event(void *ctx, const struct js_local_event *e);
void js_cli_runview_line(void *ctx, const struct js_pod *pod, const char *container, const char *line, size_t n);
void js_cli_runview_view(void *ctx, const struct js_local_view *v);

/** Whether the live view is drawn at all (a terminal, text output). */
bool js_cli_runview_live(const struct js_cli_runview *o);

/**
 * Print the summary of a finished run and return the exit code: 0
 * Completed, 1 Failed or stalled, 130 interrupted. Failed pods are listed
 * with their containers' exits ("Exited (42)"), read from the run's results
 * (js_local_results), at most a screenful.
 */
int js_cli_runview_summary(const struct js_cli_runview *o, const struct js_local *l, enum js_local_result res,
			   const char *run_dir);

#endif
