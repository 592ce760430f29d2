/*
 * runinfo.h - a run directory as the commands that look at a run read it
 * (`jobset ps`, `describe`, `logs`, `down`, `evict`): which directory
 * (--run-dir, else $JOBSET_RUN_DIR, else the last run started by this user,
 * local/rundir.h), its live state file state.json (local/local.h), whether
 * its runner is live, and finding a pod by name, hostname or prefix.
 *
 * Functions that print do so on stderr, prefixed "jobset CMD: ", and return
 * a process exit code (cli.h); the others return data. Not thread-safe.
 */
#ifndef JS_CLI_RUNINFO_H
#define JS_CLI_RUNINFO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

/** The options of the commands on a run; each takes those it names in
 * `accept`: d (-d, --run-dir), o (-o), f (-f), c (-c), t (--tail), T
 * (--timeout). */
struct js_cli_runopts {
	const char *dir;       /* -d, --run-dir */
	bool json;             /* -o json */
	bool follow;           /* -f */
	int64_t tail;          /* --tail N, -1 when not given */
	const char *container; /* -c */
	int64_t timeout_s;     /* --timeout S, -1 when not given */
};

/** Parse argv for command `cmd` into *ret, refusing options not in
 * `accept`. Returns -1 to go on, else the exit code (after -h, or a usage
 * error, both printed). */
int js_cli_runinfo_args(const char *cmd, const char *usage, const char *accept, int argc, char **argv,
			struct js_cli_runopts *ret);

/** One run, read. */
struct js_cli_runinfo {
	const char *cmd;   /* for messages: "ps", "logs", ... */
	char *dir;         /* the run directory */
	json_t *state;     /* state.json; NULL while it does not exist yet */
	bool live;         /* a runner holds the directory's lock */
};

/** Print a usage error of command `cmd` on stderr: "jobset CMD: " and the
 * printf-formatted message on one line, then the synopsis (the first line of
 * `usage`) and where the full help is. Returns JS_EXIT_USAGE. */
int js_cli_runinfo_usage(const char *cmd, const char *usage, const char *fmt, ...) JS_PRINTF(3, 4);

/** Check that argv has `want` (0 or 1: the POD) operands left after the
 * options (from optind). Returns -1 when it has, else prints a usage error
 * (js_cli_runinfo_usage) and returns JS_EXIT_USAGE. */
int js_cli_runinfo_operands(const char *cmd, const char *usage, int argc, char **argv, int want);

/** Open the run in `dir` (NULL: $JOBSET_RUN_DIR, else the last run) and
 * read its state. Returns 0, or prints why and returns JS_EXIT_USAGE (no
 * such run). Release with js_cli_runinfo_done. */
int js_cli_runinfo_open(const char *cmd, const char *dir, struct js_cli_runinfo *ret);

/** Read state.json and the runner's liveness again. Returns 0, or -errno
 * (the previous state is kept). */
int js_cli_runinfo_reload(struct js_cli_runinfo *ri);

/** Release what `ri` holds. */
void js_cli_runinfo_done(struct js_cli_runinfo *ri);

/**
 * The pod `query` names in the state: its exact name, else the newest pod
 * whose hostname it is (the Indexed pod `NAME-rjob-J-I` across restarts),
 * else the only pod whose name starts with it. Returns a borrowed pointer
 * into ri->state, or NULL after printing why (none, or ambiguous).
 */
const json_t *js_cli_runinfo_pod(const struct js_cli_runinfo *ri, const char *query);

/** Like js_cli_runinfo_pod, printing nothing: NULL when no pod or several
 * match; *ret_n_prefix is the number of pods whose name starts with `query`. */
const json_t *js_cli_runinfo_find(const struct js_cli_runinfo *ri, const char *query, size_t *ret_n_prefix);

/** Whether the state is the runner's last word (runner.final in state.json):
 * the run ended and wrote its results. */
bool js_cli_runinfo_final(const struct js_cli_runinfo *ri);

/** Whether the state is stale: no runner is live and it never wrote a final
 * state (it was killed), so what the state says of running pods is no longer
 * known, as of pods on a lost node. */
bool js_cli_runinfo_stale(const struct js_cli_runinfo *ri);

/**
 * Container mode (runner.containers in the state): what the runtime still
 * holds of a run whose runner died (js_cli_runinfo_stale), found by the
 * run's label; with `remove` (`jobset down`) removed first. Prints one line
 * on stdout saying what is left (or was removed, and what is still left).
 * Returns 0 when nothing is left or the run is not such a run, 1 when
 * something is left, -1 when the runtime could not be asked (printed on
 * stderr).
 */
int js_cli_runinfo_leftovers(const struct js_cli_runinfo *ri, bool remove);

/** A pod's STATUS as `kubectl get pods` words it (Running, Completed,
 * Error, Init:0/1, CrashLoopBackOff, ContainerCreating, Terminating), plus Stopped and Evicted
 * for pods the local runtime stopped. Written into buf (n bytes). */
const char *js_cli_runinfo_pod_status(const json_t *pod, char *buf, size_t n);

/** "Exited (N)" (compose's words) for a finished pod: the first container
 * that exited non-zero, else 0; "" while it runs. Written into buf. */
const char *js_cli_runinfo_pod_exit(const json_t *pod, char *buf, size_t n);

/** Seconds since an RFC 3339 time as "5s", "3m", "2h", "4d" into buf. */
const char *js_cli_runinfo_age(const char *rfc3339, char *buf, size_t n);

/** Log file of a container of a pod in the run: <dir>/logs/<pod>/<ctr>.log.
 * Caller frees. */
char *js_cli_runinfo_log_path(const struct js_cli_runinfo *ri, const char *pod, const char *ctr);

#endif
