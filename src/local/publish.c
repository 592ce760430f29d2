/*
 * publish.c - host ports forwarded to pods (see publish.h).
 *
 * A forwarded connection is a pair of sockets: `c[0]`, accepted on the
 * host, and `c[1]`, dialled to the pod. Data from side i waits in buf[i]
 * until side 1-i takes it; a side is read only when its buffer is empty, so
 * memory per connection is fixed and a slow reader slows its writer (TCP
 * flow control), never the runner. An end of stream is passed on as a
 * shutdown(SHUT_WR) once its buffer is drained; the pair closes when both
 * directions are done, or at the first error.
 */
#include "local/publish.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "api/render.h"
#include "base/buf.h"
#include "base/parse.h"
#include "local/hosts.h"

/* Accepts waiting in the kernel per listening socket. */
#define PUBLISH_BACKLOG 64

int js_publish_parse(const char *arg, struct js_publish *ret, char **ret_err)
{
	const char *c1 = strchr(arg, ':');
	const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c1 || c1 == arg || (c2 && strchr(c2 + 1, ':'))) {
		*ret_err = js_buf_format("--publish '%s': expected POD:PORT[:HOSTPORT], e.g. myjs-leader-0-0:8080", arg);
		return JS_EINVALID;
	}
	if ((size_t)(c1 - arg) > JS_PUBLISH_POD_MAX) {
		*ret_err = js_buf_format("--publish '%s': the pod hostname is longer than %d characters", arg,
					 JS_PUBLISH_POD_MAX);
		return JS_EINVALID;
	}
	const char *p_end = c2 ? c2 : c1 + strlen(c1);
	int64_t port, host_port;
	if (js_parse_i64_in(c1 + 1, (size_t)(p_end - c1 - 1), 1, 65535, &port) < 0 ||
	    (c2 && js_parse_i64_in(c2 + 1, strlen(c2 + 1), 1, 65535, &host_port) < 0)) {
		*ret_err = js_buf_format("--publish '%s': ports are numbers in 1..65535", arg);
		return JS_EINVALID;
	}
	memset(ret, 0, sizeof(*ret));
	memcpy(ret->pod, arg, (size_t)(c1 - arg));
	ret->port = (uint16_t)port;
	ret->host_port = (uint16_t)(c2 ? host_port : port);
	ret->listen_fd = -1;
	return 0;
}

static int first_host(void *ctx, const char *host, uint64_t pos)
{
	(void)pos;
	snprintf(ctx, JS_PUBLISH_POD_MAX + 1, "%s", host);
	return 1;
}

int js_publish_resolve(const struct js_jobset *js, const struct js_publish *p, uint64_t *ret_pos, char **ret_err)
{
	if (js_hosts_find(js, p->pod, ret_pos) == 0)
		return 0;
	char example[JS_PUBLISH_POD_MAX + 1] = "";
	(void)js_hosts_walk(js, first_host, example);
	*ret_err = example[0] ? js_buf_format("--publish: no Indexed pod of JobSet '%s' has the hostname '%s' "
					      "(hostnames look like '%s')",
					      js_jobset_name(js), p->pod, example)
			      : js_buf_format("--publish: JobSet '%s' has no Indexed pods, so no stable hostname "
					      "like '%s' to forward to",
					      js_jobset_name(js), p->pod);
	return JS_ENOTFOUND;
}

int js_publish_listen(struct js_publish *p)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* The listener may take over a port a previous run left in TIME_WAIT;
	 * another live listener still makes bind() fail. */
	int one = 1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(p->host_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, PUBLISH_BACKLOG) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	p->listen_fd = fd;
	return 0;
}

/* ---- the forwarder ---- */

struct conn {
	int fd[2];            /* 0: accepted on the host, 1: dialled to the pod */
	bool connecting;      /* fd[1] has not connected yet */
	int64_t deadline_ms;  /* for connecting */
	char *buf[2];         /* bytes read from side i, for side 1-i */
	size_t len[2], off[2];
	bool eof[2];          /* side i will send no more */
	bool shut[2];         /* side i was told no more is coming */
};

struct js_publish_fwd {
	pthread_t thread;
	int wake_fd;
	size_t n_targets;
	struct js_publish_target *targets;
	size_t n_conns;
	struct conn conns[JS_PUBLISH_MAX_CONNS];
};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void conn_close(struct js_publish_fwd *f, size_t i)
{
	struct conn *c = &f->conns[i];
	for (int s = 0; s < 2; s++) {
		close(c->fd[s]);
		free(c->buf[s]);
	}
	f->conns[i] = f->conns[--f->n_conns];
}

/** Accept what waits on target `t` and dial the pod for each. */
static void accept_all(struct js_publish_fwd *f, const struct js_publish_target *t)
{
	while (f->n_conns < JS_PUBLISH_MAX_CONNS) {
		int a = accept4(t->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (a < 0)
			return; /* EAGAIN, or a client that gave up meanwhile */
		int b = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(t->port),
					 .sin_addr.s_addr = htonl(t->addr)};
		if (b < 0 || (connect(b, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS)) {
			/* The pod is not there (yet): the client sees the
			 * connection close, as with docker's proxy. */
			if (b >= 0)
				close(b);
			close(a);
			continue;
		}
		struct conn *c = &f->conns[f->n_conns++];
		*c = (struct conn){.fd = {a, b}, .connecting = true, .deadline_ms = mono_ms() + JS_PUBLISH_CONNECT_MS};
		c->buf[0] = js_xmalloc(JS_PUBLISH_BUF);
		c->buf[1] = js_xmalloc(JS_PUBLISH_BUF);
	}
}

/** Move what side `s` has for the other side. Returns false on an error. */
static bool pump_side(struct conn *c, int s)
{
	int o = 1 - s;
	if (c->len[s] == 0 && !c->eof[s]) {
		ssize_t n = recv(c->fd[s], c->buf[s], JS_PUBLISH_BUF, 0);
		if (n > 0) {
			c->len[s] = (size_t)n;
			c->off[s] = 0;
		} else if (n == 0) {
			c->eof[s] = true;
		} else if (errno != EAGAIN && errno != EINTR) {
			return false;
		}
	}
	while (c->off[s] < c->len[s]) {
		ssize_t n = send(c->fd[o], c->buf[s] + c->off[s], c->len[s] - c->off[s], MSG_NOSIGNAL);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		c->off[s] += (size_t)n;
	}
	c->len[s] = c->off[s] = 0;
	if (c->eof[s] && !c->shut[o]) {
		(void)shutdown(c->fd[o], SHUT_WR);
		c->shut[o] = true;
	}
	return true;
}

/** Step connection `i` after poll with the revents of its two sockets.
 * Returns false when it should close. */
static bool conn_step(struct js_publish_fwd *f, size_t i, int64_t now, const short rev[2])
{
	struct conn *c = &f->conns[i];
	if ((rev[0] | rev[1]) & POLLERR)
		return false;
	if (c->connecting) {
		if (!(rev[1] & (POLLOUT | POLLHUP)))
			return now < c->deadline_ms;
		int err = 0;
		socklen_t len = sizeof(err);
		if (getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err)
			return false;
		c->connecting = false;
	}
	if (!pump_side(c, 0) || !pump_side(c, 1))
		return false;
	/* poll reports a hang-up whatever was asked for: a side that is gone
	 * both ways, with nothing left for it, ends the pair rather than
	 * waking every poll. */
	for (int s = 0; s < 2; s++) {
		if ((rev[s] & POLLHUP) && c->eof[s] && c->len[1 - s] == 0)
			return false;
	}
	return !(c->shut[0] && c->shut[1]);
}

/** Events a connection's socket waits for. */
static short conn_events(const struct conn *c, int s)
{
	if (c->connecting)
		return s == 1 ? POLLOUT : 0;
	short ev = 0;
	if (c->len[s] == 0 && !c->eof[s])
		ev |= POLLIN;
	if (c->len[1 - s] > c->off[1 - s])
		ev |= POLLOUT;
	return ev;
}

static void *forwarder(void *arg)
{
	struct js_publish_fwd *f = arg;
	size_t cap = 1 + f->n_targets + 2 * JS_PUBLISH_MAX_CONNS;
	struct pollfd *fds = js_xcalloc(cap, sizeof(*fds));
	for (;;) {
		size_t n = 0;
		fds[n++] = (struct pollfd){.fd = f->wake_fd, .events = POLLIN};
		/* Beyond the bound, clients wait in the listen backlog. */
		bool accepting = f->n_conns < JS_PUBLISH_MAX_CONNS;
		for (size_t t = 0; t < f->n_targets; t++)
			fds[n++] = (struct pollfd){.fd = accepting ? f->targets[t].listen_fd : -1, .events = POLLIN};
		int64_t now = mono_ms(), wake = -1;
		for (size_t i = 0; i < f->n_conns; i++) {
			const struct conn *c = &f->conns[i];
			for (int s = 0; s < 2; s++)
				fds[n++] = (struct pollfd){.fd = c->fd[s], .events = conn_events(c, s)};
			if (c->connecting && (wake < 0 || c->deadline_ms < wake))
				wake = c->deadline_ms;
		}
		int timeout = wake < 0 ? -1 : (wake > now ? (int)(wake - now) : 0);
		if (poll(fds, n, timeout) < 0 && errno != EINTR)
			break;
		if (fds[0].revents)
			break;
		now = mono_ms();
		/* Connections first, by their pollfd slots, before accepting
		 * moves them around. */
		for (size_t i = f->n_conns; i-- > 0;) {
			const struct pollfd *p = &fds[1 + f->n_targets + 2 * i];
			const short rev[2] = {p[0].revents, p[1].revents};
			bool ready = rev[0] || rev[1] || f->conns[i].connecting;
			if (ready && !conn_step(f, i, now, rev))
				conn_close(f, i);
		}
		for (size_t t = 0; t < f->n_targets; t++) {
			if (fds[1 + t].revents)
				accept_all(f, &f->targets[t]);
		}
	}
	free(fds);
	return NULL;
}

int js_publish_start(const struct js_publish_target *targets, size_t n, struct js_publish_fwd **ret)
{
	struct js_publish_fwd *f = js_xcalloc(1, sizeof(*f));
	f->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (f->wake_fd < 0) {
		int err = -errno;
		free(f);
		return err;
	}
	f->n_targets = n;
	f->targets = js_xcalloc(n + 1, sizeof(*targets));
	memcpy(f->targets, targets, n * sizeof(*targets));
	/* Signals stay with the runner's signalfd: none may land here. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(&f->thread, NULL, forwarder, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		close(f->wake_fd);
		free(f->targets);
		free(f);
		return -r;
	}
	*ret = f;
	return 0;
}

struct js_publish_fwd *js_publish_stop(struct js_publish_fwd *f)
{
	if (!f)
		return NULL;
	uint64_t one = 1;
	if (write(f->wake_fd, &one, sizeof(one)) < 0) {
		/* an eventfd write fails only on overflow, which one write cannot reach */
	}
	pthread_join(f->thread, NULL);
	while (f->n_conns)
		conn_close(f, f->n_conns - 1);
	close(f->wake_fd);
	free(f->targets);
	free(f);
	return NULL;
}
