/*
 * sandbox.h - start one container process the way a node would: its own
 * hostname and /etc/hosts (UTS and mount namespaces), its own PID namespace
 * (so everything it forks dies with it), stdout and stderr into a pipe,
 * stdin from /dev/null, the working directory set, and killed by the kernel
 * if the runner dies (PR_SET_PDEATHSIG, checked against a death pipe to
 * close the race with a parent that died first).
 *
 * A container joins its pod's network namespace (setns) when given one:
 * the runner holds pod namespaces by fd (local/net.h). That needs the
 * namespace's owner to be the runner's user namespace, so it works in
 * JS_SANDBOX_NS, not in JS_SANDBOX_USERNS (whose fresh user namespace has no
 * rights over it); an unprivileged runner enters a user namespace itself
 * first (net.h) and then probes as JS_SANDBOX_NS.
 *
 * Children are started with clone() + execve() only: the child runs a short
 * list of system calls prepared by the parent (no allocation) and execs, so
 * the runner never keeps forked copies of itself. The child runs in the
 * runner's memory until its exec (CLONE_VM|CLONE_VFORK, as posix_spawn:
 * no page tables copied), so the calling thread is suspended for those
 * few system calls, and the process must have no signal handlers (SIG_DFL
 * and SIG_IGN only: a handler would run in the child on the runner's
 * memory; the runner takes its signals through a signalfd).
 *
 * Three modes, probed once per run (js_sandbox_probe):
 *  - JS_SANDBOX_NS: mount + UTS + PID namespaces (the runner is root);
 *  - JS_SANDBOX_USERNS: the same inside a new user namespace that maps the
 *    caller's uid and gid to themselves (unprivileged runners);
 *  - JS_SANDBOX_NONE: degraded - no namespaces; the process gets its own
 *    process group, the runner's hostname and /etc/hosts. Names of pods then
 *    resolve only through the hosts file path in $JOBSET_HOSTS_FILE.
 *
 * Not thread-safe: call from the runner's single thread.
 */
#ifndef JS_SANDBOX_H
#define JS_SANDBOX_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/common.h"
#include "local/mounts.h"

enum js_sandbox_mode {
	JS_SANDBOX_NONE,
	JS_SANDBOX_NS,
	JS_SANDBOX_USERNS,
};

/** What to start. Every pointer is borrowed for the duration of the call. */
struct js_sandbox_spec {
	const char *path;       /* executable, absolute or relative to cwd */
	char *const *argv;      /* NULL-terminated */
	char *const *envp;      /* NULL-terminated; the whole environment */
	const char *cwd;        /* working directory, or NULL to inherit */
	const char *hostname;   /* UTS hostname, or NULL (ignored in NONE) */
	const char *hosts_file; /* bind-mounted on /etc/hosts, or NULL
				   (ignored in NONE) */
	const struct js_mounts *mounts; /* volume mounts (local/mounts.h),
				   or NULL; needs a mode other than NONE */
	int netns_fd;           /* network namespace to join, or -1 to stay
				   in the runner's (0 is not "none": set it) */
	int out_fd;             /* becomes fds 1 and 2 */
	int death_fd;           /* read end of the runner's death pipe, or -1 */
	enum js_sandbox_mode mode;
};

/**
 * Start a process without waiting for its exec's outcome, so a runner
 * starting many overlaps their program's start with its own work: the call
 * returns once the child is in execve (or failed a step before). Returns 0, *ret_pid and
 * *ret_report_fd: the read end of the process's report pipe (non-blocking,
 * close-on-exec; the caller closes it), readable when the process exec'd
 * (end of file) or failed a step before (js_sandbox_started says which).
 * A process that failed exits with status 127 by itself; reap it as any.
 * Failures before a process exists: -errno with *ret_stage ("pipe",
 * "clone"), and nothing to reap.
 */
JS_WARN_UNUSED int js_sandbox_start(const struct js_sandbox_spec *spec, pid_t *ret_pid, int *ret_report_fd,
				    const char **ret_stage);

/**
 * How the start behind `report_fd` went: 0 it exec'd, -EAGAIN not known
 * yet (poll the fd), or -errno of the step that failed with *ret_stage (if
 * not NULL) a static word naming it ("exec", "mount /etc/hosts",
 * "sethostname", ..., "report" for a garbled report: -EIO). Once the
 * process has exited the answer is final: it writes its report before.
 */
JS_WARN_UNUSED int js_sandbox_started(int report_fd, const char **ret_stage);

/**
 * Start a process and wait for its exec: js_sandbox_start, then
 * js_sandbox_started until it knows. On success returns 0 and sets *ret_pid.
 * On failure returns -errno, sets *ret_stage (if not NULL) to the step that
 * failed, and no process is left behind (it was reaped).
 */
JS_WARN_UNUSED int js_sandbox_spawn(const struct js_sandbox_spec *spec, pid_t *ret_pid, const char **ret_stage);

/**
 * Find the strongest mode that works here by starting `probe_path` (an
 * executable that exits 0, e.g. /bin/true) in each. Returns the mode; when it
 * is JS_SANDBOX_NONE, *ret_why (if not NULL) names what failed (static).
 */
enum js_sandbox_mode js_sandbox_probe(const char *probe_path, const char **ret_why);

/** Send `sig` to the container: to its PID namespace's init (NS modes) or to
 * its process group (NONE). SIGKILL of the init kills the whole namespace.
 * Returns 0 or -errno. */
int js_sandbox_kill(pid_t pid, enum js_sandbox_mode mode, int sig);

/** "namespaces", "user namespaces", "none (degraded)" (static). */
const char *js_sandbox_mode_name(enum js_sandbox_mode mode);

#endif
