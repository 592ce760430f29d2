/*
 * validate.c - JobSet validation on create and update (SPEC §5).
 *
 * The order of checks follows SPEC §5.3 so that messages come out in the
 * order upstream reports them. Messages are in our own words; field paths
 * and error types are Kubernetes'. Where upstream lets a mistake through
 * (`strict`), we say so next to the check.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "api/render.h"
#include "api/sched.h"
#include "api/quarantine.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/parse.h"
#include "base/limits.h"
#include "base/regex.h"

void js__diag_addv(struct js_diag *diag, enum js_diag_type type, const char *path, const json_t *val,
		   const char *fmt, va_list ap)
{
	char msg[JS_LIMIT_DIAG_MSG];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	char *vs = val ? json_dumps(val, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
	js_diag_add(diag, type, path, vs, "%s", msg);
	free(vs);
}

void js__vadd(struct js_vctx *v, enum js_diag_type type, const char *path, const json_t *val, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	js__diag_addv(v->diag, type, path, val, fmt, ap);
	va_end(ap);
}

static void vadd_str(struct js_vctx *v, enum js_diag_type type, const char *path, const char *val, const char *fmt,
		     ...) JS_PRINTF(5, 6);

static void vadd_str(struct js_vctx *v, enum js_diag_type type, const char *path, const char *val, const char *fmt,
		     ...)
{
	char msg[JS_LIMIT_DIAG_MSG];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *j = val ? json_string(val) : NULL;
	js__vadd(v, type, path, j, "%s", msg);
	json_decref(j);
}


static const char MSG_DNS1035[] =
	"must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending with "
	"a letter or digit";
static const char MSG_DNS1123_SUB[] =
	"must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', starting and ending with a "
	"letter or digit";

/* SPEC §5.1.1 shape check without the length part. */
static bool dns1035_shape(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || !(s[0] >= 'a' && s[0] <= 'z'))
		return false;
	char last = s[n - 1];
	if (!((last >= 'a' && last <= 'z') || (last >= '0' && last <= '9')))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

static int32_t replicas_of(const struct js_rjob *r)
{
	return r->has_replicas ? r->replicas : 1;
}

/* ObjectMeta rules the API server applies to every object (and so to the
 * Jobs and pods built from these templates): label keys are qualified names
 * and values label values; annotation keys are qualified names. */
static void check_labels(struct js_vctx *v, const char *meta_path, const json_t *labels, const json_t *annotations)
{
	const char *k;
	json_t *val;
	json_object_foreach(js_json_unconst(labels), k, val) {
		char *p = js_buf_format("%s.labels[%s]", meta_path, k);
		if (!js_is_qualified_name(k))
			vadd_str(v, JS_DIAG_INVALID, p, k,
				 "a label key is an optional DNS subdomain prefix and '/', then at most 63 letters, "
				 "digits, '-', '_' or '.', starting and ending with a letter or digit");
		else if (json_is_string(val) && !js_is_label_value(json_string_value(val)))
			vadd_str(v, JS_DIAG_INVALID, p, json_string_value(val),
				 "a label value is empty or at most 63 letters, digits, '-', '_' or '.', starting and "
				 "ending with a letter or digit");
		free(p);
	}
	json_object_foreach(js_json_unconst(annotations), k, val) {
		if (js_is_qualified_name(k))
			continue;
		char *p = js_buf_format("%s.annotations[%s]", meta_path, k);
		vadd_str(v, JS_DIAG_INVALID, p, k,
			 "an annotation key is an optional DNS subdomain prefix and '/', then at most 63 letters, "
			 "digits, '-', '_' or '.', starting and ending with a letter or digit");
		free(p);
	}
}

/* SPEC §5.2: what the API server checks from the CRD schema. */
static void check_schema(struct js_vctx *v)
{
	const struct js_jobset *js = v->js;
	const struct js_spec *s = &js->spec;

	if (!js->meta.name && !js->meta.generate_name)
		js__vadd(v, JS_DIAG_REQUIRED, "metadata.name", NULL, "a JobSet needs metadata.name or metadata.generateName");
	else if (js->meta.name && !js_is_dns1123_subdomain(js->meta.name))
		vadd_str(v, JS_DIAG_INVALID, "metadata.name", js->meta.name, "%s", MSG_DNS1123_SUB);

	if (js->meta.namespace_ && js->meta.namespace_[0] && !js_is_dns1123_label(js->meta.namespace_))
		vadd_str(v, JS_DIAG_INVALID, "metadata.namespace", js->meta.namespace_,
			 "a namespace is a DNS-1123 label: at most 63 lower-case letters, digits or '-', starting "
			 "and ending with a letter or digit");
	check_labels(v, "metadata", js->meta.labels, js->meta.annotations);
	/* Ours (docs/differences.md (e)): the attempt a restart request ends. */
	const json_t *req = json_object_get(js->meta.annotations, JS_ANN_RESTART_REQUEST);
	int64_t attempt;
	if (req && (!json_is_string(req) ||
		    js_parse_i64_in(json_string_value(req), strlen(json_string_value(req)), 0, INT32_MAX, &attempt) < 0))
		vadd_str(v, JS_DIAG_INVALID, "metadata.annotations[" JS_ANN_RESTART_REQUEST "]",
			 json_is_string(req) ? json_string_value(req) : "",
			 "a restart request names the attempt to end: the status.restarts seen, a whole number from 0");
	/* Ours (docs/node-quarantine.md): the rules of node quarantine. */
	(void)js_quarantine_validate(js, &v->opts->gates, v->diag);
	bool any_depends = false;
	for (size_t i = 0; i < s->n_replicated_jobs; i++) {
		const struct js_rjob *r = &s->replicated_jobs[i];
		any_depends |= r->has_depends_on;
		char *mp = js_buf_format("spec.replicatedJobs[%zu].template.metadata", i);
		check_labels(v, mp, js_json_path(r->template_, "metadata.labels"),
			     js_json_path(r->template_, "metadata.annotations"));
		free(mp);
		mp = js_buf_format("spec.replicatedJobs[%zu].template.spec.template.metadata", i);
		check_labels(v, mp, js_json_path(r->template_, "spec.template.metadata.labels"),
			     js_json_path(r->template_, "spec.template.metadata.annotations"));
		free(mp);
		char *p = js_buf_format("spec.replicatedJobs[%zu]", i);
		for (size_t j = 0; j < i; j++) {
			const char *a = s->replicated_jobs[j].name, *b = r->name;
			if (a && b && strcmp(a, b) == 0)
				vadd_str(v, JS_DIAG_DUPLICATE, p, r->name,
					 "ReplicatedJob names must be unique; spec.replicatedJobs[%zu] has the same name", j);
		}
		free(p);
		if (r->has_replicas && r->replicas < 0) {
			p = js_buf_format("spec.replicatedJobs[%zu].replicas", i);
			json_t *x = json_integer(r->replicas);
			js__vadd(v, JS_DIAG_INVALID, p, x, "must be 0 or more");
			json_decref(x);
			free(p);
		}
		if (r->n_depends_on > JS_LIMIT_DEPENDS_ON) {
			p = js_buf_format("spec.replicatedJobs[%zu].dependsOn", i);
			js__vadd(v, JS_DIAG_TOO_MANY, p, NULL, "has %zu entries; at most %d are allowed", r->n_depends_on,
				 JS_LIMIT_DEPENDS_ON);
			free(p);
		}
		for (size_t d = 0; d < r->n_depends_on; d++)
			for (size_t e = 0; e < d; e++)
				if (r->depends_on[d].name && r->depends_on[e].name &&
				    strcmp(r->depends_on[d].name, r->depends_on[e].name) == 0) {
					p = js_buf_format("spec.replicatedJobs[%zu].dependsOn[%zu].name", i, d);
					vadd_str(v, JS_DIAG_DUPLICATE, p, r->depends_on[d].name,
						 "each ReplicatedJob may be named once in dependsOn");
					free(p);
				}
	}
	if (any_depends && s->startup_policy && s->startup_policy->has_order &&
	    s->startup_policy->order == JS_STARTUP_ORDER_IN)
		js__vadd(v, JS_DIAG_INVALID, "spec", NULL,
			 "startupPolicy InOrder and dependsOn cannot be used together; express the order with "
			 "dependsOn alone");
	if (s->has_ttl_seconds_after_finished && s->ttl_seconds_after_finished < 0) {
		json_t *x = json_integer(s->ttl_seconds_after_finished);
		js__vadd(v, JS_DIAG_INVALID, "spec.ttlSecondsAfterFinished", x, "must be 0 or more seconds");
		json_decref(x);
	}
	if (s->has_active_deadline_seconds && s->active_deadline_seconds < 1) {
		/* KEP-1186 "API Changes": the CRD's minimum 1. */
		json_t *x = json_integer(s->active_deadline_seconds);
		js__vadd(v, JS_DIAG_INVALID, "spec.activeDeadlineSeconds", x, "must be 1 or more seconds");
		json_decref(x);
	}
	if (s->n_volume_claim_policies > JS_LIMIT_VCP)
		js__vadd(v, JS_DIAG_TOO_MANY, "spec.volumeClaimPolicies", NULL, "has %zu entries; at most %d are allowed",
			 s->n_volume_claim_policies, JS_LIMIT_VCP);
	for (size_t i = 0; i < s->n_volume_claim_policies; i++) {
		const json_t *ts = s->volume_claim_policies[i].templates;
		char *p = js_buf_format("spec.volumeClaimPolicies[%zu].templates", i);
		if (json_array_size(ts) > JS_LIMIT_VCP)
			js__vadd(v, JS_DIAG_TOO_MANY, p, NULL, "has %zu entries; at most %d are allowed", json_array_size(ts),
				 JS_LIMIT_VCP);
		size_t k;
		json_t *t;
		json_array_foreach(js_json_unconst(ts), k, t) {
			const char *ns = json_string_value(js_json_path(t, "metadata.namespace"));
			if (ns && ns[0]) {
				char *pp = js_buf_format("spec.volumeClaimPolicies[%zu].templates[%zu].metadata.namespace", i, k);
				vadd_str(v, JS_DIAG_INVALID, pp, ns,
					 "a claim template may not set a namespace; claims are made in the JobSet's "
					 "namespace");
				free(pp);
			}
		}
		free(p);
	}
}

static void check_managed_by(struct js_vctx *v, const char *mb)
{
	const char *p = "spec.managedBy";
	if (!mb[0]) {
		js__vadd(v, JS_DIAG_REQUIRED, p, NULL, "must name a controller as a domain-prefixed path, e.g. \"acme.io/foo\"");
		return;
	}
	const char *slash = strchr(mb, '/');
	if (!slash || slash == mb || !slash[1]) {
		vadd_str(v, JS_DIAG_INVALID, p, mb, "must be a domain-prefixed path, e.g. \"acme.io/foo\"");
	} else {
		char *host = js_xstrndup(mb, (size_t)(slash - mb));
		if (!js_is_dns1123_subdomain(host))
			vadd_str(v, JS_DIAG_INVALID, p, host, "the domain part %s", MSG_DNS1123_SUB);
		free(host);
		static const char ok[] = "/-._~%!$&'()*+,;=:";
		for (const char *c = slash + 1; *c; c++) {
			bool good = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
				    strchr(ok, *c);
			if (!good) {
				vadd_str(v, JS_DIAG_INVALID, p, slash + 1,
					 "the path part may hold only letters, digits and /-._~%%!$&'()*+,;=:");
				break;
			}
		}
	}
	if (strlen(mb) > 63)
		vadd_str(v, JS_DIAG_TOO_LONG, p, mb, "may be at most 63 bytes long, not %zu", strlen(mb));
}

/* V9/V10 and the hostname check: the longest names this JobSet generates. */
static void check_generated_names(struct js_vctx *v, size_t i)
{
	const struct js_rjob *r = &v->js->spec.replicated_jobs[i];
	/* Without a JobSet name there is nothing to build names from; the
	 * missing name is reported on its own. */
	if (!r->name || !v->name[0])
		return;
	char *p = js_buf_format("spec.replicatedJobs[%zu].name", i);
	int32_t n = replicas_of(r);
	char *job = js_buf_format("%s-%s-%" PRId32, v->name, r->name, n - 1);
	bool job_ok = dns1035_shape(job);
	if (!job_ok)
		vadd_str(v, JS_DIAG_INVALID, p, job,
			 "the child Job name built from the JobSet and ReplicatedJob names is not a DNS-1035 "
			 "label: use lower-case letters, digits and '-', starting with a letter");
	if (strlen(job) > 63)
		vadd_str(v, JS_DIAG_INVALID, p, job,
			 "JobSet name is too long: child Job names would be %zu characters, over the limit of 63 "
			 "(longest: %s)",
			 strlen(job), job);
	int32_t completions, parallelism;
	bool has_c = js_tmpl_i32(r, "completions", &completions);
	/* The Job API defaults completions to 1 when neither it nor parallelism
	 * is set; upstream checks only explicit completions. */
	if (!has_c && v->opts->strict && !js_tmpl_i32(r, "parallelism", &parallelism)) {
		completions = 1;
		has_c = true;
	}
	if (js_tmpl_indexed(r) && has_c) {
		char *pod = js_buf_format("%s-%" PRId32 "-abcde", job, completions - 1);
		/* A bad shape is reported once, above; here only the length. */
		if (job_ok && strlen(pod) > 63)
			vadd_str(v, JS_DIAG_INVALID, p, job,
				 "JobSet name is too long: pod names would be %zu characters, over the limit of 63 "
				 "(longest: %s, of which the hostname %.*s is %zu)",
				 strlen(pod), pod, (int)(strlen(pod) - 6), pod, strlen(pod) - 6);
		free(pod);
	}
	free(job);
	free(p);
}

static void check_rjobs(struct js_vctx *v)
{
	const struct js_spec *s = &v->js->spec;
	bool strict = v->opts->strict;
	bool inplace = v->opts->gates.in_place_restart && s->failure_policy && s->failure_policy->has_restart_strategy &&
		       s->failure_policy->restart_strategy == JS_RESTART_STRATEGY_IN_PLACE;
	for (size_t i = 0; i < s->n_replicated_jobs; i++) {
		const struct js_rjob *r = &s->replicated_jobs[i];
		const char *name = r->name ? r->name : "";
		int32_t par = 1;
		(void)js_tmpl_i32(r, "parallelism", &par);
		if ((int64_t)par * (int64_t)replicas_of(r) > INT32_MAX) {
			char *p = js_buf_format("spec.replicatedJobs[%zu].replicas", i);
			js__vadd(v, JS_DIAG_INVALID, p, NULL,
				 "replicatedJob '%s': replicas times parallelism is over 2147483647 pods", name);
			free(p);
		}
		if (r->group_name) {
			char *p = js_buf_format("spec.replicatedJobs[%zu].groupName", i);
			if (!dns1035_shape(r->group_name))
				vadd_str(v, JS_DIAG_INVALID, p, r->group_name, "%s", MSG_DNS1035);
			if (strlen(r->group_name) > 63)
				vadd_str(v, JS_DIAG_INVALID, p, r->group_name, "groupName is too long: must be at most 63 characters");
			free(p);
		}
		check_generated_names(v, i);
		for (size_t d = 0; d < r->n_depends_on; d++) {
			const char *dep = r->depends_on[d].name ? r->depends_on[d].name : "";
			int di = js_jobset_find_rjob(v->js, dep);
			char *p = js_buf_format("spec.replicatedJobs[%zu].dependsOn[%zu].name", i, d);
			if (di < 0 || (size_t)di > i)
				js__vadd(v, JS_DIAG_INVALID, p, NULL,
					 "replicatedJob '%s' cannot depend on '%s': dependsOn may only name a ReplicatedJob "
					 "listed before it",
					 name, dep);
			else if (strict && (size_t)di == i)
				/* Upstream accepts this, and the ReplicatedJob then never starts. */
				vadd_str(v, JS_DIAG_INVALID, p, dep,
					 "a ReplicatedJob cannot depend on itself: it would never start");
			free(p);
		}
		if (inplace) {
			int32_t x;
			char *p = js_buf_format("spec.replicatedJobs[%zu].template.spec.backoffLimit", i);
			if (!js_tmpl_i32(r, "backoffLimit", &x) || x != INT32_MAX)
				js__vadd(v, JS_DIAG_INVALID, p, NULL,
					 "replicatedJob %s: in-place restart needs backoffLimit 2147483647", name);
			free(p);
			p = js_buf_format("spec.replicatedJobs[%zu].template.spec.podReplacementPolicy", i);
			const char *prp = js_tmpl_str(r, "podReplacementPolicy");
			if (!prp || strcmp(prp, "Failed") != 0)
				js__vadd(v, JS_DIAG_INVALID, p, NULL,
					 "replicatedJob %s: in-place restart needs podReplacementPolicy Failed", name);
			free(p);
			int32_t c, pl;
			p = js_buf_format("spec.replicatedJobs[%zu].template.spec.completions", i);
			if (!js_tmpl_i32(r, "completions", &c) || !js_tmpl_i32(r, "parallelism", &pl) || c != pl)
				js__vadd(v, JS_DIAG_INVALID, p, NULL,
					 "replicatedJob %s: in-place restart needs completions and parallelism set and "
					 "equal",
					 name);
			free(p);
		}
		if (strict) {
			js__validate_template(v, i);
			/* Upstream #1284: with NonIndexed Jobs no pod is a leader, so
			 * exclusive placement never admits a pod. */
			bool excl = js_tmpl_annotation(r, JS_ANN_EXCLUSIVE_TOPOLOGY) ||
				    json_object_get(v->js->meta.annotations, JS_ANN_EXCLUSIVE_TOPOLOGY);
			if (excl && !js_tmpl_indexed(r)) {
				char *p = js_buf_format("spec.replicatedJobs[%zu].template.spec.completionMode", i);
				vadd_str(v, JS_DIAG_INVALID, p, js_tmpl_str(r, "completionMode"),
					 "exclusive placement (%s) needs Indexed Jobs: with NonIndexed Jobs no pod is "
					 "a leader and none would ever be scheduled",
					 JS_ANN_EXCLUSIVE_TOPOLOGY);
				free(p);
			}
		}
	}
}

static bool rjob_exists(const struct js_vctx *v, const char *name)
{
	return js_jobset_find_rjob(v->js, name) >= 0;
}

static void check_failure_policy(struct js_vctx *v)
{
	const struct js_failure_policy *fp = v->js->spec.failure_policy;
	if (!fp)
		return;
	bool restart_job = false;
	for (size_t i = 0; i < fp->n_rules; i++)
		restart_job |= fp->rules[i].has_action && (fp->rules[i].action == JS_FP_ACTION_RESTART_JOB ||
							   fp->rules[i].action == JS_FP_ACTION_RESTART_JOB_IGNORE_MAX);
	if (restart_job && !v->opts->gates.restart_job) {
		size_t first = 0;
		while (first < fp->n_rules && !(fp->rules[first].action == JS_FP_ACTION_RESTART_JOB ||
						fp->rules[first].action == JS_FP_ACTION_RESTART_JOB_IGNORE_MAX))
			first++;
		char *p = js_buf_format("spec.failurePolicy.rules[%zu].action", first);
		js__vadd(v, JS_DIAG_FORBIDDEN, p, NULL,
			 "failure policy actions RestartJob and RestartJobAndIgnoreMaxRestarts need the RestartJob "
			 "feature gate, which is off (enable it with the gate RestartJob=true)");
		free(p);
		return;
	}
	if (restart_job) {
		for (size_t i = 0; i < v->js->spec.n_replicated_jobs; i++)
			if (replicas_of(&v->js->spec.replicated_jobs[i]) > JS_LIMIT_JOB_RESTARTS) {
				char *p = js_buf_format("spec.replicatedJobs[%zu].replicas", i);
				js__vadd(v, JS_DIAG_INVALID, p, NULL,
					 "RestartJob actions track each Job, so no ReplicatedJob may have more than %d "
					 "replicas",
					 JS_LIMIT_JOB_RESTARTS);
				free(p);
				break;
			}
	}
	for (size_t i = 0; i < fp->n_rules; i++) {
		const struct js_fp_rule *r = &fp->rules[i];
		const char *name = r->name ? r->name : "";
		size_t len = strlen(name);
		char *np = js_buf_format("spec.failurePolicy.rules[%zu].name", i);
		if (len < 1 || len > JS_LIMIT_RULE_NAME_LEN)
			js__vadd(v, JS_DIAG_INVALID, np, NULL,
				 "failure policy rule name has length %zu; it must be 1 to %d characters long", len,
				 JS_LIMIT_RULE_NAME_LEN);
		bool ok = len > 0 && ((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z'));
		for (size_t c = 1; ok && c < len; c++) {
			char ch = name[c];
			bool an = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
			ok = an || ((ch == ',' || ch == ':') && c + 1 < len);
		}
		if (!ok)
			js__vadd(v, JS_DIAG_INVALID, np, NULL,
				 "failure policy rule name '%s' is not valid: it must start with a letter, continue with "
				 "letters, digits or '_,:', and end with a letter, digit or '_' (it becomes part of a "
				 "condition reason)",
				 name);
		free(np);
		for (size_t t = 0; t < r->target_replicated_jobs.n; t++)
			if (!rjob_exists(v, r->target_replicated_jobs.items[t])) {
				char *tp = js_buf_format("spec.failurePolicy.rules[%zu].targetReplicatedJobs[%zu]", i, t);
				js__vadd(v, JS_DIAG_INVALID, tp, NULL,
					 "failure policy rule '%s' targets replicatedJob '%s', which is not in "
					 ".spec.replicatedJobs",
					 name, r->target_replicated_jobs.items[t]);
				free(tp);
			}
		for (size_t t = 0; t < r->on_job_failure_reasons.n; t++)
			if (js_job_failure_reason_from_string(r->on_job_failure_reasons.items[t]) < 0) {
				char *tp = js_buf_format("spec.failurePolicy.rules[%zu].onJobFailureReasons[%zu]", i, t);
				js__vadd(v, JS_DIAG_NOT_SUPPORTED, tp, NULL,
					 "'%s' in failure policy rule '%s' is not a Job failure reason; known reasons are "
					 "BackoffLimitExceeded, DeadlineExceeded, FailedIndexes, MaxFailedIndexesExceeded, "
					 "PodFailurePolicy",
					 r->on_job_failure_reasons.items[t], name);
				free(tp);
			}
		if (v->opts->strict) {
			/* Upstream accepts a broken pattern that then never matches. */
			for (size_t t = 0; t < r->on_job_failure_message_patterns.n; t++) {
				struct js_regex *re = NULL;
				char err[256] = "";
				const char *pat = r->on_job_failure_message_patterns.items[t];
				if (js_regex_compile(pat, &re, err, sizeof(err)) < 0) {
					char *p = js_buf_format("spec.failurePolicy.rules[%zu].onJobFailureMessagePatterns[%zu]", i, t);
					vadd_str(v, JS_DIAG_INVALID, p, pat, "not a valid RE2 regular expression: %s", err);
					free(p);
				}
				js_regex_free(re);
			}
		}
	}
	/* F7: one error per duplicated name, listing every index. */
	for (size_t i = 0; i < fp->n_rules; i++) {
		const char *name = fp->rules[i].name ? fp->rules[i].name : "";
		bool first = true, dup = false;
		for (size_t j = 0; j < i; j++)
			if (strcmp(fp->rules[j].name ? fp->rules[j].name : "", name) == 0)
				first = false;
		if (!first)
			continue;
		struct js_buf idx;
		js_buf_init(&idx, 0);
		int r = js_buf_printf(&idx, "%zu", i);
		for (size_t j = i + 1; j < fp->n_rules; j++)
			if (strcmp(fp->rules[j].name ? fp->rules[j].name : "", name) == 0) {
				dup = true;
				r |= js_buf_printf(&idx, " %zu", j);
			}
		char *dp = js_buf_format("spec.failurePolicy.rules[%zu].name", i);
		if (dup && r == 0)
			js__vadd(v, JS_DIAG_DUPLICATE, dp, NULL,
				 "failure policy rule names must be unique: rules [%s] are all named '%s'", js_buf_str(&idx),
				 name);
		free(dp);
		js_buf_done(&idx);
	}
}

static void check_coordinator(struct js_vctx *v)
{
	const struct js_coordinator *c = v->js->spec.coordinator;
	if (!c)
		return;
	const char *rn = c->replicated_job ? c->replicated_job : "";
	int32_t ji = c->has_job_index ? c->job_index : 0, pi = c->has_pod_index ? c->pod_index : 0;
	int ri = js_jobset_find_rjob(v->js, rn);
	if (ri < 0) {
		js__vadd(v, JS_DIAG_INVALID, "spec.coordinator.replicatedJob", NULL,
			 "coordinator names replicatedJob %s, which does not exist", rn);
	} else {
		const struct js_rjob *r = &v->js->spec.replicated_jobs[ri];
		int32_t completions;
		if (ji < 0 || ji >= replicas_of(r))
			js__vadd(v, JS_DIAG_INVALID, "spec.coordinator.jobIndex", NULL,
				 "coordinator job index %" PRId32 " is out of range for replicatedJob %s (replicas %" PRId32 ")",
				 ji, rn, replicas_of(r));
		else if (!js_tmpl_indexed(r) || !js_tmpl_i32(r, "completions", &completions))
			js__vadd(v, JS_DIAG_INVALID, "spec.coordinator.replicatedJob", NULL,
				 "the coordinator's Job must use completionMode Indexed and set completions");
		else if (pi < 0 || pi >= completions)
			js__vadd(v, JS_DIAG_INVALID, "spec.coordinator.podIndex", NULL,
				 "coordinator pod index %" PRId32 " is out of range for replicatedJob %s job index %" PRId32
				 " (completions %" PRId32 ")",
				 pi, rn, ji, completions);
	}
	char *ep = js_buf_format("%s-%s-%" PRId32 "-%" PRId32 ".%s", v->name, rn, ji, pi, js_jobset_subdomain(v->js));
	if (!js_is_label_value(ep))
		js__vadd(v, JS_DIAG_INVALID, "spec.coordinator", NULL,
			 "the coordinator endpoint \"%s\" (%zu characters) is not a valid value for label %s, which "
			 "must be at most 63 letters, digits, '-', '_' or '.': shorten the JobSet, ReplicatedJob or "
			 "subdomain name",
			 ep, strlen(ep), JS_LABEL_COORDINATOR);
	free(ep);
}

static void check_pvc_existing(struct js_vctx *v, size_t p, size_t t, const json_t *tmpl, const char *pvc)
{
	if (!v->opts->pvc_lookup)
		return;
	json_t *spec = NULL;
	char *err = NULL;
	const char *ns = js_jobset_namespace(v->js);
	enum js_pvc_lookup r = v->opts->pvc_lookup(v->opts->pvc_ctx, ns, pvc, &spec, &err);
	char *path = js_buf_format("spec.volumeClaimPolicies[%zu].template[%zu]", p, t);
	if (r == JS_PVC_ERROR) {
		js__vadd(v, JS_DIAG_INTERNAL, path, NULL, "could not look up the existing PVC %s: %s", pvc,
			 err ? err : "unknown error");
	} else if (r == JS_PVC_FOUND) {
		const json_t *want = json_object_get(tmpl, "spec");
		if (!json_equal(js_json_unconst(want), spec)) {
			char *sp = js_buf_format("%s.spec", path);
			js__vadd(v, JS_DIAG_INVALID, sp, NULL, "does not match the spec of the existing PVC %s in namespace %s",
				 pvc, ns);
			free(sp);
		}
		const struct js_retention_policy *rp = v->js->spec.volume_claim_policies[p].retention_policy;
		if (rp && (!rp->has_when_deleted || rp->when_deleted != JS_WHEN_DELETED_RETAIN)) {
			char *wp = js_buf_format("spec.volumeClaimPolicies[%zu].retentionPolicy.whenDeleted", p);
			js__vadd(v, JS_DIAG_INVALID, wp, NULL,
				 "PVC %s already exists, so the policy must be Retain: Delete would remove a claim "
				 "this JobSet did not create",
				 pvc);
			free(wp);
		}
	}
	json_decref(spec);
	free(err);
	free(path);
}

static void check_vcps(struct js_vctx *v)
{
	const struct js_spec *s = &v->js->spec;
	json_t *seen = json_object();
	for (size_t p = 0; p < s->n_volume_claim_policies; p++) {
		size_t t;
		json_t *tmpl;
		json_array_foreach(s->volume_claim_policies[p].templates, t, tmpl) {
			const char *name = json_string_value(js_json_path(tmpl, "metadata.name"));
			char *np = js_buf_format("spec.volumeClaimPolicies[%zu].template[%zu].name", p, t);
			if (!name) {
				js__vadd(v, JS_DIAG_REQUIRED, np, NULL, "a claim template needs metadata.name");
				free(np);
				continue;
			}
			char *pvc = js_buf_format("%s-%s", name, v->name);
			if (json_object_get(seen, name))
				vadd_str(v, JS_DIAG_INVALID, np, name, "claim template names must be unique across all policies");
			json_object_set_new(seen, name, json_true());
			if (!js_is_dns1123_subdomain(name))
				vadd_str(v, JS_DIAG_INVALID, np, name, "%s", MSG_DNS1123_SUB);
			if (strlen(pvc) > 63)
				vadd_str(v, JS_DIAG_INVALID, np, name,
					 "claim template name is too long: the PVC name %s would be %zu characters, over 63",
					 pvc, strlen(pvc));
			bool mounted = false;
			for (size_t r = 0; r < s->n_replicated_jobs; r++) {
				const json_t *ps = js_tmpl_pod_spec(&s->replicated_jobs[r]);
				mounted |= js_tmpl_pod_mounts(ps, name);
				size_t vi;
				json_t *vol;
				json_array_foreach(json_object_get(ps, "volumes"), vi, vol) {
					const char *vn = js_json_str(vol, "name");
					if (vn && strcmp(vn, name) == 0) {
						char *vp = js_buf_format("spec.replicatedJobs[%zu].template.spec.template.spec.volumes[%zu].name",
								 r, vi);
						vadd_str(v, JS_DIAG_INVALID, vp, vn,
							 "this volume has the name of a volumeClaimPolicies template (%s); "
							 "rename one of them",
							 name);
						free(vp);
					}
				}
			}
			if (!mounted)
				js__vadd(v, JS_DIAG_INVALID, "spec.replicatedJobs", NULL,
					 "no container or initContainer mounts volume %s from volumeClaimPolicies", name);
			check_pvc_existing(v, p, t, tmpl, pvc);
			free(pvc);
			free(np);
		}
	}
	json_decref(seen);
}

/* KEP-969: refused while the gate is off, checked by api/sched.c when on. */
static void check_scheduling(struct js_vctx *v)
{
	if (!v->opts->gates.workload_aware_scheduling) {
		js__vadd(v, JS_DIAG_FORBIDDEN, "spec.scheduling", NULL,
			 "scheduling needs the JobSetWorkloadAwareSchedulingAPI feature gate, which is off (enable it "
			 "with the gate JobSetWorkloadAwareSchedulingAPI=true)");
		return;
	}
	struct js_sched_groups *g = NULL;
	if (js_sched_groups(v->js, v->diag, &g) == 0)
		js_sched_groups_free(g);
}

/* KEP-1186 "Validation", the feature-gate guard: with JobSetActiveDeadlineSeconds
 * off, activeDeadlineSeconds may not be set or changed (on create `old` is
 * NULL). Keeping an unchanged value and clearing the field stay allowed, so a
 * JobSet created while the gate was on can still be updated. */
static void check_deadline_gate(struct js_vctx *v, const struct js_jobset *old, const struct js_jobset *js)
{
	const struct js_spec *s = &js->spec;
	if (v->opts->gates.active_deadline || !s->has_active_deadline_seconds)
		return;
	if (old && old->spec.has_active_deadline_seconds &&
	    old->spec.active_deadline_seconds == s->active_deadline_seconds)
		return;
	json_t *x = json_integer(s->active_deadline_seconds);
	js__vadd(v, JS_DIAG_FORBIDDEN, "spec.activeDeadlineSeconds", x,
		 "activeDeadlineSeconds needs the JobSetActiveDeadlineSeconds feature gate, which is off (enable it "
		 "with the gate JobSetActiveDeadlineSeconds=true)");
	json_decref(x);
}

static char *simulated_name(const struct js_jobset *js)
{
	if (js->meta.name && js->meta.name[0])
		return js_xstrdup(js->meta.name);
	if (js->meta.generate_name && js->meta.generate_name[0]) {
		/* Only the length and validity of the suffix matter (SPEC §5.1.6). */
		return js_buf_format("%.58szzzzz", js->meta.generate_name);
	}
	return js_xstrdup("");
}

int js_validate_create(const struct js_jobset *js, const struct js_validate_opts *opts, struct js_diag *diag)
{
	size_t before = diag->n;
	/* First and alone: the checks below may be quadratic in the lists
	 * these bound. */
	if (js_validate_limits(js, diag) < 0)
		return JS_EINVALID;
	char *name = simulated_name(js);
	struct js_vctx v = {.js = js, .opts = opts, .diag = diag, .name = name};
	const struct js_spec *s = &js->spec;

	check_schema(&v);
	check_deadline_gate(&v, NULL, js);
	js__validate_progress(&v, NULL);
	if (!opts->gates.in_place_restart && s->failure_policy && s->failure_policy->has_restart_strategy &&
	    s->failure_policy->restart_strategy == JS_RESTART_STRATEGY_IN_PLACE)
		js__vadd(&v, JS_DIAG_FORBIDDEN, "spec.failurePolicy.restartStrategy", NULL,
			 "restartStrategy InPlaceRestart needs the InPlaceRestart feature gate, which is off (enable it "
			 "with the gate InPlaceRestart=true)");
	if (s->n_replicated_jobs > 0 && s->replicated_jobs[0].has_depends_on)
		js__vadd(&v, JS_DIAG_FORBIDDEN, "spec.replicatedJobs[0].dependsOn", NULL,
			 "the first ReplicatedJob cannot have dependsOn: there is nothing before it to wait for");
	if (s->network && s->network->subdomain && s->network->subdomain[0]) {
		const char *sd = s->network->subdomain;
		if (!js_is_dns1123_subdomain(sd))
			vadd_str(&v, JS_DIAG_INVALID, "spec.network.subdomain", sd, "%s", MSG_DNS1123_SUB);
		if (!dns1035_shape(sd))
			vadd_str(&v, JS_DIAG_INVALID, "spec.network.subdomain", sd, "%s", MSG_DNS1035);
		if (strlen(sd) > 63)
			vadd_str(&v, JS_DIAG_INVALID, "spec.network.subdomain", sd,
				 "subdomain is too long: %zu characters, at most 63 are allowed", strlen(sd));
	}
	/* Strict (upstream checks only a given subdomain, and the Service
	 * create fails after submit): without a subdomain the headless Service
	 * is named after the JobSet, and a Service name is a DNS-1035 label.
	 * With ReplicatedJobs the Job-name check below says so too, but a
	 * JobSet of none still gets its Service. */
	if (opts->strict && name[0] && js_jobset_dns_hostnames(js) &&
	    !(s->network && s->network->subdomain && s->network->subdomain[0]) &&
	    (strlen(name) > JS_LIMIT_LABEL_LEN || !dns1035_shape(name)))
		vadd_str(&v, JS_DIAG_INVALID, "metadata.name", name,
			 "the headless Service is named after the JobSet (no spec.network.subdomain is set), and a "
			 "Service name is a DNS-1035 label: at most %d lower-case letters, digits or '-', starting "
			 "with a letter (this one has %zu characters)",
			 JS_LIMIT_LABEL_LEN, strlen(name));
	if (s->managed_by)
		check_managed_by(&v, s->managed_by);
	check_rjobs(&v);
	if (s->success_policy)
		for (size_t i = 0; i < s->success_policy->target_replicated_jobs.n; i++) {
			const char *t = s->success_policy->target_replicated_jobs.items[i];
			if (!rjob_exists(&v, t)) {
				char *p = js_buf_format("spec.successPolicy.targetReplicatedJobs[%zu]", i);
				js__vadd(&v, JS_DIAG_INVALID, p, NULL,
					 "success policy targets replicatedJob '%s', which is not in .spec.replicatedJobs", t);
				free(p);
			}
		}
	check_failure_policy(&v);
	check_coordinator(&v);
	if (s->scheduling)
		check_scheduling(&v);
	if (s->n_volume_claim_policies)
		check_vcps(&v);
	free(name);
	return diag->n > before ? JS_EINVALID : 0;
}

/* ---- update (SPEC §5.4) ---- */

/* Drop nulls, empty lists and empty maps: semantic equality treats a nil
 * list or map like an empty one (SPEC §5.1.5). Returns a new reference or
 * NULL when the value is "empty". */
static json_t *normalize(const json_t *v)
{
	if (json_is_null(v))
		return NULL;
	if (json_is_object(v)) {
		json_t *o = json_object();
		const char *k;
		json_t *e;
		json_object_foreach(js_json_unconst(v), k, e) {
			json_t *n = normalize(e);
			if (n)
				json_object_set_new(o, k, n);
		}
		if (json_object_size(o) == 0) {
			json_decref(o);
			return NULL;
		}
		return o;
	}
	if (json_is_array(v)) {
		if (json_array_size(v) == 0)
			return NULL;
		json_t *a = json_array();
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e) {
			json_t *n = normalize(e);
			json_array_append_new(a, n ? n : json_null());
		}
		return a;
	}
	return json_deep_copy(v);
}

static bool semantic_equal(const json_t *a, const json_t *b)
{
	json_t *na = normalize(a), *nb = normalize(b);
	bool eq = (!na && !nb) || (na && nb && json_equal(na, nb));
	json_decref(na);
	json_decref(nb);
	return eq;
}

static json_t *rjobs_json(const struct js_jobset *js)
{
	json_t *all = js_codec_encode_jobset(js);
	json_t *l = json_incref(js_json_path(all, "spec.replicatedJobs"));
	json_decref(all);
	return l ? l : json_array();
}

static json_t *find_by_name(json_t *list, const char *name)
{
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e) {
		const char *n = js_json_str(e, "name");
		if (n && name && strcmp(n, name) == 0)
			return e;
	}
	return NULL;
}

static void copy_field(json_t *dst_parent, const json_t *src_parent, const char *key)
{
	const json_t *sv = json_object_get(src_parent, key);
	if (sv)
		json_object_set_new(dst_parent, key, json_deep_copy(sv));
	else
		json_object_del(dst_parent, key);
}

static bool opt_i32_equal(const json_t *a, const json_t *b)
{
	if (!a || !b)
		return !a && !b;
	return json_equal(js_json_unconst(a), js_json_unconst(b));
}

static void check_elastic(struct js_vctx *v, const struct js_jobset *old, json_t *scratch, json_t *oldl)
{
	bool terminal = js_jobset_condition_true(old, "Completed") || js_jobset_condition_true(old, "Failed");
	size_t i;
	json_t *nr;
	json_array_foreach(scratch, i, nr) {
		json_t *or_ = find_by_name(oldl, js_json_str(nr, "name"));
		json_t *nspec = js_json_path(nr, "template.spec");
		const char *mode = js_json_str(nspec, "completionMode");
		if (!or_ || !nspec || !mode || strcmp(mode, "Indexed") != 0)
			continue;
		json_t *ospec = js_json_path(or_, "template.spec");
		const json_t *np = json_object_get(nspec, "parallelism"), *nc = json_object_get(nspec, "completions");
		const json_t *op = json_object_get(ospec, "parallelism"), *oc = json_object_get(ospec, "completions");
		bool pch = !opt_i32_equal(np, op), cch = !opt_i32_equal(nc, oc);
		if (pch || cch) {
			char *base = js_buf_format("spec.replicatedJobs[%zu].template.spec", i);
			if (terminal) {
				js__vadd(v, JS_DIAG_FORBIDDEN, base, NULL,
					 "parallelism and completions cannot change once the JobSet has Completed or Failed");
			} else {
				char *p;
				if (pch && (!json_is_integer(np) || json_integer_value(np) < 1)) {
					p = js_buf_format("%s.parallelism", base);
					js__vadd(v, JS_DIAG_INVALID, p, np, "parallelism must be at least 1");
					free(p);
				}
				if (cch && (!json_is_integer(nc) || json_integer_value(nc) < 1)) {
					p = js_buf_format("%s.completions", base);
					js__vadd(v, JS_DIAG_INVALID, p, nc, "completions must be at least 1");
					free(p);
				}
				if (np && nc && !json_equal(js_json_unconst(np), js_json_unconst(nc))) {
					p = js_buf_format("%s.completions", base);
					js__vadd(v, JS_DIAG_INVALID, p, nc,
						 "an elastic Indexed Job keeps completions equal to parallelism");
					free(p);
				}
			}
			free(base);
		}
		copy_field(nspec, ospec, "parallelism");
		copy_field(nspec, ospec, "completions");
	}
}

static void mask_suspended_fields(json_t *scratch, json_t *oldl)
{
	static const char *const meta_keys[] = {"labels", "annotations"};
	static const char *const spec_keys[] = {"nodeSelector", "tolerations", "schedulingGates"};
	size_t i;
	json_t *nr;
	json_array_foreach(scratch, i, nr) {
		json_t *or_ = find_by_name(oldl, js_json_str(nr, "name"));
		if (!or_)
			continue;
		json_t *ntmpl = js_json_path_make(nr, "template.spec.template");
		json_t *otmpl = js_json_path(or_, "template.spec.template");
		json_t *nmeta = js_json_path_make(ntmpl, "metadata"), *nspec = js_json_path_make(ntmpl, "spec");
		for (size_t k = 0; k < 2; k++)
			copy_field(nmeta, json_object_get(otmpl, "metadata"), meta_keys[k]);
		for (size_t k = 0; k < 3; k++)
			copy_field(nspec, json_object_get(otmpl, "spec"), spec_keys[k]);
	}
}

/* KEP-1150 "Webhook Changes": with MutablePodResourcesForSuspendedJobSets on,
 * resources.requests and resources.limits of every container and init
 * container are taken from the old container of the same name before the
 * comparison, so only they may differ; resources.claims and every other
 * container field (and the set of containers) stay immutable. */
static void mask_container_resources(json_t *scratch, json_t *oldl)
{
	static const char *const lists[] = {"containers", "initContainers"};
	static const char *const keys[] = {"requests", "limits"};
	size_t i;
	json_t *nr;
	json_array_foreach(scratch, i, nr) {
		json_t *or_ = find_by_name(oldl, js_json_str(nr, "name"));
		json_t *nspec = js_json_path(nr, "template.spec.template.spec");
		json_t *ospec = js_json_path(or_, "template.spec.template.spec");
		if (!or_ || !nspec)
			continue;
		for (size_t l = 0; l < JS_ARRAY_SIZE(lists); l++) {
			json_t *olist = json_object_get(ospec, lists[l]), *c;
			size_t k;
			json_array_foreach(json_object_get(nspec, lists[l]), k, c) {
				json_t *oc = find_by_name(olist, js_json_str(c, "name"));
				if (!json_is_object(c) || !oc)
					continue;
				json_t *nres = js_json_path_make(c, "resources");
				const json_t *ores = json_object_get(oc, "resources");
				for (size_t q = 0; q < JS_ARRAY_SIZE(keys); q++)
					copy_field(nres, ores, keys[q]);
				if (json_object_size(nres) == 0 && !ores)
					json_object_del(c, "resources");
			}
		}
	}
}

int js_validate_update(const struct js_jobset *old, const struct js_jobset *js, const struct js_validate_opts *opts,
		       struct js_diag *diag)
{
	size_t before = diag->n;
	struct js_vctx v = {.js = js, .opts = opts, .diag = diag, .name = js_jobset_name(js)};
	json_t *oj = js_codec_encode_jobset(old), *nj = js_codec_encode_jobset(js);

	/* CEL transition rules (S2-S7): checked only when both sides have the field. */
	static const char *const immutable[] = {"network", "successPolicy", "failurePolicy", "startupPolicy",
						"volumeClaimPolicies"};
	for (size_t i = 0; i < JS_ARRAY_SIZE(immutable); i++) {
		json_t *a = js_json_path(oj, "spec"), *b = js_json_path(nj, "spec");
		json_t *av = json_object_get(a, immutable[i]), *bv = json_object_get(b, immutable[i]);
		if (av && bv && !json_equal(av, bv)) {
			char *p = js_buf_format("spec.%s", immutable[i]);
			js__vadd(&v, JS_DIAG_INVALID, p, NULL, "cannot be changed after the JobSet is created");
			free(p);
		}
	}
	/* KEP-969: spec.scheduling is immutable, set or unset alike. */
	json_t *osc = json_object_get(js_json_path(oj, "spec"), "scheduling");
	json_t *nsc = json_object_get(js_json_path(nj, "spec"), "scheduling");
	if (!(osc == NULL && nsc == NULL) && !(osc && nsc && json_equal(osc, nsc)))
		js__vadd(&v, JS_DIAG_INVALID, "spec.scheduling", NULL, "cannot be changed after the JobSet is created");
	json_t *oldl = rjobs_json(old), *scratch = rjobs_json(js);
	size_t k;
	json_t *nr;
	json_array_foreach(scratch, k, nr) {
		json_t *or_ = find_by_name(oldl, js_json_str(nr, "name"));
		json_t *a = json_object_get(or_, "dependsOn"), *b = json_object_get(nr, "dependsOn");
		if (a && b && !json_equal(a, b)) {
			char *p = js_buf_format("spec.replicatedJobs[%zu].dependsOn", k);
			js__vadd(&v, JS_DIAG_INVALID, p, NULL, "cannot be changed after the JobSet is created");
			free(p);
		}
	}
	if (opts->gates.elastic_jobset)
		check_elastic(&v, old, scratch, oldl);
	bool suspended = (old->spec.has_suspend && old->spec.suspend) || (js->spec.has_suspend && js->spec.suspend);
	if (suspended)
		mask_suspended_fields(scratch, oldl);
	if (suspended && opts->gates.mutable_pod_resources)
		mask_container_resources(scratch, oldl);
	if (!semantic_equal(scratch, oldl))
		js__vadd(&v, JS_DIAG_INVALID, "spec.replicatedJobs", NULL,
			 "cannot be changed after creation, except pod-template labels, annotations, nodeSelector, "
			 "tolerations and schedulingGates%s while the JobSet is suspended%s",
			 opts->gates.mutable_pod_resources ? " and container resource requests and limits" : "",
			 opts->gates.elastic_jobset ? " and parallelism/completions of Indexed Jobs" : "");
	check_deadline_gate(&v, old, js);
	js__validate_progress(&v, old);
	(void)js_quarantine_validate_update(old, js, &opts->gates, diag); /* ours */
	const char *om = old->spec.managed_by, *nm = js->spec.managed_by;
	if (!((!om && !nm) || (om && nm && strcmp(om, nm) == 0)))
		vadd_str(&v, JS_DIAG_INVALID, "spec.managedBy", nm, "cannot be changed after the JobSet is created");
	json_decref(oldl);
	json_decref(scratch);
	json_decref(oj);
	json_decref(nj);
	return diag->n > before ? JS_EINVALID : 0;
}
