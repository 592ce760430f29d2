/*
 * tls.c - the serving certificate pair of the webhook server: noticing that
 * tls.crt/tls.key changed on disk, and turning a complete, matching pair into
 * an OpenSSL server context (TLS 1.2 and 1.3 only, or 1.3 only, with the
 * configured TLS 1.2 ciphers); turning upstream's cipher suite names into
 * an OpenSSL cipher list (js_webhook_tls_ciphers). Folder-internal apart
 * from that one; see webhook_int.h. No threads of its own and no shared
 * state: every call works on what the caller passes.
 */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/file.h"
#include "base/limits.h"
#include "webhook/webhook_int.h"

int js__tls_stat(const char *path, struct js__tls_file_id *ret)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return -errno;
	ret->dev = st.st_dev;
	ret->ino = st.st_ino;
	ret->size = st.st_size;
	ret->mtime = st.st_mtim;
	return 0;
}

bool js__tls_same(const struct js__tls_file_id *a, const struct js__tls_file_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* A whole PEM file, bounded. An empty file is a half-written one. */
static int read_pem(const char *path, char **ret, size_t *ret_len)
{
	int r = js_file_read(path, JS_LIMIT_WEBHOOK_PEM, ret, ret_len);
	if (r == 0 && *ret_len == 0) {
		free(*ret);
		*ret = NULL;
		r = JS_EINVALID;
	}
	return r;
}

/* Encrypted keys are refused rather than prompted for on a terminal. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return 0;
}

/* The leaf certificate, then any chain certificates, of `pem`. */
static bool use_chain(SSL_CTX *ctx, const char *pem, size_t len)
{
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	if (!b)
		return false;
	X509 *leaf = PEM_read_bio_X509_AUX(b, NULL, no_passphrase, NULL);
	bool ok = leaf && SSL_CTX_use_certificate(ctx, leaf) == 1;
	X509_free(leaf);
	X509 *ca;
	while (ok && (ca = PEM_read_bio_X509(b, NULL, no_passphrase, NULL)) != NULL) {
		/* add0 takes the reference on success. */
		if (SSL_CTX_add0_chain_cert(ctx, ca) != 1) {
			X509_free(ca);
			ok = false;
		}
	}
	BIO_free(b);
	return ok;
}

static bool use_key(SSL_CTX *ctx, const char *pem, size_t len)
{
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	if (!b)
		return false;
	EVP_PKEY *key = PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL);
	bool ok = key && SSL_CTX_use_PrivateKey(ctx, key) == 1 && SSL_CTX_check_private_key(ctx) == 1;
	EVP_PKEY_free(key);
	BIO_free(b);
	return ok;
}

/* A server context for the pair, or NULL when the PEM does not parse, the
 * key does not match the certificate or OpenSSL refuses the settings. */
static SSL_CTX *server_ctx(const char *cert, size_t cert_len, const char *key, size_t key_len,
			   const struct js__tls_opts *opts)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx)
		return NULL;
	/* TLS 1.2 and 1.3 only (or 1.3 only): SPEC §12.6 leaves the minimum to
	 * configuration, controller-runtime's default is TLS 1.2 and upstream
	 * refuses anything lower. Renegotiation is off (a client could
	 * otherwise make the server redo handshakes on an open connection), as
	 * is compression (CRIME). No ALPN callback: nothing but HTTP/1.1 is
	 * ever negotiated, as upstream forces (SPEC §12.6). The cipher list
	 * applies to TLS 1.2 only; TLS 1.3's suites are not configurable, as
	 * in Go. */
	int min = opts && opts->min == JS_WEBHOOK_TLS_MIN_1_3 ? TLS1_3_VERSION : TLS1_2_VERSION;
	bool ok = SSL_CTX_set_min_proto_version(ctx, min) == 1;
	if (ok && opts && opts->ciphers)
		ok = SSL_CTX_set_cipher_list(ctx, opts->ciphers) == 1;
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	ok = ok && use_chain(ctx, cert, cert_len) && use_key(ctx, key, key_len);
	/* The end of the chain leaves a "no start line" on this thread's error
	 * queue, a failure leaves more: none of it may leak into a later,
	 * unrelated OpenSSL call on this thread. */
	ERR_clear_error();
	if (!ok) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

int js__tls_load(const char *cert_file, const char *key_file, const struct js__tls_opts *opts,
		  struct js__tls_pair *ret)
{
	struct js__tls_pair p = {0};
	size_t cert_len = 0, key_len = 0;
	int r = js__tls_stat(cert_file, &p.cert_id);
	if (r == 0)
		r = js__tls_stat(key_file, &p.key_id);
	if (r == 0)
		r = read_pem(cert_file, &p.cert_pem, &cert_len);
	if (r == 0)
		r = read_pem(key_file, &p.key_pem, &key_len);
	if (r == 0) {
		p.ctx = server_ctx(p.cert_pem, cert_len, p.key_pem, key_len, opts);
		if (!p.ctx)
			r = JS_EINVALID;
	}
	if (r < 0) {
		js__tls_pair_done(&p);
		return r;
	}
	*ret = p;
	return 0;
}

int js__tls_load_pem(const char *cert_pem, const char *key_pem, const struct js__tls_opts *opts,
		     struct js__tls_pair *ret)
{
	size_t cn = strlen(cert_pem), kn = strlen(key_pem);
	if (cn > JS_LIMIT_WEBHOOK_PEM || kn > JS_LIMIT_WEBHOOK_PEM)
		return JS_ETOOLARGE;
	if (cn == 0 || kn == 0)
		return JS_EINVALID;
	SSL_CTX *ctx = server_ctx(cert_pem, cn, key_pem, kn, opts);
	if (!ctx)
		return JS_EINVALID;
	*ret = (struct js__tls_pair){.ctx = ctx, .cert_pem = js_xstrdup(cert_pem), .key_pem = js_xstrdup(key_pem)};
	return 0;
}

bool js__tls_same_pem(const struct js__tls_pair *a, const struct js__tls_pair *b)
{
	return strcmp(a->cert_pem, b->cert_pem) == 0 && strcmp(a->key_pem, b->key_pem) == 0;
}

void js__tls_pair_done(struct js__tls_pair *p)
{
	if (!p)
		return;
	SSL_CTX_free(p->ctx);
	free(p->cert_pem);
	free(p->key_pem);
	memset(p, 0, sizeof(*p));
}

/* ---- cipher suite names ---- */

/* Go's crypto/tls also accepts these names without the hash (upstream's
 * tls.cipherSuites goes through k8s.io/component-base's cipher table). */
static const struct {
	const char *go, *iana;
} aliases[] = {
	{"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"},
	{"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"},
};

int js_webhook_tls_ciphers(const char *const *names, size_t n, char **ret_list, char **ret_err)
{
	*ret_list = NULL;
	/* Every cipher this OpenSSL knows, at security level 0 so that none
	 * is hidden: the list is only a dictionary of names here. */
	SSL_CTX *ctx = SSL_CTX_new(TLS_method());
	if (!ctx) {
		*ret_err = js_xstrdup("cannot make an OpenSSL context");
		return -ENOMEM;
	}
	SSL_CTX_set_security_level(ctx, 0);
	int r = SSL_CTX_set_cipher_list(ctx, "ALL:COMPLEMENTOFALL") == 1 ? 0 : -EIO;
	STACK_OF(SSL_CIPHER) *all = r == 0 ? SSL_CTX_get_ciphers(ctx) : NULL;
	if (r < 0)
		*ret_err = js_xstrdup("OpenSSL lists no ciphers");
	struct js_buf out;
	js_buf_init(&out, 65536);
	size_t tls12 = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		const char *want = names[i];
		for (size_t a = 0; a < JS_ARRAY_SIZE(aliases); a++)
			if (strcmp(want, aliases[a].go) == 0)
				want = aliases[a].iana;
		const SSL_CIPHER *found = NULL;
		for (int k = 0; all && k < sk_SSL_CIPHER_num(all) && !found; k++) {
			const SSL_CIPHER *c = sk_SSL_CIPHER_value(all, k);
			const char *std = SSL_CIPHER_standard_name(c);
			if (std && strcmp(std, want) == 0)
				found = c;
		}
		if (!found) {
			*ret_err = js_buf_format("invalid cipher suites: unknown or unsupported cipher suite \"%s\"",
						 names[i]);
			r = JS_EINVALID;
		} else if (strcmp(SSL_CIPHER_get_version(found), "TLSv1.3") == 0) {
			continue; /* TLS 1.3 suites are always on, as in Go */
		} else {
			r = js_buf_printf(&out, "%s%s", tls12++ ? ":" : "", SSL_CIPHER_get_name(found));
			if (r < 0)
				*ret_err = js_xstrdup("invalid cipher suites: too many");
		}
	}
	SSL_CTX_free(ctx);
	ERR_clear_error();
	if (r == 0 && tls12 == 0) {
		*ret_err = js_xstrdup("invalid cipher suites: none of them is a TLS 1.2 cipher suite (TLS 1.3 suites are "
				      "not configurable)");
		r = JS_EINVALID;
	}
	if (r < 0) {
		js_buf_done(&out);
		return r;
	}
	*ret_list = js_buf_take(&out);
	return 0;
}
