/*
 * jobs.c - the run's Jobs and their pods (local_int.h): each Job is synced
 * by the Job controller of local/jobctl.h over its pods as they are now,
 * and its plan carried out here (pods started with what the Job controller
 * adds to their template, or deleted); Jobs the core deleted are dropped
 * once their last process is gone.
 */
#include "local/local_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/template.h"
#include "api/quarantine.h"
#include "api/render.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/parse.h"
#include "base/time.h"
#include "local/gpu.h"
#include "local/hosts.h"
#include "local/jobctl.h"
#include "local/podjson.h"

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
void js__job_pod_note(void *ctx, const struct js_pod *pod, const char *type, const char *reason,
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

/* The GPUs a new pod of Job `j` asks for (local/gpu.h), taken for pod
 * `id`. False when not enough are free now: the devices are held by pods
 * still being stopped, which give them back when they are gone (then the
 * Job is synced again in the same turn). Said once per wait. */
/* Node quarantine (docs/node-quarantine.md "Locally"): a device is left
 * out when the node it stands for (js_gpu_node_name) is in the Job's list. */
static bool gpu_quarantined(const char *id, void *ctx)
{
	const struct js_quarantine_list *q = ctx;
	struct js_buf node;
	js_buf_init(&node, 0);
	bool out = js_gpu_node_name(id, &node) == 0 && js_quarantine_list_find(q, js_buf_str(&node)) >= 0;
	js_buf_done(&node);
	return out;
}

static bool take_gpus(struct js_local *l, struct ljob *j, int32_t index, uint64_t id, const char *const **ret)
{
	int64_t n = 0;
	char *err = NULL;
	if (js_gpu_pod_count(js_json_path(j->obj, "spec.template.spec"), &n, &err) < 0) {
		free(err); /* preflight refused such templates */
		n = 0;
	}
	/* The Job carries its attempt's list (core/avoid.c); garbage or none
	 * leaves nothing out. */
	struct js_quarantine_list *q = js_xmalloc(sizeof(*q));
	const char *text = js_json_str(js_json_path(j->obj, "spec.template.metadata.annotations"),
				       JS_ANN_QUARANTINED_NODES);
	if (!l->opts.gates.node_quarantine || js_quarantine_list_parse(text, q) < 0)
		q->n = 0;
	struct js_gpu_skip skip = {.fn = gpu_quarantined, .ctx = q};
	const struct js_gpu_skip *sk = q->n ? &skip : NULL;
	int r = js_gpu_take_except(l->opts.gpus, id, n, sk, ret);
	size_t usable = js_gpu_count_except(l->opts.gpus, sk, false);
	free(q);
	if (r == 0) {
		l->gpu_wait_reported = false;
		if (j->noroom.waits && j->noroom.index == index)
			j->noroom.waits = false;
		return true;
	}
	if ((int64_t)usable < n) {
		/* The cluster's pod would stay Pending, unschedulable; here the
		 * pod waits as that one would, and the core, told so, sets
		 * QuarantineLeavesNoRoom (core/noroom.c) with its event. */
		if (!j->noroom.waits) {
			j->noroom.waits = true;
			j->noroom.index = index;
			j->noroom.need = n;
			j->noroom.usable = usable;
			j->noroom.total = js_gpu_count(l->opts.gpus);
			l->dirty = true; /* for the core to see it */
		}
		l->gpu_wait_reported = true;
		return false;
	}
	if (!l->gpu_wait_reported)
		js__report_event(l, "Warning", "FailedScheduling", "job", j->name,
				 "pod %d needs %lld GPUs (%s) and %zu are free; waiting for pods being stopped to give "
				 "theirs back",
				 index, (long long)n, JS_GPU_RESOURCE, js_gpu_free_count(l->opts.gpus));
	l->gpu_wait_reported = true;
	return false;
}

/** Create a pod of Job `j`. Returns false when its template cannot be run
 * (a Warning FailedCreate event says why). */
static bool start_pod(struct js_local *l, struct ljob *j, int32_t index, int64_t t)
{
	const char *const *gpus = NULL;
	uint64_t id = l->next_pod_id + 1;
	if (!take_gpus(l, j, index, id, &gpus))
		return false;
	static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
	char suffix[6];
	for (int i = 0; i < 5; i++)
		suffix[i] = alphabet[js__local_rnd(l) % (sizeof(alphabet) - 1)];
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
	/* Hang detection's heartbeat file (watchdog.c), before the pod reads
	 * its template. */
	int wr = js__watchdog_prepare(l, j->obj, name, tmpl);
	if (wr < 0) {
		js__report_event(l, "Warning", "FailedCreate", "job", j->name, "no heartbeat directory for pod %s: %s",
				 name, js_strerror(wr));
		js_net_pod_free(net);
		js_gpu_put(l->opts.gpus, id);
		json_decref(tmpl);
		free(hostname);
		free(name);
		return false;
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
	char *uid = js__local_new_uid(l);
	struct js_pod_init init = {
		.id = ++l->next_pod_id, .name = name, .namespace_ = js_jobset_namespace(l->js), .uid = uid,
		.job_name = j->name, .index = index, .hostname = hostname, .subdomain = subdomain, .ip = ip,
		.hosts_file = hosts, .net = net, .tmpl = tmpl, .gpus = gpus, .in_place = js__agents_in_place(l),
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
void js__job_stale(struct ljob *j)
{
	js_job_unref(j->rec);
	j->rec = NULL;
}

/** Run the Job controller over `j` and its pods as they are now; the plan
 * is the caller's to act on (or not). `gone_if_deleted` leaves out the pods
 * the runner deleted, as pods deleted with their JobSet are gone on a
 * cluster (whatever their exit). Returns what js_jobctl_sync returns. */
int js__job_pass(struct js_local *l, struct ljob *j, int64_t t, bool gone_if_deleted,
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
				   .backoff_max_ms = js_sat_mul(l->opts.backoff_base_ms, 36)};
	struct js_jobctl_now now = {.mono_ms = t, .wall_ms = js__local_wall_ms()};
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
bool js__job_sync(struct js_local *l, struct ljob *j, int64_t t)
{
	if (j->deleting)
		return false;
	struct js_jobctl_plan plan;
	bool changed = false;
	int r = js__job_pass(l, j, t, false, &plan);
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
		js__job_stale(j);
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

struct ljob *js__job_find(struct js_local *l, const char *name)
{
	for (size_t i = 0; i < l->n_jobs; i++) {
		if (strcmp(l->jobs[i].name, name) == 0)
			return &l->jobs[i];
	}
	return NULL;
}

bool js__job_gone(const struct ljob *j)
{
	for (size_t i = 0; i < j->n_pods; i++) {
		if (!js_pod_gone(j->pods[i]))
			return false;
	}
	return true;
}

/** Drop Jobs being deleted whose processes are all gone. */
bool js__jobs_collect(struct js_local *l)
{
	bool changed = false;
	for (size_t i = 0; i < l->n_jobs;) {
		struct ljob *j = &l->jobs[i];
		if (!j->deleting || !js__job_gone(j)) {
			i++;
			continue;
		}
		js__report_event(l, "Normal", "Deleted", "job", j->name, "%s", "");
		json_array_append_new(l->history, j->obj);
		for (size_t k = 0; k < j->n_pods; k++) {
			json_array_append_new(l->pod_history, js_podjson_pod(j->pods[k], true));
			js__report_pod_record(l, j->pods[k]);
		}
		js_job_unref(j->rec);
		js__job_free_pods(l, j);
		free(j->name);
		memmove(j, j + 1, (l->n_jobs - i - 1) * sizeof(*j));
		l->n_jobs--;
		changed = true;
	}
	return changed;
}

void js__job_delete(struct js_local *l, struct ljob *j, int64_t t)
{
	if (j->deleting)
		return;
	j->deleting = true;
	char ts[21];
	js__local_wall_stamp(ts);
	json_object_set_new(js_json_path_make(j->obj, "metadata"), "deletionTimestamp", json_string(ts));
	js__job_stale(j);
	for (size_t i = 0; i < j->n_pods; i++)
		js_pod_delete(j->pods[i], &l->host, t, JS_POD_STOP_JOB_DELETED);
}
