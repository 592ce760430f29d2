/*
 * hash.c - SHA-1 hex through OpenSSL's EVP interface.
 */
#include "base/hash.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>

void js_hash_sha1_hex(const void *data, size_t len, char ret[JS_HASH_SHA1_HEX_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	/* EVP_Digest fails only when it cannot allocate its context: there is
	 * nobody to return to, as in js_xmalloc. A short digest would be a
	 * broken libcrypto; never hand out a half-written label. */
	if (!EVP_Digest(data ? data : "", len, md, &n, EVP_sha1(), NULL) || n != JS_HASH_SHA1_HEX_LEN / 2) {
		fprintf(stderr, "jobset: SHA-1 digest failed (out of memory?)\n");
		abort();
	}
	for (unsigned int i = 0; i < n; i++) {
		ret[2 * i] = hex[md[i] >> 4];
		ret[2 * i + 1] = hex[md[i] & 15];
	}
	ret[JS_HASH_SHA1_HEX_LEN] = '\0';
}
