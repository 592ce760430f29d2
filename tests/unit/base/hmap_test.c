/*
 * hmap_test.c - the string map and the arena (base/hmap.h, base/arena.h).
 *
 * The map is checked against a reference model: a table of operation
 * scripts (put/del/get over small and colliding key sets, growth past many
 * doublings, deletes inside probe runs) runs on both, and after every step
 * the map must agree with the model on every key and on its length. Values
 * owned by the map are counted so that every release is observed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/arena.h"
#include "base/hmap.h"

#define KEYS 4096

static int released; /* values released by the map */

static void count_free(void *v)
{
	released++;
	free(v);
}

static const struct js_hmap_type owned = {.free_value = count_free};

struct op {
	char kind;   /* 'p' put, 'd' del */
	int from, to; /* key range [from, to) */
	int step;
};

struct hcase {
	const char *name;
	struct op ops[6];
	size_t n_ops;
};

static const struct hcase cases[] = {
	{"empty", {{'d', 0, 3, 1}}, 1},
	{"put then get", {{'p', 0, 5, 1}}, 1},
	{"replace", {{'p', 0, 5, 1}, {'p', 0, 5, 1}}, 2},
	{"grow past many doublings", {{'p', 0, KEYS, 1}}, 1},
	{"delete every other key", {{'p', 0, 1000, 1}, {'d', 0, 1000, 2}}, 2},
	{"delete all then reuse", {{'p', 0, 600, 1}, {'d', 0, 600, 1}, {'p', 300, 900, 1}}, 3},
	{"interleaved", {{'p', 0, 2000, 3}, {'p', 1, 2000, 3}, {'d', 0, 2000, 2}, {'p', 2, 2000, 3}, {'d', 1, 2000, 5}},
	 5},
};

static void key_of(int i, char *buf, size_t n)
{
	/* Keys share long prefixes, as child Job names do. */
	(void)snprintf(buf, n, "jobset-workers-%d", i);
}

static void check_model(const struct js_hmap *m, const bool *model, const char *name)
{
	size_t want = 0;
	char k[64];
	for (int i = 0; i < KEYS; i++) {
		key_of(i, k, sizeof(k));
		int *v = js_hmap_get(m, k);
		if (model[i]) {
			want++;
			if (!v || *v != i)
				fail_msg("%s: key %s: want %d, got %s", name, k, i, v ? "another value" : "nothing");
		} else if (v) {
			fail_msg("%s: key %s: want absent, got %d", name, k, *v);
		}
	}
	if (js_hmap_len(m) != want)
		fail_msg("%s: len %zu, want %zu", name, js_hmap_len(m), want);
	/* Iteration visits each entry once. */
	struct js_hmap_iter it = {0};
	size_t seen = 0;
	while (js_hmap_next(m, &it, NULL, NULL))
		seen++;
	assert_int_equal(seen, want);
}

static void test_model(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct hcase *hc = &cases[c];
		struct js_hmap *m = js_hmap_new(&owned);
		bool *model = calloc(KEYS, sizeof(bool));
		int live = 0;
		released = 0;
		int made = 0;
		char k[64];
		for (size_t o = 0; o < hc->n_ops; o++) {
			const struct op *op = &hc->ops[o];
			for (int i = op->from; i < op->to; i += op->step) {
				key_of(i, k, sizeof(k));
				if (op->kind == 'p') {
					int *v = malloc(sizeof(int));
					*v = i;
					made++;
					bool fresh = js_hmap_put(m, k, v, NULL);
					assert_int_equal(fresh, !model[i]);
					live += fresh;
					model[i] = true;
				} else {
					bool had = js_hmap_del(m, k, NULL);
					assert_int_equal(had, model[i]);
					live -= had;
					model[i] = false;
				}
			}
			check_model(m, model, hc->name);
		}
		assert_int_equal(released + live, made);
		js_hmap_free(m);
		assert_int_equal(released, made);
		free(model);
	}
}

static void test_borrowed_keys_and_take(void **state)
{
	(void)state;
	static const struct js_hmap_type borrowed = {.borrow_keys = true};
	struct js_hmap *m = js_hmap_new(&borrowed);
	char a[] = "alpha", b[] = "beta";
	int va = 1, vb = 2;
	assert_true(js_hmap_put(m, a, &va, NULL));
	assert_true(js_hmap_put(m, b, &vb, NULL));
	void *old = NULL;
	assert_false(js_hmap_put(m, "alpha", &vb, &old));
	assert_ptr_equal(old, &va);
	assert_ptr_equal(js_hmap_get_n(m, "betamax", 4), &vb);
	assert_null(js_hmap_get_n(m, "bet", 3));
	assert_true(js_hmap_del(m, "beta", &old));
	assert_ptr_equal(old, &vb);
	assert_false(js_hmap_has(m, "beta"));
	assert_null(js_hmap_get(m, NULL));
	js_hmap_free(m);
	js_hmap_free(NULL);
}

struct acase {
	const char *name;
	size_t block;
	size_t sizes[5];
};

static const struct acase acases[] = {
	{"small", 64, {1, 2, 3, 4, 5}},
	{"zero", 0, {0, 0, 1, 0, 7}},
	{"larger than a block", 64, {10, 5000, 3, 70000, 1}},
	{"megabytes", 4096, {1 << 20, 3 << 20, 16, 1 << 19, 9}},
};

static void test_arena(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(acases) / sizeof(acases[0]); c++) {
		const struct acase *ac = &acases[c];
		struct js_arena *a = js_arena_new(ac->block);
		unsigned char *ps[5];
		for (int round = 0; round < 2; round++) {
			for (size_t i = 0; i < 5; i++) {
				ps[i] = js_arena_alloc(a, ac->sizes[i]);
				assert_non_null(ps[i]);
				assert_int_equal((uintptr_t)ps[i] % _Alignof(max_align_t), 0);
				memset(ps[i], (int)i + 1, ac->sizes[i]);
			}
			/* Nothing overlaps: every byte still holds its writer's mark. */
			for (size_t i = 0; i < 5; i++)
				for (size_t k = 0; k < ac->sizes[i]; k++)
					if (ps[i][k] != i + 1)
						fail_msg("%s: allocation %zu overwritten at %zu", ac->name, i, k);
			assert_true(js_arena_capacity(a) >= js_arena_used(a));
			js_arena_reset(a);
			assert_int_equal(js_arena_used(a), 0);
		}
		char *s = js_arena_printf(a, "%s-%d", "job", 7);
		assert_string_equal(s, "job-7");
		assert_string_equal(js_arena_strndup(a, "abcdef", 3), "abc");
		assert_null(js_arena_strdup(a, NULL));
		int *z = js_arena_calloc(a, 100, sizeof(int));
		for (int i = 0; i < 100; i++)
			assert_int_equal(z[i], 0);
		js_arena_free(a);
	}
	js_arena_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_borrowed_keys_and_take),
		cmocka_unit_test(test_arena),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
