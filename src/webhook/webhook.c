/*
 * webhook.c - the HTTPS server of webhook.h on libmicrohttpd, and the
 * AdmissionReview dispatch behind it (js_webhook_review).
 *
 * Certificate rotation: we own the listening socket. A watcher thread stats
 * tls.crt/tls.key every reload interval; when either changed and the new
 * pair loads and matches, a new daemon is started on the same socket with
 * the new pair, the old one is quiesced (it stops accepting but finishes its
 * connections) and stopped. Clients never see a refused connection, and a
 * half-written pair is simply not picked up until it is complete.
 */
#include "webhook/webhook.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "base/json.h"
#include "base/limits.h"
#include "webhook/webhook_int.h"

/* Appends whose buffers have ceilings far above anything bounded input
 * can produce; a truncated message is still a message. */
static void best_effort(int r)
{
	(void)r;
}

/* TLS 1.2 and 1.3 only (SPEC §12.6 leaves the minimum to configuration;
 * controller-runtime's default is TLS 1.2). */
#define WEBHOOK_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

struct route {
	char *path;
	js_webhook_handler_fn fn;
	void *ctx;
};

/* What we last loaded from disk, to notice changes cheaply. */
struct file_id {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

struct js_webhook_server {
	struct js_webhook_admit_cfg admit;
	bool admission;
	struct route *routes;
	size_t n_routes;
	unsigned threads;
	js_webhook_log_fn log;
	void *log_ctx;

	int fd;
	uint16_t port;
	bool tls;
	char *cert_file, *key_file;
	int reload_ms;

	/* The serving daemon and the PEM it was started with (MHD keeps
	 * pointers into them). Changed only by the watcher thread or _free,
	 * under `mu`. */
	pthread_mutex_t mu;
	struct MHD_Daemon *daemon;
	char *cert_pem, *key_pem;
	struct file_id cert_id, key_id;

	atomic_bool ready;
	atomic_uint_fast64_t reloads;

	pthread_t watcher;
	bool watcher_started;
	pthread_cond_t cond;
	bool stopping;
};

struct js_webhook_req {
	const char *method;
	const char *path;
	struct MHD_Connection *conn;
	struct js_buf body;
	bool too_large;
};

/* ---- small helpers ---- */

static void logf_(const struct js_webhook_server *s, int level, const char *fmt, ...) JS_PRINTF(3, 4);
static void logf_(const struct js_webhook_server *s, int level, const char *fmt, ...)
{
	if (!s->log)
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	s->log(s->log_ctx, level, line);
}

static void mhd_logger(void *cls, const char *fmt, va_list ap) JS_PRINTF(2, 0);
static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
	const struct js_webhook_server *s = cls;
	char line[1024];
	vsnprintf(line, sizeof(line), fmt, ap);
	size_t n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	if (s->log)
		s->log(s->log_ctx, 4, line);
}

static int file_stat(const char *path, struct file_id *ret)
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

static bool same_id(const struct file_id *a, const struct file_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* Read a whole small file. Returns 0 and a malloc'd NUL-terminated string. */
static int read_pem(const char *path, char **ret)
{
	size_t len = 0;
	char *data = NULL;
	int r = js_file_read(path, JS_LIMIT_WEBHOOK_PEM, &data, &len);
	if (r == 0 && len == 0) {
		free(data);
		r = JS_EINVALID; /* an empty file is a half-written one */
	}
	if (r == 0)
		*ret = data;
	return r;
}

/* True when the PEM pair parses and the key matches the certificate. */
static bool pair_ok(const char *cert, const char *key)
{
	gnutls_certificate_credentials_t cred;
	if (gnutls_certificate_allocate_credentials(&cred) != GNUTLS_E_SUCCESS)
		return false;
	gnutls_datum_t c = {(unsigned char *)(uintptr_t)cert, (unsigned)strlen(cert)};
	gnutls_datum_t k = {(unsigned char *)(uintptr_t)key, (unsigned)strlen(key)};
	int r = gnutls_certificate_set_x509_key_mem2(cred, &c, &k, GNUTLS_X509_FMT_PEM, NULL, 0);
	gnutls_certificate_free_credentials(cred);
	return r >= 0;
}

/* ---- requests ---- */

const char *js_webhook_req_method(const struct js_webhook_req *r)
{
	return r->method;
}

const char *js_webhook_req_path(const struct js_webhook_req *r)
{
	return r->path;
}

const char *js_webhook_req_header(const struct js_webhook_req *r, const char *name)
{
	return r->conn ? MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name) : NULL;
}

const char *js_webhook_req_body(const struct js_webhook_req *r, size_t *ret_len)
{
	if (ret_len)
		*ret_len = r->body.len;
	return js_buf_str(&r->body);
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned code, const char *ctype, const char *body,
			     size_t len)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)(uintptr_t)body,
								    MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	enum MHD_Result r = MHD_queue_response(conn, code, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result reply_json(struct MHD_Connection *conn, unsigned code, const json_t *j)
{
	char *text = json_dumps(j, JSON_COMPACT);
	enum MHD_Result r = reply(conn, code, "application/json", text, strlen(text));
	free(text);
	return r;
}

static bool is_admission_path(const char *path)
{
	return strcmp(path, JS_WEBHOOK_PATH_MUTATE_JOBSET) == 0 || strcmp(path, JS_WEBHOOK_PATH_VALIDATE_JOBSET) == 0 ||
	       strcmp(path, JS_WEBHOOK_PATH_MUTATE_POD) == 0 || strcmp(path, JS_WEBHOOK_PATH_VALIDATE_POD) == 0;
}

static enum MHD_Result handle(struct js_webhook_server *s, struct js_webhook_req *rq)
{
	struct MHD_Connection *conn = rq->conn;
	if (rq->too_large) {
		static const char msg[] = "request body too large\n";
		return reply(conn, MHD_HTTP_CONTENT_TOO_LARGE, "text/plain; charset=utf-8", msg, sizeof(msg) - 1);
	}
	if (s->admission && is_admission_path(rq->path)) {
		if (strcmp(rq->method, "POST") != 0) {
			static const char msg[] = "admission webhooks accept POST only\n";
			return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", msg, sizeof(msg) - 1);
		}
		json_t *out = NULL;
		int http = 500;
		int rr = js_webhook_review(&s->admit, rq->path, js_buf_str(&rq->body), rq->body.len, &out, &http);
		(void)rr; /* errors are answered: out and http are always set */
		enum MHD_Result r = reply_json(conn, (unsigned)http, out);
		json_decref(out);
		return r;
	}
	for (size_t i = 0; i < s->n_routes; i++) {
		if (strcmp(s->routes[i].path, rq->path) != 0)
			continue;
		struct js_buf body;
		js_buf_init(&body, 0);
		const char *ctype = NULL;
		int code = s->routes[i].fn(s->routes[i].ctx, rq, &body, &ctype);
		enum MHD_Result r = reply(conn, (unsigned)(code > 0 ? code : 500),
					  ctype ? ctype : "text/plain; charset=utf-8", js_buf_str(&body), body.len);
		js_buf_done(&body);
		return r;
	}
	static const char msg[] = "404 page not found\n";
	return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", msg, sizeof(msg) - 1);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	(void)version;
	struct js_webhook_server *s = cls;
	struct js_webhook_req *rq = *con_cls;
	if (!rq) {
		/* First call: headers only. Refuse an announced oversized body
		 * before reading it. */
		rq = js_xcalloc(1, sizeof(*rq));
		rq->conn = conn;
		rq->method = method;
		rq->path = url;
		js_buf_init(&rq->body, JS_LIMIT_WEBHOOK_BODY);
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strlen(cl) > 9)
			rq->too_large = true;
		*con_cls = rq;
		/* Answer at once rather than wait for a body we will not read. */
		return rq->too_large ? handle(s, rq) : MHD_YES;
	}
	if (*upload_size) {
		if (!rq->too_large && js_buf_add(&rq->body, upload, *upload_size) < 0)
			rq->too_large = true;
		*upload_size = 0;
		return MHD_YES;
	}
	return handle(s, rq);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)conn;
	(void)toe;
	struct js_webhook_req *rq = *con_cls;
	if (!rq)
		return;
	js_buf_done(&rq->body);
	free(rq);
	*con_cls = NULL;
}

/* ---- daemons ---- */

static struct MHD_Daemon *start_daemon(struct js_webhook_server *s, const char *cert, const char *key)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC;
	if (s->tls)
		flags |= MHD_USE_TLS;
	if (s->log)
		flags |= MHD_USE_ERROR_LOG;
	struct MHD_OptionItem tls_opts[] = {
		{MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)(uintptr_t)cert},
		{MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)(uintptr_t)key},
		{MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)(uintptr_t)WEBHOOK_TLS_PRIORITIES},
		{MHD_OPTION_END, 0, NULL},
	};
	struct MHD_OptionItem no_opts[] = {{MHD_OPTION_END, 0, NULL}};
	return MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, s,
				MHD_OPTION_LISTEN_SOCKET, (MHD_socket)s->fd,
				MHD_OPTION_THREAD_POOL_SIZE, (unsigned)s->threads,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)JS_LIMIT_WEBHOOK_IDLE_S,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)JS_LIMIT_WEBHOOK_CONNS,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				MHD_OPTION_ARRAY, s->tls ? tls_opts : no_opts,
				MHD_OPTION_END);
}

/* Stop a daemon without closing the shared listening socket. */
static void stop_daemon(struct MHD_Daemon *d)
{
	if (!d)
		return;
	(void)MHD_quiesce_daemon(d);
	MHD_stop_daemon(d);
}

/* Load the pair from disk. Returns 0 with both PEMs and their file ids,
 * JS_EINVALID when they do not form a pair, or -errno. */
static int load_pair(const struct js_webhook_server *s, char **ret_cert, char **ret_key, struct file_id *ret_cid,
		     struct file_id *ret_kid)
{
	struct file_id cid, kid;
	char *cert = NULL, *key = NULL;
	int r = file_stat(s->cert_file, &cid);
	if (r == 0)
		r = file_stat(s->key_file, &kid);
	if (r == 0)
		r = read_pem(s->cert_file, &cert);
	if (r == 0)
		r = read_pem(s->key_file, &key);
	if (r == 0 && !pair_ok(cert, key))
		r = JS_EINVALID;
	if (r < 0) {
		free(cert);
		free(key);
		return r;
	}
	*ret_cert = cert;
	*ret_key = key;
	*ret_cid = cid;
	*ret_kid = kid;
	return 0;
}

/* One reload check (watcher thread). */
static void maybe_reload(struct js_webhook_server *s)
{
	struct file_id cid, kid;
	if (file_stat(s->cert_file, &cid) < 0 || file_stat(s->key_file, &kid) < 0)
		return;
	pthread_mutex_lock(&s->mu);
	bool changed = !same_id(&cid, &s->cert_id) || !same_id(&kid, &s->key_id);
	pthread_mutex_unlock(&s->mu);
	if (!changed)
		return;
	char *cert, *key;
	int r = load_pair(s, &cert, &key, &cid, &kid);
	if (r < 0) {
		/* Often a pair caught mid-rotation: keep serving the old one and
		 * look again at the next tick. */
		logf_(s, 1, "webhook certificate %s not reloaded: %s, ignoring", s->cert_file, js_strerror(r));
		return;
	}
	pthread_mutex_lock(&s->mu);
	if (strcmp(cert, s->cert_pem) == 0 && strcmp(key, s->key_pem) == 0) {
		/* Touched, not changed. */
		s->cert_id = cid;
		s->key_id = kid;
		pthread_mutex_unlock(&s->mu);
		free(cert);
		free(key);
		return;
	}
	struct MHD_Daemon *d = start_daemon(s, cert, key);
	if (!d) {
		pthread_mutex_unlock(&s->mu);
		logf_(s, 0, "webhook server could not restart with the new certificate, keeping the old one");
		free(cert);
		free(key);
		return;
	}
	struct MHD_Daemon *old = s->daemon;
	char *old_cert = s->cert_pem, *old_key = s->key_pem;
	s->daemon = d;
	s->cert_pem = cert;
	s->key_pem = key;
	s->cert_id = cid;
	s->key_id = kid;
	pthread_mutex_unlock(&s->mu);
	stop_daemon(old);
	free(old_cert);
	free(old_key);
	atomic_fetch_add(&s->reloads, 1);
	logf_(s, 2, "webhook certificate reloaded from %s", s->cert_file);
}

static void *watch_main(void *arg)
{
	struct js_webhook_server *s = arg;
	pthread_mutex_lock(&s->mu);
	while (!s->stopping) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += s->reload_ms / 1000;
		until.tv_nsec += (long)(s->reload_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		int r = 0;
		while (!s->stopping && r != ETIMEDOUT)
			r = pthread_cond_timedwait(&s->cond, &s->mu, &until);
		if (s->stopping)
			break;
		pthread_mutex_unlock(&s->mu);
		maybe_reload(s);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static int bind_socket(const char *addr, uint16_t port, int *ret_fd, uint16_t *ret_port)
{
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	socklen_t len;
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, addr, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(port);
		len = sizeof(*in4);
	} else if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		len = sizeof(*in6);
	} else {
		return -EINVAL;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 128) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	*ret_port = ntohs(ss.ss_family == AF_INET ? in4->sin_port : in6->sin6_port);
	*ret_fd = fd;
	return 0;
}

static char *join_path(const char *dir, const char *file)
{
	struct js_buf b;
	js_buf_init(&b, 8192);
	best_effort(js_buf_printf(&b, "%s/%s", dir, file));
	return js_buf_take(&b);
}

int js_webhook_server_new(const struct js_webhook_opts *opts, struct js_webhook_server **ret)
{
	struct js_webhook_server *s = js_xcalloc(1, sizeof(*s));
	int r = 0;
	s->fd = -1;
	s->admit = opts->admit;
	s->admission = opts->admission;
	s->threads = opts->threads ? opts->threads : 2;
	s->log = opts->log;
	s->log_ctx = opts->log_ctx;
	s->reload_ms = opts->reload_interval_ms > 0 ? opts->reload_interval_ms : 1000;
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (opts->n_routes) {
		s->routes = js_xcalloc(opts->n_routes, sizeof(*s->routes));
		for (size_t i = 0; i < opts->n_routes; i++) {
			s->routes[i].path = js_xstrdup(opts->routes[i].path);
			s->routes[i].fn = opts->routes[i].fn;
			s->routes[i].ctx = opts->routes[i].ctx;
		}
		s->n_routes = opts->n_routes;
	}
	if (opts->cert_file || opts->cert_dir) {
		s->tls = true;
		s->cert_file = opts->cert_file ? js_xstrdup(opts->cert_file) : join_path(opts->cert_dir, "tls.crt");
		s->key_file = opts->key_file ? js_xstrdup(opts->key_file)
					     : join_path(opts->cert_dir ? opts->cert_dir : ".", "tls.key");
		r = load_pair(s, &s->cert_pem, &s->key_pem, &s->cert_id, &s->key_id);
		if (r < 0)
			goto fail;
	}
	r = bind_socket(opts->bind_address ? opts->bind_address : "0.0.0.0", opts->port, &s->fd, &s->port);
	if (r < 0)
		goto fail;
	s->daemon = start_daemon(s, s->cert_pem, s->key_pem);
	if (!s->daemon) {
		r = -EIO;
		goto fail;
	}
	atomic_store(&s->ready, true);
	if (s->tls) {
		if (pthread_create(&s->watcher, NULL, watch_main, s) != 0) {
			r = -EAGAIN;
			goto fail;
		}
		s->watcher_started = true;
	}
	*ret = s;
	return 0;
fail:
	js_webhook_server_free(s);
	return r;
}

struct js_webhook_server *js_webhook_server_free(struct js_webhook_server *s)
{
	if (!s)
		return NULL;
	atomic_store(&s->ready, false);
	if (s->watcher_started) {
		pthread_mutex_lock(&s->mu);
		s->stopping = true;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->watcher, NULL);
	}
	stop_daemon(s->daemon);
	if (s->fd >= 0)
		close(s->fd);
	for (size_t i = 0; i < s->n_routes; i++)
		free(s->routes[i].path);
	free(s->routes);
	free(s->cert_file);
	free(s->key_file);
	free(s->cert_pem);
	free(s->key_pem);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->mu);
	free(s);
	return NULL;
}

uint16_t js_webhook_server_port(const struct js_webhook_server *s)
{
	return s->port;
}

bool js_webhook_server_ready(const struct js_webhook_server *s)
{
	return atomic_load(&((struct js_webhook_server *)(uintptr_t)s)->ready);
}

uint64_t js_webhook_server_cert_reloads(const struct js_webhook_server *s)
{
	return atomic_load(&((struct js_webhook_server *)(uintptr_t)s)->reloads);
}

/* ---- admission dispatch ---- */

typedef void (*admit_fn)(const struct js_webhook_admit_cfg *, const struct js_admission_req *,
			 struct js_admission_resp *);

static const struct {
	const char *path;
	admit_fn fn;
} admit_routes[] = {
	{JS_WEBHOOK_PATH_MUTATE_JOBSET, js__jobset_admit_mutate},
	{JS_WEBHOOK_PATH_VALIDATE_JOBSET, js__jobset_admit_validate},
	{JS_WEBHOOK_PATH_MUTATE_POD, js__pod_admit_mutate},
	{JS_WEBHOOK_PATH_VALIDATE_POD, js__pod_admit_validate},
};

int js_webhook_review(const struct js_webhook_admit_cfg *cfg, const char *path, const char *body, size_t len,
		      json_t **ret_review, int *ret_http)
{
	admit_fn fn = NULL;
	for (size_t i = 0; i < JS_ARRAY_SIZE(admit_routes); i++)
		if (strcmp(admit_routes[i].path, path) == 0)
			fn = admit_routes[i].fn;
	if (!fn) {
		*ret_review = js_admission_status(404, "NotFound", "no admission webhook at this path");
		*ret_http = 404;
		return JS_ENOTFOUND;
	}
	json_error_t jerr;
	json_t *doc = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &jerr);
	struct js_admission_req req;
	char *why = NULL;
	if (!doc || js_admission_decode(doc, &req, &why) < 0) {
		char msg[512];
		snprintf(msg, sizeof(msg), "malformed AdmissionReview: %s", doc ? why : jerr.text);
		*ret_review = js_admission_status(400, "BadRequest", msg);
		*ret_http = 400;
		free(why);
		json_decref(doc);
		return JS_EINVALID;
	}
	json_decref(doc);
	struct js_admission_resp resp = {0};
	fn(cfg, &req, &resp);
	*ret_review = js_admission_encode(&req, &resp);
	*ret_http = 200;
	js_admission_resp_done(&resp);
	js_admission_req_done(&req);
	return 0;
}
