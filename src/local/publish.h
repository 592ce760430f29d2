/*
 * publish.h - `jobset run --publish POD:PORT[:HOSTPORT]`: forward a TCP port
 * of the host (127.0.0.1:HOSTPORT) to a port of a pod, as docker compose's
 * `ports` does.
 *
 * The CLI parses the flag (js_publish_parse), checks the pod exists
 * (js_publish_resolve) and binds the host port (js_publish_listen) before
 * anything starts, so mistakes are usage errors. The run's network then
 * starts one forwarder (js_publish_start): a thread with its own poll(2)
 * loop that accepts on the listening sockets, opens a connection to the pod
 * from a socket created in the run's network namespace (a socket keeps the
 * namespace it was created in), and copies bytes both ways. Each accepted
 * connection dials the pod afresh, and a pod's address is stable per
 * hostname, so forwarding survives pod restarts; while the pod is down a
 * client is accepted and closed at once.
 *
 * Bounds: at most JS_PUBLISH_MAX_CONNS connections at once (listening
 * sockets are not polled beyond that; the kernel's backlog holds the rest),
 * JS_PUBLISH_BUF bytes buffered per direction, JS_PUBLISH_CONNECT_MS for a
 * connection to the pod. Nothing is read that cannot be written later, and
 * the thread sleeps in poll(2) whenever nothing is ready.
 *
 * Threading: the forwarder thread touches only its own state and the
 * listening sockets it was given (borrowed until js_publish_stop); all
 * signals are blocked in it. Every other function is for the main thread.
 */
#ifndef JS_PUBLISH_H
#define JS_PUBLISH_H

#include <stdint.h>

#include "api/jobset.h"
#include "base/common.h"

#define JS_PUBLISH_MAX_CONNS 128
#define JS_PUBLISH_BUF 65536
#define JS_PUBLISH_CONNECT_MS 5000
/* Longest pod hostname: a DNS label. */
#define JS_PUBLISH_POD_MAX 63

/** One --publish flag. */
struct js_publish {
	char pod[JS_PUBLISH_POD_MAX + 1]; /* hostname of an Indexed pod */
	uint16_t port;                     /* the pod's port */
	uint16_t host_port;                /* 127.0.0.1:host_port on the host */
	int listen_fd;                     /* from js_publish_listen, else -1 */
};

/**
 * Parse `POD:PORT[:HOSTPORT]` (ports 1..65535; HOSTPORT defaults to PORT).
 * Returns 0 and *ret (listen_fd -1), or JS_EINVALID and *ret_err (caller
 * frees) saying what is wrong.
 */
JS_WARN_UNUSED int js_publish_parse(const char *arg, struct js_publish *ret, char **ret_err);

/**
 * The position (hosts.h) of `p->pod` in `js`. Returns 0, or JS_ENOTFOUND
 * and *ret_err (caller frees) naming the pod and an example of a valid name.
 */
JS_WARN_UNUSED int js_publish_resolve(const struct js_jobset *js, const struct js_publish *p, uint64_t *ret_pos,
				      char **ret_err);

/** Bind and listen on 127.0.0.1:p->host_port (non-blocking, close-on-exec)
 * and set p->listen_fd. Returns 0 or -errno (-EADDRINUSE, -EACCES). */
JS_WARN_UNUSED int js_publish_listen(struct js_publish *p);

/** Where a listening socket forwards to. */
struct js_publish_target {
	int listen_fd;  /* borrowed until js_publish_stop */
	uint32_t addr;  /* the pod's IPv4 address, host byte order */
	uint16_t port;
};

struct js_publish_fwd;

/**
 * Start the forwarder thread for `targets` (copied). A new thread starts in
 * the network namespace of the thread that creates it, so the sockets it
 * dials pods with live in the caller's current namespace: call this from
 * inside the run's. Returns 0 and *ret (stop with js_publish_stop), or
 * -errno.
 */
JS_WARN_UNUSED int js_publish_start(const struct js_publish_target *targets, size_t n,
				    struct js_publish_fwd **ret);

/** Stop the thread, close every forwarded connection, and free. NULL is a
 * no-op. Listening sockets stay open (they are the caller's). Returns NULL. */
struct js_publish_fwd *js_publish_stop(struct js_publish_fwd *f);

#endif
