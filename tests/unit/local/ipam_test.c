/*
 * ipam_test.c - pod addresses of a run and the loopback block registry:
 * positions map to fixed addresses (never the network, gateway or broadcast
 * address), dynamic addresses come round-robin from above the positions and
 * run out cleanly, and the registry gives concurrent claimants different
 * blocks, moves its cursor so the next run gets a fresh block, forgets
 * claims of dead processes and refuses a file that is not a registry.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "local/ipam.h"

#define POD(a, b) (JS_IPAM_POD_BASE | ((uint32_t)(a) << 8) | (uint32_t)(b))

static void ip_is(uint32_t addr, const char *want)
{
	char got[16];
	js_ipam_format(addr, got);
	if (strcmp(got, want) != 0)
		fail_msg("want %s, got %s", want, got);
}

/* ---- fixed addresses ---- */

static const struct {
	const char *name;
	uint64_t pos;
	int err;
	const char *ip;
} fixed_cases[] = {
	{"position 0 follows the gateway", 0, 0, "10.244.0.2"},
	{"positions run on through .255 and .0 of inner octets", 253, 0, "10.244.0.255"},
	{"next octet", 254, 0, "10.244.1.0"},
	{"last slot is below the broadcast address", 65532, 0, "10.244.255.254"},
	{"past the block", 65533, -ENOSPC, NULL},
	{"far past the block", UINT64_MAX, -ENOSPC, NULL},
};

static void test_fixed(void **state)
{
	(void)state;
	struct js_ipam *a = js_ipam_new(JS_IPAM_POD_BASE, 10);
	ip_is(js_ipam_gateway(a), "10.244.0.1");
	ip_is(js_ipam_base(a), "10.244.0.0");
	assert_int_equal(js_ipam_capacity(), 65533);
	for (size_t i = 0; i < sizeof(fixed_cases) / sizeof(fixed_cases[0]); i++) {
		uint32_t addr = 0;
		int r = js_ipam_fixed(a, fixed_cases[i].pos, &addr);
		if (r != fixed_cases[i].err)
			fail_msg("case '%s': want %d, got %d", fixed_cases[i].name, fixed_cases[i].err, r);
		if (!r)
			ip_is(addr, fixed_cases[i].ip);
	}
	js_ipam_free(a);
}

static void test_loopback_block(void **state)
{
	(void)state;
	struct js_ipam *a = js_ipam_new((127u << 24) | (42u << 16) | 0x1234u, 1); /* low bits are dropped */
	uint32_t addr;
	assert_int_equal(js_ipam_fixed(a, 0, &addr), 0);
	ip_is(addr, "127.42.0.2");
	assert_int_equal(js_ipam_take(a, &addr), 0);
	ip_is(addr, "127.42.0.3");
	js_ipam_free(a);
}

/* ---- dynamic addresses ---- */

static void test_dynamic_round_robin(void **state)
{
	(void)state;
	struct js_ipam *a = js_ipam_new(JS_IPAM_POD_BASE, 3);
	uint32_t x, y, z;
	assert_int_equal(js_ipam_take(a, &x), 0);
	assert_int_equal(js_ipam_take(a, &y), 0);
	assert_int_equal(x, POD(0, 5)); /* above positions 0..2 */
	assert_int_equal(y, POD(0, 6));
	js_ipam_put(a, x);
	/* A returned address is the last to come back. */
	assert_int_equal(js_ipam_take(a, &z), 0);
	assert_int_equal(z, POD(0, 7));
	/* Fixed addresses and strangers are not the allocator's to take back. */
	js_ipam_put(a, POD(0, 2));
	js_ipam_put(a, 0x7f000001u);
	js_ipam_put(a, POD(255, 255));
	js_ipam_free(a);
}

static void test_dynamic_exhaustion_and_wrap(void **state)
{
	(void)state;
	/* Positions fill all but two slots. */
	struct js_ipam *a = js_ipam_new(JS_IPAM_POD_BASE, 65531);
	uint32_t x, y, z;
	assert_int_equal(js_ipam_take(a, &x), 0);
	assert_int_equal(js_ipam_take(a, &y), 0);
	ip_is(x, "10.244.255.253");
	ip_is(y, "10.244.255.254");
	assert_int_equal(js_ipam_take(a, &z), -ENOSPC);
	js_ipam_put(a, x);
	assert_int_equal(js_ipam_take(a, &z), 0);
	assert_int_equal(z, x);
	js_ipam_free(a);
	/* More positions than the block: no dynamic room at all. */
	a = js_ipam_new(JS_IPAM_POD_BASE, 1000000);
	assert_int_equal(js_ipam_take(a, &z), -ENOSPC);
	js_ipam_free(a);
}

/* ---- the registry ---- */

struct fixture {
	char dir[64], path[96];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/js-ipam-test-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/blocks", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	(void)unlink(f->path);
	int rc = rmdir(f->dir);
	free(f);
	return rc;
}

static void put_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "we");
	assert_non_null(fp);
	assert_true(fputs(text, fp) >= 0);
	assert_int_equal(fclose(fp), 0);
}

/** A pid that certainly is not running: a child we have reaped. */
static pid_t dead_pid(void)
{
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	assert_true(p > 0);
	assert_int_equal(waitpid(p, NULL, 0), p);
	return p;
}

static void test_claims_differ_and_cursor_moves(void **state)
{
	struct fixture *f = *state;
	int a, b, c;
	assert_int_equal(js_ipam_claim_block(f->path, &a), 0);
	assert_int_equal(js_ipam_claim_block(f->path, &b), 0);
	assert_int_equal(a, JS_IPAM_LOOPBACK_FIRST);
	assert_int_equal(b, JS_IPAM_LOOPBACK_FIRST + 1);
	/* A run that ended gives its block back, but the next run still gets a
	 * block nobody used lately. */
	assert_int_equal(js_ipam_release_block(f->path, a), 0);
	assert_int_equal(js_ipam_claim_block(f->path, &c), 0);
	assert_int_equal(c, JS_IPAM_LOOPBACK_FIRST + 2);
	assert_int_equal(js_ipam_release_block(f->path, b), 0);
	assert_int_equal(js_ipam_release_block(f->path, c), 0);
	/* Releasing twice, or a block we never had, is harmless. */
	assert_int_equal(js_ipam_release_block(f->path, c), 0);
	assert_int_equal(js_ipam_release_block(f->path, 3), 0);
}

static void test_cursor_wraps_and_skips_live_claims(void **state)
{
	struct fixture *f = *state;
	char text[256];
	snprintf(text, sizeof(text), "next %d\n%d %d\n", JS_IPAM_LOOPBACK_LAST, JS_IPAM_LOOPBACK_LAST, (int)getppid());
	put_file(f->path, text);
	int b;
	assert_int_equal(js_ipam_claim_block(f->path, &b), 0);
	assert_int_equal(b, JS_IPAM_LOOPBACK_FIRST);
	assert_int_equal(js_ipam_release_block(f->path, b), 0);
}

static void test_dead_claims_are_forgotten(void **state)
{
	struct fixture *f = *state;
	char text[8192];
	size_t n = (size_t)snprintf(text, sizeof(text), "# a runner was SIGKILLed\nnext %d\n", JS_IPAM_LOOPBACK_FIRST);
	pid_t dead = dead_pid();
	for (int blk = JS_IPAM_LOOPBACK_FIRST; blk <= JS_IPAM_LOOPBACK_LAST; blk++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%d %d\n", blk, (int)(blk == 100 ? dead : getppid()));
	put_file(f->path, text);
	int b;
	assert_int_equal(js_ipam_claim_block(f->path, &b), 0);
	assert_int_equal(b, 100);
	/* Now every block is held by a live process. */
	int c;
	assert_int_equal(js_ipam_claim_block(f->path, &c), -ENOSPC);
	assert_int_equal(js_ipam_release_block(f->path, b), 0);
}

static const char *const bad_registries[] = {
	"hello\n",
	"next\n",
	"next x\n",
	"300 1\n",   /* not a block */
	"16 -5\n",   /* not a pid */
	"16 12 13\n",
};

static void test_bad_registry(void **state)
{
	struct fixture *f = *state;
	for (size_t i = 0; i < sizeof(bad_registries) / sizeof(bad_registries[0]); i++) {
		put_file(f->path, bad_registries[i]);
		int b = -1;
		int r = js_ipam_claim_block(f->path, &b);
		if (r != -EBADMSG)
			fail_msg("registry %zu ('%s'): want -EBADMSG, got %d", i, bad_registries[i], r);
		assert_int_equal(b, -1);
	}
}

static void test_default_registry(void **state)
{
	(void)state;
	char *path = NULL;
	assert_int_equal(js_ipam_default_registry(&path), 0);
	assert_non_null(strstr(path, "loopback-blocks"));
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_loopback_block),
		cmocka_unit_test(test_dynamic_round_robin),
		cmocka_unit_test(test_dynamic_exhaustion_and_wrap),
		cmocka_unit_test_setup_teardown(test_claims_differ_and_cursor_moves, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cursor_wraps_and_skips_live_claims, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dead_claims_are_forgotten, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_registry, setup, teardown),
		cmocka_unit_test(test_default_registry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
