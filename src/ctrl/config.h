/*
 * config.h - the settings of jobset-controller: command-line flags (SPEC
 * §12.1), the optional `Configuration` file (SPEC §12.2, a subset), feature
 * gates (§12.3), Go durations and listen addresses.
 *
 * Precedence as upstream: defaults, then the file named by --config (decoded
 * strictly: an unknown field is an error), then every flag given explicitly
 * on the command line. Leader election is therefore on unless the file or
 * --leader-elect=false turns it off (the file's default is true).
 *
 * Pure apart from js_config_parse_args() reading the --config file. Never
 * prints: errors come back as one message. Not thread-safe; a js_config is
 * plain data with one owner.
 */
#ifndef JS_CONFIG_H
#define JS_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "api/jobset.h"
#include "base/common.h"

#define JS_CONFIG_LEASE_NAME "6d4f6a47.jobset.x-k8s.io"
/* Child Job events of one JobSet arriving within this window fold into one
 * reconcile (docs/controller.md "Reacting to changes"): long enough to
 * gather a burst of Job status updates, short next to a Job's own
 * lifetime. */
#define JS_CONFIG_FOLD_WINDOW_MS 250
/* deploy/'s names (SPEC §12.5, §12.10). */
#define JS_CONFIG_CERT_DIR "/tmp/k8s-webhook-server/serving-certs"
#define JS_CONFIG_METRICS_CERT_DIR "/tmp/k8s-metrics-server/serving-certs"
#define JS_CONFIG_CERT_NAMESPACE "jobset-system"
#define JS_CONFIG_SERVICE_NAME "jobset-webhook-service"
#define JS_CONFIG_SECRET_NAME "jobset-webhook-server-cert"
#define JS_CONFIG_MUTATING_NAME "jobset-mutating-webhook-configuration"
#define JS_CONFIG_VALIDATING_NAME "jobset-validating-webhook-configuration"

/** Every setting. Strings are owned (js_config_done); NULL = unset. */
struct js_config {
	char *config_file;      /* --config */
	char *kubeconfig;       /* --kubeconfig; NULL = $KUBECONFIG, then in-cluster */
	char *context;          /* --context */
	double qps;             /* --kube-api-qps, clientConnection.qps (500) */
	int burst;              /* --kube-api-burst, clientConnection.burst (500) */
	int concurrency;        /* --concurrency: reconcile workers (4) */

	bool leader_elect;      /* --leader-elect, leaderElection.leaderElect (true) */
	char *lease_namespace;  /* --leader-elect-namespace; NULL = the client's namespace */
	char *lease_name;       /* --leader-elect-name (JS_CONFIG_LEASE_NAME) */
	char *identity;         /* --leader-elect-identity; NULL = hostname_pid */
	int lease_duration_ms;  /* 15000 */
	int renew_deadline_ms;  /* 10000 */
	int retry_period_ms;    /* 2000 */

	char *metrics_addr;     /* --metrics-bind-address (":8443"; "0" disables) */
	/* /metrics over HTTPS behind TokenReview and SubjectAccessReview (SPEC
	 * §12.7, ctrl/authz.h); --metrics-secure=false serves plain HTTP with no
	 * authentication (kubebuilder's flag; for local development). */
	bool metrics_secure;    /* --metrics-secure (true) */
	/* metrics.certDir, --metrics-cert-dir: tls.crt/tls.key of the metrics
	 * server; NULL = JS_CONFIG_METRICS_CERT_DIR when internal certificate
	 * management is explicitly off and that dir holds a pair, else a
	 * self-signed certificate made at start (upstream's rule, SPEC §12.2). */
	char *metrics_cert_dir;
	char *health_addr;      /* --health-probe-bind-address (":8081"; "0"/"" disables) */
	char *readyz_path;      /* health.readinessEndpointName ("readyz") */
	char *healthz_path;     /* health.livenessEndpointName ("healthz") */

	struct js_gates gates;  /* featureGates, --feature-gates */
	/* Set when featureGates or --feature-gates named a deprecated gate
	 * alias (api/gates.h js_gates_deprecated): the warning main logs once
	 * at start. Static text, NULL when none. */
	const char *gate_warning;

	bool webhooks;          /* --enable-webhooks (true) */
	int webhook_port;       /* webhook.port, --webhook-port (9443) */
	char *webhook_host;     /* webhook.host, --webhook-host */
	char *webhook_cert_dir; /* webhook.certDir, --webhook-cert-dir (JS_CONFIG_CERT_DIR) */

	/* Internal certificate management (SPEC §12.5, ctrl/rotator.h). */
	char *cert_management;  /* --cert-management "internal"|"none", internalCertManagement.enable;
				 * NULL = internal unless the cert dir already holds tls.crt and tls.key */
	char *cert_namespace;   /* --cert-namespace; NULL = the service account's namespace, else jobset-system */
	char *service_name;     /* internalCertManagement.webhookServiceName, --webhook-service-name */
	char *secret_name;      /* internalCertManagement.webhookSecretName, --webhook-secret-name */
	char *mutating_name;    /* --mutating-webhook-configuration ("" = none) */
	char *validating_name;  /* --validating-webhook-configuration ("" = none) */
	char *cert_extra_sans;  /* --cert-extra-sans "127.0.0.1,host.example" */
	int cert_interval_ms;   /* --cert-check-interval (1m) */
	int fold_window_ms;     /* --reconcile-fold-window (JS_CONFIG_FOLD_WINDOW_MS; 0..10 s) */
	/* --exclusive-placement gates|webhook (gates): how followers of an
	 * exclusive Job wait for their leader (api/jobset.h js_placement_mode,
	 * docs/differences.md). */
	enum js_placement_mode placement;
	/* --restart-cleanup direct|foreground (direct): how the Jobs of a
	 * previous restart attempt go (core/reconcile.h cleanup_direct,
	 * docs/differences.md "Restart without the garbage collector");
	 * foreground is upstream's. */
	bool restart_foreground;
	/* --progress-watcher-image (JS_WEBHOOK_WATCHER_IMAGE when NULL): the
	 * image of the watcher sidecar the pod webhook gives a pod with a
	 * progress deadline (gate ProgressDeadline, webhook/watcher.c). */
	char *watcher_image;

	/* TLS of the webhook and metrics servers (SPEC §12.2, §12.6): upstream's
	 * Configuration `tls` section, also as flags (k8s component names). */
	char *tls_min_version;  /* tls.minVersion, --tls-min-version: NULL/"" = VersionTLS12, or VersionTLS13 */
	char *tls_cipher_suites; /* tls.cipherSuites (joined with ','), --tls-cipher-suites A,B: IANA names */

	int verbosity;          /* -v, --zap-log-level N (0); debug = 4 */
	bool help, version;
};

/** Fill `cfg` with the defaults above (previous contents are not freed). */
void js_config_defaults(struct js_config *cfg);

/** Free the strings of `cfg` and zero it. NULL is a no-op. */
void js_config_done(struct js_config *cfg);

/**
 * Parse argv (argv[0] is the program) into `cfg`, which must hold defaults:
 * first find --config and apply that file, then apply every flag. Flags take
 * "--name=value" or "--name value"; booleans also bare "--name". Returns 0,
 * or JS_EINVALID / -errno with *reterr_msg (caller frees) naming the flag,
 * field or file. Feature gates (file `featureGates`, --feature-gates) are
 * read by api/gates.h; InPlaceRestart=true turns on the pod cache and the
 * in-place bookkeeping (SPEC §11.16, ctrl/inplace.c).
 */
JS_WARN_UNUSED int js_config_parse_args(struct js_config *cfg, int argc, char *const *argv, char **reterr_msg);

/**
 * Apply a Configuration document (YAML or JSON text, `len` bytes, named
 * `file` in messages) on top of `cfg`. Strict: unknown fields, wrong types,
 * a wrong apiVersion/kind, unknown or locked feature gates and invalid TLS
 * settings (a minVersion other than VersionTLS12/13, cipherSuites with
 * VersionTLS13; cipher names are checked by main against OpenSSL) are
 * errors. Returns 0 or JS_EINVALID with *reterr_msg.
 */
JS_WARN_UNUSED int js_config_apply_file(struct js_config *cfg, const char *file, const char *data, size_t len,
					char **reterr_msg);

/**
 * Parse a Go duration ("15s", "1m30s", "500ms", "1h", "0") into
 * milliseconds. Returns 0 or JS_EINVALID (also for negative or > 24 h).
 */
JS_WARN_UNUSED int js_config_parse_duration_ms(const char *s, int64_t *ret_ms);

/**
 * Split a listen address ":8080", "127.0.0.1:8080", "[::1]:8080" or
 * "localhost:0". "0" and "" mean disabled: *ret_disabled = true. Otherwise
 * *ret_host (caller frees; NULL = all interfaces) and *ret_port (0..65535).
 * Returns 0 or JS_EINVALID.
 */
JS_WARN_UNUSED int js_config_parse_addr(const char *s, bool *ret_disabled, char **ret_host, int *ret_port);

/** The usage text (static). */
const char *js_config_usage(void);

#endif
