/*
 * net.h - the network of one local run, as a cluster gives pods theirs.
 *
 * Pod mode (JS_NET_PODS): the run gets its own network namespace holding a
 * bridge (`jsbr0`, 10.244.0.1/16, "the node"). Every pod gets a fresh network
 * namespace of its own, with its own loopback and an `eth0` whose veth peer
 * sits on the run's bridge, addressed from the run's /16 (ipam.h): a
 * hostname keeps its address across restarts, and every run uses the same
 * addresses without meeting any other run. All containers of a pod join
 * its namespace (the sandbox's setns before exec). A pod restarted by its
 * Job is a new pod with a new namespace, so sockets of an earlier attempt
 * (a listener, TIME_WAIT) can never block it. Pods reach each other and the
 * bridge address; nothing else (no route out, no NAT).
 *
 * The runner's thread moves into the run's namespace for the whole run
 * (js_net_new) and back out (js_net_free): sockets the runner opens meanwhile
 * - netlink, the --publish forwarder's connections to pods - live there.
 * Namespaces are held by file descriptors only (nothing under
 * /var/run/netns); the kernel removes a pod's namespace, and its veth, once
 * the last fd and process are gone. An unprivileged runner first enters a
 * user namespace of its own (its uid and gid mapped to themselves), where it
 * may create the others; a process cannot leave a user namespace, so the
 * runner stays in it after js_net_free.
 *
 * Degraded mode (JS_NET_LOOPBACK): without network namespaces (--no-
 * namespaces, or the kernel refuses), pods share the runner's network and
 * each run takes its own loopback block 127.B.0.0/16 from a per-user
 * registry under a lock (ipam.h), so concurrent runs never share an address.
 * Restarted pods keep their address, so a server without SO_REUSEADDR can
 * still meet its previous attempt's TIME_WAIT sockets in this mode.
 *
 * --publish: js_net_new starts the forwarder (publish.h) for the listening
 * sockets the caller bound.
 *
 * Threads: the namespace makers (netpool.h) and the --publish forwarder
 * are internal; every function here is for the runner's one thread.
 */
#ifndef JS_NET_H
#define JS_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/jobset.h"
#include "base/common.h"
#include "local/ipam.h"
#include "local/publish.h"

enum js_net_mode {
	JS_NET_PODS,     /* a network namespace per pod on the run's bridge */
	JS_NET_LOOPBACK, /* degraded: the runner's network, a loopback block */
	JS_NET_EXTERNAL, /* container mode: a container runtime's network owns
			    the namespaces; only the addresses are ours */
};

struct js_net_opts {
	bool no_namespaces;             /* force JS_NET_LOOPBACK */
	const struct js_jobset *js;     /* pod positions; borrowed for the call */
	const struct js_publish *publish; /* listen_fd bound; the sockets are
					   borrowed until js_net_free */
	size_t n_publish;
	const char *registry;           /* loopback block registry, NULL for
					   js_ipam_default_registry() */
	uint32_t external_base;         /* JS_NET_EXTERNAL: the /16 of the
					   container network (its gateway is
					   base+1), or 0 */
	const char *external_name;      /* its name, for js_net_describe */
};

struct js_net;
struct js_net_pod;

/**
 * Set up the run's network: pod mode when the kernel allows it, else the
 * degraded mode (js_net_why says why). Returns 0 and *ret_net (free with
 * js_net_free, after every js_net_pod), or a negative error when even the
 * degraded mode cannot start: JS_ENOTFOUND for a --publish pod that is not
 * an Indexed pod of the JobSet, -errno from thread creation.
 */
JS_WARN_UNUSED int js_net_new(const struct js_net_opts *o, struct js_net **ret_net);

/** Stop forwarding, leave and drop the run's namespace (or give the
 * loopback block back). NULL is a no-op. Returns NULL. */
struct js_net *js_net_free(struct js_net *net);

/** The mode the run got (js_net_new decides once). */
enum js_net_mode js_net_mode(const struct js_net *net);

/** Why the degraded mode is in use, or NULL in pod mode. Borrowed. */
const char *js_net_why(const struct js_net *net);

/** One sentence for the run's start event (Normal Network, or Warning
 * DegradedNetwork when js_net_why is set): the mode, the address block,
 * and in the degraded mode why. Borrowed until js_net_free. */
const char *js_net_describe(const struct js_net *net);

/** The run's addresses (hosts files read the positions' addresses here). */
const struct js_ipam *js_net_ipam(const struct js_net *net);

/** status.hostIP of the pods: the bridge address, or 127.0.0.1. Borrowed. */
const char *js_net_host_ip(const struct js_net *net);

/**
 * Give a new pod its network: the address of position `pos`, or for
 * pos < 0 (a NonIndexed pod) a free one; in pod mode also a fresh namespace
 * with lo and eth0 up, made by the maker threads (netpool.h): made ahead
 * for a position's first pod, and then ready at once, else made after
 * this returns - never waited for here. Until it is made the pod is
 * pending (js_net_pod_pending; js_net_poll collects it when
 * js_net_wake_fd is readable). A live pod that holds the same position
 * loses its network first (its veth goes down), so one address never
 * answers twice.
 * Returns 0 and *ret (free with js_net_pod_free), or -ENOSPC when the
 * block is full; the kernel's errors come later, from js_net_pod_netns.
 */
JS_WARN_UNUSED int js_net_pod_new(struct js_net *net, int64_t pos, struct js_net_pod **ret);

/** True while the pod's network is being made (pod mode). */
bool js_net_pod_pending(const struct js_net_pod *p);

/** An fd for the runner's poll loop, readable when a pending pod network
 * may be done (then call js_net_poll), or -1 outside pod mode. Borrowed
 * until js_net_free. */
int js_net_wake_fd(const struct js_net *net);

/** Collect the pod networks made since the last call: each such pod is no
 * longer pending. Returns how many. Never waits. */
size_t js_net_poll(struct js_net *net);

/** Pods whose network is still being made: something will wake the
 * runner (js_net_wake_fd) for each. */
size_t js_net_n_pending(const struct js_net *net);

/** End a pod's network once its processes are gone: its veth goes down and
 * the namespace fd is closed (queued to the maker threads, netpool.h, so
 * this never waits); a dynamic address goes back. The address stays
 * readable. Idempotent. */
void js_net_pod_release(struct js_net_pod *p);

/** Release and free. NULL is a no-op. Returns NULL. */
struct js_net_pod *js_net_pod_free(struct js_net_pod *p);

/** The network namespace a container of the pod joins: 0 and *ret_fd (an
 * fd borrowed until the release, or -1 in the degraded mode: stay in the
 * runner's network); -EAGAIN while it is pending; -ENETDOWN once the pod's
 * network was released (a container started then would land in the run's
 * namespace); or -errno from the kernel when it could not be made. */
JS_WARN_UNUSED int js_net_pod_netns(const struct js_net_pod *p, int *ret_fd);

/** The pod's address, dotted. Borrowed until js_net_pod_free. */
const char *js_net_pod_ip(const struct js_net_pod *p);

#endif
