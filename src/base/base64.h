/*
 * base64.h - standard base64 (RFC 4648 section 4) decoding, as Kubernetes
 * carries binary data in JSON: Secret data, ConfigMap binaryData,
 * kubeconfig certificate data. Pure; thread-safe.
 */
#ifndef JS_BASE64_H
#define JS_BASE64_H

#include <stddef.h>

#include "base/common.h"

/**
 * Decode `n` bytes of standard base64 (padding optional, ASCII whitespace
 * skipped, as Go's decoder accepts kubeconfig data). Returns 0 and a
 * malloc'd buffer in *ret (caller frees; NUL-terminated after its *ret_len
 * bytes, which may themselves hold NULs), or JS_EINVALID on a character
 * outside the alphabet or data after padding.
 */
JS_WARN_UNUSED int js_base64_decode(const char *in, size_t n, char **ret, size_t *ret_len);

#endif
