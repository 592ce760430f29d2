/*
 * publish_test.c - --publish: the flag's syntax (table-driven), and the
 * forwarder over real loopback sockets: bytes both ways, a megabyte through
 * the bounded buffers, an end of stream passed on in each direction, a pod
 * that is not listening (the client is closed at once), and several clients
 * at a time. Every wait polls with a deadline.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "local/publish.h"

#define WAIT_MS 10000

/* ---- the flag ---- */

static const struct {
	const char *arg;
	int err;
	const char *pod;
	uint16_t port, host_port;
} parse_cases[] = {
	{"js-leader-0-0:8080", 0, "js-leader-0-0", 8080, 8080},
	{"js-leader-0-0:8080:18080", 0, "js-leader-0-0", 8080, 18080},
	{"p:1:65535", 0, "p", 1, 65535},
	{"js-leader-0-0", JS_EINVALID, NULL, 0, 0},
	{":8080", JS_EINVALID, NULL, 0, 0},
	{"p:", JS_EINVALID, NULL, 0, 0},
	{"p:0", JS_EINVALID, NULL, 0, 0},
	{"p:65536", JS_EINVALID, NULL, 0, 0},
	{"p:80x", JS_EINVALID, NULL, 0, 0},
	{"p:80:", JS_EINVALID, NULL, 0, 0},
	{"p:80:90:100", JS_EINVALID, NULL, 0, 0},
	{"p: 80", JS_EINVALID, NULL, 0, 0},
	{"a234567890123456789012345678901234567890123456789012345678901234:80", JS_EINVALID, NULL, 0, 0},
};

static void test_parse(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		struct js_publish p;
		char *err = NULL;
		int r = js_publish_parse(parse_cases[i].arg, &p, &err);
		if (r != parse_cases[i].err)
			fail_msg("'%s': want %d, got %d (%s)", parse_cases[i].arg, parse_cases[i].err, r, err ? err : "");
		if (r == 0) {
			assert_null(err);
			assert_string_equal(p.pod, parse_cases[i].pod);
			assert_int_equal(p.port, parse_cases[i].port);
			assert_int_equal(p.host_port, parse_cases[i].host_port);
			assert_int_equal(p.listen_fd, -1);
		} else {
			/* The message quotes the flag. */
			assert_non_null(err);
			assert_non_null(strstr(err, "--publish"));
		}
		free(err);
	}
}

/* ---- the forwarder ---- */

static int64_t ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wait_fd(int fd, short ev)
{
	struct pollfd p = {.fd = fd, .events = ev};
	int r = poll(&p, 1, WAIT_MS);
	if (r != 1)
		fail_msg("fd %d not ready within %d ms", fd, WAIT_MS);
}

/** A listening socket on 127.0.0.1, ephemeral port. */
static int listener(uint16_t *ret_port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 16), 0);
	socklen_t len = sizeof(sa);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*ret_port = ntohs(sa.sin_port);
	return fd;
}

static int dial(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static int accept_one(int ls)
{
	wait_fd(ls, POLLIN);
	int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

/** Read exactly n bytes, or up to EOF when eof_ok; returns bytes read. */
static size_t read_n(int fd, char *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		wait_fd(fd, POLLIN);
		ssize_t r = read(fd, buf + got, n - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return got;
}

static void write_n(int fd, const char *buf, size_t n)
{
	size_t off = 0;
	while (off < n) {
		wait_fd(fd, POLLOUT);
		ssize_t r = write(fd, buf + off, n - off);
		assert_true(r > 0);
		off += (size_t)r;
	}
}

/** The forwarder's host side on an ephemeral port, to `pod_port`. */
struct rig {
	struct js_publish pub;
	struct js_publish_fwd *fwd;
};

static void rig_start(struct rig *g, uint16_t pod_port)
{
	memset(g, 0, sizeof(*g));
	g->pub.listen_fd = -1;
	g->pub.host_port = 0; /* any: the test reads it back */
	assert_int_equal(js_publish_listen(&g->pub), 0);
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	assert_int_equal(getsockname(g->pub.listen_fd, (struct sockaddr *)&sa, &len), 0);
	g->pub.host_port = ntohs(sa.sin_port);
	struct js_publish_target t = {.listen_fd = g->pub.listen_fd, .addr = INADDR_LOOPBACK, .port = pod_port};
	assert_int_equal(js_publish_start(&t, 1, &g->fwd), 0);
}

static void rig_stop(struct rig *g)
{
	g->fwd = js_publish_stop(g->fwd);
	close(g->pub.listen_fd);
}

/** A "pod" listening, the forwarder to it, and one client connected through
 * it: client and server are the two ends. */
struct link {
	int pod, client, server;
	struct rig g;
};

static void link_up(struct link *k)
{
	uint16_t pod_port;
	k->pod = listener(&pod_port);
	rig_start(&k->g, pod_port);
	k->client = dial(k->g.pub.host_port);
	k->server = accept_one(k->pod);
}

static void link_down(struct link *k)
{
	close(k->client);
	close(k->server);
	rig_stop(&k->g);
	close(k->pod);
}

static void test_forward_both_ways(void **state)
{
	(void)state;
	struct link k;
	link_up(&k);
	int client = k.client, server = k.server;
	char buf[64] = "";
	write_n(client, "ping", 4);
	assert_int_equal(read_n(server, buf, 4), 4);
	assert_memory_equal(buf, "ping", 4);
	write_n(server, "pong", 4);
	assert_int_equal(read_n(client, buf, 4), 4);
	assert_memory_equal(buf, "pong", 4);

	/* The client's end of stream reaches the pod, and the pod can still
	 * answer after it (a half-closed connection). */
	assert_int_equal(shutdown(client, SHUT_WR), 0);
	assert_int_equal(read_n(server, buf, sizeof(buf)), 0);
	write_n(server, "bye", 3);
	assert_int_equal(shutdown(server, SHUT_WR), 0);
	assert_int_equal(read_n(client, buf, sizeof(buf)), 3);
	assert_memory_equal(buf, "bye", 3);
	link_down(&k);
}

static void test_megabyte_through_bounded_buffers(void **state)
{
	(void)state;
	struct link k;
	link_up(&k);
	int client = k.client, server = k.server;
	size_t n = 1 << 20;
	char *out = malloc(n), *in = malloc(n);
	for (size_t i = 0; i < n; i++)
		out[i] = (char)(i * 7 + i / 251);
	/* Write and read alternately: neither side may need the whole
	 * megabyte buffered anywhere. */
	size_t off = 0, got = 0;
	int64_t deadline = ms() + WAIT_MS;
	while (got < n && ms() < deadline) {
		struct pollfd p[2] = {{.fd = client, .events = off < n ? POLLOUT : 0}, {.fd = server, .events = POLLIN}};
		assert_true(poll(p, 2, WAIT_MS) > 0);
		if (p[0].revents & POLLOUT) {
			ssize_t w = write(client, out + off, n - off > 70000 ? 70000 : n - off);
			assert_true(w > 0);
			off += (size_t)w;
		}
		if (p[1].revents & POLLIN) {
			ssize_t r = read(server, in + got, n - got);
			assert_true(r > 0);
			got += (size_t)r;
		}
	}
	assert_int_equal(got, n);
	assert_memory_equal(in, out, n);
	free(out);
	free(in);
	link_down(&k);
}

static void test_pod_not_listening(void **state)
{
	(void)state;
	/* A port nobody listens on: bind one and close it. */
	uint16_t dead_port;
	close(listener(&dead_port));
	struct rig g;
	rig_start(&g, dead_port);
	for (int i = 0; i < 3; i++) {
		int client = dial(g.pub.host_port);
		char buf[8];
		/* Closed at once: EOF or a reset, never a hang. */
		wait_fd(client, POLLIN);
		assert_true(read(client, buf, sizeof(buf)) <= 0);
		close(client);
	}
	rig_stop(&g);
}

static void test_many_clients(void **state)
{
	(void)state;
	uint16_t pod_port;
	int pod = listener(&pod_port);
	struct rig g;
	rig_start(&g, pod_port);
	enum { N = 8 };
	int c[N], s[N];
	for (int i = 0; i < N; i++) {
		c[i] = dial(g.pub.host_port);
		char hello = (char)('a' + i);
		write_n(c[i], &hello, 1);
		s[i] = accept_one(pod);
	}
	for (int i = 0; i < N; i++) {
		char b;
		assert_int_equal(read_n(s[i], &b, 1), 1);
		write_n(s[i], &b, 1); /* echo whatever arrived on this connection */
	}
	for (int i = 0; i < N; i++) {
		char b = 0;
		assert_int_equal(read_n(c[i], &b, 1), 1);
		assert_int_equal(b, 'a' + i);
		close(c[i]);
		close(s[i]);
	}
	rig_stop(&g);
	close(pod);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_forward_both_ways),
		cmocka_unit_test(test_megabyte_through_bounded_buffers),
		cmocka_unit_test(test_pod_not_listening),
		cmocka_unit_test(test_many_clients),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
