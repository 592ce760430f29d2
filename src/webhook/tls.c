/*
 * tls.c - the serving certificate pair of the webhook server: noticing that
 * tls.crt/tls.key changed on disk, and turning a complete, matching pair into
 * an OpenSSL server context (TLS 1.2 and 1.3 only). Folder-internal; see
 * webhook_int.h. No threads of its own and no shared state: every call works
 * on what the caller passes.
 */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* A server context for the pair, or NULL when the PEM does not parse or the
 * key does not match the certificate. */
static SSL_CTX *server_ctx(const char *cert, size_t cert_len, const char *key, size_t key_len)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx)
		return NULL;
	/* TLS 1.2 and 1.3 only: SPEC §12.6 leaves the minimum to configuration
	 * and controller-runtime's default is TLS 1.2. Renegotiation is off
	 * (a client could otherwise make the server redo handshakes on an open
	 * connection), as is compression (CRIME). No ALPN callback: nothing but
	 * HTTP/1.1 is ever negotiated, as upstream forces (SPEC §12.6). */
	bool ok = SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1;
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

int js__tls_load(const char *cert_file, const char *key_file, struct js__tls_pair *ret)
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
		p.ctx = server_ctx(p.cert_pem, cert_len, p.key_pem, key_len);
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
