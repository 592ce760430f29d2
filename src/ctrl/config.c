/*
 * config.c - flags, Configuration file, feature gates, durations and
 * addresses of jobset-controller (SPEC §12.1-§12.3). See config.h.
 */
#include "ctrl/config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/gates.h"
#include "base/buf.h"
#include "base/diag.h"
#include "base/json.h"
#include "base/load.h"
#include "base/parse.h"
#include "webhook/webhook.h"

static int fail(char **reterr_msg, const char *fmt, ...) JS_PRINTF(2, 3);
static int fail(char **reterr_msg, const char *fmt, ...)
{
	if (reterr_msg) {
		struct js_buf b;
		js_buf_init(&b, 4096);
		va_list ap;
		va_start(ap, fmt);
		(void)!js_buf_vprintf(&b, fmt, ap);
		va_end(ap);
		*reterr_msg = js_buf_take(&b);
	}
	return JS_EINVALID;
}

static void set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = v ? js_xstrdup(v) : NULL;
}

void js_config_defaults(struct js_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->qps = 500;
	cfg->burst = 500;
	cfg->concurrency = 4;
	cfg->leader_elect = true;
	cfg->lease_name = js_xstrdup(JS_CONFIG_LEASE_NAME);
	cfg->lease_duration_ms = 15000;
	cfg->renew_deadline_ms = 10000;
	cfg->retry_period_ms = 2000;
	cfg->metrics_addr = js_xstrdup(":8443");
	cfg->metrics_secure = true;
	cfg->health_addr = js_xstrdup(":8081");
	cfg->readyz_path = js_xstrdup("readyz");
	cfg->healthz_path = js_xstrdup("healthz");
	cfg->webhooks = true;
	cfg->webhook_port = 9443;
	cfg->webhook_cert_dir = js_xstrdup(JS_CONFIG_CERT_DIR);
	cfg->service_name = js_xstrdup(JS_CONFIG_SERVICE_NAME);
	cfg->secret_name = js_xstrdup(JS_CONFIG_SECRET_NAME);
	cfg->mutating_name = js_xstrdup(JS_CONFIG_MUTATING_NAME);
	cfg->validating_name = js_xstrdup(JS_CONFIG_VALIDATING_NAME);
	cfg->cert_interval_ms = 60000;
	cfg->fold_window_ms = JS_CONFIG_FOLD_WINDOW_MS;
}

void js_config_done(struct js_config *cfg)
{
	if (!cfg)
		return;
	char **strs[] = {&cfg->config_file,  &cfg->kubeconfig,	  &cfg->context,      &cfg->lease_namespace,
			 &cfg->lease_name,   &cfg->identity,	  &cfg->metrics_addr, &cfg->health_addr,
			 &cfg->readyz_path,  &cfg->healthz_path,  &cfg->webhook_host, &cfg->webhook_cert_dir,
			 &cfg->cert_management, &cfg->cert_namespace, &cfg->service_name, &cfg->secret_name,
			 &cfg->mutating_name, &cfg->validating_name, &cfg->cert_extra_sans, &cfg->metrics_cert_dir,
			 &cfg->tls_min_version, &cfg->tls_cipher_suites, &cfg->watcher_image};
	for (size_t i = 0; i < JS_ARRAY_SIZE(strs); i++)
		free(*strs[i]);
	memset(cfg, 0, sizeof(*cfg));
}

/* ---- scalars ---- */

static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *ret)
{
	if (!s || !*s)
		return JS_EINVALID;
	char *end = NULL;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return JS_EINVALID;
	*ret = v;
	return 0;
}

int js_config_parse_duration_ms(const char *s, int64_t *ret_ms)
{
	static const struct {
		const char *unit;
		double ms;
	} units[] = {{"ns", 1e-6}, {"us", 1e-3}, {"µs", 1e-3}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
	if (!s || !*s)
		return JS_EINVALID;
	if (strcmp(s, "0") == 0) {
		*ret_ms = 0;
		return 0;
	}
	double total = 0;
	const char *p = s;
	while (*p) {
		char *end = NULL;
		if (!(*p >= '0' && *p <= '9') && *p != '.')
			return JS_EINVALID;
		double v = strtod(p, &end);
		if (end == p)
			return JS_EINVALID;
		p = end;
		size_t best = 0;
		double mult = -1;
		for (size_t i = 0; i < JS_ARRAY_SIZE(units); i++) {
			size_t n = strlen(units[i].unit);
			/* Longest match, so "ms" is not read as "m" then "s". */
			if (n > best && strncmp(p, units[i].unit, n) == 0) {
				best = n;
				mult = units[i].ms;
			}
		}
		if (best == 0)
			return JS_EINVALID;
		p += best;
		total += v * mult;
	}
	if (!(total >= 0) || total > 24.0 * 3600000)
		return JS_EINVALID;
	*ret_ms = (int64_t)llround(total);
	return 0;
}

int js_config_parse_addr(const char *s, bool *ret_disabled, char **ret_host, int *ret_port)
{
	if (!s || !*s || strcmp(s, "0") == 0) {
		*ret_disabled = true;
		*ret_host = NULL;
		*ret_port = 0;
		return 0;
	}
	const char *colon = strrchr(s, ':');
	if (!colon)
		return JS_EINVALID;
	int64_t port;
	if (parse_i64(colon + 1, 0, 65535, &port) < 0)
		return JS_EINVALID;
	const char *h = s;
	size_t hn = (size_t)(colon - s);
	if (hn >= 2 && h[0] == '[' && h[hn - 1] == ']') {
		h++;
		hn -= 2;
	} else if (memchr(h, ':', hn)) {
		return JS_EINVALID; /* an IPv6 host must be bracketed */
	}
	*ret_disabled = false;
	*ret_host = hn ? js_xstrndup(h, hn) : NULL;
	*ret_port = (int)port;
	return 0;
}

/* ---- the Configuration file (SPEC §12.2) ---- */

enum kind { K_STR, K_BOOL, K_INT, K_FLOAT, K_DURATION, K_STRLIST, K_IGNORED_STR, K_IGNORED_BOOL };

struct field {
	const char *path; /* "leaderElection.leaseDuration" */
	enum kind kind;
	size_t off;       /* into struct js_config; unused for K_IGNORED_*; K_STRLIST: a char * (joined with ',') */
};

#define F(path, kind, member) {path, kind, offsetof(struct js_config, member)}
static const struct field fields[] = {
	F("webhook.port", K_INT, webhook_port),
	F("webhook.host", K_STR, webhook_host),
	F("webhook.certDir", K_STR, webhook_cert_dir),
	F("leaderElection.leaderElect", K_BOOL, leader_elect),
	F("leaderElection.leaseDuration", K_DURATION, lease_duration_ms),
	F("leaderElection.renewDeadline", K_DURATION, renew_deadline_ms),
	F("leaderElection.retryPeriod", K_DURATION, retry_period_ms),
	{"leaderElection.resourceLock", K_IGNORED_STR, 0},
	F("leaderElection.resourceName", K_STR, lease_name),
	F("leaderElection.resourceNamespace", K_STR, lease_namespace),
	F("metrics.bindAddress", K_STR, metrics_addr),
	F("metrics.certDir", K_STR, metrics_cert_dir),
	F("health.healthProbeBindAddress", K_STR, health_addr),
	F("health.readinessEndpointName", K_STR, readyz_path),
	F("health.livenessEndpointName", K_STR, healthz_path),
	F("tls.minVersion", K_STR, tls_min_version),
	F("tls.cipherSuites", K_STRLIST, tls_cipher_suites),
	{"internalCertManagement.enable", K_IGNORED_BOOL, 0}, /* read in apply_root */
	F("internalCertManagement.webhookServiceName", K_STR, service_name),
	F("internalCertManagement.webhookSecretName", K_STR, secret_name),
	F("clientConnection.qps", K_FLOAT, qps),
	F("clientConnection.burst", K_INT, burst),
};
#undef F

static const char *const sections[] = {"webhook", "leaderElection", "metrics", "health", "tls",
				       "internalCertManagement", "clientConnection"};

static int apply_field(struct js_config *cfg, const struct field *f, const json_t *v, char **reterr_msg)
{
	char *base = (char *)cfg;
	switch (f->kind) {
	case K_STR:
	case K_IGNORED_STR:
		if (!json_is_string(v))
			return fail(reterr_msg, "%s: expected a string", f->path);
		if (f->kind == K_STR)
			set_str((char **)(base + f->off), json_string_value(v));
		return 0;
	case K_BOOL:
	case K_IGNORED_BOOL:
		if (!json_is_boolean(v))
			return fail(reterr_msg, "%s: expected a boolean", f->path);
		if (f->kind == K_BOOL)
			*(bool *)(base + f->off) = json_is_true(v);
		return 0;
	case K_INT:
		if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT_MAX)
			return fail(reterr_msg, "%s: expected a non-negative integer", f->path);
		*(int *)(base + f->off) = (int)json_integer_value(v);
		return 0;
	case K_FLOAT:
		if (!json_is_number(v) || json_number_value(v) < 0)
			return fail(reterr_msg, "%s: expected a non-negative number", f->path);
		*(double *)(base + f->off) = json_number_value(v);
		return 0;
	case K_DURATION: {
		int64_t ms;
		if (!json_is_string(v) || js_config_parse_duration_ms(json_string_value(v), &ms) < 0 || ms > INT_MAX)
			return fail(reterr_msg, "%s: expected a duration such as \"15s\"", f->path);
		*(int *)(base + f->off) = (int)ms;
		return 0;
	}
	case K_STRLIST: {
		if (!json_is_array(v))
			return fail(reterr_msg, "%s: expected a list of strings", f->path);
		size_t i;
		const json_t *e;
		struct js_buf b;
		js_buf_init(&b, 65536);
		json_array_foreach(v, i, e)
		{
			const char *item = json_string_value(e);
			if (!item || strchr(item, ',')) {
				js_buf_done(&b);
				return fail(reterr_msg, "%s[%zu]: expected a string without commas", f->path, i);
			}
			if (js_buf_printf(&b, "%s%s", i ? "," : "", item) < 0) {
				js_buf_done(&b);
				return fail(reterr_msg, "%s: too long", f->path);
			}
		}
		set_str((char **)(base + f->off), js_buf_str(&b));
		js_buf_done(&b);
		return 0;
	}
	}
	return JS_EINVALID;
}

static const struct field *find_field(const char *section, const char *key)
{
	size_t sn = strlen(section);
	for (size_t i = 0; i < JS_ARRAY_SIZE(fields); i++) {
		const char *p = fields[i].path;
		if (strncmp(p, section, sn) == 0 && p[sn] == '.' && strcmp(p + sn + 1, key) == 0)
			return &fields[i];
	}
	return NULL;
}

/* SPEC §12.2 startup validation of the TLS settings (file or flags). */
static int check_tls(const struct js_config *cfg, const char *where, char **reterr_msg)
{
	const char *minv = cfg->tls_min_version;
	if (minv && *minv && strcmp(minv, "VersionTLS12") != 0 && strcmp(minv, "VersionTLS13") != 0)
		return fail(reterr_msg, "%sinvalid minVersion: %s. Please use VersionTLS12 or VersionTLS13", where, minv);
	if (minv && strcmp(minv, "VersionTLS13") == 0 && cfg->tls_cipher_suites && *cfg->tls_cipher_suites)
		return fail(reterr_msg, "%stls.cipherSuites: may not be specified when `minVersion` is 'VersionTLS13'",
			    where);
	return 0;
}

/* The file's featureGates map, applied as one (AllAlpha/AllBeta yield to
 * the gates the map names, wherever they stand in it). */
static int apply_gates(struct js_config *cfg, const json_t *map, char **reterr_msg)
{
	size_t n = json_object_size(map), i = 0;
	struct js_gate_setting *set = calloc(n ? n : 1, sizeof(*set));
	if (!set)
		return fail(reterr_msg, "featureGates: out of memory");
	const char *g;
	const json_t *on;
	json_object_foreach(js_json_unconst(map), g, on)
	{
		if (!json_is_boolean(on)) {
			free(set);
			return fail(reterr_msg, "featureGates.%s: expected a boolean", g);
		}
		set[i++] = (struct js_gate_setting){g, strlen(g), json_is_true(on)};
		if (js_gates_deprecated(g, strlen(g)))
			cfg->gate_warning = js_gates_deprecated(g, strlen(g));
	}
	char *msg = NULL;
	size_t bad = 0;
	int r = js_gates_set_all(&cfg->gates, set, i, &bad, &msg);
	if (r < 0)
		r = fail(reterr_msg, "featureGates.%.*s: %s", (int)set[bad].len, set[bad].name, msg);
	free(msg);
	free(set);
	return r;
}

static int apply_root(struct js_config *cfg, const json_t *root, char **reterr_msg)
{
	if (!json_is_object(root))
		return fail(reterr_msg, "expected a Configuration object");
	const char *av = js_json_str(root, "apiVersion");
	const char *kind = js_json_str(root, "kind");
	if (!av || strcmp(av, "config.jobset.x-k8s.io/v1alpha1") != 0)
		return fail(reterr_msg, "apiVersion: expected \"config.jobset.x-k8s.io/v1alpha1\"");
	if (!kind || strcmp(kind, "Configuration") != 0)
		return fail(reterr_msg, "kind: expected \"Configuration\"");
	const char *key;
	const json_t *val;
	json_object_foreach(js_json_unconst(root), key, val)
	{
		if (strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0)
			continue;
		if (strcmp(key, "featureGates") == 0) {
			if (!json_is_object(val))
				return fail(reterr_msg, "featureGates: expected a map of gate names to booleans");
			int r = apply_gates(cfg, val, reterr_msg);
			if (r < 0)
				return r;
			continue;
		}
		bool known = false;
		for (size_t i = 0; i < JS_ARRAY_SIZE(sections); i++)
			known |= strcmp(key, sections[i]) == 0;
		if (!known)
			return fail(reterr_msg, "unknown field \"%s\"", key);
		if (!json_is_object(val))
			return fail(reterr_msg, "%s: expected an object", key);
		const char *k2;
		const json_t *v2;
		json_object_foreach(js_json_unconst(val), k2, v2)
		{
			const struct field *f = find_field(key, k2);
			if (!f)
				return fail(reterr_msg, "unknown field \"%s.%s\"", key, k2);
			int r = apply_field(cfg, f, v2, reterr_msg);
			if (r < 0)
				return r;
		}
	}
	const json_t *icm = js_json_path(root, "internalCertManagement.enable");
	if (json_is_boolean(icm))
		set_str(&cfg->cert_management, json_is_true(icm) ? "internal" : "none");
	return check_tls(cfg, "", reterr_msg);
}

int js_config_apply_file(struct js_config *cfg, const char *file, const char *data, size_t len, char **reterr_msg)
{
	struct js_diag d = {0};
	struct js_docs *docs = NULL;
	int r = js_docs_load(file, data, len, &d, &docs);
	if (r < 0) {
		r = fail(reterr_msg, "%s: %s", file, d.n ? d.items[0].message : js_strerror(r));
		js_diag_done(&d);
		return r;
	}
	js_diag_done(&d);
	if (js_docs_count(docs) != 1) {
		js_docs_free(docs);
		return fail(reterr_msg, "%s: expected exactly one document", file);
	}
	/* Work on a copy so a bad file leaves `cfg` as it was. */
	struct js_config tmp = *cfg;
	char **strs[] = {&tmp.webhook_host, &tmp.webhook_cert_dir, &tmp.lease_name,   &tmp.lease_namespace,
			 &tmp.metrics_addr, &tmp.health_addr,	   &tmp.readyz_path,  &tmp.healthz_path,
			 &tmp.cert_management, &tmp.service_name, &tmp.secret_name, &tmp.metrics_cert_dir,
			 &tmp.tls_min_version, &tmp.tls_cipher_suites};
	for (size_t i = 0; i < JS_ARRAY_SIZE(strs); i++)
		*strs[i] = *strs[i] ? js_xstrdup(*strs[i]) : NULL;
	char *msg = NULL;
	r = apply_root(&tmp, js_docs_root(docs, 0), &msg);
	js_docs_free(docs);
	if (r < 0) {
		for (size_t i = 0; i < JS_ARRAY_SIZE(strs); i++)
			free(*strs[i]);
		r = fail(reterr_msg, "%s: %s", file, msg);
		free(msg);
		return r;
	}
	/* Swap: free the old strings that tmp replaced. */
	char **olds[] = {&cfg->webhook_host, &cfg->webhook_cert_dir, &cfg->lease_name,   &cfg->lease_namespace,
			 &cfg->metrics_addr, &cfg->health_addr,	     &cfg->readyz_path,  &cfg->healthz_path,
			 &cfg->cert_management, &cfg->service_name, &cfg->secret_name, &cfg->metrics_cert_dir,
			 &cfg->tls_min_version, &cfg->tls_cipher_suites};
	for (size_t i = 0; i < JS_ARRAY_SIZE(olds); i++)
		free(*olds[i]);
	*cfg = tmp;
	return 0;
}

/* ---- flags (SPEC §12.1 plus ours) ---- */

enum fkind { FL_STR, FL_BOOL, FL_INT, FL_FLOAT, FL_GATES, FL_LEVEL, FL_DURATION, FL_PLACEMENT, FL_CLEANUP };

struct flag {
	const char *name;
	enum fkind kind;
	size_t off;
	int64_t lo, hi; /* FL_INT bounds */
};

#define FL(name, kind, member, lo, hi) {name, kind, offsetof(struct js_config, member), lo, hi}
static const struct flag flags[] = {
	FL("config", FL_STR, config_file, 0, 0),
	FL("kubeconfig", FL_STR, kubeconfig, 0, 0),
	FL("context", FL_STR, context, 0, 0),
	FL("kube-api-qps", FL_FLOAT, qps, 0, 0),
	FL("kube-api-burst", FL_INT, burst, 1, 100000),
	FL("concurrency", FL_INT, concurrency, 1, 256),
	FL("leader-elect", FL_BOOL, leader_elect, 0, 0),
	FL("leader-elect-namespace", FL_STR, lease_namespace, 0, 0),
	FL("leader-elect-name", FL_STR, lease_name, 0, 0),
	FL("leader-elect-identity", FL_STR, identity, 0, 0),
	FL("metrics-bind-address", FL_STR, metrics_addr, 0, 0),
	FL("metrics-secure", FL_BOOL, metrics_secure, 0, 0),
	FL("metrics-cert-dir", FL_STR, metrics_cert_dir, 0, 0),
	FL("tls-min-version", FL_STR, tls_min_version, 0, 0),
	FL("tls-cipher-suites", FL_STR, tls_cipher_suites, 0, 0),
	FL("health-probe-bind-address", FL_STR, health_addr, 0, 0),
	FL("feature-gates", FL_GATES, gates, 0, 0),
	FL("enable-webhooks", FL_BOOL, webhooks, 0, 0),
	FL("webhook-port", FL_INT, webhook_port, 1, 65535),
	FL("webhook-cert-dir", FL_STR, webhook_cert_dir, 0, 0),
	FL("webhook-host", FL_STR, webhook_host, 0, 0),
	FL("cert-management", FL_STR, cert_management, 0, 0),
	FL("cert-namespace", FL_STR, cert_namespace, 0, 0),
	FL("webhook-service-name", FL_STR, service_name, 0, 0),
	FL("webhook-secret-name", FL_STR, secret_name, 0, 0),
	FL("mutating-webhook-configuration", FL_STR, mutating_name, 0, 0),
	FL("validating-webhook-configuration", FL_STR, validating_name, 0, 0),
	FL("cert-extra-sans", FL_STR, cert_extra_sans, 0, 0),
	FL("cert-check-interval", FL_DURATION, cert_interval_ms, 1000, 24 * 3600 * 1000),
	FL("reconcile-fold-window", FL_DURATION, fold_window_ms, 0, 10000),
	FL("exclusive-placement", FL_PLACEMENT, placement, 0, 0),
	FL("restart-cleanup", FL_CLEANUP, restart_foreground, 0, 0),
	FL("progress-watcher-image", FL_STR, watcher_image, 0, 0),
	FL("zap-log-level", FL_LEVEL, verbosity, 0, 0),
	FL("v", FL_INT, verbosity, 0, 10),
	FL("help", FL_BOOL, help, 0, 0),
	FL("version", FL_BOOL, version, 0, 0),
};
#undef FL

/* Upstream's zap flags are accepted and ignored, so its manifests work. */
static const char *const ignored_flags[] = {"zap-devel", "zap-encoder", "zap-stacktrace-level", "zap-time-encoding"};

static const struct flag *find_flag(const char *name, size_t n)
{
	for (size_t i = 0; i < JS_ARRAY_SIZE(flags); i++) {
		if (strlen(flags[i].name) == n && strncmp(flags[i].name, name, n) == 0)
			return &flags[i];
	}
	return NULL;
}

static int apply_flag(struct js_config *cfg, const struct flag *f, const char *v, char **reterr_msg)
{
	char *base = (char *)cfg;
	int64_t i;
	switch (f->kind) {
	case FL_STR:
		set_str((char **)(base + f->off), v);
		return 0;
	case FL_BOOL:
		if (js_parse_bool(v, strlen(v), (bool *)(base + f->off)) < 0)
			return fail(reterr_msg, "--%s: invalid boolean '%s'", f->name, v);
		return 0;
	case FL_INT:
		if (parse_i64(v, f->lo, f->hi, &i) < 0)
			return fail(reterr_msg, "--%s: expected an integer in [%lld, %lld], got '%s'", f->name,
				    (long long)f->lo, (long long)f->hi, v);
		*(int *)(base + f->off) = (int)i;
		return 0;
	case FL_FLOAT: {
		char *end = NULL;
		double d = strtod(v, &end);
		if (!*v || *end || !(d > 0) || d > 1e6)
			return fail(reterr_msg, "--%s: expected a positive number, got '%s'", f->name, v);
		*(double *)(base + f->off) = d;
		return 0;
	}
	case FL_DURATION:
		if (js_config_parse_duration_ms(v, &i) < 0 || i < f->lo || i > f->hi)
			return fail(reterr_msg, "--%s: expected a duration from %s to %s such as \"%s\", got '%s'",
				    f->name, f->lo ? "1s" : "0", f->hi > 10000 ? "24h" : "10s",
				    f->lo ? "1m" : "250ms", v);
		*(int *)(base + f->off) = (int)i;
		return 0;
	case FL_GATES:
		if (js_gates_list_deprecated(v))
			cfg->gate_warning = js_gates_list_deprecated(v);
		return js_gates_parse(v, (struct js_gates *)(base + f->off), reterr_msg);
	case FL_PLACEMENT:
		if (strcmp(v, "gates") == 0)
			*(enum js_placement_mode *)(base + f->off) = JS_PLACEMENT_GATES;
		else if (strcmp(v, "webhook") == 0)
			*(enum js_placement_mode *)(base + f->off) = JS_PLACEMENT_WEBHOOK;
		else
			return fail(reterr_msg, "--%s: expected gates or webhook, got '%s'", f->name, v);
		return 0;
	case FL_CLEANUP:
		if (strcmp(v, "direct") != 0 && strcmp(v, "foreground") != 0)
			return fail(reterr_msg, "--%s: expected direct or foreground, got '%s'", f->name, v);
		*(bool *)(base + f->off) = strcmp(v, "foreground") == 0;
		return 0;
	case FL_LEVEL: {
		static const struct {
			const char *name;
			int level;
		} levels[] = {{"debug", 4}, {"info", 0}, {"error", 0}, {"panic", 0}};
		for (size_t k = 0; k < JS_ARRAY_SIZE(levels); k++) {
			if (strcmp(v, levels[k].name) == 0) {
				cfg->verbosity = levels[k].level;
				return 0;
			}
		}
		if (parse_i64(v, 0, 10, &i) < 0)
			return fail(reterr_msg, "--%s: expected debug|info|error|panic or 0..10, got '%s'", f->name, v);
		cfg->verbosity = (int)i;
		return 0;
	}
	}
	return JS_EINVALID;
}

/* Walk argv; apply only the --config flag (pass 0) or every flag (pass 1). */
static int walk(struct js_config *cfg, int argc, char *const *argv, int pass, char **reterr_msg)
{
	for (int k = 1; k < argc; k++) {
		const char *a = argv[k];
		if (a[0] != '-' || a[1] == '\0')
			return fail(reterr_msg, "unexpected argument '%s'", a);
		const char *name = a + (a[1] == '-' ? 2 : 1);
		const char *eq = strchr(name, '=');
		size_t n = eq ? (size_t)(eq - name) : strlen(name);
		bool ignored = false;
		for (size_t i = 0; i < JS_ARRAY_SIZE(ignored_flags); i++)
			ignored |= strlen(ignored_flags[i]) == n && strncmp(ignored_flags[i], name, n) == 0;
		if (ignored)
			continue;
		if (n == 1 && name[0] == 'h')
			name = "help", n = 4;
		const struct flag *f = find_flag(name, n);
		if (!f)
			return fail(reterr_msg, "unknown flag '--%.*s'", (int)n, name);
		const char *v = eq ? eq + 1 : NULL;
		if (!v && f->kind == FL_BOOL)
			v = "true";
		if (!v) {
			if (k + 1 >= argc)
				return fail(reterr_msg, "flag '--%s' needs a value", f->name);
			v = argv[++k];
		}
		bool is_config = strcmp(f->name, "config") == 0;
		if ((pass == 0) != is_config)
			continue;
		int r = apply_flag(cfg, f, v, reterr_msg);
		if (r < 0)
			return r;
	}
	return 0;
}

static int read_file(const char *path, char **ret, size_t *ret_len)
{
	FILE *f = fopen(path, "rbe");
	if (!f)
		return -errno;
	struct js_buf b;
	js_buf_init(&b, 1 << 20);
	char chunk[4096];
	size_t n;
	int r = 0;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		r = js_buf_add(&b, chunk, n);
		if (r < 0)
			break;
	}
	if (ferror(f))
		r = -EIO;
	fclose(f);
	if (r < 0) {
		js_buf_done(&b);
		return r;
	}
	*ret_len = b.len;
	*ret = js_buf_take(&b);
	return 0;
}

/* A DNS-1035 label, or with `subdomain` a DNS-1123 subdomain. */
static bool dns_name(const char *s, bool subdomain)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > (subdomain ? 253u : 63u))
		return false;
	if (!subdomain && !(s[0] >= 'a' && s[0] <= 'z'))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		bool edge = i == 0 || i == n - 1 || (subdomain && (s[i - 1] == '.' || s[i + 1] == '.'));
		if (!alnum && !(c == '-' && !edge) && !(subdomain && c == '.' && !edge))
			return false;
	}
	return true;
}

/* SPEC §12.2: the names are only checked when internal management is on. */
static int check_certs(struct js_config *cfg, char **reterr_msg)
{
	const char *m = cfg->cert_management;
	if (m && strcmp(m, "internal") != 0 && strcmp(m, "none") != 0)
		return fail(reterr_msg, "--cert-management: expected internal or none, got '%s'", m);
	if (!cfg->webhook_cert_dir || !*cfg->webhook_cert_dir)
		set_str(&cfg->webhook_cert_dir, JS_CONFIG_CERT_DIR);
	if (m && strcmp(m, "none") == 0)
		return 0;
	if (!dns_name(cfg->service_name, false))
		return fail(reterr_msg, "webhookServiceName: '%s' is not a DNS-1035 label", cfg->service_name);
	if (!dns_name(cfg->secret_name, true))
		return fail(reterr_msg, "webhookSecretName: '%s' is not a DNS-1123 subdomain", cfg->secret_name);
	return 0;
}

int js_config_parse_args(struct js_config *cfg, int argc, char *const *argv, char **reterr_msg)
{
	int r = walk(cfg, argc, argv, 0, reterr_msg);
	if (r < 0)
		return r;
	if (cfg->config_file && *cfg->config_file) {
		char *data = NULL;
		size_t len = 0;
		r = read_file(cfg->config_file, &data, &len);
		if (r < 0)
			return fail(reterr_msg, "--config: cannot read '%s': %s", cfg->config_file, js_strerror(r)), r;
		r = js_config_apply_file(cfg, cfg->config_file, data, len, reterr_msg);
		free(data);
		if (r < 0)
			return r;
	}
	r = walk(cfg, argc, argv, 1, reterr_msg);
	if (r < 0)
		return r;
	if (!(cfg->lease_duration_ms > cfg->renew_deadline_ms &&
	      cfg->renew_deadline_ms * 10 > cfg->retry_period_ms * 12))
		return fail(reterr_msg, "leader election: need leaseDuration > renewDeadline > 1.2 * retryPeriod");
	r = check_tls(cfg, "--tls-min-version/--tls-cipher-suites: ", reterr_msg);
	return r < 0 ? r : check_certs(cfg, reterr_msg);
}

const char *js_config_usage(void)
{
	return "usage: jobset-controller [flags]\n"
	       "\n"
	       "The JobSet controller (jobset.x-k8s.io/v1alpha2) for a Kubernetes cluster.\n"
	       "\n"
	       "  --kubeconfig PATH                 kubeconfig (default $KUBECONFIG, else in-cluster)\n"
	       "  --context NAME                    kubeconfig context (default current-context)\n"
	       "  --config PATH                     Configuration file (config.jobset.x-k8s.io/v1alpha1)\n"
	       "  --kube-api-qps N                  client requests per second (500)\n"
	       "  --kube-api-burst N                client burst (500)\n"
	       "  --concurrency N                   reconcile workers (4)\n"
	       "  --leader-elect[=BOOL]             leader election on a Lease (true)\n"
	       "  --leader-elect-namespace NS       Lease namespace (default: the kubeconfig/pod namespace)\n"
	       "  --leader-elect-name NAME          Lease name (" JS_CONFIG_LEASE_NAME ")\n"
	       "  --leader-elect-identity ID        this replica's identity (default hostname_pid)\n"
	       "  --metrics-bind-address ADDR       /metrics listen address (:8443; 0 disables)\n"
	       "  --metrics-secure[=BOOL]           /metrics over HTTPS, callers checked by TokenReview and\n"
	       "                                    SubjectAccessReview (true; false = plain HTTP, no checks)\n"
	       "  --metrics-cert-dir DIR            tls.crt, tls.key for /metrics (default: self-signed)\n"
	       "  --tls-min-version V               VersionTLS12 (default) or VersionTLS13, webhooks and metrics\n"
	       "  --tls-cipher-suites A,B           TLS 1.2 cipher suites (IANA names; default OpenSSL's)\n"
	       "  --health-probe-bind-address ADDR  /healthz, /readyz listen address (:8081; 0 disables)\n"
	       "  --feature-gates A=true,...        RestartJob, InPlaceRestart, ElasticJobSet,\n"
	       "                                    ExecutionAttemptsTracking, JobSetActiveDeadlineSeconds,\n"
	       "                                    MutablePodResourcesForSuspendedJobSets,\n"
	       "                                    JobSetWorkloadAwareSchedulingAPI (deprecated alias:\n"
	       "                                    WorkloadAwareScheduling);\n"
	       "                                    AllAlpha=true: every gate not named\n"
	       "  --enable-webhooks[=BOOL]          serve the admission webhooks, on every replica (true)\n"
	       "  --webhook-port N                  webhook HTTPS port (9443)\n"
	       "  --webhook-host ADDR               webhook bind address (all interfaces)\n"
	       "  --webhook-cert-dir DIR            tls.crt, tls.key (" JS_CONFIG_CERT_DIR ")\n"
	       "  --cert-management internal|none   generate and rotate the certificates (internal, unless\n"
	       "                                    the cert dir already holds them)\n"
	       "  --cert-namespace NS               Secret and Service namespace (the pod's, else jobset-system)\n"
	       "  --webhook-service-name NAME       (" JS_CONFIG_SERVICE_NAME ")\n"
	       "  --webhook-secret-name NAME        (" JS_CONFIG_SECRET_NAME ")\n"
	       "  --mutating-webhook-configuration NAME, --validating-webhook-configuration NAME\n"
	       "                                    where the CA bundle goes (deploy/'s names; \"\" = none)\n"
	       "  --cert-extra-sans A,B             more DNS names or IPs in the serving certificate\n"
	       "  --cert-check-interval DURATION    how often certificates and CA bundles are checked (1m)\n"
	       "  --reconcile-fold-window DURATION  child Job events of one JobSet within this window fold\n"
	       "                                    into one reconcile (250ms; 0 = reconcile at once; <= 10s)\n"
	       "  --exclusive-placement gates|webhook  followers of an exclusive Job wait behind a scheduling\n"
	       "                                    gate the controller lifts (gates), or are refused at\n"
	       "                                    admission until their leader is bound (webhook: upstream's)\n"
	       "  --restart-cleanup direct|foreground  Jobs of a previous restart attempt are deleted in the\n"
	       "                                    Background and their pods by the controller, the new\n"
	       "                                    attempt waiting until none runs (direct), or deleted in\n"
	       "                                    the Foreground (upstream's)\n"
	       "  --progress-watcher-image IMAGE    the hang-detection watcher's image (gate ProgressDeadline;\n"
	       "                                    it runs /usr/local/bin/in-place-restart-agent;\n"
	       "                                    " JS_WEBHOOK_WATCHER_IMAGE ")\n"
	       "  -v N, --zap-log-level LEVEL       log verbosity (0; debug = 4)\n"
	       "  --version, --help\n";
}
