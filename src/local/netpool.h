/*
 * netpool.h - the threads that do the kernel's work for pod networks.
 *
 * A pod's network is mostly the kernel's work: a new namespace, a veth pair
 * (two devices with their sysfs and sysctl entries), a bridge port, links
 * up, an address; a millisecond or two of CPU per pod, most of it under the
 * kernel's one rtnetlink lock, except the namespace itself. Done by the
 * runner's thread, that time would sit between one pod's start and the
 * next. So two threads (the "makers") do all of it, in the run's
 * namespace, while the runner's thread starts processes; with two, one
 * creates a namespace (outside the lock) while the other builds a veth.
 *
 *  - ahead of need, they make the namespaces of the JobSet's pod positions
 *    in order (a few at a time), each complete: lo up, eth0 with the
 *    position's address and a MAC derived from it, up, its veth peer on the
 *    run's bridge; the first pod of a position takes it at once;
 *  - on request, they make one for an address (a restarted pod, a
 *    NonIndexed pod, a position not made yet);
 *  - they release a pod's network when told: its veth down at once (the
 *    address stops answering), its namespace closed once they have nothing
 *    else to do - the kernel's teardown of namespaces holds the rtnetlink
 *    lock for a batch at a time, and would stall the making of the networks
 *    of pods that replace them (a restarted JobSet asks for all at once).
 *
 * Nothing here makes the owner wait: js_netpool_ask returns a request at
 * once, which is either done already (a position made ahead) or done
 * later; the makers then make js_netpool_wake_fd readable, for the owner's
 * poll loop (a pod meanwhile is ContainerCreating, docs/local.md).
 *
 * Order: requests are served in order, before any work ahead, and a
 * request is not begun while a release queued before it (or a request
 * cancelled while being made) is still under way, so a released address
 * is down before it comes up again, whichever maker does what. A position
 * is made ahead at most once, and never after a pod of it exists, so no
 * address is ever up twice.
 *
 * Threading: js_netpool_* functions are for one owner thread; the makers
 * share only the queue, the requests' states and the positions' states
 * with it, under a mutex. The makers start in the network namespace of the
 * thread that starts them, which must be the run's, with every signal
 * blocked.
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
struct js_netpool_req;

/**
 * Start the makers. `bridge` is an ifindex in the caller's current
 * namespace (the run's), `run_fd` that namespace (borrowed until
 * js_netpool_stop). Positions 0..n_positions-1 have the addresses
 * base+2+pos (ipam.h) and are made ahead in order. Returns 0 and *ret, or
 * -errno (eventfd, thread creation).
 */
JS_WARN_UNUSED int js_netpool_start(int run_fd, int bridge, uint32_t base, uint64_t n_positions,
				    struct js_netpool **ret);

/**
 * Ask for the network of a new pod at position `pos` (or -1) with address
 * `addr` (host byte order): the one made ahead for its position when there
 * is one (possibly still being made), else one made on request. Never
 * waits. Returns the request, owned by the caller until js_netpool_take
 * says it is done or js_netpool_cancel.
 */
struct js_netpool_req *js_netpool_ask(struct js_netpool *p, int64_t pos, uint32_t addr);

/**
 * Collect a request: 0 and *ret when its network is made (*ret owned by
 * the caller until js_netpool_release; the request is freed), -EAGAIN when
 * not yet (poll js_netpool_wake_fd), or -errno from the kernel (the
 * request is freed).
 */
JS_WARN_UNUSED int js_netpool_take(struct js_netpool *p, struct js_netpool_req *req, struct js_netpool_pod *ret);

/** Give a request up (its pod went away first): a network made for it is
 * released, one not begun is never made. Frees the request. Never waits. */
void js_netpool_cancel(struct js_netpool *p, struct js_netpool_req *req);

/** Release a pod's network: queued, done by a maker (veth down; the
 * namespace fd closed when the makers are idle, or at js_netpool_stop).
 * Takes *pod (its fd is -1 afterwards). Never waits. */
void js_netpool_release(struct js_netpool *p, struct js_netpool_pod *pod);

/** An fd (non-blocking, close-on-exec) that is readable once a request
 * the owner asked for is done since the last js_netpool_clear_wake.
 * Borrowed until js_netpool_stop. */
int js_netpool_wake_fd(const struct js_netpool *p);

/** Make js_netpool_wake_fd unreadable again; then js_netpool_take every
 * request still outstanding. */
void js_netpool_clear_wake(struct js_netpool *p);

/** Stop the makers; everything queued or made ahead is closed. Every
 * request must have been taken or cancelled. NULL is a no-op. Returns
 * NULL. */
struct js_netpool *js_netpool_stop(struct js_netpool *p);

#endif
