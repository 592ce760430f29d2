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

/** The keys of the JobSets `obj` (a Job) stands in the way of without
 * being their child: the JobSet its jobset.sigs.k8s.io/jobset-name label
 * names, and the one the same label of its pod template names (which
 * cannot be edited once the Job ran, so a relabelled orphan still blocks
 * the JobSet it was made for; CI seed 993656309, dep-27), each once and
 * only when the controller ownerReference does not name that JobSet: a Job
 * in the way of the one of that name the JobSet would create (tests/chaos
 * "job-orphaned"), while the JobSet's own Jobs are not indexed twice.
 * Stores 0 to 2 keys in keys[] and returns how many; the caller frees
 * each. */
size_t js_owner_unowned_keys(const json_t *obj, char *keys[2]);

/** Key "<namespace>/<name>" of `obj` itself (a JobSet), or NULL when it has
 * no name. Caller frees. */
char *js_owner_object_key(const json_t *obj);

/** Split "ns/name" into *ret_ns and *ret_name (caller frees both).
 * Returns 0 or JS_EINVALID. */
JS_WARN_UNUSED int js_owner_split_key(const char *key, char **ret_ns, char **ret_name);

#endif
