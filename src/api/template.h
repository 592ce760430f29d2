/*
 * template.h - typed reads of the batch/v1 JobTemplateSpec fields JobSet
 * logic needs, straight from the verbatim template tree of a ReplicatedJob.
 *
 * The template stays JSON so nothing is lost; these accessors are the typed
 * view. Each returns whether the field is present with the right type.
 */
#ifndef JS_TEMPLATE_H
#define JS_TEMPLATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/jobset.h"

/** Job spec (template.spec) or NULL. Borrowed. */
json_t *js_tmpl_job_spec(const struct js_rjob *rjob);

/** Pod spec (template.spec.template.spec) or NULL. Borrowed. */
json_t *js_tmpl_pod_spec(const struct js_rjob *rjob);

/** Integer field of the Job spec ("completions", "parallelism",
 * "backoffLimit", ...). Returns true and sets *ret when present and an
 * integer within int32. */
bool js_tmpl_i32(const struct js_rjob *rjob, const char *field, int32_t *ret);

/** String field of the Job spec ("completionMode", "podReplacementPolicy"),
 * or NULL. Borrowed. */
const char *js_tmpl_str(const struct js_rjob *rjob, const char *field);

/** True when completionMode is Indexed (absent counts as NonIndexed, the
 * Job API default; the JobSet webhook defaults it to Indexed). */
bool js_tmpl_indexed(const struct js_rjob *rjob);

/** True when a container or init container of `pod_spec` mounts volume
 * `name` (SPEC §5.3.3 P5, §6.2 step 7). */
bool js_tmpl_pod_mounts(const json_t *pod_spec, const char *name);

/** Job template metadata annotation `key`, or NULL. Borrowed. */
const char *js_tmpl_annotation(const struct js_rjob *rjob, const char *key);

#endif
