/*
 * netpool.h - the thread that does the kernel's work for pod networks.
 *
 * A pod's network is mostly the kernel's work: a new namespace, a veth pair
 * (two devices with their sysfs and sysctl entries), a bridge port, links
 * up, an address; a few milliseconds per pod, and every step but the first
 * takes the kernel's one rtnetlink lock. Done by the runner's thread, that
 * time would sit between one pod's start and the next. So one thread (the
 * "maker") does all of it, in the run's namespace, while the runner's thread
 * starts processes:
 *
 *  - ahead of need, it makes the namespaces of the JobSet's pod positions in
 *    order (a few at a time), each complete: lo up, eth0 with the
 *    position's address and a MAC derived from it, up, its veth peer on the
 *    run's bridge; the first pod of a position takes it at once;
 *  - on request, it makes one for an address (a restarted pod, a NonIndexed
 *    pod, a position not made yet); the requester waits;
 *  - it releases a pod's network (veth down, fd closed) when told, without
 *    making anyone wait.
 *
 * Requests are served in order, before any work ahead, so a release queued
 * before a request for the same address is done before that address comes
 * up again. A position is made ahead at most once, and never after a pod
 * of it exists, so no address is ever up twice.
 *
 * Threading: js_netpool_* functions are for one owner thread; the maker
 * shares only the queue and the positions' states with it, under a mutex.
 * The maker starts in the network namespace of the thread that starts it,
 * which must be the run's, with every signal blocked.
 */
#ifndef JS_NETPOOL_H
#define JS_NETPOOL_H

#include <stdint.h>

#include "base/common.h"

/** A pod's network as made: its namespace and its veth in the run's. */
struct js_netpool_pod {
	int fd;          /* the namespace; -1 when none */
	char veth[16];   /* the host side's name in the run's namespace */
};

struct js_netpool;

/**
 * Start the maker. `bridge` is an ifindex in the caller's current namespace
 * (the run's), `run_fd` that namespace (borrowed until js_netpool_stop).
 * Positions 0..n_positions-1 have the addresses base+2+pos (ipam.h) and are
 * made ahead in order. Returns 0 and *ret, or -errno.
 */
JS_WARN_UNUSED int js_netpool_start(int run_fd, int bridge, uint32_t base, uint64_t n_positions,
				    struct js_netpool **ret);

/**
 * The network of a new pod at position `pos` (or -1) with address `addr`
 * (host byte order): the one made ahead for its position when there is one,
 * else made now (this waits). Returns 0 and *ret (owned by the caller until
 * js_netpool_release), or -errno from the kernel.
 */
JS_WARN_UNUSED int js_netpool_take(struct js_netpool *p, int64_t pos, uint32_t addr, struct js_netpool_pod *ret);

/** Release a pod's network: queued, done by the maker (veth down, fd
 * closed). Takes *pod (its fd is -1 afterwards). Never waits. */
void js_netpool_release(struct js_netpool *p, struct js_netpool_pod *pod);

/** Stop the maker; everything queued or made ahead is closed. NULL is a
 * no-op. Returns NULL. */
struct js_netpool *js_netpool_stop(struct js_netpool *p);

#endif
