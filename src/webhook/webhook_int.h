/*
 * webhook_int.h - the admission handlers behind js_webhook_review(), for the
 * files of src/webhook/ only. Each handler reads a decoded request and fills
 * a response; none does I/O except through cfg->lookups. Thread-safe.
 */
#ifndef JS_WEBHOOK_INT_H
#define JS_WEBHOOK_INT_H

#include "webhook/admission.h"
#include "webhook/webhook.h"

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

/** vpod.kb.io: followers wait for their scheduled leader (SPEC §9.3). */
void js__pod_admit_validate(const struct js_webhook_admit_cfg *cfg, const struct js_admission_req *req,
			    struct js_admission_resp *resp);

#endif
