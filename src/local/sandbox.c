/*
 * sandbox.c - one container process (see sandbox.h).
 *
 * The child side runs between clone() and execve() in the runner's own
 * memory (CLONE_VM, as posix_spawn does): it only makes system calls on
 * buffers the parent prepared, on a stack of its own, then reports the
 * failing step and errno through a close-on-exec pipe if anything fails.
 * A zero-byte read on that pipe means execve succeeded.
 *
 * Why shared memory rather than a copy: a fork copies the page tables of
 * the runner (megabytes of heap), marks its pages copy-on-write (every
 * page the runner writes next faults), and the child tears the copy down
 * again at exec; profiled with 256 pods, that was ~40 % of the runner's
 * own CPU and more in the children. The price is CLONE_VFORK: sharing the
 * memory, the runner must stay still until the child has exec'd (or
 * exited), that is for the child's few system calls before execve and the
 * kernel's part of execve up to the switch to the new program - not for
 * the program to start, nor for the report, which is still read later.
 */
#include "local/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* Steps the child can fail at, reported to the parent by number. */
static const char *const stages[] = {
	"pdeathsig", "runner gone", "signal mask", "uid map", "join the pod's network", "mount private",
	"mount /etc/hosts", "sethostname", "setpgid", "stdio", "chdir", "exec", "mount volumes",
};
enum { ST_PDEATH, ST_GONE, ST_SIGMASK, ST_UIDMAP, ST_NETNS, ST_PRIVATE, ST_HOSTS, ST_HOSTNAME, ST_PGID, ST_STDIO,
       ST_CHDIR, ST_EXEC, ST_MOUNTS };

struct report {
	int stage;
	int err;
};

/** Everything the child needs, prepared before clone(). */
struct prep {
	char uid_map[64], gid_map[64];
};

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

static _Noreturn void child_fail(int err_fd, int stage)
{
	struct report r = {stage, errno};
	if (write(err_fd, &r, sizeof(r)) < 0) {
		/* nothing left to tell the parent with */
	}
	_exit(127);
}

static _Noreturn void child(const struct js_sandbox_spec *s, const struct prep *p, int err_fd)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		child_fail(err_fd, ST_PDEATH);
	/* In a new PID namespace getppid() is 0, so the usual check cannot tell
	 * whether the runner died before the prctl: the death pipe can. */
	if (s->death_fd >= 0) {
		struct pollfd pfd = {.fd = s->death_fd, .events = POLLIN};
		if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLERR))) {
			errno = ESRCH;
			child_fail(err_fd, ST_GONE);
		}
	}
	sigset_t none;
	sigemptyset(&none);
	if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
		child_fail(err_fd, ST_SIGMASK);
	signal(SIGPIPE, SIG_DFL);
	if (s->mode == JS_SANDBOX_USERNS) {
		if (write_file("/proc/self/setgroups", "deny") < 0 || write_file("/proc/self/uid_map", p->uid_map) < 0 ||
		    write_file("/proc/self/gid_map", p->gid_map) < 0)
			child_fail(err_fd, ST_UIDMAP);
	}
	if (s->netns_fd >= 0 && setns(s->netns_fd, CLONE_NEWNET) < 0)
		child_fail(err_fd, ST_NETNS);
	if (s->mode != JS_SANDBOX_NONE) {
		/* Private first, so the bind mount never reaches the host. */
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			child_fail(err_fd, ST_PRIVATE);
		int mr = js_mounts_apply(s->mounts);
		if (mr < 0) {
			errno = -mr;
			child_fail(err_fd, ST_MOUNTS);
		}
		if (s->hosts_file && mount(s->hosts_file, "/etc/hosts", NULL, MS_BIND, NULL) < 0)
			child_fail(err_fd, ST_HOSTS);
		if (s->hostname && sethostname(s->hostname, strlen(s->hostname)) < 0)
			child_fail(err_fd, ST_HOSTNAME);
	}
	if (setpgid(0, 0) < 0)
		child_fail(err_fd, ST_PGID);
	int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(s->out_fd, 1) < 0 || dup2(s->out_fd, 2) < 0)
		child_fail(err_fd, ST_STDIO);
	if (s->cwd && chdir(s->cwd) < 0)
		child_fail(err_fd, ST_CHDIR);
	execve(s->path, s->argv, s->envp);
	child_fail(err_fd, ST_EXEC);
}

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define SANDBOX_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define SANDBOX_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* The child's stack: its deepest call is a mount step (a statfs). */
#define SANDBOX_STACK (64 * 1024)

struct child_args {
	const struct js_sandbox_spec *s;
	const struct prep *p;
	int err_fd, close_fd;
};

static int child_main(void *arg)
{
	const struct child_args *a = arg;
	close(a->close_fd);
	child(a->s, a->p, a->err_fd);
}

int js_sandbox_start(const struct js_sandbox_spec *spec, pid_t *ret_pid, int *ret_report_fd, const char **ret_stage)
{
	struct prep p;
	snprintf(p.uid_map, sizeof(p.uid_map), "%u %u 1\n", (unsigned)geteuid(), (unsigned)geteuid());
	snprintf(p.gid_map, sizeof(p.gid_map), "%u %u 1\n", (unsigned)getegid(), (unsigned)getegid());
	unsigned long flags = SIGCHLD;
	if (spec->mode != JS_SANDBOX_NONE)
		flags |= CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWPID;
	if (spec->mode == JS_SANDBOX_USERNS)
		flags |= CLONE_NEWUSER;

	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		if (ret_stage)
			*ret_stage = "pipe";
		return -errno;
	}
	/* The child's stack: this frame's, which stays put while the runner
	 * is suspended (CLONE_VFORK) and is not used after the child exec'd
	 * or exited. */
	_Alignas(64) char stack[SANDBOX_STACK];
	struct child_args args = {.s = spec, .p = &p, .err_fd = pipefd[1], .close_fd = pipefd[0]};
	int pid = clone(child_main, stack + sizeof(stack), (int)(flags | CLONE_VM | CLONE_VFORK), &args);
	/* Under AddressSanitizer the child's frames left their redzones
	 * poisoned in the shadow of this shared stack (it exec'd, it never
	 * returned): clear them before this thread's own frames land there. */
	SANDBOX_UNPOISON(stack, sizeof(stack));
	if (pid < 0) {
		int err = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		if (ret_stage)
			*ret_stage = "clone";
		return err;
	}
	close(pipefd[1]);
	(void)fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
	*ret_pid = (pid_t)pid;
	*ret_report_fd = pipefd[0];
	return 0;
}

int js_sandbox_started(int report_fd, const char **ret_stage)
{
	struct report r;
	ssize_t n;
	do
		n = read(report_fd, &r, sizeof(r));
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return 0; /* closed on exec */
	if (n < 0 && errno == EAGAIN)
		return -EAGAIN;
	/* The report is written in one piece, before the child exits. */
	if (n != (ssize_t)sizeof(r) || r.stage < 0 || r.stage >= (int)JS_ARRAY_SIZE(stages)) {
		if (ret_stage)
			*ret_stage = "report";
		return -EIO;
	}
	if (ret_stage)
		*ret_stage = stages[r.stage];
	return r.err > 0 ? -r.err : -EIO;
}

int js_sandbox_spawn(const struct js_sandbox_spec *spec, pid_t *ret_pid, const char **ret_stage)
{
	pid_t pid;
	int fd;
	int r = js_sandbox_start(spec, &pid, &fd, ret_stage);
	if (r < 0)
		return r;
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	while ((r = js_sandbox_started(fd, ret_stage)) == -EAGAIN) {
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
	}
	close(fd);
	if (r == 0) {
		*ret_pid = pid;
		return 0;
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
	}
	return r;
}

enum js_sandbox_mode js_sandbox_probe(const char *probe_path, const char **ret_why)
{
	static const enum js_sandbox_mode order[] = {JS_SANDBOX_NS, JS_SANDBOX_USERNS};
	const char *why = "namespaces unavailable";
	int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null_fd < 0) {
		if (ret_why)
			*ret_why = "cannot open /dev/null";
		return JS_SANDBOX_NONE;
	}
	char *argv[] = {(char *)(uintptr_t)probe_path, NULL};
	char *envp[] = {NULL};
	for (size_t i = 0; i < JS_ARRAY_SIZE(order); i++) {
		struct js_sandbox_spec s = {.path = probe_path, .argv = argv, .envp = envp, .hostname = "probe",
					    .hosts_file = "/etc/hosts", .netns_fd = -1, .out_fd = null_fd,
					    .death_fd = -1, .mode = order[i]};
		pid_t pid;
		const char *stage = NULL;
		if (js_sandbox_spawn(&s, &pid, &stage) < 0) {
			why = stage;
			continue;
		}
		int status = 0;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
		}
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			close(null_fd);
			return order[i];
		}
	}
	close(null_fd);
	if (ret_why)
		*ret_why = why;
	return JS_SANDBOX_NONE;
}

int js_sandbox_kill(pid_t pid, enum js_sandbox_mode mode, int sig)
{
	if (pid <= 0)
		return -ESRCH;
	/* A PID namespace's init ignores signals it has no handler for, except
	 * SIGKILL from outside - the same as a container's PID 1. */
	pid_t target = mode == JS_SANDBOX_NONE && sig == SIGKILL ? -pid : pid;
	return kill(target, sig) < 0 ? -errno : 0;
}

const char *js_sandbox_mode_name(enum js_sandbox_mode mode)
{
	switch (mode) {
	case JS_SANDBOX_NS:
		return "namespaces";
	case JS_SANDBOX_USERNS:
		return "user namespaces";
	case JS_SANDBOX_NONE:
		break;
	}
	return "none (degraded)";
}
