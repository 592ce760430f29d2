/*
 * net.c - the network of one local run (see net.h).
 *
 * The kernel's work for pod namespaces is done by threads (netpool.h);
 * this file keeps the addresses, which pod holds which, which pods still
 * wait for their network, and the setup and teardown of the run's
 * namespace.
 */
#include "local/net.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "local/hosts.h"
#include "local/netpool.h"
#include "local/nl.h"

#define NET_BRIDGE "jsbr0"
#define NET_NS_SELF "/proc/thread-self/ns/net"
/* /proc/sys/net is the opening thread's namespace's. */
#define NET_ADDR_GEN_MODE "/proc/sys/net/ipv6/conf/default/addr_gen_mode"

struct js_net {
	enum js_net_mode mode;
	char *why, *describe;
	struct js_ipam *ipam;
	char host_ip[16];
	/* pod mode */
	bool userns;            /* the runner entered its own user namespace */
	int host_fd, run_fd;
	struct js_nl *nl;       /* in the run's namespace */
	int bridge;
	struct js_netpool *pool;
	size_t n_pending;       /* pods whose network is still being made */
	size_t n_holders;
	struct js_net_pod **holders; /* live pod per position */
	/* degraded mode */
	char *registry;
	int block;
	struct js_publish_fwd *fwd;
	struct js_net_pod *live; /* every pod handle, for js_net_free */
};

struct js_net_pod {
	struct js_net *net;     /* NULL once the run's network is gone */
	struct js_net_pod *prev, *next;
	int64_t pos;            /* -1: a dynamic address */
	uint32_t addr;
	char ip[16];
	struct js_netpool_pod made; /* namespace and veth; fd -1 when none */
	struct js_netpool_req *req; /* pod mode: asked for, not made yet */
	int err;                /* pod mode: the network could not be made */
	bool pod_ns;            /* pod mode: it has (or will have) a namespace */
	bool released;
};

/* ---- setup ---- */

static int write_proc(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, text, strlen(text));
	int err = n < 0 ? -errno : (size_t)n != strlen(text) ? -EIO : 0;
	close(fd);
	return err;
}

/** Enter a new user namespace mapping our uid and gid to themselves: the
 * unprivileged way to own network namespaces. Needs a single thread. */
static int enter_userns(void)
{
	char uid_map[48], gid_map[48];
	snprintf(uid_map, sizeof(uid_map), "%u %u 1\n", (unsigned)geteuid(), (unsigned)geteuid());
	snprintf(gid_map, sizeof(gid_map), "%u %u 1\n", (unsigned)getegid(), (unsigned)getegid());
	if (unshare(CLONE_NEWUSER) < 0)
		return -errno;
	int r = write_proc("/proc/self/setgroups", "deny");
	if (!r)
		r = write_proc("/proc/self/uid_map", uid_map);
	if (!r)
		r = write_proc("/proc/self/gid_map", gid_map);
	return r;
}

/** Build the run's namespace with its bridge; on failure say why in
 * *ret_why (static) and leave the thread where it can still work. */
static int pods_setup(struct js_net *net, const char **ret_why)
{
	net->host_fd = open(NET_NS_SELF, O_RDONLY | O_CLOEXEC);
	if (net->host_fd < 0) {
		*ret_why = "cannot open " NET_NS_SELF;
		return -errno;
	}
	int r = unshare(CLONE_NEWNET) < 0 ? -errno : 0;
	if (r == -EPERM && geteuid() != 0) {
		r = enter_userns();
		if (r < 0) {
			*ret_why = "no user namespace for an unprivileged runner";
			return r;
		}
		net->userns = true;
		r = unshare(CLONE_NEWNET) < 0 ? -errno : 0;
	}
	if (r < 0) {
		*ret_why = "unshare(CLONE_NEWNET)";
		return r;
	}
	net->run_fd = open(NET_NS_SELF, O_RDONLY | O_CLOEXEC);
	/* Links made in the run's namespace from now on (the bridge, every
	 * pod's veth) get no IPv6 link-local address: each would send
	 * neighbour discovery, router solicitations and MLD reports, which
	 * the bridge floods to every port (nl.h, js_nl_link_up_no_ll). Only
	 * this namespace's default; without IPv6 there is nothing to set. */
	if (write_proc(NET_ADDR_GEN_MODE, "1") < 0) {
		/* no IPv6, or a kernel before the setting: links as they are */
	}
	*ret_why = "cannot open the run's namespace";
	r = net->run_fd < 0 ? -errno : js_nl_open(&net->nl);
	if (!r) {
		*ret_why = "loopback";
		r = js_nl_link_set(net->nl, 1, NULL, true, NULL);
	}
	if (!r) {
		*ret_why = "bridge";
		r = js_nl_add_bridge(net->nl, NET_BRIDGE, &net->bridge);
	}
	if (!r) {
		*ret_why = "bridge address";
		r = js_nl_add_addr4(net->nl, net->bridge, js_ipam_gateway(net->ipam), JS_IPAM_BLOCK_BITS);
	}
	if (!r)
		return 0;
	/* Back to the machine's network. Inside our own user namespace the
	 * way back is closed; stay in the new, empty namespace with its
	 * loopback up: the degraded mode works there too, and is isolated. */
	if (setns(net->host_fd, CLONE_NEWNET) < 0) {
		struct js_nl *lo = NULL;
		if (js_nl_open(&lo) == 0 && js_nl_link_set(lo, 1, NULL, true, NULL) < 0) {
			/* 127.0.0.1 stays down: the pods' loopback block too */
		}
		js_nl_close(lo);
	}
	return r;
}

static void pods_teardown(struct js_net *net)
{
	net->nl = js_nl_close(net->nl);
	if (net->run_fd >= 0)
		close(net->run_fd);
	net->run_fd = -1;
	if (net->host_fd >= 0) {
		/* Fails inside our own user namespace: nothing to go back to. */
		(void)setns(net->host_fd, CLONE_NEWNET);
		close(net->host_fd);
	}
	net->host_fd = -1;
}

/** Degraded mode: claim a loopback block; never fails. Returns a note on
 * where it came from (caller frees). */
static char *loopback_setup(struct js_net *net, const char *registry)
{
	int r = 0;
	if (registry)
		net->registry = js_xstrdup(registry);
	else
		r = js_ipam_default_registry(&net->registry);
	if (!r)
		r = js_ipam_claim_block(net->registry, &net->block);
	if (r < 0) {
		/* Unlocked, but still unlikely to collide: spread by pid. */
		net->block = JS_IPAM_LOOPBACK_FIRST + (int)(getpid() % (JS_IPAM_LOOPBACK_LAST - JS_IPAM_LOOPBACK_FIRST + 1));
		free(net->registry);
		net->registry = NULL;
		return js_buf_format("; no block registry (%s), so the block was picked by pid", js_strerror(r));
	}
	return js_buf_format(" (claimed in %s)", net->registry);
}

int js_net_new(const struct js_net_opts *o, struct js_net **ret_net)
{
	struct js_net *net = js_xcalloc(1, sizeof(*net));
	net->host_fd = net->run_fd = -1;
	net->block = -1;
	uint64_t n_pos = js_hosts_n_positions(o->js);
	net->ipam = js_ipam_new(JS_IPAM_POD_BASE, n_pos);
	if (o->external_base) {
		/* Container mode: the runtime makes the namespaces. */
		js_ipam_free(net->ipam);
		net->ipam = js_ipam_new(o->external_base, n_pos);
		net->mode = JS_NET_EXTERNAL;
		js_ipam_format(js_ipam_gateway(net->ipam), net->host_ip);
		char base[16];
		js_ipam_format(o->external_base, base);
		net->describe = js_buf_format("every pod is a container pod on network %s (%s/%d)",
					      o->external_name ? o->external_name : "?", base, JS_IPAM_BLOCK_BITS);
		*ret_net = net;
		return 0;
	}
	const char *step = "disabled by --no-namespaces";
	int r = o->no_namespaces ? -EPERM : pods_setup(net, &step);
	if (r == 0) {
		step = "the namespace maker threads";
		r = js_netpool_start(net->run_fd, net->bridge, js_ipam_base(net->ipam), n_pos, &net->pool);
	}
	if (r == 0) {
		net->mode = JS_NET_PODS;
		net->n_holders = n_pos < js_ipam_capacity() ? (size_t)n_pos : js_ipam_capacity();
		net->holders = js_xcalloc(net->n_holders + 1, sizeof(*net->holders));
		js_ipam_format(js_ipam_gateway(net->ipam), net->host_ip);
		char base[16];
		js_ipam_format(js_ipam_base(net->ipam), base);
		net->describe = js_buf_format("every pod has its own network namespace, on bridge %s "
					      "(%s/%d) in the run's own namespace%s",
					      NET_BRIDGE, base, JS_IPAM_BLOCK_BITS,
					      net->userns ? " (inside a user namespace of the runner)" : "");
	} else {
		pods_teardown(net);
		net->mode = JS_NET_LOOPBACK;
		net->why = o->no_namespaces ? js_xstrdup(step) : js_buf_format("%s: %s", step, js_strerror(r));
		char *note = loopback_setup(net, o->registry);
		js_ipam_free(net->ipam);
		net->ipam = js_ipam_new((127u << 24) | ((uint32_t)net->block << 16), n_pos);
		snprintf(net->host_ip, sizeof(net->host_ip), "127.0.0.1");
		net->describe = js_buf_format("no network namespaces (%s): pods share this "
					      "machine's network; this run's pods use 127.%d.0.0/%d%s",
					      net->why, net->block, JS_IPAM_BLOCK_BITS, note);
		free(note);
	}
	if (o->n_publish) {
		struct js_publish_target *t = js_xcalloc(o->n_publish, sizeof(*t));
		r = 0;
		for (size_t i = 0; i < o->n_publish && !r; i++) {
			uint64_t pos;
			char *err = NULL;
			r = js_publish_resolve(o->js, &o->publish[i], &pos, &err);
			free(err);
			if (!r)
				r = js_ipam_fixed(net->ipam, pos, &t[i].addr);
			t[i].listen_fd = o->publish[i].listen_fd;
			t[i].port = o->publish[i].port;
		}
		if (!r)
			r = js_publish_start(t, o->n_publish, &net->fwd);
		free(t);
		if (r < 0) {
			js_net_free(net);
			return r;
		}
	}
	*ret_net = net;
	return 0;
}

struct js_net *js_net_free(struct js_net *net)
{
	if (!net)
		return NULL;
	net->fwd = js_publish_stop(net->fwd);
	/* Pods that outlive the run's network keep their address only. */
	while (net->live) {
		struct js_net_pod *p = net->live;
		js_net_pod_release(p);
		net->live = p->next;
		p->net = NULL;
		p->prev = p->next = NULL;
	}
	net->pool = js_netpool_stop(net->pool);
	pods_teardown(net);
	if (net->registry)
		(void)js_ipam_release_block(net->registry, net->block);
	free(net->registry);
	free(net->holders);
	js_ipam_free(net->ipam);
	free(net->why);
	free(net->describe);
	free(net);
	return NULL;
}

enum js_net_mode js_net_mode(const struct js_net *net)
{
	return net->mode;
}

const char *js_net_why(const struct js_net *net)
{
	return net->why;
}

const char *js_net_describe(const struct js_net *net)
{
	return net->describe;
}

const struct js_ipam *js_net_ipam(const struct js_net *net)
{
	return net->ipam;
}

const char *js_net_host_ip(const struct js_net *net)
{
	return net->host_ip;
}

/* ---- pods ---- */

/** Collect the pod's network if it is made. Returns true when the request
 * is over (made or failed). */
static bool collect(struct js_net *net, struct js_net_pod *p)
{
	int r = js_netpool_take(net->pool, p->req, &p->made);
	if (r == -EAGAIN)
		return false;
	p->req = NULL;
	p->err = r;
	net->n_pending--;
	return true;
}

/** Take the network away from the pod at position `pos`, if any. */
static void evict(struct js_net *net, int64_t pos)
{
	if (pos < 0 || (uint64_t)pos >= net->n_holders || !net->holders[pos])
		return;
	js_net_pod_release(net->holders[pos]);
}

int js_net_pod_new(struct js_net *net, int64_t pos, struct js_net_pod **ret)
{
	struct js_net_pod *p = js_xcalloc(1, sizeof(*p));
	p->pos = pos;
	p->made.fd = -1;
	int r = pos >= 0 ? js_ipam_fixed(net->ipam, (uint64_t)pos, &p->addr) : js_ipam_take(net->ipam, &p->addr);
	if (r < 0) {
		free(p);
		return r;
	}
	js_ipam_format(p->addr, p->ip);
	p->net = net;
	p->next = net->live;
	if (net->live)
		net->live->prev = p;
	net->live = p;
	if (net->mode == JS_NET_PODS) {
		/* The release is queued before the make: the old holder's veth
		 * is down before the address comes up again. */
		evict(net, pos);
		p->pod_ns = true;
		p->req = js_netpool_ask(net->pool, pos, p->addr);
		net->n_pending++;
		(void)collect(net, p); /* made ahead: ready now */
		if (pos >= 0 && (uint64_t)pos < net->n_holders)
			net->holders[pos] = p;
	}
	*ret = p;
	return 0;
}

size_t js_net_poll(struct js_net *net)
{
	if (!net->pool || !net->n_pending)
		return 0;
	js_netpool_clear_wake(net->pool);
	size_t n = 0;
	for (struct js_net_pod *p = net->live; p; p = p->next)
		n += p->req && collect(net, p);
	return n;
}

int js_net_wake_fd(const struct js_net *net)
{
	return net->pool ? js_netpool_wake_fd(net->pool) : -1;
}

size_t js_net_n_pending(const struct js_net *net)
{
	return net->n_pending;
}

bool js_net_pod_pending(const struct js_net_pod *p)
{
	return p->req != NULL;
}

void js_net_pod_release(struct js_net_pod *p)
{
	if (!p || p->released)
		return;
	p->released = true;
	struct js_net *net = p->net;
	if (net && p->req) {
		js_netpool_cancel(net->pool, p->req);
		p->req = NULL;
		net->n_pending--;
	}
	if (net && net->pool && p->made.fd >= 0)
		js_netpool_release(net->pool, &p->made);
	else if (p->made.fd >= 0)
		close(p->made.fd);
	p->made.fd = -1;
	if (net && p->pos < 0)
		js_ipam_put(net->ipam, p->addr);
	if (net && p->pos >= 0 && (uint64_t)p->pos < net->n_holders && net->holders[p->pos] == p)
		net->holders[p->pos] = NULL;
}

struct js_net_pod *js_net_pod_free(struct js_net_pod *p)
{
	if (!p)
		return NULL;
	js_net_pod_release(p);
	if (p->net) {
		if (p->prev)
			p->prev->next = p->next;
		else
			p->net->live = p->next;
		if (p->next)
			p->next->prev = p->prev;
	}
	free(p);
	return NULL;
}

int js_net_pod_netns(const struct js_net_pod *p, int *ret_fd)
{
	if (p->released && p->pod_ns)
		return -ENETDOWN;
	if (p->req)
		return -EAGAIN;
	if (p->err < 0)
		return p->err;
	*ret_fd = p->made.fd;
	return 0;
}

const char *js_net_pod_ip(const struct js_net_pod *p)
{
	return p->ip;
}
