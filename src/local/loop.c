/*
 * loop.c - the local runtime's event loop (local.h). Every turn steps pods,
 * syncs Jobs (jobs.c), and reconciles (exec.c) when anything changed or a
 * requeue is due; then it sleeps in poll(2) until a child exits, a pipe has
 * output, a signal or a control command (`jobset down`, `jobset evict`)
 * arrives, a pod network is made or the earliest deadline passes. Also the
 * run's setup (network, sandbox, volumes, signals), its interrupt (every pod
 * within its grace period, the second time at once), the guard against
 * waiting with nothing able to wake it, and its end.
 */
#include "local/local_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/render.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/time.h"
#include "core/reconcile.h"
#include "local/gpu.h"
#include "local/jobctl.h"
#include "local/rundir.h"
#include "local/volumes.h"

/* Grace period left to pods after a second interrupt: none. */
#define LOCAL_KILL_NOW_MS 0
/* The poll set starts with the signalfd, the control FIFO and the pod
 * networks' wake fd (local/net.h); the containers' output pipes follow. */
#define LOCAL_FIXED_FDS 3

static bool terminal(const struct js_local *l)
{
	return js_jobset_condition_true(l->js, "Completed") || js_jobset_condition_true(l->js, "Failed");
}

static bool all_gone(const struct js_local *l)
{
	for (size_t i = 0; i < l->n_jobs; i++) {
		if (!js__job_gone(&l->jobs[i]))
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
		/* A command making a pod goes on or ends (its pod starts, or
		 * another may be made); a pod removal that ends frees its
		 * address for a pod waiting to be made (pod.c make_sandbox). */
		if (!found)
			found = js_container_reaped(l->ctrt, pid, status);
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
	if (syncing && l->watch_due_ms >= 0 && (w < 0 || l->watch_due_ms < w))
		w = l->watch_due_ms;
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
	int r = js__local_mkdir_p(l->scratch_dir);
	if (r < 0)
		return r;
	for (size_t i = 0; i < js_objects_n_claims(l->opts.objects); i++) {
		char *dir = js_buf_format("%s/volumes/%s", l->run_dir, js_objects_claim(l->opts.objects, i));
		r = js__local_mkdir_p(dir);
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
	int64_t t = js__local_now_ms();
	size_t stopped = 0;
	for (size_t i = 0; i < l->n_jobs; i++) {
		struct ljob *j = &l->jobs[i];
		for (size_t k = 0; k < j->n_pods; k++) {
			struct js_pod_info in;
			js_pod_info(j->pods[k], &in);
			stopped += in.stop == JS_POD_STOP_RUNNER;
		}
		struct js_jobctl_plan plan;
		if (j->deleting || js__job_pass(l, j, t, true, &plan) < 0)
			continue;
		if (plan.status_changed)
			js__job_stale(j);
		js_jobctl_plan_done(&plan);
	}
	struct js_plan *plan = NULL;
	char *err = NULL;
	if (js__exec_plan_now(l, &plan, &err) == 0 && plan->jobset) {
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
	js__local_wall_stamp(ts);
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
	(void)js__local_mkdir_p(hd);
	free(hd);
	int vr = setup_volumes(l);
	if (vr < 0)
		return vr;
	l->host = (struct js_pod_host){
		.mode = mode, .death_fd = l->death_rd, .log_dir = l->log_dir, .node_name = l->node_name,
		.host_ip = js_net_host_ip(l->net),
		.path_env = l->path_env, .home_env = l->home_env, .restart_base_ms = l->opts.backoff_base_ms,
		.restart_max_ms = js_sat_mul(l->opts.backoff_base_ms, 30), .on_line = l->opts.on_line, .line_ctx = l->opts.ctx,
		.run_dir = l->run_dir, .objects = l->opts.objects, .scratch_dir = l->scratch_dir, .ctrt = l->ctrt,
	};
	l->host.on_note = js__job_pod_note;
	l->host.note_ctx = l;
	l->host.log_max_bytes = l->opts.log_max_bytes;
	l->host.log_max_files = l->opts.log_max_files;
	l->host.hosts_env = l->hosts_path;
	sigset_t set;
	js_local_interrupts(&set);
	sigaddset(&set, SIGCHLD);
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

/* An interrupt that arrived after the loop's last read is pending while
 * the signals are blocked; restoring the caller's mask would deliver it
 * with its default action and kill the process during its own cleanup
 * (seen: a user's third Ctrl-C, or `timeout`'s repeated SIGTERM, turned a
 * finished run's exit code into "killed by SIGTERM"). The run is over, so
 * pending interrupts are consumed here; one that arrives after this is a
 * request to the caller. */
void js_local_interrupts(sigset_t *ret)
{
	sigemptyset(ret);
	sigaddset(ret, SIGINT);
	sigaddset(ret, SIGTERM);
	sigaddset(ret, SIGHUP);
}

static void drain_interrupts(void)
{
	sigset_t set;
	js_local_interrupts(&set);
	const struct timespec zero = {0, 0};
	while (sigtimedwait(&set, NULL, &zero) > 0)
		;
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
			if (js_pod_evict(p, &l->host, t, js__local_wall_ms(), EVICTION_REASON, EVICTION_MESSAGE) < 0)
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
			js_net_n_pending(l->net) || js_container_n_under_way(l->ctrt);
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

int js__loop_run(struct js_local *l, enum js_local_result *ret_result)
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
		int64_t t = js__local_now_ms();
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
			changed |= js__agents_step(l, t);
			for (size_t i = 0; i < l->n_jobs; i++)
				changed |= js__job_sync(l, &l->jobs[i], t);
			/* After the syncs: pods they made are checked at once. */
			changed |= js__watchdog_step(l, t, changed);
		}
		changed |= js__jobs_collect(l);
		l->dirty |= changed;
		l->observed_change |= changed;
		l->state_dirty |= changed;
		if (!l->interrupts && (l->dirty || (l->requeue_ms >= 0 && t >= l->requeue_ms))) {
			js__exec_reconcile(l, t);
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
		if (l->opts.tick_ms > 0 && (w < 0 || w > js_sat_add(t, l->opts.tick_ms)))
			w = js_sat_add(t, l->opts.tick_ms);
		/* state.json is behind only until its next allowed write; that is
		 * no reason to stay awake for the stall check above. */
		js__report_state(l, t, NULL);
		if (l->state_dirty && (w < 0 || js_sat_add(l->state_ms, JS_LOCAL_STATE_INTERVAL_MS) < w))
			w = js_sat_add(l->state_ms, JS_LOCAL_STATE_INTERVAL_MS);
		int timeout = w < 0 ? -1 : (int)(w > t ? (w - t < 60000 ? w - t : 60000) : 0);
		if (l->resync)
			timeout = 0; /* still serve signals and output, then sync */
		int pr = poll(fds, n, timeout);
		if (pr < 0 && errno != EINTR) {
			r = -errno;
			stop_all(l, t, 0);
			break;
		}
		t = js__local_now_ms();
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
	view(l, js__local_now_ms(), true);
	retain_volumes(l);
	l->end_ms = js__local_now_ms();
	const char *final = l->stalled ? "Stalled" : l->interrupts ? "Interrupted" : js__report_run_state(l);
	int wr = js__report_results(l, final);
	js__report_state(l, js__local_now_ms(), final);
	close(l->sig_fd);
	l->sig_fd = -1;
	close(l->death_wr);
	close(l->death_rd);
	l->death_rd = l->death_wr = -1;
	drain_interrupts();
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (r < 0)
		return r;
	*ret_result = l->stalled ? JS_LOCAL_STALLED
		      : l->interrupts ? JS_LOCAL_INTERRUPTED
		      : js_jobset_condition_true(l->js, "Completed") ? JS_LOCAL_COMPLETED
								      : JS_LOCAL_FAILED;
	return wr;
}
