/*
 * scalar.h - YAML 1.1 scalar resolution as kubectl applies it.
 *
 * kubectl reads YAML with a YAML 1.1 library and converts the result to JSON,
 * so an unquoted `yes` is the boolean true and `010` is the integer 8. The
 * loader and the emitter share these rules: the loader to give the same
 * values kubectl would send, the emitter to quote any string that would
 * otherwise read back as something else. Pure.
 */
#ifndef JS_SCALAR_H
#define JS_SCALAR_H

#include <jansson.h>
#include <stdbool.h>

#include "base/common.h"

/**
 * Resolve one scalar. `tag` is the explicit tag or NULL; `quoted` is true for
 * any non-plain style. Returns 0 and a new reference in *ret, or JS_EINVALID
 * when an explicit tag (!!int, !!bool, ...) does not fit the text.
 */
JS_WARN_UNUSED int js_scalar_resolve(const char *text, const char *tag, bool quoted, json_t **ret);

/**
 * Resolve a mapping key to the string kubectl would use (`on:` becomes
 * "true", `1:` stays "1"). Returns 0 and a malloc'd string in *ret (caller
 * frees), or JS_EINVALID for an unsupported tag.
 */
JS_WARN_UNUSED int js_scalar_key(const char *text, const char *tag, bool quoted, char **ret);

/** True when `s`, written as a plain scalar, would read back as this string. */
bool js_scalar_plain_is_string(const char *s);

#endif
