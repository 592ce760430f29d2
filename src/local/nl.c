/*
 * nl.c - rtnetlink requests over libmnl (see nl.h).
 *
 * Every request carries NLM_F_ACK, so the kernel ends each exchange with an
 * acknowledgement (or an error) even for a GET: the receive loop always has
 * something to stop on and never waits for a message that will not come.
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

struct js_nl {
	struct mnl_socket *sock;
	unsigned int portid;
	unsigned int seq;
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

/** Send a request and read until its acknowledgement; replies go to `cb`. */
static int talk(struct js_nl *nl, const struct nlmsghdr *h, mnl_cb_t cb, void *data)
{
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
