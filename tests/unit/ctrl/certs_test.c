/*
 * certs_test.c - the pure half of internal certificate management
 * (ctrl/certs.h, SPEC §12.5): generation, validity and name checks at a
 * given time, Secret data round trips, and CA bundle injection into webhook
 * configurations.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>

#include "ctrl/certs.h"

#define NOW 1767225600 /* 2026-01-01T00:00:00Z */
#define DAY (24 * 3600)

static const char *const dns[] = {"jobset-webhook-service.jobset-system.svc",
				  "jobset-webhook-service.jobset-system.svc.cluster.local"};
static const char *const ips[] = {"127.0.0.1"};
static const struct js_certs_names names = {dns, 2, ips, 1};

static void generate(struct js_certs *c)
{
	memset(c, 0, sizeof(*c));
	int r = js_certs_generate(&names, NOW, c);
	assert_int_equal(r, 0);
	assert_non_null(c->ca_crt);
	assert_non_null(c->tls_key);
}

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void copy(struct js_certs *dst, const struct js_certs *src)
{
	dst->ca_crt = xstrdup(src->ca_crt);
	dst->ca_key = xstrdup(src->ca_key);
	dst->tls_crt = xstrdup(src->tls_crt);
	dst->tls_key = xstrdup(src->tls_key);
}

static void test_check_table(void **state)
{
	(void)state;
	struct js_certs good, other;
	generate(&good);
	generate(&other);
	static const char *const more_dns[] = {"jobset-webhook-service.jobset-system.svc", "other.jobset-system.svc"};
	static const char *const other_ip[] = {"10.0.0.1"};
	static const char *const v6[] = {"::1"};
	enum edit { NONE, KEY_SWAP, FOREIGN_CA, NO_TLS_KEY, GARBAGE_CRT, CA_AS_SERVING };
	static const struct {
		const char *name;
		enum edit edit;
		struct js_certs_names names;
		int64_t now;
		int64_t lookahead;
		bool ok;
	} cases[] = {
		{"fresh", NONE, {dns, 2, ips, 1}, NOW, JS_CERTS_LOOKAHEAD_S, true},
		{"fewer names asked", NONE, {dns, 1, NULL, 0}, NOW, JS_CERTS_LOOKAHEAD_S, true},
		{"one year on", NONE, {dns, 2, ips, 1}, NOW + 365 * DAY, JS_CERTS_LOOKAHEAD_S, true},
		{"within the look-ahead of expiry", NONE, {dns, 2, ips, 1}, NOW + 3650 * DAY - 30 * DAY,
		 JS_CERTS_LOOKAHEAD_S, false},
		{"expired", NONE, {dns, 2, ips, 1}, NOW + 3651 * DAY, 0, false},
		{"clock skew of half an hour tolerated", NONE, {dns, 2, ips, 1}, NOW - 1800, 0, true},
		{"not yet valid", NONE, {dns, 2, ips, 1}, NOW - 2 * 3600, 0, false},
		{"a new DNS name", NONE, {more_dns, 2, NULL, 0}, NOW, 0, false},
		{"a new IP", NONE, {dns, 1, other_ip, 1}, NOW, 0, false},
		{"IPv6 not covered", NONE, {dns, 1, v6, 1}, NOW, 0, false},
		{"keys swapped", KEY_SWAP, {dns, 2, ips, 1}, NOW, 0, false},
		{"serving cert from another CA", FOREIGN_CA, {dns, 2, ips, 1}, NOW, 0, false},
		{"tls.key missing", NO_TLS_KEY, {dns, 2, ips, 1}, NOW, 0, false},
		{"tls.crt garbage", GARBAGE_CRT, {dns, 2, ips, 1}, NOW, 0, false},
		{"CA used as serving cert", CA_AS_SERVING, {dns, 2, ips, 1}, NOW, 0, false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct js_certs c = {0};
		copy(&c, &good);
		switch (cases[i].edit) {
		case NONE: break;
		case KEY_SWAP: {
			char *t = c.tls_key;
			c.tls_key = c.ca_key;
			c.ca_key = t;
			break;
		}
		case FOREIGN_CA:
			free(c.ca_crt);
			free(c.ca_key);
			c.ca_crt = strdup(other.ca_crt);
			c.ca_key = strdup(other.ca_key);
			break;
		case NO_TLS_KEY:
			free(c.tls_key);
			c.tls_key = NULL;
			break;
		case GARBAGE_CRT:
			free(c.tls_crt);
			c.tls_crt = strdup("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
			break;
		case CA_AS_SERVING:
			free(c.tls_crt);
			free(c.tls_key);
			c.tls_crt = strdup(good.ca_crt);
			c.tls_key = strdup(good.ca_key);
			break;
		}
		const char *why = NULL;
		int r = js_certs_check(&c, &cases[i].names, cases[i].now, cases[i].lookahead, &why);
		if ((r == 0) != cases[i].ok)
			fail_msg("%s: check returned %d (%s), want %s", cases[i].name, r, why ? why : "-",
				 cases[i].ok ? "valid" : "invalid");
		if (!cases[i].ok && !why)
			fail_msg("%s: no reason given", cases[i].name);
		js_certs_done(&c);
	}
	js_certs_done(&good);
	js_certs_done(&other);
}

static void test_generated_fields(void **state)
{
	(void)state;
	struct js_certs c;
	generate(&c);
	BIO *b = BIO_new_mem_buf(c.ca_crt, -1);
	X509 *ca = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	b = BIO_new_mem_buf(c.tls_crt, -1);
	X509 *srv = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	assert_non_null(ca);
	assert_non_null(srv);
	char buf[256];
	X509_NAME_get_text_by_NID(X509_get_subject_name(ca), NID_commonName, buf, sizeof(buf));
	assert_string_equal(buf, "jobset-ca");
	X509_NAME_get_text_by_NID(X509_get_subject_name(ca), NID_organizationName, buf, sizeof(buf));
	assert_string_equal(buf, "jobset");
	X509_NAME_get_text_by_NID(X509_get_subject_name(srv), NID_commonName, buf, sizeof(buf));
	assert_string_equal(buf, dns[0]);
	assert_int_equal(X509_check_ca(ca), 1);
	assert_int_equal(X509_check_ca(srv), 0);
	assert_int_equal(X509_check_purpose(srv, X509_PURPOSE_SSL_SERVER, 0), 1);
	/* Two generations never share a key or a serial. */
	struct js_certs d;
	generate(&d);
	assert_string_not_equal(c.tls_key, d.tls_key);
	assert_string_not_equal(c.ca_crt, d.ca_crt);
	X509_free(ca);
	X509_free(srv);
	js_certs_done(&c);
	js_certs_done(&d);
}

static void test_generate_refuses(void **state)
{
	(void)state;
	static const char *const bad_dns[] = {"a,DNS:evil.example"};
	static const char *const upper[] = {"Svc.ns.svc"};
	static const char *const bad_ip[] = {"1.2.3"};
	static const struct {
		const char *name;
		struct js_certs_names names;
	} cases[] = {
		{"no DNS name", {NULL, 0, ips, 1}},
		{"extension injection", {bad_dns, 1, NULL, 0}},
		{"upper case", {upper, 1, NULL, 0}},
		{"bad IP", {dns, 1, bad_ip, 1}},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct js_certs c = {0};
		int r = js_certs_generate(&cases[i].names, NOW, &c);
		if (r != JS_EINVALID)
			fail_msg("%s: got %d, want JS_EINVALID", cases[i].name, r);
		assert_null(c.ca_crt);
	}
}

static void test_secret_round_trip(void **state)
{
	(void)state;
	struct js_certs c, back = {0};
	generate(&c);
	json_t *data = js_certs_secret_data(&c);
	assert_non_null(data);
	assert_int_equal(json_object_size(data), 4);
	json_t *secret = json_pack("{s:s, s:o}", "kind", "Secret", "data", data);
	assert_int_equal(js_certs_from_secret(secret, &back), 0);
	assert_string_equal(back.ca_crt, c.ca_crt);
	assert_string_equal(back.ca_key, c.ca_key);
	assert_string_equal(back.tls_crt, c.tls_crt);
	assert_string_equal(back.tls_key, c.tls_key);
	assert_int_equal(js_certs_check(&back, &names, NOW, JS_CERTS_LOOKAHEAD_S, NULL), 0);
	js_certs_done(&back);

	/* Bad base64 and an empty Secret come back as missing keys. */
	json_object_set_new(json_object_get(secret, "data"), "tls.key", json_string("not base64!"));
	assert_int_equal(js_certs_from_secret(secret, &back), 0);
	assert_null(back.tls_key);
	assert_non_null(back.tls_crt);
	const char *why = NULL;
	assert_int_equal(js_certs_check(&back, &names, NOW, 0, &why), JS_EINVALID);
	assert_non_null(why);
	js_certs_done(&back);
	json_t *empty = json_pack("{s:s}", "kind", "Secret");
	assert_int_equal(js_certs_from_secret(empty, &back), 0);
	assert_null(back.ca_crt);
	json_t *str = json_string("x");
	assert_int_equal(js_certs_from_secret(str, &back), JS_EINVALID);
	json_decref(str);
	json_decref(empty);
	json_decref(secret);
	js_certs_done(&c);
	struct js_certs partial = {.ca_crt = strdup("x")};
	assert_null(js_certs_secret_data(&partial));
	js_certs_done(&partial);
	js_certs_done(NULL);
}

static void test_inject_ca(void **state)
{
	(void)state;
	const char *ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
	char *b64 = js_certs_b64(ca, strlen(ca));
	static const struct {
		const char *name;
		const char *config;
		int want;    /* 1 changed, 0 unchanged, or an error */
	} cases[] = {
		{"two entries without a bundle",
		 "{\"kind\":\"MutatingWebhookConfiguration\",\"metadata\":{\"name\":\"m\",\"resourceVersion\":\"7\"},"
		 "\"webhooks\":[{\"name\":\"mjobset.kb.io\",\"clientConfig\":{\"url\":\"https://127.0.0.1:1/x\"}},"
		 "{\"name\":\"mpod.kb.io\",\"clientConfig\":{\"service\":{\"name\":\"s\",\"namespace\":\"n\"},"
		 "\"caBundle\":\"\"}}]}",
		 1},
		{"no clientConfig", "{\"webhooks\":[{\"name\":\"a\"}]}", 1},
		{"stale bundle", "{\"webhooks\":[{\"name\":\"a\",\"clientConfig\":{\"caBundle\":\"b2xk\"}}]}", 1},
		{"no entries", "{\"webhooks\":[]}", 0},
		{"no webhooks list", "{\"kind\":\"MutatingWebhookConfiguration\"}", JS_EINVALID},
		{"entry not an object", "{\"webhooks\":[1]}", JS_EINVALID},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *cfg = json_loads(cases[i].config, 0, NULL);
		assert_non_null(cfg);
		char *before = json_dumps(cfg, JSON_SORT_KEYS);
		json_t *upd = NULL;
		int r = js_certs_inject_ca(cfg, ca, &upd);
		if (r != cases[i].want)
			fail_msg("%s: got %d, want %d", cases[i].name, r, cases[i].want);
		char *after = json_dumps(cfg, JSON_SORT_KEYS);
		assert_string_equal(before, after); /* the input is never changed */
		if (r == 1) {
			size_t k;
			json_t *w;
			json_array_foreach(json_object_get(upd, "webhooks"), k, w)
			{
				const char *got = json_string_value(
					json_object_get(json_object_get(w, "clientConfig"), "caBundle"));
				if (!got || strcmp(got, b64) != 0)
					fail_msg("%s: entry %zu caBundle %s", cases[i].name, k, got ? got : "(none)");
			}
			/* Everything else is kept (resourceVersion for the UPDATE,
			 * url/service), and a second pass has nothing to do. */
			json_t *u2 = NULL;
			assert_int_equal(js_certs_inject_ca(upd, ca, &u2), 0);
			assert_null(u2);
			json_t *rv = json_object_get(json_object_get(cfg, "metadata"), "resourceVersion");
			if (rv)
				assert_string_equal(json_string_value(json_object_get(json_object_get(upd, "metadata"),
										      "resourceVersion")),
						    json_string_value(rv));
			json_decref(upd);
		} else {
			assert_null(upd);
		}
		free(before);
		free(after);
		json_decref(cfg);
	}
	free(b64);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_table),      cmocka_unit_test(test_generated_fields),
		cmocka_unit_test(test_generate_refuses), cmocka_unit_test(test_secret_round_trip),
		cmocka_unit_test(test_inject_ca),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
