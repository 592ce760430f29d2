/*
 * owner.h - which JobSet an object belongs to (SPEC §11.1): the controller
 * ownerReference of kind JobSet, apiVersion jobset.x-k8s.io/v1alpha2, and the
 * "namespace/name" work-queue key built from it. What the informer event
 * handlers call to map a Job or Service event to its JobSet, and what the
 * "jobset-owner" index of Jobs is built from.
 *
 * Pure; objects are borrowed.
 */
#ifndef JS_OWNER_H
#define JS_OWNER_H

#include <jansson.h>

#include "base/common.h"

/** uid of the controller ownerReference of `obj` when it is a JobSet of
 * jobset.x-k8s.io/v1alpha2 (js_render_jobset_owner, api/render.h), or
 * NULL. Borrowed. */
const char *js_owner_jobset_uid(const json_t *obj);

/** Work-queue key "<obj namespace>/<owner name>" of the owning JobSet, or
 * NULL when `obj` has none. Caller frees. */
char *js_owner_jobset_key(const json_t *obj);

/** Key "<obj namespace>/<jobset-name label>" of the JobSet `obj` is
 * labelled with (jobset.sigs.k8s.io/jobset-name), or NULL when it has no
 * such label. Caller frees. */
char *js_owner_label_key(const json_t *obj);

/** js_owner_label_key of `obj` when it is labelled with a JobSet name but
 * not controlled by a JobSet of that name (no controller ownerReference,
 * controller: false, or another JobSet's): a Job in the way of the one of
 * that name the JobSet would create (tests/chaos "job-orphaned"); NULL
 * otherwise, so the JobSet's own Jobs are not indexed twice. Caller
 * frees. */
char *js_owner_unowned_key(const json_t *obj);

/** Key "<namespace>/<name>" of `obj` itself (a JobSet), or NULL when it has
 * no name. Caller frees. */
char *js_owner_object_key(const json_t *obj);

/** Split "ns/name" into *ret_ns and *ret_name (caller frees both).
 * Returns 0 or JS_EINVALID. */
JS_WARN_UNUSED int js_owner_split_key(const char *key, char **ret_ns, char **ret_name);

#endif
