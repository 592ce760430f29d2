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
 * Files under the run directory: logs/<pod>/<container>.log, events.log,
 * hosts (the shared hosts file), and at the end jobset.json (the JobSet with
 * its final status) and jobs.json (every Job with its final status).
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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/jobset.h"
#include "base/common.h"
#include "local/pod.h"

struct js_local;

/** Counters of one ReplicatedJob for the live view. */
struct js_local_rjob_view {
	const char *name;
	int32_t replicas;
	int32_t jobs_active, jobs_succeeded, jobs_failed;
	int32_t pods_active, pods_ready, pods_succeeded, pods_failed;
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
	const struct js_publish *publish; /* --publish, listening sockets
				       bound; borrowed until js_local_free */
	size_t n_publish;
	struct js_gates gates;      /* feature gates for the reconcile core
				       (the same ones validation used) */
	/* Every event as text; `now_ms` is wall-clock Unix milliseconds,
	 * for display (deadlines inside the runtime are monotonic). */
	void (*on_event)(void *ctx, int64_t now_ms, const char *text);
	void (*on_view)(void *ctx, const struct js_local_view *view);
	js_pod_line_fn on_line;     /* every container output line, or NULL */
	void *ctx;
};

/**
 * Prepare a run of `js` (validated and defaulted; borrowed, copied). Gives the
 * JobSet a uid and creationTimestamp when it has none. Returns 0 and
 * *ret_local (free with js_local_free) or -errno when the run directory
 * cannot be created.
 */
JS_WARN_UNUSED int js_local_new(const struct js_jobset *js, const struct js_local_opts *opts,
				struct js_local **ret_local);

/** Free a run. NULL is a no-op. Returns NULL. */
struct js_local *js_local_free(struct js_local *l);

/**
 * Run until the JobSet is Completed or Failed and every process is gone, or
 * until interrupted and every process is gone, or until nothing is left that
 * could ever change the state (JS_LOCAL_STALLED: no process, output or timer
 * remains, even after reconciling again; the run never blocks forever). Writes jobset.json and
 * jobs.json. Returns 0 and *ret_result, or -errno when the loop itself
 * failed (its processes are killed first).
 */
JS_WARN_UNUSED int js_local_run(struct js_local *l, enum js_local_result *ret_result);

/** The JobSet with its current status. Borrowed until js_local_free. */
const struct js_jobset *js_local_jobset(const struct js_local *l);

/** The sandbox mode in use and, when degraded, why (static, or NULL). */
enum js_sandbox_mode js_local_sandbox(const struct js_local *l, const char **ret_why);

/** Duration of the run so far (monotonic), milliseconds. */
int64_t js_local_elapsed_ms(const struct js_local *l);

/** Check every pod template of `js` before anything starts (a container
 * without command, unsupported env sources). Returns 0, or JS_EINVALID and
 * *ret_err (caller frees) naming the ReplicatedJob and container. */
JS_WARN_UNUSED int js_local_preflight(const struct js_jobset *js, char **ret_err);

#endif
