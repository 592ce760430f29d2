/*
 * netpool.c - the threads that do the kernel's work for pod networks (see
 * netpool.h).
 *
 * Shared under one mutex, with one condition variable for every change: a
 * FIFO of jobs (make a network for a request, or release one), the
 * networks made or being made ahead (jobs no request owns yet), the state
 * of every pod position (nothing yet, made ahead, taken, failed) and the
 * number of releases under way. A request is a job: js_netpool_ask hands
 * the owner a job, queued, or one made ahead, ready or still being made.
 * The makers never hold the mutex while they talk to the kernel.
 *
 * Who frees a job: the owner when it takes a done one or cancels a done
 * one; a maker when it meets a cancelled one (queued, or finished making);
 * a maker after a release; js_netpool_stop for whatever is left. A
 * released namespace's fd goes to the graves (bury), closed by a maker
 * that finds nothing else to do, or by js_netpool_stop.
 *
 * Making one: a maker unshares into a new namespace, keeps an fd of it
 * (/proc/thread-self/ns/net) and a netlink socket in it (a socket keeps its
 * namespace), and setns()es back into the run's; then it builds the veth
 * from the run's side, with the peer created inside the new namespace as
 * eth0, and configures the inside through the inner socket.
 */
#include "local/netpool.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "local/ipam.h"
#include "local/nl.h"

/* Networks made ahead and not yet asked for, at most (those being made
 * count): enough to stay ahead of the runner starting processes, few
 * enough that idle ones (positions that start late, or never) cost little. */
#define NETPOOL_AHEAD 32
/* Maker threads. Two: the namespace of one pod is made (outside the
 * rtnetlink lock) while the other's veth is built (inside it); more would
 * only queue on that lock, and this runs beside the runner's own thread. */
#define NETPOOL_MAKERS 2
#define NETPOOL_NS_SELF "/proc/thread-self/ns/net"

enum { POS_NONE, POS_AHEAD, POS_TAKEN, POS_FAILED };
enum job_state { JOB_QUEUED, JOB_MAKING, JOB_DONE };

struct js_netpool_req {
	struct js_netpool_req *next; /* in the queue, or in the list ahead */
	bool release;                /* else: make a network for addr */
	int64_t pos;                 /* made ahead for this position, or -1 */
	uint32_t addr;
	enum job_state state;
	bool owned;                  /* an owner asked for it */
	bool cancelled;              /* ... and gave it up */
	struct js_netpool_pod pod;   /* made, or to release */
	int err;
};

struct js_netpool {
	pthread_t threads[NETPOOL_MAKERS];
	size_t n_threads;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int run_fd, bridge, wake_fd;
	uint32_t base;
	uint64_t n_positions;       /* made ahead: 0..n_positions-1 */
	/* under mu */
	struct js_netpool_req *head, *tail; /* the queue */
	struct js_netpool_req *ahead;       /* made or being made ahead, unowned */
	size_t n_ahead;
	uint8_t *state;             /* POS_* per position */
	uint64_t cursor;            /* next position to look at for making ahead */
	size_t n_releasing;         /* releases (and cancelled makes) under way */
	uint64_t next_id;           /* veth names */
	int *grave;                 /* released namespaces, veth down, to close */
	size_t n_grave, cap_grave;
	bool stop;
};

/* ---- the kernel's part (maker threads) ---- */

static void close_pod(struct js_netpool_pod *pod)
{
	if (pod->fd >= 0)
		close(pod->fd);
	pod->fd = -1;
}

/** lo up, eth0's address, eth0 up without an IPv6 link-local address
 * (nl.h), in one batch. */
static int configure_inside(struct js_nl *in, int eth0, uint32_t addr)
{
	js_nl_batch_begin(in);
	int r = js_nl_link_set(in, 1, NULL, true, NULL);
	if (!r)
		r = js_nl_add_addr4(in, eth0, addr, JS_IPAM_BLOCK_BITS);
	if (!r)
		r = js_nl_link_up_no_ll(in, eth0);
	int e = js_nl_batch_end(in);
	r = r ? r : e;
	/* A kernel without IPv6 refuses the mode, and only that (the kernel
	 * carries out every request of a batch): up as it is then. */
	if (r == -EAFNOSUPPORT)
		r = js_nl_link_set(in, eth0, NULL, true, NULL);
	return r;
}

/** Make a namespace with eth0 at `addr`, its veth `ret->veth` (named by
 * the caller) on the bridge. */
static int make_one(struct js_netpool *p, struct js_nl *run_nl, uint32_t addr, struct js_netpool_pod *ret)
{
	ret->fd = -1;
	if (!run_nl)
		return -EBADF;
	if (unshare(CLONE_NEWNET) < 0)
		return -errno;
	struct js_nl *in = NULL;
	ret->fd = open(NETPOOL_NS_SELF, O_RDONLY | O_CLOEXEC);
	int r = ret->fd < 0 ? -errno : js_nl_open(&in);
	/* Back first, whatever happened: the veth is built from the run's side. */
	if (setns(p->run_fd, CLONE_NEWNET) < 0 && !r)
		r = -errno;
	/* A MAC derived from the address: peers' ARP caches stay right when a
	 * restarted pod takes the address over. */
	uint8_t mac[6] = {0x02, 0x4a, (uint8_t)(addr >> 24), (uint8_t)(addr >> 16), (uint8_t)(addr >> 8),
			  (uint8_t)addr};
	struct js_nl_veth v = {.name = ret->veth, .master = p->bridge, .peer_name = "eth0", .peer_ns_fd = ret->fd,
			       .peer_mac = mac};
	int eth0 = 0;
	if (!r)
		r = js_nl_add_veth(run_nl, &v);
	if (!r)
		r = js_nl_ifindex(in, "eth0", &eth0);
	if (!r)
		r = configure_inside(in, eth0, addr);
	js_nl_close(in);
	/* A half-made namespace goes with its fd, veth and all. */
	if (r < 0)
		close_pod(ret);
	return r;
}

/** Take a released pod's address off the bridge: its veth down at once,
 * so the address stops answering now. Its namespace (and the veth with
 * it) goes once the fd is closed: bury(). */
static void release_one(struct js_nl *run_nl, const struct js_netpool_pod *pod)
{
	if (run_nl && pod->veth[0] && js_nl_link_set(run_nl, 0, pod->veth, false, NULL) < 0) {
		/* gone already */
	}
}

/** Keep a released namespace's fd until the makers are idle (under mu).
 * Closing the last fd hands the namespace to the kernel's cleanup_net,
 * which holds the rtnetlink lock while it takes a batch of namespaces
 * apart: done while pods' networks are being made (a restarted JobSet
 * releases and asks for all its pods at once), that stalls the makers. */
static void bury(struct js_netpool *p, struct js_netpool_pod *pod)
{
	if (pod->fd < 0)
		return;
	if (p->n_grave == p->cap_grave) {
		p->cap_grave = p->cap_grave ? p->cap_grave * 2 : 64;
		p->grave = js_xrealloc(p->grave, p->cap_grave * sizeof(*p->grave));
	}
	p->grave[p->n_grave++] = pod->fd;
	pod->fd = -1;
}

/** Close every buried namespace (called under mu, which it drops while
 * closing). */
static void close_graves(struct js_netpool *p)
{
	int *fds = p->grave;
	size_t n = p->n_grave;
	p->grave = NULL;
	p->n_grave = p->cap_grave = 0;
	pthread_mutex_unlock(&p->mu);
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	pthread_mutex_lock(&p->mu);
}

/* ---- the queue (under mu) ---- */

static void push(struct js_netpool *p, struct js_netpool_req *r)
{
	r->next = NULL;
	if (p->tail)
		p->tail->next = r;
	else
		p->head = r;
	p->tail = r;
	pthread_cond_broadcast(&p->cv);
}

static struct js_netpool_req *pop(struct js_netpool *p)
{
	struct js_netpool_req *r = p->head;
	p->head = r->next;
	if (!p->head)
		p->tail = NULL;
	r->next = NULL;
	return r;
}

static void unlink_ahead(struct js_netpool *p, struct js_netpool_req *r)
{
	for (struct js_netpool_req **at = &p->ahead; *at; at = &(*at)->next) {
		if (*at == r) {
			*at = r->next;
			r->next = NULL;
			p->n_ahead--;
			return;
		}
	}
}

/** Tell the owner a request it asked for is done. */
static void wake_owner(struct js_netpool *p)
{
	uint64_t one = 1;
	if (write(p->wake_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is full, so the owner wakes anyway */
	}
}

/** The next job for a maker, or NULL when there is none it may begin now.
 * Cancelled requests met on the way are dropped. */
static struct js_netpool_req *next_job(struct js_netpool *p)
{
	while (p->head) {
		struct js_netpool_req *r = p->head;
		if (r->release) {
			p->n_releasing++;
			return pop(p);
		}
		if (r->cancelled) {
			free(pop(p)); /* never begun: nothing to undo */
			continue;
		}
		/* A release under way may be of this very address. */
		if (p->n_releasing)
			return NULL;
		r = pop(p);
		r->state = JOB_MAKING;
		return r;
	}
	if (p->n_ahead >= NETPOOL_AHEAD)
		return NULL;
	while (p->cursor < p->n_positions && p->state[p->cursor] != POS_NONE)
		p->cursor++;
	if (p->cursor >= p->n_positions)
		return NULL;
	struct js_netpool_req *r = js_xcalloc(1, sizeof(*r));
	r->pos = (int64_t)p->cursor;
	r->addr = p->base + 2u + (uint32_t)p->cursor;
	r->state = JOB_MAKING;
	r->pod.fd = -1;
	p->state[p->cursor] = POS_AHEAD;
	r->next = p->ahead;
	p->ahead = r;
	p->n_ahead++;
	return r;
}

/** A make finished (under mu): hand it over, or undo it. Returns a
 * network to release (outside mu), or NULL. */
static bool finish_make(struct js_netpool *p, struct js_netpool_req *r, int err, struct js_netpool_pod *ret_undo)
{
	r->state = JOB_DONE;
	r->err = err;
	pthread_cond_broadcast(&p->cv);
	if (r->cancelled) {
		/* Given up while being made: counted as a release under way
		 * (js_netpool_cancel) until its network is down. */
		*ret_undo = r->pod;
		free(r);
		return true;
	}
	if (r->owned) {
		wake_owner(p);
		return false;
	}
	if (err < 0) {
		/* Made ahead and failed: its pod will ask, and be made on
		 * request then (and hear the error if it fails again). */
		unlink_ahead(p, r);
		p->state[r->pos] = POS_FAILED;
		free(r);
	}
	return false;
}

static void *maker(void *arg)
{
	struct js_netpool *p = arg;
	struct js_nl *run_nl = NULL;
	if (js_nl_open(&run_nl) < 0)
		run_nl = NULL; /* every make then fails with EBADF, and says so */
	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct js_netpool_req *r = NULL;
		while (!p->stop && !(r = next_job(p))) {
			if (p->n_grave) {
				close_graves(p); /* nothing else to do now */
				continue;
			}
			pthread_cond_wait(&p->cv, &p->mu);
		}
		if (p->stop)
			break; /* what is left is js_netpool_stop's */
		if (r->release) {
			pthread_mutex_unlock(&p->mu);
			release_one(run_nl, &r->pod);
			pthread_mutex_lock(&p->mu);
			bury(p, &r->pod);
			free(r);
			p->n_releasing--;
			pthread_cond_broadcast(&p->cv);
			continue;
		}
		snprintf(r->pod.veth, sizeof(r->pod.veth), "jsv%llu", (unsigned long long)p->next_id++);
		uint32_t addr = r->addr;
		struct js_netpool_pod made = r->pod;
		pthread_mutex_unlock(&p->mu);
		int err = make_one(p, run_nl, addr, &made);
		pthread_mutex_lock(&p->mu);
		r->pod = made;
		struct js_netpool_pod undo;
		if (finish_make(p, r, err, &undo)) {
			pthread_mutex_unlock(&p->mu);
			release_one(run_nl, &undo);
			pthread_mutex_lock(&p->mu);
			bury(p, &undo);
			p->n_releasing--;
			pthread_cond_broadcast(&p->cv);
		}
	}
	pthread_mutex_unlock(&p->mu);
	js_nl_close(run_nl);
	return NULL;
}

/* ---- the owner's side ---- */

static void free_all(struct js_netpool *p)
{
	while (p->head) {
		struct js_netpool_req *r = pop(p);
		close_pod(&r->pod);
		free(r);
	}
	while (p->ahead) {
		struct js_netpool_req *r = p->ahead;
		p->ahead = r->next;
		close_pod(&r->pod);
		free(r);
	}
	for (size_t i = 0; i < p->n_grave; i++)
		close(p->grave[i]);
	free(p->grave);
	if (p->wake_fd >= 0)
		close(p->wake_fd);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->state);
	free(p);
}

int js_netpool_start(int run_fd, int bridge, uint32_t base, uint64_t n_positions, struct js_netpool **ret)
{
	struct js_netpool *p = js_xcalloc(1, sizeof(*p));
	p->run_fd = run_fd;
	p->bridge = bridge;
	p->base = base;
	p->n_positions = n_positions < js_ipam_capacity() ? n_positions : js_ipam_capacity();
	p->state = js_xcalloc(p->n_positions + 1, 1);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->wake_fd < 0) {
		int err = -errno;
		free_all(p);
		return err;
	}
	/* Signals stay with the runner's signalfd: none may land here. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = 0;
	for (size_t i = 0; i < NETPOOL_MAKERS && !r; i++) {
		r = pthread_create(&p->threads[i], NULL, maker, p);
		p->n_threads += !r;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		p = js_netpool_stop(p);
		return -r;
	}
	*ret = p;
	return 0;
}

struct js_netpool_req *js_netpool_ask(struct js_netpool *p, int64_t pos, uint32_t addr)
{
	pthread_mutex_lock(&p->mu);
	if (pos >= 0 && (uint64_t)pos < p->n_positions) {
		if (p->state[pos] == POS_AHEAD) {
			for (struct js_netpool_req *r = p->ahead; r; r = r->next) {
				if (r->pos != pos)
					continue;
				unlink_ahead(p, r);
				r->owned = true;
				p->state[pos] = POS_TAKEN;
				pthread_cond_broadcast(&p->cv); /* room to make another ahead */
				pthread_mutex_unlock(&p->mu);
				return r;
			}
		}
		/* Never made ahead from now on: this pod, or its successor, owns
		 * the address. */
		p->state[pos] = POS_TAKEN;
	}
	struct js_netpool_req *r = js_xcalloc(1, sizeof(*r));
	r->pos = -1;
	r->addr = addr;
	r->owned = true;
	r->pod.fd = -1;
	push(p, r);
	pthread_mutex_unlock(&p->mu);
	return r;
}

int js_netpool_take(struct js_netpool *p, struct js_netpool_req *req, struct js_netpool_pod *ret)
{
	pthread_mutex_lock(&p->mu);
	bool done = req->state == JOB_DONE;
	pthread_mutex_unlock(&p->mu);
	if (!done)
		return -EAGAIN;
	/* Done: no maker touches it any more. */
	int err = req->err;
	if (!err)
		*ret = req->pod;
	free(req);
	return err;
}

void js_netpool_cancel(struct js_netpool *p, struct js_netpool_req *req)
{
	pthread_mutex_lock(&p->mu);
	if (req->state == JOB_DONE) {
		if (req->err < 0 || req->pod.fd < 0) {
			free(req);
		} else {
			/* Made: released like any pod's network, in order. */
			req->release = true;
			push(p, req);
		}
	} else {
		req->cancelled = true;
		/* Being made: its address is up until its maker takes it down,
		 * so a later request must wait for that as for a release. A
		 * queued one is dropped before it is begun. */
		if (req->state == JOB_MAKING)
			p->n_releasing++;
	}
	pthread_mutex_unlock(&p->mu);
}

void js_netpool_release(struct js_netpool *p, struct js_netpool_pod *pod)
{
	struct js_netpool_req *r = js_xcalloc(1, sizeof(*r));
	r->release = true;
	r->pos = -1;
	r->pod = *pod;
	pod->fd = -1;
	pthread_mutex_lock(&p->mu);
	push(p, r);
	pthread_mutex_unlock(&p->mu);
}

int js_netpool_wake_fd(const struct js_netpool *p)
{
	return p->wake_fd;
}

void js_netpool_clear_wake(struct js_netpool *p)
{
	uint64_t n;
	if (read(p->wake_fd, &n, sizeof(n)) < 0) {
		/* EAGAIN: nothing was done since the last time */
	}
}

struct js_netpool *js_netpool_stop(struct js_netpool *p)
{
	if (!p)
		return NULL;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (size_t i = 0; i < p->n_threads; i++)
		pthread_join(p->threads[i], NULL);
	/* Left: releases, cancelled requests, networks made ahead. The run's
	 * namespace is about to go, and every veth with it. */
	free_all(p);
	return NULL;
}
