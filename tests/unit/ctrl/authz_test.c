/*
 * authz_test.c - who may read /metrics (ctrl/authz.h) with fake reviews and
 * a fake clock: the answers (200, 401, 403, 500) for each kind of header
 * and token, the verb and path passed to the access review, the cache
 * (hits make no review; each decision kind expires at its own lifetime and
 * is reviewed again exactly then; errors are never kept), the bound
 * (never more entries than allowed; expired ones are pushed out first), and
 * that no message ever carries the token. The real reviews against an API
 * server are in tests/e2e/cluster/test_least_privilege.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrl/authz.h"

struct fake {
	uint64_t now;
	int token_calls, access_calls;
	bool allow_nobody; /* "t0k-nobody" has been given the role */
	char last_verb[16], last_path[64];
};

static uint64_t fake_now(void *ctx)
{
	return ((struct fake *)ctx)->now;
}

/* Tokens: "t0k-good" and "t0k-good2" (may get /metrics), "t0k-nobody"
 * (authenticated, may get nothing), "t0k-broken" (the TokenReview fails),
 * "t0k-sarerr" (the access review fails); anything else is not
 * authenticated. No user name contains a token. */
static int fake_token(void *ctx, const char *token, json_t **ret_user, char **ret_err)
{
	struct fake *f = ctx;
	f->token_calls++;
	if (strcmp(token, "t0k-broken") == 0) {
		*ret_err = strdup("connection refused");
		return -ECONNREFUSED;
	}
	const char *user = strncmp(token, "t0k-good", 8) == 0 ? "system:serviceaccount:m:reader"
			   : strcmp(token, "t0k-nobody") == 0 ? "system:serviceaccount:m:nobody"
			   : strcmp(token, "t0k-sarerr") == 0 ? "sarerr"
							  : NULL;
	if (!user)
		return 0;
	*ret_user = json_pack("{s:s, s:[s]}", "username", user, "groups", "system:serviceaccounts");
	return 1;
}

static int fake_access(void *ctx, const json_t *user, const char *path, const char *verb, char **ret_err)
{
	struct fake *f = ctx;
	f->access_calls++;
	snprintf(f->last_verb, sizeof(f->last_verb), "%s", verb);
	snprintf(f->last_path, sizeof(f->last_path), "%s", path);
	const char *name = json_string_value(json_object_get(user, "username"));
	assert_non_null(json_object_get(user, "groups"));
	if (strcmp(name, "sarerr") == 0) {
		*ret_err = strdup("the server is currently unable to handle the request");
		return -EIO;
	}
	bool reader = strcmp(name, "system:serviceaccount:m:reader") == 0 ||
		      (f->allow_nobody && strcmp(name, "system:serviceaccount:m:nobody") == 0);
	return reader && strcmp(verb, "get") == 0 && strcmp(path, "/metrics") == 0;
}

static struct js_authz *make(struct fake *f, size_t max)
{
	struct js_authz_opts o = {.review_token = fake_token,
				  .review_access = fake_access,
				  .review_ctx = f,
				  .now_ms = fake_now,
				  .now_ctx = f,
				  .max_entries = max};
	struct js_authz *a = NULL;
	assert_int_equal(js_authz_new(&o, &a), 0);
	return a;
}

static void test_answers(void **state)
{
	(void)state;
	struct fake f = {.now = 1000};
	struct js_authz *a = make(&f, 0);
	static const struct {
		const char *header, *method, *path;
		int code;
		int token_calls, access_calls; /* made by this row */
		bool cached;
		const char *message;
	} rows[] = {
		{NULL, "GET", "/metrics", 401, 0, 0, false, "Unauthorized"},
		{"Basic Z29vZA==", "GET", "/metrics", 401, 0, 0, false, "Unauthorized"},
		{"Bearer", "GET", "/metrics", 401, 0, 0, false, "Unauthorized"},
		{"Bearer ", "GET", "/metrics", 401, 0, 0, false, "Unauthorized"},
		{"Bearer t0k-good extra", "GET", "/metrics", 401, 0, 0, false, "Unauthorized"},
		{"Bearer t0k-good", "GET", "/metrics", 200, 1, 1, false, "ok"},
		/* The same again: from the cache, no API call. */
		{"Bearer t0k-good", "GET", "/metrics", 200, 0, 0, true, "ok"},
		/* The scheme is case-insensitive; the key is the token. */
		{"bearer t0k-good", "GET", "/metrics", 200, 0, 0, true, "ok"},
		/* Another verb or path is another question. */
		{"Bearer t0k-good", "HEAD", "/metrics", 403, 1, 1, false,
		 "Authorization denied for user system:serviceaccount:m:reader"},
		{"Bearer t0k-good", "GET", "/other", 403, 1, 1, false,
		 "Authorization denied for user system:serviceaccount:m:reader"},
		{"Bearer t0k-nobody", "GET", "/metrics", 403, 1, 1, false,
		 "Authorization denied for user system:serviceaccount:m:nobody"},
		{"Bearer t0k-nobody", "GET", "/metrics", 403, 0, 0, true,
		 "Authorization denied for user system:serviceaccount:m:nobody"},
		{"Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln", "GET", "/metrics", 401, 1, 0, false, "Unauthorized"},
		{"Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln", "GET", "/metrics", 401, 0, 0, true, "Unauthorized"},
		/* Failed reviews are 500 and never kept. */
		{"Bearer t0k-broken", "GET", "/metrics", 500, 1, 0, false, "Authentication failed: connection refused"},
		{"Bearer t0k-broken", "GET", "/metrics", 500, 1, 0, false, "Authentication failed: connection refused"},
		{"Bearer t0k-sarerr", "GET", "/metrics", 500, 1, 1, false,
		 "Authorization for user sarerr failed: the server is currently unable to handle the request"},
		{"Bearer t0k-sarerr", "GET", "/metrics", 500, 1, 1, false, "Authorization for user sarerr failed"},
	};
	for (size_t i = 0; i < JS_ARRAY_SIZE(rows); i++) {
		int t0 = f.token_calls, a0 = f.access_calls;
		struct js_authz_result r;
		int code = js_authz_check(a, rows[i].header, rows[i].method, rows[i].path, &r);
		if (code != rows[i].code || r.code != code || f.token_calls - t0 != rows[i].token_calls ||
		    f.access_calls - a0 != rows[i].access_calls || r.cached != rows[i].cached ||
		    strncmp(r.message, rows[i].message, strlen(rows[i].message)) != 0)
			fail_msg("row %zu (%s %s %s): %d '%s' cached=%d reviews %d/%d; want %d '%s' cached=%d reviews %d/%d", i,
				 rows[i].method, rows[i].path, rows[i].header ? rows[i].header : "-", code, r.message,
				 r.cached, f.token_calls - t0, f.access_calls - a0, rows[i].code, rows[i].message,
				 rows[i].cached, rows[i].token_calls, rows[i].access_calls);
		/* The token never reaches a message. */
		const char *tok = rows[i].header ? strrchr(rows[i].header, ' ') : NULL;
		if (tok && tok[1])
			assert_null(strstr(r.message, tok + 1));
	}
	/* The access review was asked about the request's path and its
	 * lower-cased method. */
	struct js_authz_result r;
	assert_int_equal(js_authz_check(a, "Bearer t0k-good2", "GET", "/metrics", &r), 200);
	assert_string_equal(f.last_verb, "get");
	assert_string_equal(f.last_path, "/metrics");
	assert_string_equal(r.user, "system:serviceaccount:m:reader");
	struct js_authz_stats st;
	js_authz_stats(a, &st);
	assert_int_equal(st.hits, 4);
	assert_int_equal(st.token_reviews, (uint64_t)f.token_calls);
	assert_int_equal(st.access_reviews, (uint64_t)f.access_calls);
	assert_int_equal(st.entries, 6); /* good x3 keys, nobody, the JWT, good2 */
	js_authz_free(a);
}

/* Each kind of decision is used until just before its lifetime ends and
 * reviewed again exactly at the end. */
static void test_expiry(void **state)
{
	(void)state;
	static const struct {
		const char *token;
		int code;
		uint64_t ttl;
	} rows[] = {
		{"t0k-good", 200, JS_AUTHZ_ALLOW_TTL_MS},
		{"t0k-nobody", 403, JS_AUTHZ_DENY_TTL_MS},
		{"stranger", 401, JS_AUTHZ_UNAUTH_TTL_MS},
	};
	for (size_t i = 0; i < JS_ARRAY_SIZE(rows); i++) {
		struct fake f = {.now = 5000};
		struct js_authz *a = make(&f, 0);
		char h[64];
		snprintf(h, sizeof(h), "Bearer %s", rows[i].token);
		struct js_authz_result r;
		assert_int_equal(js_authz_check(a, h, "GET", "/metrics", &r), rows[i].code);
		assert_int_equal(f.token_calls, 1);
		f.now = 5000 + rows[i].ttl - 1;
		assert_int_equal(js_authz_check(a, h, "GET", "/metrics", &r), rows[i].code);
		assert_true(r.cached);
		assert_int_equal(f.token_calls, 1);
		f.now = 5000 + rows[i].ttl;
		assert_int_equal(js_authz_check(a, h, "GET", "/metrics", &r), rows[i].code);
		assert_false(r.cached);
		assert_int_equal(f.token_calls, 2);
		/* The new decision lives from its own review on. */
		f.now += rows[i].ttl - 1;
		assert_int_equal(js_authz_check(a, h, "GET", "/metrics", &r), rows[i].code);
		assert_true(r.cached);
		assert_int_equal(f.token_calls, 2);
		js_authz_free(a);
	}
	/* A decision that changed meanwhile is seen once the old one expired,
	 * not before: "t0k-nobody" is refused, then given the role. */
	struct fake f = {.now = 0};
	struct js_authz *a = make(&f, 0);
	struct js_authz_result r;
	assert_int_equal(js_authz_check(a, "Bearer t0k-nobody", "GET", "/metrics", &r), 403);
	f.allow_nobody = true;
	f.now = JS_AUTHZ_DENY_TTL_MS - 1;
	assert_int_equal(js_authz_check(a, "Bearer t0k-nobody", "GET", "/metrics", &r), 403);
	f.now = JS_AUTHZ_DENY_TTL_MS;
	assert_int_equal(js_authz_check(a, "Bearer t0k-nobody", "GET", "/metrics", &r), 200);
	assert_int_equal(f.access_calls, 2);
	js_authz_free(a);
	/* Caching off (ttl < 0): every request is reviewed. */
	struct js_authz_opts o = {.review_token = fake_token,
				  .review_access = fake_access,
				  .review_ctx = &f,
				  .now_ms = fake_now,
				  .now_ctx = &f,
				  .allow_ttl_ms = -1};
	f = (struct fake){0};
	assert_int_equal(js_authz_new(&o, &a), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(js_authz_check(a, "Bearer t0k-good", "GET", "/metrics", &r), 200);
	assert_int_equal(f.token_calls, 3);
	js_authz_free(a);
}

static void test_bound(void **state)
{
	(void)state;
	struct fake f = {.now = 0};
	struct js_authz *a = make(&f, 4);
	struct js_authz_result r;
	struct js_authz_stats st;
	/* A flood of distinct tokens never holds more than 4 decisions. */
	for (int i = 0; i < 100; i++) {
		char h[64];
		snprintf(h, sizeof(h), "Bearer random-%d", i);
		f.now = (uint64_t)i;
		assert_int_equal(js_authz_check(a, h, "GET", "/metrics", &r), 401);
		js_authz_stats(a, &st);
		assert_true(st.entries <= 4);
	}
	assert_int_equal(st.entries, 4);
	/* The latest ones are the ones kept (the soonest to expire went). */
	assert_int_equal(js_authz_check(a, "Bearer random-99", "GET", "/metrics", &r), 401);
	assert_true(r.cached);
	assert_int_equal(js_authz_check(a, "Bearer random-95", "GET", "/metrics", &r), 401);
	assert_false(r.cached);
	js_authz_free(a);

	/* Full, with an expired entry: that one makes room, not a live one
	 * that would expire sooner than the newcomer. */
	f = (struct fake){.now = 0};
	a = make(&f, 2);
	assert_int_equal(js_authz_check(a, "Bearer t0k-nobody", "GET", "/metrics", &r), 403); /* until 30000 */
	f.now = 10;
	assert_int_equal(js_authz_check(a, "Bearer t0k-good", "GET", "/metrics", &r), 200); /* until 60010 */
	f.now = JS_AUTHZ_DENY_TTL_MS + 5; /* "nobody" expired */
	assert_int_equal(js_authz_check(a, "Bearer t0k-good2", "GET", "/metrics", &r), 200);
	int calls = f.token_calls;
	assert_int_equal(js_authz_check(a, "Bearer t0k-good", "GET", "/metrics", &r), 200);
	assert_true(r.cached);
	assert_int_equal(js_authz_check(a, "Bearer t0k-good2", "GET", "/metrics", &r), 200);
	assert_true(r.cached);
	assert_int_equal(f.token_calls, calls);
	js_authz_stats(a, &st);
	assert_int_equal(st.entries, 2);
	js_authz_free(a);
}

static void test_options(void **state)
{
	(void)state;
	struct js_authz_opts o = {0};
	struct js_authz *a = NULL;
	assert_int_equal(js_authz_new(&o, &a), JS_EINVALID);
	o.review_token = fake_token; /* without review_access */
	assert_int_equal(js_authz_new(&o, &a), JS_EINVALID);
	assert_null(a);
	assert_null(js_authz_free(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answers),
		cmocka_unit_test(test_expiry),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
