/*
 * authz.c - TokenReview + SubjectAccessReview for /metrics, with a bounded
 * cache of decisions. See authz.h.
 */
#include "ctrl/authz.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/clock.h"
#include "base/json.h"
#include "kube/apierr.h"

#define KEY_LEN 32 /* SHA-256 */

struct entry {
	unsigned char key[KEY_LEN];
	uint64_t expires_ms;
	int code;
	char user[128];
};

struct js_authz {
	struct js_authz_opts o;
	pthread_mutex_t mu;
	struct entry *cache; /* max_entries slots; n used */
	size_t n;
	struct js_authz_stats stats;
};

static uint64_t mono_ms(void *ctx)
{
	(void)ctx;
	return js_clock_now_ns() / 1000000u;
}

/* ---- reviews through the API ---- */

/* POST a review of `kind` in `group` (body's spec: `spec`, stolen) and
 * return its status (new reference) in *ret_status. 0, or the error with
 * *ret_err (never the body: it may hold a token). */
static int post_review(struct js_client *c, const char *group, const char *kind, const char *plural, json_t *spec,
		       json_t **ret_status, char **ret_err)
{
	char path[128], av[64];
	snprintf(path, sizeof(path), "/apis/%s/v1/%s", group, plural);
	snprintf(av, sizeof(av), "%s/v1", group);
	json_t *body = spec ? json_pack("{s:s, s:s, s:o}", "apiVersion", av, "kind", kind, "spec", spec) : NULL;
	json_t *got = NULL;
	struct js_apierr e = {0};
	int r = body ? js_client_call(c, "POST", path, NULL, body, &got, &e) : -ENOMEM;
	json_decref(body);
	if (r < 0)
		*ret_err = js_xstrdup(e.message ? e.message : js_apierr_strerror(r));
	js_apierr_done(&e);
	if (r == 0) {
		json_t *st = json_object_get(got, "status");
		*ret_status = json_is_object(st) ? json_incref(st) : json_object();
	}
	json_decref(got);
	return r;
}

static int api_review_token(void *ctx, const char *token, json_t **ret_user, char **ret_err)
{
	json_t *st = NULL;
	int r = post_review(ctx, "authentication.k8s.io", "TokenReview", "tokenreviews",
			    json_pack("{s:s}", "token", token), &st, ret_err);
	if (r < 0)
		return r;
	int out = json_is_true(json_object_get(st, "authenticated")) ? 1 : 0;
	if (out) {
		json_t *user = json_object_get(st, "user");
		*ret_user = json_is_object(user) ? json_incref(user) : json_object();
	}
	json_decref(st);
	return out;
}

static int api_review_access(void *ctx, const json_t *user, const char *path, const char *verb, char **ret_err)
{
	json_t *spec = json_pack("{s:{s:s, s:s}}", "nonResourceAttributes", "path", path, "verb", verb);
	if (spec) {
		/* The user as the TokenReview named it: username -> user, the
		 * rest under the same names. */
		const char *name = js_json_str(user, "username");
		json_object_set_new(spec, "user", json_string(name ? name : ""));
		static const char *const same[] = {"uid", "groups", "extra"};
		for (size_t i = 0; i < JS_ARRAY_SIZE(same); i++) {
			json_t *v = json_object_get(user, same[i]);
			if (v)
				json_object_set(spec, same[i], v);
		}
	}
	json_t *st = NULL;
	int r = post_review(ctx, "authorization.k8s.io", "SubjectAccessReview", "subjectaccessreviews", spec, &st,
			    ret_err);
	if (r < 0)
		return r;
	int out = json_is_true(json_object_get(st, "allowed")) ? 1 : 0;
	json_decref(st);
	return out;
}

/* ---- lifecycle ---- */

int js_authz_new(const struct js_authz_opts *opts, struct js_authz **ret)
{
	if (!opts->client && !(opts->review_token && opts->review_access))
		return JS_EINVALID;
	struct js_authz *a = js_xcalloc(1, sizeof(*a));
	a->o = *opts;
	if (!a->o.review_token) {
		a->o.review_token = api_review_token;
		a->o.review_access = api_review_access;
		a->o.review_ctx = opts->client;
	}
	if (!a->o.now_ms)
		a->o.now_ms = mono_ms;
	if (a->o.allow_ttl_ms == 0)
		a->o.allow_ttl_ms = JS_AUTHZ_ALLOW_TTL_MS;
	if (a->o.unauth_ttl_ms == 0)
		a->o.unauth_ttl_ms = JS_AUTHZ_UNAUTH_TTL_MS;
	if (a->o.deny_ttl_ms == 0)
		a->o.deny_ttl_ms = JS_AUTHZ_DENY_TTL_MS;
	if (a->o.max_entries == 0)
		a->o.max_entries = JS_AUTHZ_MAX_ENTRIES;
	a->cache = js_xcalloc(a->o.max_entries, sizeof(*a->cache));
	pthread_mutex_init(&a->mu, NULL);
	*ret = a;
	return 0;
}

struct js_authz *js_authz_free(struct js_authz *a)
{
	if (!a)
		return NULL;
	/* Digests only, but no reason to leave them behind. */
	memset(a->cache, 0, a->o.max_entries * sizeof(*a->cache));
	free(a->cache);
	pthread_mutex_destroy(&a->mu);
	free(a);
	return NULL;
}

/* ---- the cache ---- */

static void make_key(const char *token, const char *verb, const char *path, unsigned char out[KEY_LEN])
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned n = 0;
	/* NUL separators: no (token, verb, path) is the prefix of another. */
	bool ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
		  EVP_DigestUpdate(md, token, strlen(token) + 1) == 1 && EVP_DigestUpdate(md, verb, strlen(verb) + 1) == 1 &&
		  EVP_DigestUpdate(md, path, strlen(path) + 1) == 1 && EVP_DigestFinal_ex(md, out, &n) == 1 && n == KEY_LEN;
	EVP_MD_CTX_free(md);
	if (!ok)
		abort(); /* SHA-256 fails only when OpenSSL cannot allocate: js_xmalloc's policy */
}

/* Under mu: the live entry for `key`, or NULL. */
static const struct entry *lookup(struct js_authz *a, const unsigned char *key, uint64_t now)
{
	for (size_t i = 0; i < a->n; i++)
		if (memcmp(a->cache[i].key, key, KEY_LEN) == 0)
			return now < a->cache[i].expires_ms ? &a->cache[i] : NULL;
	return NULL;
}

/* Under mu: keep `e` (replacing the entry for its key, else taking a free
 * slot, else an expired one, else the one that expires soonest). */
static void store(struct js_authz *a, const struct entry *e)
{
	size_t slot = a->n, soonest = 0;
	for (size_t i = 0; i < a->n; i++) {
		if (memcmp(a->cache[i].key, e->key, KEY_LEN) == 0) {
			slot = i;
			break;
		}
		if (a->cache[i].expires_ms < a->cache[soonest].expires_ms)
			soonest = i;
	}
	if (slot == a->n && a->n == a->o.max_entries) {
		/* Full: the soonest to expire is an expired one if any exists
		 * (an expired entry's expiry is at or before now, a live one's
		 * after). */
		slot = soonest;
	} else if (slot == a->n) {
		a->n++;
	}
	a->cache[slot] = *e;
}

/* The token of "Bearer <token>" (scheme case-insensitive, as the API
 * server's bearer authenticator reads it), or NULL. */
static const char *bearer(const char *h, char *buf, size_t len)
{
	if (!h)
		return NULL;
	while (*h == ' ')
		h++;
	if (strncasecmp(h, "bearer ", 7) != 0)
		return NULL;
	h += 7;
	while (*h == ' ')
		h++;
	size_t n = strcspn(h, " \t\r\n");
	if (n == 0 || n >= len || h[n] != '\0')
		return NULL; /* empty, too long, or more than one word */
	memcpy(buf, h, n);
	buf[n] = '\0';
	return buf;
}

static int ttl_of(const struct js_authz *a, int code)
{
	return code == 200 ? a->o.allow_ttl_ms : code == 401 ? a->o.unauth_ttl_ms : code == 403 ? a->o.deny_ttl_ms : -1;
}

static void set_message(struct js_authz_result *r)
{
	switch (r->code) {
	case 200:
		snprintf(r->message, sizeof(r->message), "ok");
		break;
	case 401:
		snprintf(r->message, sizeof(r->message), "Unauthorized");
		break;
	case 403:
		snprintf(r->message, sizeof(r->message), "Authorization denied for user %s", r->user);
		break;
	default:
		break; /* 500: set where the review failed */
	}
}

/* The reviews themselves (no lock held). */
static void review(struct js_authz *a, const char *token, const char *verb, const char *path,
		   struct js_authz_result *ret)
{
	json_t *user = NULL;
	char *err = NULL;
	pthread_mutex_lock(&a->mu);
	a->stats.token_reviews++;
	pthread_mutex_unlock(&a->mu);
	int r = a->o.review_token(a->o.review_ctx, token, &user, &err);
	if (r < 0) {
		ret->code = 500;
		snprintf(ret->message, sizeof(ret->message), "Authentication failed: %s", err ? err : "error");
		free(err);
		return;
	}
	if (r == 0) {
		ret->code = 401;
		return;
	}
	const char *name = js_json_str(user, "username");
	snprintf(ret->user, sizeof(ret->user), "%s", name ? name : "");
	pthread_mutex_lock(&a->mu);
	a->stats.access_reviews++;
	pthread_mutex_unlock(&a->mu);
	r = a->o.review_access(a->o.review_ctx, user, path, verb, &err);
	json_decref(user);
	if (r < 0) {
		ret->code = 500;
		snprintf(ret->message, sizeof(ret->message), "Authorization for user %s failed: %s", ret->user,
			 err ? err : "error");
		free(err);
		return;
	}
	ret->code = r == 1 ? 200 : 403;
}

int js_authz_check(struct js_authz *a, const char *authorization, const char *method, const char *path,
		   struct js_authz_result *ret)
{
	memset(ret, 0, sizeof(*ret));
	/* A service account token is about 1 KiB; 16 KiB is any sane one. */
	char *buf = js_xmalloc(16384);
	const char *token = bearer(authorization, buf, 16384);
	if (!token) {
		free(buf);
		ret->code = 401;
		set_message(ret);
		return ret->code;
	}
	char verb[32];
	size_t i = 0;
	for (; method[i] && i < sizeof(verb) - 1; i++)
		verb[i] = (char)tolower((unsigned char)method[i]);
	verb[i] = '\0';
	struct entry e = {0};
	make_key(token, verb, path, e.key);
	uint64_t now = a->o.now_ms(a->o.now_ctx);
	pthread_mutex_lock(&a->mu);
	const struct entry *hit = lookup(a, e.key, now);
	if (hit) {
		ret->code = hit->code;
		snprintf(ret->user, sizeof(ret->user), "%s", hit->user);
		ret->cached = true;
		a->stats.hits++;
	} else {
		a->stats.misses++;
	}
	pthread_mutex_unlock(&a->mu);
	if (!ret->cached) {
		review(a, token, verb, path, ret);
		int ttl = ttl_of(a, ret->code);
		if (ttl > 0) {
			e.code = ret->code;
			e.expires_ms = a->o.now_ms(a->o.now_ctx) + (uint64_t)ttl;
			snprintf(e.user, sizeof(e.user), "%s", ret->user);
			pthread_mutex_lock(&a->mu);
			store(a, &e);
			pthread_mutex_unlock(&a->mu);
		}
	}
	/* The token's bytes go no further than this function. */
	memset(buf, 0, 16384);
	free(buf);
	if (ret->code != 500)
		set_message(ret);
	return ret->code;
}

void js_authz_stats(struct js_authz *a, struct js_authz_stats *ret)
{
	pthread_mutex_lock(&a->mu);
	*ret = a->stats;
	ret->entries = a->n;
	pthread_mutex_unlock(&a->mu);
}
