/*
 * nl.h - the few rtnetlink requests the local runtime's network needs
 * (a bridge, veth pairs, IPv4 addresses, links up and down), over libmnl.
 *
 * A js_nl is one NETLINK_ROUTE socket. A socket keeps the network namespace
 * it was created in, whatever the thread does later, so "open a js_nl while
 * inside namespace N" is how a request reaches N. Every request waits for
 * the kernel's acknowledgement: when a function returns 0 the change is in
 * place. Errors are the kernel's, as -errno.
 *
 * Requests can be batched (js_nl_batch_begin/end): queued, then sent
 * together and acknowledged together.
 *
 * This module does not create namespaces and never enters one (net.c does).
 * Not thread-safe: one js_nl per thread.
 */
#ifndef JS_NL_H
#define JS_NL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/common.h"

struct js_nl;

/** A veth pair: `name` here, `peer_name` in the namespace of `peer_ns_fd`. */
struct js_nl_veth {
	const char *name;       /* this side, in the socket's namespace */
	int master;             /* ifindex of a bridge to enslave it to, or 0 */
	const char *peer_name;  /* the other side's name in its namespace */
	int peer_ns_fd;         /* fd of the peer's network namespace */
	const uint8_t *peer_mac; /* 6 bytes, or NULL for a random address */
};

/** Open a rtnetlink socket in the calling thread's current network
 * namespace (close-on-exec). Returns 0 and *ret_nl (free with js_nl_close),
 * or -errno. */
JS_WARN_UNUSED int js_nl_open(struct js_nl **ret_nl);

/** Close the socket. NULL is a no-op. Returns NULL. */
struct js_nl *js_nl_close(struct js_nl *nl);

/** ifindex of link `name`. Returns 0 and *ret_ifindex, or -ENODEV. */
JS_WARN_UNUSED int js_nl_ifindex(struct js_nl *nl, const char *name, int *ret_ifindex);

/** Set a link up or down (IFF_UP), and its MAC address to the 6 bytes at
 * `mac` unless NULL; the link is found by `ifindex` when > 0, else by
 * `name`. Returns 0 or -errno (-ENODEV when there is no such link). */
JS_WARN_UNUSED int js_nl_link_set(struct js_nl *nl, int ifindex, const char *name, bool up, const uint8_t *mac);

/** Set link `ifindex` up without an IPv6 link-local address
 * (IFLA_INET6_ADDR_GEN_MODE none, in the same request): the link sends no
 * IPv6 neighbour discovery, router solicitations or MLD reports, which a
 * bridge would flood to every port. IPv6 stays enabled (sockets on [::],
 * ::1 on lo). Returns 0 or -errno (-EAFNOSUPPORT from a kernel without
 * IPv6). */
JS_WARN_UNUSED int js_nl_link_up_no_ll(struct js_nl *nl, int ifindex);

/**
 * Start a batch: until js_nl_batch_end, js_nl_link_set, js_nl_link_up_no_ll,
 * js_nl_add_addr4, js_nl_add_veth and js_nl_del_link only queue their
 * request and return 0 (at most 8 requests); js_nl_ifindex and
 * js_nl_add_bridge, which read a reply, are refused with -EINVAL, and so is
 * a ninth request; a refused request makes js_nl_batch_end fail too.
 */
void js_nl_batch_begin(struct js_nl *nl);

/**
 * Send the queued requests in one datagram and wait for every
 * acknowledgement. The kernel carries out each request even when an
 * earlier one failed. Returns 0 when all succeeded, else the first error
 * (-errno, or -EINVAL for a request the batch refused). An empty batch is
 * 0.
 */
JS_WARN_UNUSED int js_nl_batch_end(struct js_nl *nl);

/** Create bridge `name`, up, and return its ifindex. Returns 0 or -errno
 * (-EEXIST when the name is taken, -EOPNOTSUPP without bridge support). */
JS_WARN_UNUSED int js_nl_add_bridge(struct js_nl *nl, const char *name, int *ret_ifindex);

/** Create a veth pair: this side up (and enslaved to `v->master` when
 * set), the peer down in its namespace (bring it up from there with
 * js_nl_link_set). Returns 0 or -errno. */
JS_WARN_UNUSED int js_nl_add_veth(struct js_nl *nl, const struct js_nl_veth *v);

/** Add IPv4 address `addr` (host byte order) with `prefix` bits to link
 * `ifindex`. Returns 0 or -errno. */
JS_WARN_UNUSED int js_nl_add_addr4(struct js_nl *nl, int ifindex, uint32_t addr, int prefix);

/** Delete link `name` (for a veth, both sides go). Returns 0 or -errno
 * (-ENODEV when it is already gone). */
JS_WARN_UNUSED int js_nl_del_link(struct js_nl *nl, const char *name);

#endif
