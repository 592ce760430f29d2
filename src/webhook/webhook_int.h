/*
 * webhook_int.h - for the files of src/webhook/ only: the admission handlers
 * behind js_webhook_review(), and the serving certificate pair (tls.c).
 *
 * Each admission handler reads a decoded request and fills a response; none
 * does I/O except through cfg->lookups. Thread-safe. The tls.c functions
 * touch only what they are given; the server serialises its own use.
 */
#ifndef JS_WEBHOOK_INT_H
#define JS_WEBHOOK_INT_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include "webhook/admission.h"
#include "webhook/webhook.h"

/* ---- Admission handlers ---- */

/** mjobset.kb.io: defaulting on CREATE, as a JSON patch (SPEC §4.2). */
void js__jobset_admit_mutate(const struct js_webhook_admit_cfg *cfg, const struct js_admission_req *req,
			     struct js_admission_resp *resp);

/** vjobset.kb.io: js_validate_create on CREATE, js_validate_update on
 * UPDATE (SPEC §5.3, §5.4). */
void js__jobset_admit_validate(const struct js_webhook_admit_cfg *cfg, const struct js_admission_req *req,
			       struct js_admission_resp *resp);

/** mpod.kb.io: priority label and exclusive-placement affinity (SPEC §9.2). */
void js__pod_admit_mutate(const struct js_webhook_admit_cfg *cfg, const struct js_admission_req *req,
			  struct js_admission_resp *resp);

/* Hang detection (gate ProgressDeadline, api/heartbeat.h): give `pod` (a
 * copy the mutating webhook edits) its heartbeat volume, mounts, env, the
 * watcher sidecar and the label JS_LABEL_PROGRESS, when the gate is on and
 * the pod carries a valid JS_ANN_PROGRESS_DEADLINE. Returns 0 (also when
 * nothing was to be done), or JS_EINVALID with *ret_err (malloc'd) when
 * the pod already uses a reserved name: the pod must then be refused, as
 * its workload would beat into a volume of its own that nobody watches.
 * watcher.c. */
int js__watcher_inject(const struct js_webhook_admit_cfg *cfg, json_t *pod, char **ret_err);

/** vpod.kb.io: followers wait for their scheduled leader (SPEC §9.3). */
void js__pod_admit_validate(const struct js_webhook_admit_cfg *cfg, const struct js_admission_req *req,
			    struct js_admission_resp *resp);

/* ---- The serving certificate pair (tls.c) ---- */

/** What a file looked like when last loaded, to notice a change cheaply. */
struct js__tls_file_id {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

/** A loaded pair: the PEM text (NUL-terminated, to tell a touched file from
 * a changed one), the files' ids, and the OpenSSL server context made from
 * it. All owned; js__tls_pair_done frees them. */
struct js__tls_pair {
	SSL_CTX *ctx;
	char *cert_pem, *key_pem;
	struct js__tls_file_id cert_id, key_id;
};

/** The TLS settings of a server (copied from js_webhook_opts). */
struct js__tls_opts {
	enum js_webhook_tls_min min;
	char *ciphers; /* OpenSSL cipher list for TLS 1.2, or NULL for OpenSSL's */
};

/** stat() `path` into *ret. Returns 0 or -errno. */
JS_WARN_UNUSED int js__tls_stat(const char *path, struct js__tls_file_id *ret);

/** True when both ids describe the same file contents as far as stat()
 * can tell (device, inode, size, modification time). */
bool js__tls_same(const struct js__tls_file_id *a, const struct js__tls_file_id *b);

/**
 * Read `cert_file` (PEM certificate, a chain allowed after the leaf) and
 * `key_file` (PEM private key, unencrypted), each at most
 * JS_LIMIT_WEBHOOK_PEM bytes, and build a server context for them with
 * `opts` (NULL: TLS 1.2+, OpenSSL's ciphers). Returns 0 and fills *ret (free
 * with js__tls_pair_done); -errno when a file cannot be read; JS_ETOOLARGE
 * past the PEM limit; JS_EINVALID when a file is empty (half written), does
 * not parse, the key does not match the certificate, or OpenSSL refuses the
 * cipher list. *ret is untouched on failure.
 */
JS_WARN_UNUSED int js__tls_load(const char *cert_file, const char *key_file, const struct js__tls_opts *opts,
				struct js__tls_pair *ret);

/** The same from PEM text in memory (copied into *ret; the file ids stay
 * zero, so nothing is ever reloaded). Errors as js__tls_load, without the
 * file ones. */
JS_WARN_UNUSED int js__tls_load_pem(const char *cert_pem, const char *key_pem, const struct js__tls_opts *opts,
				    struct js__tls_pair *ret);

/** True when both pairs hold the same PEM text. */
bool js__tls_same_pem(const struct js__tls_pair *a, const struct js__tls_pair *b);

/** Free what `p` owns and zero it. NULL is a no-op. */
void js__tls_pair_done(struct js__tls_pair *p);

#endif
