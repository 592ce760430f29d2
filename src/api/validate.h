/*
 * validate.h - validation of a JobSet on create and on update (SPEC §5).
 *
 * Covers the rules the API server enforces from the CRD schema (§5.2), the
 * validating webhook `vjobset.kb.io` (§5.3, §5.4), and what upstream misses
 * but would make child Job creation fail later: the embedded Job template is
 * checked as the Job API would check it; every generated Job name, pod name
 * and hostname is checked against 63 characters with the longest computed
 * name shown; dependsOn on itself or a later ReplicatedJob, exclusive
 * placement with NonIndexed Jobs, and invalid failure-message patterns are
 * rejected. Every error is appended to a js_diag with its field path; all are
 * reported, not only the first. Pure, apart from the optional PVC lookup
 * callback.
 */
#ifndef JS_VALIDATE_H
#define JS_VALIDATE_H

#include <jansson.h>
#include <stdbool.h>

#include "api/jobset.h"
#include "base/diag.h"

/** Result of looking up an existing PVC for SPEC §5.3.3 P6-P8. */
enum js_pvc_lookup {
	JS_PVC_NOT_FOUND,
	JS_PVC_FOUND,
	JS_PVC_ERROR,
};

/**
 * Looks up PVC `name` in `namespace_`. On JS_PVC_FOUND sets *ret_spec to a
 * new reference to its spec; on JS_PVC_ERROR sets *ret_err to a malloc'd
 * message. NULL callback = PVCs are never found (the CLI case).
 */
typedef enum js_pvc_lookup (*js_pvc_lookup_fn)(void *ctx, const char *namespace_, const char *name,
					       json_t **ret_spec, char **ret_err);

struct js_validate_opts {
	struct js_gates gates;
	js_pvc_lookup_fn pvc_lookup; /* may be NULL */
	void *pvc_ctx;
	/* Also run the checks upstream does not make (embedded Job template,
	 * hostnames, self/forward dependsOn, exclusive placement with NonIndexed,
	 * message patterns). On by default in the CLI and our webhook. */
	bool strict;
};

/**
 * Validate a (defaulted) JobSet for creation. Appends one entry per problem
 * to `diag`; a JobSet over a size bound (js_validate_limits) gets only
 * those errors. Returns 0 when valid, JS_EINVALID otherwise.
 */
int js_validate_create(const struct js_jobset *js, const struct js_validate_opts *opts, struct js_diag *diag);

/**
 * The size bounds of base/limits.h (docs/differences.md, "Size limits";
 * issue 22): child Jobs per JobSet (replicas summed), ReplicatedJobs,
 * failure-policy rules, the entries of a rule's and of the success
 * policy's lists, the message patterns of all rules and the length of
 * each. Appends one entry per bound exceeded to `diag`, naming
 * the field path, the bound and the value. O(size of the object), so it is
 * safe on any schema-valid JobSet. js_validate_create runs it first; the
 * core runs it on JobSets that never met the webhook. Returns 0 when
 * within every bound, JS_EINVALID otherwise.
 */
int js_validate_limits(const struct js_jobset *js, struct js_diag *diag);

/**
 * Validate an update from `old` to `js` (SPEC §5.4 U1-U4 and the CEL
 * transition rules S2-S7). Returns 0 when allowed, JS_EINVALID otherwise.
 */
int js_validate_update(const struct js_jobset *old, const struct js_jobset *js,
		       const struct js_validate_opts *opts, struct js_diag *diag);

/** Name predicates of the Kubernetes validation library (SPEC §5.1). Each
 * returns true when `s` is valid. */
bool js_is_dns1035_label(const char *s);
bool js_is_dns1123_label(const char *s);
bool js_is_dns1123_subdomain(const char *s);
bool js_is_label_value(const char *s);
bool js_is_qualified_name(const char *s);

#endif
