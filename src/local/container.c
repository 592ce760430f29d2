/*
 * container.c - container mode (see container.h): the runtime's client as
 * a child process, its argv built here.
 */
#include "local/container.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/json.h"
#include "local/ipam.h"

/* Output of one client command kept for messages. */
#define CONTAINER_OUT_MAX (64u * 1024u)
/* Second octets tried for the run's /16: 10.244.0.0/16 to 10.253.0.0/16. */
#define CONTAINER_NET_FIRST 244
#define CONTAINER_NET_LAST 253
/* Pods made at once: twice the processors, within these bounds. */
#define CONTAINER_MAKE_MIN 4
#define CONTAINER_MAKE_MAX 16
/* Rounds of the leftovers' removal after a runner died: a command the
 * runner had started (a pod being made) may add one after a round. */
#define CONTAINER_REAP_ROUNDS 3

extern char **environ;

/* exec's argv is `char *const *` for history's sake: nothing writes to it. */
static char *unc(const char *s)
{
	return (char *)(uintptr_t)s;
}

static const char *const runtime_names[JS_CONTAINER__COUNT] = {"process", "podman", "docker"};
static const char *const pull_names[JS_CONTAINER_PULL__COUNT] = {"never", "missing"};

const char *js_container_runtime_to_string(enum js_container_runtime r)
{
	return r >= 0 && r < JS_CONTAINER__COUNT ? runtime_names[r] : "?";
}

enum js_container_runtime js_container_runtime_from_string(const char *s)
{
	for (int i = 0; s && i < JS_CONTAINER__COUNT; i++) {
		if (strcmp(s, runtime_names[i]) == 0)
			return (enum js_container_runtime)i;
	}
	return JS_CONTAINER__INVALID;
}

const char *js_container_pull_to_string(enum js_container_pull p)
{
	return p >= 0 && p < JS_CONTAINER_PULL__COUNT ? pull_names[p] : "?";
}

enum js_container_pull js_container_pull_from_string(const char *s)
{
	for (int i = 0; s && i < JS_CONTAINER_PULL__COUNT; i++) {
		if (strcmp(s, pull_names[i]) == 0)
			return (enum js_container_pull)i;
	}
	return JS_CONTAINER_PULL__INVALID;
}

/* What the runtime is doing with a pod of the run. */
enum rstage {
	RP_CREATING, /* `pod create` under way */
	RP_STARTING, /* `pod start` under way */
	RP_LIVE,     /* made: its containers may run */
	RP_REMOVING, /* `pod rm` under way after it was released */
	RP_FAILED,   /* making it failed: `pod rm` of what was half made under
			way (pid), or done and the error not yet taken */
	RP_LEFT,     /* even that removal failed: kept for js_container_free */
};

/* A pod the runtime holds: being made, made, or being removed. Its address
 * is taken until the removal is over (the infra container holds it until
 * `pod rm` has torn its network down), so no other pod may be given it
 * before. */
struct rpod {
	char *name;
	char *ip;
	enum rstage stage;
	pid_t pid;      /* its command under way, or 0 */
	int out_fd;     /* RP_CREATING, RP_STARTING: the command's output (a
			   memfd, read when it ends), else -1 */
	char *err;      /* RP_FAILED, RP_LEFT: the message not yet taken */
	bool release;   /* released while being made: removed once made */
};

struct js_container {
	enum js_container_runtime rt;
	char *path;
	char *network;
	uint32_t base;
	struct rpod *pods; /* pods being made, made, and being removed */
	size_t n_pods;
	size_t make_max;   /* pods made at once, at most */
	pid_t *helpers; /* other commands started and not yet reaped */
	size_t n_helpers;
	pid_t reaper;   /* the reaper (below), or 0 */
	int reaper_fd;  /* the write end of its pipe, or -1 */
};

/* ---- running the client ---- */

static void push(char ***v, size_t *n, char *s)
{
	*v = js_xrealloc(*v, (*n + 2) * sizeof(char *));
	(*v)[(*n)++] = s;
	(*v)[*n] = NULL;
}

void js_container_argv_free(char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}

/** Start the client with `argv` (argv[0] looked up in $PATH), stdin from
 * /dev/null, stdout and stderr into *ret_fd (a new pipe), or into `into`
 * when it is not -1, or the runner's stderr when `to_stderr`, else
 * /dev/null. */
static int spawn(char *const *argv, int *ret_fd, int into, bool to_stderr, pid_t *ret_pid)
{
	int p[2] = {-1, -1};
	if (ret_fd && pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (ret_fd) {
		posix_spawn_file_actions_adddup2(&fa, p[1], 1);
		posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	} else if (into >= 0) {
		posix_spawn_file_actions_adddup2(&fa, into, 1);
		posix_spawn_file_actions_adddup2(&fa, into, 2);
	} else if (to_stderr) {
		posix_spawn_file_actions_adddup2(&fa, 2, 1);
	} else {
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	}
	int r = posix_spawnp(ret_pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (ret_fd) {
		close(p[1]);
		if (r != 0)
			close(p[0]);
		else
			*ret_fd = p[0];
	}
	return -r;
}

/** Run the client to its end. Returns its exit status (0..255, or 256+sig
 * when killed), or -errno when it could not be started; its output (both
 * streams, bounded) goes into `out` when not NULL. */
static int run(char *const *argv, struct js_buf *out, bool to_stderr)
{
	int fd = -1;
	pid_t pid;
	int r = spawn(argv, out ? &fd : NULL, -1, to_stderr, &pid);
	if (r < 0)
		return r;
	char chunk[4096];
	ssize_t n;
	while (fd >= 0 && ((n = read(fd, chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR))) {
		if (n > 0 && js_buf_add(out, chunk, (size_t)n) < 0) {
			/* keep what fits; drain the rest */
		}
	}
	if (fd >= 0)
		close(fd);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 256 + WTERMSIG(status);
}

/** The last line of a client's output, for a message. Caller frees. */
static char *last_line(const struct js_buf *b)
{
	const char *s = js_buf_str(b);
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	size_t start = n;
	while (start && s[start - 1] != '\n')
		start--;
	return js_xstrndup(s + start, n - start);
}

/** Start the client and leave it: the runner's loop reaps it and says so
 * (js_container_reaped), or js_container_free waits for it. Returns its
 * pid, or 0 when it could not be started. */
static pid_t run_detached(struct js_container *c, char *const *argv, bool track)
{
	pid_t pid;
	if (spawn(argv, NULL, -1, false, &pid) < 0)
		return 0; /* removal is best effort: the run's label finds what is left */
	if (track) {
		c->helpers = js_xrealloc(c->helpers, (c->n_helpers + 1) * sizeof(*c->helpers));
		c->helpers[c->n_helpers++] = pid;
	}
	return pid;
}

static void rpod_drop(struct js_container *c, size_t i)
{
	struct rpod *p = &c->pods[i];
	if (p->out_fd >= 0)
		close(p->out_fd);
	free(p->name);
	free(p->ip);
	free(p->err);
	c->pods[i] = c->pods[--c->n_pods];
}

/** The last line of what a command wrote into memfd `fd` (its last
 * CONTAINER_OUT_MAX bytes), "" when there is none. Caller frees. */
static char *fd_last_line(int fd)
{
	struct js_buf b;
	js_buf_init(&b, CONTAINER_OUT_MAX);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0) {
		off_t off = st.st_size > (off_t)CONTAINER_OUT_MAX ? st.st_size - (off_t)CONTAINER_OUT_MAX : 0;
		char chunk[4096];
		ssize_t n;
		while ((n = pread(fd, chunk, sizeof(chunk), off)) > 0) {
			if (js_buf_add(&b, chunk, (size_t)n) < 0)
				break;
			off += n;
		}
	}
	char *line = last_line(&b);
	js_buf_done(&b);
	return line;
}

/** Start the next command making pod `p`: `pod create` (RP_CREATING, with
 * `hostname`) or `pod start` (RP_STARTING), its output into a new memfd
 * for the message should it fail. Not waited for: the runner's loop reaps
 * it (js_container_reaped). Returns 0, or -errno when it cannot be
 * started. */
static int make_step(struct js_container *c, struct rpod *p, enum rstage stage, const char *hostname)
{
	if (p->out_fd >= 0)
		close(p->out_fd);
	/* Without it the command still runs; its message is lost. */
	p->out_fd = memfd_create("jobset-podman", MFD_CLOEXEC);
	p->stage = stage;
	p->pid = 0;
	int r;
	if (stage == RP_CREATING) {
		char *label = js_buf_format(JS_CONTAINER_LABEL "=%s", c->network);
		char *argv[] = {c->path, (char *)"pod", (char *)"create", (char *)"--name", p->name, (char *)"--network",
				c->network, (char *)"--ip", p->ip, (char *)"--hostname", unc(hostname),
				(char *)"--no-hosts", (char *)"--label", label, NULL};
		r = spawn(argv, NULL, p->out_fd, false, &p->pid);
		free(label);
	} else {
		/* Started now, while its output is ours: the infra container's
		 * start writes notes (syslog) that would otherwise land in the
		 * first container's log. */
		char *argv[] = {c->path, (char *)"pod", (char *)"start", p->name, NULL};
		r = spawn(argv, NULL, p->out_fd, false, &p->pid);
	}
	if (r < 0)
		p->pid = 0;
	return r;
}

/** Making `p` failed (`err`, taken, or NULL when nobody wants it): remove
 * what may be half made, so that making it again finds its name free,
 * without waiting. Its address stays taken until that removal ends. */
static void make_failed(struct js_container *c, struct rpod *p, char *err)
{
	if (p->out_fd >= 0)
		close(p->out_fd);
	p->out_fd = -1;
	free(p->err);
	p->err = p->release ? (free(err), NULL) : err;
	char *rm[] = {c->path, (char *)"pod", (char *)"rm", (char *)"-f", (char *)"--ignore", p->name, NULL};
	p->pid = run_detached(c, rm, false);
	/* A released pod needs nothing more than its removal. */
	p->stage = !p->pid ? RP_LEFT : p->release ? RP_REMOVING : RP_FAILED;
}

/* A client's exit status as run() gives it: 0..255, 256+signal. */
static int exit_code(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : 256 + WTERMSIG(status);
}

/** The command making `p` ended with `status`: start its next one, or
 * record that it is made or failed. */
static void make_reaped(struct js_container *c, struct rpod *p, int status)
{
	int code = exit_code(status);
	if (code != 0) {
		char *line = fd_last_line(p->out_fd);
		char *err = js_buf_format("pod %s: %s %s exited %d: %s", p->name, c->path,
					  p->stage == RP_CREATING ? "pod create" : "pod start", code, line);
		free(line);
		make_failed(c, p, err);
	} else if (p->release) {
		make_failed(c, p, NULL); /* made, and no longer wanted */
	} else if (p->stage == RP_CREATING) {
		int r = make_step(c, p, RP_STARTING, NULL);
		if (r < 0)
			make_failed(c, p, js_buf_format("pod %s: cannot start %s: %s", p->name, c->path, js_strerror(r)));
	} else {
		close(p->out_fd);
		p->out_fd = -1;
		p->stage = RP_LIVE;
	}
}

bool js_container_reaped(struct js_container *c, pid_t pid, int status)
{
	for (size_t i = 0; c && pid > 0 && i < c->n_pods; i++) {
		struct rpod *p = &c->pods[i];
		if (p->pid != pid)
			continue;
		p->pid = 0;
		switch (p->stage) {
		case RP_CREATING:
		case RP_STARTING:
			make_reaped(c, p, status);
			break;
		case RP_REMOVING:
			rpod_drop(c, i); /* its address is free */
			break;
		case RP_FAILED:
			if (exit_code(status) != 0)
				p->stage = RP_LEFT; /* js_container_pod_make tries again */
			else if (!p->err)
				rpod_drop(c, i);
			break;
		case RP_LIVE:
		case RP_LEFT:
			break;
		}
		return true;
	}
	for (size_t i = 0; c && i < c->n_helpers; i++) {
		if (c->helpers[i] == pid) {
			c->helpers[i] = c->helpers[--c->n_helpers];
			return true;
		}
	}
	if (c && c->reaper == pid) {
		c->reaper = 0; /* killed by someone: the run's label still finds all */
		return true;
	}
	return false;
}

bool js_container_ip_busy(const struct js_container *c, const char *ip)
{
	for (size_t i = 0; i < c->n_pods; i++) {
		const struct rpod *p = &c->pods[i];
		/* A failed pod whose removal is over only keeps its message. */
		if (strcmp(p->ip, ip) == 0 && !(p->stage == RP_FAILED && p->pid == 0))
			return true;
	}
	return false;
}

size_t js_container_n_under_way(const struct js_container *c)
{
	size_t n = 0;
	for (size_t i = 0; c && i < c->n_pods; i++)
		n += c->pods[i].pid > 0;
	return n;
}

/* ---- images ---- */

static int image_present(enum js_container_runtime rt, const char *image, char **ret_err)
{
	char *argv[] = {unc(runtime_names[rt]), (char *)"image", (char *)(rt == JS_CONTAINER_PODMAN ? "exists" : "inspect"),
			unc(image), NULL};
	struct js_buf out;
	js_buf_init(&out, CONTAINER_OUT_MAX);
	int r = run(argv, &out, false);
	js_buf_done(&out);
	if (r < 0) {
		*ret_err = js_buf_format("--runtime %s: cannot start '%s': %s", runtime_names[rt], runtime_names[rt],
					 js_strerror(r));
		return JS_EINVALID;
	}
	return r == 0 ? 1 : 0;
}

int js_container_images(enum js_container_runtime rt, enum js_container_pull pull, const struct js_jobset *js,
			char **ret_err)
{
	static const char *const lists[] = {"initContainers", "containers"};
	for (size_t i = 0; i < js->spec.n_replicated_jobs; i++) {
		const struct js_rjob *rj = &js->spec.replicated_jobs[i];
		const json_t *spec = js_json_path(rj->template_, "spec.template.spec");
		for (size_t l = 0; l < 2; l++) {
			size_t k;
			json_t *c;
			json_array_foreach(json_object_get(spec, lists[l]), k, c)
			{
				const char *image = js_json_str(c, "image");
				const char *cname = js_json_str(c, "name");
				if (!image || !image[0]) {
					*ret_err = js_buf_format("spec.replicatedJobs[%zu] (%s): container '%s' has no image, "
								 "which --runtime %s needs",
								 i, rj->name, cname ? cname : "", runtime_names[rt]);
					return JS_EINVALID;
				}
				int have = image_present(rt, image, ret_err);
				if (have < 0)
					return have;
				if (have)
					continue;
				if (pull != JS_CONTAINER_PULL_MISSING) {
					*ret_err = js_buf_format("image '%s' (container '%s' of %s) is not present and is "
								 "never pulled without consent: pull it, or run with --pull "
								 "missing",
								 image, cname ? cname : "", rj->name);
					return JS_EINVALID;
				}
				char *argv[] = {unc(runtime_names[rt]), (char *)"pull", unc(image), NULL};
				if (run(argv, NULL, true) != 0) {
					*ret_err = js_buf_format("image '%s': %s pull failed", image, runtime_names[rt]);
					return JS_EINVALID;
				}
			}
		}
	}
	return 0;
}

/* ---- what a run leaves, found by its label ---- */

/** The ids `RUNTIME <what...> --filter label=io.jobset.run=NETWORK` lists,
 * pushed onto *v. Returns how many, or -errno / JS_EINVALID when the client
 * could not be started or failed. */
static int list_ids(enum js_container_runtime rt, const char *network, const char *const *what, size_t n_what,
		    char ***v, size_t *n)
{
	char **argv = NULL;
	size_t na = 0;
	push(&argv, &na, js_xstrdup(runtime_names[rt]));
	for (size_t i = 0; i < n_what; i++)
		push(&argv, &na, js_xstrdup(what[i]));
	push(&argv, &na, js_xstrdup("--filter"));
	push(&argv, &na, js_buf_format("label=" JS_CONTAINER_LABEL "=%s", network));
	struct js_buf out;
	js_buf_init(&out, CONTAINER_OUT_MAX);
	int r = run(argv, &out, false);
	js_container_argv_free(argv);
	int found = 0;
	if (r == 0) {
		const char *s = js_buf_str(&out);
		while (*s) {
			size_t len = strcspn(s, "\n");
			if (len) {
				push(v, n, js_xstrndup(s, len));
				found++;
			}
			s += len + (s[len] == '\n');
		}
	}
	js_buf_done(&out);
	return r < 0 ? r : r > 0 ? JS_EINVALID : found;
}

int js_container_leftovers(enum js_container_runtime rt, const char *network, struct js_container_left *ret)
{
	static const char *const pods[] = {"pod", "ps", "-q"}, *const ctrs[] = {"ps", "-aq"},
				 *const nets[] = {"network", "ls", "-q"};
	*ret = (struct js_container_left){0};
	int r = 0;
	if (rt == JS_CONTAINER_PODMAN)
		r = list_ids(rt, network, pods, 3, &ret->pods, &ret->n_pods);
	if (r >= 0)
		r = list_ids(rt, network, ctrs, 2, &ret->containers, &ret->n_containers);
	if (r >= 0)
		r = list_ids(rt, network, nets, 3, &ret->networks, &ret->n_networks);
	if (r < 0) {
		js_container_left_done(ret);
		return r;
	}
	return 0;
}

void js_container_left_done(struct js_container_left *l)
{
	js_container_argv_free(l->pods);
	js_container_argv_free(l->containers);
	js_container_argv_free(l->networks);
	*l = (struct js_container_left){0};
}

/** `RUNTIME <head...> ids...`, waited for. */
static void remove_ids(enum js_container_runtime rt, const char *const *head, size_t n_head, char *const *ids,
		       size_t n_ids)
{
	if (!n_ids)
		return;
	char **argv = NULL;
	size_t n = 0;
	push(&argv, &n, js_xstrdup(runtime_names[rt]));
	for (size_t i = 0; i < n_head; i++)
		push(&argv, &n, js_xstrdup(head[i]));
	for (size_t i = 0; i < n_ids; i++)
		push(&argv, &n, js_xstrdup(ids[i]));
	(void)run(argv, NULL, false);
	js_container_argv_free(argv);
}

int js_container_remove_leftovers(enum js_container_runtime rt, const char *network, struct js_container_left *ret)
{
	/* No grace: the pods' processes in process mode die with their runner
	 * at once too (PDEATHSIG). Pods first, with their containers; then
	 * containers outside pods (docker); then the network. */
	static const char *const pod_rm[] = {"pod", "rm", "-f", "-t", "0", "--ignore"},
				 *const podman_rm[] = {"rm", "-f", "-t", "0", "--ignore"}, *const docker_rm[] = {"rm", "-f"},
				 *const podman_net_rm[] = {"network", "rm", "-f", "-t", "0"},
				 *const docker_net_rm[] = {"network", "rm", "-f"};
	int r = js_container_leftovers(rt, network, ret);
	if (r < 0)
		return r;
	bool podman = rt == JS_CONTAINER_PODMAN;
	remove_ids(rt, pod_rm, JS_ARRAY_SIZE(pod_rm), ret->pods, ret->n_pods);
	if (podman)
		remove_ids(rt, podman_rm, JS_ARRAY_SIZE(podman_rm), ret->containers, ret->n_containers);
	else
		remove_ids(rt, docker_rm, JS_ARRAY_SIZE(docker_rm), ret->containers, ret->n_containers);
	if (podman)
		remove_ids(rt, podman_net_rm, JS_ARRAY_SIZE(podman_net_rm), ret->networks, ret->n_networks);
	else
		remove_ids(rt, docker_net_rm, JS_ARRAY_SIZE(docker_net_rm), ret->networks, ret->n_networks);
	return 0;
}

/**
 * The reaper: a child of the runner, forked when the network is made, that
 * outlives it. It holds the read end of a pipe whose only writer is the
 * runner (close-on-exec, so no other child keeps it). The runner writes
 * one byte when it has removed everything itself (js_container_free); when
 * the pipe ends without it, the runner died (SIGKILL, a crash) and the
 * reaper removes what the run's label finds, then exits. In its own session
 * (a Ctrl-C at the terminal is not for it), with no fd of the runner's but
 * the pipe: the runner's lock (runner.lock) must read free once the runner
 * is gone, and a pipe of the runner's output must end with the runner.
 * Forked, not exec'd: at this point of the run the runner has no thread
 * (the network and pods come after), and glibc's fork keeps malloc usable
 * in the child.
 */
static _Noreturn void reaper_main(enum js_container_runtime rt, const char *network, int fd)
{
	(void)setsid();
	sigset_t none;
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	(void)signal(SIGINT, SIG_IGN);
	(void)signal(SIGHUP, SIG_IGN);
	(void)signal(SIGPIPE, SIG_IGN);
	(void)prctl(PR_SET_NAME, "jobset-reaper");
	int null = open("/dev/null", O_RDWR);
	for (int i = 0; null >= 0 && i < 3; i++)
		(void)dup2(null, i);
	if (dup2(fd, 3) < 0)
		_exit(1);
	(void)close_range(4, ~0U, 0);
	char b;
	ssize_t n;
	while ((n = read(3, &b, 1)) < 0 && errno == EINTR) {
	}
	if (n == 1)
		_exit(0); /* the runner removed everything */
	for (int i = 0; i < CONTAINER_REAP_ROUNDS; i++) {
		struct js_container_left left;
		if (js_container_remove_leftovers(rt, network, &left) < 0)
			break;
		size_t found = left.n_pods + left.n_containers + left.n_networks;
		js_container_left_done(&left);
		if (!found)
			break;
	}
	_exit(0);
}

/** Start the reaper for `c` (its network is made). Best effort: without
 * it (no fork) the run goes on as before, its leftovers found by label by
 * `jobset ps` and removed by `jobset down`. */
static void start_reaper(struct js_container *c)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	fflush(NULL); /* nothing buffered is written twice */
	pid_t pid = fork();
	if (pid == 0)
		reaper_main(c->rt, c->network, p[0]);
	close(p[0]);
	if (pid < 0) {
		close(p[1]);
		return;
	}
	c->reaper = pid;
	c->reaper_fd = p[1];
}

/* ---- the run's network and pods ---- */

int js_container_new(enum js_container_runtime rt, struct js_container **ret, char **ret_err)
{
	struct js_container *c = js_xcalloc(1, sizeof(*c));
	c->rt = rt;
	c->reaper_fd = -1;
	/* Making a pod is mostly the client's own CPU time and podman's
	 * locks: a few at once use the processors, more only queue up. */
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	c->make_max = cpus < CONTAINER_MAKE_MIN / 2 ? CONTAINER_MAKE_MIN
		      : cpus > CONTAINER_MAKE_MAX / 2 ? CONTAINER_MAKE_MAX : (size_t)cpus * 2;
	c->path = js_xstrdup(runtime_names[rt]);
	struct js_buf err;
	js_buf_init(&err, CONTAINER_OUT_MAX);
	/* A /16 that no other network of the runtime holds (it refuses
	 * overlapping subnets): runs at once get different ones. */
	for (int b = CONTAINER_NET_FIRST; b <= CONTAINER_NET_LAST && !c->network; b++) {
		char *name = js_buf_format("jobset-%d-%d", (int)getpid(), b);
		char *subnet = js_buf_format("10.%d.0.0/16", b), *gw = js_buf_format("10.%d.0.1", b);
		char *range = js_buf_format("10.%d.128.0/17", b), *label = js_buf_format(JS_CONTAINER_LABEL "=%s", name);
		char *argv[] = {c->path, (char *)"network", (char *)"create", (char *)"--internal", (char *)"--subnet",
				subnet, (char *)"--gateway", gw, (char *)"--ip-range", range, (char *)"--label", label,
				name, NULL};
		js_buf_clear(&err);
		int r = run(argv, &err, false);
		if (r == 0) {
			c->network = name;
			c->base = ((uint32_t)10 << 24) | ((uint32_t)b << 16);
		} else {
			free(name);
		}
		free(subnet);
		free(gw);
		free(range);
		free(label);
		if (r < 0) {
			*ret_err = js_buf_format("--runtime %s: cannot start '%s': %s", runtime_names[rt], c->path,
						 js_strerror(r));
			break;
		}
	}
	if (!c->network) {
		if (!*ret_err) {
			char *line = last_line(&err);
			*ret_err = js_buf_format("%s network create: no free 10.%d-%d.0.0/16: %s", c->path,
						 CONTAINER_NET_FIRST, CONTAINER_NET_LAST, line);
			free(line);
		}
		js_buf_done(&err);
		js_container_free(c);
		return JS_EINVALID;
	}
	js_buf_done(&err);
	start_reaper(c);
	*ret = c;
	return 0;
}

struct js_container *js_container_free(struct js_container *c)
{
	if (!c)
		return NULL;
	/* Commands under way finish first: a pod being removed still holds
	 * the network. Only those the runner's loop has not reaped are
	 * waited for (a reaped pid may be another process's by now). */
	for (size_t i = 0; i < c->n_helpers; i++) {
		while (waitpid(c->helpers[i], NULL, 0) < 0 && errno == EINTR) {
		}
	}
	free(c->helpers);
	/* Pods being made are made (or not) first, then every pod not
	 * already removed goes, at once. */
	for (size_t i = 0; i < c->n_pods; i++) {
		while (c->pods[i].pid > 0 && waitpid(c->pods[i].pid, NULL, 0) < 0 && errno == EINTR) {
		}
	}
	size_t n_live = 0;
	for (size_t i = 0; i < c->n_pods; i++)
		n_live += c->pods[i].stage != RP_REMOVING;
	if (n_live && c->rt == JS_CONTAINER_PODMAN) {
		char **argv = NULL;
		size_t n = 0;
		static const char *const head[] = {"pod", "rm", "-f", "--ignore"};
		push(&argv, &n, js_xstrdup(c->path));
		for (size_t i = 0; i < 4; i++)
			push(&argv, &n, js_xstrdup(head[i]));
		for (size_t i = 0; i < c->n_pods; i++) {
			if (c->pods[i].stage != RP_REMOVING)
				push(&argv, &n, js_xstrdup(c->pods[i].name));
		}
		(void)run(argv, NULL, false);
		js_container_argv_free(argv);
	}
	if (c->network) {
		/* -f: also what is still attached (docker: the containers). */
		char *argv[] = {c->path, (char *)"network", (char *)"rm", (char *)"-f", c->network, NULL};
		(void)run(argv, NULL, false);
	}
	if (c->reaper_fd >= 0) {
		/* Everything is removed: the reaper has nothing to do. */
		char done = 'x';
		while (write(c->reaper_fd, &done, 1) < 0 && errno == EINTR) {
		}
		close(c->reaper_fd);
	}
	while (c->reaper > 0 && waitpid(c->reaper, NULL, 0) < 0 && errno == EINTR) {
	}
	while (c->n_pods)
		rpod_drop(c, 0);
	free(c->pods);
	free(c->network);
	free(c->path);
	free(c);
	return NULL;
}

uint32_t js_container_base(const struct js_container *c)
{
	return c->base;
}

const char *js_container_network(const struct js_container *c)
{
	return c->network;
}

const char *js_container_path(const struct js_container *c)
{
	return c->path;
}

enum js_container_runtime js_container_kind(const struct js_container *c)
{
	return c->rt;
}

enum js_container_pod js_container_pod_make(struct js_container *c, const char *name, const char *hostname,
					    const char *ip, char **ret_err)
{
	if (c->rt != JS_CONTAINER_PODMAN)
		return JS_CONTAINER_POD_READY;
	size_t making = 0;
	for (size_t i = 0; i < c->n_pods; i++) {
		struct rpod *p = &c->pods[i];
		bool mine = p->stage != RP_REMOVING && strcmp(p->name, name) == 0;
		if (mine && p->err) {
			*ret_err = p->err;
			p->err = NULL;
			if (p->stage == RP_FAILED && p->pid == 0)
				rpod_drop(c, i);
			return JS_CONTAINER_POD_FAILED;
		}
		if (mine && p->stage == RP_LIVE)
			return JS_CONTAINER_POD_READY;
		if (mine && p->stage == RP_LEFT) {
			/* Its removal failed: try it again before making it anew. */
			make_failed(c, p, NULL);
			return JS_CONTAINER_POD_WAITING;
		}
		if (mine)
			return JS_CONTAINER_POD_WAITING; /* being made, or removed after a failure */
		making += p->stage == RP_CREATING || p->stage == RP_STARTING || (p->stage == RP_FAILED && p->pid > 0);
	}
	/* An older pod still holds the address (woken when its removal is
	 * reaped), or enough pods are being made (woken when one is). */
	if (js_container_ip_busy(c, ip) || making >= c->make_max)
		return JS_CONTAINER_POD_WAITING;
	c->pods = js_xrealloc(c->pods, (c->n_pods + 1) * sizeof(*c->pods));
	struct rpod *p = &c->pods[c->n_pods++];
	*p = (struct rpod){.name = js_xstrdup(name), .ip = js_xstrdup(ip), .out_fd = -1};
	int r = make_step(c, p, RP_CREATING, hostname);
	if (r < 0) {
		*ret_err = js_buf_format("pod %s: cannot start %s: %s", name, c->path, js_strerror(r));
		rpod_drop(c, c->n_pods - 1);
		return JS_CONTAINER_POD_FAILED;
	}
	return JS_CONTAINER_POD_WAITING;
}

void js_container_pod_release(struct js_container *c, const char *name)
{
	for (size_t i = 0; i < c->n_pods; i++) {
		struct rpod *p = &c->pods[i];
		if (p->stage == RP_REMOVING || strcmp(p->name, name) != 0)
			continue;
		free(p->err); /* nobody will ask */
		p->err = NULL;
		p->release = true;
		if (p->stage == RP_LIVE) {
			char *argv[] = {c->path, (char *)"pod", (char *)"rm", (char *)"-f", (char *)"--ignore", p->name, NULL};
			/* Its address stays taken until the removal is reaped. */
			p->pid = run_detached(c, argv, false);
			p->stage = RP_REMOVING;
			if (p->pid <= 0)
				rpod_drop(c, i); /* nothing under way: the end of the run removes it by label */
		} else if (p->stage == RP_FAILED && p->pid == 0) {
			rpod_drop(c, i);
		}
		/* Being made: removed once its command ends (make_reaped); a
		 * failed one when its removal ends; RP_LEFT at the end of the
		 * run. */
		return;
	}
}

void js_container_kill(struct js_container *c, const char *name)
{
	char *argv[] = {c->path, (char *)"kill", (char *)"--signal", (char *)"KILL", unc(name), NULL};
	(void)run_detached(c, argv, true);
}

/* ---- a container's argv ---- */

char **js_container_argv(enum js_container_runtime rt, const char *network, const char *run_label,
			 const struct js_container_run *r)
{
	char **v = NULL;
	size_t n = 0;
	static const char *const head[] = {"run", "--rm", "--pull", "never", "--sig-proxy=true"};
	push(&v, &n, js_xstrdup(runtime_names[rt]));
	for (size_t i = 0; i < JS_ARRAY_SIZE(head); i++)
		push(&v, &n, js_xstrdup(head[i]));
	push(&v, &n, js_buf_format("--name=%s", r->name));
	push(&v, &n, js_buf_format("--label=" JS_CONTAINER_LABEL "=%s", run_label));
	if (rt == JS_CONTAINER_PODMAN) {
		push(&v, &n, js_buf_format("--pod=%s", r->pod));
		if (r->pidfile)
			push(&v, &n, js_buf_format("--pidfile=%s", r->pidfile));
	} else {
		/* docker has no pods: the network, hostname and address per
		 * container. */
		push(&v, &n, js_buf_format("--network=%s", network));
		push(&v, &n, js_buf_format("--hostname=%s", r->hostname));
		if (r->own_ip)
			push(&v, &n, js_buf_format("--ip=%s", r->ip));
	}
	if (r->hosts_file)
		push(&v, &n, js_buf_format("--volume=%s:/etc/hosts:ro", r->hosts_file));
	if (r->working_dir)
		push(&v, &n, js_buf_format("--workdir=%s", r->working_dir));
	for (size_t i = 0; r->env && r->env[i]; i++)
		push(&v, &n, js_buf_format("--env=%s", r->env[i]));
	for (size_t i = 0; i < r->n_mounts; i++)
		push(&v, &n, js_buf_format("--volume=%s:%s%s", r->mounts[i].source, r->mounts[i].target,
					   r->mounts[i].read_only ? ":ro" : ""));
	for (size_t i = 0; r->gpus && r->gpus[i]; i++)
		push(&v, &n, js_buf_format("--device=nvidia.com/gpu=%s", r->gpus[i]));
	if (r->command) {
		/* Kubernetes: command replaces ENTRYPOINT, and the image's CMD
		 * goes with it unless args are given. */
		json_t *a = json_array();
		for (size_t i = 0; i < r->n_command; i++)
			json_array_append_new(a, json_string(r->command[i]));
		char *ep = json_dumps(a, JSON_COMPACT);
		push(&v, &n, js_buf_format("--entrypoint=%s", ep));
		free(ep);
		json_decref(a);
	}
	push(&v, &n, js_xstrdup(r->image));
	for (size_t i = 0; i < r->n_args; i++)
		push(&v, &n, js_xstrdup(r->args[i]));
	return v;
}
