/*
 * rundir.h - a run's directory: where runs go by default (a root per user),
 * that each run starts in a fresh directory unless asked to reuse one, the
 * runner's lock (so every command can tell a live run from a finished one),
 * and the control FIFO through which `jobset down` and `jobset evict` reach
 * a live runner.
 *
 * Layout of a run directory (docs/local.md "Run directory"):
 *   runner.lock        held (flock) by the live runner
 *   control            FIFO the runner reads commands from (see below)
 *   state.json         live state, replaced atomically (local/local.h)
 *   events.log, logs/, hosts, hosts.d/, containers/, jobset.json, jobs.json,
 *   report.html (the run's picture, picture/html.h)
 *   work/, volumes/    the pods' files and claims: kept by --reuse-run-dir
 *
 * Control commands are single lines shorter than PIPE_BUF (so a write is
 * atomic): "down" and "evict <pod>". There is no reply channel: a command
 * watches state.json for the effect.
 *
 * Errors are returned, with a message for users where the code alone would
 * not say what to do (*ret_err, caller frees). Not thread-safe.
 */
#ifndef JS_RUNDIR_H
#define JS_RUNDIR_H

#include <stdbool.h>

#include "base/common.h"

/* Longest control line, newline included (below PIPE_BUF: atomic). */
#define JS_RUNDIR_CONTROL_MAX 512

enum js_rundir_mode {
	JS_RUNDIR_FRESH, /* create; refuse an existing non-empty directory */
	JS_RUNDIR_REUSE, /* create, or clear a previous run's logs and results
			    (work/ and volumes/ are kept) */
};

/**
 * The per-user root of default run directories: $XDG_RUNTIME_DIR/jobset when
 * that is set, else ${TMPDIR:-/tmp}/jobset-run-<uid>. Created with mode 0700
 * if missing. Returns 0 and *ret_root (caller frees), or an error with
 * *ret_err: -EPERM when it exists but is not a directory owned by this user
 * or is writable by others (another user could plant files in it), -errno
 * from mkdir.
 */
JS_WARN_UNUSED int js_rundir_root(char **ret_root, char **ret_err);

/**
 * Make `dir` ready for a new run in `mode`, creating missing parents (0755)
 * and, when it does not exist, `dir` itself with mode 0700 exactly.
 * Returns 0, or JS_EEXISTS (FRESH: it holds files), -EBUSY (a runner is
 * live in it), -errno (mkdir, removing old files), each with *ret_err.
 */
JS_WARN_UNUSED int js_rundir_prepare(const char *dir, enum js_rundir_mode mode, char **ret_err);

/** Take the runner lock of `dir` (creates runner.lock). Returns 0 and
 * *ret_fd (close it to release), -EBUSY when another runner holds it, or
 * -errno. */
JS_WARN_UNUSED int js_rundir_lock(const char *dir, int *ret_fd);

/** True when a runner holds the lock of `dir`. */
bool js_rundir_live(const char *dir);

/** Point `<root>/latest` at `dir` (atomically replaced symlink). Returns 0
 * or -errno. */
JS_WARN_UNUSED int js_rundir_set_latest(const char *root, const char *dir);

/**
 * The run directory commands default to: `<root>/latest` resolved. Returns
 * 0 and *ret_dir (caller frees), or an error with *ret_err (no run yet).
 */
JS_WARN_UNUSED int js_rundir_latest(char **ret_dir, char **ret_err);

/** Create the control FIFO of `dir` (if missing) and open it for reading,
 * non-blocking and close-on-exec. The runner also opens it for writing
 * (*ret_wr_fd) so that the read end never sees end-of-file between two
 * commands. Returns 0 or -errno. */
JS_WARN_UNUSED int js_rundir_control_open(const char *dir, int *ret_rd_fd, int *ret_wr_fd);

/** Send one command line (no newline; at most JS_RUNDIR_CONTROL_MAX - 1
 * bytes) to the runner of `dir`. Returns 0, -ESRCH when no runner is
 * live there, -E2BIG for a long line, or -errno. */
JS_WARN_UNUSED int js_rundir_control_send(const char *dir, const char *line);

#endif
