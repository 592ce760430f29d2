/*
 * client.c - transport, credentials and REST verbs (client.h).
 *
 * One I/O thread owns the curl multi handle and drives it with
 * curl_multi_poll()/curl_multi_wakeup() (deps.md 1.6: with HTTP/2 there are
 * only a handful of sockets, and there is no fd-lifecycle hazard as with
 * uv_poll). Callers queue transfers under the client lock; the rate limiter
 * gives each a due time at submission, so the queue is FIFO and due times
 * never decrease, and the I/O thread starts transfers as they fall due.
 */
#include "kube/client.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "base/file.h"
#include "base/json.h"
#include "kube/execcred.h"
#include "kube/kube_int.h"
#include "kube/ratelimit.h"

const struct js_resource js_client_res_namespaces = {"", "v1", "namespaces", false};
const struct js_resource js_client_res_configmaps = {"", "v1", "configmaps", true};
const struct js_resource js_client_res_secrets = {"", "v1", "secrets", true};
const struct js_resource js_client_res_pods = {"", "v1", "pods", true};
const struct js_resource js_client_res_services = {"", "v1", "services", true};
const struct js_resource js_client_res_serviceaccounts = {"", "v1", "serviceaccounts", true};
const struct js_resource js_client_res_jobs = {"batch", "v1", "jobs", true};
const struct js_resource js_client_res_leases = {"coordination.k8s.io", "v1", "leases", true};
const struct js_resource js_client_res_events = {"events.k8s.io", "v1", "events", true};
const struct js_resource js_client_res_jobsets = {"jobset.x-k8s.io", "v1alpha2", "jobsets", true};
const struct js_resource js_client_res_pdbs = {"policy", "v1", "poddisruptionbudgets", true};
const struct js_resource js_client_res_pvcs = {"", "v1", "persistentvolumeclaims", true};
const struct js_resource js_client_res_workloads = {"scheduling.k8s.io", "v1alpha2", "workloads", true};
const struct js_resource js_client_res_podgroups = {"scheduling.k8s.io", "v1alpha2", "podgroups", true};

#define DISPATCH_RING 4096u
#define TOKEN_FILE_REREAD_NS (60ull * 1000000000ull)

struct js_client_xfer {
	struct js_client *c;
	struct js_client_xfer *next;  /* in the pending or active list */
	CURL *easy;
	struct curl_slist *headers;
	struct curl_slist *connect_to;
	char *url, *method, *body;
	char *accept;                /* the Accept header's value */
	size_t body_len;
	js_client_data_fn *on_data;
	void (*on_done)(void *user);
	void *user;
	int stall_s;
	bool no_timeout;
	long timeout_ms;             /* total, when no_timeout is false */
	atomic_bool *cancel;
	uint64_t due_ns, queued_ns;
	/* credentials snapshot */
	char *token;
	char *cert, *key;
	size_t cert_len, key_len;
	/* result */
	struct js_buf body_in;
	long retry_after_s;
	int result;
	bool done, data_aborted;
	char errbuf[CURL_ERROR_SIZE];
	pthread_cond_t cond;
};

struct js_client {
	struct js_kubeconfig kc;
	struct js_client_opts opts;
	char *base_url;   /* scheme://host:port as used in URLs */
	char *connect_to; /* CURLOPT_CONNECT_TO entry for tls-server-name, or NULL */
	char *user_agent;

	pthread_mutex_t lock;
	struct js_ratelimit rl;
	struct js_client_xfer *pending_head, *pending_tail; /* due order */
	struct js_client_xfer *active;
	bool stopping;
	pthread_t io;
	CURLM *multi;
	struct js_client_stats stats;
	uint64_t ring[DISPATCH_RING];
	uint64_t ring_n;

	/* credentials, under cred_lock (the exec plugin can be slow) */
	pthread_mutex_t cred_lock;
	char *tok;              /* current token from file or exec */
	uint64_t tok_read_ns;   /* when a token file was last read */
	struct js_execcred exec;
	bool have_exec;

	/* js_client_bind_cancel(): each thread's cancel flag (atomic_bool *) */
	pthread_key_t cancel_key;
	/* js_client_bind_deadline(): each thread's deadline (const uint64_t *) */
	pthread_key_t deadline_key;
};

/* ------------------------------------------------------------ helpers */

void js_client_resp_done(struct js_client_resp *r)
{
	if (!r)
		return;
	free(r->body);
	memset(r, 0, sizeof *r);
}

const char *js_client_namespace(const struct js_client *c)
{
	return c->kc.namespace ? c->kc.namespace : "default";
}

int js_client_path(const struct js_resource *res, const char *ns, const char *name, const char *subresource,
		   struct js_buf *out)
{
	int r;
	if (res->group && *res->group)
		r = js_buf_printf(out, "/apis/%s/%s", res->group, res->version);
	else
		r = js_buf_printf(out, "/api/%s", res->version);
	if (r == 0 && res->namespaced && ns && *ns)
		r = js_buf_printf(out, "/namespaces/%s", ns);
	if (r == 0)
		r = js_buf_printf(out, "/%s", res->resource);
	if (r == 0 && name)
		r = js_buf_printf(out, "/%s", name);
	if (r == 0 && name && subresource)
		r = js_buf_printf(out, "/%s", subresource);
	return r;
}

static char *blob_dup(const char *p, size_t n)
{
	if (!p)
		return NULL;
	char *q = js_xmalloc(n + 1);
	memcpy(q, p, n);
	q[n] = '\0';
	return q;
}

/* ------------------------------------------------------------ credentials */

/* Snapshot the credentials for one request. `refresh` forces a re-read of the
 * token file or a new run of the exec plugin (after a 401). */
static int creds_get(struct js_client *c, bool refresh, struct js_client_xfer *x, char *why, size_t why_len)
{
	int r = 0;
	pthread_mutex_lock(&c->cred_lock);
	if (c->kc.exec) {
		int64_t now_s = (int64_t)(js__kutil_wall_ns() / 1000000000u);
		/* Renew 10 s before expiry so a request never carries a token
		 * that dies in flight. */
		if (refresh || !c->have_exec || (c->exec.expires_s && c->exec.expires_s - 10 <= now_s)) {
			struct js_execcred nc = {0};
			r = js_execcred_run(&c->kc, 60000, &nc, why, why_len);
			if (r == 0) {
				js_execcred_done(&c->exec);
				c->exec = nc;
				c->have_exec = true;
			}
		}
		if (r == 0) {
			x->token = c->exec.token ? js_xstrdup(c->exec.token) : NULL;
			x->cert = blob_dup(c->exec.cert, c->exec.cert_len);
			x->cert_len = c->exec.cert_len;
			x->key = blob_dup(c->exec.key, c->exec.key_len);
			x->key_len = c->exec.key_len;
		}
	} else if (c->kc.token_file) {
		uint64_t now = js_clock_now_ns();
		if (refresh || !c->tok || now - c->tok_read_ns > TOKEN_FILE_REREAD_NS) {
			char *t = NULL;
			size_t n = 0;
			r = js_file_read(c->kc.token_file, JS__KUBE_MAX_FILE, &t, &n);
			if (r == 0) {
				while (n && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' '))
					t[--n] = '\0';
				free(c->tok);
				c->tok = t;
				c->tok_read_ns = now;
			} else if (c->tok) {
				r = 0; /* keep the last good token while the file is being swapped */
			} else if (why && why_len) {
				snprintf(why, why_len, "cannot read token file");
			}
		}
		if (r == 0)
			x->token = js_xstrdup(c->tok);
	} else if (c->kc.token) {
		x->token = js_xstrdup(c->kc.token);
	}
	pthread_mutex_unlock(&c->cred_lock);
	if (!x->cert && c->kc.cert) {
		x->cert = blob_dup(c->kc.cert, c->kc.cert_len);
		x->cert_len = c->kc.cert_len;
		x->key = blob_dup(c->kc.key, c->kc.key_len);
		x->key_len = c->kc.key_len;
	}
	return r;
}

/* ------------------------------------------------------------ curl glue */

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
	struct js_client_xfer *x = ud;
	size_t n = size * nmemb;
	long code = 0;
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
	if (x->on_data && code >= 200 && code < 300) {
		if (x->on_data(x->user, p, n) != 0) {
			x->data_aborted = true;
			return 0;
		}
		return n;
	}
	if (js_buf_add(&x->body_in, p, n) < 0)
		return 0;
	return n;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
	struct js_client_xfer *x = ud;
	size_t n = size * nmemb;
	static const char name[] = "retry-after:";
	if (n > sizeof name && strncasecmp(p, name, sizeof name - 1) == 0) {
		long v = 0;
		size_t i = sizeof name - 1;
		while (i < n && p[i] == ' ')
			i++;
		for (; i < n && p[i] >= '0' && p[i] <= '9' && v < 100000; i++)
			v = v * 10 + (p[i] - '0');
		x->retry_after_s = v;
	}
	return n;
}

static int setup_easy(struct js_client *c, struct js_client_xfer *x)
{
	CURL *e = curl_easy_init();
	if (!e)
		return -ENOMEM;
	x->easy = e;
	curl_easy_setopt(e, CURLOPT_URL, x->url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, x);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, c->opts.http1 ? (long)CURL_HTTP_VERSION_1_1 : (long)CURL_HTTP_VERSION_2TLS);
	curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 10L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, c->user_agent);
	if (!x->no_timeout)
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, x->timeout_ms);
	if (x->stall_s > 0) {
		curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)x->stall_s);
	}
	if (c->connect_to) {
		x->connect_to = curl_slist_append(NULL, c->connect_to);
		curl_easy_setopt(e, CURLOPT_CONNECT_TO, x->connect_to);
	}
	if (c->kc.insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (c->kc.ca) {
		struct curl_blob b = {.data = c->kc.ca, .len = c->kc.ca_len, .flags = CURL_BLOB_COPY};
		curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
	}
	if (x->cert) {
		struct curl_blob cb = {.data = x->cert, .len = x->cert_len, .flags = CURL_BLOB_COPY};
		struct curl_blob kb = {.data = x->key, .len = x->key_len, .flags = CURL_BLOB_COPY};
		curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cb);
		curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &kb);
		curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
	}
	if (c->kc.username && !x->token) {
		curl_easy_setopt(e, CURLOPT_USERNAME, c->kc.username);
		curl_easy_setopt(e, CURLOPT_PASSWORD, c->kc.password ? c->kc.password : "");
	}
	if (c->kc.proxy_url)
		curl_easy_setopt(e, CURLOPT_PROXY, c->kc.proxy_url);
	return 0;
}

static struct curl_slist *build_headers(const struct js_client_xfer *x, const char *content_type)
{
	struct curl_slist *h = NULL;
	struct js_buf a;
	js_buf_init(&a, 0);
	if (js_buf_printf(&a, "Accept: %s", x->accept) == 0)
		h = curl_slist_append(h, js_buf_str(&a));
	js_buf_done(&a);
	h = curl_slist_append(h, "Expect:");
	if (content_type) {
		struct js_buf b;
		js_buf_init(&b, 0);
		if (js_buf_printf(&b, "Content-Type: %s", content_type) == 0)
			h = curl_slist_append(h, js_buf_str(&b));
		js_buf_done(&b);
	}
	if (x->token) {
		struct js_buf b;
		js_buf_init(&b, 0);
		if (js_buf_printf(&b, "Authorization: Bearer %s", x->token) == 0)
			h = curl_slist_append(h, js_buf_str(&b));
		js_buf_done(&b);
	}
	return h;
}

static void xfer_free(struct js_client_xfer *x)
{
	if (!x)
		return;
	if (x->easy)
		curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->headers);
	curl_slist_free_all(x->connect_to);
	free(x->url);
	free(x->method);
	free(x->accept);
	free(x->body);
	free(x->token);
	free(x->cert);
	free(x->key);
	js_buf_done(&x->body_in);
	pthread_cond_destroy(&x->cond);
	free(x);
}

static int map_curl(CURLcode cc)
{
	switch (cc) {
	case CURLE_OK: return 0;
	case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY: return -EHOSTUNREACH;
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE: return -ECONNRESET;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE: return -EPROTO;
	case CURLE_WRITE_ERROR: return -E2BIG;
	case CURLE_OUT_OF_MEMORY: return -ENOMEM;
	default: return -EIO;
	}
}

/* Under c->lock: wake the waiter of a finished transfer. */
static void finish_locked(struct js_client_xfer *x, int result)
{
	x->result = result;
	x->done = true;
	pthread_cond_broadcast(&x->cond);
}

static void unlink_active(struct js_client *c, struct js_client_xfer *x)
{
	for (struct js_client_xfer **pp = &c->active; *pp; pp = &(*pp)->next) {
		if (*pp == x) {
			*pp = x->next;
			x->next = NULL;
			return;
		}
	}
}

static void complete(struct js_client *c, struct js_client_xfer *x, int result)
{
	curl_multi_remove_handle(c->multi, x->easy);
	if (x->on_done)
		x->on_done(x->user);
	pthread_mutex_lock(&c->lock);
	unlink_active(c, x);
	if (result == 0 || result == -E2BIG) {
		long ver = 0, nconn = 0;
		curl_easy_getinfo(x->easy, CURLINFO_HTTP_VERSION, &ver);
		curl_easy_getinfo(x->easy, CURLINFO_NUM_CONNECTS, &nconn);
		c->stats.connects += (uint64_t)nconn;
		if (ver == CURL_HTTP_VERSION_2_0)
			c->stats.http2++;
		else if (ver)
			c->stats.http1++;
	}
	finish_locked(x, result);
	pthread_mutex_unlock(&c->lock);
}

/* Under c->lock: unlink and return the first pending transfer whose cancel
 * flag is set, or NULL. */
static struct js_client_xfer *take_cancelled_pending(struct js_client *c)
{
	struct js_client_xfer *prev = NULL;
	for (struct js_client_xfer *x = c->pending_head; x; prev = x, x = x->next) {
		if (!x->cancel || !atomic_load(x->cancel))
			continue;
		if (prev)
			prev->next = x->next;
		else
			c->pending_head = x->next;
		if (c->pending_tail == x)
			c->pending_tail = prev;
		x->next = NULL;
		return x;
	}
	return NULL;
}

static void *io_main(void *arg)
{
	struct js_client *c = arg;
	for (;;) {
		uint64_t now = js_clock_now_ns();
		long wait_ms = 1000;
		pthread_mutex_lock(&c->lock);
		if (c->stopping) {
			pthread_mutex_unlock(&c->lock);
			break;
		}
		/* Start every transfer whose rate-limit slot has come. */
		while (c->pending_head && c->pending_head->due_ns <= now) {
			struct js_client_xfer *x = c->pending_head;
			c->pending_head = x->next;
			if (!c->pending_head)
				c->pending_tail = NULL;
			x->next = c->active;
			c->active = x;
			c->stats.dispatched++;
			c->ring[c->ring_n++ % DISPATCH_RING] = now;
			if (curl_multi_add_handle(c->multi, x->easy) != CURLM_OK) {
				unlink_active(c, x);
				finish_locked(x, -EIO);
			}
		}
		if (c->pending_head) {
			uint64_t d = (c->pending_head->due_ns - now) / 1000000u + 1;
			if (d < (uint64_t)wait_ms)
				wait_ms = (long)d;
		}
		/* A cancelled transfer still waiting for its rate-limit slot ends
		 * here, without ever reaching curl. */
		struct js_client_xfer *unsent = take_cancelled_pending(c);
		/* Collect cancelled transfers; finish them outside the lock. */
		struct js_client_xfer *cancelled = NULL;
		for (struct js_client_xfer *x = c->active; x; x = x->next)
			if (x->cancel && atomic_load(x->cancel)) {
				cancelled = x;
				break;
			}
		pthread_mutex_unlock(&c->lock);
		if (unsent) {
			if (unsent->on_done)
				unsent->on_done(unsent->user);
			pthread_mutex_lock(&c->lock);
			finish_locked(unsent, -ECANCELED);
			pthread_mutex_unlock(&c->lock);
			continue;
		}
		if (cancelled) {
			complete(c, cancelled, -ECANCELED);
			continue;
		}

		int running = 0;
		curl_multi_perform(c->multi, &running);
		CURLMsg *m;
		int left;
		while ((m = curl_multi_info_read(c->multi, &left))) {
			if (m->msg != CURLMSG_DONE)
				continue;
			struct js_client_xfer *x = NULL;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
			int r = map_curl(m->data.result);
			if (r == -E2BIG && x->data_aborted)
				r = -ECANCELED;
			complete(c, x, r);
		}
		curl_multi_poll(c->multi, NULL, 0, (int)wait_ms, NULL);
	}
	/* Stopping: fail everything still queued or running. */
	pthread_mutex_lock(&c->lock);
	struct js_client_xfer *lists[2] = {c->pending_head, c->active};
	c->pending_head = c->pending_tail = c->active = NULL;
	pthread_mutex_unlock(&c->lock);
	for (int i = 0; i < 2; i++) {
		for (struct js_client_xfer *x = lists[i], *nx; x; x = nx) {
			nx = x->next;
			curl_multi_remove_handle(c->multi, x->easy);
			if (i == 1 && x->on_done)
				x->on_done(x->user);
			pthread_mutex_lock(&c->lock);
			finish_locked(x, -ECANCELED);
			pthread_mutex_unlock(&c->lock);
		}
	}
	return NULL;
}

/* ------------------------------------------------------------ lifecycle */

int js_client_new(const struct js_kubeconfig *kc, const struct js_client_opts *opts, struct js_client **ret)
{
	if (!kc->server || strncmp(kc->server, "https://", 8) != 0)
		return JS_EINVALID;
	struct js_client *c = js_xcalloc(1, sizeof *c);
	if (opts)
		c->opts = *opts;
	if (c->opts.qps == 0)
		c->opts.qps = 5;
	if (c->opts.burst == 0)
		c->opts.burst = 10;
	if (c->opts.timeout_ms <= 0)
		c->opts.timeout_ms = 60000;
	c->user_agent = js_xstrdup(c->opts.user_agent ? c->opts.user_agent : "jobset/" JS_VERSION);
	c->opts.user_agent = NULL;

	/* Deep copy of the configuration. */
	c->kc.server = js_xstrdup(kc->server);
	c->kc.context = kc->context ? js_xstrdup(kc->context) : NULL;
	c->kc.tls_server_name = kc->tls_server_name ? js_xstrdup(kc->tls_server_name) : NULL;
	c->kc.proxy_url = kc->proxy_url ? js_xstrdup(kc->proxy_url) : NULL;
	c->kc.insecure = kc->insecure;
	c->kc.ca = blob_dup(kc->ca, kc->ca_len);
	c->kc.ca_len = kc->ca_len;
	c->kc.cert = blob_dup(kc->cert, kc->cert_len);
	c->kc.cert_len = kc->cert_len;
	c->kc.key = blob_dup(kc->key, kc->key_len);
	c->kc.key_len = kc->key_len;
	c->kc.token = kc->token ? js_xstrdup(kc->token) : NULL;
	c->kc.token_file = kc->token_file ? js_xstrdup(kc->token_file) : NULL;
	c->kc.username = kc->username ? js_xstrdup(kc->username) : NULL;
	c->kc.password = kc->password ? js_xstrdup(kc->password) : NULL;
	c->kc.namespace = kc->namespace ? js_xstrdup(kc->namespace) : NULL;
	if (kc->exec) {
		const struct js_kubeconfig_exec *s = kc->exec;
		struct js_kubeconfig_exec *d = js_xcalloc(1, sizeof *d);
		d->command = js_xstrdup(s->command);
		d->args = js_xcalloc(s->nargs + 1, sizeof *d->args);
		for (size_t i = 0; i < s->nargs; i++)
			d->args[i] = js_xstrdup(s->args[i]);
		d->nargs = s->nargs;
		d->env = js_xcalloc(s->nenv + 1, sizeof *d->env);
		for (size_t i = 0; i < s->nenv; i++)
			d->env[i] = js_xstrdup(s->env[i]);
		d->nenv = s->nenv;
		d->api_version = js_xstrdup(s->api_version);
		d->provide_cluster_info = s->provide_cluster_info;
		d->interactive = s->interactive;
		c->kc.exec = d;
	}

	/* tls-server-name: curl cannot override SNI alone, so address the
	 * server by that name and route the name to the real host. */
	CURLU *u = curl_url();
	char *host = NULL, *port = NULL;
	int r = 0;
	if (curl_url_set(u, CURLUPART_URL, kc->server, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
		r = JS_EINVALID;
	} else {
		struct js_buf b;
		js_buf_init(&b, 0);
		if (kc->tls_server_name) {
			if (js_buf_printf(&b, "https://%s:%s", kc->tls_server_name, port) < 0)
				r = JS_EINVALID;
			c->base_url = js_buf_take(&b);
			if (js_buf_printf(&b, "%s:%s:%s:%s", kc->tls_server_name, port, host, port) < 0)
				r = JS_EINVALID;
			c->connect_to = js_buf_take(&b);
		} else {
			c->base_url = js_xstrdup(c->kc.server);
		}
	}
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	/* Each step after the URL is undone by the ones before it in `fail`. */
	int stage = 0;
	if (r < 0)
		goto fail;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->cred_lock, NULL);
	stage = 1;
	r = -pthread_key_create(&c->cancel_key, NULL);
	if (r < 0)
		goto fail;
	stage = 2;
	r = -pthread_key_create(&c->deadline_key, NULL);
	if (r < 0)
		goto fail;
	stage = 3;
	js_ratelimit_init(&c->rl, c->opts.qps, c->opts.burst, js_clock_now_ns());
	c->multi = curl_multi_init();
	curl_multi_setopt(c->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	/* libcurl's default of 100 streams per connection is less than a
	 * controller's window of writes plus its watches; past it libcurl
	 * would open a second TLS connection. The server's own limit (the
	 * kube-apiserver advertises 250 or more) still applies. */
	curl_multi_setopt(c->multi, CURLMOPT_MAX_CONCURRENT_STREAMS, 200L);
	r = -pthread_create(&c->io, NULL, io_main, c);
	if (r < 0)
		goto fail;
	*ret = c;
	return 0;
fail:
	if (stage >= 3)
		pthread_key_delete(c->deadline_key);
	if (stage >= 2) {
		curl_multi_cleanup(c->multi);
		pthread_key_delete(c->cancel_key);
	}
	if (stage >= 1) {
		pthread_mutex_destroy(&c->lock);
		pthread_mutex_destroy(&c->cred_lock);
	}
	js_kubeconfig_done(&c->kc);
	free(c->base_url);
	free(c->connect_to);
	free(c->user_agent);
	free(c);
	return r;
}

struct js_client *js_client_free(struct js_client *c)
{
	if (!c)
		return NULL;
	pthread_mutex_lock(&c->lock);
	c->stopping = true;
	pthread_mutex_unlock(&c->lock);
	curl_multi_wakeup(c->multi);
	pthread_join(c->io, NULL);
	curl_multi_cleanup(c->multi);
	pthread_key_delete(c->cancel_key);
	pthread_key_delete(c->deadline_key);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->cred_lock);
	js_kubeconfig_done(&c->kc);
	js_execcred_done(&c->exec);
	free(c->tok);
	free(c->base_url);
	free(c->connect_to);
	free(c->user_agent);
	free(c);
	return NULL;
}

void js_client_wakeup(struct js_client *c)
{
	curl_multi_wakeup(c->multi);
}

void js_client_bind_cancel(struct js_client *c, atomic_bool *flag)
{
	(void)pthread_setspecific(c->cancel_key, flag);
}

void js_client_bind_deadline(struct js_client *c, const uint64_t *deadline_ns)
{
	(void)pthread_setspecific(c->deadline_key, deadline_ns);
}

/* The total time a request of the calling thread may take, in ms: the
 * client's timeout, cut to the thread's deadline; 0 when that has passed. */
static long timeout_for(struct js_client *c)
{
	long ms = c->opts.timeout_ms;
	const uint64_t *dl = pthread_getspecific(c->deadline_key);
	if (dl && *dl) {
		uint64_t now = js_clock_now_ns();
		if (now >= *dl)
			return 0;
		uint64_t left = (*dl - now) / 1000000u + 1;
		if (left < (uint64_t)ms)
			ms = (long)left;
	}
	return ms;
}

/* The cancel flag of a request: its own, else the submitting thread's. */
static atomic_bool *cancel_flag(struct js_client *c, const struct js_client_req *req)
{
	return req->cancel ? req->cancel : pthread_getspecific(c->cancel_key);
}

void js_client_stats(struct js_client *c, struct js_client_stats *ret)
{
	pthread_mutex_lock(&c->lock);
	*ret = c->stats;
	pthread_mutex_unlock(&c->lock);
}

size_t js_client_dispatch_times(struct js_client *c, uint64_t *ret, size_t max)
{
	pthread_mutex_lock(&c->lock);
	uint64_t n = c->ring_n < DISPATCH_RING ? c->ring_n : DISPATCH_RING;
	if (n > max)
		n = max;
	for (uint64_t i = 0; i < n; i++)
		ret[i] = c->ring[(c->ring_n - n + i) % DISPATCH_RING];
	pthread_mutex_unlock(&c->lock);
	return (size_t)n;
}

/* ------------------------------------------------------------ transport */

static int submit(struct js_client *c, const struct js_client_req *req, bool refresh, bool fresh,
		  struct js_client_xfer **ret, char *why, size_t why_len)
{
	if (pthread_equal(pthread_self(), c->io))
		return -EDEADLK;
	atomic_bool *cancel = cancel_flag(c, req);
	if (cancel && atomic_load(cancel))
		return -ECANCELED;
	struct js_client_xfer *x = js_xcalloc(1, sizeof *x);
	x->c = c;
	pthread_cond_init(&x->cond, NULL);
	js_buf_init(&x->body_in, JS__KUBE_MAX_BODY);
	x->method = js_xstrdup(req->method ? req->method : "GET");
	x->accept = js_xstrdup(req->accept ? req->accept : "application/json");
	struct js_buf u;
	js_buf_init(&u, 0);
	if (js_buf_printf(&u, "%s%s", c->base_url, req->path) < 0) {
		js_buf_done(&u);
		xfer_free(x);
		return JS_ETOOLARGE;
	}
	x->url = js_buf_take(&u);
	x->on_data = req->on_data;
	x->on_done = req->on_done;
	x->user = req->user;
	x->stall_s = req->stall_s;
	x->no_timeout = req->no_timeout;
	x->timeout_ms = timeout_for(c);
	if (!x->no_timeout && x->timeout_ms == 0) {
		xfer_free(x);
		return -ETIMEDOUT;
	}
	x->cancel = cancel;
	int r = creds_get(c, refresh, x, why, why_len);
	if (r == 0)
		r = setup_easy(c, x);
	if (r < 0) {
		xfer_free(x);
		return r;
	}
	/* After a reset, do not queue behind a connection the server is
	 * closing (it sends GOAWAY, e.g. after answering a 401: the
	 * apiserver's HTTP/2 rapid-reset mitigation for unauthenticated
	 * clients). */
	if (fresh)
		curl_easy_setopt(x->easy, CURLOPT_FRESH_CONNECT, 1L);
	struct curl_slist *h = build_headers(x, req->body ? (req->content_type ? req->content_type : "application/json") : NULL);
	curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, h);
	x->headers = h;
	if (strcmp(x->method, "GET") == 0) {
		curl_easy_setopt(x->easy, CURLOPT_HTTPGET, 1L);
	} else {
		curl_easy_setopt(x->easy, CURLOPT_CUSTOMREQUEST, x->method);
		x->body = blob_dup(req->body ? req->body : "", req->body ? req->body_len : 0);
		x->body_len = req->body ? req->body_len : 0;
		curl_easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->body_len);
		curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, x->body);
	}

	pthread_mutex_lock(&c->lock);
	if (c->stopping) {
		pthread_mutex_unlock(&c->lock);
		xfer_free(x);
		return -ESHUTDOWN;
	}
	uint64_t now = js_clock_now_ns();
	uint64_t wait = js_ratelimit_reserve(&c->rl, now);
	x->queued_ns = now;
	x->due_ns = now + wait;
	c->stats.submitted++;
	if (wait) {
		c->stats.throttled++;
		c->stats.throttle_ns += wait;
	}
	if (c->pending_tail)
		c->pending_tail->next = x;
	else
		c->pending_head = x;
	c->pending_tail = x;
	pthread_mutex_unlock(&c->lock);
	curl_multi_wakeup(c->multi);
	*ret = x;
	return 0;
}

int js_client_submit(struct js_client *c, const struct js_client_req *req, struct js_client_xfer **ret)
{
	return submit(c, req, false, false, ret, NULL, 0);
}

int js_client_xfer_wait(struct js_client_xfer *x, struct js_client_resp *ret, char *why, size_t why_len)
{
	struct js_client *c = x->c;
	pthread_mutex_lock(&c->lock);
	while (!x->done)
		pthread_cond_wait(&x->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
	int r = x->result;
	/* A server may answer early (401, 403, 413) without reading the
	 * request body and then reset the HTTP/2 stream; curl reports the
	 * reset although the answer arrived whole. Keep such an answer when its
	 * body is complete: as long as Content-Length says, or a JSON value. */
	if (r == -ECONNRESET && !x->on_data) {
		long code = 0;
		curl_off_t cl = -1;
		curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
		curl_easy_getinfo(x->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
		if (code >= 400) {
			json_t *j = NULL;
			if (cl < 0)
				j = json_loadb(x->body_in.p ? x->body_in.p : "", x->body_in.len, 0, NULL);
			if ((cl >= 0 && (size_t)cl == x->body_in.len) || j)
				r = 0;
			json_decref(j);
		}
	}
	if (r == 0 || (r == -E2BIG && !x->on_data)) {
		if (r == -E2BIG) {
			r = JS_ETOOLARGE;
		} else {
			struct js_client_resp resp = {0};
			curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &resp.code);
			long ver = 0;
			curl_easy_getinfo(x->easy, CURLINFO_HTTP_VERSION, &ver);
			resp.http_version = ver == CURL_HTTP_VERSION_2_0 ? 2 : 11;
			resp.retry_after_s = x->retry_after_s;
			resp.len = x->body_in.len;
			resp.body = js_buf_take(&x->body_in);
			*ret = resp;
		}
	}
	if (r < 0 && why && why_len)
		snprintf(why, why_len, "%s", x->errbuf[0] ? x->errbuf : js_strerror(r));
	xfer_free(x);
	return r;
}

uint64_t js_client_retry_after_ms(const struct js_client_resp *r, int tries)
{
	if (!(r->code == 429 || r->code >= 500) || r->retry_after_s <= 0 || tries >= 10)
		return 0;
	return (uint64_t)(r->retry_after_s > 10 ? 10 : r->retry_after_s) * 1000u;
}

/* Sleep in slices so that a cancelled caller leaves within 100 ms instead of
 * after a Retry-After of up to 10 s. */
static int pause_ms(atomic_bool *cancel, uint64_t ms)
{
	while (ms > 0) {
		if (cancel && atomic_load(cancel))
			return -ECANCELED;
		uint64_t d = ms < 100 ? ms : 100;
		struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)d * 1000000L};
		nanosleep(&ts, NULL);
		ms -= d;
	}
	return cancel && atomic_load(cancel) ? -ECANCELED : 0;
}

int js_client_pause(struct js_client *c, uint64_t ms)
{
	return pause_ms(pthread_getspecific(c->cancel_key), ms);
}

static bool retryable_transport(int r)
{
	return r == -ECONNREFUSED || r == -ECONNRESET;
}

int js_client_do(struct js_client *c, const struct js_client_req *req, struct js_client_resp *ret, char *why,
		 size_t why_len)
{
	int transport_tries = 0, retry_after_tries = 0;
	bool refreshed = false, refresh = false, fresh = false;
	for (;;) {
		struct js_client_xfer *x = NULL;
		struct js_client_resp resp = {0};
		int r = submit(c, req, refresh, fresh, &x, why, why_len);
		if (r < 0)
			return r;
		refresh = false;
		r = js_client_xfer_wait(x, &resp, why, why_len);
		bool retry = false;
		uint64_t delay_ms = 0;
		if (r < 0 && retryable_transport(r) && !req->on_data && !(req->once && r != -ECONNREFUSED) &&
		    transport_tries < 3) {
			delay_ms = 100u << transport_tries;
			transport_tries++;
			retry = fresh = true;
		} else if (r == 0 && !req->on_data && req->method && strcmp(req->method, "GET") == 0 &&
			   js_client_retry_after_ms(&resp, retry_after_tries) > 0) {
			delay_ms = js_client_retry_after_ms(&resp, retry_after_tries);
			retry_after_tries++;
			retry = true;
		} else if (r == 0 && resp.code == 401 && !refreshed && (c->kc.exec || c->kc.token_file)) {
			refreshed = refresh = true;
			retry = true;
		}
		if (!retry) {
			if (r == 0)
				*ret = resp;
			return r;
		}
		js_client_resp_done(&resp);
		pthread_mutex_lock(&c->lock);
		c->stats.retries++;
		pthread_mutex_unlock(&c->lock);
		/* A cancelled caller leaves within 100 ms, and its next submit
		 * fails with -ECANCELED. */
		if (delay_ms)
			(void)!pause_ms(cancel_flag(c, req), delay_ms);
	}
}

/* ------------------------------------------------------------ verbs */

static int call_req(struct js_client *c, const struct js_client_req *rq, json_t **ret, struct js_apierr *err)
{
	struct js_client_req req = *rq;
	struct js_client_resp resp = {0};
	char why[CURL_ERROR_SIZE + 64] = "";
	int r = js_client_do(c, &req, &resp, why, sizeof why);
	if (r < 0) {
		js_apierr_set_transport(err, r, why);
		return r;
	}
	if (resp.code < 200 || resp.code >= 300) {
		r = js_apierr_decode(resp.code, resp.body, resp.len, resp.retry_after_s, err);
		js_client_resp_done(&resp);
		return r;
	}
	if (ret) {
		json_error_t je;
		json_t *j = json_loadb(resp.body, resp.len, 0, &je);
		if (!j) {
			js_apierr_set_transport(err, JS_EINVALID, "answer is not JSON");
			r = JS_EINVALID;
		} else {
			*ret = j;
		}
	}
	js_client_resp_done(&resp);
	return r;
}

static int call_buf(struct js_client *c, const char *method, const char *path, const char *ctype, const char *body,
		    size_t blen, bool once, json_t **ret, struct js_apierr *err)
{
	struct js_client_req req = {.method = method, .path = path, .content_type = ctype, .body = body,
				    .body_len = blen, .once = once};
	return call_req(c, &req, ret, err);
}

static int call_json(struct js_client *c, const char *method, const char *path, const char *content_type,
		     const json_t *body, bool once, json_t **ret, struct js_apierr *err)
{
	char *b = body ? json_dumps(body, JSON_COMPACT) : NULL;
	int r = call_buf(c, method, path, content_type, b, b ? strlen(b) : 0, once, ret, err);
	free(b);
	return r;
}

int js_client_call(struct js_client *c, const char *method, const char *path, const char *content_type,
		   const json_t *body, json_t **ret, struct js_apierr *err)
{
	return call_json(c, method, path, content_type, body, false, ret, err);
}

static const char *obj_ns(const char *ns, const json_t *obj)
{
	if (ns && *ns)
		return ns;
	return js_json_str(json_object_get(obj, "metadata"), "namespace");
}

static int add_write_query(struct js_buf *p, const struct js_write_opts *wo, bool *first)
{
	int r = 0;
	if (!wo)
		return 0;
	if (wo->field_manager) {
		r = js_buf_puts(p, *first ? "?fieldManager=" : "&fieldManager=");
		if (r == 0)
			r = js__kutil_escape(p, wo->field_manager);
		*first = false;
	}
	if (r == 0 && wo->force) {
		r = js_buf_puts(p, *first ? "?force=true" : "&force=true");
		*first = false;
	}
	if (r == 0 && wo->dry_run) {
		r = js_buf_puts(p, *first ? "?dryRun=All" : "&dryRun=All");
		*first = false;
	}
	return r;
}

int js_client_get(struct js_client *c, const struct js_resource *res, const char *ns, const char *name,
		  const char *subresource, json_t **ret, struct js_apierr *err)
{
	struct js_buf p;
	js_buf_init(&p, 0);
	int r = js_client_path(res, ns, name, subresource, &p);
	if (r == 0)
		r = call_buf(c, "GET", js_buf_str(&p), NULL, NULL, 0, false, ret, err);
	js_buf_done(&p);
	return r;
}

int js_client_list(struct js_client *c, const struct js_resource *res, const char *ns,
		   const struct js_list_opts *lo, json_t **ret, struct js_apierr *err)
{
	struct js_buf p;
	js_buf_init(&p, 0);
	int r = js_client_path(res, ns, NULL, NULL, &p);
	char sep = '?';
	const struct {
		const char *k, *v;
	} q[] = {
		{"labelSelector", lo ? lo->label_selector : NULL},
		{"fieldSelector", lo ? lo->field_selector : NULL},
		{"resourceVersion", lo ? lo->resource_version : NULL},
		{"resourceVersionMatch", lo ? lo->resource_version_match : NULL},
		{"continue", lo ? lo->continue_token : NULL},
	};
	for (size_t i = 0; r == 0 && i < JS_ARRAY_SIZE(q); i++) {
		if (!q[i].v || !*q[i].v)
			continue;
		r = js_buf_printf(&p, "%c%s=", sep, q[i].k);
		if (r == 0)
			r = js__kutil_escape(&p, q[i].v);
		sep = '&';
	}
	if (r == 0 && lo && lo->limit > 0)
		r = js_buf_printf(&p, "%climit=%ld", sep, lo->limit);
	if (r == 0) {
		struct js_client_req req = {.method = "GET", .path = js_buf_str(&p), .accept = lo ? lo->accept : NULL};
		r = call_req(c, &req, ret, err);
	}
	js_buf_done(&p);
	return r;
}

int js_client_create(struct js_client *c, const struct js_resource *res, const char *ns, const json_t *obj,
		     const struct js_write_opts *wo, json_t **ret, struct js_apierr *err)
{
	struct js_buf p;
	js_buf_init(&p, 0);
	bool first = true;
	int r = js_client_path(res, obj_ns(ns, obj), wo && wo->subresource ? js_json_str(json_object_get(obj, "metadata"), "name") : NULL,
			       wo ? wo->subresource : NULL, &p);
	if (r == 0)
		r = add_write_query(&p, wo, &first);
	if (r == 0)
		r = call_json(c, "POST", js_buf_str(&p), "application/json", obj, wo && wo->once, ret, err);
	js_buf_done(&p);
	return r;
}

int js_client_update(struct js_client *c, const struct js_resource *res, const char *ns, const json_t *obj,
		     const struct js_write_opts *wo, json_t **ret, struct js_apierr *err)
{
	const char *name = js_json_str(json_object_get(obj, "metadata"), "name");
	if (!name) {
		js_apierr_set_transport(err, JS_EINVALID, "object has no metadata.name");
		return JS_EINVALID;
	}
	struct js_buf p;
	js_buf_init(&p, 0);
	bool first = true;
	int r = js_client_path(res, obj_ns(ns, obj), name, wo ? wo->subresource : NULL, &p);
	if (r == 0)
		r = add_write_query(&p, wo, &first);
	if (r == 0)
		r = call_json(c, "PUT", js_buf_str(&p), "application/json", obj, wo && wo->once, ret, err);
	js_buf_done(&p);
	return r;
}

static const char *const patch_types[JS_PATCH__COUNT] = {
	[JS_PATCH_MERGE] = "application/merge-patch+json",
	[JS_PATCH_JSON] = "application/json-patch+json",
	[JS_PATCH_STRATEGIC] = "application/strategic-merge-patch+json",
	[JS_PATCH_APPLY] = "application/apply-patch+yaml",
};

int js_client_patch(struct js_client *c, const struct js_resource *res, const char *ns, const char *name,
		    enum js_patch_type type, const json_t *patch, const struct js_write_opts *wo, json_t **ret,
		    struct js_apierr *err)
{
	if (type < 0 || type >= JS_PATCH__COUNT || (type == JS_PATCH_APPLY && (!wo || !wo->field_manager))) {
		js_apierr_set_transport(err, JS_EINVALID, "bad patch type, or apply without a field manager");
		return JS_EINVALID;
	}
	struct js_buf p;
	js_buf_init(&p, 0);
	bool first = true;
	int r = js_client_path(res, ns, name, wo ? wo->subresource : NULL, &p);
	if (r == 0)
		r = add_write_query(&p, wo, &first);
	if (r == 0)
		r = call_json(c, "PATCH", js_buf_str(&p), patch_types[type], patch, wo && wo->once, ret, err);
	js_buf_done(&p);
	return r;
}

int js_client_delete(struct js_client *c, const struct js_resource *res, const char *ns, const char *name,
		     const struct js_delete_opts *dopts, json_t **ret, struct js_apierr *err)
{
	struct js_buf p;
	js_buf_init(&p, 0);
	int r = js_client_path(res, ns, name, NULL, &p);
	json_t *body = json_pack("{s:s,s:s}", "apiVersion", "v1", "kind", "DeleteOptions");
	if (dopts) {
		if (dopts->propagation)
			json_object_set_new(body, "propagationPolicy", json_string(dopts->propagation));
		if (dopts->precondition_uid || dopts->precondition_rv) {
			json_t *pre = json_object();
			if (dopts->precondition_uid)
				json_object_set_new(pre, "uid", json_string(dopts->precondition_uid));
			if (dopts->precondition_rv)
				json_object_set_new(pre, "resourceVersion", json_string(dopts->precondition_rv));
			json_object_set_new(body, "preconditions", pre);
		}
		if (dopts->has_grace)
			json_object_set_new(body, "gracePeriodSeconds", json_integer(dopts->grace_period_s));
	}
	if (r == 0)
		r = js_client_call(c, "DELETE", js_buf_str(&p), "application/json", body, ret, err);
	json_decref(body);
	js_buf_done(&p);
	return r;
}
