/*
 * local_int.h - what the files of src/local share about a run and nothing
 * outside the folder may include (STYLE #1): the run's state (struct
 * js_local, struct ljob) and the functions local.c and report.c call across.
 *
 * local.c owns the loop and the plan's execution; report.c owns what a run
 * tells: events, the pods' and Jobs' outcome events, the results files and
 * the live state file. Not thread-safe: the runner's one thread.
 */
#ifndef JS_LOCAL_INT_H
#define JS_LOCAL_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "core/job.h"
#include "local/local.h"
#include "local/net.h"
#include "local/pod.h"

struct ljob {
	json_t *obj;          /* batch/v1 Job with status */
	const struct js_obsjob *rec; /* what the core reads of `obj`, decoded
				        once per change of `obj`; NULL: stale */
	char *name;
	bool deleting;
	int64_t wake_ms;      /* jobctl's next deadline, -1 none */
	size_t n_pods;
	struct js_pod **pods;
	bool reported_finish;
	bool reported_sync_error;
};

struct js_local {
	struct js_jobset *js;
	struct js_local_opts opts;
	char *run_dir, *log_dir, *hosts_path;
	struct js_pod_host host;
	const char *sandbox_why;
	char *path_env, *home_env, *node_name;

	size_t n_jobs;
	struct ljob *jobs;
	json_t *history;      /* final JSON of removed Jobs */
	json_t *pod_history;  /* final JSON of the pods of removed Jobs */
	json_t *results;      /* jobs.json, once the run ended */
	bool service_exists;
	char *workdir;        /* the pods' shared working directory, or NULL */
	char *state_path;     /* state.json */
	bool state_dirty;     /* something changed since it was written */
	int64_t state_ms;     /* monotonic time of its last write, -1 never */
	int lock_fd, ctl_rd, ctl_wr;
	struct js_buf ctl_line; /* a control command being read */
	const char *interrupt_why; /* static: "SIGINT", "jobset down", ... */
	int64_t interrupt_ms;      /* when the first interrupt came (monotonic) */
	const char *ev_type;  /* the JobSet event held back (flush_jobset_event) */
	char *ev_message;
	struct js_buf ev_reasons;
	char **pvcs;          /* claims created: a directory each under
				 <run_dir>/volumes (issue 11) */
	size_t n_pvcs;
	char *scratch_dir;    /* <run_dir>/.mnt, empty: mounts are built
				 there (local/mounts.h) */
	struct js_container *ctrt; /* container mode: the runtime and the
				 run's network (local/container.h) */
	bool gpu_wait_reported; /* a pod waits for GPUs, and it was said */
	uint64_t plan_sig;    /* actions of the last plan, hashed */
	int same_plans;       /* consecutive plans equal to it with nothing
				 observed changing in between */
	bool observed_change; /* pods or Jobs changed since the last plan */
	uint64_t next_pod_id;
	struct js_net *net;   /* the run's network (local/net.h) */
	uint64_t rng;

	int death_rd, death_wr, sig_fd, events_fd;
	int64_t start_ms;     /* monotonic */
	int64_t start_wall_ms;
	int64_t turn_ms;      /* monotonic time of the turn applying a plan */
	int64_t requeue_ms;   /* next reconcile by time (monotonic), -1 none */
	bool dirty;           /* something changed since the last reconcile */
	bool resync;          /* pods changed after their Job's sync read them */
	bool stall_pass;      /* a turn forced by the stall check is under way */
	bool stalled;         /* the stall check ended the run */
	int interrupts;
	bool running;         /* inside js_local_run (lifecycle contract) */
	int64_t last_view_ms;
	/* Phase accounting (core/phase.h), monotonic ms. */
	struct js_phase_acct phases;
	int64_t end_ms;       /* the run ended (monotonic), or -1 */
	size_t n_readies;
	struct js_phase_ready readies[JS_LOCAL_MAX_READIES];
};

/* ---- report.c ---- */

/** Record an event about `kind`/`name` ("pod", "job", "jobset", ...):
 * events.log, then the CLI's callback; marks the state file stale. */
void js__report_event(struct js_local *l, const char *type, const char *reason, const char *kind, const char *name,
		      const char *fmt, ...) JS_PRINTF(6, 7);

/** The event of a pod that reached Succeeded or Failed since `before`, with
 * every exit code and reason (Completed, Failed, or Stopped for a pod
 * deleted while it ran). Nothing when the phase did not change. */
void js__report_pod_finished(struct js_local *l, const struct js_pod *p, enum js_jobctl_phase before);

/** The Job's outcome as an event, once, when it is decided (FailureTarget
 * or SuccessCriteriaMet), so it comes before the JobSet's reaction. */
void js__report_job_outcome(struct js_local *l, struct ljob *j);

/** "Starting", "Running", "Stopping", "Completed", "Failed" (static). */
const char *js__report_run_state(const struct js_local *l);

/** Write jobset.json and jobs.json (and keep the List as l->results).
 * Returns 0 or the first -errno. */
int js__report_results(struct js_local *l);

/** Write state.json if it is stale and JS_LOCAL_STATE_INTERVAL_MS passed
 * since the last write (`t`, monotonic ms), or at once when `final` names
 * how the run ended. */
void js__report_state(struct js_local *l, int64_t t, const char *final);

#endif
