/*
 * leader.h - leader election on a coordination.k8s.io/v1 Lease, as
 * client-go's leaderelection with a LeaseLock.
 *
 * A candidate tries every retry period to create the Lease or, when the
 * holder's lease has run out, to take it over with an UPDATE carrying the
 * resourceVersion it read (so two candidates cannot both win). Expiry is
 * judged by local observation: the lease is free once `lease_duration` has
 * passed on *our* clock since we last saw its record change, so clock skew
 * between machines does not matter. The leader renews every retry period;
 * if a renewal cycle (tries every retry period) cannot renew within
 * `renew_deadline` it stops leading (on_stopped) and the elector ends -
 * also when a renewal hangs: its requests end at the cycle's deadline
 * (js_client_bind_deadline), as under client-go's context timeout. Settings must satisfy lease_duration > renew_deadline >
 * 1.2 * retry_period (client-go's check). On js_leader_stop() a leader
 * releases the lease (empty holder, 1 s duration) so a successor need not
 * wait for expiry.
 *
 * Threading: runs its own thread; callbacks run on it and must return
 * quickly (start work on other threads). Lifecycle as ctrl/controller.h:
 * stop joins, free refuses while the thread runs.
 */
#ifndef JS_LEADER_H
#define JS_LEADER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/common.h"
#include "kube/client.h"

struct js_leader;

struct js_leader_opts {
	const char *namespace;  /* of the Lease, required */
	const char *name;       /* of the Lease, required */
	const char *identity;   /* this candidate, required and unique */
	int lease_duration_ms;  /* 0 = 15000 */
	int renew_deadline_ms;  /* 0 = 10000 */
	int retry_period_ms;    /* 0 = 2000 */
	bool no_release;        /* do not release the lease on stop */
	void (*on_started)(void *user);  /* became leader */
	void (*on_stopped)(void *user);  /* stopped leading (lost or stopped) */
	void (*on_new_leader)(void *user, const char *identity); /* observed holder changed */
	/* A GET, create or update of the Lease failed (RBAC, a missing
	 * namespace, a transport error, ...), `msg` says which request and the
	 * API server's answer. Called on the elector's thread when the failure
	 * differs from the last one reported, and again at most every 30 s
	 * while it stays the same (client-go logs every attempt); not for a
	 * Lease held by another candidate, nor while stopping. Without it a
	 * candidate that can never write its Lease waits in silence. */
	void (*on_error)(void *user, const char *msg);
	void *user;
};

/** Create (not started). Copies the options. Returns 0 or JS_EINVALID for
 * missing names or inconsistent durations. */
JS_WARN_UNUSED int js_leader_new(struct js_client *c, const struct js_leader_opts *opts, struct js_leader **ret);

/** Start campaigning on a new thread. Returns 0 or -errno. */
JS_WARN_UNUSED int js_leader_start(struct js_leader *le);

/** Stop campaigning and join the thread: a request in flight is cancelled,
 * then a leader releases the lease (unless no_release; the release takes
 * at most one request's time), and on_stopped has run when this returns.
 * Idempotent. Returns 0, or -EDEADLK when called from a callback (the
 * elector's own thread). */
int js_leader_stop(struct js_leader *le);

/** Free. NULL is a no-op. Returns 0, or -EBUSY (nothing freed) while the
 * elector runs: call js_leader_stop first. */
JS_WARN_UNUSED int js_leader_free(struct js_leader *le);

/** True while this candidate holds the lease. */
bool js_leader_is_leader(struct js_leader *le);

/** True once the elector has ended by itself (it lost the lease). */
bool js_leader_ended(struct js_leader *le);

#endif
