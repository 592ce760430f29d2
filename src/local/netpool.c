/*
 * netpool.c - pod network namespaces made ahead by a thread (see
 * netpool.h).
 *
 * One producer (the maker thread), one consumer (the runner's thread), a
 * bounded stack of ready namespaces under a mutex, and one condition
 * variable for every change: a namespace made, an error, a new target, a
 * take, stop. The maker never holds the mutex while it talks to the kernel.
 */
#include "local/netpool.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Most namespaces kept ready: each is a few kernel objects and two fds. */
#define NETPOOL_MAX 64
#define NETPOOL_NS_SELF "/proc/thread-self/ns/net"

struct js_netpool {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int run_fd, bridge;
	uint64_t next_id;       /* veth names; the maker's alone */
	/* under mu */
	size_t want, n;
	struct js_netpool_ns ready[NETPOOL_MAX];
	int err;                /* the maker's failure, for the next take */
	bool stop;
};

void js_netpool_ns_done(struct js_netpool_ns *ns)
{
	ns->nl = js_nl_close(ns->nl);
	if (ns->fd >= 0)
		close(ns->fd);
	ns->fd = -1;
}

/** Make one namespace: unshare into it, keep an fd and a socket there, come
 * back, then build the veth from the run's side and bring lo up. */
static int make(struct js_netpool *p, struct js_nl *run_nl, struct js_netpool_ns *ns)
{
	*ns = (struct js_netpool_ns){.fd = -1};
	snprintf(ns->veth, sizeof(ns->veth), "jsv%llu", (unsigned long long)p->next_id++);
	if (unshare(CLONE_NEWNET) < 0)
		return -errno;
	ns->fd = open(NETPOOL_NS_SELF, O_RDONLY | O_CLOEXEC);
	int r = ns->fd < 0 ? -errno : js_nl_open(&ns->nl);
	/* Back first, whatever happened: everything else runs from the run's
	 * namespace. */
	if (setns(p->run_fd, CLONE_NEWNET) < 0 && !r)
		r = -errno;
	struct js_nl_veth v = {.name = ns->veth, .master = p->bridge, .peer_name = "eth0", .peer_ns_fd = ns->fd};
	if (!r)
		r = js_nl_add_veth(run_nl, &v);
	if (!r)
		r = js_nl_link_set(ns->nl, 1, NULL, true, NULL);
	if (!r)
		r = js_nl_ifindex(ns->nl, "eth0", &ns->eth0);
	if (r < 0)
		js_netpool_ns_done(ns);
	return r;
}

static void *maker(void *arg)
{
	struct js_netpool *p = arg;
	struct js_nl *run_nl = NULL;
	int open_err = js_nl_open(&run_nl);
	pthread_mutex_lock(&p->mu);
	for (;;) {
		/* After a failure, wait until a take has reported it. */
		while (!p->stop && (p->n >= p->want || p->err))
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->stop)
			break;
		pthread_mutex_unlock(&p->mu);
		struct js_netpool_ns ns;
		int r = open_err < 0 ? open_err : make(p, run_nl, &ns);
		pthread_mutex_lock(&p->mu);
		if (r < 0)
			p->err = r;
		else
			p->ready[p->n++] = ns;
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	js_nl_close(run_nl);
	return NULL;
}

static size_t clamp_want(size_t want)
{
	return want < 1 ? 1 : want > NETPOOL_MAX ? NETPOOL_MAX : want;
}

int js_netpool_start(int run_fd, int bridge, size_t want, struct js_netpool **ret)
{
	struct js_netpool *p = js_xcalloc(1, sizeof(*p));
	p->run_fd = run_fd;
	p->bridge = bridge;
	p->want = clamp_want(want);
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
		free(p);
		return -r;
	}
	*ret = p;
	return 0;
}

int js_netpool_take(struct js_netpool *p, struct js_netpool_ns *ret)
{
	pthread_mutex_lock(&p->mu);
	while (p->n == 0 && !p->err)
		pthread_cond_wait(&p->cv, &p->mu);
	int r = 0;
	if (p->n) {
		*ret = p->ready[--p->n];
	} else {
		r = p->err;
		p->err = 0;
	}
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return r;
}

void js_netpool_want(struct js_netpool *p, size_t want)
{
	pthread_mutex_lock(&p->mu);
	p->want = clamp_want(want);
	pthread_cond_broadcast(&p->cv);
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
	while (p->n)
		js_netpool_ns_done(&p->ready[--p->n]);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
	return NULL;
}
