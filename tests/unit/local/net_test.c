/*
 * net_test.c - the run's network without the rest of the runtime.
 *
 * Pod mode (needs root or an unprivileged user namespace; says so and
 * skips otherwise): a pod's namespace has its address on eth0, two pods
 * reach each other by address, the run's namespace reaches them, a NonIndexed
 * pod gets an address above the positions, no link but lo has an IPv6
 * address (no link-local ones), and the run's namespace is left
 * again at the end (by root: an unprivileged runner stays in its user
 * namespace, see net.h). The pods' sockets are made by threads that join a pod's
 * namespace (setns affects only the calling thread). Networks are made
 * after js_net_pod_new returns; the tests wait for them as the runner does
 * (the wake fd). Many pods asked for at once all get their own namespace
 * and address, and after js_net_free the process holds no namespace; a
 * released pod's namespace is closed (its veth gone) while the run goes
 * on, once the makers are idle; a pod cancelled before its network is made, replaced while
 * it holds its address, or restarted leaves the address answering once,
 * from the newest pod.
 *
 * Degraded mode: two runs at once claim different loopback blocks from the
 * registry, and the second run after the first ends gets a fresh one.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "local/net.h"
#include "support/testutil.h"

/* Two Indexed pods (positions 0 and 1), then a NonIndexed Job's two
 * positions (2 and 3). */
static const char *const JOBSET_YAML =
	"apiVersion: jobset.x-k8s.io/v1alpha2\n"
	"kind: JobSet\n"
	"metadata: {name: nt}\n"
	"spec:\n"
	"  replicatedJobs:\n"
	"  - name: w\n"
	"    template:\n"
	"      spec:\n"
	"        completions: 2\n"
	"        parallelism: 2\n"
	"        template:\n"
	"          spec:\n"
	"            restartPolicy: Never\n"
	"            containers: [{name: c, image: x, command: ['true']}]\n"
	"  - name: dyn\n"
	"    template:\n"
	"      spec:\n"
	"        completionMode: NonIndexed\n"
	"        completions: 2\n"
	"        parallelism: 2\n"
	"        template:\n"
	"          spec:\n"
	"            restartPolicy: Never\n"
	"            containers: [{name: c, image: x, command: ['true']}]\n";

static struct js_jobset *jobset(void)
{
	json_t *j = tu_yaml(JOBSET_YAML);
	struct js_jobset *js = tu_decode(j);
	json_decref(j);
	return js;
}

static ino_t netns_ino(int fd)
{
	struct stat st;
	char path[64];
	if (fd >= 0)
		assert_int_equal(fstat(fd, &st), 0);
	else
		assert_int_equal(stat((snprintf(path, sizeof(path), "/proc/thread-self/ns/net"), path), &st), 0);
	return st.st_ino;
}

/* ---- pod mode ---- */

/** Wait until the pod's network is made, as the runner does: poll the wake
 * fd, collect, until the pod is no longer pending (10 s at most). */
static void wait_made(struct js_net *net, const struct js_net_pod *p)
{
	struct pollfd pfd = {.fd = js_net_wake_fd(net), .events = POLLIN};
	assert_true(pfd.fd >= 0);
	for (int i = 0; js_net_pod_pending(p); i++) {
		assert_true(i < 1000);
		int n = poll(&pfd, 1, 10);
		assert_true(n >= 0);
		(void)js_net_poll(net);
	}
}

struct peer {
	int netns_fd;          /* -1: stay in the caller's namespace */
	const char *listen_ip; /* listen here, or NULL to connect */
	const char *dial_ip;
	int listen_fd;         /* out: a listening socket */
	int err;               /* out: 0 or -errno */
};

/** In a thread: join a pod's namespace, then listen or connect on 7000. */
static void *peer_main(void *arg)
{
	struct peer *p = arg;
	if (p->netns_fd >= 0 && setns(p->netns_fd, CLONE_NEWNET) < 0) {
		p->err = -errno;
		return NULL;
	}
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(7000)};
	inet_pton(AF_INET, p->listen_ip ? p->listen_ip : p->dial_ip, &sa.sin_addr);
	if (p->listen_ip) {
		/* No SO_REUSEADDR: each pod's namespace has its own ports. */
		p->err = bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(s, 4) < 0 ? -errno : 0;
		p->listen_fd = s;
		return NULL;
	}
	p->err = connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	close(s);
	return NULL;
}

/** Whether any link of namespace `netns_fd` (-1: the thread's own) but
 * lo has an IPv6 address (getifaddrs reads the thread's namespace). */
static bool has_v6_beyond_lo(int netns_fd)
{
	int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	assert_true(home >= 0);
	if (netns_fd >= 0)
		assert_int_equal(setns(netns_fd, CLONE_NEWNET), 0);
	struct ifaddrs *all = NULL;
	assert_int_equal(getifaddrs(&all), 0);
	bool v6 = false;
	for (struct ifaddrs *i = all; i; i = i->ifa_next)
		v6 |= i->ifa_addr && i->ifa_addr->sa_family == AF_INET6 && strcmp(i->ifa_name, "lo") != 0;
	freeifaddrs(all);
	assert_int_equal(setns(home, CLONE_NEWNET), 0);
	close(home);
	return v6;
}

/** Network namespaces this process holds open as fds. */
static int netns_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char target[64];
		ssize_t len = readlinkat(dirfd(d), e->d_name, target, sizeof(target) - 1);
		if (len > 0) {
			target[len] = '\0';
			n += strncmp(target, "net:[", 5) == 0;
		}
	}
	closedir(d);
	return n;
}

/** Links in the thread's namespace. */
static int n_links(void)
{
	struct if_nameindex *all = if_nameindex();
	assert_non_null(all);
	int n = 0;
	while (all[n].if_index)
		n++;
	if_freenameindex(all);
	return n;
}

static int in_thread(struct peer *p)
{
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, peer_main, p), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	return p->err;
}

static void test_pod_mode(void **state)
{
	(void)state;
	struct js_jobset *js = jobset();
	struct js_net_opts o = {.js = js};
	struct js_net *net = NULL;
	ino_t host = netns_ino(-1);
	assert_int_equal(js_net_new(&o, &net), 0);
	if (js_net_mode(net) != JS_NET_PODS) {
		print_message("no network namespaces here (%s): pod mode not tested\n", js_net_why(net));
		js_net_free(net);
		js_jobset_free(js);
		skip();
	}
	assert_null(js_net_why(net));
	/* An unprivileged runner entered a user namespace, and cannot leave. */
	bool userns = strstr(js_net_describe(net), "inside a user namespace") != NULL;
	assert_string_equal(js_net_host_ip(net), "10.244.0.1");
	assert_true(netns_ino(-1) != host); /* the thread is in the run's namespace */

	struct js_net_pod *a = NULL, *b = NULL, *dyn = NULL;
	assert_int_equal(js_net_pod_new(net, 0, &a), 0);
	assert_int_equal(js_net_pod_new(net, 1, &b), 0);
	assert_int_equal(js_net_pod_new(net, -1, &dyn), 0);
	wait_made(net, a);
	wait_made(net, b);
	wait_made(net, dyn);
	assert_int_equal(js_net_n_pending(net), 0);
	assert_string_equal(js_net_pod_ip(a), "10.244.0.2");
	assert_string_equal(js_net_pod_ip(b), "10.244.0.3");
	assert_string_equal(js_net_pod_ip(dyn), "10.244.0.6"); /* above the 4 positions */
	int fa = -1, fb = -1;
	assert_int_equal(js_net_pod_netns(a, &fa), 0);
	assert_int_equal(js_net_pod_netns(b, &fb), 0);
	assert_true(fa >= 0 && fb >= 0 && netns_ino(fa) != netns_ino(fb));

	/* Both pods listen on 7000 at once; b and the run reach a. */
	struct peer la = {.netns_fd = fa, .listen_ip = "0.0.0.0"}, lb = {.netns_fd = fb, .listen_ip = "0.0.0.0"};
	assert_int_equal(in_thread(&la), 0);
	assert_int_equal(in_thread(&lb), 0);
	struct peer b_to_a = {.netns_fd = fb, .dial_ip = "10.244.0.2"};
	assert_int_equal(in_thread(&b_to_a), 0);
	struct peer run_to_b = {.netns_fd = -1, .dial_ip = "10.244.0.3"};
	assert_int_equal(in_thread(&run_to_b), 0);
	/* Nothing listens on 7000 in the NonIndexed pod. */
	struct peer a_to_dyn = {.netns_fd = fa, .dial_ip = "10.244.0.6"};
	assert_int_equal(in_thread(&a_to_dyn), -ECONNREFUSED);
	close(la.listen_fd);
	close(lb.listen_fd);
	/* Neither the pods' eth0 nor the bridge and its ports got an IPv6
	 * link-local address (whose discovery traffic the bridge would flood
	 * to every port); the links are up and carry traffic by now. */
	assert_false(has_v6_beyond_lo(fa));
	assert_false(has_v6_beyond_lo(fb));
	assert_false(has_v6_beyond_lo(-1));

	/* Released: no more containers may join. */
	js_net_pod_release(b);
	int f;
	assert_int_equal(js_net_pod_netns(b, &f), -ENETDOWN);
	js_net_pod_free(dyn);
	js_net_pod_free(b);
	js_net_pod_free(a);
	js_net_free(net);
	if (!userns)
		assert_true(netns_ino(-1) == host); /* back where it started */
	js_jobset_free(js);
}

/* 48 Indexed pods: more than the makers make ahead (32), so some are made
 * on request. */
static const char *const MANY_YAML =
	"apiVersion: jobset.x-k8s.io/v1alpha2\n"
	"kind: JobSet\n"
	"metadata: {name: many}\n"
	"spec:\n"
	"  replicatedJobs:\n"
	"  - name: w\n"
	"    replicas: 3\n"
	"    template:\n"
	"      spec:\n"
	"        completions: 16\n"
	"        parallelism: 16\n"
	"        template:\n"
	"          spec:\n"
	"            restartPolicy: Never\n"
	"            containers: [{name: c, image: x, command: ['true']}]\n";
#define MANY 48

/** Start a pod-mode network for MANY_YAML, or skip. */
static struct js_net *many_net(struct js_jobset **ret_js)
{
	json_t *j = tu_yaml(MANY_YAML);
	*ret_js = tu_decode(j);
	json_decref(j);
	struct js_net_opts o = {.js = *ret_js};
	struct js_net *net = NULL;
	assert_int_equal(js_net_new(&o, &net), 0);
	if (js_net_mode(net) != JS_NET_PODS) {
		print_message("no network namespaces here (%s): pod mode not tested\n", js_net_why(net));
		js_net_free(net);
		js_jobset_free(*ret_js);
		skip();
	}
	return net;
}

/** A listener on the pod's own address, port 7000, inside its namespace:
 * binds only where that address is up. */
static int listen_in(const struct js_net_pod *p, struct peer *ret)
{
	int fd = -1;
	int r = js_net_pod_netns(p, &fd);
	if (r < 0)
		return r;
	*ret = (struct peer){.netns_fd = fd, .listen_ip = js_net_pod_ip(p)};
	return in_thread(ret);
}

/* Every pod is asked for at once, without waiting: each gets its own
 * namespace with its own address up, ready or not in any order. */
static void test_many_at_once(void **state)
{
	(void)state;
	struct js_jobset *js = NULL;
	struct js_net *net = many_net(&js);
	struct js_net_pod *pods[MANY];
	for (int i = 0; i < MANY; i++)
		assert_int_equal(js_net_pod_new(net, i, &pods[i]), 0);
	for (int i = 0; i < MANY; i++)
		wait_made(net, pods[i]);
	assert_int_equal(js_net_n_pending(net), 0);
	ino_t seen[MANY];
	for (int i = 0; i < MANY; i++) {
		int fd = -1;
		assert_int_equal(js_net_pod_netns(pods[i], &fd), 0);
		seen[i] = netns_ino(fd);
		for (int k = 0; k < i; k++)
			assert_true(seen[k] != seen[i]);
		struct peer l;
		assert_int_equal(listen_in(pods[i], &l), 0);
		close(l.listen_fd);
	}
	assert_true(netns_fds() >= MANY);
	for (int i = 0; i < MANY; i++)
		js_net_pod_free(pods[i]);
	js_net_free(net);
	/* Nothing is left: the run's namespace and every pod's are closed (the
	 * kernel takes them apart, veths and all). */
	assert_int_equal(netns_fds(), 0);
	js_jobset_free(js);
}

/* A released pod's address stops answering at once (veth down), and its
 * namespace is closed while the run goes on, as soon as the makers have
 * nothing else to do: its veth leaves the bridge for good. */
static void test_release_closes_when_idle(void **state)
{
	(void)state;
	struct js_jobset *js = jobset();
	struct js_net_opts o = {.js = js};
	struct js_net *net = NULL;
	assert_int_equal(js_net_new(&o, &net), 0);
	if (js_net_mode(net) != JS_NET_PODS) {
		print_message("no network namespaces here (%s): pod mode not tested\n", js_net_why(net));
		js_net_free(net);
		js_jobset_free(js);
		skip();
	}
	struct js_net_pod *a = NULL, *b = NULL;
	assert_int_equal(js_net_pod_new(net, 0, &a), 0);
	assert_int_equal(js_net_pod_new(net, 1, &b), 0);
	wait_made(net, a);
	wait_made(net, b);
	/* The makers go on making the other two positions ahead; wait until
	 * they are done, so the count below is steady. */
	int before = n_links();
	for (int i = 0; i < 1000 && (before = n_links()) < 6; i++)
		usleep(10000);
	assert_int_equal(before, 6); /* lo, jsbr0, a veth per position */
	struct peer l;
	assert_int_equal(listen_in(a, &l), 0);
	close(l.listen_fd);
	js_net_pod_free(a);
	struct peer dial = {.netns_fd = -1, .dial_ip = "10.244.0.2"};
	int links = before;
	for (int i = 0; i < 1000 && (links = n_links()) == before; i++)
		usleep(10000);
	assert_int_equal(links, before - 1);
	assert_int_not_equal(in_thread(&dial), 0); /* nothing answers there */
	int fd = -1;
	assert_int_equal(js_net_pod_netns(b, &fd), 0); /* the other pod keeps its own */
	js_net_pod_free(b);
	js_net_free(net);
	js_jobset_free(js);
}

/* A pod that goes before its network is made (cancelled while queued or
 * being made), a pod replaced while it holds its address (evicted), a pod
 * released and restarted: the address answers once, from the newest pod. */
static void test_cancel_and_replace(void **state)
{
	(void)state;
	struct js_jobset *js = NULL;
	struct js_net *net = many_net(&js);
	/* Positions beyond the ones made ahead first: made on request. */
	struct js_net_pod *gone = NULL, *late = NULL;
	assert_int_equal(js_net_pod_new(net, MANY - 1, &gone), 0);
	js_net_pod_free(gone); /* pending or not, it goes */
	assert_int_equal(js_net_pod_new(net, MANY - 1, &late), 0);
	wait_made(net, late);
	struct peer l;
	assert_int_equal(listen_in(late, &l), 0);
	struct peer dial = {.netns_fd = -1, .dial_ip = js_net_pod_ip(late)};
	assert_int_equal(in_thread(&dial), 0);
	close(l.listen_fd);

	/* Replaced while live: the old holder loses its network at once. */
	struct js_net_pod *old = NULL, *now = NULL;
	assert_int_equal(js_net_pod_new(net, 0, &old), 0);
	wait_made(net, old);
	int fd = -1;
	assert_int_equal(js_net_pod_netns(old, &fd), 0);
	ino_t old_ino = netns_ino(fd);
	assert_int_equal(js_net_pod_new(net, 0, &now), 0);
	assert_int_equal(js_net_pod_netns(old, &fd), -ENETDOWN);
	wait_made(net, now);
	assert_int_equal(js_net_pod_netns(now, &fd), 0);
	assert_true(netns_ino(fd) != old_ino);
	assert_string_equal(js_net_pod_ip(now), js_net_pod_ip(old));
	/* No SO_REUSEADDR, a fresh namespace: the port is free. */
	assert_int_equal(listen_in(now, &l), 0);
	dial = (struct peer){.netns_fd = -1, .dial_ip = js_net_pod_ip(now)};
	assert_int_equal(in_thread(&dial), 0);
	close(l.listen_fd);
	js_net_pod_free(old);
	js_net_pod_free(now);
	js_net_pod_free(late);
	assert_int_equal(js_net_n_pending(net), 0);
	js_net_free(net);
	js_jobset_free(js);
}

/* ---- degraded mode ---- */

static void test_degraded_blocks(void **state)
{
	(void)state;
	char dir[] = "/tmp/js-net-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char reg[64];
	snprintf(reg, sizeof(reg), "%s/blocks", dir);
	struct js_jobset *js = jobset();
	struct js_net_opts o = {.no_namespaces = true, .js = js, .registry = reg};
	struct js_net *one = NULL, *two = NULL, *three = NULL;
	assert_int_equal(js_net_new(&o, &one), 0);
	assert_int_equal(js_net_new(&o, &two), 0);
	assert_int_equal(js_net_mode(one), JS_NET_LOOPBACK);
	assert_string_equal(js_net_why(one), "disabled by --no-namespaces");
	assert_string_equal(js_net_host_ip(one), "127.0.0.1");
	assert_non_null(strstr(js_net_describe(one), "127.16.0.0/16"));
	assert_non_null(strstr(js_net_describe(two), "127.17.0.0/16"));
	struct js_net_pod *p1 = NULL, *p2 = NULL;
	assert_int_equal(js_net_pod_new(one, 1, &p1), 0);
	assert_int_equal(js_net_pod_new(two, 1, &p2), 0);
	assert_string_equal(js_net_pod_ip(p1), "127.16.0.3");
	assert_string_equal(js_net_pod_ip(p2), "127.17.0.3");
	int f = 0;
	assert_int_equal(js_net_pod_netns(p1, &f), 0);
	assert_int_equal(f, -1); /* containers stay in the runner's network */
	js_net_pod_free(p1);
	js_net_pod_free(p2);
	js_net_free(one);
	/* The next run does not take the block just given back. */
	assert_int_equal(js_net_new(&o, &three), 0);
	assert_non_null(strstr(js_net_describe(three), "127.18.0.0/16"));
	js_net_free(two);
	js_net_free(three);
	js_jobset_free(js);
	assert_int_equal(unlink(reg), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pod_mode),
		cmocka_unit_test(test_many_at_once),
		cmocka_unit_test(test_cancel_and_replace),
		cmocka_unit_test(test_release_closes_when_idle),
		cmocka_unit_test(test_degraded_blocks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
