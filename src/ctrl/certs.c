/*
 * certs.c - CA and serving certificate generation and checks on OpenSSL
 * EVP/X509, Secret data conversion and CA bundle injection. See certs.h.
 */
#include "ctrl/certs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/limits.h"

void js_certs_done(struct js_certs *c)
{
	if (!c)
		return;
	free(c->ca_crt);
	free(c->ca_key);
	free(c->tls_crt);
	free(c->tls_key);
	memset(c, 0, sizeof(*c));
}

/* ---- generation ---- */

static EVP_PKEY *new_key(void)
{
	return EVP_EC_gen("P-256");
}

static char *pem_of(int (*write)(BIO *, const void *), const void *obj)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *out = NULL;
	if (b && write(b, obj) == 1) {
		char *p = NULL;
		long n = BIO_get_mem_data(b, &p);
		if (n > 0) {
			out = js_xmalloc((size_t)n + 1);
			memcpy(out, p, (size_t)n);
			out[n] = '\0';
		}
	}
	BIO_free(b);
	return out;
}

static int write_cert(BIO *b, const void *x)
{
	return PEM_write_bio_X509(b, (X509 *)(uintptr_t)x);
}

static int write_key(BIO *b, const void *k)
{
	return PEM_write_bio_PrivateKey(b, (EVP_PKEY *)(uintptr_t)k, NULL, NULL, 0, NULL, NULL);
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return -1;
	int ok = X509_add_ext(cert, ext, -1);
	X509_EXTENSION_free(ext);
	return ok == 1 ? 0 : -1;
}

/* A random positive 127-bit serial (RFC 5280: at most 20 octets). */
static int set_serial(X509 *x)
{
	BIGNUM *bn = BN_new();
	int ok = bn && BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 &&
		 BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	return ok ? 0 : -1;
}

/* One certificate for `key`, subject CN `cn` (O `org` when not NULL),
 * issued by `issuer` (itself when NULL); signed later. */
static X509 *new_cert(EVP_PKEY *key, const char *cn, const char *org, X509 *issuer, int64_t now)
{
	X509 *x = X509_new();
	if (!x)
		return NULL;
	time_t t = (time_t)now;
	X509_NAME *name = X509_get_subject_name(x);
	bool ok = X509_set_version(x, X509_VERSION_3) == 1 && set_serial(x) == 0 &&
		  X509_time_adj_ex(X509_getm_notBefore(x), 0, -3600, &t) != NULL &&
		  X509_time_adj_ex(X509_getm_notAfter(x), (int)(JS_CERTS_VALIDITY_S / 86400), 0, &t) != NULL &&
		  X509_set_pubkey(x, key) == 1 &&
		  (!org || X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)org, -1, -1,
						      0) == 1) &&
		  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0) == 1 &&
		  X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name) == 1;
	if (!ok) {
		X509_free(x);
		return NULL;
	}
	return x;
}

static int sign(X509 *x, EVP_PKEY *key)
{
	return X509_sign(x, key, EVP_sha256()) > 0 ? 0 : -1;
}

/* "DNS:a,DNS:b,IP:127.0.0.1" (caller frees); names were checked to be
 * short, so the buffer's ceiling is never reached. */
static char *san_list(const struct js_certs_names *names)
{
	struct js_buf b;
	js_buf_init(&b, 64 * 1024);
	int r = 0;
	for (size_t i = 0; i < names->n_dns && r == 0; i++)
		r = js_buf_printf(&b, "%sDNS:%s", i ? "," : "", names->dns[i]);
	for (size_t i = 0; i < names->n_ips && r == 0; i++)
		r = js_buf_printf(&b, ",IP:%s", names->ips[i]);
	if (r < 0) {
		js_buf_done(&b);
		return NULL;
	}
	return js_buf_take(&b);
}

static bool valid_ip(const char *s)
{
	unsigned char buf[16];
	return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

static bool valid_dns(const char *s)
{
	/* Names become part of an extension string: no separators or spaces. */
	if (!*s || strlen(s) > 253)
		return false;
	for (const char *p = s; *p; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.'))
			return false;
	}
	return true;
}

int js_certs_generate(const struct js_certs_names *names, int64_t now, struct js_certs *ret)
{
	if (names->n_dns == 0)
		return JS_EINVALID;
	for (size_t i = 0; i < names->n_dns; i++) {
		if (!valid_dns(names->dns[i]))
			return JS_EINVALID;
	}
	for (size_t i = 0; i < names->n_ips; i++) {
		if (!valid_ip(names->ips[i]))
			return JS_EINVALID;
	}
	int r = -EIO;
	EVP_PKEY *ca_key = new_key(), *key = new_key();
	X509 *ca = NULL, *cert = NULL;
	char *san = san_list(names);
	struct js_certs out = {0};
	if (!ca_key || !key || !san)
		goto out;
	ca = new_cert(ca_key, "jobset-ca", "jobset", NULL, now);
	if (!ca || add_ext(ca, ca, NID_basic_constraints, "critical,CA:TRUE") < 0 ||
	    add_ext(ca, ca, NID_key_usage, "critical,digitalSignature,keyCertSign,cRLSign") < 0 ||
	    add_ext(ca, ca, NID_subject_key_identifier, "hash") < 0 || sign(ca, ca_key) < 0)
		goto out;
	cert = new_cert(key, names->dns[0], NULL, ca, now);
	if (!cert || add_ext(cert, ca, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    add_ext(cert, ca, NID_key_usage, "critical,digitalSignature,keyEncipherment") < 0 ||
	    add_ext(cert, ca, NID_ext_key_usage, "serverAuth") < 0 ||
	    add_ext(cert, ca, NID_authority_key_identifier, "keyid:always") < 0 ||
	    add_ext(cert, ca, NID_subject_alt_name, san) < 0 || sign(cert, ca_key) < 0)
		goto out;
	out.ca_crt = pem_of(write_cert, ca);
	out.ca_key = pem_of(write_key, ca_key);
	out.tls_crt = pem_of(write_cert, cert);
	out.tls_key = pem_of(write_key, key);
	if (!out.ca_crt || !out.ca_key || !out.tls_crt || !out.tls_key) {
		js_certs_done(&out);
		goto out;
	}
	*ret = out;
	r = 0;
out:
	free(san);
	X509_free(ca);
	X509_free(cert);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(key);
	return r;
}

/* ---- checks ---- */

static X509 *parse_cert(const char *pem)
{
	if (!pem)
		return NULL;
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	return x;
}

static EVP_PKEY *parse_key(const char *pem)
{
	if (!pem)
		return NULL;
	BIO *b = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	return k;
}

/* True when `x` is valid over [now, now + lookahead]. */
static bool in_time(X509 *x, int64_t now, int64_t lookahead_s)
{
	time_t t = (time_t)now, end = (time_t)(now + lookahead_s);
	return X509_cmp_time(X509_get0_notBefore(x), &t) < 0 && X509_cmp_time(X509_get0_notAfter(x), &end) > 0;
}

static const char *check(X509 *ca, EVP_PKEY *ca_key, X509 *cert, EVP_PKEY *key, const struct js_certs_names *names,
			 int64_t now, int64_t lookahead_s)
{
	if (!ca || !ca_key || !cert || !key)
		return "missing or unparsable certificate or key";
	if (X509_check_private_key(ca, ca_key) != 1 || X509_check_private_key(cert, key) != 1)
		return "a key does not match its certificate";
	if (X509_check_ca(ca) == 0)
		return "ca.crt is not a CA";
	EVP_PKEY *ca_pub = X509_get0_pubkey(ca);
	if (!ca_pub || X509_verify(cert, ca_pub) != 1)
		return "tls.crt is not signed by ca.crt";
	if (!in_time(ca, now, lookahead_s) || !in_time(cert, now, lookahead_s))
		return "expired, expiring or not yet valid";
	for (size_t i = 0; i < names->n_dns; i++) {
		if (X509_check_host(cert, names->dns[i], 0, X509_CHECK_FLAG_NO_WILDCARDS, NULL) != 1)
			return "names changed";
	}
	for (size_t i = 0; i < names->n_ips; i++) {
		if (X509_check_ip_asc(cert, names->ips[i], 0) != 1)
			return "names changed";
	}
	return NULL;
}

int js_certs_check(const struct js_certs *c, const struct js_certs_names *names, int64_t now, int64_t lookahead_s,
		   const char **ret_reason)
{
	X509 *ca = parse_cert(c->ca_crt), *cert = parse_cert(c->tls_crt);
	EVP_PKEY *ca_key = parse_key(c->ca_key), *key = parse_key(c->tls_key);
	const char *why = check(ca, ca_key, cert, key, names, now, lookahead_s);
	X509_free(ca);
	X509_free(cert);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(key);
	if (!why)
		return 0;
	if (ret_reason)
		*ret_reason = why;
	return JS_EINVALID;
}

/* ---- Secret data ---- */

char *js_certs_b64(const void *p, size_t n)
{
	char *out = js_xmalloc(4 * ((n + 2) / 3) + 1);
	EVP_EncodeBlock((unsigned char *)out, p, (int)n);
	return out;
}

/* Decode one base64 value into a NUL-terminated string, or NULL. */
static char *unb64(const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s);
	if (n == 0 || n % 4 != 0 || n > JS_LIMIT_WEBHOOK_PEM * 4 / 3 + 4)
		return NULL;
	unsigned char *out = js_xmalloc(n / 4 * 3 + 1);
	int m = EVP_DecodeBlock(out, (const unsigned char *)s, (int)n);
	if (m < 0) {
		free(out);
		return NULL;
	}
	/* EVP_DecodeBlock counts the padding as zero bytes. */
	while (n > 0 && s[n - 1] == '=') {
		n--;
		m--;
	}
	out[m] = '\0';
	if (strlen((char *)out) != (size_t)m) { /* PEM is text: no NUL inside */
		free(out);
		return NULL;
	}
	return (char *)out;
}

int js_certs_from_secret(const json_t *secret, struct js_certs *ret)
{
	if (!json_is_object(secret))
		return JS_EINVALID;
	const json_t *data = json_object_get(secret, "data");
	struct js_certs c = {
		.ca_crt = unb64(js_json_str(data, "ca.crt")),
		.ca_key = unb64(js_json_str(data, "ca.key")),
		.tls_crt = unb64(js_json_str(data, "tls.crt")),
		.tls_key = unb64(js_json_str(data, "tls.key")),
	};
	*ret = c;
	return 0;
}

json_t *js_certs_secret_data(const struct js_certs *c)
{
	if (!c->ca_crt || !c->ca_key || !c->tls_crt || !c->tls_key)
		return NULL;
	const char *keys[] = {"ca.crt", "ca.key", "tls.crt", "tls.key"};
	const char *vals[] = {c->ca_crt, c->ca_key, c->tls_crt, c->tls_key};
	json_t *d = json_object();
	for (size_t i = 0; i < JS_ARRAY_SIZE(keys); i++) {
		char *v = js_certs_b64(vals[i], strlen(vals[i]));
		json_object_set_new(d, keys[i], json_string(v));
		free(v);
	}
	return d;
}

/* ---- CA bundle injection ---- */

int js_certs_inject_ca(const json_t *config, const char *ca_pem, json_t **ret_updated)
{
	const json_t *hooks = json_object_get(config, "webhooks");
	if (!json_is_array(hooks))
		return JS_EINVALID;
	size_t i;
	const json_t *h;
	json_array_foreach(hooks, i, h)
	{
		if (!json_is_object(h))
			return JS_EINVALID;
	}
	char *b64 = js_certs_b64(ca_pem, strlen(ca_pem));
	json_t *copy = json_deep_copy(config);
	json_t *w;
	bool changed = false;
	json_array_foreach(json_object_get(copy, "webhooks"), i, w)
	{
		json_t *cc = json_object_get(w, "clientConfig");
		if (!json_is_object(cc)) {
			cc = json_object();
			json_object_set_new(w, "clientConfig", cc);
		}
		const char *have = js_json_str(cc, "caBundle");
		if (!have || strcmp(have, b64) != 0) {
			json_object_set_new(cc, "caBundle", json_string(b64));
			changed = true;
		}
	}
	free(b64);
	if (!changed) {
		json_decref(copy);
		return 0;
	}
	*ret_updated = copy;
	return 1;
}
