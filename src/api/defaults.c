/*
 * defaults.c - CRD structural defaults and the mutating webhook (SPEC §4).
 *
 * Every step fills only what is absent, which is what makes defaulting
 * idempotent (unlike upstream #926).
 */
#include "api/defaults.h"

#include <stdio.h>
#include <stdlib.h>

#include "api/template.h"
#include "base/common.h"
#include "base/json.h"

bool js_default_crd(struct js_jobset *js)
{
	bool changed = false;
	struct js_spec *s = &js->spec;
	for (size_t i = 0; i < s->n_replicated_jobs; i++) {
		struct js_rjob *r = &s->replicated_jobs[i];
		if (!r->group_name) { /* D1 */
			r->group_name = js_xstrdup("default");
			changed = true;
		}
		if (!r->has_replicas) { /* D2: an explicit 0 stays 0 */
			r->has_replicas = true;
			r->replicas = 1;
			changed = true;
		}
	}
	if (s->failure_policy && !s->failure_policy->has_restart_strategy) { /* D3 */
		s->failure_policy->has_restart_strategy = true;
		s->failure_policy->restart_strategy = JS_RESTART_STRATEGY_RECREATE;
		changed = true;
	}
	for (size_t i = 0; i < s->n_volume_claim_policies; i++) { /* D4 */
		struct js_retention_policy *rp = s->volume_claim_policies[i].retention_policy;
		if (rp && !rp->has_when_deleted) {
			rp->has_when_deleted = true;
			rp->when_deleted = JS_WHEN_DELETED_DELETE;
			changed = true;
		}
	}
	return changed;
}

/* True when template.<path>.<field> is not a string, or (`empty_too`) is
 * the empty string. */
static bool missing(const json_t *tmpl, const char *path, const char *field, bool empty_too)
{
	const char *cur = json_string_value(json_object_get(js_json_path(tmpl, path), field));
	return !cur || (empty_too && !cur[0]);
}

/* M3, M4: completionMode and restartPolicy of a template, when absent. The
 * template is the user's JSON, kept verbatim; only missing fields are added.
 * Copies of a JobSet share their templates (js_jobset_copy), so the template
 * is replaced by a private copy before anything is added to it. */
static bool default_template(json_t **slot)
{
	/* M3: a null completionMode counts as absent, as in Go; an empty one
	 * is left for validation to reject. */
	bool mode = missing(*slot, "spec", "completionMode", false);
	bool restart = missing(*slot, "spec.template.spec", "restartPolicy", true);
	if (!*slot || (!mode && !restart))
		return false;
	json_t *t = json_deep_copy(*slot);
	json_decref(*slot);
	*slot = t;
	if (mode)
		json_object_set_new(js_json_path_make(t, "spec"), "completionMode", json_string("Indexed"));
	if (restart)
		json_object_set_new(js_json_path_make(t, "spec.template.spec"), "restartPolicy", json_string("OnFailure"));
	return true;
}

bool js_default_jobset(struct js_jobset *js)
{
	bool changed = js_default_crd(js);
	struct js_spec *s = &js->spec;
	if (!s->success_policy) { /* M1 */
		s->success_policy = js_xcalloc(1, sizeof(*s->success_policy));
		s->success_policy->has_operator = true;
		s->success_policy->operator_ = JS_SUCCESS_OP_ALL;
		changed = true;
	}
	if (!s->startup_policy) { /* M2 */
		s->startup_policy = js_xcalloc(1, sizeof(*s->startup_policy));
		s->startup_policy->has_order = true;
		s->startup_policy->order = JS_STARTUP_ORDER_ANY;
		changed = true;
	}
	for (size_t i = 0; i < s->n_replicated_jobs; i++)
		changed |= default_template(&s->replicated_jobs[i].template_); /* M3, M4 */
	if (!s->network) { /* M5 */
		s->network = js_xcalloc(1, sizeof(*s->network));
		changed = true;
	}
	if (!s->network->has_enable_dns_hostnames) { /* M6 */
		s->network->has_enable_dns_hostnames = true;
		s->network->enable_dns_hostnames = true;
		changed = true;
	}
	if (!s->network->has_publish_not_ready_addresses) { /* M7 */
		s->network->has_publish_not_ready_addresses = true;
		s->network->publish_not_ready_addresses = true;
		changed = true;
	}
	if (s->failure_policy) { /* M8 */
		for (size_t i = 0; i < s->failure_policy->n_rules; i++) {
			struct js_fp_rule *r = &s->failure_policy->rules[i];
			if (r->name && r->name[0])
				continue;
			char name[64];
			snprintf(name, sizeof(name), "failurePolicyRule%zu", i);
			free(r->name);
			r->name = js_xstrdup(name);
			changed = true;
		}
	}
	for (size_t i = 0; i < s->n_volume_claim_policies; i++) { /* M9 */
		struct js_vcp *v = &s->volume_claim_policies[i];
		if (!v->retention_policy) {
			v->retention_policy = js_xcalloc(1, sizeof(*v->retention_policy));
			v->retention_policy->has_when_deleted = true;
			v->retention_policy->when_deleted = JS_WHEN_DELETED_DELETE;
			changed = true;
		}
	}
	if (changed && !js->has_spec)
		js->has_spec = true;
	return changed;
}
