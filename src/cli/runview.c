/*
 * runview.c - `jobset run`'s output (see runview.h).
 */
#include "cli/runview.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "api/codec.h"
#include "api/render.h"
#include "base/buf.h"
#include "base/json.h"
#include "cli/cli.h"
#include "local/podjson.h"
#include "local/report.h"

#define RUNVIEW_EXIT_FAILED 1
/* Failed pods listed by name in the text summary; the rest are counted. */
#define RUNVIEW_MAX_FAILED_PODS 10

static void stamp(int64_t ms, char *buf, size_t n)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	size_t k = strftime(buf, n, "%H:%M:%S", &tm);
	snprintf(buf + k, n - k, ".%03d", (int)(ms % 1000));
}

bool js_cli_runview_live(const struct js_cli_runview *o)
{
	return o->tty && !o->quiet && !o->follow && !o->events_json && !o->output_json;
}

static void erase_view(struct js_cli_runview *o)
{
	for (size_t i = 0; i < o->drawn; i++)
		fputs("\033[1A\033[2K", stdout);
	o->drawn = 0;
}

void js_cli_runview_event(void *ctx, const struct js_local_event *e)
{
	struct js_cli_runview *o = ctx;
	if (o->quiet)
		return;
	bool live = js_cli_runview_live(o);
	/* Above the live view only what needs attention. */
	if (live && strcmp(e->type, "Warning") != 0)
		return;
	FILE *f = o->follow || o->output_json ? stderr : stdout;
	if (live)
		erase_view(o);
	if (o->events_json) {
		json_t *j = js_report_event_json(e);
		char *s = json_dumps(j, JSON_COMPACT);
		if (s)
			fprintf(f, "%s\n", s);
		free(s);
		json_decref(j);
	} else {
		char t[32];
		stamp(e->time_ms, t, sizeof(t));
		struct js_buf b;
		js_buf_init(&b, 0);
		js_report_event_text(e, &b);
		fprintf(f, "%s %s\n", t, js_buf_str(&b));
		js_buf_done(&b);
	}
	fflush(f);
}

void js_cli_runview_line(void *ctx, const struct js_pod *pod, const char *container, const char *line, size_t n)
{
	struct js_cli_runview *o = ctx;
	if (!o->follow)
		return;
	printf("%s/%s | %.*s\n", js_pod_name(pod), container, (int)n, line);
	fflush(stdout);
}

/** The terminal's size, or large numbers when unknown. */
static void term_size(size_t *rows, size_t *cols)
{
	struct winsize ws;
	bool ok = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0;
	*rows = ok && ws.ws_row > 0 ? ws.ws_row : 1000;
	*cols = ok && ws.ws_col > 0 ? ws.ws_col : 1000;
}

/** One line of the view, cut to the terminal's width: a line that wraps
 * takes two rows the redraw does not know of, and the view would creep
 * down the scrollback at each redraw. The last column stays empty, as some
 * terminals wrap on writing it. */
JS_PRINTF(2, 3) static void view_line(size_t cols, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	size_t len = n < 0 ? 0 : (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
	size_t max = cols > 1 ? cols - 1 : 1;
	printf("%.*s\n", (int)(len < max ? len : max), line);
}

void js_cli_runview_view(void *ctx, const struct js_local_view *v)
{
	struct js_cli_runview *o = ctx;
	if (!js_cli_runview_live(o))
		return;
	erase_view(o);
	/* Never taller or wider than the terminal: a view that scrolls can no
	 * longer be erased, and each redraw would flood the scrollback. One row
	 * stays free for the cursor. */
	size_t rows, cols;
	term_size(&rows, &cols);
	size_t room = rows > 4 ? rows - 3 : 1;
	size_t shown = v->n_rjobs <= room ? v->n_rjobs : (room > 1 ? room - 1 : 0);
	view_line(cols, "jobset %s  %s  restarts %d  elapsed %.1fs", o->name, v->state, v->restarts,
		  (double)v->elapsed_ms / 1000.0);
	view_line(cols, "  %-20s %8s %8s %8s %8s %8s %8s %8s %8s", "REPLICATEDJOB", "JOBS", "ACTIVE", "READY",
		  "SUCCEEDED", "FAILED", "STOPPING", "JOBSOK", "RESTARTS");
	o->drawn = 2;
	for (size_t i = 0; i < shown; i++) {
		const struct js_local_rjob_view *r = &v->rjobs[i];
		view_line(cols, "  %-20s %4d/%-3d %8d %8d %8d %8d %8d %8d %8d", r->name,
			  r->jobs_active + r->jobs_succeeded + r->jobs_failed, r->replicas, r->pods_active,
			  r->pods_ready, r->pods_succeeded, r->pods_failed, r->pods_terminating, r->jobs_succeeded,
			  r->restarts);
		o->drawn++;
	}
	if (shown < v->n_rjobs) {
		view_line(cols, "  ... %zu more ReplicatedJobs (jobset ps)", v->n_rjobs - shown);
		o->drawn++;
	}
	fflush(stdout);
}

/* ---- summary ---- */

/** A container's run that ended non-zero, or NULL: its current state if
 * that did, else the run before its last restart (an OnFailure container
 * restarted after failing, then stopped or succeeded). */
static const json_t *failed_run(const json_t *cs)
{
	static const char *const where[] = {"state.terminated", "lastState.terminated"};
	for (size_t i = 0; i < JS_ARRAY_SIZE(where); i++) {
		const json_t *t = js_json_path(cs, where[i]);
		if (t && json_integer_value(json_object_get(t, "exitCode")) != 0)
			return t;
	}
	return NULL;
}

/** Whether a container of `pod` was restarted after a failed run. */
static bool restarted_after_failure(const json_t *pod)
{
	json_t *all = js_podjson_statuses(pod);
	bool failed = false;
	size_t i;
	json_t *cs;
	json_array_foreach(all, i, cs)
		failed |= json_integer_value(json_object_get(cs, "restartCount")) > 0 &&
			  js_json_path(cs, "lastState.terminated") &&
			  json_integer_value(js_json_path(cs, "lastState.terminated.exitCode")) != 0;
	json_decref(all);
	return failed;
}

/** Whether a pod in the results failed on its own: not stopped by a
 * deletion, except an eviction (a failure, as on a cluster) and a pod the
 * Job controller deleted because its Job failed after this pod's
 * containers had failed (OnFailure past backoffLimit). */
static bool pod_failed(const json_t *pod)
{
	const char *phase = js_json_str(js_json_path(pod, "status"), "phase");
	const char *stop = js_json_str(js_json_path(pod, "metadata.annotations"), JS_PODJSON_ANN_STOP);
	if (stop && strcmp(stop, "JobFailed") == 0)
		return restarted_after_failure(pod);
	return phase && strcmp(phase, "Failed") == 0 &&
	       (!stop || strcmp(stop, "Evicted") == 0 || strcmp(stop, "ProgressDeadlineExceeded") == 0);
}

/** The terminated state of a container status: state.terminated, or
 * lastState.terminated while it waits for a restart. */
static const json_t *term_of(const json_t *cs)
{
	const json_t *t = js_json_path(cs, "state.terminated");
	return t ? t : js_json_path(cs, "lastState.terminated");
}

/** " worker Exited (42)" for every container of `pod` that exited
 * non-zero (compose's wording), init containers included. */
static void exits(const json_t *pod, struct js_buf *b)
{
	json_t *all = js_podjson_statuses(pod);
	size_t i;
	json_t *cs;
	json_array_foreach(all, i, cs)
	{
		const json_t *t = failed_run(cs);
		if (!t)
			continue;
		json_int_t code = json_integer_value(json_object_get(t, "exitCode"));
		const char *reason = js_json_str(t, "reason");
		if (js_buf_printf(b, " %s Exited (%lld)%s%s", js_json_str(cs, "name"), (long long)code,
				  reason && strcmp(reason, "Error") != 0 ? " " : "",
				  reason && strcmp(reason, "Error") != 0 ? reason : "") < 0)
			break;
	}
	json_decref(all);
}

struct tally {
	int succeeded, failed, stopped, other;
};

static void count_pods(const json_t *items, struct tally *t)
{
	size_t i;
	json_t *it;
	json_array_foreach(items, i, it)
	{
		if (strcmp(js_json_str(it, "kind") ? js_json_str(it, "kind") : "", "Pod") != 0)
			continue;
		const char *phase = js_json_str(js_json_path(it, "status"), "phase");
		if (pod_failed(it))
			t->failed++;
		else if (js_json_str(js_json_path(it, "metadata.annotations"), JS_PODJSON_ANN_STOP))
			t->stopped++;
		else if (phase && strcmp(phase, "Succeeded") == 0)
			t->succeeded++;
		else
			t->other++;
	}
}

static const char *result_name(enum js_local_result res)
{
	return res == JS_LOCAL_INTERRUPTED ? "Interrupted"
	       : res == JS_LOCAL_COMPLETED ? "Completed"
	       : res == JS_LOCAL_STALLED   ? "Stalled"
					   : "Failed";
}

static const struct js_condition *result_condition(const struct js_jobset *js, enum js_local_result res)
{
	return js_jobset_condition(js, res == JS_LOCAL_COMPLETED     ? "Completed"
				       : res == JS_LOCAL_INTERRUPTED ? JS_LOCAL_COND_INTERRUPTED
								     : "Failed");
}

static int exit_code(enum js_local_result res)
{
	return res == JS_LOCAL_INTERRUPTED ? JS_EXIT_INTERRUPTED
	       : res == JS_LOCAL_COMPLETED ? JS_EXIT_OK
					   : RUNVIEW_EXIT_FAILED;
}

/** -o json: one object a script can read without parsing text. */
static void summary_json(const struct js_local *l, enum js_local_result res, const char *run_dir)
{
	const struct js_jobset *js = js_local_jobset(l);
	const struct js_condition *c = result_condition(js, res);
	const json_t *items = json_object_get(js_local_results(l), "items");
	struct tally t = {0};
	count_pods(items, &t);
	json_t *failed = json_array();
	size_t i;
	json_t *it;
	json_array_foreach(items, i, it)
	{
		if (strcmp(js_json_str(it, "kind") ? js_json_str(it, "kind") : "", "Pod") != 0 || !pod_failed(it))
			continue;
		json_t *ctrs = json_array(), *all = js_podjson_statuses(it);
		size_t ci;
		json_t *cs;
		json_array_foreach(all, ci, cs)
		{
			const json_t *term = term_of(cs);
			json_t *o = json_pack("{s:s, s:O}", "name", js_json_str(cs, "name"), "restartCount",
					      json_object_get(cs, "restartCount"));
			if (term)
				json_object_update(o, js_json_unconst(term));
			char *log = js_buf_format("%s/logs/%s/%s.log", run_dir,
						  js_json_str(js_json_path(it, "metadata"), "name"), js_json_str(cs, "name"));
			json_object_set_new(o, "log", json_string(log));
			free(log);
			json_array_append_new(ctrs, o);
		}
		json_decref(all);
		json_array_append_new(failed, json_pack("{s:s, s:s, s:o}", "name",
							js_json_str(js_json_path(it, "metadata"), "name"), "job",
							js_json_str(js_json_path(it, "metadata.labels"), "job-name")
								? js_json_str(js_json_path(it, "metadata.labels"), "job-name")
								: "",
							"containers", ctrs));
	}
	json_t *enc = js_codec_encode_jobset(js);
	json_t *conds = json_object_get(js_json_path(enc, "status"), "conditions");
	json_t *doc = json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:f, s:i, s:s, s:{s:i, s:i, s:i, s:i}, s:o, s:O}",
				"name", js_jobset_name(js), "namespace", js_jobset_namespace(js), "result",
				result_name(res), "exitCode", (json_int_t)exit_code(res), "reason",
				c && c->reason ? c->reason : "", "message", c && c->message ? c->message : "",
				"elapsedSeconds", (double)js_local_elapsed_ms(l) / 1000.0, "restarts",
				(json_int_t)js->status.restarts, "runDir", run_dir, "pods", "succeeded",
				(json_int_t)t.succeeded, "failed", (json_int_t)t.failed, "stopped", (json_int_t)t.stopped,
				"other", (json_int_t)t.other, "failedPods", failed, "conditions",
				conds ? conds : json_array());
	struct js_local_phases ph;
	js_local_phases(l, &ph);
	json_object_set_new(doc, "phaseSummary", js_local_phases_json(&ph));
	char *report = js_buf_format("%s/report.html", run_dir);
	json_object_set_new(doc, "report", json_string(report));
	free(report);
	char *s = json_dumps(doc, JSON_INDENT(2));
	if (s)
		printf("%s\n", s);
	fflush(stdout);
	free(s);
	json_decref(doc);
	json_decref(enc);
}

/* The phase and goodput summary (docs/metrics.md, the same numbers the
 * controller exports): two lines. */
static void phases_text(FILE *out, const struct js_local *l)
{
	struct js_local_phases ph;
	js_local_phases(l, &ph);
	const double *s = ph.sum.seconds;
	fprintf(out, "  phases: pending %.1fs, running %.1fs, restarting %.1fs, suspended %.1fs; goodput %.2f of %.1fs\n",
	       s[JS_PHASE_PENDING], s[JS_PHASE_RUNNING], s[JS_PHASE_RESTARTING], s[JS_PHASE_SUSPENDED], ph.sum.goodput,
	       ph.sum.wall_seconds);
	size_t n = ph.n_readies < JS_LOCAL_MAX_READIES ? ph.n_readies : JS_LOCAL_MAX_READIES;
	if (n == 0)
		return;
	fprintf(out, "  time to all ready:");
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s %s %.1fs", i ? "," : "", js_phase_trigger_name(ph.readies[i].trigger), ph.readies[i].seconds);
	fprintf(out, "%s\n", ph.n_readies > n ? ", ..." : "");
}

static void summary_text(FILE *out, const struct js_cli_runview *o, const struct js_local *l, enum js_local_result res,
			 const char *run_dir)
{
	const struct js_jobset *js = js_local_jobset(l);
	const struct js_condition *c = result_condition(js, res);
	const json_t *items = json_object_get(js_local_results(l), "items");
	struct tally t = {0};
	count_pods(items, &t);
	fprintf(out, "jobset %s %s in %.1fs, restarts %d%s%s%s\n", o->name, res == JS_LOCAL_STALLED ? "Stalled (Failed)" :
	       result_name(res), (double)js_local_elapsed_ms(l) / 1000.0, js->status.restarts,
	       c && c->reason ? " (" : "", c && c->reason ? c->reason : "", c && c->reason ? ")" : "");
	if (c && c->message && res != JS_LOCAL_COMPLETED)
		fprintf(out, "  %s\n", c->message);
	if (res == JS_LOCAL_STALLED)
		fprintf(out, "  nothing was left running or scheduled; see the Stalled event in %s/events.log\n", run_dir);
	fprintf(out, "  pods: %d succeeded, %d failed, %d stopped\n", t.succeeded, t.failed, t.stopped);
	phases_text(out, l);
	size_t i;
	json_t *it;
	int listed = 0;
	json_array_foreach(items, i, it)
	{
		if (strcmp(js_json_str(it, "kind") ? js_json_str(it, "kind") : "", "Pod") != 0 || !pod_failed(it))
			continue;
		if (listed++ == RUNVIEW_MAX_FAILED_PODS)
			break;
		struct js_buf b;
		js_buf_init(&b, 1024);
		exits(it, &b);
		const char *stop = js_json_str(js_json_path(it, "metadata.annotations"), JS_PODJSON_ANN_STOP);
		fprintf(out, "  pod/%s:%s%s\n", js_json_str(js_json_path(it, "metadata"), "name"),
		       b.len ? js_buf_str(&b) : " Failed",
		       !stop				   ? ""
		       : strcmp(stop, "Evicted") == 0		   ? " (evicted)"
		       : strcmp(stop, "ProgressDeadlineExceeded") == 0 ? " (progress deadline exceeded)"
								   : "");
		js_buf_done(&b);
	}
	if (t.failed > RUNVIEW_MAX_FAILED_PODS)
		fprintf(out, "  ... and %d more failed pods (jobset ps --run-dir %s)\n", t.failed - RUNVIEW_MAX_FAILED_PODS,
		       run_dir);
	fprintf(out, "  logs:   %s/logs\n  status: %s/jobset.json\n", run_dir, run_dir);
	fprintf(out, "picture of the run: %s/report.html\n", run_dir);
	fflush(out);
}

int js_cli_runview_summary(const struct js_cli_runview *o, const struct js_local *l, enum js_local_result res,
			   const char *run_dir)
{
	if (o->output_json) {
		summary_json(l, res, run_dir);
	} else if (!o->quiet) {
		/* Standard output stays JSON lines under --events json. */
		summary_text(o->events_json ? stderr : stdout, o, l, res, run_dir);
	} else if (res != JS_LOCAL_COMPLETED && res != JS_LOCAL_INTERRUPTED) {
		/* --quiet prints only errors, and a failed JobSet is one. */
		const struct js_condition *c = js_jobset_condition(js_local_jobset(l), "Failed");
		fprintf(stderr, "jobset %s %s%s%s; logs in %s/logs\n", o->name, result_name(res),
			c && c->message ? ": " : "", c && c->message ? c->message : "", run_dir);
	}
	return exit_code(res);
}
