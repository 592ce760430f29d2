/*
 * netpool.c - the thread that does the kernel's work for pod networks (see
 * netpool.h).
 *
 * Shared under one mutex, with one condition variable for every change: a
 * FIFO of requests (make one for an address, or release one), the state of
 * every pod position (nothing yet, being made ahead, ready, taken, failed)
 * and the few namespaces made ahead. The maker never holds the mutex while
 * it talks to the kernel.
 *
 * Making one: the maker unshares into a new namespace, keeps an fd of it
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
#include <unistd.h>

#include "local/ipam.h"
#include "local/nl.h"

/* Namespaces made ahead and not yet taken, at most: enough to stay ahead
 * of the runner starting processes, few enough that idle ones (positions
 * that start late, or never) cost little. */
#define NETPOOL_AHEAD 32
#define NETPOOL_NS_SELF "/proc/thread-self/ns/net"

enum { POS_NONE, POS_MAKING, POS_READY, POS_TAKEN, POS_FAILED };

struct req {
	struct req *next;
	bool release;               /* else: make one for addr */
	uint32_t addr;
	struct js_netpool_pod pod;  /* made, or to release */
	bool done;
	int err;
};

struct js_netpool {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int run_fd, bridge;
	uint32_t base;
	uint64_t n_positions;       /* made ahead: 0..n_positions-1 */
	uint64_t next_id;           /* veth names; the maker's alone */
	/* under mu */
	struct req *head, *tail;
	uint8_t *state;             /* POS_* per position */
	uint64_t cursor;            /* next position to look at for making ahead */
	size_t n_ready;
	struct {
		uint64_t pos;
		struct js_netpool_pod pod;
	} ready[NETPOOL_AHEAD];
	bool stop;
};

/* ---- the kernel's part (maker thread) ---- */

static void close_pod(struct js_netpool_pod *pod)
{
	if (pod->fd >= 0)
		close(pod->fd);
	pod->fd = -1;
}

static int make_one(struct js_netpool *p, struct js_nl *run_nl, uint32_t addr, struct js_netpool_pod *ret)
{
	*ret = (struct js_netpool_pod){.fd = -1};
	if (!run_nl)
		return -EBADF;
	snprintf(ret->veth, sizeof(ret->veth), "jsv%llu", (unsigned long long)p->next_id++);
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
		r = js_nl_link_set(in, 1, NULL, true, NULL);
	if (!r)
		r = js_nl_ifindex(in, "eth0", &eth0);
	if (!r)
		r = js_nl_add_addr4(in, eth0, addr, JS_IPAM_BLOCK_BITS);
	if (!r)
		r = js_nl_link_set(in, eth0, NULL, true, NULL);
	js_nl_close(in);
	/* A half-made namespace goes with its fd, veth and all. */
	if (r < 0)
		close_pod(ret);
	return r;
}

static void release_one(struct js_nl *run_nl, struct js_netpool_pod *pod)
{
	/* Down at once, so the address stops answering on the bridge now; the
	 * namespace and its veth go when the kernel gets to them. */
	if (run_nl && pod->veth[0] && js_nl_link_set(run_nl, 0, pod->veth, false, NULL) < 0) {
		/* gone already */
	}
	close_pod(pod);
}

/* ---- the queue (under mu) ---- */

static void push(struct js_netpool *p, struct req *r)
{
	r->next = NULL;
	if (p->tail)
		p->tail->next = r;
	else
		p->head = r;
	p->tail = r;
	pthread_cond_broadcast(&p->cv);
}

static struct req *pop(struct js_netpool *p)
{
	struct req *r = p->head;
	p->head = r->next;
	if (!p->head)
		p->tail = NULL;
	return r;
}

/** The next position to make ahead, or -1 when there is none for now. */
static int64_t ahead(struct js_netpool *p)
{
	if (p->n_ready >= NETPOOL_AHEAD)
		return -1;
	while (p->cursor < p->n_positions && p->state[p->cursor] != POS_NONE)
		p->cursor++;
	return p->cursor < p->n_positions ? (int64_t)p->cursor : -1;
}

static void *maker(void *arg)
{
	struct js_netpool *p = arg;
	struct js_nl *run_nl = NULL;
	if (js_nl_open(&run_nl) < 0)
		run_nl = NULL; /* every make then fails with EBADF, and says so */
	pthread_mutex_lock(&p->mu);
	for (;;) {
		int64_t pos = -1;
		while (!p->stop && !p->head && (pos = ahead(p)) < 0)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->stop)
			break;
		if (p->head) {
			/* Requests first: someone waits, or a release must come
			 * before its address is made again. */
			struct req *r = pop(p);
			pthread_mutex_unlock(&p->mu);
			if (r->release) {
				release_one(run_nl, &r->pod);
				free(r);
				pthread_mutex_lock(&p->mu);
				continue;
			}
			int err = make_one(p, run_nl, r->addr, &r->pod);
			pthread_mutex_lock(&p->mu);
			r->err = err;
			r->done = true;
			pthread_cond_broadcast(&p->cv);
			continue;
		}
		p->state[pos] = POS_MAKING;
		pthread_mutex_unlock(&p->mu);
		struct js_netpool_pod made;
		int err = make_one(p, run_nl, p->base + 2u + (uint32_t)pos, &made);
		pthread_mutex_lock(&p->mu);
		if (err < 0) {
			/* Its pod will ask, and hear the error then. */
			p->state[pos] = POS_FAILED;
		} else {
			p->ready[p->n_ready].pos = (uint64_t)pos;
			p->ready[p->n_ready++].pod = made;
			p->state[pos] = POS_READY;
		}
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	js_nl_close(run_nl);
	return NULL;
}

/* ---- the owner's side ---- */

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
	/* Signals stay with the runner's signalfd: none may land here. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(&p->thread, NULL, maker, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		free(p->state);
		free(p);
		return -r;
	}
	*ret = p;
	return 0;
}

int js_netpool_take(struct js_netpool *p, int64_t pos, uint32_t addr, struct js_netpool_pod *ret)
{
	pthread_mutex_lock(&p->mu);
	if (pos >= 0 && (uint64_t)pos < p->n_positions) {
		while (p->state[pos] == POS_MAKING)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->state[pos] == POS_READY) {
			for (size_t i = 0; i < p->n_ready; i++) {
				if (p->ready[i].pos != (uint64_t)pos)
					continue;
				*ret = p->ready[i].pod;
				p->ready[i] = p->ready[--p->n_ready];
				break;
			}
			p->state[pos] = POS_TAKEN;
			pthread_cond_broadcast(&p->cv); /* room to make another ahead */
			pthread_mutex_unlock(&p->mu);
			return 0;
		}
		/* Never made ahead from now on: this pod, or its successor, owns
		 * the address. */
		p->state[pos] = POS_TAKEN;
	}
	struct req r = {.addr = addr};
	push(p, &r);
	while (!r.done)
		pthread_cond_wait(&p->cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
	if (r.err < 0)
		return r.err;
	*ret = r.pod;
	return 0;
}

void js_netpool_release(struct js_netpool *p, struct js_netpool_pod *pod)
{
	struct req *r = js_xcalloc(1, sizeof(*r));
	r->release = true;
	r->pod = *pod;
	pod->fd = -1;
	pthread_mutex_lock(&p->mu);
	push(p, r);
	pthread_mutex_unlock(&p->mu);
}

struct js_netpool *js_netpool_stop(struct js_netpool *p)
{
	if (!p)
		return NULL;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	/* Only releases can be left (a take waits for its make): the run's
	 * namespace is about to go, and every veth with it. */
	while (p->head) {
		struct req *r = pop(p);
		close_pod(&r->pod);
		free(r);
	}
	while (p->n_ready)
		close_pod(&p->ready[--p->n_ready].pod);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->state);
	free(p);
	return NULL;
}
