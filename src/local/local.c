/*
 * local.c - the local runtime's loop (see local.h).
 *
 * State: the JobSet (as stored: spec, metadata, status), the Jobs the core
 * asked for (batch/v1 JSON objects, each with its pods), and whether the
 * headless Service exists. Every loop turn steps pods, syncs Jobs, and
 * reconciles when anything changed or a requeue is due; then it sleeps in
 * poll(2) until a child exits, a pipe has output, a signal arrives or the
 * earliest deadline passes.
 */
#include "local/local.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/render.h"
#include "api/template.h"
#include "base/file.h"
#include "base/buf.h"
#include "base/hmap.h"
#include "base/json.h"
#include "base/parse.h"
#include "base/time.h"
#include "core/exec.h"
#include "core/job.h"
#include "core/reconcile.h"
#include "local/hosts.h"
#include "local/jobctl.h"
#include "local/gpu.h"
#include "local/local_int.h"
#include "local/net.h"
#include "local/podjson.h"
#include "local/rundir.h"
#include "local/volumes.h"

/* Retry delay after a reconcile error (the controller backs off 5 ms to
 * 1000 s; locally a steady second is enough and keeps the log readable). */
#define LOCAL_RETRY_MS 1000
/* Grace period left to pods after a second interrupt: none. */
#define LOCAL_KILL_NOW_MS 0
/* The poll set starts with the signalfd, the control FIFO and the pod
 * networks' wake fd (local/net.h); the containers' output pipes follow. */
#define LOCAL_FIXED_FDS 3

/* Two clocks (issue 10): every deadline, delay and duration is measured on
 * CLOCK_MONOTONIC, which a clock step cannot move; wall time is only for
 * what users and the status see (timestamps, the core's `now`). */
static int64_t clock_ms(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

static int64_t wall_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

/* Wall-clock RFC 3339 timestamp of now. */
static void wall_stamp(char out[21])
{
	js_time_format_rfc3339(wall_ms() / 1000, out);
}

static uint64_t rnd(struct js_local *l)
{
	/* xorshift64*: pod name suffixes and uids need variety, not secrecy. */
	l->rng ^= l->rng >> 12;
	l->rng ^= l->rng << 25;
	l->rng ^= l->rng >> 27;
	return l->rng * 2685821657736338717ULL;
}

static char *new_uid(struct js_local *l)
{
	uint64_t a = rnd(l), b = rnd(l);
	return js_buf_format("%08x-%04x-4%03x-%04x-%012llx", (unsigned)(a >> 32), (unsigned)(a >> 16) & 0xffff,
		   (unsigned)a & 0xfff, (unsigned)((b >> 48) & 0x3fff) | 0x8000,
		   (unsigned long long)(b & 0xffffffffffffULL));
}

/* ---- setup ---- */

/* mkdir -p, every component 0755. */
static int mkdir_p(const char *path)
{
	return js_file_mkdir_p(path, 0755, 0755);
}

int js_local_new(const struct js_jobset *js, const struct js_local_opts *opts, struct js_local **ret_local)
{
	struct js_local *l = js_xcalloc(1, sizeof(*l));
	l->opts = *opts;
	l->js = js_jobset_copy(js);
	/* Absolute: paths under it are handed to containers and runtimes. */
	char cwd[4096];
	l->run_dir = opts->run_dir[0] == '/' || !getcwd(cwd, sizeof(cwd)) ? js_xstrdup(opts->run_dir)
								       : js_buf_format("%s/%s", cwd, opts->run_dir);
	l->log_dir = js_buf_format("%s/logs", l->run_dir);
	l->hosts_path = js_buf_format("%s/hosts", l->run_dir);
	l->death_rd = l->death_wr = l->sig_fd = l->events_fd = -1;
	l->lock_fd = l->ctl_rd = l->ctl_wr = -1;
	l->requeue_ms = -1;
	l->state_ms = -1;
	l->history = json_array();
	l->pod_history = json_array();
	l->state_path = js_buf_format("%s/state.json", opts->run_dir);
	js_buf_init(&l->ev_reasons, 4096);
	js_buf_init(&l->ctl_line, JS_RUNDIR_CONTROL_MAX);
	if (getrandom(&l->rng, sizeof(l->rng), 0) != sizeof(l->rng) || !l->rng)
		l->rng = (uint64_t)now_ms() | 1;
	/* The lock and the control FIFO first: from here on `jobset down` and
	 * `jobset ps` see this run (commands wait in the FIFO until the loop
	 * reads them). */
	int r = js_rundir_lock(opts->run_dir, &l->lock_fd);
	if (r >= 0)
		r = js_rundir_control_open(opts->run_dir, &l->ctl_rd, &l->ctl_wr);
	if (r >= 0)
		r = mkdir_p(l->log_dir);
	if (r >= 0 && opts->workdir != JS_LOCAL_WORKDIR_CWD) {
		char *w = js_buf_format("%s/work", opts->run_dir);
		r = mkdir_p(w);
		if (opts->workdir == JS_LOCAL_WORKDIR_RUN)
			l->workdir = w;
		else
			free(w);
	}
	if (r < 0) {
		(void)js_local_free(l);
		return r;
	}
	char *ev = js_buf_format("%s/events.log", l->run_dir);
	l->events_fd = open(ev, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	free(ev);
	if (!l->js->meta.uid)
		l->js->meta.uid = new_uid(l);
	if (!l->js->meta.namespace_)
		l->js->meta.namespace_ = js_xstrdup("default");
	l->start_ms = now_ms();
	l->start_wall_ms = wall_ms();
	if (!l->js->meta.creation_timestamp) {
		char ts[21];
		wall_stamp(ts);
		l->js->meta.creation_timestamp = js_xstrdup(ts);
	}
	/* The run creates the JobSet now: the accounting starts here, on the
	 * monotonic clock (so the status's wall-clock times are not used). */
	struct js_phase_obs obs;
	js_phase_observe(l->js, &obs);
	obs.since_ms = obs.wait_since_ms = -1;
	js_phase_acct_init(&l->phases, &obs, l->start_ms);
	l->end_ms = -1;
	const char *path = getenv("PATH");
	l->path_env = js_xstrdup(path ? path : "/usr/local/bin:/usr/bin:/bin");
	l->home_env = getenv("HOME") ? js_xstrdup(getenv("HOME")) : NULL;
	char hn[256] = "localhost";
	if (gethostname(hn, sizeof(hn) - 1) < 0)
		snprintf(hn, sizeof(hn), "localhost");
	l->node_name = js_xstrdup(hn);
	l->state_dirty = true;
	js__report_state(l, now_ms(), NULL);
	*ret_local = l;
	return 0;
}

static void ljob_free_pods(struct js_local *l, struct ljob *j)
{
	for (size_t i = 0; i < j->n_pods; i++) {
		js_gpu_put(l->opts.gpus, js_pod_id(j->pods[i]));
		js_pod_free(j->pods[i]);
	}
	free(j->pods);
	j->pods = NULL;
	j->n_pods = 0;
}

static int run_loop(struct js_local *l, enum js_local_result *ret_result);

int js_local_run(struct js_local *l, enum js_local_result *ret_result)
{
	/* Lifecycle contract (issue 10): a callback of this run (on_event,
	 * on_view, on_line) must not start it again or free it. */
	if (l->running)
		return -EBUSY;
	l->running = true;
	int r = run_loop(l, ret_result);
	l->running = false;
	return r;
}

int js_local_free(struct js_local *l)
{
	if (!l)
		return 0;
	if (l->running)
		return -EBUSY; /* inside js_local_run: its loop still uses all of it */
	for (size_t i = 0; i < l->n_jobs; i++) {
		ljob_free_pods(l, &l->jobs[i]);
		js_job_unref(l->jobs[i].rec);
		json_decref(l->jobs[i].obj);
		free(l->jobs[i].name);
	}
	free(l->jobs);
	for (size_t i = 0; i < l->n_pvcs; i++)
		free(l->pvcs[i]);
	free(l->pvcs);
	free(l->scratch_dir);
	l->ctrt = js_container_free(l->ctrt); /* after the pods: removes what is left */
	l->net = js_net_free(l->net); /* after the pods: they hold its namespaces */
	json_decref(l->history);
	json_decref(l->pod_history);
	json_decref(l->results);
	free(l->workdir);
	free(l->state_path);
	free(l->ev_message);
	js_buf_done(&l->ev_reasons);
	js_buf_done(&l->ctl_line);
	if (l->ctl_rd >= 0)
		close(l->ctl_rd);
	if (l->ctl_wr >= 0)
		close(l->ctl_wr);
	if (l->lock_fd >= 0)
		close(l->lock_fd);
	js_jobset_free(l->js);
	free(l->run_dir);
	free(l->log_dir);
	free(l->hosts_path);
	free(l->path_env);
	free(l->home_env);
	free(l->node_name);
	if (l->events_fd >= 0)
		close(l->events_fd);
	free(l);
	return 0;
}

/* ---- pods of a Job ---- */

/** Ordinal of a pod among every Indexed pod of the JobSet, from the Job's
 * labels: stable across restarts, so a hostname keeps its address. */
static bool pod_ordinal(const struct js_local *l, const json_t *job, int32_t index, uint32_t *ret)
{
	const json_t *labels = js_json_path(job, "metadata.labels");
	const char *rname = js_json_str(labels, JS_LABEL_RJOB_NAME);
	const char *jidx = js_json_str(labels, JS_LABEL_JOB_INDEX);
	int64_t job_index;
	if (!rname || !jidx || index < 0 || js_parse_i64_in(jidx, strlen(jidx), 0, INT32_MAX, &job_index) < 0)
		return false;
	uint64_t base = 0;
	for (size_t i = 0; i < l->js->spec.n_replicated_jobs; i++) {
		const struct js_rjob *r = &l->js->spec.replicated_jobs[i];
		int32_t comp = 1;
		if (!js_tmpl_i32(r, "completions", &comp) || comp < 1)
			comp = 1;
		int32_t reps = r->has_replicas ? r->replicas : 1;
		if (strcmp(r->name, rname) == 0) {
			*ret = (uint32_t)(base + (uint64_t)job_index * (uint64_t)comp + (uint64_t)index);
			return true;
		}
		base += (uint64_t)reps * (uint64_t)comp;
	}
	return false;
}

/* A pod's own events (a container restart), from local/pod.h. */
static void on_pod_note(void *ctx, const struct js_pod *pod, const char *type, const char *reason,
			const char *message)
{
	js__report_event(ctx, type, reason, "pod", js_pod_name(pod), "%s", message);
}

/** The pod's default working directory (docs/local.md): the run's shared
 * work/, a directory per hostname under it (kept across restarts, as the
 * hostname is), or NULL for the runner's own. Caller frees. */
static char *pod_workdir(const struct js_local *l, const char *hostname)
{
	if (l->opts.workdir == JS_LOCAL_WORKDIR_CWD)
		return NULL;
	if (l->opts.workdir == JS_LOCAL_WORKDIR_RUN)
		return js_xstrdup(l->workdir);
	char *d = js_buf_format("%s/work/%s", l->run_dir, hostname);
	if (mkdir(d, 0755) < 0 && errno != EEXIST) {
		/* the container's chdir reports it as a start error */
	}
	return d;
}

/** Create a pod of Job `j`. Returns false when its template cannot be run
 * (a Warning FailedCreate event says why). */
/* The GPUs a new pod of Job `j` asks for (local/gpu.h), taken for pod
 * `id`. False when not enough are free now: the devices are held by pods
 * still being stopped, which give them back when they are gone (then the
 * Job is synced again in the same turn). Said once per wait. */
static bool take_gpus(struct js_local *l, struct ljob *j, int32_t index, uint64_t id, const char *const **ret)
{
	int64_t n = 0;
	char *err = NULL;
	if (js_gpu_pod_count(js_json_path(j->obj, "spec.template.spec"), &n, &err) < 0) {
		free(err); /* preflight refused such templates */
		n = 0;
	}
	if (js_gpu_take(l->opts.gpus, id, n, ret) == 0) {
		l->gpu_wait_reported = false;
		return true;
	}
	if (!l->gpu_wait_reported)
		js__report_event(l, "Warning", "FailedScheduling", "job", j->name,
				 "pod %d needs %lld GPUs (%s) and %zu are free; waiting for pods being stopped to give "
				 "theirs back",
				 index, (long long)n, JS_GPU_RESOURCE, js_gpu_free_count(l->opts.gpus));
	l->gpu_wait_reported = true;
	return false;
}

/** The JobSet restarts in place here: gate and strategy (KEP-467). */
static bool in_place(const struct js_local *l)
{
	const struct js_failure_policy *fp = l->js->has_spec ? l->js->spec.failure_policy : NULL;
	return l->opts.gates.in_place_restart && fp && fp->has_restart_strategy &&
	       fp->restart_strategy == JS_RESTART_STRATEGY_IN_PLACE;
}

static bool start_pod(struct js_local *l, struct ljob *j, int32_t index, int64_t t)
{
	const char *const *gpus = NULL;
	uint64_t id = l->next_pod_id + 1;
	if (!take_gpus(l, j, index, id, &gpus))
		return false;
	static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
	char suffix[6];
	for (int i = 0; i < 5; i++)
		suffix[i] = alphabet[rnd(l) % (sizeof(alphabet) - 1)];
	suffix[5] = '\0';
	char *name = index >= 0 ? js_buf_format("%s-%d-%s", j->name, index, suffix) : js_buf_format("%s-%s", j->name, suffix);
	char *hostname = index >= 0 ? js_buf_format("%s-%d", j->name, index) : js_xstrdup(name);
	uint32_t ord;
	struct js_net_pod *net = NULL;
	int nr = js_net_pod_new(l->net, pod_ordinal(l, j->obj, index, &ord) ? (int64_t)ord : -1, &net);
	if (nr < 0) {
		js__report_event(l, "Warning", "FailedCreate", "job", j->name, "no network for pod %s: %s", name, js_strerror(nr));
		js_gpu_put(l->opts.gpus, id);
		free(hostname);
		free(name);
		return false;
	}
	const char *ip = js_net_pod_ip(net);

	/* The Job controller's additions to the pod template (SPEC §6.5). */
	json_t *tmpl = json_deep_copy(js_json_path(j->obj, "spec.template"));
	if (!json_is_object(tmpl)) {
		json_decref(tmpl);
		tmpl = json_object();
	}
	json_t *labels = js_json_path_make(tmpl, "metadata.labels");
	json_t *ann = js_json_path_make(tmpl, "metadata.annotations");
	const char *job_uid = js_json_str(json_object_get(j->obj, "metadata"), "uid");
	json_object_set_new(labels, "batch.kubernetes.io/job-name", json_string(j->name));
	json_object_set_new(labels, "job-name", json_string(j->name));
	json_object_set_new(labels, "batch.kubernetes.io/controller-uid", json_string(job_uid ? job_uid : ""));
	json_object_set_new(labels, "controller-uid", json_string(job_uid ? job_uid : ""));
	if (index >= 0) {
		char idx[16];
		snprintf(idx, sizeof(idx), "%d", index);
		json_object_set_new(labels, JS_ANN_JOB_COMPLETION_INDEX, json_string(idx));
		json_object_set_new(ann, JS_ANN_JOB_COMPLETION_INDEX, json_string(idx));
	}
	const char *subdomain = js_json_str(js_json_path(tmpl, "spec"), "subdomain");
	char *own_hosts = NULL;
	const char *hosts = NULL;
	/* Every pod its own file, as the kubelet writes one: its own bare
	 * hostname resolves, other pods' only in the Service's forms. */
	if (l->host.mode != JS_SANDBOX_NONE) {
		own_hosts = js_buf_format("%s/hosts.d/%s", l->run_dir, name);
		if (js_hosts_write_own(own_hosts, ip, hostname, subdomain, js_jobset_namespace(l->js),
				       l->service_exists ? l->hosts_path : NULL) == 0)
			hosts = own_hosts;
	}
	char *uid = new_uid(l);
	struct js_pod_init init = {
		.id = ++l->next_pod_id, .name = name, .namespace_ = js_jobset_namespace(l->js), .uid = uid,
		.job_name = j->name, .index = index, .hostname = hostname, .subdomain = subdomain, .ip = ip,
		.hosts_file = hosts, .net = net, .tmpl = tmpl, .gpus = gpus, .in_place = in_place(l),
	};
	char *workdir = pod_workdir(l, hostname);
	init.job_uid = job_uid;
	init.workdir = workdir;
	struct js_pod *pod = NULL;
	char *err = NULL;
	bool created = false;
	if (js_pod_new(&init, &l->host, &pod, &err) < 0) {
		js__report_event(l, "Warning", "FailedCreate", "job", j->name, "%s", err);
		js_gpu_put(l->opts.gpus, id);
		free(err);
	} else {
		j->pods = js_xrealloc(j->pods, (j->n_pods + 1) * sizeof(*j->pods));
		j->pods[j->n_pods++] = pod;
		js__report_event(l, "Normal", "Started", "pod", name, "hostname %s, IP %s", hostname, ip);
		/* Step until the pod settles: a container that cannot start fails the
		 * pod now, with no child exit or timer left to wake the loop. The
		 * bound is the pod's few phase transitions. The caller syncs the Job
		 * again, since its sync has not seen this pod. */
		enum js_jobctl_phase before = js_pod_phase(pod);
		for (int k = 0; k < 8 && js_pod_step(pod, &l->host, t); k++)
			l->dirty = true;
		js__report_pod_finished(l, pod, before); /* a start error says why */
		created = true;
	}
	free(uid);
	free(workdir);
	free(own_hosts);
	json_decref(tmpl);
	free(hostname);
	free(name);
	return created;
}

/** `j->obj` changed: its record is decoded again before the next
 * reconcile (and only then). */
static void stale(struct ljob *j)
{
	js_job_unref(j->rec);
	j->rec = NULL;
}

/** Run the Job controller over `j` and its pods as they are now; the plan
 * is the caller's to act on (or not). `gone_if_deleted` leaves out the pods
 * the runner deleted, as pods deleted with their JobSet are gone on a
 * cluster (whatever their exit). Returns what js_jobctl_sync returns. */
static int jobctl_pass(struct js_local *l, struct ljob *j, int64_t t, bool gone_if_deleted,
		       struct js_jobctl_plan *ret_plan)
{
	size_t n = 0, n_exits = 0;
	for (size_t i = 0; i < j->n_pods; i++)
		n_exits += js_pod_n_containers(j->pods[i]);
	struct js_jobctl_pod *obs = js_xcalloc(j->n_pods + 1, sizeof(*obs));
	struct js_jobctl_exit *exits = js_xcalloc(n_exits + 1, sizeof(*exits));
	size_t off = 0;
	for (size_t i = 0; i < j->n_pods; i++) {
		struct js_pod_info in;
		js_pod_info(j->pods[i], &in);
		if (gone_if_deleted && in.stop == JS_POD_STOP_RUNNER)
			continue;
		js_pod_observe(j->pods[i], exits + off, &obs[n++]);
		off += js_pod_n_containers(j->pods[i]);
	}
	struct js_jobctl_opts o = {.backoff_base_ms = l->opts.backoff_base_ms,
				   .backoff_max_ms = l->opts.backoff_base_ms * 36};
	struct js_jobctl_now now = {.mono_ms = t, .wall_ms = wall_ms()};
	int r = js_jobctl_sync(j->obj, obs, n, &now, &o, ret_plan);
	free(obs);
	free(exits);
	return r;
}

/** Whether the Job's failure is decided: FailureTarget or Failed True. */
static bool job_failed(const struct ljob *j)
{
	return js_jobctl_condition(j->obj, "FailureTarget") || js_jobctl_condition(j->obj, "Failed");
}

/** Sync one Job with its pods. Returns true when its status changed. */
static bool sync_job(struct js_local *l, struct ljob *j, int64_t t)
{
	if (j->deleting)
		return false;
	struct js_jobctl_plan plan;
	bool changed = false;
	int r = jobctl_pass(l, j, t, false, &plan);
	if (r < 0) {
		/* Validation keeps such Jobs out, so this is a bug worth seeing; the
		 * Job gets no pods, and the loop's stall check ends the run. */
		if (!j->reported_sync_error)
			js__report_event(l, "Warning", "FailedSync", "job", j->name,
			      "the local Job controller cannot run this Job: %s (an Indexed Job needs completions in "
			      "0..100000 and parallelism >= 0)",
			      js_strerror(r));
		j->reported_sync_error = true;
		j->wake_ms = -1;
		return false;
	}
	j->reported_sync_error = false;
	/* Pods the Job controller deletes because their Job failed are told
	 * apart from those of a suspend or a completion: one that failed
	 * before it was deleted (an OnFailure pod past backoffLimit) is
	 * reported as failed, with its exit codes. */
	enum js_pod_stop why = job_failed(j) ? JS_POD_STOP_JOB_FAILED : JS_POD_STOP_JOB_CONTROLLER;
	for (size_t i = 0; i < plan.n_delete; i++) {
		for (size_t k = 0; k < j->n_pods; k++) {
			if (js_pod_id(j->pods[k]) == plan.delete_ids[i])
				js_pod_delete(j->pods[k], &l->host, t, why);
		}
	}
	size_t created = 0;
	for (size_t i = 0; i < plan.n_create; i++)
		created += start_pod(l, j, plan.create[i], t);
	changed = plan.status_changed || plan.n_create || plan.n_delete;
	if (plan.status_changed)
		stale(j);
	/* Pods created or deleted just now are state this sync has not seen
	 * (a pod whose container could not start is already Failed, a deleted
	 * pod without processes is gone); nothing else may wake the loop for
	 * them, so the Job is synced again at once. A pod that could not be
	 * created changes nothing: syncing again would only fail again, in a
	 * tight loop (the stall check ends such a run). */
	if (created || plan.n_delete)
		l->resync = true;
	j->wake_ms = plan.wake_ms;
	js__report_job_outcome(l, j);
	js_jobctl_plan_done(&plan);
	return changed;
}

static struct ljob *find_job(struct js_local *l, const char *name)
{
	for (size_t i = 0; i < l->n_jobs; i++) {
		if (strcmp(l->jobs[i].name, name) == 0)
			return &l->jobs[i];
	}
	return NULL;
}

static bool job_gone(const struct ljob *j)
{
	for (size_t i = 0; i < j->n_pods; i++) {
		if (!js_pod_gone(j->pods[i]))
			return false;
	}
	return true;
}

/** Drop Jobs being deleted whose processes are all gone. */
static bool collect_jobs(struct js_local *l)
{
	bool changed = false;
	for (size_t i = 0; i < l->n_jobs;) {
		struct ljob *j = &l->jobs[i];
		if (!j->deleting || !job_gone(j)) {
			i++;
			continue;
		}
		js__report_event(l, "Normal", "Deleted", "job", j->name, "%s", "");
		json_array_append_new(l->history, j->obj);
		for (size_t k = 0; k < j->n_pods; k++)
			json_array_append_new(l->pod_history, js_podjson_pod(j->pods[k], true));
		js_job_unref(j->rec);
		ljob_free_pods(l, j);
		free(j->name);
		memmove(j, j + 1, (l->n_jobs - i - 1) * sizeof(*j));
		l->n_jobs--;
		changed = true;
	}
	return changed;
}

/* ---- applying the core's plan ---- */

static void delete_job(struct js_local *l, struct ljob *j, int64_t t)
{
	if (j->deleting)
		return;
	j->deleting = true;
	char ts[21];
	wall_stamp(ts);
	json_object_set_new(js_json_path_make(j->obj, "metadata"), "deletionTimestamp", json_string(ts));
	stale(j);
	for (size_t i = 0; i < j->n_pods; i++)
		js_pod_delete(j->pods[i], &l->host, t, JS_POD_STOP_JOB_DELETED);
}

/* ---- applying the core's plan: this runtime as a body of core/exec.h ---- */

static int local_create_jobs(void *self, const struct js_action *acts, size_t n, const struct js_exec_run *run)
{
	struct js_local *l = self;
	int first = 0;
	for (size_t i = 0; i < n; i++) {
		const char *name = acts[i].name;
		if (find_job(l, name)) {
			js__report_event(l, "Warning", "JobCreationFailed", "jobset", js_jobset_name(l->js),
			      "job \"%s\" creation failed with error: jobs.batch \"%s\" already exists", name, name);
			first = first ? first : JS_EEXISTS;
			continue;
		}
		json_t *obj = js_exec_render(run, i);
		if (!obj)
			return JS_EINVALID;
		json_t *meta = js_json_path_make(obj, "metadata");
		char *uid = new_uid(l);
		char ts[21];
		wall_stamp(ts);
		json_object_set_new(meta, "uid", json_string(uid));
		json_object_set_new(meta, "creationTimestamp", json_string(ts));
		free(uid);
		json_object_set_new(obj, "status", json_object());
		l->jobs = js_xrealloc(l->jobs, (l->n_jobs + 1) * sizeof(*l->jobs));
		l->jobs[l->n_jobs++] = (struct ljob){.obj = obj, .name = js_xstrdup(name), .wake_ms = -1};
		l->dirty = true;
		js__report_event(l, "Normal", "Created", "job", name, "%s", "");
	}
	return first;
}

static int local_delete_jobs(void *self, const struct js_action *acts, size_t n)
{
	struct js_local *l = self;
	for (size_t i = 0; i < n; i++) {
		struct ljob *j = find_job(l, acts[i].name);
		if (j)
			delete_job(l, j, l->turn_ms);
	}
	l->dirty = true;
	return 0;
}

static int local_patch_job(void *self, const struct js_action *a)
{
	struct js_local *l = self;
	struct ljob *j = find_job(l, a->name);
	if (!j)
		return JS_ENOTFOUND;
	/* Spec and status alike: this runtime is its own API server. */
	js_json_merge_patch(j->obj, a->object);
	stale(j);
	l->dirty = true;
	return 0;
}

static int local_apply_other(void *self, const struct js_action *a)
{
	struct js_local *l = self;
	if (a->kind == JS_ACTION_CREATE_SERVICE) {
		/* Degraded: no pod has a file of its own; they look themselves
		 * up in this one ($JOBSET_HOSTS_FILE), so it keeps bare names. */
		int r = js_hosts_write_service(l->hosts_path, l->js, js_net_ipam(l->net), l->host.mode == JS_SANDBOX_NONE);
		if (r < 0) {
			js__report_event(l, "Warning", "HeadlessServiceCreationFailed", "jobset", js_jobset_name(l->js), "%s: %s",
			      l->hosts_path, js_strerror(r));
			return r;
		}
		l->service_exists = true;
		js__report_event(l, "Normal", "Created", "service", a->name, "hosts entries in %s", l->hosts_path);
	} else if (a->kind == JS_ACTION_CREATE_PVC) {
		/* A claim is a directory of the run. It must be recorded as
		 * existing: the core asks for every claim it does not see, and
		 * an unrecorded one was asked for again on every pass. */
		char *dir = js_buf_format("%s/volumes/%s", l->run_dir, a->name);
		int r = mkdir_p(dir);
		if (r < 0) {
			js__report_event(l, "Warning", "PVCCreationFailed", "jobset", js_jobset_name(l->js),
			      "persistentvolumeclaim %s: %s: %s", a->name, dir, js_strerror(r));
			free(dir);
			return r;
		}
		l->pvcs = js_xrealloc(l->pvcs, (l->n_pvcs + 1) * sizeof(*l->pvcs));
		l->pvcs[l->n_pvcs++] = js_xstrdup(a->name);
		js__report_event(l, "Normal", "Created", "persistentvolumeclaim", a->name, "directory %s", dir);
		free(dir);
	} else if (a->kind != JS_ACTION_DELETE_JOBSET) {
		return JS_EUNSUPPORTED; /* KEP-969 objects: `jobset run` refuses the gate */
	}
	/* DeleteJobSet (TTL after finished): the run is over anyway. */
	l->dirty = true;
	return 0;
}

/* The status is stored by taking the plan's JobSet once the whole plan was
 * applied (reconcile below); nothing can fail here. */
static int local_write_status(void *self, const struct js_plan *plan)
{
	(void)self;
	(void)plan;
	return 0;
}

/* Events of one plan with the same type and message are one event (the
 * core emits a condition's event and an action's event with one message:
 * "DefaultFailurePolicy" and "RestartJobSetFailurePolicyAction"; upstream
 * does the same), so each is held until the next differs or the plan ends. */
static void flush_jobset_event(struct js_local *l)
{
	if (!l->ev_reasons.len)
		return;
	js__report_event(l, l->ev_type, js_buf_str(&l->ev_reasons), "jobset", js_jobset_name(l->js), "%s", l->ev_message);
	js_buf_clear(&l->ev_reasons);
	free(l->ev_message);
	l->ev_message = NULL;
}

static void local_emit_event(void *self, const struct js_event *e)
{
	struct js_local *l = self;
	if (l->ev_reasons.len && (strcmp(l->ev_type, e->type) != 0 || strcmp(l->ev_message, e->message) != 0))
		flush_jobset_event(l);
	if (!l->ev_reasons.len) {
		l->ev_type = e->type; /* static */
		l->ev_message = js_xstrdup(e->message);
	}
	if (js_buf_printf(&l->ev_reasons, "%s%s", l->ev_reasons.len ? "," : "", e->reason) < 0) {
		/* a reason list past 4 KiB: the rest is dropped */
	}
}

static void local_requeue_after(void *self, int64_t seconds)
{
	struct js_local *l = self;
	l->requeue_ms = l->turn_ms + seconds * 1000;
}

static const struct js_exec_ops local_ops = {
	.create_jobs = local_create_jobs,
	.delete_jobs = local_delete_jobs,
	.patch_job = local_patch_job,
	.apply_other = local_apply_other,
	.write_status = local_write_status,
	.emit_event = local_emit_event,
	.requeue_after = local_requeue_after,
};

/* The record of Job `j`, decoded from its JSON only when that changed. */
static const struct js_obsjob *record(struct ljob *j)
{
	if (!j->rec)
		j->rec = js_job_from_json(j->obj, NULL);
#ifndef NDEBUG
	/* A record that missed a change of its Job would be a silent wrong
	 * decision; debug builds check every one against a fresh decode. */
	struct js_obsjob *fresh = js_job_from_json(j->obj, NULL);
	assert(js_job_same(j->rec, fresh));
	js_job_unref(fresh);
#endif
	return j->rec;
}

/* Hash of what a plan does: kinds and names of its actions, in order. */
static uint64_t plan_signature(const struct js_plan *plan)
{
	uint64_t h = JS_HASH_FNV_SEED;
	for (size_t i = 0; i < plan->n_actions; i++) {
		const struct js_action *a = &plan->actions[i];
		unsigned char kind = (unsigned char)a->kind;
		h = js_hash_fnv(h, &kind, 1);
		/* With its NUL, so that ("ab","c") and ("a","bc") differ. */
		h = js_hash_fnv(h, a->name ? a->name : "", a->name ? strlen(a->name) + 1 : 1);
	}
	return h;
}

/* The guard against applying the same plan forever (issue 11): a plan
 * whose actions were all carried out is never planned again unless the
 * world changed. Only a bug of this runtime - an action it reports done
 * but does not record, as CreatePVC once was - can repeat one with nothing
 * observed changing in between. A few repeats are tolerated (an action's
 * effect may show one turn late); past that the run ends, said as what it
 * is, instead of spinning. Returns true when the run was ended. */
#define LOCAL_MAX_SAME_PLANS 8
static bool repeated_plan(struct js_local *l, const struct js_plan *plan)
{
	uint64_t sig = plan_signature(plan);
	bool same = plan->n_actions > 0 && sig == l->plan_sig && !l->observed_change;
	l->plan_sig = sig;
	l->observed_change = false;
	l->same_plans = same ? l->same_plans + 1 : 0;
	if (l->same_plans < LOCAL_MAX_SAME_PLANS)
		return false;
	const struct js_action *a = &plan->actions[0];
	js__report_event(l, "Warning", "RuntimeBug", "jobset", js_jobset_name(l->js),
	      "the same %zu action(s) (first: %s %s) were planned %d times in a row with nothing observed changing "
	      "in between; this is a bug of the local runtime, not of the JobSet, so the run stops instead of "
	      "repeating them",
	      plan->n_actions, js_reconcile_action_kind_name(a->kind), a->name, l->same_plans + 1);
	l->stalled = true;
	return true;
}

/** One pass of the core over what is observed now. Returns what
 * js_reconcile_run returns. */
static int plan_now(struct js_local *l, struct js_plan **ret_plan, char **ret_err)
{
	const struct js_obsjob **obs = js_xcalloc(l->n_jobs + 1, sizeof(*obs));
	size_t n = 0;
	for (size_t i = 0; i < l->n_jobs; i++) {
		const struct js_obsjob *o = record(&l->jobs[i]);
		if (o)
			obs[n++] = o;
	}
	/* Pods only matter to the in-place restart step (gate InPlaceRestart):
	 * their failure and restart counts, and the attempt their agent wrote
	 * (in_place_agents). */
	size_t n_pods = 0;
	for (size_t i = 0; l->opts.gates.in_place_restart && i < l->n_jobs; i++)
		n_pods += l->jobs[i].deleting ? 0 : l->jobs[i].n_pods;
	struct js_obspod *pods = js_xcalloc(n_pods + 1, sizeof(*pods));
	size_t np = 0;
	for (size_t i = 0; n_pods && i < l->n_jobs; i++) {
		for (size_t k = 0; !l->jobs[i].deleting && k < l->jobs[i].n_pods; k++) {
			struct js_pod *p = l->jobs[i].pods[k];
			const struct js_inplace_agent *ag = js_pod_agent(p);
			pods[np++] = (struct js_obspod){.name = js_pod_name(p),
							.failed = js_pod_phase(p) == JS_JOBCTL_FAILED,
							.max_restart_count = js_pod_max_restarts(p),
							.in_place_attempt = ag && ag->has_attempt ? js_pod_annotation(p, JS_ANN_IN_PLACE_RESTART_ATTEMPT) : NULL};
		}
	}
	struct js_reconcile_input in = {
		.jobset = l->js, .jobs = obs, .n_jobs = n, .service_exists = l->service_exists, .pods = pods,
		.n_pods = np, .gates = l->opts.gates, .now = wall_ms() / 1000,
		.pvcs = (const char *const *)l->pvcs, .n_pvcs = l->n_pvcs,
	};
	int r = js_reconcile_run(&in, ret_plan, ret_err);
	free(obs);
	free(pods);
	return r;
}

/* Feed the phase the JobSet is in now to the accountant (core/phase.h),
 * as the controller does after each reconcile (ctrl/phases.c). */
static void account_phase(struct js_local *l, int64_t t)
{
	struct js_phase_obs obs;
	js_phase_observe(l->js, &obs);
	struct js_phase_ready r;
	if (js_phase_acct_step(&l->phases, obs.phase, t, &r)) {
		if (l->n_readies < JS_LOCAL_MAX_READIES)
			l->readies[l->n_readies] = r;
		l->n_readies++;
	}
}

static void reconcile(struct js_local *l, int64_t t)
{
	struct js_plan *plan = NULL;
	char *err = NULL;
	int r = plan_now(l, &plan, &err);
	l->dirty = false;
	if (r < 0) {
		js__report_event(l, "Warning", "ReconcileError", "jobset", js_jobset_name(l->js), "%s", err ? err : js_strerror(r));
		free(err);
		l->requeue_ms = t + LOCAL_RETRY_MS;
		return;
	}
	if (repeated_plan(l, plan)) {
		js_reconcile_plan_free(plan);
		return;
	}
	l->turn_ms = t;
	l->requeue_ms = -1;
	r = js_exec_apply(&local_ops, l, plan, NULL);
	flush_jobset_event(l);
	if (r < 0) {
		/* SPEC §11.2: stopped, nothing written; retry with backoff. */
		l->requeue_ms = t + LOCAL_RETRY_MS;
	} else if (plan->status_changed) {
		/* The plan's working copy, carrying the new status, becomes the
		 * stored JobSet: taken, not copied. */
		js_jobset_free(l->js);
		l->js = js_plan_take_jobset(plan);
		l->dirty = true;
	}
	if (r >= 0)
		account_phase(l, t);
	js_reconcile_plan_free(plan);
}

/* ---- in-place restart: the agents' part (docs/in-place-restart.md) ----
 *
 * Each pod of a JobSet that restarts in place has an agent here, as on a
 * cluster it has the in-place-restart-agent sidecar: the same decisions
 * (core/inplace.h) over the JobSet as the core last wrote it. Writing the
 * attempt is setting the pod's annotation (and the downward API's view of
 * it); exiting with the restart code is js_pod_restart_in_place; lifting
 * the barrier is js_pod_release. Returns true when anything changed (the
 * core must look again). */
static bool in_place_agents(struct js_local *l, int64_t t)
{
	if (!in_place(l))
		return false;
	struct js_inplace_view view = js_inplace_view_of(l->js);
	bool changed = false;
	for (size_t i = 0; i < l->n_jobs; i++) {
		for (size_t k = 0; !l->jobs[i].deleting && k < l->jobs[i].n_pods; k++) {
			struct js_pod *p = l->jobs[i].pods[k];
			struct js_inplace_agent *ag = js_pod_agent(p);
			struct js_pod_info pi;
			js_pod_info(p, &pi);
			if (!ag || js_pod_restarting(p) || pi.stop != JS_POD_STOP_NONE ||
			    js_pod_phase(p) >= JS_JOBCTL_SUCCEEDED)
				continue;
			struct js_inplace_step s;
			if (js_inplace_agent_step(&view, ag, &s) < 0)
				continue;
			if (s.patch) {
				char v[16];
				snprintf(v, sizeof(v), "%d", (int)s.patch_attempt);
				js_pod_set_annotation(p, JS_ANN_IN_PLACE_RESTART_ATTEMPT, v);
				ag->has_attempt = true;
				ag->attempt = s.patch_attempt;
				changed = true;
				if (js_inplace_agent_step(&view, ag, &s) < 0)
					continue;
			}
			if (s.exit) {
				js__report_event(l, "Normal", "InPlaceRestart", "pod", js_pod_name(p),
						 "attempt %d is outdated (previousInPlaceRestartAttempt %d): restarting the "
						 "pod's containers in place", (int)ag->attempt, (int)view.previous);
				js_pod_restart_in_place(p, &l->host, t);
				changed = true;
			} else if (s.lift) {
				js_pod_release(p);
				ag->barrier_active = false;
				changed = true;
				/* Start its containers now: a held pod has nothing
				 * running that would wake the loop. */
				for (int n = 0; n < 8 && js_pod_step(p, &l->host, t); n++)
					;
			}
		}
	}
	return changed;
}

/* ---- the loop ---- */

static bool terminal(const struct js_local *l)
{
	return js_jobset_condition_true(l->js, "Completed") || js_jobset_condition_true(l->js, "Failed");
}

static bool all_gone(const struct js_local *l)
{
	for (size_t i = 0; i < l->n_jobs; i++) {
		if (!job_gone(&l->jobs[i]))
			return false;
	}
	return true;
}

static void stop_all(struct js_local *l, int64_t t, int64_t grace_ms)
{
	for (size_t i = 0; i < l->n_jobs; i++) {
		for (size_t k = 0; k < l->jobs[i].n_pods; k++)
			js_pod_delete_within(l->jobs[i].pods[k], &l->host, t, grace_ms);
	}
}

static void reap(struct js_local *l, int64_t t)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		if (pid <= 0)
			return;
		bool found = false;
		for (size_t i = 0; i < l->n_jobs && !found; i++) {
			for (size_t k = 0; k < l->jobs[i].n_pods && !found; k++)
				found = js_pod_reap(l->jobs[i].pods[k], &l->host, pid, status, t);
		}
		l->dirty |= found;
	}
}

static void view(struct js_local *l, int64_t t, bool force)
{
	if (!l->opts.on_view)
		return;
	if (!force && l->opts.tick_ms > 0 && t - l->last_view_ms < l->opts.tick_ms / 4)
		return;
	l->last_view_ms = t;
	size_t nr = l->js->spec.n_replicated_jobs;
	struct js_local_rjob_view *rv = js_xcalloc(nr + 1, sizeof(*rv));
	for (size_t i = 0; i < nr; i++) {
		rv[i].name = l->js->spec.replicated_jobs[i].name;
		rv[i].replicas = l->js->spec.replicated_jobs[i].has_replicas ? l->js->spec.replicated_jobs[i].replicas : 1;
	}
	for (size_t i = 0; i < l->n_jobs; i++) {
		const struct ljob *j = &l->jobs[i];
		const char *rn = js_json_str(js_json_path(j->obj, "metadata.labels"), JS_LABEL_RJOB_NAME);
		int ri = rn ? js_jobset_find_rjob(l->js, rn) : -1;
		if (ri < 0)
			continue;
		struct js_local_rjob_view *v = &rv[ri];
		/* Pods still stopping, of a deleted Job (an older attempt) too:
		 * without them a restarting JobSet looks hung. */
		for (size_t k = 0; k < j->n_pods; k++) {
			struct js_pod_info in;
			js_pod_info(j->pods[k], &in);
			v->pods_terminating += in.stopping && !js_pod_gone(j->pods[k]) &&
					       js_pod_phase(j->pods[k]) <= JS_JOBCTL_RUNNING;
		}
		if (j->deleting)
			continue;
		if (js_jobctl_condition(j->obj, "Complete"))
			v->jobs_succeeded++;
		else if (js_jobctl_condition(j->obj, "Failed"))
			v->jobs_failed++;
		else
			v->jobs_active++;
		for (size_t k = 0; k < j->n_pods; k++) {
			const struct js_pod *p = j->pods[k];
			enum js_jobctl_phase ph = js_pod_phase(p);
			struct js_pod_info in;
			js_pod_info(p, &in);
			v->pods_active += ph <= JS_JOBCTL_RUNNING && !in.stopping;
			v->pods_ready += js_pod_ready(p);
			v->pods_succeeded += ph == JS_JOBCTL_SUCCEEDED;
			v->pods_failed += ph == JS_JOBCTL_FAILED;
			v->restarts += js_pod_restarts(p);
		}
	}
	struct js_local_view v = {.elapsed_ms = t - l->start_ms, .restarts = l->js->status.restarts, .state = js__report_run_state(l),
				  .n_rjobs = nr, .rjobs = rv};
	l->opts.on_view(l->opts.ctx, &v);
	free(rv);
}

static int64_t next_deadline(const struct js_local *l)
{
	/* Only deadlines someone will act on: while interrupted nothing syncs
	 * or reconciles, and a Job being deleted is not synced, so their
	 * deadlines are stale; counting them would spin the loop once they
	 * pass (poll with timeout 0 until the grace periods end). */
	bool syncing = !l->interrupts;
	int64_t w = syncing ? l->requeue_ms : -1;
	for (size_t i = 0; i < l->n_jobs; i++) {
		const struct ljob *j = &l->jobs[i];
		if (syncing && !j->deleting && j->wake_ms >= 0 && (w < 0 || j->wake_ms < w))
			w = j->wake_ms;
		for (size_t k = 0; k < j->n_pods; k++) {
			int64_t p = js_pod_wake(j->pods[k]);
			if (p >= 0 && (w < 0 || p < w))
				w = p;
		}
	}
	return w;
}

/* The run's volume directories (local/volumes.h): the empty scratch
 * directory mounts are built on, and a directory per PersistentVolumeClaim
 * of the manifest (claims that exist before the JobSet; never removed). */
static int setup_volumes(struct js_local *l)
{
	l->scratch_dir = js_buf_format("%s/.mnt", l->run_dir);
	int r = mkdir_p(l->scratch_dir);
	if (r < 0)
		return r;
	for (size_t i = 0; i < js_objects_n_claims(l->opts.objects); i++) {
		char *dir = js_buf_format("%s/volumes/%s", l->run_dir, js_objects_claim(l->opts.objects, i));
		r = mkdir_p(dir);
		if (r == 0)
			js__report_event(l, "Normal", "Created", "persistentvolumeclaim",
					 js_objects_claim(l->opts.objects, i), "directory %s", dir);
		free(dir);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The end of the run is the JobSet's deletion: the claims it owns go. */
static void retain_volumes(struct js_local *l)
{
	char *err = NULL;
	size_t n = js_volumes_retain(l->js, l->run_dir, (const char *const *)l->pvcs, l->n_pvcs, &err);
	if (n)
		js__report_event(l, "Normal", "DeletedClaims", "jobset", js_jobset_name(l->js),
				 "%zu persistentvolumeclaim(s) removed (retentionPolicy.whenDeleted: Delete)", n);
	if (err)
		js__report_event(l, "Warning", "FailedDelete", "jobset", js_jobset_name(l->js), "%s", err);
	free(err);
}

/**
 * After an interrupt every pod is gone, but the Jobs' counters and the
 * JobSet's replicatedJobsStatus still describe the moment before it. Make
 * them true - the Job controller counts the pods once more (its plan is
 * dropped: nothing is created), the core recomputes replicatedJobsStatus
 * (its plan's actions are not taken) - and say what happened in the
 * condition Interrupted (local runtime only, docs/local.md).
 */
static void finish_interrupted(struct js_local *l)
{
	int64_t t = now_ms();
	size_t stopped = 0;
	for (size_t i = 0; i < l->n_jobs; i++) {
		struct ljob *j = &l->jobs[i];
		for (size_t k = 0; k < j->n_pods; k++) {
			struct js_pod_info in;
			js_pod_info(j->pods[k], &in);
			stopped += in.stop == JS_POD_STOP_RUNNER;
		}
		struct js_jobctl_plan plan;
		if (j->deleting || jobctl_pass(l, j, t, true, &plan) < 0)
			continue;
		if (plan.status_changed)
			stale(j);
		js_jobctl_plan_done(&plan);
	}
	struct js_plan *plan = NULL;
	char *err = NULL;
	if (plan_now(l, &plan, &err) == 0 && plan->jobset) {
		struct js_status *mine = &l->js->status, *fresh = &plan->jobset->status;
		struct js_rjob_status *v = mine->replicated_jobs_status;
		size_t n = mine->n_replicated_jobs_status;
		mine->replicated_jobs_status = fresh->replicated_jobs_status;
		mine->n_replicated_jobs_status = fresh->n_replicated_jobs_status;
		mine->has_replicated_jobs_status = fresh->has_replicated_jobs_status;
		fresh->replicated_jobs_status = v; /* freed with the plan */
		fresh->n_replicated_jobs_status = n;
	}
	js_reconcile_plan_free(plan);
	free(err);
	char ts[21];
	wall_stamp(ts);
	struct js_status *st = &l->js->status;
	st->conditions = js_xrealloc(st->conditions, (st->n_conditions + 1) * sizeof(*st->conditions));
	st->conditions[st->n_conditions++] = (struct js_condition){
		.type = js_xstrdup(JS_LOCAL_COND_INTERRUPTED), .status = js_xstrdup("True"),
		.reason = js_xstrdup("RunInterrupted"),
		.message = js_buf_format("the run was stopped by %s %.1f s after it started; %zu running pods were "
					 "deleted, the last %.1f s later",
					 l->interrupt_why ? l->interrupt_why : "a signal",
					 (double)(l->interrupt_ms - l->start_ms) / 1000.0, stopped,
					 (double)(t - l->interrupt_ms) / 1000.0),
		.last_transition_time = js_xstrdup(ts),
	};
	st->has_conditions = true;
	l->js->has_status = true;
}

static int setup(struct js_local *l, sigset_t *ret_old)
{
	/* The network first: an unprivileged runner enters a user namespace
	 * there, which changes what the sandbox probe finds. */
	struct js_net_opts no = {.no_namespaces = l->opts.no_namespaces, .js = l->js, .publish = l->opts.publish,
				 .n_publish = l->opts.n_publish};
	if (l->opts.runtime != JS_CONTAINER_PROCESS) {
		char *cerr = NULL;
		if (js_container_new(l->opts.runtime, &l->ctrt, &cerr) < 0) {
			js__report_event(l, "Warning", "FailedCreate", "jobset", js_jobset_name(l->js), "network: %s", cerr);
			free(cerr);
			return JS_EINVALID;
		}
		no.external_base = js_container_base(l->ctrt);
		no.external_name = js_container_network(l->ctrt);
	}
	int nr = js_net_new(&no, &l->net);
	if (nr < 0)
		return nr;
	const char *why = NULL;
	enum js_sandbox_mode mode = JS_SANDBOX_NONE;
	if (l->ctrt)
		mode = JS_SANDBOX_NS; /* the runtime's namespaces: hosts files, hostnames */
	else if (l->opts.no_namespaces)
		why = "disabled by --no-namespaces";
	else
		mode = js_sandbox_probe(l->opts.probe_path ? l->opts.probe_path : "/bin/true", &why);
	l->sandbox_why = mode == JS_SANDBOX_NONE ? why : NULL;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	l->death_rd = p[0];
	l->death_wr = p[1];
	char *hd = js_buf_format("%s/hosts.d", l->run_dir);
	(void)mkdir_p(hd);
	free(hd);
	int vr = setup_volumes(l);
	if (vr < 0)
		return vr;
	l->host = (struct js_pod_host){
		.mode = mode, .death_fd = l->death_rd, .log_dir = l->log_dir, .node_name = l->node_name,
		.host_ip = js_net_host_ip(l->net),
		.path_env = l->path_env, .home_env = l->home_env, .restart_base_ms = l->opts.backoff_base_ms,
		.restart_max_ms = l->opts.backoff_base_ms * 30, .on_line = l->opts.on_line, .line_ctx = l->opts.ctx,
		.run_dir = l->run_dir, .objects = l->opts.objects, .scratch_dir = l->scratch_dir, .ctrt = l->ctrt,
	};
	l->host.on_note = on_pod_note;
	l->host.note_ctx = l;
	l->host.log_max_bytes = l->opts.log_max_bytes;
	l->host.log_max_files = l->opts.log_max_files;
	l->host.hosts_env = l->hosts_path;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, ret_old) < 0)
		return -errno;
	l->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (l->sig_fd < 0)
		return -errno;
	return 0;
}

#define LOCAL_SAME_INTERRUPT_MS 500

/** Stop the run: SIGINT, SIGTERM, SIGHUP or `jobset down` (`why`,
 * static). The first time every pod gets its grace period, the second
 * time none. */
static void interrupt(struct js_local *l, int64_t t, const char *why)
{
	/* The same signal again within half a second is one request delivered
	 * twice (`timeout` signals the runner, then its process group), not a
	 * user asking a second time to kill everything now. */
	if (l->interrupts && l->interrupt_why && strcmp(why, l->interrupt_why) == 0 &&
	    t - l->interrupt_ms < LOCAL_SAME_INTERRUPT_MS)
		return;
	l->interrupts++;
	if (l->interrupts == 1) {
		l->interrupt_why = why;
		l->interrupt_ms = t;
		js__report_event(l, "Normal", "Interrupted", "jobset", js_jobset_name(l->js),
		      "%s: stopping every pod within its grace period", why);
		stop_all(l, t, INT64_MAX / 4);
	} else {
		js__report_event(l, "Warning", "Interrupted", "jobset", js_jobset_name(l->js), "%s again: killing every pod now",
		      why);
		stop_all(l, t, LOCAL_KILL_NOW_MS);
	}
	l->dirty = true;
}

static void handle_signals(struct js_local *l, int64_t t)
{
	struct signalfd_siginfo si;
	while (read(l->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			reap(l, t);
			continue;
		}
		interrupt(l, t, si.ssi_signo == SIGINT ? "SIGINT" : si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGHUP");
	}
	reap(l, t);
}

/* The DisruptionTarget an eviction sets, as the Eviction API writes it. */
#define EVICTION_REASON "EvictionByEvictionAPI"
#define EVICTION_MESSAGE "Eviction API: evicting"

/** `jobset evict POD`: what the Eviction API does to a running pod. */
static void evict(struct js_local *l, int64_t t, const char *name)
{
	for (size_t i = 0; i < l->n_jobs; i++) {
		for (size_t k = 0; !l->jobs[i].deleting && k < l->jobs[i].n_pods; k++) {
			struct js_pod *p = l->jobs[i].pods[k];
			if (strcmp(js_pod_name(p), name) != 0)
				continue;
			if (js_pod_evict(p, &l->host, t, wall_ms(), EVICTION_REASON, EVICTION_MESSAGE) < 0)
				break;
			js__report_event(l, "Warning", "Evicted", "pod", name,
			      "evicted by jobset evict: DisruptionTarget=True (%s), stopping within its grace period",
			      EVICTION_REASON);
			l->dirty = true;
			return;
		}
	}
	js__report_event(l, "Warning", "EvictionFailed", "pod", name, "no running pod of that name (finished, stopping, or "
	      "never created)");
}

/** Run the complete command lines on the control FIFO (local/rundir.h). */
static void handle_control(struct js_local *l, int64_t t)
{
	char buf[JS_RUNDIR_CONTROL_MAX];
	ssize_t n;
	while ((n = read(l->ctl_rd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n') {
				/* Longer than any command: dropped as a whole. */
				if (js_buf_add(&l->ctl_line, buf + i, 1) < 0)
					js_buf_clear(&l->ctl_line);
				continue;
			}
			const char *line = js_buf_str(&l->ctl_line);
			if (strcmp(line, "down") == 0)
				interrupt(l, t, "jobset down");
			else if (strncmp(line, "evict ", 6) == 0 && !l->interrupts)
				evict(l, t, line + 6);
			js_buf_clear(&l->ctl_line);
		}
	}
}

static void pump(struct js_local *l, struct pollfd *fds, size_t n)
{
	for (size_t i = LOCAL_FIXED_FDS; i < n; i++) {
		if (!fds[i].revents)
			continue;
		for (size_t j = 0; j < l->n_jobs; j++) {
			bool done = false;
			for (size_t k = 0; k < l->jobs[j].n_pods && !done; k++)
				done = js_pod_pump(l->jobs[j].pods[k], &l->host, fds[i].fd);
			if (done)
				break;
		}
	}
}

static size_t build_pollfds(struct js_local *l, struct pollfd **fds, size_t *cap)
{
	size_t need = LOCAL_FIXED_FDS;
	for (size_t i = 0; i < l->n_jobs; i++) {
		for (size_t k = 0; k < l->jobs[i].n_pods; k++)
			need += js_pod_n_fds(l->jobs[i].pods[k]);
	}
	if (need > *cap) {
		*cap = need * 2;
		*fds = js_xrealloc(*fds, *cap * sizeof(**fds));
	}
	(*fds)[0] = (struct pollfd){.fd = l->sig_fd, .events = POLLIN};
	(*fds)[1] = (struct pollfd){.fd = l->ctl_rd, .events = POLLIN}; /* -1: ignored */
	(*fds)[2] = (struct pollfd){.fd = js_net_wake_fd(l->net), .events = POLLIN}; /* -1: ignored */
	size_t n = LOCAL_FIXED_FDS;
	for (size_t i = 0; i < l->n_jobs; i++) {
		for (size_t k = 0; k < l->jobs[i].n_pods; k++)
			n += js_pod_fill_pollfds(l->jobs[i].pods[k], *fds + n);
	}
	return n;
}

/**
 * The loop's guard against waiting forever. Before it sleeps, something must
 * be able to wake it: a running container (its exit), an output pipe, a
 * deadline (restart, backoff, requeue, grace period), a pod network being
 * made or a pending resync.
 * Signals alone do not count: only the user sends those. With none of them
 * and a JobSet that is not terminal, nothing can change the state any more
 * (on a cluster, someone might still edit the JobSet; here nobody can). The
 * first time, sync and reconcile once more, as a level-based controller
 * would; if that leaves the same state, report it and end the run (Failed,
 * exit 1). Returns true when the caller should run another turn at once.
 */
static bool stall_check(struct js_local *l, int64_t wake_ms, size_t n_fds)
{
	bool can_wake = wake_ms >= 0 || n_fds > LOCAL_FIXED_FDS || l->resync || !all_gone(l) ||
			js_net_n_pending(l->net);
	if (can_wake || l->interrupts) {
		if (l->stall_pass)
			js__report_event(l, "Warning", "Stalled", "jobset", js_jobset_name(l->js),
			      "the runner had nothing left to wake it, and syncing again found work: an internal error of "
			      "the local runtime, recovered");
		l->stall_pass = false;
		return false;
	}
	if (!l->stall_pass) {
		l->stall_pass = true;
		l->dirty = true;
		return true;
	}
	l->stall_pass = false;
	l->stalled = true;
	size_t jobs = 0, pods = 0;
	for (size_t i = 0; i < l->n_jobs; i++) {
		jobs += !l->jobs[i].deleting;
		pods += l->jobs[i].n_pods;
	}
	js__report_event(l, "Warning", "Stalled", "jobset", js_jobset_name(l->js),
	      "nothing is running or scheduled (%zu Jobs, %zu pods, no timer) and the JobSet is neither Completed nor "
	      "Failed, even after syncing again; nothing can change that in a local run, so it ends as Failed",
	      jobs, pods);
	return false;
}

static int run_loop(struct js_local *l, enum js_local_result *ret_result)
{
	sigset_t old;
	int r = setup(l, &old);
	if (r < 0)
		return r;
	if (l->sandbox_why)
		js__report_event(l, "Warning", "Degraded", "jobset", js_jobset_name(l->js),
		      "Linux namespaces are not available (%s): pods share this machine's hostname and /etc/hosts; pod "
		      "names resolve only through the hosts file named by $JOBSET_HOSTS_FILE in every pod",
		      l->sandbox_why);
	else if (l->ctrt)
		js__report_event(l, "Normal", "Runtime", "jobset", js_jobset_name(l->js),
				 "pods are %s pods of containers of their images",
				 js_container_runtime_to_string(l->opts.runtime));
	else
		js__report_event(l, "Normal", "Sandbox", "jobset", js_jobset_name(l->js),
		      "pods run in their own %s (hostname, /etc/hosts, PID)", js_sandbox_mode_name(l->host.mode));
	if (js_net_why(l->net))
		js__report_event(l, "Warning", "DegradedNetwork", "jobset", js_jobset_name(l->js), "%s", js_net_describe(l->net));
	else
		js__report_event(l, "Normal", "Network", "jobset", js_jobset_name(l->js), "%s", js_net_describe(l->net));
	setenv("JOBSET_HOSTS_FILE", l->hosts_path, 1);
	struct pollfd *fds = NULL;
	size_t cap = 0;
	l->dirty = true;
	for (;;) {
		int64_t t = now_ms();
		bool changed = false;
		for (size_t i = 0; i < l->n_jobs; i++) {
			for (size_t k = 0; k < l->jobs[i].n_pods; k++) {
				struct js_pod *p = l->jobs[i].pods[k];
				enum js_jobctl_phase before = js_pod_phase(p);
				if (js_pod_step(p, &l->host, t))
					changed = true;
				js__report_pod_finished(l, p, before);
				/* Its GPUs go back once it is terminal and gone; a pod
				 * waiting for them is created by the sync below. */
				if (js_pod_phase(p) >= JS_JOBCTL_SUCCEEDED && js_pod_gone(p))
					changed |= js_gpu_put(l->opts.gpus, js_pod_id(p));
			}
		}
		l->resync = false;
		if (!l->interrupts) {
			changed |= in_place_agents(l, t);
			for (size_t i = 0; i < l->n_jobs; i++)
				changed |= sync_job(l, &l->jobs[i], t);
		}
		changed |= collect_jobs(l);
		l->dirty |= changed;
		l->observed_change |= changed;
		l->state_dirty |= changed;
		if (!l->interrupts && (l->dirty || (l->requeue_ms >= 0 && t >= l->requeue_ms))) {
			reconcile(l, t);
			if (l->stalled && !l->interrupts) {
				/* Tear down as after an interrupt: stop
				 * syncing, wait for every pod to be gone. */
				l->interrupts = 1;
				stop_all(l, t, LOCAL_KILL_NOW_MS);
				continue;
			}
			if (l->dirty)
				continue; /* apply the consequences right away */
		}
		view(l, t, changed);
		if ((terminal(l) || l->interrupts) && all_gone(l))
			break;
		int64_t w = next_deadline(l);
		size_t n = build_pollfds(l, &fds, &cap);
		if (stall_check(l, w, n))
			continue;
		if (l->stalled)
			break;
		if (l->opts.tick_ms > 0 && (w < 0 || w > t + l->opts.tick_ms))
			w = t + l->opts.tick_ms;
		/* state.json is behind only until its next allowed write; that is
		 * no reason to stay awake for the stall check above. */
		js__report_state(l, t, NULL);
		if (l->state_dirty && (w < 0 || l->state_ms + JS_LOCAL_STATE_INTERVAL_MS < w))
			w = l->state_ms + JS_LOCAL_STATE_INTERVAL_MS;
		int timeout = w < 0 ? -1 : (int)(w > t ? (w - t < 60000 ? w - t : 60000) : 0);
		if (l->resync)
			timeout = 0; /* still serve signals and output, then sync */
		int pr = poll(fds, n, timeout);
		if (pr < 0 && errno != EINTR) {
			r = -errno;
			stop_all(l, t, 0);
			break;
		}
		t = now_ms();
		if (pr > 0) {
			pump(l, fds, n);
			if (fds[0].revents)
				handle_signals(l, t);
			if (fds[1].revents)
				handle_control(l, t);
			/* Pods whose network is made start at the next turn's
			 * step (every pod is stepped every turn). */
			if (fds[2].revents)
				(void)js_net_poll(l->net);
		}
	}
	free(fds);
	if (l->interrupts && !l->stalled && r == 0)
		finish_interrupted(l);
	view(l, now_ms(), true);
	retain_volumes(l);
	l->end_ms = now_ms();
	int wr = js__report_results(l);
	js__report_state(l, now_ms(), l->stalled ? "Stalled" : l->interrupts ? "Interrupted" : js__report_run_state(l));
	close(l->sig_fd);
	l->sig_fd = -1;
	close(l->death_wr);
	close(l->death_rd);
	l->death_rd = l->death_wr = -1;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (r < 0)
		return r;
	*ret_result = l->stalled ? JS_LOCAL_STALLED
		      : l->interrupts ? JS_LOCAL_INTERRUPTED
		      : js_jobset_condition_true(l->js, "Completed") ? JS_LOCAL_COMPLETED
								      : JS_LOCAL_FAILED;
	return wr;
}

const json_t *js_local_results(const struct js_local *l)
{
	return l->results;
}

const struct js_jobset *js_local_jobset(const struct js_local *l)
{
	return l->js;
}

enum js_sandbox_mode js_local_sandbox(const struct js_local *l, const char **ret_why)
{
	if (ret_why)
		*ret_why = l->sandbox_why;
	return l->host.mode;
}

int64_t js_local_elapsed_ms(const struct js_local *l)
{
	return now_ms() - l->start_ms;
}

void js_local_phases(const struct js_local *l, struct js_local_phases *out)
{
	*out = (struct js_local_phases){0};
	js_phase_acct_summary(&l->phases, l->end_ms >= 0 ? l->end_ms : now_ms(), &out->sum);
	out->n_readies = l->n_readies;
	size_t n = l->n_readies < JS_LOCAL_MAX_READIES ? l->n_readies : JS_LOCAL_MAX_READIES;
	memcpy(out->readies, l->readies, n * sizeof(*out->readies));
}

int js_local_preflight(const struct js_jobset *js, const struct js_local_opts *opts, char **ret_err)
{
	for (size_t i = 0; i < js->spec.n_replicated_jobs; i++) {
		const struct js_rjob *r = &js->spec.replicated_jobs[i];
		const json_t *tmpl = js_json_path(r->template_, "spec.template");
		/* Volumes are checked on the pod template as rendered: claims of
		 * volumeClaimPolicies are volumes only there. */
		struct js_render_opts ro = {.gates = opts ? opts->gates : (struct js_gates){0}};
		json_t *job = js_render_job(js, i, 0, &ro);
		char *err = NULL;
		bool images = opts && opts->runtime != JS_CONTAINER_PROCESS;
		int cr = images ? js_pod_check_template_images(tmpl, &err) : js_pod_check_template(tmpl, &err);
		if (cr == 0)
			cr = js_volumes_check(js_json_path(job, "spec.template"), opts ? opts->objects : NULL, &err);
		json_decref(job);
		if (cr < 0) {
			*ret_err = js_buf_format("spec.replicatedJobs[%zu] (%s): %s", i, r->name, err);
			free(err);
			return JS_EINVALID;
		}
	}
	/* More GPUs at once than the machine has would never all start. */
	return js_gpu_check(js, js_gpu_count(opts ? opts->gpus : NULL), ret_err);
}
