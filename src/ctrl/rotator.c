/*
 * rotator.c - the certificate rotator thread: Secret, cert dir, CA bundle.
 * See rotator.h.
 */
#include "ctrl/rotator.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/buf.h"
#include "base/file.h"
#include "base/json.h"
#include "base/limits.h"
#include "ctrl/certs.h"

/* Backoff after a failed check: 500 ms doubling up to the interval. */
#define ROTATOR_BACKOFF_MIN_MS 500

static const struct js_resource res_mutating = {"admissionregistration.k8s.io", "v1",
						"mutatingwebhookconfigurations", false};
static const struct js_resource res_validating = {"admissionregistration.k8s.io", "v1",
						  "validatingwebhookconfigurations", false};

struct js_rotator {
	struct js_rotator_opts o;
	char *ns, *secret, *mutating, *validating, *dir;
	char **dns, **ips; /* the names the serving certificate must cover */
	size_t n_dns, n_ips;

	pthread_t thread;
	bool running, joined;
	atomic_bool cancel;      /* ends the round's request in flight on stop */
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool stop;               /* guarded by mu */
	atomic_bool ready;
	atomic_uint_fast64_t rounds;
	bool warned_ro, warned_missing[2]; /* log these once, not every round */
};

static void logf_(struct js_rotator *r, int level, const char *fmt, ...) JS_PRINTF(3, 4);
static void logf_(struct js_rotator *r, int level, const char *fmt, ...)
{
	if (atomic_load(&r->cancel))
		return; /* stopping: failures of cancelled requests are not news */
	va_list ap;
	va_start(ap, fmt);
	js_log_vprintf(r->o.log, r->o.log_user, level, fmt, ap);
	va_end(ap);
}

static const char *err_msg(const struct js_apierr *e, int rc)
{
	return e->message ? e->message : js_strerror(rc);
}

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

static void names_of(const struct js_rotator *r, struct js_certs_names *ret)
{
	*ret = (struct js_certs_names){(const char *const *)r->dns, r->n_dns, (const char *const *)r->ips, r->n_ips};
}

/* ---- 1. the Secret ---- */

/* Make sure the Secret holds good certificates; on 0, *ret has them. */
static int sync_secret(struct js_rotator *r, struct js_certs *ret)
{
	struct js_apierr e = {0};
	json_t *sec = NULL;
	struct js_certs have = {0};
	struct js_certs_names names;
	names_of(r, &names);
	int rc = js_client_get(r->o.client, &js_client_res_secrets, r->ns, r->secret, NULL, &sec, &e);
	if (rc < 0 && rc != JS_ENOTFOUND) {
		logf_(r, 0, "certificates: GET secret '%s/%s': %s", r->ns, r->secret, err_msg(&e, rc));
		goto out;
	}
	const char *why = "secret not found";
	if (rc == 0 && js_certs_from_secret(sec, &have) == 0 &&
	    js_certs_check(&have, &names, now_s(), JS_CERTS_LOOKAHEAD_S, &why) == 0) {
		*ret = have;
		memset(&have, 0, sizeof(have));
		goto out;
	}
	struct js_certs fresh = {0};
	rc = js_certs_generate(&names, now_s(), &fresh);
	if (rc < 0) {
		logf_(r, 0, "certificates: cannot generate: %s", js_strerror(rc));
		goto out;
	}
	json_t *obj = sec ? json_deep_copy(sec) : json_pack("{s:s, s:s, s:{s:s, s:s}, s:s}", "apiVersion", "v1",
							     "kind", "Secret", "metadata", "name", r->secret,
							     "namespace", r->ns, "type", "Opaque");
	json_object_set_new(obj, "data", js_certs_secret_data(&fresh));
	js_apierr_done(&e);
	if (sec)
		rc = js_client_update(r->o.client, &js_client_res_secrets, r->ns, obj, NULL, NULL, &e);
	else
		rc = js_client_create(r->o.client, &js_client_res_secrets, r->ns, obj, NULL, NULL, &e);
	json_decref(obj);
	if (rc == 0) {
		logf_(r, 1, "certificates: new CA and serving certificate for '%s' written to secret '%s/%s' (%s)",
		      r->dns[0], r->ns, r->secret, why);
		*ret = fresh;
	} else {
		/* A conflict or AlreadyExists: another replica wrote first; the
		 * next round reads its certificates. */
		logf_(r, rc == JS_ECONFLICT || rc == JS_EEXISTS ? 1 : 0, "certificates: %s secret '%s/%s': %s",
		      sec ? "UPDATE" : "CREATE", r->ns, r->secret, err_msg(&e, rc));
		js_certs_done(&fresh);
	}
out:
	js_certs_done(&have);
	json_decref(sec);
	js_apierr_done(&e);
	return rc;
}

/* ---- 2. the cert dir ---- */

/* True when `path` holds exactly `want`. */
static bool file_is(const char *path, const char *want)
{
	FILE *f = fopen(path, "rbe");
	if (!f)
		return false;
	size_t n = strlen(want);
	bool same = n <= JS_LIMIT_WEBHOOK_PEM;
	char *buf = same ? js_xmalloc(n + 1) : NULL;
	if (same)
		same = fread(buf, 1, n + 1, f) == n && memcmp(buf, want, n) == 0;
	free(buf);
	fclose(f);
	return same;
}

/* Write `data` to dir/name atomically, 0600 whatever the umask, on disk
 * before it replaces the old file. -errno. */
static int write_file(const char *dir, const char *name, const char *data)
{
	char path[4096];
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -ENAMETOOLONG;
	return js_file_write_atomic_mode(path, data, strlen(data), 0600, true);
}

/* Returns 1 when the dir holds the pair, 0 when waiting for a read-only
 * mount to catch up, < 0 on an error. */
static int sync_dir(struct js_rotator *r, const struct js_certs *c)
{
	char crt[4096], key[4096];
	snprintf(crt, sizeof(crt), "%s/tls.crt", r->dir);
	snprintf(key, sizeof(key), "%s/tls.key", r->dir);
	if (file_is(crt, c->tls_crt) && file_is(key, c->tls_key))
		return 1;
	/* Ours only (0700, exactly); a dir that exists (a mounted Secret) is
	 * left as it is. */
	int rc = js_file_mkdir_p(r->dir, 0700, 0700);
	if (rc < 0 && rc != -EROFS && rc != -EACCES) {
		logf_(r, 0, "certificates: cannot write to '%s': %s", r->dir, js_strerror(rc));
		return rc;
	}
	/* The key first: until tls.crt is replaced too the pair does not
	 * match, and the server keeps the pair it has (webhook.h). Every file
	 * 0600: only this process (and the kubelet's mount, in cluster) reads
	 * them. */
	rc = write_file(r->dir, "tls.key", c->tls_key);
	if (rc == 0)
		rc = write_file(r->dir, "tls.crt", c->tls_crt);
	if (rc == 0)
		rc = write_file(r->dir, "ca.crt", c->ca_crt);
	if (rc == -EROFS || rc == -EACCES || rc == -EPERM) {
		if (!r->warned_ro)
			logf_(r, 1, "certificates: '%s' is not writable (%s): waiting for the mounted secret to "
				    "catch up", r->dir, js_strerror(rc));
		r->warned_ro = true;
		return 0;
	}
	if (rc < 0) {
		logf_(r, 0, "certificates: cannot write to '%s': %s", r->dir, js_strerror(rc));
		return rc;
	}
	logf_(r, 1, "certificates: serving pair written to '%s'", r->dir);
	return 1;
}

/* ---- 3. the CA bundle ---- */

static int inject(struct js_rotator *r, const struct js_resource *res, const char *name, int which,
		  const char *ca_pem)
{
	if (!name || !*name)
		return 0;
	struct js_apierr e = {0};
	json_t *cfg = NULL, *updated = NULL;
	int rc = js_client_get(r->o.client, res, NULL, name, NULL, &cfg, &e);
	if (rc == JS_ENOTFOUND) {
		if (!r->warned_missing[which])
			logf_(r, 1, "certificates: %s '%s' not found yet: the CA bundle goes in once it exists",
			      res->resource, name);
		r->warned_missing[which] = true;
	} else if (rc < 0) {
		logf_(r, 0, "certificates: GET %s '%s': %s", res->resource, name, err_msg(&e, rc));
	} else {
		r->warned_missing[which] = false;
		rc = js_certs_inject_ca(cfg, ca_pem, &updated);
		if (rc == 1) {
			js_apierr_done(&e);
			rc = js_client_update(r->o.client, res, NULL, updated, NULL, NULL, &e);
			if (rc == 0)
				logf_(r, 1, "certificates: CA bundle injected into %s '%s'", res->resource, name);
			else
				logf_(r, rc == JS_ECONFLICT ? 4 : 0, "certificates: UPDATE %s '%s': %s", res->resource,
				      name, err_msg(&e, rc));
		} else if (rc < 0) {
			logf_(r, 0, "certificates: %s '%s' has no webhooks list, ignoring", res->resource, name);
			rc = 0;
		}
	}
	json_decref(cfg);
	json_decref(updated);
	js_apierr_done(&e);
	return rc == JS_ENOTFOUND ? JS_ENOTFOUND : rc < 0 ? rc : 0;
}

/* One round. Returns 0 when everything is in place. */
static int round_once(struct js_rotator *r)
{
	struct js_certs c = {0};
	int rc = sync_secret(r, &c);
	if (rc < 0)
		return rc;
	int d = sync_dir(r, &c);
	atomic_store(&r->ready, d == 1);
	int m = inject(r, &res_mutating, r->mutating, 0, c.ca_crt);
	int v = inject(r, &res_validating, r->validating, 1, c.ca_crt);
	js_certs_done(&c);
	if (d < 0)
		return d;
	if (d == 0)
		return -EAGAIN;
	return m < 0 ? m : v;
}

static void *run(void *arg)
{
	struct js_rotator *r = arg;
	/* A round's requests end when stopping: stop waits for no API server. */
	js_client_bind_cancel(r->o.client, &r->cancel);
	int backoff = ROTATOR_BACKOFF_MIN_MS;
	pthread_mutex_lock(&r->mu);
	while (!r->stop) {
		pthread_mutex_unlock(&r->mu);
		int rc = round_once(r);
		atomic_fetch_add(&r->rounds, 1);
		int wait_ms = r->o.interval_ms;
		if (rc < 0) {
			wait_ms = backoff < wait_ms ? backoff : wait_ms;
			backoff = backoff * 2 < r->o.interval_ms ? backoff * 2 : r->o.interval_ms;
		} else {
			backoff = ROTATOR_BACKOFF_MIN_MS;
		}
		struct timespec dl = js_clock_deadline_ts(wait_ms);
		pthread_mutex_lock(&r->mu);
		while (!r->stop && pthread_cond_timedwait(&r->cond, &r->mu, &dl) != ETIMEDOUT) {
		}
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* ---- lifecycle ---- */

static bool is_ip(const char *s)
{
	unsigned char buf[16];
	return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

static void push(char ***v, size_t *n, const char *s)
{
	*v = js_xrealloc(*v, (*n + 1) * sizeof(**v));
	(*v)[(*n)++] = js_xstrdup(s);
}

static char *dup_or_null(const char *s)
{
	return s && *s ? js_xstrdup(s) : NULL;
}

int js_rotator_new(const struct js_rotator_opts *opts, struct js_rotator **ret)
{
	const struct js_rotator_opts *o = opts;
	if (!o->client || !o->namespace_ || !*o->namespace_ || !o->secret_name || !*o->secret_name ||
	    !o->service_name || !*o->service_name || !o->cert_dir || !*o->cert_dir)
		return JS_EINVALID;
	struct js_rotator *r = js_xcalloc(1, sizeof(*r));
	r->o = *o;
	if (r->o.interval_ms <= 0)
		r->o.interval_ms = 60000;
	r->ns = js_xstrdup(o->namespace_);
	r->secret = js_xstrdup(o->secret_name);
	r->mutating = dup_or_null(o->mutating_name);
	r->validating = dup_or_null(o->validating_name);
	r->dir = js_xstrdup(o->cert_dir);
	r->o.extra_sans = NULL;
	r->o.n_extra_sans = 0;
	pthread_mutex_init(&r->mu, NULL);
	atomic_init(&r->cancel, false);
	js_clock_cond_init(&r->cond);
	char name[600];
	snprintf(name, sizeof(name), "%s.%s.svc", o->service_name, o->namespace_);
	push(&r->dns, &r->n_dns, name);
	snprintf(name, sizeof(name), "%s.%s.svc.cluster.local", o->service_name, o->namespace_);
	push(&r->dns, &r->n_dns, name);
	for (size_t i = 0; i < o->n_extra_sans; i++) {
		if (is_ip(o->extra_sans[i]))
			push(&r->ips, &r->n_ips, o->extra_sans[i]);
		else
			push(&r->dns, &r->n_dns, o->extra_sans[i]);
	}
	/* Generating once checks every name (DNS syntax, IP parse) before a
	 * bad flag can reach the Secret. */
	struct js_certs probe = {0};
	struct js_certs_names names;
	names_of(r, &names);
	int rc = js_certs_generate(&names, now_s(), &probe);
	js_certs_done(&probe);
	if (rc < 0) {
		(void)!js_rotator_free(r); /* never started: cannot refuse */
		return rc;
	}
	*ret = r;
	return 0;
}

int js_rotator_start(struct js_rotator *r)
{
	if (r->running)
		return -EBUSY;
	int rc = pthread_create(&r->thread, NULL, run, r);
	if (rc != 0)
		return -rc;
	r->running = true;
	return 0;
}

bool js_rotator_ready(struct js_rotator *r)
{
	return atomic_load(&r->ready);
}

uint64_t js_rotator_rounds(struct js_rotator *r)
{
	return atomic_load(&r->rounds);
}

int js_rotator_stop(struct js_rotator *r)
{
	if (!r->running || r->joined)
		return 0;
	if (pthread_equal(pthread_self(), r->thread))
		return -EDEADLK;
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->mu);
	atomic_store(&r->cancel, true);
	js_client_wakeup(r->o.client);
	pthread_join(r->thread, NULL);
	r->joined = true;
	return 0;
}

int js_rotator_free(struct js_rotator *r)
{
	if (!r)
		return 0;
	if (r->running && !r->joined)
		return -EBUSY;
	for (size_t i = 0; i < r->n_dns; i++)
		free(r->dns[i]);
	for (size_t i = 0; i < r->n_ips; i++)
		free(r->ips[i]);
	free(r->dns);
	free(r->ips);
	free(r->ns);
	free(r->secret);
	free(r->mutating);
	free(r->validating);
	free(r->dir);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->mu);
	free(r);
	return 0;
}
