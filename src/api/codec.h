/*
 * codec.h - JSON <-> struct js_jobset.
 *
 * One table-driven codec (api/codec.c) walks a field-descriptor table per API
 * type for decode, encode and free, instead of hand-written code per type.
 * Decoding is strict by default: an unknown JobSet field is an error with a
 * "did you mean" suggestion, a value of the wrong JSON type is an error naming
 * the expected type, an enum value outside its set lists the valid ones, and a
 * missing required field is reported. Every problem found is reported, with
 * its field path; positions are attached by the caller (base/load.h maps paths
 * to file:line:col). Pure: no I/O.
 */
#ifndef JS_CODEC_H
#define JS_CODEC_H

#include <jansson.h>

#include "api/jobset.h"
#include "base/common.h"
#include "base/diag.h"

/** Decoding modes. */
enum js_codec_mode {
	JS_CODEC_STRICT,  /* user input: unknown fields are errors */
	JS_CODEC_LENIENT, /* API server objects: unknown fields are ignored */
};

/**
 * Decode a JobSet from a JSON object (as produced by base/load.h or read from
 * the API server). `root` is borrowed; embedded templates are deep-copied.
 *
 * Returns 0 and sets *ret_js (caller frees with js_jobset_free) when no
 * problem was found. Returns JS_EINVALID, leaves *ret_js untouched and appends
 * one entry per problem to `diag` otherwise.
 */
JS_WARN_UNUSED int js_codec_decode_jobset(const json_t *root, enum js_codec_mode mode,
					  struct js_diag *diag, struct js_jobset **ret_js);

/**
 * Encode a JobSet as JSON, omitting absent fields (and the fields Kubernetes
 * marks omitempty). Returns a new reference; never NULL.
 */
json_t *js_codec_encode_jobset(const struct js_jobset *js);

/**
 * Encode only the status (the body of a status-subresource write, under
 * "status"). Returns a new reference; never NULL.
 */
json_t *js_codec_encode_status(const struct js_status *st);

/** Human name of a JSON value's type ("string", "integer", ...). */
const char *js_codec_json_type_name(const json_t *v);

/**
 * The OpenAPI v3 schema of the JobSet type as the codec's descriptor tables
 * describe it: types, formats, properties, enums and required fields.
 * Embedded Kubernetes objects (the Job template, PVC templates) and the
 * unmodelled part of ObjectMeta appear as objects with
 * x-kubernetes-preserve-unknown-fields; constraints the tables do not carry
 * (minimums, list limits, defaults, CEL rules) are for the caller to add
 * (tools/crdgen). Returns a new reference; never NULL.
 */
json_t *js_codec_openapi_schema(void);

#endif
