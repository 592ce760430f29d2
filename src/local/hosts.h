/*
 * hosts.h - pod addresses and /etc/hosts files for the local runtime: the
 * headless Service of a JobSet becomes hosts entries (SPEC §7).
 *
 * Pods are numbered by their position in the JobSet: ReplicatedJob order,
 * then Job index, then completion index, counting NonIndexed Jobs' pods too
 * (they hold positions but have no stable name). A position owns one address
 * of the run's block (ipam.h), so a hostname keeps its address across
 * restarts. Files are replaced atomically (write to a temporary name,
 * rename). Not thread-safe.
 */
#ifndef JS_HOSTS_H
#define JS_HOSTS_H

#include <stdint.h>

#include "api/jobset.h"
#include "base/common.h"
#include "local/ipam.h"

/** Called for every Indexed pod: its hostname and position. A nonzero
 * return stops the walk. */
typedef int (*js_hosts_pod_fn)(void *ctx, const char *host, uint64_t pos);

/** Call `fn` for every Indexed pod of `js` in position order (one rendered
 * Job name per Job). Returns 0, or the first nonzero return of `fn`. */
int js_hosts_walk(const struct js_jobset *js, js_hosts_pod_fn fn, void *ctx);

/** Number of pod positions of `js`: the sum over ReplicatedJobs of
 * replicas x completions (completions < 1 count as 1). */
uint64_t js_hosts_n_positions(const struct js_jobset *js);

/**
 * Whether a local run of `js` fits in `capacity` addresses (issue 22): the
 * pods it holds at once (replicas x parallelism, capped by completions,
 * summed over ReplicatedJobs) and its Indexed hostnames (replicas x
 * completions of Indexed ReplicatedJobs, each walked whenever hosts files
 * are written) must each be at most `capacity`, since each gets its own
 * address of the run's block. Schema-valid numbers reach 2^31 per factor,
 * which would take the runner's memory or time without this bound.
 * Returns 0, or JS_EINVALID with *ret_err (caller frees) naming the
 * ReplicatedJob, the count and the bound.
 */
JS_WARN_UNUSED int js_hosts_check_capacity(const struct js_jobset *js, uint64_t capacity, char **ret_err);

/**
 * Position of the Indexed pod whose hostname is `hostname`
 * (`<jobset>-<rjob>-<job index>-<completion index>`). Returns 0 and
 * *ret_pos, or JS_ENOTFOUND when no Indexed pod of `js` has that name.
 */
JS_WARN_UNUSED int js_hosts_find(const struct js_jobset *js, const char *hostname, uint64_t *ret_pos);

/**
 * Write the shared hosts file of a JobSet with DNS hostnames on: localhost
 * lines, then for every Indexed pod of every Job the JobSet will ever have,
 * `<ip> <host>.<subdomain>.<ns>.svc.cluster.local <host>.<subdomain>.<ns>.svc
 * <host>.<subdomain>`, its address taken from `ipam` (positions past the
 * block get no entry), and ` <host>` only when `bare`: on a cluster another
 * pod's bare hostname does not resolve, so pods with a hosts file of their
 * own (js_hosts_write_own, with these lines) see none; `bare` is for the
 * degraded mode, where every pod looks itself up in this file. Returns 0 or
 * -errno.
 */
JS_WARN_UNUSED int js_hosts_write_service(const char *path, const struct js_jobset *js, const struct js_ipam *ipam,
					  bool bare);

/**
 * Write one pod's own hosts file, as the kubelet writes one: localhost
 * lines, its own entry (the subdomain forms when `subdomain` is set, and
 * its bare hostname), then the lines of the shared file `shared` when not
 * NULL, except the one for its own address `ip`. Returns 0 or -errno.
 */
JS_WARN_UNUSED int js_hosts_write_own(const char *path, const char *ip, const char *hostname,
				      const char *subdomain, const char *namespace_, const char *shared);

#endif
