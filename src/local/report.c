/*
 * report.c - what a run tells (local_int.h): its events in the one format
 * (text for events.log and terminals, JSON for scripts), the outcome events
 * of pods and Jobs, the results files jobset.json and jobs.json, and the
 * live state file state.json (local.h).
 */
#include "local/report.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/codec.h"
#include "api/render.h"
#include "base/buf.h"
#include "base/file.h"
#include "base/json.h"
#include "base/parse.h"
#include "base/time.h"
#include "local/jobctl.h"
#include "local/local_int.h"
#include "local/container.h"
#include "local/html.h"
#include "local/podjson.h"
#include "local/timeline.h"

/* The kinds events name, as `kubectl` spells them in text and in JSON. */
static const struct {
	const char *text, *kind;
} kinds[] = {
	{"pod", "Pod"}, {"job", "Job"}, {"jobset", "JobSet"}, {"service", "Service"},
	{"persistentvolumeclaim", "PersistentVolumeClaim"},
};

void js_report_event_text(const struct js_local_event *e, struct js_buf *out)
{
	if (js_buf_printf(out, "%s %s %s/%s%s%s", e->type, e->reason, e->kind, e->name, e->message[0] ? ": " : "",
			  e->message) < 0) {
		/* bounded by the caller's buffer: keep what fits */
	}
}

json_t *js_report_event_json(const struct js_local_event *e)
{
	const char *kind = e->kind;
	for (size_t i = 0; i < JS_ARRAY_SIZE(kinds); i++) {
		if (strcmp(kinds[i].text, e->kind) == 0)
			kind = kinds[i].kind;
	}
	char ts[32];
	js_time_format_rfc3339(e->time_ms / 1000, ts);
	/* Milliseconds: events of one turn are often in the same second. */
	snprintf(ts + 19, sizeof(ts) - 19, ".%03dZ", (int)(e->time_ms % 1000));
	json_t *reasons = json_array();
	for (const char *r = e->reason; *r;) {
		size_t n = strcspn(r, ",");
		json_array_append_new(reasons, json_stringn(r, n));
		r += n + (r[n] == ',');
	}
	return json_pack("{s:s, s:s, s:O, s:o, s:{s:s, s:s, s:s}, s:s}", "time", ts, "type", e->type, "reason",
			 json_array_get(reasons, 0) ? json_array_get(reasons, 0) : json_string(""), "reasons", reasons,
			 "involvedObject", "kind", kind, "name", e->name, "namespace", e->namespace_ ? e->namespace_ : "",
			 "message", e->message);
}

void js__report_event(struct js_local *l, const char *type, const char *reason, const char *kind, const char *name,
		      const char *f, ...)
{
	struct js_buf msg;
	js_buf_init(&msg, 0);
	va_list ap;
	va_start(ap, f);
	if (js_buf_vprintf(&msg, f, ap) < 0) {
		/* only past 64 MiB */
	}
	va_end(ap);
	struct js_local_event e = {
		.time_ms = js__local_wall_ms(), .type = type, .reason = reason, .kind = kind, .name = name,
		.namespace_ = js_jobset_namespace(l->js), .message = js_buf_str(&msg),
	};
	if (l->events_fd >= 0) {
		struct js_buf line;
		js_buf_init(&line, 0);
		char ts[21];
		js_time_format_rfc3339(e.time_ms / 1000, ts);
		if (js_buf_printf(&line, "%s ", ts) < 0) {
			/* only past 64 MiB */
		}
		js_report_event_text(&e, &line);
		if (js_buf_add(&line, "\n", 1) < 0 || write(l->events_fd, line.p, line.len) < 0) {
			/* events.log is best effort */
		}
		js_buf_done(&line);
	}
	l->state_dirty = true;
	if (l->timeline)
		js_timeline_add_event(l->timeline, &e);
	if (l->opts.on_event)
		l->opts.on_event(l->opts.ctx, &e);
	js_buf_done(&msg);
}

/** Whether the run before a container's last restart failed (an OnFailure
 * container restarted after a non-zero exit). */
static bool restarted_after_failure(const struct js_pod_ctr_info *c)
{
	return !c->sidecar && c->restarts > 0 && c->has_last && c->last.exit_code != 0;
}

/** "worker: exit code 1 (Error); sidecar: ..." for the containers that
 * decided a finished pod's outcome: regular ones, and init containers that
 * failed (sidecars are stopped after the pod finished), with the failed run
 * before the last restart of a restarted one. */
static void exits_text(const struct js_pod *p, struct js_buf *b)
{
	for (size_t i = 0; i < js_pod_n_containers(p); i++) {
		struct js_pod_ctr_info c;
		js_pod_ctr_info(p, i, &c);
		if (!c.has_term || (c.init && (c.sidecar || c.term.exit_code == 0)))
			continue;
		const char *sig = c.term.signal ? sigabbrev_np(c.term.signal) : NULL;
		int r = sig ? js_buf_printf(b, "%s%s: killed by SIG%s (exit code %d)", b->len ? "; " : "", c.name, sig,
					    c.term.exit_code)
			    : js_buf_printf(b, "%s%s: exit code %d (%s)%s%s", b->len ? "; " : "", c.name,
					    c.term.exit_code, c.term.reason, c.term.message ? ": " : "",
					    c.term.message ? c.term.message : "");
		/* The failure that counted toward backoffLimit, when the run
		 * that ended last is not it. */
		if (r >= 0 && restarted_after_failure(&c))
			r = js_buf_printf(b, ", after %d restart%s (the run before: exit code %d (%s))", c.restarts,
					  c.restarts == 1 ? "" : "s", c.last.exit_code, c.last.reason);
		if (r < 0)
			return; /* bounded: the rest is in jobs.json */
	}
	if (!b->len && js_buf_puts(b, "no container ran") < 0) {
		/* cannot happen under the ceiling */
	}
}

/** Whether a container of the pod was restarted after a failed run: a pod
 * deleted because its Job failed then failed on its own first (OnFailure
 * past backoffLimit), and is reported as failed. */
static bool failed_before_stop(const struct js_pod *p)
{
	for (size_t i = 0; i < js_pod_n_containers(p); i++) {
		struct js_pod_ctr_info c;
		js_pod_ctr_info(p, i, &c);
		if (restarted_after_failure(&c))
			return true;
	}
	return false;
}

/** How a finished pod ended, for its event and the run's picture alike: a
 * pod deleted while it ran was stopped, not failed, except an evicted pod
 * (its failure counts), one stopped for missing its progress deadline, and
 * one whose containers had failed before its Job
 * failed and the Job controller deleted it (OnFailure past backoffLimit). */
static enum js_timeline_end pod_end(const struct js_pod *p, const struct js_pod_info *in)
{
	enum js_jobctl_phase ph = js_pod_phase(p);
	if (ph < JS_JOBCTL_SUCCEEDED)
		return JS_TIMELINE_UNFINISHED;
	if (in->stop == JS_POD_STOP_EVICTED)
		return ph == JS_JOBCTL_FAILED ? JS_TIMELINE_FAILED : JS_TIMELINE_SUCCEEDED;
	if (in->stop == JS_POD_STOP_PROGRESS)
		return JS_TIMELINE_FAILED; /* missed its progress deadline: always a failure */
	if (in->stop == JS_POD_STOP_JOB_FAILED && failed_before_stop(p))
		return JS_TIMELINE_FAILED;
	if (in->stop != JS_POD_STOP_NONE)
		return JS_TIMELINE_STOPPED;
	return ph == JS_JOBCTL_SUCCEEDED ? JS_TIMELINE_SUCCEEDED : JS_TIMELINE_FAILED;
}

/** The event of a pod that reached Succeeded or Failed, with every exit
 * code and reason: Completed, Failed, or Stopped for a pod that was deleted
 * while it ran (by the Job controller, with its Job, or by the runner; an
 * evicted pod failed: its failure counts). */
void js__report_pod_finished(struct js_local *l, const struct js_pod *p, enum js_jobctl_phase before)
{
	enum js_jobctl_phase ph = js_pod_phase(p);
	if (before == ph || ph < JS_JOBCTL_SUCCEEDED)
		return;
	struct js_pod_info in;
	js_pod_info(p, &in);
	struct js_buf b;
	js_buf_init(&b, 4096);
	exits_text(p, &b);
	static const char *const stopped_by[] = {
		[JS_POD_STOP_JOB_CONTROLLER] = "deleted by the Job controller",
		[JS_POD_STOP_JOB_DELETED] = "deleted with its Job",
		[JS_POD_STOP_RUNNER] = "deleted by the runner",
		[JS_POD_STOP_JOB_FAILED] = "deleted by the Job controller when its Job failed",
	};
	enum js_timeline_end end = pod_end(p, &in);
	if (in.stop == JS_POD_STOP_EVICTED)
		js__report_event(l, end == JS_TIMELINE_FAILED ? "Warning" : "Normal",
		      end == JS_TIMELINE_FAILED ? "Failed" : "Completed", "pod", in.name, "evicted (DisruptionTarget: %s); %s",
		      in.condition_reason, js_buf_str(&b));
	else if (in.stop == JS_POD_STOP_PROGRESS)
		js__report_event(l, "Warning", "Failed", "pod", in.name, "stopped for missing its progress deadline "
				 "(ProgressDeadlineExceeded); %s", js_buf_str(&b));
	else if (in.stop == JS_POD_STOP_JOB_FAILED && end == JS_TIMELINE_FAILED)
		js__report_event(l, "Warning", "Failed", "pod", in.name,
		      "its containers failed, then its Job failed and the Job controller deleted it; %s",
		      js_buf_str(&b));
	else if (end == JS_TIMELINE_STOPPED)
		js__report_event(l, "Normal", "Stopped", "pod", in.name, "%s; %s", stopped_by[in.stop], js_buf_str(&b));
	else if (end == JS_TIMELINE_SUCCEEDED)
		js__report_event(l, "Normal", "Completed", "pod", in.name, "%s", js_buf_str(&b));
	else
		js__report_event(l, "Warning", "Failed", "pod", in.name, "%s", js_buf_str(&b));
	js_buf_done(&b);
}

/** The first container whose exit decided a failed pod: a regular one
 * that exited non-zero (or failed before its last restart), else a failed
 * init container. Its exit code and reason go on the failure's mark. */
static bool deciding_exit(const struct js_pod *p, int32_t *ret_code, const char **ret_reason)
{
	for (size_t i = 0; i < js_pod_n_containers(p); i++) {
		struct js_pod_ctr_info c;
		js_pod_ctr_info(p, i, &c);
		if (c.sidecar)
			continue;
		if (c.has_term && c.term.exit_code != 0) {
			*ret_code = c.term.exit_code;
			*ret_reason = c.term.reason;
			return true;
		}
		if (restarted_after_failure(&c)) {
			*ret_code = c.last.exit_code;
			*ret_reason = c.last.reason;
			return true;
		}
	}
	return false;
}

/** A label of the pod's template as a number, or -1. */
static int32_t label_i32(const json_t *labels, const char *key)
{
	const char *v = js_json_str(labels, key);
	int64_t n;
	return v && js_parse_i64_in(v, strlen(v), 0, INT32_MAX, &n) == 0 ? (int32_t)n : -1;
}

void js__report_pod_record(struct js_local *l, const struct js_pod *p)
{
	struct js_pod_info in;
	js_pod_info(p, &in);
	const json_t *labels = js_json_path(in.tmpl, "metadata.labels");
	const char *rjob = js_json_str(labels, JS_LABEL_RJOB_NAME);
	struct js_timeline_pod row = {
		.name = in.name, .rjob = rjob ? rjob : "", .job = in.job_name ? in.job_name : "",
		.job_index = label_i32(labels, JS_LABEL_JOB_INDEX), .index = in.index,
		.attempt = label_i32(labels, JS_LABEL_RESTART_ATTEMPT), .created_ms = in.created_ms,
		.started_ms = in.started_ms, .deleted_ms = in.stopping ? in.deleted_ms : 0,
		.finished_ms = in.finished_ms, .end = pod_end(p, &in), .reason = "", .detail = "",
	};
	struct js_buf b;
	js_buf_init(&b, 4096);
	if (row.end == JS_TIMELINE_FAILED) {
		/* An evicted pod's reason is its eviction, whatever its
		 * containers exited with. */
		if (!deciding_exit(p, &row.exit_code, &row.reason))
			row.reason = "Failed";
		if (in.stop == JS_POD_STOP_EVICTED)
			row.reason = "Evicted";
		else if (in.stop == JS_POD_STOP_PROGRESS)
			row.reason = "ProgressDeadlineExceeded";
		exits_text(p, &b);
		row.detail = js_buf_str(&b);
	}
	js_timeline_add_pod(l->timeline, &row);
	js_buf_done(&b);
}

/** The Job's outcome as an event, once, when it is decided: at
 * FailureTarget or SuccessCriteriaMet, which the JobSet acts on, and not at
 * the Failed or Complete that follows once its pods are gone - so the Job's
 * event always comes before the JobSet's events it causes. */
void js__report_job_outcome(struct js_local *l, struct ljob *j)
{
	static const char *const failed[] = {"FailureTarget", "Failed"};
	static const char *const done[] = {"SuccessCriteriaMet", "Complete"};
	if (j->reported_finish)
		return;
	const json_t *c = NULL;
	bool fail = false;
	for (size_t i = 0; i < 2 && !c; i++) {
		if ((c = js_jobctl_condition(j->obj, failed[i])))
			fail = true;
		else
			c = js_jobctl_condition(j->obj, done[i]);
	}
	if (!c)
		return;
	j->reported_finish = true;
	const char *reason = js_json_str(c, "reason"), *msg = js_json_str(c, "message");
	js__report_event(l, fail ? "Warning" : "Normal", reason ? reason : (fail ? "Failed" : "Completed"), "job", j->name, "%s",
	      msg ? msg : "");
}

/** "Starting", "Running", "Stopping", "Completed", "Failed" (static). */
const char *js__report_run_state(const struct js_local *l)
{
	return l->interrupts ? "Stopping"
	       : js_jobset_condition_true(l->js, "Completed") ? "Completed"
	       : js_jobset_condition_true(l->js, "Failed")    ? "Failed"
	       : l->n_jobs ? "Running"
			   : "Starting";
}

/** Write `doc` to <run_dir>/<name>, atomically. */
static int write_doc(const struct js_local *l, const char *name, const json_t *doc, size_t flags)
{
	char *text = json_dumps(doc, flags | JSON_SORT_KEYS);
	char *path = js_buf_format("%s/%s", l->run_dir, name);
	int r = text ? js_file_write_atomic(path, text, strlen(text)) : -ENOMEM;
	free(path);
	free(text);
	return r;
}

/** The run's picture (html.h) from its record, completed with the pods
 * still held and the phase numbers the summary prints. */
static int write_picture(struct js_local *l, const char *final)
{
	for (size_t i = 0; i < l->n_jobs; i++) {
		for (size_t k = 0; k < l->jobs[i].n_pods; k++)
			js__report_pod_record(l, l->jobs[i].pods[k]);
	}
	struct js_local_phases ph;
	js_local_phases(l, &ph);
	js_timeline_end(l->timeline, js__local_wall_ms(), final, l->js->status.restarts, &ph);
	struct js_buf b;
	js_buf_init(&b, 0);
	int r = js_html_report(l->timeline, &b);
	char *path = js_buf_format("%s/report.html", l->run_dir);
	if (r == 0)
		r = js_file_write_atomic(path, js_buf_str(&b), b.len);
	free(path);
	js_buf_done(&b);
	return r;
}

/** jobset.json, and jobs.json: a v1 List of every Job, then every pod;
 * report.html. */
int js__report_results(struct js_local *l, const char *final)
{
	json_t *items = json_deep_copy(l->history);
	for (size_t i = 0; i < l->n_jobs; i++)
		json_array_append(items, l->jobs[i].obj);
	json_array_extend(items, l->pod_history);
	for (size_t i = 0; i < l->n_jobs; i++) {
		for (size_t k = 0; k < l->jobs[i].n_pods; k++)
			json_array_append_new(items, js_podjson_pod(l->jobs[i].pods[k], true));
	}
	json_decref(l->results);
	l->results = json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "List", "items", items);
	json_t *js = js_codec_encode_jobset(l->js);
	/* Not part of the JobSet API: the run's phase and goodput summary
	 * (docs/local.md), beside the object. */
	struct js_local_phases ph;
	js_local_phases(l, &ph);
	json_object_set_new(js, "phaseSummary", js_local_phases_json(&ph));
	int r = write_doc(l, "jobset.json", js, JSON_INDENT(2));
	int r2 = write_doc(l, "jobs.json", l->results, JSON_INDENT(2));
	json_decref(js);
	int r3 = write_picture(l, final);
	return r < 0 ? r : r2 < 0 ? r2 : r3;
}

json_t *js_local_phases_json(const struct js_local_phases *p)
{
	json_t *readies = json_array();
	size_t n = p->n_readies < JS_LOCAL_MAX_READIES ? p->n_readies : JS_LOCAL_MAX_READIES;
	for (size_t i = 0; i < n; i++)
		json_array_append_new(readies, json_pack("{s:s, s:f}", "trigger",
							 js_phase_trigger_name(p->readies[i].trigger), "seconds",
							 p->readies[i].seconds));
	const double *s = p->sum.seconds;
	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:o}", "pendingSeconds", s[JS_PHASE_PENDING],
			 "runningSeconds", s[JS_PHASE_RUNNING], "restartingSeconds", s[JS_PHASE_RESTARTING],
			 "suspendedSeconds", s[JS_PHASE_SUSPENDED], "wallSeconds", p->sum.wall_seconds, "goodput",
			 p->sum.goodput, "restarts", (json_int_t)p->sum.restarts, "timeToAllReady", readies);
}

/**
 * The live state file (local.h): written when something changed and at
 * least JS_LOCAL_STATE_INTERVAL_MS after the last write, or at once when
 * `final` is set (`state` then names how the run ended).
 */
void js__report_state(struct js_local *l, int64_t t, const char *final)
{
	if (!final && (!l->state_dirty || (l->state_ms >= 0 && t - l->state_ms < JS_LOCAL_STATE_INTERVAL_MS)))
		return;
	json_t *pods = json_array();
	size_t i;
	json_t *p;
	json_array_foreach(l->pod_history, i, p)
	{
		json_t *lean = json_copy(p);
		json_object_del(lean, "spec");
		json_array_append_new(pods, lean);
	}
	for (i = 0; i < l->n_jobs; i++) {
		for (size_t k = 0; k < l->jobs[i].n_pods; k++)
			json_array_append_new(pods, js_podjson_pod(l->jobs[i].pods[k], false));
	}
	char started[21], updated[21];
	js_time_format_rfc3339(l->start_wall_ms / 1000, started);
	js_time_format_rfc3339(js__local_wall_ms() / 1000, updated);
	json_t *js = js_codec_encode_jobset(l->js);
	json_t *status = json_object_get(js, "status");
	json_t *doc = json_pack("{s:{s:i, s:s, s:b, s:s, s:s, s:s, s:s}, s:{s:s, s:s, s:s, s:o}, s:o}", "runner", "pid",
				(json_int_t)getpid(), "state", final ? final : js__report_run_state(l), "final", final != NULL,
				"startedAt", started, "updatedAt", updated, "runDir", l->run_dir, "logDir", l->log_dir,
				"jobset", "name", js_jobset_name(l->js), "namespace", js_jobset_namespace(l->js), "uid",
				l->js->meta.uid ? l->js->meta.uid : "", "status", status ? json_incref(status) : json_object(), "pods",
				pods);
	json_decref(js);
	if (l->ctrt) {
		/* Where `jobset ps` and `down` find what a killed runner left. */
		json_object_set_new(json_object_get(doc, "runner"), "containers",
				    json_pack("{s:s, s:s}", "runtime", js_container_runtime_to_string(js_container_kind(l->ctrt)),
					      "network", js_container_network(l->ctrt)));
	}
	/* A failed write (a full disk) is tried again after the interval, not
	 * at once: the loop must not spin on it. */
	if (write_doc(l, "state.json", doc, JSON_COMPACT) == 0)
		l->state_dirty = false;
	l->state_ms = t;
	json_decref(doc);
}

