/*
 * watchdog.c - hang detection in `jobset run` (gate ProgressDeadline, ours;
 * docs/progress-deadline.md): what the kubelet side of the feature does on
 * this machine.
 *
 * A pod of a ReplicatedJob with a progress deadline (api/heartbeat.h) gets,
 * when it is made, a heartbeat directory of its own, RUN-DIR/progress/<pod>,
 * the deadline and startup allowance in effect as its annotations (as the
 * cluster's pods will carry them, for the agent sidecar to read), and
 * $JOBSET_PROGRESS_FILE in every container: the file on the host in process
 * mode, the directory bind-mounted at /run/jobset/progress in container
 * mode. The workload touches the file; nothing is read from inside it.
 *
 * Each turn that something changed, or once the earliest deadline is due,
 * the loop calls js__watchdog_step: every running pod with a deadline has
 * its file's mtime read (one stat) and judged by core/progress.h on the
 * wall clock (mtimes are wall-clock times). A pod over its deadline is
 * stopped as an eviction is (SIGTERM, grace, SIGKILL) with the condition
 * ProgressDeadlineExceeded, and fails: podFailurePolicy rules may match the
 * condition; otherwise it counts as a failed pod. The next check is exactly
 * when the first pod could be over its deadline, so the detection delay is
 * the loop's timer lateness (milliseconds), not a polling interval.
 */
#include "local/local_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/heartbeat.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/time.h"
#include "core/progress.h"

/* The volume name the heartbeat directory takes in container mode. */
#define WATCHDOG_VOLUME "jobset-progress"

/* The settings in effect for the ReplicatedJob of Job `job`. */
static bool settings_of(const struct js_local *l, const json_t *job, struct js_heartbeat *ret)
{
	if (!l->opts.gates.progress_deadline)
		return false;
	const char *rn = js_json_str(js_json_path(job, "metadata.labels"), JS_LABEL_RJOB_NAME);
	for (size_t i = 0; rn && i < l->js->spec.n_replicated_jobs; i++) {
		const char *name = l->js->spec.replicated_jobs[i].name;
		if (name && strcmp(name, rn) == 0)
			return js_heartbeat_of(l->js, i, ret) == 0 && ret->on;
	}
	return false;
}

static char *pod_dir(const struct js_local *l, const char *pod)
{
	return js_buf_format("%s/progress/%s", l->run_dir, pod);
}

/* Prepend {name, value} to the container's env, so that the workload's own
 * variables may refer to it as $(JOBSET_PROGRESS_FILE). */
static void add_env(json_t *ctr, const char *value)
{
	json_t *env = json_object_get(ctr, "env");
	if (!json_is_array(env)) {
		env = json_array();
		json_object_set_new(ctr, "env", env);
	}
	json_array_insert_new(env, 0, json_pack("{s:s,s:s}", "name", JS_HEARTBEAT_ENV, "value", value));
}

static void add_mount(json_t *ctr)
{
	json_t *m = json_object_get(ctr, "volumeMounts");
	if (!json_is_array(m)) {
		m = json_array();
		json_object_set_new(ctr, "volumeMounts", m);
	}
	json_array_append_new(m, json_pack("{s:s,s:s}", "name", WATCHDOG_VOLUME, "mountPath", JS_HEARTBEAT_MOUNT));
}

int js__watchdog_prepare(struct js_local *l, const json_t *job, const char *pod, json_t *tmpl)
{
	struct js_heartbeat h;
	if (!settings_of(l, job, &h))
		return 0;
	char *dir = pod_dir(l, pod);
	int r = js__local_mkdir_p(dir);
	/* Any user a container runs as may beat, as in an emptyDir. */
	if (r == 0 && chmod(dir, 0777) < 0)
		r = -errno;
	if (r < 0) {
		free(dir);
		return r;
	}
	json_t *ann = js_json_path_make(tmpl, "metadata.annotations");
	char buf[16];
	snprintf(buf, sizeof(buf), "%d", h.deadline_s);
	json_object_set_new(ann, JS_ANN_PROGRESS_DEADLINE, json_string(buf));
	snprintf(buf, sizeof(buf), "%d", h.startup_s);
	json_object_set_new(ann, JS_ANN_PROGRESS_STARTUP, json_string(buf));
	bool ctr_mode = l->ctrt != NULL;
	char *file = ctr_mode ? js_xstrdup(JS_HEARTBEAT_MOUNT "/" JS_HEARTBEAT_FILE)
			      : js_buf_format("%s/" JS_HEARTBEAT_FILE, dir);
	json_t *spec = js_json_path_make(tmpl, "spec");
	static const char *const lists[] = {"initContainers", "containers"};
	for (size_t k = 0; k < JS_ARRAY_SIZE(lists); k++) {
		size_t i;
		json_t *c;
		json_array_foreach(json_object_get(spec, lists[k]), i, c)
		{
			add_env(c, file);
			if (ctr_mode)
				add_mount(c);
		}
	}
	if (ctr_mode) {
		json_t *vols = json_object_get(spec, "volumes");
		if (!json_is_array(vols)) {
			vols = json_array();
			json_object_set_new(spec, "volumes", vols);
		}
		json_array_append_new(vols, json_pack("{s:s,s:{s:s,s:s}}", "name", WATCHDOG_VOLUME, "hostPath", "path",
						      dir, "type", "Directory"));
	}
	free(file);
	free(dir);
	return 0;
}

/* When the pod's regular containers last (re)started, wall ms: the latest
 * start of a running one (sidecars and init containers do not count: they
 * are not the workload). False when none runs. */
static bool workload_start(const struct js_pod *p, int64_t *ret)
{
	bool any = false;
	for (size_t i = 0; i < js_pod_n_containers(p); i++) {
		struct js_pod_ctr_info c;
		js_pod_ctr_info(p, i, &c);
		if (c.init || c.state != JS_POD_CTR_RUNNING || c.started_ms <= 0)
			continue;
		if (!any || c.started_ms > *ret)
			*ret = c.started_ms;
		any = true;
	}
	return any;
}

/* "2026-12-02T15:40:01.250Z" of a wall-clock ms time (ms > 0): the
 * detection delay is in milliseconds, so the stamps are too. */
static void stamp(int64_t ms, char out[32])
{
	char s[21];
	js_time_format_rfc3339(ms / 1000, s);
	snprintf(out, 32, "%.19s.%03dZ", s, (int)(ms % 1000));
}

/* Stop pod `p`, over its deadline by `o`, and say so. Returns whether it
 * was stopped. */
static bool stalled(struct js_local *l, struct js_pod *p, const struct js_progress_in *in,
		    const struct js_progress_out *o, int64_t t)
{
	char last[32];
	stamp(o->last_ms, last);
	char *msg = o->first ? js_buf_format("no heartbeat since its containers started at %s: startup allowance "
					     "%lld s (" JS_ANN_PROGRESS_STARTUP ") exceeded by %lld ms",
					     last, (long long)in->startup_s, (long long)o->late_ms)
			     : js_buf_format("last heartbeat at %s, %.1f s ago: progress deadline %lld s ("
					     JS_ANN_PROGRESS_DEADLINE ") exceeded by %lld ms",
					     last, (double)js_sat_sub(in->now_ms, o->last_ms) / 1000.0,
					     (long long)in->deadline_s, (long long)o->late_ms);
	if (js_pod_stop_failed(p, &l->host, t, in->now_ms, JS_POD_STOP_PROGRESS, "ProgressDeadlineExceeded",
			       "ProgressDeadlineExceeded", msg) == 0) {
		js__report_event(l, "Warning", "ProgressDeadlineExceeded", "pod", js_pod_name(p),
				 "%s; stopping it within its grace period (the pod fails)", msg);
		free(msg);
		return true;
	}
	free(msg);
	return false;
}

/* Judge one pod at wall time `wall`; returns the wall time of its next
 * check, or -1 (no deadline, not running, or stopped now: *stopped). */
static int64_t check_pod(struct js_local *l, struct js_pod *p, int64_t wall, int64_t t, bool *stopped)
{
	struct js_pod_info pi;
	js_pod_info(p, &pi);
	if (js_pod_phase(p) != JS_JOBCTL_RUNNING || pi.stopping || js_pod_held(p))
		return -1;
	int32_t deadline, startup;
	if (js_heartbeat_parse(js_pod_annotation(p, JS_ANN_PROGRESS_DEADLINE), &deadline) < 0)
		return -1;
	if (js_heartbeat_parse(js_pod_annotation(p, JS_ANN_PROGRESS_STARTUP), &startup) < 0)
		startup = deadline;
	struct js_progress_in in = {.deadline_s = deadline, .startup_s = startup, .now_ms = wall};
	if (!workload_start(p, &in.start_ms))
		return -1;
	char *dir = pod_dir(l, pi.name);
	char *file = js_buf_format("%s/" JS_HEARTBEAT_FILE, dir);
	struct stat st;
	if (stat(file, &st) == 0) {
		in.has_beat = true;
		in.beat_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
	}
	free(file);
	free(dir);
	struct js_progress_out o;
	if (js_progress_check(&in, &o) < 0)
		return -1; /* the annotations were checked when the pod was made */
	if (o.verdict == JS_PROGRESS_OK)
		return o.next_ms;
	*stopped |= stalled(l, p, &in, &o, t);
	return -1;
}

bool js__watchdog_step(struct js_local *l, int64_t t, bool changed)
{
	if (!l->opts.gates.progress_deadline)
		return false;
	if (!changed && (l->watch_due_ms < 0 || t < l->watch_due_ms))
		return false;
	int64_t wall = js__local_wall_ms();
	int64_t next = -1;
	bool stopped = false;
	for (size_t i = 0; i < l->n_jobs; i++) {
		struct ljob *j = &l->jobs[i];
		for (size_t k = 0; !j->deleting && k < j->n_pods; k++) {
			int64_t w = check_pod(l, j->pods[k], wall, t, &stopped);
			if (w >= 0 && (next < 0 || w < next))
				next = w;
		}
	}
	/* Wall to monotonic: the wait is what is left on the wall clock. A
	 * clock stepped forward makes the check early (it then finds the pod
	 * still within its deadline and asks again); stepped back, late by as
	 * much, never wrong: the verdict is always made on the wall clock. */
	l->watch_due_ms = next < 0 ? -1 : js_sat_add(t, next > wall ? next - wall : 0);
	return stopped;
}
