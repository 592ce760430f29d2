/*
 * hash.h - message digests as lowercase hex text.
 *
 * One function today: SHA-1, which SPEC §6.3 uses for the job-key label
 * (the hex SHA-1 of "<namespace>/<jobName>", as upstream computes it). It
 * lives in base so that the pure layers above (api, core) include and link
 * no crypto library themselves; the digest comes from OpenSSL's libcrypto,
 * the product's one TLS library. Not for secrets: SHA-1 here is a name, not
 * a signature.
 *
 * Pure apart from libcrypto's allocation; thread-safe.
 */
#ifndef JS_HASH_H
#define JS_HASH_H

#include <stddef.h>

/* Hex digits of a SHA-1 digest (20 bytes), without the terminating NUL. */
#define JS_HASH_SHA1_HEX_LEN 40

/**
 * Write the SHA-1 digest of the `len` bytes at `data` (NULL only with
 * len == 0) to `ret` as 40 lowercase hex digits and a NUL.
 * Never fails: libcrypto can fail here only when it cannot allocate, which
 * is treated as out of memory (abort), like js_xmalloc (base/common.h).
 */
void js_hash_sha1_hex(const void *data, size_t len, char ret[JS_HASH_SHA1_HEX_LEN + 1]);

#endif
