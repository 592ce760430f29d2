/*
 * certs.h - the pure half of internal certificate management (SPEC §12.5,
 * upstream's cert rotator): generate a self-signed CA and a serving
 * certificate signed by it, decide whether a stored set is still good for
 * the names we serve, convert to and from a Secret's `data`, and put the CA
 * bundle into a webhook configuration object.
 *
 * Keys are ECDSA P-256 (OpenSSL EVP); certificates are X.509 v3, SHA-256.
 * The CA has common name `jobset-ca`, organisation `jobset`, basic
 * constraints CA:TRUE and key usage keyCertSign; the serving certificate has
 * the first DNS name as common name, every DNS name and IP address as a
 * subjectAltName, and extended key usage serverAuth. Both are valid for 10
 * years from `now - 1 h` (clock skew), and are replaced when they expire
 * within the look-ahead (90 days), as upstream's rotator does.
 *
 * Does no I/O: time comes in as `now` (Unix seconds). The I/O half (Secret,
 * cert dir, webhook configurations) is ctrl/rotator.h. Thread-safe: no
 * shared state.
 */
#ifndef JS_CERTS_H
#define JS_CERTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

/* Validity of generated certificates and the look-ahead before expiry at
 * which they are replaced (upstream cert-controller's defaults). */
#define JS_CERTS_VALIDITY_S (10ll * 365 * 24 * 3600)
#define JS_CERTS_LOOKAHEAD_S (90ll * 24 * 3600)

/** A CA and a serving certificate with their keys, PEM text, each owned
 * (js_certs_done). The Secret keys are `ca.crt`, `ca.key`, `tls.crt`,
 * `tls.key`. */
struct js_certs {
	char *ca_crt, *ca_key, *tls_crt, *tls_key;
};

/** The names a serving certificate must cover. */
struct js_certs_names {
	const char *const *dns; /* first is also the common name; at least one */
	size_t n_dns;
	const char *const *ips; /* IPv4 or IPv6 text, e.g. "127.0.0.1" */
	size_t n_ips;
};

/** Free the PEM strings and zero `c`. NULL is a no-op. */
void js_certs_done(struct js_certs *c);

/**
 * Generate a new CA and a serving certificate for `names`, valid from
 * `now - 3600` for JS_CERTS_VALIDITY_S. On 0, *ret (previous contents not
 * freed) holds four PEM strings. Returns JS_EINVALID (no DNS name, or an IP
 * that does not parse) or -EIO (OpenSSL failed).
 */
JS_WARN_UNUSED int js_certs_generate(const struct js_certs_names *names, int64_t now, struct js_certs *ret);

/**
 * Check that `c` can keep serving `names` at `now`: all four parse, each key
 * matches its certificate, the CA is a CA and signed the serving
 * certificate, every DNS name and IP is covered, and neither certificate
 * expires before `now + lookahead_s` nor starts after `now`. Returns 0, or
 * JS_EINVALID with *ret_reason (static text, may be NULL) naming the first
 * problem ("missing", "expiring", "names changed", ...).
 */
JS_WARN_UNUSED int js_certs_check(const struct js_certs *c, const struct js_certs_names *names, int64_t now,
				  int64_t lookahead_s, const char **ret_reason);

/**
 * Read a Secret's `data` (base64 values) into *ret. Keys that are absent or
 * not valid base64 are left NULL (js_certs_check reports them). Returns 0,
 * or JS_EINVALID when `secret` is not an object.
 */
JS_WARN_UNUSED int js_certs_from_secret(const json_t *secret, struct js_certs *ret);

/** The Secret `data` object for `c` (new reference): the four keys,
 * base64-encoded. NULL only when a PEM is missing. */
json_t *js_certs_secret_data(const struct js_certs *c);

/** Base64 of `n` bytes of `p` (malloc'd, caller frees). */
char *js_certs_b64(const void *p, size_t n);

/**
 * Put `ca_pem` (base64-encoded) as clientConfig.caBundle into every entry
 * of `config`'s `webhooks` list (a Mutating- or
 * ValidatingWebhookConfiguration). Returns 1 with *ret_updated (a deep copy
 * of `config` with the bundles set, resourceVersion kept, for an UPDATE),
 * 0 when every entry already carries exactly this bundle (no write needed;
 * *ret_updated untouched), or JS_EINVALID when `config` has no webhooks
 * list or an entry is not an object.
 */
JS_WARN_UNUSED int js_certs_inject_ca(const json_t *config, const char *ca_pem, json_t **ret_updated);

#endif
