/*
 * local.h - the local runtime: run one JobSet on this machine until it is
 * terminal, with the reconcile core as the brain and this folder as the
 * body (Jobs by local/jobctl, pods as processes by local/pod).
 *
 * One loop (poll(2) over a signalfd and the containers' output pipes, with
 * a timeout computed from every pending deadline; no busy waiting):
 *   pods step -> Jobs sync (pod creation and deletion) -> reconcile
 *   (js_reconcile_run over records of the Jobs, each decoded once per change
 *   of its Job) -> apply the plan through the one executor (core/exec.h,
 *   this runtime is one of its bodies): create, delete and patch Jobs; the
 *   headless Service becomes /etc/hosts entries for every pod -> store the
 *   plan's JobSet with its new status (taken, not copied) -> wait for the
 *   next change or deadline. Deadlines are on CLOCK_MONOTONIC; wall time is
 *   only for timestamps.
 *
 * Networking (local/net.h): each pod gets its own network namespace on a
 * bridge in the run's own namespace, with an address stable per hostname
 * across restarts (degraded: a loopback address from a block of its own per
 * run), and its hostname; with DNS hostnames on, every pod's /etc/hosts maps
 * `<hostname>.<subdomain>`, `.<subdomain>.<ns>.svc` and `.svc.cluster.local`
 * forms of every pod of the JobSet. --publish forwards host ports to pods.
 *
 * Files under the run directory (local/rundir.h): logs/<pod>/<container>.log
 * (capped and rotated, local/podlog.h), events.log, hosts (the shared hosts
 * file), work/ (the pods' default working directory), state.json (the live
 * state, below), and at the end jobset.json (the JobSet with its final
 * status), jobs.json (a v1 List of every Job and every pod, deleted ones
 * included, with their final status; pods as local/podjson.h renders them)
 * and report.html (the run's picture, picture/html.h, from its record,
 * picture/timeline.h).
 *
 * The live state file, state.json, is how `jobset ps`, `describe`, `logs`
 * and `down` see a run while it runs: {"runner": {pid, state, startedAt,
 * updatedAt, runDir}, "jobset": {name, namespace, conditions, restarts},
 * "pods": [Pod without spec]}, replaced atomically (never half written)
 * when something changed, at most every JS_LOCAL_STATE_INTERVAL_MS, and a
 * last time when the run ends (runner.state is then final). The runner holds
 * the run directory's lock while it runs, and reads commands from its
 * control FIFO: "down" (as SIGTERM) and "evict POD" (the Eviction API: the
 * pod gets DisruptionTarget=True, reason EvictionByEvictionAPI, and is
 * deleted with its grace period).
 *
 * SIGINT and SIGTERM stop every pod within its grace period (a second one
 * kills at once); SIGKILL of the runner kills every container through
 * PR_SET_PDEATHSIG and their PID namespaces. The runner blocks those signals
 * while js_local_run runs and restores the mask after.
 *
 * Callbacks are how the CLI prints: this layer never writes to stdout.
 * Not thread-safe; one js_local per run.
 */
#ifndef JS_LOCAL_H
#define JS_LOCAL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/jobset.h"
#include "base/buf.h"
#include "base/common.h"
#include "core/phase.h"
#include "local/container.h"
#include "local/gpu.h"
#include "local/objects.h"
#include "local/pod.h"

struct js_local;

/* The condition an interrupted run leaves on the JobSet (jobset.json): not
 * an upstream condition type; docs/local.md and docs/differences.md. */
#define JS_LOCAL_COND_INTERRUPTED "Interrupted"

/* Least time between two writes of state.json: a run with many pods
 * changing at once rewrites it a few times a second, not per change. */
#define JS_LOCAL_STATE_INTERVAL_MS 200

/** One event, as kubectl shows one: TYPE REASON KIND/NAME: MESSAGE. Events
 * of one reconcile with the same type, object and message (the core emits
 * a condition's event and an action's event with one message) are one
 * event whose reasons are joined by ','. Borrowed for the callback. */
struct js_local_event {
	int64_t time_ms;        /* wall clock, Unix milliseconds */
	const char *type;       /* "Normal" | "Warning" */
	const char *reason;     /* "Started", "Failed", "BackoffLimitExceeded", ... */
	const char *kind;       /* "pod", "job", "jobset", "service",
				   "persistentvolumeclaim" */
	const char *name;
	const char *namespace_;
	const char *message;    /* "" when there is none */
};

/* local/report.h formats an event as text and as JSON. */

/** A pod's default working directory (docs/local.md). */
enum js_local_workdir {
	JS_LOCAL_WORKDIR_RUN, /* <run-dir>/work, shared by every pod (default) */
	JS_LOCAL_WORKDIR_POD, /* <run-dir>/work/<pod hostname>, one per pod */
	JS_LOCAL_WORKDIR_CWD, /* the runner's working directory */
};

/** Counters of one ReplicatedJob for the live view. */
struct js_local_rjob_view {
	const char *name;
	int32_t replicas;
	int32_t jobs_active, jobs_succeeded, jobs_failed;
	int32_t pods_active, pods_ready, pods_succeeded, pods_failed;
	int32_t pods_terminating; /* being stopped, processes left (old
				     attempts included) */
	int32_t restarts; /* container restarts inside pods (OnFailure) */
};

/** A snapshot for the live view. Borrowed for the callback only. */
struct js_local_view {
	int64_t elapsed_ms;
	int32_t restarts;     /* status.restarts of the JobSet */
	const char *state;    /* "Starting", "Running", "Completed", "Failed",
				 "Stopping" */
	size_t n_rjobs;
	const struct js_local_rjob_view *rjobs;
};

enum js_local_result {
	JS_LOCAL_COMPLETED,
	JS_LOCAL_FAILED,
	JS_LOCAL_INTERRUPTED,
	JS_LOCAL_STALLED,     /* not terminal, but nothing running, scheduled
				 or able to change that (a Warning Stalled
				 event says so); the CLI treats it as Failed */
};

struct js_local_opts {
	const char *run_dir;        /* created if missing */
	int64_t backoff_base_ms;    /* pod re-creation and container restart
				       delay, doubling (Kubernetes: 10 s) */
	int64_t tick_ms;            /* call on_view at least this often
				       (0 = only when something changed) */
	const char *probe_path;     /* program that exits 0, for the namespace
				       probe (default /bin/true) */
	bool no_namespaces;         /* force the degraded mode */
	enum js_local_workdir workdir;
	int64_t log_max_bytes;      /* per container log file (0: 10 MiB) */
	int log_max_files;          /* files per container log (0: 5) */
	const struct js_publish *publish; /* --publish, listening sockets
				       bound; borrowed until js_local_free */
	size_t n_publish;
	struct js_gates gates;      /* feature gates for the reconcile core
				       (the same ones validation used) */
	enum js_container_runtime runtime; /* process (default), podman or
				       docker (local/container.h); images
				       checked beforehand (js_container_images) */
	struct js_gpu *gpus;        /* the machine's GPUs (local/gpu.h), or NULL
				       for none; borrowed until js_local_free,
				       the run takes and gives back devices */
	const struct js_objects *objects; /* the manifest's ConfigMaps, Secrets
				       and PVCs (local/objects.h), or NULL;
				       borrowed until js_local_free */
	/* Every event, as it happens (events.log has them too). */
	void (*on_event)(void *ctx, const struct js_local_event *e);
	void (*on_view)(void *ctx, const struct js_local_view *view);
	js_pod_line_fn on_line;     /* every container output line, or NULL */
	void *ctx;
};

/**
 * Prepare a run of `js` (validated and defaulted; borrowed, copied) in
 * opts->run_dir (prepared with js_rundir_prepare). Gives the JobSet a uid
 * and creationTimestamp when it has none, and takes the run directory's
 * lock. Returns 0 and *ret_local (free with js_local_free), -EBUSY when
 * another runner holds the lock, or -errno when the run directory cannot be
 * written.
 */
JS_WARN_UNUSED int js_local_new(const struct js_jobset *js, const struct js_local_opts *opts,
				struct js_local **ret_local);

/**
 * Free a run and everything it holds. NULL is a no-op.
 * Returns 0, or -EBUSY (nothing freed) when called while js_local_run is
 * running - from one of the run's own callbacks - since its loop still
 * uses every part of it (lifecycle contract, docs/design.md).
 */
int js_local_free(struct js_local *l);

/**
 * Run until the JobSet is Completed or Failed and every process is gone, or
 * until interrupted and every process is gone, or until nothing is left that
 * could ever change the state (JS_LOCAL_STALLED: no process, output or timer
 * remains, even after reconciling again; the run never blocks forever). Writes jobset.json and
 * jobs.json. Returns 0 and *ret_result, -EBUSY when called while the run
 * is already running (from one of its callbacks), or -errno when the loop
 * itself failed (its processes are killed first).
 */
JS_WARN_UNUSED int js_local_run(struct js_local *l, enum js_local_result *ret_result);

/**
 * Fill *ret with the signals js_local_run takes as an interrupt of the run
 * (SIGINT, SIGTERM, SIGHUP): the set it blocks and reads while it runs, and
 * the set a caller that exits after the run keeps blocked so that a late
 * one cannot kill it during its cleanup. No errors.
 */
void js_local_interrupts(sigset_t *ret);

/** Every Job and pod of the run with its final status, as written to
 * jobs.json (a v1 List). Borrowed until js_local_free; NULL before
 * js_local_run returned. */
const json_t *js_local_results(const struct js_local *l);

/** The JobSet with its current status. Borrowed until js_local_free. */
const struct js_jobset *js_local_jobset(const struct js_local *l);

/** The sandbox mode in use and, when degraded, why (static, or NULL). */
enum js_sandbox_mode js_local_sandbox(const struct js_local *l, const char **ret_why);

/** Duration of the run so far (monotonic), milliseconds. */
int64_t js_local_elapsed_ms(const struct js_local *l);

/* The waits for all-ready a summary lists (later ones are only counted). */
#define JS_LOCAL_MAX_READIES 32

/** The run's phases and goodput, from the same accountant as the
 * controller's metrics (core/phase.h; docs/metrics.md), fed the JobSet as
 * each reconcile leaves it, on the monotonic clock. */
struct js_local_phases {
	struct js_phase_summary sum;  /* up to the end of the run, or now */
	size_t n_readies;             /* waits for all-ready that ended */
	struct js_phase_ready readies[JS_LOCAL_MAX_READIES]; /* the first ones */
};

/** Fill *out with the run's phase summary (see struct js_local_phases). */
void js_local_phases(const struct js_local *l, struct js_local_phases *out);

/**
 * The summary as JSON, the one format of jobset.json's "phaseSummary" and
 * `jobset run -o json`: {"pendingSeconds", "runningSeconds",
 * "restartingSeconds", "suspendedSeconds", "wallSeconds", "goodput",
 * "restarts", "timeToAllReady": [{"trigger", "seconds"}...]}. New
 * reference.
 */
json_t *js_local_phases_json(const struct js_local_phases *p);

/** Check every pod template of `js` before anything starts (a container
 * without command, unsupported env sources, volumes: local/volumes.h,
 * against opts->objects; GPUs: local/gpu.h, against opts->gpus; in
 * container mode a container needs an image, not a command; `opts` may be
 * NULL). Returns 0, or JS_EINVALID and
 * *ret_err (caller frees) naming the ReplicatedJob and container. */
JS_WARN_UNUSED int js_local_preflight(const struct js_jobset *js, const struct js_local_opts *opts, char **ret_err);

#endif
