/*
 * retryafter_test.c - when an answer asks for a repeat (kube/client.h
 * js_client_retry_after_ms, client-go's checkWait): 429 and 5xx with a
 * Retry-After, capped at 10 s and 10 repeats.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "kube/client.h"

static const struct rcase {
	const char *name;
	long code;
	long retry_after_s;
	int tries;
	uint64_t want_ms;
} cases[] = {
	{"429 with Retry-After", 429, 1, 0, 1000},
	{"500 with Retry-After", 500, 2, 0, 2000},
	{"503 with Retry-After", 503, 3, 9, 3000},
	{"capped at 10 s", 429, 60, 0, 10000},
	{"no Retry-After: not repeated", 429, 0, 0, 0},
	{"5xx without Retry-After: not repeated", 503, 0, 0, 0},
	{"409 with Retry-After: not repeated", 409, 1, 0, 0},
	{"2xx: not repeated", 201, 1, 0, 0},
	{"after 10 repeats: given up", 429, 1, 10, 0},
};

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct js_client_resp r = {.code = cases[i].code, .retry_after_s = cases[i].retry_after_s};
		uint64_t got = js_client_retry_after_ms(&r, cases[i].tries);
		if (got != cases[i].want_ms)
			fail_msg("case '%s': %llu ms, expected %llu", cases[i].name, (unsigned long long)got,
				 (unsigned long long)cases[i].want_ms);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_table)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
