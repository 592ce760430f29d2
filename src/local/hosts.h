/*
 * hosts.h - pod addresses and /etc/hosts files for the local runtime: the
 * headless Service of a JobSet becomes hosts entries (SPEC §7).
 *
 * Every pod gets its own loopback address. Indexed pods are numbered by their
 * position in the JobSet (ReplicatedJob order, Job index, completion index),
 * so a hostname keeps its address across restarts; NonIndexed pods draw from
 * JS_HOSTS_DYNAMIC_BASE upwards. Files are replaced atomically (write to a
 * temporary name, rename). Not thread-safe.
 */
#ifndef JS_HOSTS_H
#define JS_HOSTS_H

#include <stdint.h>

#include "api/jobset.h"
#include "base/common.h"

/** First ordinal handed to NonIndexed pods. */
#define JS_HOSTS_DYNAMIC_BASE 1000000u

/** Address of pod ordinal `ord`: 127.a.b.c with a >= 10 and b, c in 1..254
 * (never a network or broadcast-looking octet). Writes at most 16 bytes. */
void js_hosts_ip(uint32_t ord, char out[16]);

/**
 * Write the shared hosts file of a JobSet with DNS hostnames on: localhost
 * lines, then for every Indexed pod of every Job the JobSet will ever have,
 * `<ip> <host>.<subdomain>.<ns>.svc.cluster.local <host>.<subdomain>.<ns>.svc
 * <host>.<subdomain> <host>`. Returns 0 or -errno.
 */
JS_WARN_UNUSED int js_hosts_write_service(const char *path, const struct js_jobset *js);

/**
 * Write one pod's own hosts file: localhost lines, its own entry (with the
 * subdomain forms when `subdomain` is set), then the lines of the shared
 * file `shared` when not NULL. Returns 0 or -errno.
 */
JS_WARN_UNUSED int js_hosts_write_own(const char *path, const char *ip, const char *hostname,
				      const char *subdomain, const char *namespace_, const char *shared);

#endif
