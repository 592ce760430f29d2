/*
 * nl.c - rtnetlink requests over libmnl (see nl.h).
 *
 * Every request carries NLM_F_ACK, so the kernel ends each exchange with an
 * acknowledgement (or an error) even for a GET: the receive loop always has
 * something to stop on and never waits for a message that will not come.
 *
 * A batch: between js_nl_batch_begin and js_nl_batch_end the requests are
 * appended to one buffer instead of being sent; js_nl_batch_end sends the
 * buffer as one datagram, which the kernel works through message by
 * message (netlink_rcv_skb), acknowledging each, and then reads the
 * acknowledgements. One system call each way instead of one pair per
 * request, and no wake-up of the thread between requests.
 */
#include "local/nl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Requests are a few hundred bytes; the largest reply (one link's
 * attributes) is below 8 KiB, libmnl's own receive size. */
#define NL_REQ 1024
#define NL_BUF 8192
/* Requests in one batch, at most: what a pod network needs is 3. */
#define NL_BATCH 8

struct js_nl {
	struct mnl_socket *sock;
	unsigned int portid;
	unsigned int seq;
	bool batching;
	size_t n_batch, batch_len;
	unsigned int batch_seq;   /* the first request's */
	int batch_err;            /* a request that did not fit */
	char batch[NL_BATCH * NL_REQ];
};

int js_nl_open(struct js_nl **ret_nl)
{
	struct mnl_socket *s = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!s)
		return -errno;
	if (mnl_socket_bind(s, 0, MNL_SOCKET_AUTOPID) < 0) {
		int err = -errno;
		mnl_socket_close(s);
		return err;
	}
	struct js_nl *nl = js_xcalloc(1, sizeof(*nl));
	nl->sock = s;
	nl->portid = mnl_socket_get_portid(s);
	*ret_nl = nl;
	return 0;
}

struct js_nl *js_nl_close(struct js_nl *nl)
{
	if (!nl)
		return NULL;
	mnl_socket_close(nl->sock);
	free(nl);
	return NULL;
}

/** Start a request of `type` with `flags` (NLM_F_REQUEST|NLM_F_ACK added). */
static struct nlmsghdr *start(struct js_nl *nl, void *buf, uint16_t type, uint16_t flags)
{
	/* libmnl leaves attribute padding as it was: zero it all, so no stack
	 * garbage goes to the kernel. */
	memset(buf, 0, NL_REQ);
	struct nlmsghdr *h = mnl_nlmsg_put_header(buf);
	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	h->nlmsg_seq = ++nl->seq;
	return h;
}

/** Send a request and read until its acknowledgement; replies go to `cb`.
 * In a batch a request without replies is queued instead (0). */
static int talk(struct js_nl *nl, const struct nlmsghdr *h, mnl_cb_t cb, void *data)
{
	if (nl->batching) {
		if (cb || nl->n_batch == NL_BATCH || nl->batch_len + NLMSG_ALIGN(h->nlmsg_len) > sizeof(nl->batch)) {
			nl->batch_err = nl->batch_err ? nl->batch_err : -EINVAL;
			return nl->batch_err;
		}
		if (!nl->n_batch)
			nl->batch_seq = h->nlmsg_seq;
		memcpy(nl->batch + nl->batch_len, h, h->nlmsg_len);
		nl->batch_len += NLMSG_ALIGN(h->nlmsg_len);
		nl->n_batch++;
		return 0;
	}
	if (mnl_socket_sendto(nl->sock, h, h->nlmsg_len) < 0)
		return -errno;
	char buf[NL_BUF];
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl->sock, buf, sizeof(buf));
		if (n < 0)
			return errno == EINTR ? -EINTR : -errno;
		int r = mnl_cb_run(buf, (size_t)n, h->nlmsg_seq, nl->portid, cb, data);
		if (r == MNL_CB_ERROR)
			return errno ? -errno : -EIO;
		if (r == MNL_CB_STOP)
			return 0;
	}
}

void js_nl_batch_begin(struct js_nl *nl)
{
	nl->batching = true;
	nl->n_batch = nl->batch_len = 0;
	nl->batch_err = 0;
}

int js_nl_batch_end(struct js_nl *nl)
{
	nl->batching = false;
	if (nl->batch_err || !nl->n_batch)
		return nl->batch_err;
	if (mnl_socket_sendto(nl->sock, nl->batch, nl->batch_len) < 0)
		return -errno;
	/* One acknowledgement per request, in order; the first error wins. */
	int err = 0;
	size_t acked = 0;
	char buf[NL_BUF];
	while (acked < nl->n_batch) {
		ssize_t n = mnl_socket_recvfrom(nl->sock, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		int len = (int)n;
		for (const struct nlmsghdr *h = (const struct nlmsghdr *)buf; mnl_nlmsg_ok(h, len);
		     h = mnl_nlmsg_next(h, &len)) {
			unsigned int k = h->nlmsg_seq - nl->batch_seq;
			if (h->nlmsg_type != NLMSG_ERROR || h->nlmsg_pid != nl->portid || k >= nl->n_batch)
				continue; /* not one of ours */
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);
			if (e->error < 0 && !err)
				err = e->error;
			acked++;
		}
	}
	return err;
}

static int ifindex_cb(const struct nlmsghdr *h, void *data)
{
	if (h->nlmsg_type == RTM_NEWLINK) {
		const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(h);
		*(int *)data = ifi->ifi_index;
	}
	return MNL_CB_OK;
}

int js_nl_ifindex(struct js_nl *nl, const char *name, int *ret_ifindex)
{
	char buf[NL_REQ];
	struct nlmsghdr *h = start(nl, buf, RTM_GETLINK, 0);
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(h, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(h, IFLA_IFNAME, name);
	int idx = 0;
	int r = talk(nl, h, ifindex_cb, &idx);
	if (r < 0)
		return r;
	if (idx <= 0)
		return -ENODEV;
	*ret_ifindex = idx;
	return 0;
}

int js_nl_link_set(struct js_nl *nl, int ifindex, const char *name, bool up, const uint8_t *mac)
{
	char buf[NL_REQ];
	struct nlmsghdr *h = start(nl, buf, RTM_NEWLINK, 0);
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(h, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex > 0 ? ifindex : 0;
	ifi->ifi_flags = up ? IFF_UP : 0;
	ifi->ifi_change = IFF_UP;
	/* Without an index the kernel finds the link by name. */
	if (ifindex <= 0)
		mnl_attr_put_strz(h, IFLA_IFNAME, name);
	/* The kernel sets the address before it changes the flags. */
	if (mac)
		mnl_attr_put(h, IFLA_ADDRESS, 6, mac);
	return talk(nl, h, NULL, NULL);
}

/** Start a request creating link `name`, up. */
static struct nlmsghdr *start_new_link(struct js_nl *nl, void *buf, const char *name)
{
	struct nlmsghdr *h = start(nl, buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(h, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_flags = IFF_UP;
	ifi->ifi_change = IFF_UP;
	mnl_attr_put_strz(h, IFLA_IFNAME, name);
	return h;
}

int js_nl_link_up_no_ll(struct js_nl *nl, int ifindex)
{
	char buf[NL_REQ];
	struct nlmsghdr *h = start(nl, buf, RTM_NEWLINK, 0);
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(h, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	ifi->ifi_flags = IFF_UP;
	ifi->ifi_change = IFF_UP;
	/* The kernel applies the mode before the flags, so no link-local
	 * address is generated when the link comes up (measured: with one,
	 * 256 pods' DAD, router solicitations and MLD reports, each flooded by
	 * the bridge to every port, took ~1 s of the machine's softirq time). */
	struct nlattr *af = mnl_attr_nest_start(h, IFLA_AF_SPEC);
	struct nlattr *in6 = mnl_attr_nest_start(h, AF_INET6);
	mnl_attr_put_u8(h, IFLA_INET6_ADDR_GEN_MODE, IN6_ADDR_GEN_MODE_NONE);
	mnl_attr_nest_end(h, in6);
	mnl_attr_nest_end(h, af);
	return talk(nl, h, NULL, NULL);
}

int js_nl_add_bridge(struct js_nl *nl, const char *name, int *ret_ifindex)
{
	char buf[NL_REQ];
	struct nlmsghdr *h = start_new_link(nl, buf, name);
	struct nlattr *info = mnl_attr_nest_start(h, IFLA_LINKINFO);
	mnl_attr_put_strz(h, IFLA_INFO_KIND, "bridge");
	mnl_attr_nest_end(h, info);
	int r = talk(nl, h, NULL, NULL);
	if (r < 0)
		return r;
	return js_nl_ifindex(nl, name, ret_ifindex);
}

int js_nl_add_veth(struct js_nl *nl, const struct js_nl_veth *v)
{
	char buf[NL_REQ];
	struct nlmsghdr *h = start_new_link(nl, buf, v->name);
	/* One queue each way on both sides. Left to itself the kernel gives a
	 * veth one queue per CPU and then cuts the real number down to one,
	 * which waits for an RCU grace period (synchronize_net) while holding
	 * the rtnetlink lock - twice per pair; measured, that wait was ~3/4 of
	 * a pod network's wall time on a loaded 2-vCPU machine (BENCHMARKS.md). */
	mnl_attr_put_u32(h, IFLA_NUM_TX_QUEUES, 1);
	mnl_attr_put_u32(h, IFLA_NUM_RX_QUEUES, 1);
	if (v->master > 0)
		mnl_attr_put_u32(h, IFLA_MASTER, (uint32_t)v->master);
	struct nlattr *info = mnl_attr_nest_start(h, IFLA_LINKINFO);
	mnl_attr_put_strz(h, IFLA_INFO_KIND, "veth");
	struct nlattr *data = mnl_attr_nest_start(h, IFLA_INFO_DATA);
	struct nlattr *peer = mnl_attr_nest_start(h, VETH_INFO_PEER);
	/* VETH_INFO_PEER holds a whole ifinfomsg and then the peer's own
	 * attributes. No IFF_UP there: the kernel opens the peer before the
	 * pair is linked and fails with ENOTCONN; the peer is brought up from
	 * its own namespace afterwards. */
	struct ifinfomsg *pi = mnl_nlmsg_get_payload_tail(h);
	memset(pi, 0, sizeof(*pi));
	pi->ifi_family = AF_UNSPEC;
	h->nlmsg_len += MNL_ALIGN(sizeof(*pi));
	mnl_attr_put_strz(h, IFLA_IFNAME, v->peer_name);
	mnl_attr_put_u32(h, IFLA_NET_NS_FD, (uint32_t)v->peer_ns_fd);
	mnl_attr_put_u32(h, IFLA_NUM_TX_QUEUES, 1);
	mnl_attr_put_u32(h, IFLA_NUM_RX_QUEUES, 1);
	if (v->peer_mac)
		mnl_attr_put(h, IFLA_ADDRESS, 6, v->peer_mac);
	mnl_attr_nest_end(h, peer);
	mnl_attr_nest_end(h, data);
	mnl_attr_nest_end(h, info);
	return talk(nl, h, NULL, NULL);
}

int js_nl_add_addr4(struct js_nl *nl, int ifindex, uint32_t addr, int prefix)
{
	char buf[NL_REQ];
	struct nlmsghdr *h = start(nl, buf, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(h, sizeof(*ifa));
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = (unsigned char)prefix;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = (unsigned)ifindex;
	uint32_t be = htonl(addr);
	mnl_attr_put_u32(h, IFA_LOCAL, be);
	mnl_attr_put_u32(h, IFA_ADDRESS, be);
	return talk(nl, h, NULL, NULL);
}

int js_nl_del_link(struct js_nl *nl, const char *name)
{
	char buf[NL_REQ];
	struct nlmsghdr *h = start(nl, buf, RTM_DELLINK, 0);
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(h, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(h, IFLA_IFNAME, name);
	return talk(nl, h, NULL, NULL);
}
