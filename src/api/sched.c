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

/* The checking pass: where problems go and how many there were, and the
 * deprecated field names it met (an array of strings, or NULL when nobody
 * asks). */
struct sctx {
	const struct js_jobset *js;
	struct js_diag *diag;
	size_t errors;
	json_t *warnings;
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

static bool present(const json_t *v)
{
	return v && !json_is_null(v);
}

/* KEP-969 renamed our first names (docs/gang-scheduling.md "Deprecated
 * names"): the member `key` of `obj`, or else its deprecated name `old`,
 * which is accepted for one release with a warning. Both at once is an
 * error at the old one's path. Sets *used to the name found. */
static const json_t *alias_member(struct sctx *s, const json_t *obj, const char *path, const char *key,
				  const char *old, const char **used)
{
	const json_t *v = json_object_get(obj, key), *o = json_object_get(obj, old);
	*used = key;
	if (!present(o))
		return v;
	char *op = js_buf_format("%s.%s", path, old);
	if (present(v)) {
		serr(s, JS_DIAG_FORBIDDEN, op, NULL,
		     "'%s' is the deprecated name of '%s', and both are set: give only '%s'", old, key, key);
	} else {
		*used = old;
		if (s->warnings)
			json_array_append_new(s->warnings,
					      json_sprintf("%s: deprecated field name, use %s.%s (KEP-969); '%s' is "
							   "accepted until the next release",
							   op, path, key, old));
	}
	free(op);
	return present(v) ? v : o;
}

/* An object value at `path`, or NULL; a value that is not an object is an
 * error. */
static const json_t *as_object(struct sctx *s, const json_t *v, const char *path)
{
	if (!present(v))
		return NULL;
	if (!json_is_object(v)) {
		serr(s, JS_DIAG_TYPE, path, v, "must be an object");
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

/* ---- one policy block (top-level or one replicatedJobs entry) ---- */

/* At most this many targets per replicatedJobs entry, and characters per
 * target name (KEP-969 ReplicatedJobScheduling.TargetReplicatedJobs). */
#define MAX_TARGETS 50
#define MAX_TARGET_LEN 256

struct policy {
	bool has_policy;
	enum js_sched_policy policy;
	bool has_min;
	int32_t min_count;
	char *min_path;            /* where minCount was written, for messages */
	const json_t *constraints; /* borrowed, or NULL */
	bool all;                  /* disruptionMode all (else single) */
	bool has_disruption;
	const json_t *claims;      /* borrowed array, or NULL */
	char *path;                /* an entry: spec.scheduling.<list>[k] */
	size_t *targets;           /* an entry: its ReplicatedJobs, indexes into spec.replicatedJobs */
	size_t n_targets;
};

static void policy_done(struct policy *p)
{
	free(p->min_path);
	free(p->path);
	free(p->targets);
}

static void read_policy_field(struct sctx *s, const json_t *blk, const char *path, struct policy *out)
{
	const char *key;
	const json_t *v = alias_member(s, blk, path, "schedulingPolicy", "policy", &key);
	char *pp = js_buf_format("%s.%s", path, key);
	const json_t *pol = as_object(s, v, pp);
	if (pol) {
		static const char *const keys[] = {"basic", "gang", NULL};
		only_keys(s, pol, pp, keys);
		char *bp = js_buf_format("%s.basic", pp), *gp = js_buf_format("%s.gang", pp);
		const json_t *basic = as_object(s, json_object_get(pol, "basic"), bp);
		const json_t *gang = as_object(s, json_object_get(pol, "gang"), gp);
		if (!!basic == !!gang) {
			serr(s, JS_DIAG_INVALID, pp, NULL, "exactly one of basic and gang must be set");
		} else if (basic) {
			out->has_policy = true;
			out->policy = JS_SCHED_BASIC;
			static const char *const none[] = {NULL};
			only_keys(s, basic, bp, none);
		} else {
			out->has_policy = true;
			out->policy = JS_SCHED_GANG;
			static const char *const gkeys[] = {"minCount", NULL};
			only_keys(s, gang, gp, gkeys);
			const json_t *mc = json_object_get(gang, "minCount");
			if (present(mc)) {
				char *mp = js_buf_format("%s.minCount", gp);
				if (!json_is_integer(mc) || json_integer_value(mc) < 1 ||
				    json_integer_value(mc) > INT32_MAX) {
					serr(s, JS_DIAG_INVALID, mp, mc, "must be an integer of at least 1");
					free(mp);
				} else {
					out->has_min = true;
					out->min_count = (int32_t)json_integer_value(mc);
					out->min_path = mp;
				}
			}
		}
		free(bp);
		free(gp);
	}
	free(pp);
}

static void read_constraints(struct sctx *s, const json_t *blk, const char *path, struct policy *out)
{
	const char *key;
	const json_t *v = alias_member(s, blk, path, "schedulingConstraints", "constraints", &key);
	char *cp = js_buf_format("%s.%s", path, key);
	const json_t *c = as_object(s, v, cp);
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
				const char *k = json_string_value(json_object_get(t, "key"));
				char *kp = js_buf_format("%s.key", tp);
				if (!k || !k[0]) {
					serr(s, JS_DIAG_REQUIRED, kp, NULL, "a topology constraint needs a node label key");
					ok = false;
				} else if (!js_is_qualified_name(k)) {
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

/* KEP-969's disruptionMode is a union object, {single: {}} or {all: {}};
 * our first name, disruption, took the strings Single and All. */
static void read_disruption(struct sctx *s, const json_t *blk, const char *path, struct policy *out)
{
	const char *key;
	const json_t *d = alias_member(s, blk, path, "disruptionMode", "disruption", &key);
	if (!present(d))
		return;
	char *dp = js_buf_format("%s.%s", path, key);
	if (strcmp(key, "disruption") == 0) {
		const char *ds = json_string_value(d);
		if (ds && (strcmp(ds, "Single") == 0 || strcmp(ds, "All") == 0)) {
			out->has_disruption = true;
			out->all = strcmp(ds, "All") == 0;
		} else {
			serr(s, JS_DIAG_NOT_SUPPORTED, dp, d, "supported values: \"Single\", \"All\"");
		}
	} else if (as_object(s, d, dp)) {
		static const char *const keys[] = {"single", "all", NULL};
		only_keys(s, d, dp, keys);
		char *sp = js_buf_format("%s.single", dp), *ap = js_buf_format("%s.all", dp);
		const json_t *single = as_object(s, json_object_get(d, "single"), sp);
		const json_t *all = as_object(s, json_object_get(d, "all"), ap);
		static const char *const none[] = {NULL};
		if (!!single == !!all) {
			serr(s, JS_DIAG_INVALID, dp, NULL, "exactly one of single and all must be set");
		} else {
			only_keys(s, single ? single : all, single ? sp : ap, none);
			out->has_disruption = true;
			out->all = all != NULL;
		}
		free(sp);
		free(ap);
	}
	free(dp);
}

static void read_claims(struct sctx *s, const json_t *blk, const char *path, struct policy *out)
{
	const json_t *rc = json_object_get(blk, "resourceClaims");
	if (!present(rc))
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

static void read_block(struct sctx *s, const json_t *blk, const char *path, bool entry, struct policy *out)
{
	/* The KEP's names, then the deprecated ones (same meaning). */
	static const char *const top_keys[] = {"schedulingPolicy", "schedulingConstraints", "disruptionMode",
					       "replicatedJobs", "policy", "constraints", "disruption",
					       "replicatedJobPolicies", NULL};
	static const char *const entry_keys[] = {"targetReplicatedJobs", "schedulingPolicy", "schedulingConstraints",
						 "disruptionMode", "resourceClaims", "job", "targetReplicatedJob",
						 "policy", "constraints", "disruption", NULL};
	only_keys(s, blk, path, entry ? entry_keys : top_keys);
	read_policy_field(s, blk, path, out);
	read_constraints(s, blk, path, out);
	read_disruption(s, blk, path, out);
	if (entry)
		read_claims(s, blk, path, out);
}

/* ---- names ---- */

/* `full` when it is a DNS label's length, else its first 54 characters,
 * '-' and 8 hex digits of its SHA-1: deterministic, and two long names that
 * share a prefix still differ. Takes `full`. */
static char *shorten(char *full)
{
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

/* Every ReplicatedJob of `idx` (n of them) names the same
 * priorityClassName: one PodGroup has one priority. `why` says which group
 * holds them. Returns that name. */
static const char *one_priority(struct sctx *s, const size_t *idx, size_t n, const char *why)
{
	const char *prio = NULL;
	for (size_t k = 0; k < n; k++) {
		const char *pc = priority_class(&s->js->spec.replicated_jobs[idx[k]]);
		if (!prio) {
			prio = pc;
		} else if (strcmp(prio, pc) != 0) {
			char *path = js_buf_format(
				"spec.replicatedJobs[%zu].template.spec.template.spec.priorityClassName", idx[k]);
			serr(s, JS_DIAG_INVALID, path, NULL,
			     "%s, so its ReplicatedJobs need the same priorityClassName ('%s' differs from '%s')", why,
			     pc, prio);
			free(path);
		}
	}
	return prio ? prio : "";
}

/* The podGroupTemplate entry: 1.36's field names; KEP-969's disruptionMode
 * single/all is 1.36's Pod/PodGroup (docs/differences.md). */
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
	if (p->has_disruption)
		json_object_set_new(t, "disruptionMode", json_string(p->all ? "PodGroup" : "Pod"));
	if (priority && priority[0])
		json_object_set_new(t, "priorityClassName", json_string(priority));
	return t;
}

static void add_group(struct js_sched_groups *g, char *name, char *tname, enum js_sched_policy pol, int32_t min,
		      json_t *tmpl)
{
	struct js_sched_group *x = &g->items[g->n++];
	*x = (struct js_sched_group){.name = name, .template_name = tname, .policy = pol,
				     .min_count = pol == JS_SCHED_GANG ? min : 0, .template_ = tmpl};
}

/* One group of the per-ReplicatedJob mode: the ReplicatedJobs `idx` (n), as
 * entry `e` (NULL: an untargeted ReplicatedJob) says, the top-level block
 * `top` giving what the entry leaves out. */
static void build_one(struct sctx *s, const struct policy *top, const struct policy *e, const size_t *idx,
		      size_t n, struct js_sched_groups *g)
{
	const struct js_jobset *js = s->js;
	struct policy p = *top;
	p.has_min = false; /* the top-level minCount is for a composite group, which 1.36 has not */
	p.claims = NULL;
	if (e) {
		if (e->has_policy) {
			p.policy = e->policy;
			p.has_policy = true;
			p.has_min = e->has_min;
			p.min_count = e->min_count;
		}
		if (e->constraints)
			p.constraints = e->constraints;
		if (e->has_disruption) {
			p.has_disruption = true;
			p.all = e->all;
		}
		p.claims = e->claims;
	}
	enum js_sched_policy pol = p.has_policy ? p.policy : JS_SCHED_GANG;
	int64_t rep = 0;
	struct js_buf joined;
	js_buf_init(&joined, 0);
	for (size_t k = 0; k < n; k++) {
		const struct js_rjob *r = &js->spec.replicated_jobs[idx[k]];
		rep += represented(r);
		if (js_buf_printf(&joined, "%s%s", k ? "-" : "", r->name ? r->name : "") < 0)
			js_buf_clear(&joined);
	}
	int32_t min = p.has_min ? p.min_count : (int32_t)(rep > INT32_MAX ? INT32_MAX : rep);
	if (pol == JS_SCHED_GANG && p.has_min && p.min_count > rep)
		/* has_min here comes only from the entry */
		serr(s, JS_DIAG_INVALID, e->min_path, NULL,
		     "minCount %d is more than the %lld pods its ReplicatedJob%s run%s at once (parallelism x "
		     "replicas): the gang could never start",
		     p.min_count, (long long)rep, n > 1 ? "s" : "", n > 1 ? "" : "s");
	const char *prio = n > 1 ? one_priority(s, idx, n, "one PodGroup holds the targets of this entry")
				 : priority_class(&js->spec.replicated_jobs[idx[0]]);
	char *tname = shorten(js_xstrdup(js_buf_str(&joined)));
	for (size_t i = 0; i < g->n; i++)
		if (strcmp(g->items[i].template_name, tname) == 0)
			serr(s, JS_DIAG_DUPLICATE, e && e->path ? e->path : "spec.scheduling", NULL,
			     "two PodGroups would have the template name '%s'; rename a ReplicatedJob", tname);
	char *name = shorten(js_buf_format("%s-%s", js_jobset_name(js), js_buf_str(&joined)));
	add_group(g, name, tname, pol, min, render_template(tname, &p, pol, min, prio));
	js_buf_done(&joined);
}

/* Per-ReplicatedJob mode: in the order of spec.replicatedJobs, each entry's
 * group where its first target stands, and one group of its own for each
 * ReplicatedJob no entry targets. */
static void build_per_rjob(struct sctx *s, const struct policy *top, struct policy *entries, const int *entry_of,
			   struct js_sched_groups *g)
{
	const struct js_jobset *js = s->js;
	for (size_t i = 0; i < js->spec.n_replicated_jobs; i++) {
		if (entry_of[i] < 0) {
			g->of_rjob[i] = (int)g->n;
			build_one(s, top, NULL, &i, 1, g);
			continue;
		}
		struct policy *e = &entries[entry_of[i]];
		if (e->targets[0] != i)
			continue; /* made at its first target */
		for (size_t k = 0; k < e->n_targets; k++)
			g->of_rjob[e->targets[k]] = (int)g->n;
		build_one(s, top, e, e->targets, e->n_targets, g);
	}
}

static void build_top(struct sctx *s, const struct policy *top, struct js_sched_groups *g)
{
	const struct js_jobset *js = s->js;
	size_t nr = js->spec.n_replicated_jobs;
	size_t *all = js_xcalloc(nr ? nr : 1, sizeof(*all));
	for (size_t i = 0; i < nr; i++) {
		all[i] = i;
		g->of_rjob[i] = 0;
	}
	const char *prio = one_priority(s, all, nr, "one PodGroup holds the whole JobSet");
	free(all);
	enum js_sched_policy pol = top->has_policy ? top->policy : JS_SCHED_GANG;
	int64_t rep = represented_all(js);
	int32_t min = top->has_min ? top->min_count : (int32_t)(rep > INT32_MAX ? INT32_MAX : rep);
	const char *name = js_jobset_name(js);
	add_group(g, js_xstrdup(name), js_xstrdup(name), pol, min, render_template(name, top, pol, min, prio));
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
	free(g->of_rjob);
	free(g);
	return NULL;
}

/* The targets of entry `e` at `path`: KEP-969's targetReplicatedJobs, a
 * set of 1..MAX_TARGETS names, or the deprecated targetReplicatedJob, one
 * name. Each names an existing ReplicatedJob that no other entry targets;
 * fills e->targets and entry_of[rjob] = k. */
static void read_targets(struct sctx *s, const json_t *ent, size_t k, struct policy *e, int *entry_of)
{
	const struct js_jobset *js = s->js;
	const char *key;
	const json_t *v = alias_member(s, ent, e->path, "targetReplicatedJobs", "targetReplicatedJob", &key);
	bool old = strcmp(key, "targetReplicatedJob") == 0;
	char *tpath = js_buf_format("%s.%s", e->path, key);
	if (!present(v)) {
		serr(s, JS_DIAG_REQUIRED, tpath, NULL, "an entry must name the ReplicatedJobs it targets");
		free(tpath);
		return;
	}
	if (old ? !json_is_string(v) : !json_is_array(v)) {
		serr(s, JS_DIAG_TYPE, tpath, v, old ? "must be a string" : "must be a list of ReplicatedJob names");
		free(tpath);
		return;
	}
	size_t n = old ? 1 : json_array_size(v);
	if (n == 0)
		serr(s, JS_DIAG_REQUIRED, tpath, NULL, "an entry must name the ReplicatedJobs it targets");
	else if (n > MAX_TARGETS)
		serr(s, JS_DIAG_TOO_MANY, tpath, NULL, "must have at most %d items", MAX_TARGETS);
	if (n == 0 || n > MAX_TARGETS) {
		free(tpath);
		return;
	}
	e->targets = js_xcalloc(n, sizeof(*e->targets));
	for (size_t j = 0; j < n; j++) {
		const json_t *tv = old ? v : json_array_get(v, j);
		const char *t = json_string_value(tv);
		char *ip = old ? js_xstrdup(tpath) : js_buf_format("%s[%zu]", tpath, j);
		int ri = t ? js_jobset_find_rjob(js, t) : -1;
		bool dup_here = false;
		for (size_t i = 0; ri >= 0 && i < e->n_targets; i++)
			dup_here |= e->targets[i] == (size_t)ri;
		if (!t || !t[0])
			serr(s, t ? JS_DIAG_REQUIRED : JS_DIAG_TYPE, ip, tv, "must name a ReplicatedJob");
		else if (strlen(t) > MAX_TARGET_LEN)
			serr(s, JS_DIAG_TOO_LONG, ip, NULL, "may not be more than %d characters", MAX_TARGET_LEN);
		else if (ri < 0)
			serr(s, JS_DIAG_INVALID, ip, tv, "names no ReplicatedJob in spec.replicatedJobs");
		else if (dup_here)
			serr(s, JS_DIAG_DUPLICATE, ip, tv, "named twice in this list");
		else if (entry_of[ri] >= 0)
			serr(s, JS_DIAG_DUPLICATE, ip, tv, "another entry targets this ReplicatedJob already");
		else {
			entry_of[ri] = (int)k;
			e->targets[e->n_targets++] = (size_t)ri;
		}
		free(ip);
	}
	/* In the order of spec.replicatedJobs, so the group's name does not
	 * depend on how the list was written (it is a set). */
	for (size_t a = 1; a < e->n_targets; a++)
		for (size_t b = a; b > 0 && e->targets[b - 1] > e->targets[b]; b--) {
			size_t x = e->targets[b];
			e->targets[b] = e->targets[b - 1];
			e->targets[b - 1] = x;
		}
	free(tpath);
}

/* The entries of replicatedJobs (or the deprecated replicatedJobPolicies):
 * each a block and its targets. KEP-969's per-Job gangs (`job`) are not
 * implemented. Returns how many entries there are (all of `ents` is
 * initialised). */
static size_t read_entries(struct sctx *s, const json_t *sc, struct policy **ret, int *entry_of)
{
	const char *key;
	const json_t *list = alias_member(s, sc, "spec.scheduling", "replicatedJobs", "replicatedJobPolicies", &key);
	char *lp = js_buf_format("spec.scheduling.%s", key);
	if (present(list) && !json_is_array(list)) {
		serr(s, JS_DIAG_TYPE, lp, list, "must be a list");
		list = NULL;
	} else if (json_array_size(list) > MAX_TARGETS) {
		serr(s, JS_DIAG_TOO_MANY, lp, NULL, "must have at most %d items", MAX_TARGETS);
		list = NULL;
	}
	size_t n = json_array_size(list);
	struct policy *ents = js_xcalloc(n ? n : 1, sizeof(*ents));
	for (size_t k = 0; k < n; k++) {
		const json_t *ent = json_array_get(list, k);
		ents[k].path = js_buf_format("%s[%zu]", lp, k);
		if (!json_is_object(ent)) {
			serr(s, JS_DIAG_TYPE, ents[k].path, ent, "must be an object");
			continue;
		}
		read_block(s, ent, ents[k].path, true, &ents[k]);
		if (present(json_object_get(ent, "job"))) {
			char *jp = js_buf_format("%s.job", ents[k].path);
			serr(s, JS_DIAG_FORBIDDEN, jp, NULL,
			     "per-Job gangs (KEP-969's JobSetGangOfGangs stage) are not supported by this "
			     "implementation; give the entry's own schedulingPolicy instead");
			free(jp);
		}
		read_targets(s, ent, k, &ents[k], entry_of);
	}
	free(lp);
	*ret = ents;
	return n;
}

/* Read and check spec.scheduling into groups; warnings (may be NULL) get
 * the deprecated names met. */
static int groups(const struct js_jobset *js, struct js_diag *diag, json_t *warnings, struct js_sched_groups **ret)
{
	struct sctx s = {.js = js, .diag = diag, .warnings = warnings};
	const json_t *sc = js->spec.scheduling;
	if (!json_is_object(sc)) {
		serr(&s, JS_DIAG_TYPE, "spec.scheduling", sc, "must be an object");
		return JS_EINVALID;
	}
	struct policy top = {0};
	read_block(&s, sc, "spec.scheduling", false, &top);
	size_t nr = js->spec.n_replicated_jobs;
	int *entry_of = js_xcalloc(nr ? nr : 1, sizeof(*entry_of));
	for (size_t i = 0; i < nr; i++)
		entry_of[i] = -1;
	struct policy *ents = NULL;
	size_t nent = read_entries(&s, sc, &ents, entry_of);

	bool seq = sequenced(js);
	if (seq && top.has_policy && top.policy == JS_SCHED_GANG && top.has_min)
		serr(&s, JS_DIAG_FORBIDDEN, top.min_path, NULL,
		     "a JobSet-wide minCount cannot be met with sequenced startup (dependsOn or InOrder): each "
		     "ReplicatedJob gets its own gang; set minCount per ReplicatedJob instead");
	if (top.has_min && top.min_count > represented_all(js))
		serr(&s, JS_DIAG_INVALID, top.min_path, NULL,
		     "minCount %d is more than the %lld pods the JobSet runs at once (parallelism x replicas): the "
		     "gang could never start",
		     top.min_count, (long long)represented_all(js));

	struct js_sched_groups *g = js_xcalloc(1, sizeof(*g));
	g->per_rjob = seq || nent > 0;
	g->items = js_xcalloc(nr ? nr : 1, sizeof(*g->items));
	g->n_rjobs = nr;
	g->of_rjob = js_xcalloc(nr ? nr : 1, sizeof(*g->of_rjob));
	for (size_t i = 0; i < nr; i++)
		g->of_rjob[i] = -1;
	size_t ngroups = nr;
	if (g->per_rjob) {
		/* A group per entry and per untargeted ReplicatedJob. */
		ngroups = 0;
		for (size_t i = 0; i < nr; i++)
			ngroups += entry_of[i] < 0 || ents[entry_of[i]].targets[0] == i;
	}
	if (g->per_rjob && ngroups > JS_SCHED_MAX_TEMPLATES)
		serr(&s, JS_DIAG_TOO_MANY, "spec.scheduling", NULL,
		     "one PodGroup per replicatedJobs entry and per untargeted ReplicatedJob would make %zu groups; "
		     "a Kubernetes 1.36 Workload holds at most %d",
		     ngroups, JS_SCHED_MAX_TEMPLATES);
	else if (g->per_rjob)
		build_per_rjob(&s, &top, ents, entry_of, g);
	else
		build_top(&s, &top, g);
	for (size_t k = 0; k < nent; k++)
		policy_done(&ents[k]);
	free(ents);
	policy_done(&top);
	free(entry_of);
	if (s.errors) {
		js_sched_groups_free(g);
		return JS_EINVALID;
	}
	*ret = g;
	return 0;
}

int js_sched_groups(const struct js_jobset *js, struct js_diag *diag, struct js_sched_groups **ret)
{
	return groups(js, diag, NULL, ret);
}

json_t *js_sched_warnings(const struct js_jobset *js)
{
	json_t *w = json_array();
	if (js->spec.scheduling) {
		struct js_sched_groups *g = NULL;
		if (groups(js, NULL, w, &g) == 0)
			js_sched_groups_free(g);
	}
	return w;
}

const struct js_sched_group *js_sched_group_of(const struct js_sched_groups *g, size_t rjob)
{
	if (!g || rjob >= g->n_rjobs || g->of_rjob[rjob] < 0)
		return NULL;
	return &g->items[g->of_rjob[rjob]];
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
