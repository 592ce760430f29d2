/*
 * fakeapi.c - the in-process HTTPS/1.1 API fixture (fakeapi.h).
 */
#include "support/fakeapi.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kube/client.h"

#define MAX_CONNS 64

struct fakeapi {
	int lfd;
	char server[64];
	SSL_CTX *ctx;
	fakeapi_handler *handler;
	void *user;
	pthread_t acceptor;
	pthread_mutex_t mu;
	int fds[MAX_CONNS];
	pthread_t threads[MAX_CONNS];
	int n_conns;
	bool stopping;
};

bool fakeapi_wait_count(pthread_mutex_t *mu, pthread_cond_t *cond, const int *what, int want, int timeout_s)
{
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += timeout_s;
	pthread_mutex_lock(mu);
	while (*what < want)
		if (pthread_cond_timedwait(cond, mu, &dl) == ETIMEDOUT)
			break;
	bool ok = *what >= want;
	pthread_mutex_unlock(mu);
	return ok;
}

struct js_client *fakeapi_client(const struct fakeapi *f)
{
	struct js_kubeconfig kc = {.server = (char *)(uintptr_t)fakeapi_server(f),
				   .insecure = true,
				   .token = (char *)(uintptr_t) "t"};
	struct js_client_opts co = {.qps = -1};
	struct js_client *c = NULL;
	assert_int_equal(js_client_new(&kc, &co, &c), 0);
	return c;
}

json_t *fakeapi_status(int code, const char *reason)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion", "v1", "status", "Failure",
			 "reason", reason, "code", code);
}

static int send_all(SSL *ssl, const char *p, size_t n)
{
	while (n > 0) {
		int w = SSL_write(ssl, p, (int)n);
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int respond(SSL *ssl, const struct fakeapi_resp *rs)
{
	char *b = rs->body ? json_dumps(rs->body, JSON_COMPACT) : strdup("{}");
	char ra[64] = "";
	if (rs->retry_after_s > 0)
		snprintf(ra, sizeof ra, "Retry-After: %ld\r\n", rs->retry_after_s);
	char head[512];
	int n = snprintf(head, sizeof head,
			 "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n%sContent-Length: %zu\r\n\r\n",
			 rs->code ? rs->code : 200, ra, strlen(b));
	int r = send_all(ssl, head, (size_t)n) < 0 || send_all(ssl, b, strlen(b)) < 0 ? -1 : 0;
	free(b);
	return r;
}

/* Block until the peer closes or the fixture stops (shutdown). */
static void hold(SSL *ssl)
{
	char b[256];
	while (SSL_read(ssl, b, sizeof b) > 0) {
	}
}

/* Read more bytes into buf (NUL-terminated). Returns 0 or -1. */
static int read_more(SSL *ssl, char *buf, size_t cap, size_t *n)
{
	if (*n + 1 >= cap)
		return -1;
	int r = SSL_read(ssl, buf + *n, (int)(cap - *n - 1));
	if (r <= 0)
		return -1;
	*n += (size_t)r;
	buf[*n] = '\0';
	return 0;
}

/* Read one request (head, then Content-Length bytes). Returns 0 or -1. */
static int read_request(SSL *ssl, char *buf, size_t cap, char **ret_body)
{
	size_t n = 0;
	char *end = NULL;
	while (!(end = strstr(buf, "\r\n\r\n")))
		if (read_more(ssl, buf, cap, &n) < 0)
			return -1;
	size_t head = (size_t)(end - buf) + 4;
	const char *cl = strcasestr(buf, "Content-Length:");
	size_t want = 0;
	if (cl && cl < end)
		want = (size_t)strtoul(cl + 15, NULL, 10);
	while (n < head + want)
		if (read_more(ssl, buf, cap, &n) < 0)
			return -1;
	*ret_body = buf + head;
	return 0;
}

/* Serve one request; returns -1 to close the connection. */
static int serve(struct fakeapi *f, SSL *ssl, int fd, const char *method, const char *path, const char *body)
{
	struct fakeapi_req rq = {.method = method, .path = path, .body = body, .fd = fd};
	struct fakeapi_resp rs = {0};
	f->handler(f->user, &rq, &rs);
	int r = 0;
	if (rs.how == FAKEAPI_WATCH) {
		const char *h = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
		if (send_all(ssl, h, strlen(h)) == 0)
			hold(ssl);
		r = -1;
	} else if (rs.how == FAKEAPI_HOLD) {
		hold(ssl); /* until the client gives up */
		if (rs.released)
			rs.released(f->user);
		r = -1;
	} else {
		r = respond(ssl, &rs);
	}
	json_decref(rs.body);
	return r;
}

struct conn {
	struct fakeapi *f;
	int fd;
};

static void *conn_main(void *arg)
{
	struct conn *cn = arg;
	struct fakeapi *f = cn->f;
	SSL *ssl = SSL_new(f->ctx);
	SSL_set_fd(ssl, cn->fd);
	size_t cap = 1 << 20;
	char *buf = malloc(cap);
	if (SSL_accept(ssl) == 1) {
		for (;;) {
			buf[0] = '\0';
			char *body = NULL;
			if (read_request(ssl, buf, cap, &body) < 0)
				break;
			char method[16], path[2048];
			if (sscanf(buf, "%15s %2047s", method, path) != 2)
				break;
			char *b = strdup(body);
			int r = serve(f, ssl, cn->fd, method, path, b);
			free(b);
			if (r < 0)
				break;
		}
	}
	free(buf);
	SSL_free(ssl);
	free(cn);
	return NULL;
}

static void *accept_main(void *arg)
{
	struct fakeapi *f = arg;
	for (;;) {
		int fd = accept(f->lfd, NULL, NULL);
		if (fd < 0)
			return NULL;
		pthread_mutex_lock(&f->mu);
		if (f->stopping || f->n_conns == MAX_CONNS) {
			pthread_mutex_unlock(&f->mu);
			close(fd);
			continue;
		}
		struct conn *cn = malloc(sizeof *cn);
		*cn = (struct conn){f, fd};
		f->fds[f->n_conns] = fd;
		if (pthread_create(&f->threads[f->n_conns], NULL, conn_main, cn) == 0)
			f->n_conns++;
		else
			free(cn);
		pthread_mutex_unlock(&f->mu);
	}
}

/* A fresh P-256 key and a self-signed certificate for "localhost", valid
 * for a day. */
static void use_self_signed(SSL_CTX *ctx)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	assert_non_null(k);
	X509 *x = X509_new();
	assert_non_null(x);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_set_pubkey(x, k);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1, -1, 0);
	X509_set_issuer_name(x, n);
	assert_true(X509_sign(x, k, EVP_sha256()) > 0);
	assert_int_equal(SSL_CTX_use_certificate(ctx, x), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey(ctx, k), 1);
	X509_free(x);
	EVP_PKEY_free(k);
}

struct fakeapi *fakeapi_start(fakeapi_handler *h, void *user)
{
	struct fakeapi *f = calloc(1, sizeof *f);
	assert_non_null(f);
	f->handler = h;
	f->user = user;
	pthread_mutex_init(&f->mu, NULL);
	f->ctx = SSL_CTX_new(TLS_server_method());
	assert_non_null(f->ctx);
	use_self_signed(f->ctx);
	f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(f->lfd, 64), 0);
	socklen_t al = sizeof a;
	assert_int_equal(getsockname(f->lfd, (struct sockaddr *)&a, &al), 0);
	snprintf(f->server, sizeof f->server, "https://127.0.0.1:%u", ntohs(a.sin_port));
	assert_int_equal(pthread_create(&f->acceptor, NULL, accept_main, f), 0);
	return f;
}

const char *fakeapi_server(const struct fakeapi *f)
{
	return f->server;
}

void fakeapi_stop(struct fakeapi *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	f->stopping = true;
	pthread_mutex_unlock(&f->mu);
	shutdown(f->lfd, SHUT_RDWR);
	pthread_join(f->acceptor, NULL);
	close(f->lfd);
	for (int i = 0; i < f->n_conns; i++)
		shutdown(f->fds[i], SHUT_RDWR);
	for (int i = 0; i < f->n_conns; i++) {
		pthread_join(f->threads[i], NULL);
		close(f->fds[i]);
	}
	SSL_CTX_free(f->ctx);
	pthread_mutex_destroy(&f->mu);
	free(f);
}
