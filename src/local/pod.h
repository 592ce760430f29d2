/*
 * pod.h - a pod as processes: what the kubelet does for one core/v1 Pod,
 * on this machine.
 *
 * Init containers run one at a time in order; a sidecar (an init container
 * with restartPolicy Always) is started, counts as done once running, keeps
 * running and is restarted whenever it exits, and is stopped after the main
 * containers finish. Then every regular container starts at once. With pod
 * restartPolicy OnFailure a container that exits non-zero is restarted in
 * place after a doubling delay (restartCount grows); with Never it stays
 * terminated and the pod fails once every container has finished.
 *
 * Each container is `command` + `args` exec'd directly (the image is only
 * recorded) with `env` (value and valueFrom.fieldRef: metadata.name,
 * metadata.namespace, metadata.uid, metadata.labels['k'],
 * metadata.annotations['k'], status.podIP, status.hostIP, spec.nodeName,
 * spec.serviceAccountName) after a base environment (PATH and HOME of the
 * runner, HOSTNAME), with JOB_COMPLETION_INDEX appended for Indexed Jobs, and
 * $(VAR) references expanded as the kubelet does. Its output goes to
 * <log_dir>/<pod>/<container>.log (capped and rotated, local/podlog.h), and
 * line by line to an optional callback. It runs in the pod's working
 * directory (js_pod_init.workdir) unless it names its own workingDir
 * (relative ones are taken from there).
 *
 * Stopping sends SIGTERM to every running container, then SIGKILL after
 * terminationGracePeriodSeconds (default 30). Every stop has a cause
 * (enum js_pod_stop); an eviction also sets the pod condition
 * DisruptionTarget, and a missed progress deadline the condition
 * ProgressDeadlineExceeded, which podFailurePolicy onPodConditions rules
 * match.
 *
 * Status: every container's state, exit code, reason, restart count and
 * times, as a ContainerStatus shows them (js_pod_ctr_info); local/podjson.h
 * renders the whole pod as a core/v1 Pod.
 *
 * Network: every container joins the pod's network namespace, if it has
 * one (local/net.h); the pod releases it once it is terminal and its last
 * process is gone (a restarted container keeps it, like a pod sandbox).
 * While the namespace is still being made the pod stays Pending, its
 * containers waiting (ContainerCreating); js_pod_step starts them once
 * js_net_pod_pending says it is ready.
 *
 * Not thread-safe; the runner's single thread owns every pod.
 */
#ifndef JS_POD_H
#define JS_POD_H

#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/common.h"
#include "core/inplace.h"
#include "local/container.h"
#include "local/jobctl.h"
#include "local/net.h"
#include "local/objects.h"
#include "local/sandbox.h"

struct js_pod;

/** Called for every complete line a container writes (without the newline). */
typedef void (*js_pod_line_fn)(void *ctx, const struct js_pod *pod, const char *container, const char *line,
			       size_t n);

/** Called when something worth an event happens inside a pod that its
 * phase does not show: a container restart is scheduled (reason BackOff).
 * `type` is "Normal" or "Warning"; every string is borrowed for the call. */
typedef void (*js_pod_note_fn)(void *ctx, const struct js_pod *pod, const char *type, const char *reason,
			       const char *message);

/** What every pod of a run shares. Borrowed by the pods; outlives them. */
struct js_pod_host {
	enum js_sandbox_mode mode;
	int death_fd;             /* read end of the death pipe */
	const char *log_dir;      /* logs go to <log_dir>/<pod>/<container>.log */
	const char *node_name;    /* spec.nodeName */
	const char *host_ip;      /* status.hostIP, or NULL for 127.0.0.1 */
	const char *path_env;     /* PATH for containers and command lookup */
	const char *home_env;     /* HOME, or NULL */
	const char *hosts_env;    /* JOBSET_HOSTS_FILE, or NULL: the hosts file
				     with every pod, for programs that look
				     names up themselves (docs/local.md) */
	int64_t restart_base_ms;  /* first in-place restart delay (OnFailure) */
	int64_t restart_max_ms;
	js_pod_line_fn on_line;   /* or NULL */
	void *line_ctx;
	js_pod_note_fn on_note;   /* or NULL */
	void *note_ctx;
	int64_t log_max_bytes;    /* per log file (0: JS_PODLOG_DEFAULT_MAX_BYTES) */
	int log_max_files;        /* files per container (0: the default) */
	/* Volumes (local/volumes.h): where claims and the pods' own volume
	 * files go, the manifest's ConfigMaps and Secrets (or NULL), and an
	 * empty directory for building mounts (local/mounts.h). */
	const char *run_dir;
	const struct js_objects *objects;
	const char *scratch_dir;
	/* Container mode (local/container.h): containers are the runtime's,
	 * of their images; NULL in process mode. */
	struct js_container *ctrt;
};

/** Why a pod is being stopped. Recorded only for a pod that was still
 * running when the stop began: a pod that had finished keeps its outcome. */
enum js_pod_stop {
	JS_POD_STOP_NONE,           /* not stopped (or finished before) */
	JS_POD_STOP_JOB_CONTROLLER, /* deleted by the Job controller (suspend,
				       a completed Job): not a failure */
	JS_POD_STOP_JOB_DELETED,    /* its Job was deleted (by the JobSet) */
	JS_POD_STOP_RUNNER,         /* the run was interrupted or brought
				       down: not a failure */
	JS_POD_STOP_EVICTED,        /* evicted: DisruptionTarget is set and the
				       failure counts, as on a cluster */
	JS_POD_STOP_PROGRESS,       /* it missed its progress deadline (hang
				       detection, docs/progress-deadline.md):
				       ProgressDeadlineExceeded is set, the
				       pod fails and the failure counts */
	JS_POD_STOP_JOB_FAILED,     /* deleted by the Job controller because
				       its Job failed (backoffLimit, a pod
				       failure policy, a deadline): a pod
				       whose containers failed before is
				       reported as failed */
};

/** A container's state, as a ContainerStatus would show it. */
enum js_pod_ctr_state {
	JS_POD_CTR_WAITING,
	JS_POD_CTR_RUNNING,
	JS_POD_CTR_TERMINATED,
};

/** Identity and template of a new pod. Borrowed for the call. */
struct js_pod_init {
	uint64_t id;
	const char *name;
	const char *namespace_;
	const char *uid;
	const char *job_name;
	int32_t index;            /* completion index, -1 for NonIndexed */
	const char *hostname;
	const char *subdomain;    /* or NULL */
	const char *ip;           /* status.podIP */
	const char *hosts_file;   /* this pod's /etc/hosts, or NULL */
	const char *job_uid;      /* owner reference, or NULL */
	const char *workdir;      /* default working directory (absolute), or
				     NULL for the runner's */
	struct js_net_pod *net;   /* the pod's network (its containers join
				     its namespace), or NULL; taken: freed
				     with the pod, or by js_pod_new when it
				     fails */
	const json_t *tmpl;       /* PodTemplateSpec (metadata + spec); the
				     pod keeps a reference */
	const char *const *gpus;  /* GPU ids the pod holds (local/gpu.h),
				     NULL-terminated, or NULL */
	bool in_place;            /* its JobSet restarts in place (KEP-467,
				     docs/in-place-restart.md): see
				     js_pod_restart_in_place */
};

/**
 * Build a pod (nothing is started yet). The template's metadata gets the
 * Job controller's additions (job-name, controller-uid, completion index).
 * Returns 0 and *ret_pod (free with js_pod_free), or JS_EINVALID with
 * *ret_err (caller frees) naming the problem - a container without
 * `command`, an env valueFrom other than fieldRef, an unknown fieldPath.
 */
JS_WARN_UNUSED int js_pod_new(const struct js_pod_init *init, const struct js_pod_host *host, struct js_pod **ret_pod,
			       char **ret_err);

/**
 * Check a pod template without building a pod: the same problems
 * js_pod_new reports. Returns 0 or JS_EINVALID with *ret_err (caller frees).
 */
JS_WARN_UNUSED int js_pod_check_template(const json_t *tmpl, char **ret_err);

/** As js_pod_check_template for container mode, where a container without
 * `command` runs its image's ENTRYPOINT. */
JS_WARN_UNUSED int js_pod_check_template_images(const json_t *tmpl, char **ret_err);

/* ---- In-place restart (KEP-467; docs/in-place-restart.md) ----
 *
 * A pod made with js_pod_init.in_place plays the kubelet's part of the
 * protocol, and keeps its agent's state (core/inplace.h) for the runner,
 * which plays the agent's part:
 *  - it starts held: no container starts until js_pod_release (the
 *    agent's barrier);
 *  - a container other than a sidecar that exits non-zero restarts the
 *    whole pod in place (the worker's restartPolicyRules action RestartPod)
 *    instead of failing it, as js_pod_restart_in_place does;
 *  - restarting in place kills every container (SIGKILL), keeps each run
 *    as lastState with restartCount + 1, resets the agent's state, and
 *    holds the pod again (phase Pending until released). The pod's name,
 *    uid, IP and volumes stay. */

/** Restart every container of an in-place pod in place (the agent exited
 * with its restart exit code). No-op for other pods and stopping ones. */
void js_pod_restart_in_place(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms);

/** True while an in-place pod is held at its barrier (or restarting). */
bool js_pod_held(const struct js_pod *pod);

/** True while an in-place pod's containers are being killed for an
 * in-place restart (its agent is gone until they are). */
bool js_pod_restarting(const struct js_pod *pod);

/** Lift the barrier: the pod's containers start at the next step. */
void js_pod_release(struct js_pod *pod);

/** The pod's agent state (NULL unless in_place); the runner's to update. */
struct js_inplace_agent *js_pod_agent(struct js_pod *pod);

/** Set annotation `key` of the pod to `value` (copied), and every
 * environment variable of its containers that takes it through
 * valueFrom.fieldRef (metadata.annotations['key']): the downward API as
 * the next start of each container sees it. ($(VAR) references to such a
 * variable in command and args are not expanded again.) */
void js_pod_set_annotation(struct js_pod *pod, const char *key, const char *value);

/** Annotation `key` of the pod (borrowed, valid until it changes), or NULL. */
const char *js_pod_annotation(const struct js_pod *pod, const char *key);

/** Free a pod; its processes must be gone (js_pod_gone). NULL is a no-op. */
struct js_pod *js_pod_free(struct js_pod *pod);

/**
 * Advance the pod at time `now_ms`: start what is due (init containers in
 * order, then the main ones, restarts after their delay), SIGKILL what
 * outlived its grace period, update the phase. Returns true when anything
 * visible changed.
 */
bool js_pod_step(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms);

/** Record that process `pid` exited with wait `status`. Returns true when
 * it was one of this pod's containers. */
bool js_pod_reap(struct js_pod *pod, const struct js_pod_host *host, pid_t pid, int status, int64_t now_ms);

/** Stop the pod: SIGTERM now, SIGKILL after the grace period; `why` is
 * recorded if the pod was still running (JS_POD_STOP_JOB_CONTROLLER and
 * JS_POD_STOP_RUNNER are not counted as failures by the Job controller). */
void js_pod_delete(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms, enum js_pod_stop why);

/** Stop with a grace period of `grace_ms` instead of the pod's own, if
 * shorter: the runner's teardown (JS_POD_STOP_RUNNER). */
void js_pod_delete_within(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms, int64_t grace_ms);

/**
 * Evict a running pod as the Eviction API does: set the condition
 * DisruptionTarget=True (`reason`, `message`, copied) at wall time
 * `wall_ms`, then delete it with its grace period (JS_POD_STOP_EVICTED).
 * Returns 0, or JS_EINVALID when the pod is not running or already stopping.
 */
JS_WARN_UNUSED int js_pod_evict(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms,
				int64_t wall_ms, const char *reason, const char *message);

/**
 * Fail a running pod for a cause of the runtime's: set pod condition `type`
 * =True (static string; `reason` and `message` copied) at wall time
 * `wall_ms`, then stop it with its grace period, recording `why`
 * (JS_POD_STOP_EVICTED or JS_POD_STOP_PROGRESS). The condition is what
 * podFailurePolicy onPodConditions rules meet. Returns 0, or JS_EINVALID
 * when the pod is not running, already stopping, or `why` is another.
 */
JS_WARN_UNUSED int js_pod_stop_failed(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms,
				      int64_t wall_ms, enum js_pod_stop why, const char *type, const char *reason,
				      const char *message);

/** True when no process of the pod is left. */
bool js_pod_gone(const struct js_pod *pod);

/** Earliest time js_pod_step has something to do, or -1. */
int64_t js_pod_wake(const struct js_pod *pod);

/** Append this pod's log pipes and start reports to `fds` (room for
 * js_pod_n_fds entries). */
size_t js_pod_fill_pollfds(const struct js_pod *pod, struct pollfd *fds);

/** Number of open log pipes and start reports. */
size_t js_pod_n_fds(const struct js_pod *pod);

/** Drain log pipe `fd` if it is one of this pod's, or read a container's
 * start report (local/sandbox.h: a failed start shows at its exit). Returns
 * true if `fd` was the pod's. */
bool js_pod_pump(struct js_pod *pod, const struct js_pod_host *host, int fd);

/** The pod as the Job controller sees it. `exits` and `conds` must have room
 * for js_pod_n_containers entries; they are filled and referenced. */
void js_pod_observe(const struct js_pod *pod, struct js_jobctl_exit *exits, struct js_jobctl_pod *ret);

/* ---- read access ---- */

/** Identity and lifecycle of a pod. Strings borrowed until js_pod_free;
 * times are wall clock (Unix ms), 0 when it has not happened. */
struct js_pod_info {
	const char *name, *namespace_, *uid, *job_name, *job_uid, *hostname, *subdomain, *ip, *workdir;
	int32_t index;
	const json_t *tmpl;        /* the template the pod was made from */
	int64_t created_ms, started_ms, finished_ms, deleted_ms;
	enum js_pod_stop stop;
	bool stopping;             /* a stop began (deletionTimestamp) */
	bool initialized;          /* init containers done */
	bool sandbox_ready;        /* its network is made and not released
				      (PodReadyToStartContainers) */
	/* The condition a stop set (DisruptionTarget of an eviction,
	 * ProgressDeadlineExceeded of hang detection), or NULL type. */
	const char *condition_type, *condition_reason, *condition_message;
	int64_t condition_ms;
};
void js_pod_info(const struct js_pod *pod, struct js_pod_info *ret);

/** One container's status, as a core/v1 ContainerStatus shows it.
 * Strings borrowed until the pod next changes; times wall clock (Unix ms),
 * 0 unknown. */
struct js_pod_ctr_term {
	int32_t exit_code;
	int signal;             /* the signal that killed it, or 0 */
	const char *reason;     /* "Completed", "Error", "StartError" */
	const char *message;    /* the start error, or NULL */
	int64_t started_ms, finished_ms;
};
struct js_pod_ctr_info {
	const char *name, *image;
	bool init, sidecar;
	enum js_pod_ctr_state state;
	bool restart_pending;       /* terminated, restart scheduled (the
				       kubelet says CrashLoopBackOff) */
	int32_t restarts;
	pid_t pid;                  /* running: its process, else -1 */
	int64_t started_ms;         /* running: when it started */
	bool has_term;              /* terminated (the current state) */
	struct js_pod_ctr_term term;
	bool has_last;              /* the run before the last restart */
	struct js_pod_ctr_term last;
};
void js_pod_ctr_info(const struct js_pod *pod, size_t i, struct js_pod_ctr_info *ret);

/** The reason a kubelet gives a terminated container: "Completed" (exit
 * 0), "StartError" (it could not be started), else "Error". Static. */
const char *js_pod_exit_reason(int32_t exit_code, bool start_error);

size_t js_pod_n_containers(const struct js_pod *pod);
const char *js_pod_name(const struct js_pod *pod);
const char *js_pod_job_name(const struct js_pod *pod);
uint64_t js_pod_id(const struct js_pod *pod);
int32_t js_pod_index(const struct js_pod *pod);
enum js_jobctl_phase js_pod_phase(const struct js_pod *pod);
int32_t js_pod_restarts(const struct js_pod *pod);
/** Highest restartCount of any one container (init or regular). */
int32_t js_pod_max_restarts(const struct js_pod *pod);
bool js_pod_ready(const struct js_pod *pod);
/** The first start failure ("container 'x': exec: No such file..."), or NULL. */
const char *js_pod_start_error(const struct js_pod *pod);
/* Container `i` of js_pod_n_containers (init containers first, in order,
 * then the regular ones) as it is exec'd: its name, argv (command + args,
 * $(VAR) expanded) and whole environment, NULL-terminated. Borrowed until
 * js_pod_free. */
const char *js_pod_ctr_name(const struct js_pod *pod, size_t i);
char *const *js_pod_ctr_argv(const struct js_pod *pod, size_t i);
char *const *js_pod_ctr_envp(const struct js_pod *pod, size_t i);

#endif
