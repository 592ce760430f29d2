/*
 * server_test.c - the HTTPS server of webhook.h over real sockets: TLS with
 * a generated certificate, routing (admission paths, extra routes, 404, 405,
 * 413), plain HTTP, start-up errors, and certificate reload: after tls.crt
 * and tls.key are replaced, new handshakes see the new certificate.
 *
 * The client is GnuTLS (already linked through libmicrohttpd); certificates
 * are generated per run, nothing is read from the tree.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <netinet/in.h>
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

static struct pem make_pair(const char *cn)
{
	gnutls_x509_privkey_t key;
	gnutls_x509_crt_t crt;
	assert_int_equal(gnutls_x509_privkey_init(&key), 0);
	assert_int_equal(gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
						      GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0), 0);
	assert_int_equal(gnutls_x509_crt_init(&crt), 0);
	time_t now = time(NULL);
	unsigned char serial[4] = {1, 2, 3, (unsigned char)cn[0]};
	unsigned char ip[4] = {127, 0, 0, 1};
	assert_int_equal(gnutls_x509_crt_set_version(crt, 3), 0);
	assert_int_equal(gnutls_x509_crt_set_serial(crt, serial, sizeof(serial)), 0);
	assert_int_equal(gnutls_x509_crt_set_activation_time(crt, now - 60), 0);
	assert_int_equal(gnutls_x509_crt_set_expiration_time(crt, now + 3600), 0);
	assert_int_equal(gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn, (unsigned)strlen(cn)), 0);
	assert_int_equal(gnutls_x509_crt_set_key(crt, key), 0);
	assert_int_equal(gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 4, GNUTLS_FSAN_SET), 0);
	assert_int_equal(gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0), 0);
	gnutls_datum_t c, k;
	assert_int_equal(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &c), 0);
	assert_int_equal(gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &k), 0);
	struct pem p = {strndup((char *)c.data, c.size), strndup((char *)k.data, k.size)};
	gnutls_free(c.data);
	gnutls_free(k.data);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
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
	int code;
	char cn[128]; /* common name of the server certificate */
	char body[8192];
};

static int connect_to(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static void parse_answer(const char *raw, struct answer *ret)
{
	assert_int_equal(sscanf(raw, "HTTP/1.1 %d", &ret->code), 1);
	const char *b = strstr(raw, "\r\n\r\n");
	snprintf(ret->body, sizeof(ret->body), "%s", b ? b + 4 : "");
}

/* One request over TLS (tls) or plain TCP; Connection: close. */
static void request(uint16_t port, bool tls, const char *head, const char *body, struct answer *ret)
{
	memset(ret, 0, sizeof(*ret));
	int fd = connect_to(port);
	char req[4096];
	if (body)
		snprintf(req, sizeof(req), "%s\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
			 head, strlen(body), body);
	else
		snprintf(req, sizeof(req), "%s\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", head);
	static char raw[65536];
	size_t got = 0;
	if (!tls) {
		assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
		ssize_t n;
		while ((n = read(fd, raw + got, sizeof(raw) - 1 - got)) > 0)
			got += (size_t)n;
	} else {
		gnutls_session_t s;
		gnutls_certificate_credentials_t cred;
		assert_int_equal(gnutls_certificate_allocate_credentials(&cred), 0);
		assert_int_equal(gnutls_init(&s, GNUTLS_CLIENT), 0);
		assert_int_equal(gnutls_set_default_priority(s), 0);
		assert_int_equal(gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred), 0);
		gnutls_transport_set_int(s, fd);
		int r;
		do
			r = gnutls_handshake(s);
		while (r < 0 && !gnutls_error_is_fatal(r));
		if (r < 0)
			fail_msg("handshake: %s", gnutls_strerror(r));
		unsigned n_certs = 0;
		const gnutls_datum_t *certs = gnutls_certificate_get_peers(s, &n_certs);
		assert_true(n_certs >= 1);
		gnutls_x509_crt_t crt;
		assert_int_equal(gnutls_x509_crt_init(&crt), 0);
		assert_int_equal(gnutls_x509_crt_import(crt, &certs[0], GNUTLS_X509_FMT_DER), 0);
		size_t cn_len = sizeof(ret->cn);
		assert_int_equal(gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, ret->cn, &cn_len), 0);
		gnutls_x509_crt_deinit(crt);
		/* HTTP/1.1 only: no ALPN protocol was negotiated. */
		gnutls_datum_t alpn;
		assert_true(gnutls_alpn_get_selected_protocol(s, &alpn) < 0);
		assert_int_equal(gnutls_record_send(s, req, strlen(req)), (ssize_t)strlen(req));
		ssize_t n;
		while ((n = gnutls_record_recv(s, raw + got, sizeof(raw) - 1 - got)) > 0)
			got += (size_t)n;
		gnutls_bye(s, GNUTLS_SHUT_RDWR);
		gnutls_deinit(s);
		gnutls_certificate_free_credentials(cred);
	}
	raw[got] = '\0';
	close(fd);
	parse_answer(raw, ret);
}

static int hello(void *ctx, const struct js_webhook_req *req, struct js_buf *body, const char **ret_ctype)
{
	(void)ctx;
	*ret_ctype = "text/plain; version=0.0.4";
	const char *auth = js_webhook_req_header(req, "Authorization");
	size_t n = 0;
	(void)js_webhook_req_body(req, &n);
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

static void wait_reloads(struct js_webhook_server *s, uint64_t n)
{
	/* Wait for the condition with a deadline; the watcher polls every 20 ms. */
	struct timespec start, now, tick = {0, 5 * 1000000L};
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (js_webhook_server_cert_reloads(s) < n) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec > 20)
			fail_msg("certificate not reloaded within 20 s");
		nanosleep(&tick, NULL);
	}
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
		{"POST /metrics HTTP/1.1", "abc", 200, "len=3"},
		{"GET /nope HTTP/1.1", NULL, 404, "not found"},
		{"POST " JS_WEBHOOK_PATH_VALIDATE_POD " HTTP/1.1\r\nContent-Length: 99999999999", NULL, 413, "too large"},
	};
	for (size_t i = 0; i < JS_ARRAY_SIZE(rows); i++) {
		request(port, true, rows[i].head, rows[i].body, &a);
		if (a.code != rows[i].code || !strstr(a.body, rows[i].in_body))
			fail_msg("%s: %d '%s', want %d with '%s'", rows[i].head, a.code, a.body, rows[i].code,
				 rows[i].in_body);
		assert_string_equal(a.cn, "one");
	}

	/* A certificate without its key is not picked up; the complete pair is. */
	write_file(dir, "tls.crt", two.cert);
	request(port, true, "GET /metrics HTTP/1.1", NULL, &a);
	assert_int_equal(a.code, 200);
	write_file(dir, "tls.key", two.key);
	wait_reloads(s, 1);
	request(port, true, "GET /metrics HTTP/1.1", NULL, &a);
	assert_int_equal(a.code, 200);
	assert_string_equal(a.cn, "two");
	assert_int_equal(js_webhook_server_cert_reloads(s), 1);
	assert_true(js_webhook_server_ready(s));

	/* Start-up errors: port taken, unreadable pair, mismatched pair. */
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
	assert_null(s2);

	js_webhook_server_free(s);
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
	struct js_webhook_opts o = {.bind_address = "127.0.0.1", .routes = routes, .n_routes = 1};
	struct js_webhook_server *s = NULL;
	assert_int_equal(js_webhook_server_new(&o, &s), 0);
	assert_true(js_webhook_server_ready(s));
	struct answer a;
	request(js_webhook_server_port(s), false, "GET /healthz HTTP/1.1", NULL, &a);
	assert_int_equal(a.code, 200);
	assert_string_equal(a.body, "GET /healthz auth=- len=0");
	/* Admission is off on this server. */
	request(js_webhook_server_port(s), false, "POST " JS_WEBHOOK_PATH_VALIDATE_JOBSET " HTTP/1.1", review, &a);
	assert_int_equal(a.code, 404);
	js_webhook_server_free(s);
	assert_null(js_webhook_server_free(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tls_routes_reload),
		cmocka_unit_test(test_plain_http),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
