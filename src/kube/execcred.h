/*
 * execcred.h - client-go credential plugins ("users[].user.exec"): run the
 * plugin and parse the ExecCredential it prints.
 *
 * The plugin is spawned with an argv array (never a shell), its extra
 * environment only in the child, KUBERNETES_EXEC_INFO set to the
 * ExecCredential request (with the cluster when provideClusterInfo), stdin
 * on /dev/null unless interactive, and its stdout read up to 1 MiB. Blocking;
 * call it from a worker thread, not an event loop. The client caches the
 * result until its expiry and runs the plugin again after a 401.
 */
#ifndef JS_EXECCRED_H
#define JS_EXECCRED_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "kube/kubeconfig.h"

/** What a plugin returned. Owned strings; free with js_execcred_done. */
struct js_execcred {
	char *token;                  /* bearer token, or NULL */
	char *cert; size_t cert_len;  /* client certificate PEM, or NULL */
	char *key;  size_t key_len;   /* client key PEM, or NULL */
	int64_t expires_s;            /* expirationTimestamp, epoch seconds; 0 = never */
};

void js_execcred_done(struct js_execcred *c);

/**
 * Parse plugin output (`len` bytes of JSON) for plugin apiVersion
 * `api_version`. Returns 0 and fills `ret`, or JS_EINVALID when it is not an
 * ExecCredential of that version or carries neither a token nor a cert/key
 * pair (message in `why`, when not NULL, at most `why_len` bytes).
 */
JS_WARN_UNUSED int js_execcred_parse(const char *out, size_t len, const char *api_version, struct js_execcred *ret,
				     char *why, size_t why_len);

/**
 * Run the plugin of `kc->exec` and parse its output. `timeout_ms` bounds the
 * run (the plugin is killed past it). Returns 0, -errno when it cannot be
 * started, -ETIMEDOUT, JS_EINVALID on a non-zero exit or bad output (reason
 * in `why`).
 */
JS_WARN_UNUSED int js_execcred_run(const struct js_kubeconfig *kc, int timeout_ms, struct js_execcred *ret,
				   char *why, size_t why_len);

#endif
