/*
 * local_int.h - what the files of src/local share about a run and nothing
 * outside the folder may include (STYLE #1): the run's state (struct
 * js_local, struct ljob) and the functions its files call across.
 *
 * local.c owns the run's lifecycle and the shared helpers; loop.c the event
 * loop (setup, poll, signals, control commands, teardown); jobs.c the Jobs
 * and their pods; exec.c the core's plan applied (core/exec.h); agents.c
 * the in-place restart agents; report.c what a run tells: events, the pods'
 * and Jobs' outcome events, the results files and the live state file.
 * Not thread-safe: the runner's one thread.
 */
#ifndef JS_LOCAL_INT_H
#define JS_LOCAL_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "core/job.h"
#include "core/reconcile.h"
#include "local/jobctl.h"
#include "local/local.h"
#include "local/net.h"
#include "local/pod.h"
#include "picture/timeline.h"

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
	/* A pod of this Job waits because the quarantine leaves too few GPUs
	 * (jobs.c take_gpus), what the core reads as a pod the scheduler
	 * cannot place (core/noroom.c): its index, the GPUs it needs, the
	 * devices not quarantined and all of them. */
	struct {
		bool waits;
		int32_t index;
		int64_t need;
		size_t usable, total;
	} noroom;
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
	int64_t watch_due_ms; /* next hang check (watchdog.c), monotonic, -1 none */
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
	/* The run's record for its picture (timeline.h, report.html). */
	struct js_timeline *timeline;
};

/* ---- local.c: the run's shared helpers ---- */

/** Monotonic milliseconds (CLOCK_MONOTONIC): every deadline, delay and
 * duration of a run is measured on it (issue 10). */
int64_t js__local_now_ms(void);

/** Wall-clock Unix milliseconds: only for what users and the status see. */
int64_t js__local_wall_ms(void);

/** Wall-clock RFC 3339 timestamp of now (21 bytes with the NUL). */
void js__local_wall_stamp(char out[21]);

/** Next value of the run's xorshift64* generator: pod name suffixes and
 * uids need variety, not secrecy. */
uint64_t js__local_rnd(struct js_local *l);

/** A fresh random version-4 uid; caller frees. */
char *js__local_new_uid(struct js_local *l);

/** mkdir -p, every component 0755. Returns 0 or -errno. */
int js__local_mkdir_p(const char *path);

/** Free the pods of `j` (their GPUs go back); the Job itself stays. */
void js__job_free_pods(struct js_local *l, struct ljob *j);

/* ---- loop.c ---- */

/** The run's loop, from setup to the end (js_local_run's body). Returns 0
 * and *ret_result, or -errno of setup or poll(2), or what writing the
 * results returned. */
int js__loop_run(struct js_local *l, enum js_local_result *ret_result);

/* ---- jobs.c ---- */

/** A pod's own events (a container restart): the js_pod_host note hook,
 * `ctx` the run. */
void js__job_pod_note(void *ctx, const struct js_pod *pod, const char *type, const char *reason,
		      const char *message);

/** `j->obj` changed: its record is decoded again before the next reconcile
 * (and only then). */
void js__job_stale(struct ljob *j);

/** Run the Job controller over `j` and its pods as they are now; the plan
 * is the caller's to act on (or not). `gone_if_deleted` leaves out the pods
 * the runner deleted, as pods deleted with their JobSet are gone on a
 * cluster (whatever their exit). Returns what js_jobctl_sync returns. */
int js__job_pass(struct js_local *l, struct ljob *j, int64_t t, bool gone_if_deleted,
		 struct js_jobctl_plan *ret_plan);

/** Sync one Job with its pods at `t` (monotonic ms): pods created and
 * deleted as the Job controller says. Returns true when its status
 * changed. */
bool js__job_sync(struct js_local *l, struct ljob *j, int64_t t);

/** The Job named `name`, or NULL. Borrowed: valid until Jobs are added or
 * collected. */
struct ljob *js__job_find(struct js_local *l, const char *name);

/** Whether every pod of `j` is gone (no process left). */
bool js__job_gone(const struct ljob *j);

/** Drop Jobs being deleted whose processes are all gone (their final JSON
 * goes to the history). Returns true when any was dropped. */
bool js__jobs_collect(struct js_local *l);

/** Start deleting `j` at `t`: its deletionTimestamp is set and every pod
 * stopped within its grace period. Idempotent. */
void js__job_delete(struct js_local *l, struct ljob *j, int64_t t);

/* ---- exec.c ---- */

/** One pass of the core over what is observed now. Returns what
 * js_reconcile_run returns (*ret_plan and *ret_err as it sets them). */
int js__exec_plan_now(struct js_local *l, struct js_plan **ret_plan, char **ret_err);

/** Reconcile at `t` (monotonic ms) and apply the plan: Jobs, Service,
 * claims, events, the requeue, and the plan's JobSet stored. */
void js__exec_reconcile(struct js_local *l, int64_t t);

/* ---- agents.c ---- */

/** The JobSet restarts in place here: gate and strategy (KEP-467). */
bool js__agents_in_place(const struct js_local *l);

/** One step of every pod's in-place restart agent at `t`. Returns true
 * when anything changed (the core must look again). */
bool js__agents_step(struct js_local *l, int64_t t);

/* ---- watchdog.c: hang detection (gate ProgressDeadline) ---- */

/** Pod `pod` of Job `job` is being made from `tmpl` (its template, the
 * caller's copy): if its ReplicatedJob has a progress deadline in effect,
 * create its heartbeat directory and add to `tmpl` the annotations in
 * effect, $JOBSET_PROGRESS_FILE in every container and, in container mode,
 * the directory's volume and mounts. Returns 0 (also when there is no
 * deadline or the gate is off) or -errno of creating the directory. */
int js__watchdog_prepare(struct js_local *l, const json_t *job, const char *pod, json_t *tmpl);

/** Check the running pods with a deadline when `changed` or when the
 * earliest deadline is due at `t` (monotonic ms); stop the pods over it
 * (condition ProgressDeadlineExceeded, a Warning event) and set
 * l->watch_due_ms to the next check. Returns true when a pod was stopped. */
bool js__watchdog_step(struct js_local *l, int64_t t, bool changed);

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

/** Write jobset.json, jobs.json (and keep the List as l->results) and the
 * run's picture, report.html, for a run that ended as `final`
 * ("Completed", "Failed", "Interrupted", "Stalled"). Returns 0 or the
 * first -errno. */
int js__report_results(struct js_local *l, const char *final);

/** Record pod `p` in the run's timeline (once, when it is final: its Job
 * collected or the run ended). */
void js__report_pod_record(struct js_local *l, const struct js_pod *p);

/** Write state.json if it is stale and JS_LOCAL_STATE_INTERVAL_MS passed
 * since the last write (`t`, monotonic ms), or at once when `final` names
 * how the run ended. */
void js__report_state(struct js_local *l, int64_t t, const char *final);

#endif
