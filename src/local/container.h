/*
 * container.h - container mode of the local runtime (`jobset run --runtime
 * podman|docker`): each pod is a pod of containers of its images, made and
 * run by the container runtime's command-line client, which the runner
 * supervises as it supervises processes.
 *
 * A run gets its own network (`jobset-<pid>-<n>`, internal: no route out,
 * like process mode; a /16 of 10.244-10.253 that no other network holds),
 * and the pods' addresses come from it as in process mode (local/ipam.h:
 * position p is base+2+p, dynamic addresses in the upper half, which is
 * also the runtime's own range). With podman every pod is a podman pod
 * (`podman pod create`: its address, hostname and network namespace, held
 * by the pod's infra container, shared by its containers as on a node); with
 * docker, which has no pods, each container gets the network itself (the
 * pod's address for init containers and the first regular container, a
 * dynamic one for the others). Every container gets the pod's hosts file
 * bind-mounted on /etc/hosts (every pod's name, as in process mode).
 *
 * A container is `RUNTIME run --rm` in the foreground: its output is the
 * container's, its exit status the container's exit code; SIGTERM to the
 * client is forwarded to the container (--sig-proxy), and the kill at the
 * end of the grace period is `RUNTIME kill` (the client's death alone would
 * leave the container running). Command and args are the image's
 * ENTRYPOINT and CMD as Kubernetes overrides them, env is the container's
 * (downward API, $(VAR), JOB_COMPLETION_INDEX; not the runner's PATH or
 * HOME: the image's), volumes are bind mounts of the same directories as in
 * process mode, GPUs are CDI devices.
 *
 * Images are never pulled without consent: js_container_images checks every
 * image is present before anything starts, and pulls missing ones only with
 * JS_CONTAINER_PULL_MISSING.
 *
 * A pod's address is the runtime's until its removal has finished: a new
 * pod at the same position is made only then (js_container_ip_busy). What
 * a runner that dies leaves is removed by its reaper (js_container_new),
 * or found and removed by label (js_container_leftovers, `jobset ps` and
 * `jobset down`).
 *
 * Not thread-safe: the runner's thread. Commands that must finish before
 * the run goes on (the network) are waited for; making and removing pods
 * are not (their processes are reaped with the containers' by the runner's
 * loop, which tells js_container_reaped).
 */
#ifndef JS_CONTAINER_H
#define JS_CONTAINER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "api/jobset.h"
#include "base/common.h"
#include "local/mounts.h"

enum js_container_runtime {
	JS_CONTAINER_PROCESS, /* no containers: pods are processes */
	JS_CONTAINER_PODMAN,
	JS_CONTAINER_DOCKER,
	JS_CONTAINER__COUNT,
	JS_CONTAINER__INVALID = -1,
};

enum js_container_pull {
	JS_CONTAINER_PULL_NEVER,   /* a missing image is an error */
	JS_CONTAINER_PULL_MISSING, /* pull what is missing, before the run */
	JS_CONTAINER_PULL__COUNT,
	JS_CONTAINER_PULL__INVALID = -1,
};

/** "process", "podman", "docker" and back (JS_CONTAINER__INVALID). */
const char *js_container_runtime_to_string(enum js_container_runtime r);
enum js_container_runtime js_container_runtime_from_string(const char *s);
/** "never", "missing" and back. */
const char *js_container_pull_to_string(enum js_container_pull p);
enum js_container_pull js_container_pull_from_string(const char *s);

/**
 * Check before anything starts that the runtime's client answers and that
 * every image of every pod template of `js` is present, pulling missing
 * ones when `pull` allows it (the pull's output goes to the runner's
 * stderr). Returns 0, or JS_EINVALID with *ret_err (caller frees) naming
 * the missing image or what failed.
 */
JS_WARN_UNUSED int js_container_images(enum js_container_runtime rt, enum js_container_pull pull,
				       const struct js_jobset *js, char **ret_err);

struct js_container;

/**
 * Make the run's network, and start the reaper: a child process in its own
 * session that outlives the runner and, when the runner dies without
 * removing what it made (SIGKILL, a crash), removes every pod, container
 * and network of the run's label (js_container_remove_leftovers). Call it
 * before the runner starts any thread (the reaper is forked). Returns 0
 * and *ret (free with js_container_free), or JS_EINVALID with *ret_err
 * (caller frees).
 */
JS_WARN_UNUSED int js_container_new(enum js_container_runtime rt, struct js_container **ret, char **ret_err);

/** Remove every pod still there and the network (waits), then tell the
 * reaper it has nothing to do. NULL is a no-op. Returns NULL. */
struct js_container *js_container_free(struct js_container *c);

/* The label every object of a run carries (value: the network's name), so
 * what a run left can be found (js_container_leftovers). */
#define JS_CONTAINER_LABEL "io.jobset.run"

/** What the runtime holds of one run: ids of pods, containers, networks
 * (NULL-terminated arrays, or NULL when none). */
struct js_container_left {
	char **pods;
	size_t n_pods;
	char **containers;
	size_t n_containers;
	char **networks;
	size_t n_networks;
};

/**
 * List what runtime `rt` holds of the run whose network is `network`
 * (found by its label; `jobset ps` of a run whose runner died). Waits for
 * the client. Returns 0 and *ret (release with js_container_left_done), or
 * -errno when the client cannot be started, JS_EINVALID when it failed.
 */
JS_WARN_UNUSED int js_container_leftovers(enum js_container_runtime rt, const char *network,
					  struct js_container_left *ret);

/**
 * Remove, without grace, what js_container_leftovers lists (the reaper,
 * `jobset down` of a run whose runner died); *ret is what was found then.
 * Waits. Returns as js_container_leftovers; removal errors are not checked
 * (list again to know what is left).
 */
JS_WARN_UNUSED int js_container_remove_leftovers(enum js_container_runtime rt, const char *network,
						 struct js_container_left *ret);

/** Free the lists of `l` and zero it. */
void js_container_left_done(struct js_container_left *l);

/** The network's first address (host byte order) and name (borrowed). */
uint32_t js_container_base(const struct js_container *c);
const char *js_container_network(const struct js_container *c);

/** The client's path (borrowed), which the runner starts for a container. */
const char *js_container_path(const struct js_container *c);

/** What js_container_pod_make says of a pod. */
enum js_container_pod {
	JS_CONTAINER_POD_READY,   /* made: its containers may start */
	JS_CONTAINER_POD_WAITING, /* not yet: ask again when the loop wakes */
	JS_CONTAINER_POD_FAILED,  /* the runtime failed to make it */
};

/**
 * Make pod `name` with address `ip` and `hostname` (podman: a podman pod,
 * `pod create` then `pod start`; docker: nothing to make, READY), without
 * waiting: the commands are child processes that the runner's loop reaps
 * (js_container_reaped), so it keeps serving signals, output and other
 * pods meanwhile. Call it again, with the same arguments, until it says
 * READY or FAILED. WAITING: being made, or not begun because an older pod
 * still holds `ip` (its removal is under way) or enough pods are being made
 * at once (twice the processors, 4 to 16); each of these ends with a child
 * process the loop reaps. FAILED: *ret_err (caller frees) holds the
 * client's message, said once; what was half made is being removed and
 * the address is taken until that ends, so asking again (the caller
 * retries after a back-off) says WAITING until then. A failure is the
 * runtime's, never the workload's (pod.c).
 */
JS_WARN_UNUSED enum js_container_pod js_container_pod_make(struct js_container *c, const char *name,
							   const char *hostname, const char *ip, char **ret_err);

/** Pod `name` is no longer wanted: remove it and its containers, without
 * waiting (one being made: once its command ends; one whose making failed:
 * its message is dropped). Its address stays taken (js_container_ip_busy)
 * until the removal's process is reaped (js_container_reaped). */
void js_container_pod_release(struct js_container *c, const char *name);

/**
 * Whether address `ip` (dotted) is still held by a pod of this run: one
 * being made, in use, or whose removal has not finished. A new pod at the
 * same position must not be made before (the runtime's IPAM would refuse
 * the address); the runner's loop is woken by the removal's exit
 * (SIGCHLD).
 */
bool js_container_ip_busy(const struct js_container *c, const char *ip);

/** Commands making or removing pods under way (each will wake the loop
 * when it exits). NULL: 0. */
size_t js_container_n_under_way(const struct js_container *c);

/** The runner's loop reaped `pid`, which ended with wait status `status`:
 * true when it was one of `c`'s commands (a pod's making goes on, is done
 * or failed; a removal ends: its address is free). NULL `c`: false. */
bool js_container_reaped(struct js_container *c, pid_t pid, int status);

/** Kill container `name` at once (SIGKILL), without waiting. */
void js_container_kill(struct js_container *c, const char *name);

/** One container to run. Every pointer is borrowed for the call. */
struct js_container_run {
	const char *name;          /* the container's name for the runtime */
	const char *pod;           /* its pod's name */
	const char *ip;            /* the pod's address (docker: used when
				      own_ip) */
	bool own_ip;               /* docker: this container carries the
				      pod's address */
	const char *hostname;
	const char *hosts_file;    /* bind-mounted on /etc/hosts, or NULL */
	const char *image;
	char *const *command;      /* overrides ENTRYPOINT, or NULL */
	size_t n_command;
	char *const *args;         /* overrides CMD when there are any */
	size_t n_args;
	char *const *env;          /* NAME=value, NULL-terminated */
	const char *working_dir;   /* or NULL: the image's */
	const struct js_mounts_spec *mounts;
	size_t n_mounts;
	const char *const *gpus;   /* CDI device ids, NULL-terminated, or NULL */
	const char *pidfile;       /* podman: --pidfile (written once the
				      container runs), or NULL */
};

/** The client's argv for `r` on runtime `rt`, network `network`, with the
 * run's label value `run` (NULL-terminated; free with
 * js_container_argv_free). Pure: unit-tested. */
char **js_container_argv(enum js_container_runtime rt, const char *network, const char *run,
			 const struct js_container_run *r);

/** Free an argv of js_container_argv. NULL is a no-op. */
void js_container_argv_free(char **argv);

/** The runtime, the network's name and the run's label value of `c`, for
 * js_container_argv. */
enum js_container_runtime js_container_kind(const struct js_container *c);

#endif
