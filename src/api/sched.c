/*
 * sched.c - spec.scheduling (KEP-969) read, checked and turned into a
 * Workload and its PodGroups (scheduling.k8s.io/v1alpha2, Kubernetes 1.36).
 * See sched.h.
 *
 * The field is kept verbatim by the codec and read here, in one place, so
 * that validation (the webhook, `jobset validate`), the core (what to
 * create) and the renderer (Job labels and pod references) all see the same
 * groups.
 */
#include "api/sched.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "api/render.h"
#include "api/template.h"
#include "api/validate.h"
#include "base/buf.h"
#include "base/hash.h"
#include "base/json.h"
#include "base/limits.h"

/* The checking pass: where problems go and how many there were. */
struct sctx {
	const struct js_jobset *js;
	struct js_diag *diag;
	size_t errors;
};

static void serr(struct sctx *s, enum js_diag_type t, const char *path, const json_t *val, const char *fmt, ...)
	JS_PRINTF(5, 6);

static void serr(struct sctx *s, enum js_diag_type t, const char *path, const json_t *val, const char *fmt, ...)
{
	s->errors++;
	if (!s->diag)
		return;
	va_list ap;
	va_start(ap, fmt);
	js__diag_addv(s->diag, t, path, val, fmt, ap);
	va_end(ap);
}

/* Unknown keys of `obj` at `path` are errors: the field is kept verbatim,
 * so nothing else would drop them. `known` ends with NULL. */
static void only_keys(struct sctx *s, const json_t *obj, const char *path, const char *const *known)
{
	const char *k;
	json_t *v;
	json_object_foreach(js_json_unconst(obj), k, v) {
		bool ok = false;
		for (size_t i = 0; known[i] && !ok; i++)
			ok = strcmp(known[i], k) == 0;
		if (!ok) {
			char *p = js_buf_format("%s.%s", path, k);
			serr(s, JS_DIAG_UNKNOWN_FIELD, p, NULL, "field not declared in the schema of spec.scheduling");
			free(p);
		}
	}
}

/* An object member, or NULL; a member that is not an object is an error. */
static const json_t *obj_member(struct sctx *s, const json_t *obj, const char *path, const char *key)
{
	const json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return NULL;
	if (!json_is_object(v)) {
		char *p = js_buf_format("%s.%s", path, key);
		serr(s, JS_DIAG_TYPE, p, v, "must be an object");
		free(p);
		return NULL;
	}
	return v;
}

/* ---- pod counts ---- */

static int32_t replicas(const struct js_rjob *r)
{
	return r->has_replicas ? r->replicas : 1;
}

/* Pods of ReplicatedJob `r` that run at once: parallelism (Job default 1) x
 * replicas (KEP-969 "Defaulting"). */
static int64_t represented(const struct js_rjob *r)
{
	int32_t p = 1;
	if (!js_tmpl_i32(r, "parallelism", &p))
		p = 1;
	return (int64_t)(p < 0 ? 0 : p) * replicas(r);
}

static int64_t represented_all(const struct js_jobset *js)
{
	int64_t n = 0;
	for (size_t i = 0; i < js->spec.n_replicated_jobs; i++)
		n += represented(&js->spec.replicated_jobs[i]);
	return n;
}

/* ---- one policy block (composite or targeted) ---- */

struct policy {
	bool has_policy;
	enum js_sched_policy policy;
	bool has_min;
	int32_t min_count;
	const json_t *constraints; /* borrowed, or NULL */
	const char *disruption;    /* "Single" | "All" | NULL */
	const json_t *claims;      /* borrowed array, or NULL */
	size_t index;              /* targeted: its index in replicatedJobPolicies */
};

static void read_policy_field(struct sctx *s, const json_t *blk, const char *path, struct policy *out)
{
	char *pp = js_buf_format("%s.policy", path);
	const json_t *pol = obj_member(s, blk, path, "policy");
	if (pol) {
		static const char *const keys[] = {"basic", "gang", NULL};
		only_keys(s, pol, pp, keys);
		const json_t *basic = obj_member(s, pol, pp, "basic"), *gang = obj_member(s, pol, pp, "gang");
		if (!!basic == !!gang) {
			serr(s, JS_DIAG_INVALID, pp, NULL, "exactly one of basic and gang must be set");
		} else if (basic) {
			out->has_policy = true;
			out->policy = JS_SCHED_BASIC;
			static const char *const none[] = {NULL};
			char *bp = js_buf_format("%s.basic", pp);
			only_keys(s, basic, bp, none);
			free(bp);
		} else {
			out->has_policy = true;
			out->policy = JS_SCHED_GANG;
			static const char *const gkeys[] = {"minCount", NULL};
			char *gp = js_buf_format("%s.gang", pp);
			only_keys(s, gang, gp, gkeys);
			const json_t *mc = json_object_get(gang, "minCount");
			if (mc && !json_is_null(mc)) {
				char *mp = js_buf_format("%s.minCount", gp);
				if (!json_is_integer(mc) || json_integer_value(mc) < 1 ||
				    json_integer_value(mc) > INT32_MAX) {
					serr(s, JS_DIAG_INVALID, mp, mc, "must be an integer of at least 1");
				} else {
					out->has_min = true;
					out->min_count = (int32_t)json_integer_value(mc);
				}
				free(mp);
			}
			free(gp);
		}
	}
	free(pp);
}

static void read_constraints(struct sctx *s, const json_t *blk, const char *path, struct policy *out)
{
	char *cp = js_buf_format("%s.constraints", path);
	const json_t *c = obj_member(s, blk, path, "constraints");
	if (c) {
		static const char *const keys[] = {"topology", NULL};
		only_keys(s, c, cp, keys);
		const json_t *topo = json_object_get(c, "topology");
		bool ok = true;
		if (topo && !json_is_array(topo)) {
			char *tp = js_buf_format("%s.topology", cp);
			serr(s, JS_DIAG_TYPE, tp, topo, "must be a list");
			free(tp);
			ok = false;
		}
		size_t i;
		const json_t *t;
		json_array_foreach(js_json_unconst(topo), i, t) {
			char *tp = js_buf_format("%s.topology[%zu]", cp, i);
			static const char *const tkeys[] = {"key", NULL};
			if (!json_is_object(t)) {
				serr(s, JS_DIAG_TYPE, tp, t, "must be an object");
				ok = false;
			} else {
				only_keys(s, t, tp, tkeys);
				const char *key = json_string_value(json_object_get(t, "key"));
				char *kp = js_buf_format("%s.key", tp);
				if (!key || !key[0]) {
					serr(s, JS_DIAG_REQUIRED, kp, NULL, "a topology constraint needs a node label key");
					ok = false;
				} else if (!js_is_qualified_name(key)) {
					serr(s, JS_DIAG_INVALID, kp, json_object_get(t, "key"),
					     "must be a qualified name (a node label key)");
					ok = false;
				}
				free(kp);
			}
			free(tp);
		}
		if (ok)
			out->constraints = c;
	}
	free(cp);
}

static void read_block(struct sctx *s, const json_t *blk, const char *path, bool targeted, struct policy *out)
{
	static const char *const composite_keys[] = {"policy", "constraints", "disruption", "replicatedJobPolicies",
						     NULL};
	static const char *const targeted_keys[] = {"targetReplicatedJob", "policy", "constraints", "disruption",
						    "resourceClaims", NULL};
	only_keys(s, blk, path, targeted ? targeted_keys : composite_keys);
	read_policy_field(s, blk, path, out);
	read_constraints(s, blk, path, out);

	const json_t *d = json_object_get(blk, "disruption");
	if (d && !json_is_null(d)) {
		char *dp = js_buf_format("%s.disruption", path);
		const char *ds = json_string_value(d);
		if (ds && (strcmp(ds, "Single") == 0 || strcmp(ds, "All") == 0))
			out->disruption = ds;
		else
			serr(s, JS_DIAG_NOT_SUPPORTED, dp, d, "supported values: \"Single\", \"All\"");
		free(dp);
	}
	if (!targeted)
		return;
	const json_t *rc = json_object_get(blk, "resourceClaims");
	if (!rc || json_is_null(rc))
		return;
	char *rp = js_buf_format("%s.resourceClaims", path);
	if (!json_is_array(rc)) {
		serr(s, JS_DIAG_TYPE, rp, rc, "must be a list");
	} else if (json_array_size(rc) > JS_SCHED_MAX_CLAIMS) {
		serr(s, JS_DIAG_TOO_MANY, rp, NULL, "must have at most %d items", JS_SCHED_MAX_CLAIMS);
	} else {
		size_t before = s->errors, i;
		const json_t *c;
		json_array_foreach(js_json_unconst(rc), i, c) {
			char *cp = js_buf_format("%s[%zu]", rp, i);
			static const char *const ckeys[] = {"name", "resourceClaimName", "resourceClaimTemplateName",
							   NULL};
			if (!json_is_object(c)) {
				serr(s, JS_DIAG_TYPE, cp, c, "must be an object");
			} else {
				only_keys(s, c, cp, ckeys);
				const char *n = json_string_value(json_object_get(c, "name"));
				bool a = json_string_value(json_object_get(c, "resourceClaimName")) != NULL;
				bool b = json_string_value(json_object_get(c, "resourceClaimTemplateName")) != NULL;
				if (!n || !js_is_dns1123_label(n)) {
					char *np = js_buf_format("%s.name", cp);
					serr(s, n ? JS_DIAG_INVALID : JS_DIAG_REQUIRED, np, json_object_get(c, "name"),
					     "a claim needs a name that is a DNS-1123 label");
					free(np);
				}
				if (a == b)
					serr(s, JS_DIAG_INVALID, cp, NULL,
					     "exactly one of resourceClaimName and resourceClaimTemplateName must be set");
			}
			free(cp);
		}
		if (s->errors == before)
			out->claims = rc;
	}
	free(rp);
}

/* ---- names ---- */

/* <jobset>-<rjob>, or when longer than a DNS label its first 54 characters,
 * '-' and 8 hex digits of the SHA-1 of the full name: deterministic, and two
 * long names that share a prefix still differ. */
static char *group_name(const char *jobset, const char *rjob)
{
	char *full = js_buf_format("%s-%s", jobset, rjob);
	if (strlen(full) <= 63)
		return full;
	char hex[JS_HASH_SHA1_HEX_LEN + 1];
	js_hash_sha1_hex(full, strlen(full), hex);
	char *cut = js_buf_format("%.54s", full);
	size_t n = strlen(cut);
	while (n > 0 && cut[n - 1] == '-') /* a label ends with a letter or digit */
		cut[--n] = '\0';
	char *out = js_buf_format("%s-%.8s", cut, hex);
	free(cut);
	free(full);
	return out;
}

/* ---- the groups ---- */

static bool sequenced(const struct js_jobset *js)
{
	if (js->spec.startup_policy && js->spec.startup_policy->has_order &&
	    js->spec.startup_policy->order == JS_STARTUP_ORDER_IN)
		return true;
	for (size_t i = 0; i < js->spec.n_replicated_jobs; i++)
		if (js->spec.replicated_jobs[i].n_depends_on > 0)
			return true;
	return false;
}

/* The pod template's priorityClassName of ReplicatedJob `r`, or "". */
static const char *priority_class(const struct js_rjob *r)
{
	const char *p = json_string_value(js_json_path(r->template_, "spec.template.spec.priorityClassName"));
	return p ? p : "";
}

/* The podGroupTemplate entry: 1.36's field names; the KEP's disruption
 * Single/All are 1.36's Pod/PodGroup (docs/differences.md). */
static json_t *render_template(const char *name, const struct policy *p, enum js_sched_policy pol, int32_t min,
			       const char *priority)
{
	json_t *t = json_pack("{s:s}", "name", name);
	json_t *sp = pol == JS_SCHED_BASIC ? json_pack("{s:{}}", "basic")
					   : json_pack("{s:{s:i}}", "gang", "minCount", (json_int_t)min);
	json_object_set_new(t, "schedulingPolicy", sp);
	if (p->constraints)
		json_object_set_new(t, "schedulingConstraints", json_deep_copy(p->constraints));
	if (p->claims)
		json_object_set_new(t, "resourceClaims", json_deep_copy(p->claims));
	if (p->disruption)
		json_object_set_new(t, "disruptionMode",
				    json_string(strcmp(p->disruption, "All") == 0 ? "PodGroup" : "Pod"));
	if (priority && priority[0])
		json_object_set_new(t, "priorityClassName", json_string(priority));
	return t;
}

static void add_group(struct js_sched_groups *g, char *name, const char *tname, int rjob, enum js_sched_policy pol,
		      int32_t min, json_t *tmpl)
{
	struct js_sched_group *x = &g->items[g->n++];
	*x = (struct js_sched_group){.name = name, .template_name = js_xstrdup(tname), .rjob = rjob,
				     .policy = pol, .min_count = pol == JS_SCHED_GANG ? min : 0, .template_ = tmpl};
}

/* Per-ReplicatedJob mode: the composite `top` gives the defaults, the
 * targeted `tp[i]` (NULL when none targets rjob i) overrides them. */
static void build_per_rjob(struct sctx *s, const struct policy *top, const struct policy *const *tp,
			   struct js_sched_groups *g)
{
	const struct js_jobset *js = s->js;
	for (size_t i = 0; i < js->spec.n_replicated_jobs; i++) {
		const struct js_rjob *r = &js->spec.replicated_jobs[i];
		struct policy p = *top;
		p.has_min = false; /* the composite minCount is for a composite group, which 1.36 has not */
		p.claims = NULL;
		if (tp[i]) {
			if (tp[i]->has_policy) {
				p.policy = tp[i]->policy;
				p.has_policy = true;
				p.has_min = tp[i]->has_min;
				p.min_count = tp[i]->min_count;
			}
			if (tp[i]->constraints)
				p.constraints = tp[i]->constraints;
			if (tp[i]->disruption)
				p.disruption = tp[i]->disruption;
			p.claims = tp[i]->claims;
		}
		enum js_sched_policy pol = p.has_policy ? p.policy : JS_SCHED_GANG;
		int64_t rep = represented(r);
		int32_t min = p.has_min ? p.min_count : (int32_t)(rep > INT32_MAX ? INT32_MAX : rep);
		if (pol == JS_SCHED_GANG && p.has_min && p.min_count > rep) {
			/* has_min here comes only from a targeted policy */
			char *path = js_buf_format("spec.scheduling.replicatedJobPolicies[%zu].policy.gang.minCount",
						   tp[i]->index);
			serr(s, JS_DIAG_INVALID, path, NULL,
			     "minCount %d is more than the %lld pods ReplicatedJob '%s' runs at once (parallelism x "
			     "replicas): the gang could never start",
			     p.min_count, (long long)rep, r->name ? r->name : "");
			free(path);
		}
		const char *rn = r->name ? r->name : "";
		add_group(g, group_name(js_jobset_name(js), rn), rn, (int)i, pol, min,
			  render_template(rn, &p, pol, min, priority_class(r)));
	}
}

static void build_top(struct sctx *s, const struct policy *top, struct js_sched_groups *g)
{
	const struct js_jobset *js = s->js;
	const char *prio = NULL;
	for (size_t i = 0; i < js->spec.n_replicated_jobs; i++) {
		const char *pc = priority_class(&js->spec.replicated_jobs[i]);
		if (!prio)
			prio = pc;
		else if (strcmp(prio, pc) != 0) {
			char *path = js_buf_format("spec.replicatedJobs[%zu].template.spec.template.spec.priorityClassName",
						   i);
			serr(s, JS_DIAG_INVALID, path, NULL,
			     "one PodGroup holds the whole JobSet, so every ReplicatedJob needs the same "
			     "priorityClassName ('%s' differs from '%s')",
			     pc, prio);
			free(path);
		}
	}
	enum js_sched_policy pol = top->has_policy ? top->policy : JS_SCHED_GANG;
	int64_t rep = represented_all(js);
	int32_t min = top->has_min ? top->min_count : (int32_t)(rep > INT32_MAX ? INT32_MAX : rep);
	const char *name = js_jobset_name(js);
	add_group(g, js_xstrdup(name), name, -1, pol, min, render_template(name, top, pol, min, prio));
}

struct js_sched_groups *js_sched_groups_free(struct js_sched_groups *g)
{
	if (!g)
		return NULL;
	for (size_t i = 0; i < g->n; i++) {
		free(g->items[i].name);
		free(g->items[i].template_name);
		json_decref(g->items[i].template_);
	}
	free(g->items);
	free(g);
	return NULL;
}

/* Targeted policies: each names an existing ReplicatedJob, once. Fills
 * pols[k] and tp[ri] (pointing into pols). */
static void read_targets(struct sctx *s, const json_t *list, struct policy *pols, const struct policy **tp)
{
	const struct js_jobset *js = s->js;
	size_t k;
	const json_t *e;
	json_array_foreach(js_json_unconst(list), k, e) {
		char *path = js_buf_format("spec.scheduling.replicatedJobPolicies[%zu]", k);
		if (!json_is_object(e)) {
			serr(s, JS_DIAG_TYPE, path, e, "must be an object");
			free(path);
			continue;
		}
		pols[k].index = k;
		read_block(s, e, path, true, &pols[k]);
		const char *t = json_string_value(json_object_get(e, "targetReplicatedJob"));
		char *tpath = js_buf_format("%s.targetReplicatedJob", path);
		int ri = t ? js_jobset_find_rjob(js, t) : -1;
		if (!t || !t[0])
			serr(s, JS_DIAG_REQUIRED, tpath, NULL, "a policy must name the ReplicatedJob it targets");
		else if (ri < 0)
			serr(s, JS_DIAG_INVALID, tpath, json_object_get(e, "targetReplicatedJob"),
			     "names no ReplicatedJob in spec.replicatedJobs");
		else if (tp[ri])
			serr(s, JS_DIAG_DUPLICATE, tpath, json_object_get(e, "targetReplicatedJob"),
			     "another policy targets this ReplicatedJob already");
		else
			tp[ri] = &pols[k];
		free(tpath);
		free(path);
	}
}

int js_sched_groups(const struct js_jobset *js, struct js_diag *diag, struct js_sched_groups **ret)
{
	struct sctx s = {.js = js, .diag = diag};
	const json_t *sc = js->spec.scheduling;
	if (!json_is_object(sc)) {
		serr(&s, JS_DIAG_TYPE, "spec.scheduling", sc, "must be an object");
		return JS_EINVALID;
	}
	struct policy top = {0};
	read_block(&s, sc, "spec.scheduling", false, &top);
	const json_t *list = json_object_get(sc, "replicatedJobPolicies");
	if (list && !json_is_null(list) && !json_is_array(list)) {
		serr(&s, JS_DIAG_TYPE, "spec.scheduling.replicatedJobPolicies", list, "must be a list");
		list = NULL;
	}
	size_t nlist = json_array_size(list), nr = js->spec.n_replicated_jobs;
	struct policy *pols = js_xcalloc(nlist ? nlist : 1, sizeof(*pols));
	const struct policy **tp = js_xcalloc(nr ? nr : 1, sizeof(*tp));
	read_targets(&s, list, pols, tp);

	bool seq = sequenced(js);
	if (seq && top.has_policy && top.policy == JS_SCHED_GANG && top.has_min)
		serr(&s, JS_DIAG_FORBIDDEN, "spec.scheduling.policy.gang.minCount", NULL,
		     "a JobSet-wide minCount cannot be met with sequenced startup (dependsOn or InOrder): each "
		     "ReplicatedJob gets its own gang; set minCount per ReplicatedJob instead");
	if (top.has_min && top.min_count > represented_all(js))
		serr(&s, JS_DIAG_INVALID, "spec.scheduling.policy.gang.minCount", NULL,
		     "minCount %d is more than the %lld pods the JobSet runs at once (parallelism x replicas): the "
		     "gang could never start",
		     top.min_count, (long long)represented_all(js));

	struct js_sched_groups *g = js_xcalloc(1, sizeof(*g));
	g->per_rjob = seq || nlist > 0;
	g->items = js_xcalloc(nr ? nr : 1, sizeof(*g->items));
	if (g->per_rjob && nr > JS_SCHED_MAX_TEMPLATES)
		serr(&s, JS_DIAG_TOO_MANY, "spec.scheduling", NULL,
		     "one PodGroup per ReplicatedJob would make %zu groups; a Kubernetes 1.36 Workload holds at "
		     "most %d",
		     nr, JS_SCHED_MAX_TEMPLATES);
	else if (g->per_rjob)
		build_per_rjob(&s, &top, tp, g);
	else
		build_top(&s, &top, g);
	free(pols);
	free(tp);
	if (s.errors) {
		js_sched_groups_free(g);
		return JS_EINVALID;
	}
	*ret = g;
	return 0;
}

const struct js_sched_group *js_sched_group_of(const struct js_sched_groups *g, size_t rjob)
{
	for (size_t i = 0; g && i < g->n; i++)
		if (g->items[i].rjob < 0 || (size_t)g->items[i].rjob == rjob)
			return &g->items[i];
	return NULL;
}

const char *js_sched_workload_name(const struct js_jobset *js)
{
	return js_jobset_name(js);
}

/* metadata of a generated object: name, namespace, the jobset-name label
 * (the controller lists them by it) and the JobSet as controller owner, so
 * garbage collection removes them with the JobSet. */
static json_t *meta(const struct js_jobset *js, const char *name)
{
	json_t *owners = json_array();
	json_array_append_new(owners, js_render_owner_ref(js));
	return json_pack("{s:s, s:s, s:{s:s}, s:o}", "name", name, "namespace", js_jobset_namespace(js), "labels",
			 JS_LABEL_JOBSET_NAME, js_jobset_name(js), "ownerReferences", owners);
}

json_t *js_sched_render_workload(const struct js_jobset *js, const struct js_sched_groups *g)
{
	json_t *tmpls = json_array();
	for (size_t i = 0; i < g->n; i++)
		json_array_append_new(tmpls, json_deep_copy(g->items[i].template_));
	return json_pack("{s:s, s:s, s:o, s:{s:{s:s, s:s, s:s}, s:o}}", "apiVersion", JS_SCHED_API_VERSION, "kind",
			 "Workload", "metadata", meta(js, js_sched_workload_name(js)), "spec", "controllerRef",
			 "apiGroup", JS_GROUP, "kind", JS_KIND, "name", js_jobset_name(js), "podGroupTemplates", tmpls);
}

json_t *js_sched_render_podgroup(const struct js_jobset *js, const struct js_sched_groups *g, size_t i)
{
	if (!g || i >= g->n)
		return NULL;
	const struct js_sched_group *x = &g->items[i];
	json_t *spec = json_deep_copy(x->template_);
	json_object_del(spec, "name");
	json_object_set_new(spec, "podGroupTemplateRef",
			    json_pack("{s:{s:s, s:s}}", "workload", "workloadName", js_sched_workload_name(js),
				      "podGroupTemplateName", x->template_name));
	return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", JS_SCHED_API_VERSION, "kind", "PodGroup", "metadata",
			 meta(js, x->name), "spec", spec);
}
