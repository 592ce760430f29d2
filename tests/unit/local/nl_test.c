/*
 * nl_test.c - rtnetlink requests in a namespace of the test's own.
 *
 * Needs CAP_SYS_ADMIN for a new network namespace (root; says so and skips
 * otherwise). Each test moves its thread into a fresh network namespace
 * and back, so nothing on the machine is touched.
 *
 * Batches: requests queued between js_nl_batch_begin and js_nl_batch_end
 * all take effect, in order, with one answer; a failing request does not
 * stop the others and its error is the batch's; a request that reads a
 * reply, or one too many, is refused and fails the batch, which then sends
 * nothing. A link brought up with js_nl_link_up_no_ll, with a carrier, has
 * no IPv6 link-local address, while lo keeps ::1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "local/nl.h"
#include "support/testutil.h"

/* 10.9.0.1 and 10.9.0.2, host byte order. */
#define ADDR_A ((10u << 24) | (9u << 16) | 1u)
#define ADDR_B ((10u << 24) | (9u << 16) | 2u)

/** What a namespace holds for one link, read with getifaddrs (its netlink
 * socket is the calling thread's namespace's). */
struct seen {
	bool up;
	bool v4;   /* has address `v4` */
	bool v6;   /* has any IPv6 address */
};

static struct seen look(const char *name, uint32_t v4)
{
	struct ifaddrs *all = NULL;
	struct seen s = {0};
	assert_int_equal(getifaddrs(&all), 0);
	for (struct ifaddrs *i = all; i; i = i->ifa_next) {
		if (strcmp(i->ifa_name, name) != 0)
			continue;
		s.up |= (i->ifa_flags & IFF_UP) != 0;
		int fam = i->ifa_addr ? i->ifa_addr->sa_family : -1;
		s.v6 |= fam == AF_INET6;
		if (fam == AF_INET)
			s.v4 |= ntohl(((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr.s_addr) == v4;
	}
	freeifaddrs(all);
	return s;
}

/** Run `body` in a fresh network namespace, then go back: the test's
 * thread moves (unshare and setns affect only the calling thread), the
 * rest of the machine never sees it. */
static void in_fresh_netns(void (*body)(struct js_nl *nl))
{
	int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	assert_true(home >= 0);
	if (unshare(CLONE_NEWNET) < 0) {
		close(home);
		print_message("no new network namespace here (%s; needs CAP_SYS_ADMIN): not tested\n", strerror(errno));
		skip();
	}
	struct js_nl *nl = NULL;
	assert_int_equal(js_nl_open(&nl), 0);
	body(nl);
	js_nl_close(nl);
	assert_int_equal(setns(home, CLONE_NEWNET), 0);
	close(home);
}

/** A veth pair nla/nlb in this namespace, both down. */
static void add_pair(struct js_nl *nl, int *ret_a, int *ret_b)
{
	int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	assert_true(self >= 0);
	struct js_nl_veth v = {.name = "nla", .peer_name = "nlb", .peer_ns_fd = self};
	assert_int_equal(js_nl_add_veth(nl, &v), 0);
	close(self);
	assert_int_equal(js_nl_ifindex(nl, "nla", ret_a), 0);
	assert_int_equal(js_nl_ifindex(nl, "nlb", ret_b), 0);
}

static void batch_all_take_effect(struct js_nl *nl)
{
	int a = 0, b = 0;
	add_pair(nl, &a, &b);
	js_nl_batch_begin(nl);
	assert_int_equal(js_nl_link_set(nl, 1, NULL, true, NULL), 0);
	assert_int_equal(js_nl_add_addr4(nl, a, ADDR_A, 24), 0);
	assert_int_equal(js_nl_add_addr4(nl, b, ADDR_B, 24), 0);
	assert_int_equal(js_nl_link_up_no_ll(nl, b), 0);
	/* Queued, not sent: nothing has changed yet (nla is up since its
	 * creation, nl.h). */
	assert_false(look("lo", 0).up);
	assert_false(look("nla", ADDR_A).v4);
	assert_false(look("nlb", ADDR_B).up);
	assert_int_equal(js_nl_batch_end(nl), 0);
	struct seen lo = look("lo", (127u << 24) | 1u), na = look("nla", ADDR_A), nb = look("nlb", ADDR_B);
	assert_true(lo.up && lo.v4 && na.up && na.v4 && nb.up && nb.v4);
	/* nlb came up with a carrier (nla was up) and has no link-local
	 * address; IPv6 itself is there where the kernel has it (::1). */
	assert_false(nb.v6);
	if (access("/proc/sys/net/ipv6", F_OK) == 0)
		assert_true(lo.v6);
	/* An empty batch is nothing. */
	js_nl_batch_begin(nl);
	assert_int_equal(js_nl_batch_end(nl), 0);
}

static void test_batch_all_take_effect(void **state)
{
	(void)state;
	in_fresh_netns(batch_all_take_effect);
}

static void batch_error_does_not_stop_the_rest(struct js_nl *nl)
{
	int a = 0, b = 0;
	add_pair(nl, &a, &b);
	js_nl_batch_begin(nl);
	assert_int_equal(js_nl_add_addr4(nl, a, ADDR_A, 24), 0);
	assert_int_equal(js_nl_add_addr4(nl, 100000, ADDR_B, 24), 0); /* no such link */
	assert_int_equal(js_nl_link_up_no_ll(nl, a), 0);
	assert_int_equal(js_nl_add_addr4(nl, a, ADDR_A, 24), 0); /* EEXIST, after the first error */
	assert_int_equal(js_nl_batch_end(nl), -ENODEV);
	struct seen na = look("nla", ADDR_A);
	assert_true(na.v4 && na.up);
	/* The socket is in step again: a single request gets its own answer. */
	assert_int_equal(js_nl_link_set(nl, 1, NULL, true, NULL), 0);
	assert_int_equal(js_nl_add_addr4(nl, a, ADDR_A, 24), -EEXIST);
}

static void test_batch_error_does_not_stop_the_rest(void **state)
{
	(void)state;
	in_fresh_netns(batch_error_does_not_stop_the_rest);
}

static void batch_refuses(struct js_nl *nl)
{
	int idx = 0;
	/* A request that reads a reply cannot be queued. */
	js_nl_batch_begin(nl);
	assert_int_equal(js_nl_link_set(nl, 1, NULL, true, NULL), 0);
	assert_int_equal(js_nl_ifindex(nl, "lo", &idx), -EINVAL);
	assert_int_equal(js_nl_batch_end(nl), -EINVAL);
	assert_false(look("lo", 0).up); /* nothing was sent */
	/* Eight fit; the ninth is refused, and so is the batch. */
	js_nl_batch_begin(nl);
	for (int i = 0; i < 8; i++)
		assert_int_equal(js_nl_link_set(nl, 1, NULL, true, NULL), 0);
	assert_int_equal(js_nl_link_set(nl, 1, NULL, true, NULL), -EINVAL);
	assert_int_equal(js_nl_batch_end(nl), -EINVAL);
	/* Outside a batch everything works as before. */
	assert_int_equal(js_nl_ifindex(nl, "lo", &idx), 0);
	assert_int_equal(idx, 1);
}

static void test_batch_refuses(void **state)
{
	(void)state;
	in_fresh_netns(batch_refuses);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_all_take_effect),
		cmocka_unit_test(test_batch_error_does_not_stop_the_rest),
		cmocka_unit_test(test_batch_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
