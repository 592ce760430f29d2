/*
 * netpool.h - pod network namespaces made ahead of need by a thread.
 *
 * Most of a pod's network is the kernel's work: a new namespace, a veth
 * pair (two devices, with their sysfs and sysctl entries), the bridge port,
 * loopback up; a few milliseconds per pod, which would otherwise sit between
 * one pod's start and the next. A thread makes them ahead, up to a target
 * count, while the runner's thread starts processes: a ready namespace has
 * its own lo up and an `eth0` (down, no address) whose veth peer is on the
 * run's bridge. Taking one leaves only the per-pod part: its MAC, address
 * and `eth0` up (net.c).
 *
 * Each namespace is used once: a pod restarted by its Job takes a new one.
 *
 * Threading: js_netpool_* functions are for one owner thread; the maker
 * thread is internal and shares only the queue (under a mutex) with it. The
 * maker runs in the network namespace of the thread that starts it, which
 * must be the run's (it creates the host sides of the veths there), and with
 * every signal blocked.
 */
#ifndef JS_NETPOOL_H
#define JS_NETPOOL_H

#include <stddef.h>

#include "base/common.h"
#include "local/nl.h"

/** A pod namespace, ready. */
struct js_netpool_ns {
	int fd;             /* the namespace */
	struct js_nl *nl;   /* a rtnetlink socket inside it */
	int eth0;           /* ifindex of eth0 inside it */
	char veth[16];      /* the host side's name in the run's namespace */
};

struct js_netpool;

/**
 * Start the maker thread: it keeps up to `want` namespaces ready on bridge
 * `bridge` (an ifindex in the caller's current namespace, the run's).
 * `run_fd` (borrowed until js_netpool_stop) is where the thread returns
 * after creating each. Returns 0 and *ret, or -errno.
 */
JS_WARN_UNUSED int js_netpool_start(int run_fd, int bridge, size_t want, struct js_netpool **ret);

/**
 * Take a ready namespace, waiting for the maker if none is. Returns 0 and
 * *ret (the caller owns it: js_netpool_ns_done), or the maker's -errno when
 * it could not make one (it tries again on the next take).
 */
JS_WARN_UNUSED int js_netpool_take(struct js_netpool *p, struct js_netpool_ns *ret);

/** Change how many namespaces the maker keeps ready. */
void js_netpool_want(struct js_netpool *p, size_t want);

/** Close a namespace's fd and socket (its veth goes with the namespace). */
void js_netpool_ns_done(struct js_netpool_ns *ns);

/** Stop the maker and drop what it made. NULL is a no-op. Returns NULL. */
struct js_netpool *js_netpool_stop(struct js_netpool *p);

#endif
