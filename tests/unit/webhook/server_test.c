/*
 * server_test.c - the HTTPS server of webhook.h over real sockets: TLS with
 * a generated certificate (TLS 1.2+ only, no ALPN), routing (admission
 * paths, extra routes, 404, 405, 413), plain HTTP, start-up errors, the
 * connection bound,
 * certificate reload (after tls.crt and tls.key are replaced, new handshakes
 * see the new certificate), and the lifecycle contract: free refuses a
 * running server, stop waits for a running handler and refuses to be called
 * from one.
 *
 * TLS settings: TLS 1.0/1.1 refused and 1.2/1.3 served, a 1.3-only
 * server, a configured TLS 1.2 cipher list honoured (a cipher outside it
 * refused), upstream's cipher names translated; a pair in memory.
 *
 * The client is OpenSSL, like the server; certificates are generated per
 * run, nothing is read from the tree.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "support/testutil.h"
#include "webhook/webhook.h"

struct pem {
	char *cert, *key;
};

static char *pem_text(BIO *b)
{
	char *p = NULL;
	long n = BIO_get_mem_data(b, &p);
	assert_true(n > 0);
	char *out = strndup(p, (size_t)n);
	BIO_free(b);
	return out;
}

/* A self-signed P-256 certificate for 127.0.0.1 with common name `cn`. */
static struct pem make_pair(const char *cn)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	assert_non_null(key);
	X509 *x = X509_new();
	assert_non_null(x);
	assert_int_equal(X509_set_version(x, X509_VERSION_3), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), (long)(unsigned char)cn[0] + 1000), 1);
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), -60));
	assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), 3600));
	assert_int_equal(X509_set_pubkey(x, key), 1);
	X509_NAME *name = X509_get_subject_name(x);
	assert_int_equal(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0), 1);
	assert_int_equal(X509_set_issuer_name(x, name), 1);
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, "IP:127.0.0.1");
	assert_non_null(ext);
	assert_int_equal(X509_add_ext(x, ext, -1), 1);
	X509_EXTENSION_free(ext);
	assert_true(X509_sign(x, key, EVP_sha256()) > 0);
	BIO *c = BIO_new(BIO_s_mem()), *k = BIO_new(BIO_s_mem());
	assert_int_equal(PEM_write_bio_X509(c, x), 1);
	assert_int_equal(PEM_write_bio_PrivateKey(k, key, NULL, NULL, 0, NULL, NULL), 1);
	struct pem p = {pem_text(c), pem_text(k)};
	X509_free(x);
	EVP_PKEY_free(key);
	return p;
}

static void pem_done(struct pem *p)
{
	free(p->cert);
	free(p->key);
}

/* Replace dir/name atomically, as a secret volume update does. */
static void write_file(const char *dir, const char *name, const char *text)
{
	char tmp[512], dst[512];
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	FILE *f = fopen(tmp, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(rename(tmp, dst), 0);
}

struct answer {
	int code;     /* 0: no answer */
	char cn[128]; /* common name of the server certificate */
	char body[8192];
};

/* How the test client speaks TLS. */
enum client_tls {
	PLAIN,
	TLS_ANY,    /* what the server picks (1.3 here) */
	TLS_1_2,    /* at most TLS 1.2 */
	TLS_1_1,    /* at most TLS 1.1: the server must refuse */
};

static int connect_to(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

static void parse_answer(const char *raw, struct answer *ret)
{
	if (sscanf(raw, "HTTP/1.1 %d", &ret->code) != 1)
		ret->code = 0;
	const char *b = strstr(raw, "\r\n\r\n");
	snprintf(ret->body, sizeof(ret->body), "%s", b ? b + 4 : "");
}

static SSL *tls_connect(int fd, enum client_tls mode, SSL_CTX **ret_ctx, struct answer *ret)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	assert_non_null(ctx);
	if (mode == TLS_1_2)
		assert_int_equal(SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION), 1);
	if (mode == TLS_1_1) {
		/* Level 0 lets this client offer TLS 1.1 at all, so the refusal
		 * is the server's. */
		SSL_CTX_set_security_level(ctx, 0);
		assert_int_equal(SSL_CTX_set_min_proto_version(ctx, TLS1_VERSION), 1);
		assert_int_equal(SSL_CTX_set_max_proto_version(ctx, TLS1_1_VERSION), 1);
	}
	SSL *ssl = SSL_new(ctx);
	assert_non_null(ssl);
	/* Offer h2 and http/1.1: the server must pick neither (HTTP/1.1 only,
	 * SPEC §12.6). */
	static const unsigned char alpn[] = "\x02h2\x08http/1.1";
	assert_int_equal(SSL_set_alpn_protos(ssl, alpn, sizeof(alpn) - 1), 0);
	assert_int_equal(SSL_set_fd(ssl, fd), 1);
	*ret_ctx = ctx;
	if (SSL_connect(ssl) != 1) {
		SSL_free(ssl);
		return NULL;
	}
	const unsigned char *sel = NULL;
	unsigned sel_len = 0;
	SSL_get0_alpn_selected(ssl, &sel, &sel_len);
	assert_int_equal(sel_len, 0);
	X509 *peer = SSL_get1_peer_certificate(ssl);
	assert_non_null(peer);
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, ret->cn,
					      (int)sizeof(ret->cn)) > 0);
	X509_free(peer);
	return ssl;
}

/* One request, Connection: close. Returns 0, or -1 when the TLS handshake
 * failed (ret->code 0). */
static int request(uint16_t port, enum client_tls mode, const char *head, const char *body, struct answer *ret)
{
	memset(ret, 0, sizeof(*ret));
	int fd = connect_to(port);
	assert_true(fd >= 0);
	char req[4096];
	if (body)
		snprintf(req, sizeof(req), "%s\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
			 head, strlen(body), body);
	else
		snprintf(req, sizeof(req), "%s\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", head);
	char *raw = calloc(1, 65536);
	assert_non_null(raw);
	size_t got = 0;
	int rc = 0;
	if (mode == PLAIN) {
		assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
		ssize_t n;
		while ((n = read(fd, raw + got, 65535 - got)) > 0)
			got += (size_t)n;
	} else {
		SSL_CTX *ctx = NULL;
		SSL *ssl = tls_connect(fd, mode, &ctx, ret);
		if (ssl) {
			assert_int_equal(SSL_write(ssl, req, (int)strlen(req)), (int)strlen(req));
			int n;
			while ((n = SSL_read(ssl, raw + got, (int)(65535 - got))) > 0)
				got += (size_t)n;
			(void)SSL_shutdown(ssl);
			SSL_free(ssl);
		} else {
			rc = -1;
		}
		SSL_CTX_free(ctx);
		ERR_clear_error();
	}
	raw[got] = '\0';
	close(fd);
	parse_answer(raw, ret);
	free(raw);
	return rc;
}

static int hello(void *ctx, const struct js_webhook_req *req, struct js_buf *body, const char **ret_ctype)
{
	(void)ctx;
	*ret_ctype = "text/plain; version=0.0.4";
	const char *auth = js_webhook_req_header(req, "Authorization");
	size_t n = 0;
	const char *b = js_webhook_req_body(req, &n);
	/* The body is a string: NUL right after its last byte. */
	if (b[n] != '\0')
		return 500;
	return js_buf_printf(body, "%s %s auth=%s len=%zu", js_webhook_req_method(req), js_webhook_req_path(req),
			     auth ? auth : "-", n) < 0
		       ? 500
		       : 200;
}

static void log_stderr(void *ctx, int level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "server[%d]: %s\n", level, msg);
}

static const char review[] =
	"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u-1\","
	"\"operation\":\"DELETE\",\"kind\":{\"group\":\"jobset.x-k8s.io\",\"version\":\"v1alpha2\",\"kind\":\"JobSet\"}}}";

/* Wait for `fn(arg)` with a 20 s deadline, polling every 5 ms. */
static void wait_for(const char *what, bool (*fn)(void *), void *arg)
{
	struct timespec start, now, tick = {0, 5 * 1000000L};
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!fn(arg)) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec > 20)
			fail_msg("%s: not within 20 s", what);
		nanosleep(&tick, NULL);
	}
}

static bool reloaded_once(void *s)
{
	return js_webhook_server_cert_reloads(s) >= 1;
}

static void stop_and_free(struct js_webhook_server *s)
{
	assert_int_equal(js_webhook_server_stop(s), 0);
	assert_int_equal(js_webhook_server_free(s), 0);
}

static void test_tls_routes_reload(void **state)
{
	(void)state;
	char dir[] = "/tmp/js-webhook-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct pem one = make_pair("one"), two = make_pair("two");
	write_file(dir, "tls.crt", one.cert);
	write_file(dir, "tls.key", one.key);
	struct js_webhook_route routes[] = {{"/metrics", hello, NULL}};
	struct js_webhook_opts o = {
		.bind_address = "127.0.0.1",
		.cert_dir = dir,
		.reload_interval_ms = 20,
		.admission = true,
		.admit = {.strict = true},
		.routes = routes,
		.n_routes = 1,
		.log = getenv("JS_TEST_DEBUG") ? log_stderr : NULL,
	};
	struct js_webhook_server *s = NULL;
	assert_int_equal(js_webhook_server_new(&o, &s), 0);
	assert_true(js_webhook_server_ready(s));
	uint16_t port = js_webhook_server_port(s);
	assert_true(port > 0);

	struct answer a;
	static const struct {
		const char *head, *body;
		int code;
		const char *in_body;
	} rows[] = {
		{"POST " JS_WEBHOOK_PATH_VALIDATE_JOBSET " HTTP/1.1\r\nContent-Type: application/json", review, 200,
		 "\"uid\":\"u-1\""},
		{"POST " JS_WEBHOOK_PATH_MUTATE_POD " HTTP/1.1", "{", 400, "malformed AdmissionReview"},
		{"GET " JS_WEBHOOK_PATH_MUTATE_JOBSET " HTTP/1.1", NULL, 405, "POST only"},
		{"GET /metrics HTTP/1.1\r\nAuthorization: Bearer t", NULL, 200, "GET /metrics auth=Bearer t len=0"},
		{"GET /metrics?x=1 HTTP/1.1", NULL, 200, "GET /metrics auth=- len=0"},
		{"POST /metrics HTTP/1.1", "abc", 200, "len=3"},
		{"GET /nope HTTP/1.1", NULL, 404, "not found"},
		/* Refused from the announced length, before any body byte. */
		{"POST " JS_WEBHOOK_PATH_VALIDATE_POD " HTTP/1.1\r\nContent-Length: 99999999999", NULL, 413, "Too Large"},
	};
	for (size_t i = 0; i < JS_ARRAY_SIZE(rows); i++) {
		assert_int_equal(request(port, TLS_ANY, rows[i].head, rows[i].body, &a), 0);
		if (a.code != rows[i].code || !strstr(a.body, rows[i].in_body))
			fail_msg("%s: %d '%s', want %d with '%s'", rows[i].head, a.code, a.body, rows[i].code,
				 rows[i].in_body);
		assert_string_equal(a.cn, "one");
	}
	/* TLS 1.2 is served; TLS 1.1 is refused in the handshake. */
	assert_int_equal(request(port, TLS_1_2, "GET /metrics HTTP/1.1", NULL, &a), 0);
	assert_int_equal(a.code, 200);
	assert_int_equal(request(port, TLS_1_1, "GET /metrics HTTP/1.1", NULL, &a), -1);
	assert_int_equal(a.code, 0);

	/* A certificate without its key is not picked up; the complete pair is. */
	write_file(dir, "tls.crt", two.cert);
	assert_int_equal(request(port, TLS_ANY, "GET /metrics HTTP/1.1", NULL, &a), 0);
	assert_int_equal(a.code, 200);
	write_file(dir, "tls.key", two.key);
	wait_for("certificate reload", reloaded_once, s);
	assert_int_equal(request(port, TLS_ANY, "GET /metrics HTTP/1.1", NULL, &a), 0);
	assert_int_equal(a.code, 200);
	assert_string_equal(a.cn, "two");
	assert_int_equal(js_webhook_server_cert_reloads(s), 1);
	assert_true(js_webhook_server_ready(s));

	/* Start-up errors: port taken, unreadable pair, mismatched pair,
	 * address that is not one. */
	struct js_webhook_server *s2 = NULL;
	struct js_webhook_opts o2 = o;
	o2.port = port;
	assert_int_equal(js_webhook_server_new(&o2, &s2), -EADDRINUSE);
	o2.port = 0;
	o2.cert_dir = "/nonexistent-js-dir";
	assert_int_equal(js_webhook_server_new(&o2, &s2), -ENOENT);
	write_file(dir, "tls.key", one.key);
	o2.cert_dir = dir;
	assert_int_equal(js_webhook_server_new(&o2, &s2), JS_EINVALID);
	write_file(dir, "tls.key", "");
	assert_int_equal(js_webhook_server_new(&o2, &s2), JS_EINVALID);
	write_file(dir, "tls.key", two.key);
	o2.bind_address = "example.com";
	assert_int_equal(js_webhook_server_new(&o2, &s2), -EINVAL);
	assert_null(s2);

	stop_and_free(s);
	pem_done(&one);
	pem_done(&two);
	char path[600];
	snprintf(path, sizeof(path), "%s/tls.crt", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/tls.key", dir);
	unlink(path);
	rmdir(dir);
}

static void test_plain_http(void **state)
{
	(void)state;
	struct js_webhook_route routes[] = {{"/healthz", hello, NULL}};
	static const char *const binds[] = {"127.0.0.1", "localhost", NULL};
	for (size_t i = 0; i < JS_ARRAY_SIZE(binds); i++) {
		/* NULL: all interfaces, which includes IPv4 loopback. */
		struct js_webhook_opts o = {.bind_address = binds[i], .routes = routes, .n_routes = 1, .threads = 1};
		struct js_webhook_server *s = NULL;
		assert_int_equal(js_webhook_server_new(&o, &s), 0);
		assert_true(js_webhook_server_ready(s));
		struct answer a;
		assert_int_equal(request(js_webhook_server_port(s), PLAIN, "GET /healthz HTTP/1.1", NULL, &a), 0);
		assert_int_equal(a.code, 200);
		assert_string_equal(a.body, "GET /healthz auth=- len=0");
		/* Admission is off on this server. */
		assert_int_equal(request(js_webhook_server_port(s), PLAIN,
					 "POST " JS_WEBHOOK_PATH_VALIDATE_JOBSET " HTTP/1.1", review, &a),
				 0);
		assert_int_equal(a.code, 404);
		stop_and_free(s);
	}
	assert_int_equal(js_webhook_server_stop(NULL), 0);
	assert_int_equal(js_webhook_server_free(NULL), 0);
}

/* ---- connection bound ---- */

struct conns_want {
	struct js_webhook_server *s;
	unsigned n;
};

static bool conns_are(void *arg)
{
	struct conns_want *w = arg;
	return js_webhook_server_connections(w->s) == w->n;
}

static void test_connection_limit(void **state)
{
	(void)state;
	struct js_webhook_route routes[] = {{"/healthz", hello, NULL}};
	struct js_webhook_opts o = {
		.bind_address = "127.0.0.1", .routes = routes, .n_routes = 1, .threads = 1, .max_connections = 2};
	struct js_webhook_server *s = NULL;
	assert_int_equal(js_webhook_server_new(&o, &s), 0);
	uint16_t port = js_webhook_server_port(s);
	int a = connect_to(port), b = connect_to(port);
	assert_true(a >= 0 && b >= 0);
	struct conns_want two = {s, 2};
	wait_for("two idle connections", conns_are, &two);

	/* A third client is not accepted while two are open: its request
	 * waits in the listen backlog, unanswered. */
	int c = connect_to(port);
	assert_true(c >= 0);
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	assert_int_equal(write(c, req, sizeof(req) - 1), (ssize_t)(sizeof(req) - 1));
	struct pollfd p = {.fd = c, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 300), 0);
	assert_int_equal(js_webhook_server_connections(s), 2);

	/* One closes: the third is accepted and answered. */
	close(a);
	struct timeval tv = {20, 0};
	assert_int_equal(setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	char raw[4096];
	size_t got = 0;
	ssize_t n;
	while (got < sizeof(raw) - 1 && (n = read(c, raw + got, sizeof(raw) - 1 - got)) > 0)
		got += (size_t)n;
	raw[got] = '\0';
	struct answer ans;
	parse_answer(raw, &ans);
	assert_int_equal(ans.code, 200);
	close(b);
	close(c);
	struct conns_want none = {s, 0};
	wait_for("connections closed", conns_are, &none);
	stop_and_free(s);
}

/* ---- lifecycle ---- */

struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool entered, released, finished;
	bool saw_stop_returned; /* what the handler saw as it finished */
	atomic_bool stop_returned;
	int stop_code; /* js_webhook_server_stop() on the stopper thread */
	struct js_webhook_server *s;
	int stop_from_handler; /* js_webhook_server_stop() inside a handler */
};

/* Enters, waits to be released, and notes whether stop had already
 * returned by then: it must not have. */
static int blocking(void *ctx, const struct js_webhook_req *req, struct js_buf *body, const char **ret_ctype)
{
	(void)req;
	(void)ret_ctype;
	struct gate *g = ctx;
	pthread_mutex_lock(&g->mu);
	g->entered = true;
	pthread_cond_broadcast(&g->cond);
	while (!g->released)
		pthread_cond_wait(&g->cond, &g->mu);
	g->saw_stop_returned = atomic_load(&g->stop_returned);
	g->finished = true;
	pthread_mutex_unlock(&g->mu);
	return js_buf_puts(body, "released") < 0 ? 500 : 200;
}

static int stopping(void *ctx, const struct js_webhook_req *req, struct js_buf *body, const char **ret_ctype)
{
	(void)req;
	(void)body;
	(void)ret_ctype;
	struct gate *g = ctx;
	g->stop_from_handler = js_webhook_server_stop(g->s);
	return 200;
}

struct client {
	pthread_t thread;
	uint16_t port;
	struct answer a;
};

static void *client_main(void *arg)
{
	struct client *c = arg;
	(void)request(c->port, PLAIN, "GET /block HTTP/1.1", NULL, &c->a);
	return NULL;
}

static void *stopper_main(void *arg)
{
	struct gate *g = arg;
	g->stop_code = js_webhook_server_stop(g->s);
	atomic_store(&g->stop_returned, true);
	return NULL;
}

static bool entered(void *arg)
{
	struct gate *g = arg;
	pthread_mutex_lock(&g->mu);
	bool e = g->entered;
	pthread_mutex_unlock(&g->mu);
	return e;
}

static bool stop_begun(void *arg)
{
	return !js_webhook_server_ready(((struct gate *)arg)->s);
}

static void test_lifecycle(void **state)
{
	(void)state;
	struct gate g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	struct js_webhook_route routes[] = {{"/block", blocking, &g}, {"/stop", stopping, &g}};
	struct js_webhook_opts o = {.bind_address = "127.0.0.1", .routes = routes, .n_routes = 2};
	assert_int_equal(js_webhook_server_new(&o, &g.s), 0);
	uint16_t port = js_webhook_server_port(g.s);

	/* free refuses a running server, which keeps serving. */
	assert_int_equal(js_webhook_server_free(g.s), -EBUSY);
	struct answer a;
	assert_int_equal(request(port, PLAIN, "GET /stop HTTP/1.1", NULL, &a), 0);
	assert_int_equal(a.code, 200);
	/* A handler cannot stop its own server: it would wait for itself. */
	assert_int_equal(g.stop_from_handler, -EDEADLK);
	assert_true(js_webhook_server_ready(g.s));

	/* stop, called while a handler runs, returns only after it finished. */
	struct client c = {.port = port};
	assert_int_equal(pthread_create(&c.thread, NULL, client_main, &c), 0);
	wait_for("handler entered", entered, &g);
	pthread_t stopper;
	assert_int_equal(pthread_create(&stopper, NULL, stopper_main, &g), 0);
	wait_for("stop begun", stop_begun, &g);
	assert_false(atomic_load(&g.stop_returned));
	pthread_mutex_lock(&g.mu);
	g.released = true;
	pthread_cond_broadcast(&g.cond);
	pthread_mutex_unlock(&g.mu);
	assert_int_equal(pthread_join(stopper, NULL), 0);
	assert_int_equal(g.stop_code, 0);
	assert_true(g.finished);
	assert_false(g.saw_stop_returned);
	/* The answer of the finished handler still reached its client. */
	assert_int_equal(pthread_join(c.thread, NULL), 0);
	assert_int_equal(c.a.code, 200);
	assert_string_equal(c.a.body, "released");

	/* Stopped: the port refuses connections, stop again is a no-op, and
	 * free now succeeds. */
	int fd = connect_to(port);
	if (fd >= 0)
		close(fd);
	assert_int_equal(fd, -ECONNREFUSED);
	assert_false(js_webhook_server_ready(g.s));
	assert_int_equal(js_webhook_server_connections(g.s), 0);
	assert_int_equal(js_webhook_server_stop(g.s), 0);
	assert_int_equal(js_webhook_server_free(g.s), 0);
}

/* ---- TLS settings: versions and ciphers (SPEC §12.6, upstream `tls`) ---- */

/* One handshake to 127.0.0.1:port with the client limited to [min, max]
 * and, when not NULL, to the TLS 1.2 cipher list `ciphers`. Returns 0 with
 * the negotiated version and cipher (OpenSSL names), or the OpenSSL reason
 * of the failure: a refusal by the server is an alert the client received
 * (SSL_R_TLSV1_ALERT_PROTOCOL_VERSION, SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE),
 * so it cannot be mistaken for this client declining to try. */
static int handshake(uint16_t port, int min, int max, const char *ciphers, char *ret_version, char *ret_cipher)
{
	int fd = connect_to(port);
	assert_true(fd >= 0);
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	assert_non_null(ctx);
	/* Level 0: this client offers TLS 1.0 and 1.1 when asked to. */
	SSL_CTX_set_security_level(ctx, 0);
	assert_int_equal(SSL_CTX_set_min_proto_version(ctx, min), 1);
	assert_int_equal(SSL_CTX_set_max_proto_version(ctx, max), 1);
	if (ciphers)
		assert_int_equal(SSL_CTX_set_cipher_list(ctx, ciphers), 1);
	SSL *ssl = SSL_new(ctx);
	assert_non_null(ssl);
	assert_int_equal(SSL_set_fd(ssl, fd), 1);
	ERR_clear_error();
	int rc = 0;
	if (SSL_connect(ssl) == 1) {
		snprintf(ret_version, 32, "%s", SSL_get_version(ssl));
		snprintf(ret_cipher, 64, "%s", SSL_CIPHER_get_name(SSL_get_current_cipher(ssl)));
		(void)SSL_shutdown(ssl);
	} else {
		rc = ERR_GET_REASON(ERR_peek_last_error());
		assert_true(rc != 0);
	}
	ERR_clear_error();
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	return rc;
}

static void test_tls_versions_and_ciphers(void **state)
{
	(void)state;
	struct pem pair = make_pair("tls");
	const char *only[] = {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384"};
	char *list = NULL, *err = NULL;
	assert_int_equal(js_webhook_tls_ciphers(only, JS_ARRAY_SIZE(only), &list, &err), 0);
	assert_string_equal(list, "ECDHE-ECDSA-AES128-GCM-SHA256");
	struct js_webhook_route routes[] = {{"/metrics", hello, NULL}};
	/* The pair in memory, as the metrics server's self-signed one. */
	struct js_webhook_opts o = {.bind_address = "127.0.0.1",
				    .cert_pem = pair.cert,
				    .key_pem = pair.key,
				    .tls_ciphers = list,
				    .routes = routes,
				    .n_routes = 1};
	struct js_webhook_server *s = NULL, *s13 = NULL;
	assert_int_equal(js_webhook_server_new(&o, &s), 0);
	o.tls_min = JS_WEBHOOK_TLS_MIN_1_3;
	o.tls_ciphers = NULL;
	assert_int_equal(js_webhook_server_new(&o, &s13), 0);
	uint16_t port = js_webhook_server_port(s), port13 = js_webhook_server_port(s13);

	static const struct {
		bool min13;         /* the server with tls_min 1.3 */
		int lo, hi;         /* client versions */
		const char *ciphers; /* client's TLS 1.2 list, NULL = OpenSSL's */
		int reason;         /* 0 = accepted */
		const char *version, *cipher;
	} rows[] = {
		{false, TLS1_VERSION, TLS1_VERSION, NULL, SSL_R_TLSV1_ALERT_PROTOCOL_VERSION, NULL, NULL},
		{false, TLS1_1_VERSION, TLS1_1_VERSION, NULL, SSL_R_TLSV1_ALERT_PROTOCOL_VERSION, NULL, NULL},
		{false, TLS1_VERSION, TLS1_1_VERSION, NULL, SSL_R_TLSV1_ALERT_PROTOCOL_VERSION, NULL, NULL},
		{false, TLS1_2_VERSION, TLS1_2_VERSION, NULL, 0, "TLSv1.2", "ECDHE-ECDSA-AES128-GCM-SHA256"},
		{false, TLS1_3_VERSION, TLS1_3_VERSION, NULL, 0, "TLSv1.3", NULL},
		/* The configured list is honoured: a cipher outside it is refused
		 * although the certificate could serve it... */
		{false, TLS1_2_VERSION, TLS1_2_VERSION, "ECDHE-ECDSA-AES256-GCM-SHA384",
		 SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE, NULL, NULL},
		{false, TLS1_2_VERSION, TLS1_2_VERSION, "ECDHE-ECDSA-CHACHA20-POLY1305",
		 SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE, NULL, NULL},
		/* ...and the one in it is taken even when offered last. */
		{false, TLS1_2_VERSION, TLS1_2_VERSION, "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256", 0,
		 "TLSv1.2", "ECDHE-ECDSA-AES128-GCM-SHA256"},
		/* The 1.3-only server refuses 1.2 and serves 1.3. */
		{true, TLS1_2_VERSION, TLS1_2_VERSION, NULL, SSL_R_TLSV1_ALERT_PROTOCOL_VERSION, NULL, NULL},
		{true, TLS1_VERSION, TLS1_3_VERSION, NULL, 0, "TLSv1.3", NULL},
	};
	for (size_t i = 0; i < JS_ARRAY_SIZE(rows); i++) {
		char version[32] = "", cipher[64] = "";
		int got = handshake(rows[i].min13 ? port13 : port, rows[i].lo, rows[i].hi, rows[i].ciphers, version,
				    cipher);
		if (got != rows[i].reason)
			fail_msg("row %zu: reason %d (%s), want %d", i, got, ERR_reason_error_string(ERR_PACK(
				 ERR_LIB_SSL, 0, got)) ? ERR_reason_error_string(ERR_PACK(ERR_LIB_SSL, 0, got)) : "?",
				 rows[i].reason);
		if (rows[i].version)
			assert_string_equal(version, rows[i].version);
		if (rows[i].cipher)
			assert_string_equal(cipher, rows[i].cipher);
	}
	/* A request over the in-memory pair works end to end. */
	struct answer a;
	assert_int_equal(request(port, TLS_1_2, "GET /metrics HTTP/1.1", NULL, &a), 0);
	assert_int_equal(a.code, 200);
	assert_string_equal(a.cn, "tls");
	stop_and_free(s);
	stop_and_free(s13);
	s = NULL;

	/* Half a pair in memory, and a cipher list OpenSSL refuses. */
	struct js_webhook_opts bad = {.bind_address = "127.0.0.1", .cert_pem = pair.cert};
	assert_int_equal(js_webhook_server_new(&bad, &s), JS_EINVALID);
	bad.key_pem = pair.key;
	bad.tls_ciphers = "NO-SUCH-CIPHER";
	assert_int_equal(js_webhook_server_new(&bad, &s), JS_EINVALID);
	assert_null(s);
	free(list);
	pem_done(&pair);
}

static void test_tls_cipher_names(void **state)
{
	(void)state;
	static const struct {
		const char *names[3];
		size_t n;
		int r;
		const char *want; /* the list, or a part of the message */
	} rows[] = {
		{{"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"},
		 2,
		 0,
		 "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256"},
		/* Go's short CHACHA20 names. */
		{{"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305"}, 1, 0, "ECDHE-ECDSA-CHACHA20-POLY1305"},
		{{"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"}, 1, 0, "ECDHE-ECDSA-CHACHA20-POLY1305"},
		/* TLS 1.3 names are skipped; only them leaves no TLS 1.2 suite. */
		{{"TLS_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}, 2, 0, "ECDHE-RSA-AES128-GCM-SHA256"},
		{{"TLS_AES_128_GCM_SHA256"}, 1, JS_EINVALID, "none of them is a TLS 1.2 cipher suite"},
		{{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"},
		 2,
		 JS_EINVALID,
		 "\"ECDHE-RSA-AES128-GCM-SHA256\""},
		{{"TLS_NOPE"}, 1, JS_EINVALID, "invalid cipher suites: unknown or unsupported cipher suite \"TLS_NOPE\""},
		{{""}, 1, JS_EINVALID, "\"\""},
		{{NULL}, 0, JS_EINVALID, "none of them"},
	};
	for (size_t i = 0; i < JS_ARRAY_SIZE(rows); i++) {
		char *list = NULL, *err = NULL;
		int r = js_webhook_tls_ciphers(rows[i].names, rows[i].n, &list, &err);
		if (r != rows[i].r)
			fail_msg("row %zu: %d (%s), want %d", i, r, err ? err : "-", rows[i].r);
		if (r == 0) {
			assert_string_equal(list, rows[i].want);
			assert_null(err);
		} else {
			assert_null(list);
			assert_non_null(err);
			if (!strstr(err, rows[i].want))
				fail_msg("row %zu: '%s' lacks '%s'", i, err, rows[i].want);
		}
		free(list);
		free(err);
	}
}

int main(void)
{
	/* As jobset-controller does: a peer that closed (a refused handshake
	 * the client still writes to) is an error return, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tls_routes_reload),
		cmocka_unit_test(test_plain_http),
		cmocka_unit_test(test_connection_limit),
		cmocka_unit_test(test_lifecycle),
		cmocka_unit_test(test_tls_versions_and_ciphers),
		cmocka_unit_test(test_tls_cipher_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
