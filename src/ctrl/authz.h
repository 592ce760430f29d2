/*
 * authz.h - who may read `/metrics` (SPEC §12.7): the request's bearer
 * token is checked with a TokenReview, then the user the API server names
 * for it with a SubjectAccessReview for the non-resource URL (the request
 * path) and the verb (the lower-cased method), as upstream's
 * controller-runtime filter (filters.WithAuthenticationAndAuthorization)
 * does. Answers: 200 allowed; 401 no bearer token or one the API server
 * does not authenticate; 403 authenticated but not allowed; 500 a review
 * could not be made.
 *
 * Cache: a Prometheus scraping every few seconds must not cost two API
 * calls per scrape. Decisions are kept per (token, verb, path) - under the
 * SHA-256 of the three, never the token itself - for as long as upstream
 * keeps the part that expires first: allowed 60 s (the TokenReview cache;
 * upstream keeps allowed access reviews 5 min), 401 60 s, 403 30 s (the
 * denied access review cache). Errors (500) are never kept. The cache holds
 * at most `max_entries` decisions: past that, expired entries go first,
 * then the one that expires soonest, so a stream of random tokens cannot
 * grow memory and only ever pushes out the shortest-lived decisions. An
 * entry is used only before its expiry; at or after it the reviews are
 * made again.
 *
 * Tokens are never logged, never kept, never put into a message.
 *
 * Threading: js_authz_check may be called from any number of threads at
 * once (one mutex around the cache; the reviews run outside it, so two
 * concurrent misses for one key may both ask the API server).
 */
#ifndef JS_AUTHZ_H
#define JS_AUTHZ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "kube/client.h"

/* Upstream's cache lifetimes (controller-runtime's filter): the
 * TokenReview cache, and the SubjectAccessReview cache for denials. */
#define JS_AUTHZ_ALLOW_TTL_MS 60000
#define JS_AUTHZ_UNAUTH_TTL_MS 60000
#define JS_AUTHZ_DENY_TTL_MS 30000
#define JS_AUTHZ_MAX_ENTRIES 256

/**
 * TokenReview of `token`. Returns 1 when authenticated, with *ret_user the
 * review's `status.user` (new reference: username, uid, groups, extra); 0
 * when not; a negative code when the review could not be made, with
 * *ret_err (malloc'd, never containing the token).
 */
typedef int (*js_authz_token_fn)(void *ctx, const char *token, json_t **ret_user, char **ret_err);

/**
 * SubjectAccessReview: may `user` (as from js_authz_token_fn) do `verb` on
 * the non-resource URL `path`? Returns 1 allowed, 0 not, or a negative code
 * with *ret_err (malloc'd).
 */
typedef int (*js_authz_access_fn)(void *ctx, const json_t *user, const char *path, const char *verb,
				  char **ret_err);

struct js_authz_opts {
	/* Reviews through this client (authentication.k8s.io/v1 TokenReview,
	 * authorization.k8s.io/v1 SubjectAccessReview); must outlive the
	 * authz. Or, when `review_token` is set (tests), the two functions. */
	struct js_client *client;
	js_authz_token_fn review_token;
	js_authz_access_fn review_access;
	void *review_ctx;
	/* Cache lifetimes, ms; 0 = the defaults above, < 0 = do not cache. */
	int allow_ttl_ms, unauth_ttl_ms, deny_ttl_ms;
	size_t max_entries; /* 0 = JS_AUTHZ_MAX_ENTRIES */
	/* Monotonic clock in ms (tests); NULL = CLOCK_MONOTONIC. */
	uint64_t (*now_ms)(void *ctx);
	void *now_ctx;
};

/** One decision. */
struct js_authz_result {
	int code;          /* 200, 401, 403 or 500 */
	char message[256]; /* the answer's body: "Unauthorized", "Authorization denied for user X", ... */
	char user[128];    /* the authenticated user name, "" when none */
	bool cached;       /* came from the cache, no API call made */
};

/** What the authz did, for tests and logs. */
struct js_authz_stats {
	uint64_t token_reviews, access_reviews; /* API calls made (or review functions called) */
	uint64_t hits, misses;                   /* cache */
	size_t entries;                          /* in the cache now */
};

struct js_authz;

/** Create. Returns 0 and *ret (js_authz_free), or JS_EINVALID when neither
 * a client nor both review functions are given. */
JS_WARN_UNUSED int js_authz_new(const struct js_authz_opts *opts, struct js_authz **ret);

/** Free. NULL is a no-op. Returns NULL. */
struct js_authz *js_authz_free(struct js_authz *a);

/**
 * Decide a request: `authorization` is its Authorization header (NULL when
 * absent; "Bearer <token>", the scheme case-insensitive), `method` its
 * method, `path` its path without the query. Fills *ret; returns ret->code.
 */
int js_authz_check(struct js_authz *a, const char *authorization, const char *method, const char *path,
		   struct js_authz_result *ret);

/** Counters since js_authz_new. */
void js_authz_stats(struct js_authz *a, struct js_authz_stats *ret);

#endif
