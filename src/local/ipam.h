/*
 * ipam.h - pod addresses of one run: which IPv4 address a pod gets.
 *
 * A run owns one block of addresses (a /16): the pod network of its own
 * network namespace (10.244.0.0/16, the same in every run, since runs never
 * see each other), or, in the degraded mode without namespaces, a loopback
 * block 127.B.0.0/16 that no other live run of the same user holds (claimed
 * under a lock in a small registry file, js_ipam_claim_block).
 *
 * Inside the block: base+0 is the network, base+1 the gateway (the run's
 * bridge, "the node"), base+size-1 the broadcast address; slot i is
 * base+2+i. Pod position p of the JobSet (ReplicatedJob order, Job index,
 * completion index; see hosts.h) owns slot p for the whole run, so a
 * hostname keeps its address across restarts. Pods without a stable name
 * (NonIndexed Jobs) take any slot above the positions and give it back when
 * they end; slots are handed out round-robin, so an address just given back
 * is the last to be reused.
 *
 * No I/O except the registry functions. Not thread-safe.
 */
#ifndef JS_IPAM_H
#define JS_IPAM_H

#include <stdbool.h>
#include <stdint.h>

#include "base/common.h"

/** The pod network inside a run's namespace: 10.244.0.0/16 (the pod CIDR
 * flannel and kubeadm guides use). Host byte order. */
#define JS_IPAM_POD_BASE 0x0af40000u
#define JS_IPAM_BLOCK_BITS 16
#define JS_IPAM_BLOCK_SIZE (1u << JS_IPAM_BLOCK_BITS)
/** Loopback blocks 127.B.0.0/16 of the degraded mode: B in FIRST..LAST.
 * Below 16 sit 127.0.0.1, Debian's 127.0.1.1 and systemd's 127.0.0.53;
 * 127.255/16 holds the broadcast-looking 127.255.255.255. */
#define JS_IPAM_LOOPBACK_FIRST 16
#define JS_IPAM_LOOPBACK_LAST 254

struct js_ipam;

/** An allocator for block `base` (a multiple of JS_IPAM_BLOCK_SIZE) whose
 * first `n_fixed` slots belong to pod positions. Free with js_ipam_free. */
struct js_ipam *js_ipam_new(uint32_t base, uint64_t n_fixed);

/** Free. NULL is a no-op. Returns NULL. */
struct js_ipam *js_ipam_free(struct js_ipam *a);

/** Number of pod slots in a block (size - 3). */
uint32_t js_ipam_capacity(void);

/** The gateway address (base+1): the bridge in the run's namespace. */
uint32_t js_ipam_gateway(const struct js_ipam *a);

/** First address of the block. */
uint32_t js_ipam_base(const struct js_ipam *a);

/** The address of pod position `pos`. Returns 0, or -ENOSPC when the
 * position lies beyond the block (more pods than the block holds). */
JS_WARN_UNUSED int js_ipam_fixed(const struct js_ipam *a, uint64_t pos, uint32_t *ret_addr);

/** Take a free slot above the positions. Returns 0, or -ENOSPC. */
JS_WARN_UNUSED int js_ipam_take(struct js_ipam *a, uint32_t *ret_addr);

/** Give back an address from js_ipam_take; others are ignored. */
void js_ipam_put(struct js_ipam *a, uint32_t addr);

/** Dotted quad of `addr` (host byte order) into `out` (at most 16 bytes). */
void js_ipam_format(uint32_t addr, char out[16]);

/**
 * Claim a loopback block for this process in the registry file `path`
 * (created mode 0600 if missing): under an exclusive flock, entries of
 * processes that no longer exist are dropped, and the first block not in
 * use at or after the file's cursor (wrapping) is recorded with getpid();
 * the cursor moves past it, so consecutive runs get different blocks and a
 * new run never meets the TIME_WAIT sockets of the previous one. Returns 0
 * and *ret_block (B of 127.B.0.0/16), -ENOSPC when every block is in use,
 * -EBADMSG when the file is not a registry, or -errno.
 */
JS_WARN_UNUSED int js_ipam_claim_block(const char *path, int *ret_block);

/** Drop this process's entry for `block` from the registry. Returns 0 or
 * -errno; a missing file or entry is not an error. */
int js_ipam_release_block(const char *path, int block);

/**
 * The per-user registry path: $XDG_RUNTIME_DIR/jobset-loopback-blocks when
 * that directory exists, else /tmp/jobset-<uid>/loopback-blocks (the
 * directory created 0700, and refused unless it is ours and not a link).
 * Returns 0 and *ret_path (caller frees), or -errno.
 */
JS_WARN_UNUSED int js_ipam_default_registry(char **ret_path);

#endif
