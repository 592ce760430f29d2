/*
 * webhook.c - the HTTP(S) server of webhook.h on libevent's evhttp with
 * OpenSSL bufferevents, and the AdmissionReview dispatch behind it
 * (js_webhook_review).
 *
 * Shape: we own the listening socket. Each of `threads` workers runs its own
 * event_base with its own evhttp bound to that socket; the kernel hands each
 * new connection to whichever loop accepts it first, and a connection stays
 * on that loop. A handler runs on its connection's loop, so handlers of
 * different workers run at once and a slow lookup stalls one worker only.
 *
 * TLS and rotation: every accepted connection gets an SSL from the current
 * SSL_CTX (tls.c), read under `mu`. Worker 0 also runs a timer that stats
 * tls.crt/tls.key every reload interval; when either changed and the new
 * pair loads and matches, the new SSL_CTX replaces the old one for the next
 * handshake, and connections already open keep theirs (an SSL holds a
 * reference to its context). A half-written pair is not picked up until it
 * is complete, and the old pair serves meanwhile.
 *
 * Connection bound: evhttp 2.1 has no connection limit and no hook when a
 * connection is created, only one when it closes (closecb, set on the
 * evhttp_connection). So the bufferevent callback counts the connection and
 * queues its bufferevent; right after the accept, still on the same loop
 * and before any I/O on it, `attach` finds the connection that evhttp built
 * around it (the bufferevent's callback argument) and sets closecb, which
 * uncounts it. A worker at its share of max_connections stops
 * accepting until one of its connections closes; new clients wait in the
 * listen backlog meanwhile, or are served by another worker.
 *
 * Stop: each worker has an eventfd in its loop. stop writes to all of them;
 * each loop stops accepting, flushes answers for up to WEBHOOK_STOP_DRAIN_MS
 * and ends between two callbacks (so never inside a handler), and stop joins
 * the threads. Nothing of libevent is shared between threads, so
 * libevent's own locking (evthread) is not needed.
 */
#include "webhook/webhook.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/json.h"
#include "base/limits.h"
#include "webhook/webhook_int.h"

/* After accept() fails for want of file descriptors (or memory), the
 * listener rests this long before it tries again: libevent would otherwise
 * retry at once, and keep failing, in a busy loop. */
#define WEBHOOK_ACCEPT_RETRY_MS 100

/* How long a stopping worker keeps flushing answers already produced,
 * milliseconds: a local write takes microseconds, so this is margin. */
#define WEBHOOK_STOP_DRAIN_MS 100

static const char plain_text[] = "text/plain; charset=utf-8";

struct route {
	char *path;
	js_webhook_handler_fn fn;
	void *ctx;
};

/* One event loop and its evhttp. Every field but `thread`/`started` is
 * touched only by that loop's thread while it runs, and by the owner thread
 * before it starts or after it was joined. */
struct worker {
	struct js_webhook_server *s;
	struct event_base *base;
	struct evhttp *http;
	struct evconnlistener *listener; /* owned by `http` once bound */
	int wake_fd;                     /* eventfd: stop */
	struct event *wake;
	struct event *attach;            /* sets closecb on new connections */
	struct event *reload;            /* worker 0 with TLS: certificate check */
	struct bufferevent **pending;    /* accepted, closecb not yet set; one ref each */
	size_t n_pending, cap_pending;
	unsigned conns, max_conns;
	bool paused;                     /* not accepting: at max_conns */
	bool closing;                    /* stopping: the listener stays off */
	pthread_t thread;
	bool started;
};

struct js_webhook_server {
	struct js_webhook_admit_cfg admit;
	bool admission;
	struct route *routes;
	size_t n_routes;
	js_webhook_log_fn log;
	void *log_ctx;

	int fd;
	uint16_t port;
	bool tls;
	bool in_memory; /* the pair came as PEM text: nothing to reload */
	char *cert_file, *key_file;
	struct js__tls_opts tls_opts;
	int reload_ms;

	/* The pair being served. Its ctx is swapped by worker 0 and read by
	 * every worker for each new connection, under `mu`. */
	pthread_mutex_t mu;
	struct js__tls_pair pair;

	struct worker *workers;
	unsigned n_workers;
	bool stopped; /* stop completed (owner thread) */

	atomic_bool ready;
	atomic_uint_fast64_t reloads;
	atomic_uint conns; /* the workers' `conns` added up, for any thread */
};

struct js_webhook_req {
	const char *method;
	const char *path;
	struct evhttp_request *ev;
	const char *body; /* NUL-terminated; owned by ev's input buffer */
	size_t len;
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

/* libevent reports allocation failure as NULL/-1 from calls that cannot
 * otherwise fail; the project's policy for running out of memory is to stop
 * (base/common.h). */
static void *need(void *p)
{
	if (!p)
		abort();
	return p;
}

static const struct {
	enum evhttp_cmd_type cmd;
	const char *name;
} methods[] = {
	{EVHTTP_REQ_GET, "GET"},         {EVHTTP_REQ_POST, "POST"},       {EVHTTP_REQ_HEAD, "HEAD"},
	{EVHTTP_REQ_PUT, "PUT"},         {EVHTTP_REQ_DELETE, "DELETE"},   {EVHTTP_REQ_OPTIONS, "OPTIONS"},
	{EVHTTP_REQ_TRACE, "TRACE"},     {EVHTTP_REQ_CONNECT, "CONNECT"}, {EVHTTP_REQ_PATCH, "PATCH"},
};

static const char *method_name(enum evhttp_cmd_type cmd)
{
	for (size_t i = 0; i < JS_ARRAY_SIZE(methods); i++)
		if (methods[i].cmd == cmd)
			return methods[i].name;
	return "UNKNOWN";
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
	return r->ev ? evhttp_find_header(evhttp_request_get_input_headers(r->ev), name) : NULL;
}

const char *js_webhook_req_body(const struct js_webhook_req *r, size_t *ret_len)
{
	if (ret_len)
		*ret_len = r->len;
	return r->body;
}

static void reply(struct evhttp_request *ev, int code, const char *ctype, const char *body, size_t len)
{
	if (code < 100 || code > 599)
		code = 500;
	evhttp_add_header(evhttp_request_get_output_headers(ev), "Content-Type", ctype);
	if (len && evbuffer_add(evhttp_request_get_output_buffer(ev), body, len) < 0)
		abort();
	/* NULL reason: evhttp fills in the standard phrase. */
	evhttp_send_reply(ev, code, NULL, NULL);
}

static bool is_admission_path(const char *path)
{
	return strcmp(path, JS_WEBHOOK_PATH_MUTATE_JOBSET) == 0 || strcmp(path, JS_WEBHOOK_PATH_VALIDATE_JOBSET) == 0 ||
	       strcmp(path, JS_WEBHOOK_PATH_MUTATE_POD) == 0 || strcmp(path, JS_WEBHOOK_PATH_VALIDATE_POD) == 0;
}

/* Bodies over JS_LIMIT_WEBHOOK_BODY never get here: evhttp answers them 413
 * from the Content-Length, before reading them, or as soon as a chunked
 * body crosses the limit. */
static void handle(struct js_webhook_server *s, const struct js_webhook_req *rq)
{
	if (s->admission && is_admission_path(rq->path)) {
		if (strcmp(rq->method, "POST") != 0) {
			static const char msg[] = "admission webhooks accept POST only\n";
			reply(rq->ev, 405, plain_text, msg, sizeof(msg) - 1);
			return;
		}
		json_t *out = NULL;
		int http = 500;
		int rr = js_webhook_review(&s->admit, rq->path, rq->body, rq->len, &out, &http);
		(void)rr; /* errors are answered: out and http are always set */
		char *text = need(json_dumps(out, JSON_COMPACT));
		reply(rq->ev, http, "application/json", text, strlen(text));
		free(text);
		json_decref(out);
		return;
	}
	for (size_t i = 0; i < s->n_routes; i++) {
		if (strcmp(s->routes[i].path, rq->path) != 0)
			continue;
		struct js_buf body;
		js_buf_init(&body, 0);
		const char *ctype = NULL;
		int code = s->routes[i].fn(s->routes[i].ctx, rq, &body, &ctype);
		reply(rq->ev, code, ctype ? ctype : plain_text, js_buf_str(&body), body.len);
		js_buf_done(&body);
		return;
	}
	static const char msg[] = "404 page not found\n";
	reply(rq->ev, 404, plain_text, msg, sizeof(msg) - 1);
}

static void on_request(struct evhttp_request *ev, void *arg)
{
	struct worker *w = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(ev);
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
	struct evbuffer *in = evhttp_request_get_input_buffer(ev);
	struct js_webhook_req rq = {
		.method = method_name(evhttp_request_get_command(ev)),
		.path = path && *path ? path : "/",
		.ev = ev,
		.len = evbuffer_get_length(in),
	};
	/* One NUL past the end, then one contiguous block: handlers get a
	 * string without a copy. */
	if (evbuffer_add(in, "", 1) < 0)
		abort();
	rq.body = need(evbuffer_pullup(in, -1));
	handle(w->s, &rq);
}

/* ---- connections ---- */

static void resume_accepting(struct worker *w)
{
	if (w->paused && !w->closing && w->conns < w->max_conns) {
		w->paused = false;
		(void)evconnlistener_enable(w->listener);
	}
}

static void on_conn_close(struct evhttp_connection *evcon, void *arg)
{
	(void)evcon;
	struct worker *w = arg;
	w->conns--;
	atomic_fetch_sub(&w->s->conns, 1);
	resume_accepting(w);
}

/* evhttp calls this for each accepted connection, before it builds the
 * connection around the returned bufferevent. */
static struct bufferevent *on_accept(struct event_base *base, void *arg)
{
	struct worker *w = arg;
	struct js_webhook_server *s = w->s;
	struct bufferevent *bev;
	if (s->tls) {
		pthread_mutex_lock(&s->mu);
		SSL *ssl = need(SSL_new(s->pair.ctx));
		pthread_mutex_unlock(&s->mu);
		bev = need(bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
							  BEV_OPT_CLOSE_ON_FREE));
		/* A client that closes without close_notify has closed, not
		 * failed: the request it sent still counts. */
		bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	} else {
		bev = need(bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE));
	}
	if (w->n_pending == w->cap_pending) {
		w->cap_pending = w->cap_pending ? 2 * w->cap_pending : 16;
		w->pending = js_xrealloc(w->pending, w->cap_pending * sizeof(*w->pending));
	}
	/* Our reference keeps the bufferevent readable in `attach` even if
	 * evhttp gave up on the connection in between. */
	bufferevent_incref(bev);
	w->pending[w->n_pending++] = bev;
	event_active(w->attach, EV_TIMEOUT, 1);
	atomic_fetch_add(&s->conns, 1);
	if (++w->conns >= w->max_conns) {
		w->paused = true;
		(void)evconnlistener_disable(w->listener);
	}
	return bev;
}

static void attach(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct worker *w = arg;
	for (size_t i = 0; i < w->n_pending; i++) {
		struct bufferevent *bev = w->pending[i];
		bufferevent_event_cb eventcb = NULL;
		void *evcon = NULL;
		bufferevent_getcb(bev, NULL, NULL, &eventcb, &evcon);
		/* evhttp keeps its callbacks, with the connection as argument, on
		 * the bufferevent for as long as the connection lives, and
		 * bufferevent_free clears them: no callback means it is gone
		 * already (closecb never set), so it is uncounted here. */
		if (eventcb && evcon)
			evhttp_connection_set_closecb(evcon, on_conn_close, w);
		else
			on_conn_close(NULL, w);
		bufferevent_decref(bev);
	}
	w->n_pending = 0;
}

/* libevent hands the listener's error callback the evhttp, not our worker,
 * so this callback cannot log; it only keeps accept() from spinning. */
static void on_accept_again(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)evconnlistener_enable(arg);
}

static void on_accept_error(struct evconnlistener *lev, void *arg)
{
	(void)arg;
	struct timeval tv = {0, WEBHOOK_ACCEPT_RETRY_MS * 1000};
	(void)evconnlistener_disable(lev);
	if (event_base_once(evconnlistener_get_base(lev), -1, EV_TIMEOUT, on_accept_again, lev, &tv) < 0)
		(void)evconnlistener_enable(lev);
}

/* ---- certificate reload (worker 0) ---- */

static void maybe_reload(struct js_webhook_server *s)
{
	struct js__tls_file_id cid, kid;
	if (js__tls_stat(s->cert_file, &cid) < 0 || js__tls_stat(s->key_file, &kid) < 0)
		return;
	/* Only this thread changes the pair while workers run. */
	if (js__tls_same(&cid, &s->pair.cert_id) && js__tls_same(&kid, &s->pair.key_id))
		return;
	struct js__tls_pair next;
	int r = js__tls_load(s->cert_file, s->key_file, &s->tls_opts, &next);
	if (r < 0) {
		/* Often a pair caught mid-rotation: keep serving the old one and
		 * look again at the next tick. */
		logf_(s, 1, "webhook certificate %s not reloaded: %s, ignoring", s->cert_file, js_strerror(r));
		return;
	}
	bool same = js__tls_same_pem(&next, &s->pair);
	pthread_mutex_lock(&s->mu);
	if (same) {
		/* Touched, not changed: remember the new ids, keep the context. */
		s->pair.cert_id = next.cert_id;
		s->pair.key_id = next.key_id;
	} else {
		struct js__tls_pair old = s->pair;
		s->pair = next;
		next = old;
	}
	pthread_mutex_unlock(&s->mu);
	js__tls_pair_done(&next);
	if (same)
		return;
	atomic_fetch_add(&s->reloads, 1);
	logf_(s, 2, "webhook certificate reloaded from %s", s->cert_file);
}

static void on_reload_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	maybe_reload(arg);
}

/* ---- workers ---- */

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	struct worker *w = arg;
	uint64_t n;
	(void)!read(fd, &n, sizeof(n));
	/* Stop accepting, and give the answers of handlers that already ran a
	 * moment to reach their clients: the API server would otherwise see a
	 * reset for a review we did answer. The loop then ends between two
	 * callbacks, never inside a handler. */
	w->closing = true;
	(void)evconnlistener_disable(w->listener);
	struct timeval tv = {0, WEBHOOK_STOP_DRAIN_MS * 1000};
	if (event_base_loopexit(w->base, &tv) < 0)
		(void)event_base_loopbreak(w->base);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	(void)event_base_dispatch(w->base);
	return NULL;
}

static int worker_init(struct js_webhook_server *s, struct worker *w, bool first)
{
	w->s = s;
	w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->wake_fd < 0)
		return -errno;
	w->base = event_base_new();
	if (!w->base)
		return -ENOMEM;
	w->http = need(evhttp_new(w->base));
	evhttp_set_max_body_size(w->http, JS_LIMIT_WEBHOOK_BODY);
	evhttp_set_max_headers_size(w->http, JS_LIMIT_WEBHOOK_HEADERS);
	evhttp_set_timeout(w->http, (int)JS_LIMIT_WEBHOOK_IDLE_S);
	/* Every method reaches the handlers, which answer 405 themselves. */
	evhttp_set_allowed_methods(w->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
						    EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
						    EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
	evhttp_set_gencb(w->http, on_request, w);
	evhttp_set_bevcb(w->http, on_accept, w);
	/* No LEV_OPT_CLOSE_ON_FREE: the socket is shared and ours. Accepted
	 * sockets are close-on-exec. Backlog 0: already listening. */
	w->listener = evconnlistener_new(w->base, NULL, NULL, LEV_OPT_CLOSE_ON_EXEC, 0, s->fd);
	if (!w->listener)
		return -ENOMEM;
	if (!evhttp_bind_listener(w->http, w->listener)) {
		evconnlistener_free(w->listener);
		w->listener = NULL;
		return -ENOMEM;
	}
	evconnlistener_set_error_cb(w->listener, on_accept_error);
	w->wake = need(event_new(w->base, w->wake_fd, EV_READ | EV_PERSIST, on_wake, w));
	w->attach = need(event_new(w->base, -1, 0, attach, w));
	if (event_add(w->wake, NULL) < 0)
		return -ENOMEM;
	if (first && s->tls && !s->in_memory) {
		struct timeval tv = {s->reload_ms / 1000, (s->reload_ms % 1000) * 1000};
		w->reload = need(event_new(w->base, -1, EV_PERSIST, on_reload_tick, s));
		if (event_add(w->reload, &tv) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Tear down a worker whose thread is not running. */
static void worker_done(struct worker *w)
{
	if (w->http) {
		w->closing = true;
		/* Closes every connection (closecb uncounts them) and frees the
		 * listener, which leaves the shared socket open. */
		evhttp_free(w->http);
	}
	/* Connections accepted since the last `attach` are gone now too, and
	 * had no closecb yet: attach uncounts them and drops our references. */
	attach(-1, 0, w);
	free(w->pending);
	if (w->wake)
		event_free(w->wake);
	if (w->attach)
		event_free(w->attach);
	if (w->reload)
		event_free(w->reload);
	if (w->base)
		event_base_free(w->base); /* runs the bufferevents' finalizers */
	if (w->wake_fd >= 0)
		close(w->wake_fd);
}

/* ---- the listening socket ---- */

static int bind_to(const struct sockaddr *sa, socklen_t len, bool v6only, int *ret_fd)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	int one = 1, v6 = v6only;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->sa_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6, sizeof(v6));
	if (bind(fd, sa, len) < 0 || listen(fd, 128) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	*ret_fd = fd;
	return 0;
}

static int bind_socket(const char *addr, uint16_t port, int *ret_fd, uint16_t *ret_port)
{
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	int r = 0;
	if (!addr || !*addr) {
		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_any;
		in6->sin6_port = htons(port);
		r = bind_to((struct sockaddr *)in6, sizeof(*in6), false, ret_fd);
		if (r == -EAFNOSUPPORT || r == -EADDRNOTAVAIL) {
			/* No IPv6 on this machine: IPv4, all interfaces. */
			memset(&ss, 0, sizeof(ss));
			addr = "0.0.0.0";
		}
	}
	if (addr && *addr) {
		if (strcmp(addr, "localhost") == 0)
			addr = "127.0.0.1";
		if (inet_pton(AF_INET, addr, &in4->sin_addr) == 1) {
			in4->sin_family = AF_INET;
			in4->sin_port = htons(port);
			r = bind_to((struct sockaddr *)in4, sizeof(*in4), false, ret_fd);
		} else if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
			in6->sin6_family = AF_INET6;
			in6->sin6_port = htons(port);
			r = bind_to((struct sockaddr *)in6, sizeof(*in6), true, ret_fd);
		} else {
			return -EINVAL;
		}
	}
	if (r < 0)
		return r;
	socklen_t len = sizeof(ss);
	if (getsockname(*ret_fd, (struct sockaddr *)&ss, &len) < 0) {
		r = -errno;
		close(*ret_fd);
		return r;
	}
	*ret_port = ntohs(ss.ss_family == AF_INET ? in4->sin_port : in6->sin6_port);
	return 0;
}

/* ---- lifecycle ---- */

static void server_destroy(struct js_webhook_server *s)
{
	for (unsigned i = 0; s->workers && i < s->n_workers; i++)
		worker_done(&s->workers[i]);
	free(s->workers);
	if (s->fd >= 0)
		close(s->fd);
	for (size_t i = 0; i < s->n_routes; i++)
		free(s->routes[i].path);
	free(s->routes);
	free(s->cert_file);
	free(s->key_file);
	free(s->tls_opts.ciphers);
	js__tls_pair_done(&s->pair);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

static char *join_path(const char *dir, const char *file)
{
	return js_buf_format("%s/%s", dir, file);
}

static void copy_opts(struct js_webhook_server *s, const struct js_webhook_opts *opts)
{
	s->admit = opts->admit;
	s->admission = opts->admission;
	s->log = opts->log;
	s->log_ctx = opts->log_ctx;
	s->reload_ms = opts->reload_interval_ms > 0 ? opts->reload_interval_ms : 1000;
	s->n_workers = opts->threads ? opts->threads : 2;
	if (opts->n_routes) {
		s->routes = js_xcalloc(opts->n_routes, sizeof(*s->routes));
		for (size_t i = 0; i < opts->n_routes; i++) {
			s->routes[i].path = js_xstrdup(opts->routes[i].path);
			s->routes[i].fn = opts->routes[i].fn;
			s->routes[i].ctx = opts->routes[i].ctx;
		}
		s->n_routes = opts->n_routes;
	}
	s->tls_opts.min = opts->tls_min;
	s->tls_opts.ciphers = opts->tls_ciphers ? js_xstrdup(opts->tls_ciphers) : NULL;
	if (opts->cert_pem || opts->key_pem) {
		s->tls = true;
		s->in_memory = true;
	} else if (opts->cert_file || opts->cert_dir) {
		s->tls = true;
		s->cert_file = opts->cert_file ? js_xstrdup(opts->cert_file) : join_path(opts->cert_dir, "tls.crt");
		s->key_file = opts->key_file ? js_xstrdup(opts->key_file)
					     : join_path(opts->cert_dir ? opts->cert_dir : ".", "tls.key");
	}
}

int js_webhook_server_new(const struct js_webhook_opts *opts, struct js_webhook_server **ret)
{
	struct js_webhook_server *s = js_xcalloc(1, sizeof(*s));
	s->fd = -1;
	pthread_mutex_init(&s->mu, NULL);
	copy_opts(s, opts);
	int r = 0;
	if (s->in_memory) {
		r = opts->cert_pem && opts->key_pem ? js__tls_load_pem(opts->cert_pem, opts->key_pem, &s->tls_opts, &s->pair)
						    : JS_EINVALID;
		if (r < 0)
			goto fail;
	} else if (s->tls) {
		r = js__tls_load(s->cert_file, s->key_file, &s->tls_opts, &s->pair);
		if (r < 0)
			goto fail;
	}
	r = bind_socket(opts->bind_address, opts->port, &s->fd, &s->port);
	if (r < 0)
		goto fail;
	s->workers = js_xcalloc(s->n_workers, sizeof(*s->workers));
	unsigned max = opts->max_connections && opts->max_connections < JS_LIMIT_WEBHOOK_CONNS
			       ? opts->max_connections
			       : JS_LIMIT_WEBHOOK_CONNS;
	unsigned share = max / s->n_workers;
	for (unsigned i = 0; i < s->n_workers; i++) {
		s->workers[i].wake_fd = -1;
		s->workers[i].max_conns = share ? share : 1;
	}
	for (unsigned i = 0; i < s->n_workers && r == 0; i++)
		r = worker_init(s, &s->workers[i], i == 0);
	if (r < 0)
		goto fail;
	atomic_store(&s->ready, true);
	for (unsigned i = 0; i < s->n_workers; i++) {
		int e = pthread_create(&s->workers[i].thread, NULL, worker_main, &s->workers[i]);
		if (e != 0) {
			r = -e;
			(void)js_webhook_server_stop(s);
			goto fail;
		}
		s->workers[i].started = true;
	}
	*ret = s;
	return 0;
fail:
	server_destroy(s);
	return r;
}

int js_webhook_server_stop(struct js_webhook_server *s)
{
	if (!s || s->stopped)
		return 0;
	for (unsigned i = 0; i < s->n_workers; i++)
		if (s->workers[i].started && pthread_equal(pthread_self(), s->workers[i].thread))
			return -EDEADLK;
	atomic_store(&s->ready, false);
	for (unsigned i = 0; i < s->n_workers; i++) {
		uint64_t one = 1;
		if (s->workers[i].started)
			(void)!write(s->workers[i].wake_fd, &one, sizeof(one));
	}
	for (unsigned i = 0; i < s->n_workers; i++) {
		if (s->workers[i].started)
			pthread_join(s->workers[i].thread, NULL);
		s->workers[i].started = false;
	}
	/* No loop runs any more: the connections and the socket can go. */
	for (unsigned i = 0; i < s->n_workers; i++) {
		worker_done(&s->workers[i]);
		memset(&s->workers[i], 0, sizeof(s->workers[i]));
		s->workers[i].wake_fd = -1;
	}
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->stopped = true;
	return 0;
}

int js_webhook_server_free(struct js_webhook_server *s)
{
	if (!s)
		return 0;
	if (!s->stopped)
		return -EBUSY;
	server_destroy(s);
	return 0;
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

unsigned js_webhook_server_connections(const struct js_webhook_server *s)
{
	return atomic_load(&((struct js_webhook_server *)(uintptr_t)s)->conns);
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
