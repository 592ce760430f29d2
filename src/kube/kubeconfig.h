/*
 * kubeconfig.h - where the API server is and who we are: kubeconfig files
 * (clusters, users, contexts) and the in-cluster service-account setup,
 * resolved into one flat `struct js_kubeconfig`.
 *
 * Kubeconfig rules follow client-go's loader: KUBECONFIG is a colon list in
 * which the first file defining a cluster/user/context name wins, and
 * current-context comes from the first file that sets it; relative paths are
 * relative to the file that wrote them; `*-data` fields are base64 and win
 * over the matching file fields; `insecure-skip-tls-verify` together with a
 * CA is an error. Certificate material is loaded into memory (curl takes it
 * as blobs; no temp files). Only reads files; never runs the exec plugin
 * (that is execcred.h). Not thread-safe; the result is plain data.
 */
#ifndef JS_KUBECONFIG_H
#define JS_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "base/common.h"
#include "base/diag.h"

/** users[].user.exec: a client-go credential plugin. */
struct js_kubeconfig_exec {
	char *command;
	char **args;    /* nargs entries */
	size_t nargs;
	char **env;     /* "NAME=value", nenv entries */
	size_t nenv;
	char *api_version; /* client.authentication.k8s.io/v1 or v1beta1 */
	bool provide_cluster_info;
	bool interactive; /* interactiveMode Always (IfAvailable/Never are false: we never have a tty) */
};

/** A resolved configuration. All strings and blobs are owned (free with
 * js_kubeconfig_done); absent values are NULL. */
struct js_kubeconfig {
	char *context;         /* context name used ("" for in-cluster) */
	char *server;          /* https://host:port, no trailing slash */
	char *tls_server_name; /* override of the name checked in the server cert */
	char *proxy_url;
	bool insecure;         /* insecure-skip-tls-verify */
	char *ca;   size_t ca_len;   /* PEM bytes */
	char *cert; size_t cert_len; /* client certificate, PEM */
	char *key;  size_t key_len;  /* client key, PEM */
	char *token;      /* bearer token */
	char *token_file; /* re-read periodically by the client (rotation) */
	char *username, *password; /* basic auth (rare) */
	char *namespace;  /* context namespace, or in-cluster namespace; NULL = unset */
	struct js_kubeconfig_exec *exec; /* NULL when no plugin */
};

/** Free the contents of `kc` and zero it. NULL is a no-op. */
void js_kubeconfig_done(struct js_kubeconfig *kc);

/**
 * Parse one kubeconfig document (YAML or JSON, `len` bytes) named `file` and
 * resolve `context` (NULL = current-context). Relative file paths are taken
 * relative to `dir` (NULL = the current directory). Returns 0 and fills
 * `ret`, or JS_EINVALID / -errno (a file it names cannot be read) with a
 * diagnostic appended to `diag`; `ret` is untouched on failure.
 */
JS_WARN_UNUSED int js_kubeconfig_parse(const char *file, const char *data, size_t len, const char *dir,
				       const char *context, struct js_diag *diag, struct js_kubeconfig *ret);

/**
 * Load and merge the files of `paths` (a colon list; NULL = $KUBECONFIG, or
 * ~/.kube/config when that is unset or empty) and resolve `context` (NULL =
 * current-context). Missing files in a list are skipped, as kubectl does,
 * but at least one must exist. Errors as js_kubeconfig_parse.
 */
JS_WARN_UNUSED int js_kubeconfig_load(const char *paths, const char *context, struct js_diag *diag,
				      struct js_kubeconfig *ret);

/**
 * The in-cluster configuration from $KUBERNETES_SERVICE_HOST and
 * $KUBERNETES_SERVICE_PORT and the service-account files under `sa_dir`
 * (NULL = /var/run/secrets/kubernetes.io/serviceaccount): token (kept as
 * token_file for rotation), ca.crt and namespace. An IPv6 host is bracketed.
 * Returns 0, JS_ENOTFOUND when not running in a cluster (variables unset),
 * or -errno when a file cannot be read.
 */
JS_WARN_UNUSED int js_kubeconfig_in_cluster(const char *sa_dir, struct js_kubeconfig *ret);

#endif
