/*
 * pod_admit.c - the pod admission webhooks mpod.kb.io and vpod.kb.io
 * (SPEC §9): exclusive placement of one child Job per topology domain.
 *
 * The leader pod (completion index 0) gets a pod affinity to its own Job and
 * an anti-affinity to every other Job of the same priority, in both modes.
 * Followers:
 *  - gates (ours, the default): every pod of the Job is labelled
 *    JS_LABEL_EXCLUSIVE_PLACEMENT (the controller's pod cache selects on it)
 *    and each follower gets the scheduling gate JS_GATE_EXCLUSIVE_PLACEMENT;
 *    the controller lifts the gate and adds the leader's domain as
 *    nodeSelector once the leader is bound (ctrl/placement.c). No lookups,
 *    no rejections for a leader that is not scheduled yet.
 *  - webhook (upstream's): followers are rejected until the leader is bound
 *    to a node, then pinned to the leader's domain with a nodeSelector; the
 *    Job controller retries rejected pod creations with its own backoff.
 *
 * With the gate ProgressDeadline, mpod.kb.io also gives a pod with a
 * progress deadline its heartbeat volume and watcher (watcher.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jobset.h"
#include "base/buf.h"
#include "base/json.h"
#include "webhook/jsonpatch.h"
#include "webhook/webhook_int.h"

/* Appends whose buffers have ceilings far above anything bounded input
 * can produce; a truncated message is still a message. */
static void best_effort(int r)
{
	(void)r;
}

static const char *label(const json_t *pod, const char *key)
{
	return js_json_str(json_object_get(json_object_get(pod, "metadata"), "labels"), key);
}

static const char *annotation(const json_t *pod, const char *key)
{
	return js_json_str(json_object_get(json_object_get(pod, "metadata"), "annotations"), key);
}

static bool is_leader(const json_t *pod)
{
	const char *idx = annotation(pod, JS_ANN_JOB_COMPLETION_INDEX);
	return idx && strcmp(idx, "0") == 0;
}

/* Name without its last dash-separated segment equals `leader`, and the
 * name has at least 5 segments (SPEC §9.1 step 2). */
static bool leader_name_matches(const char *name, const char *leader)
{
	size_t dashes = 0;
	for (const char *c = name; *c; c++)
		dashes += *c == '-';
	const char *last = strrchr(name, '-');
	if (dashes < 4 || !last)
		return false;
	size_t n = (size_t)(last - name);
	return strlen(leader) == n && strncmp(name, leader, n) == 0;
}

/* SPEC §9.1: find the one live leader pod of `pod`'s Job. Returns a new
 * reference, or NULL with *ret_err set (malloc'd). */
static json_t *find_leader(const struct js_webhook_admit_cfg *cfg, const char *ns, const json_t *pod, char **ret_err)
{
	static const char *const keys[] = {JS_LABEL_JOBSET_NAME, JS_LABEL_RJOB_NAME, JS_LABEL_JOB_INDEX};
	struct js_buf b;
	js_buf_init(&b, 4096);
	json_t *match = json_object();
	for (size_t i = 0; i < JS_ARRAY_SIZE(keys); i++) {
		const char *v = label(pod, keys[i]);
		if (!v) {
			best_effort(js_buf_printf(&b, "pod missing label: %s", keys[i]));
			*ret_err = js_buf_take(&b);
			json_decref(match);
			return NULL;
		}
		json_object_set_new(match, keys[i], json_string(v));
	}
	char *leader = NULL;
	{
		struct js_buf ln;
		js_buf_init(&ln, 1024);
		best_effort(js_buf_printf(&ln, "%s-%s-%s-0", label(pod, keys[0]), label(pod, keys[1]), label(pod, keys[2])));
		leader = js_buf_take(&ln);
	}
	json_t *pods = NULL, *found = NULL;
	size_t count = 0;
	char *err = NULL;
	int r = cfg->lookups.list_pods ? cfg->lookups.list_pods(cfg->lookups.ctx, ns, match, &pods, &err) : 0;
	if (r < 0) {
		*ret_err = err ? err : js_xstrdup("listing pods failed");
		goto out;
	}
	size_t i;
	json_t *p;
	json_array_foreach(pods, i, p)
	{
		const json_t *meta = json_object_get(p, "metadata");
		const char *name = js_json_str(meta, "name");
		const char *phase = js_json_str(json_object_get(p, "status"), "phase");
		if (!name || !annotation(p, JS_ANN_EXCLUSIVE_TOPOLOGY) || !leader_name_matches(name, leader))
			continue;
		if (json_object_get(meta, "deletionTimestamp") ||
		    (phase && (strcmp(phase, "Failed") == 0 || strcmp(phase, "Succeeded") == 0)))
			continue;
		count++;
		found = p;
	}
	if (count != 1) {
		best_effort(js_buf_printf(&b, "expected 1 leader pod (%s), but got %zu. this is an expected, transient error",
				    leader, count));
		*ret_err = js_buf_take(&b);
		found = NULL;
		goto out;
	}
	const char *fuid = js_json_controller_uid(pod), *luid = js_json_controller_uid(found);
	if (!fuid)
		best_effort(js_buf_puts(&b, "follower pod has no owner reference"));
	else if (!luid)
		best_effort(js_buf_printf(&b, "leader pod \"%s\" has no owner reference",
				    js_json_str(json_object_get(found, "metadata"), "name")));
	else if (strcmp(fuid, luid) != 0)
		best_effort(js_buf_printf(&b, "follower pod owner UID (%s) != leader pod owner UID (%s)", fuid, luid));
	if (b.len) {
		*ret_err = js_buf_take(&b);
		found = NULL;
		goto out;
	}
	json_incref(found);
out:
	json_decref(pods);
	json_decref(match);
	free(leader);
	js_buf_done(&b);
	return found;
}

static json_t *require_obj(json_t *parent, const char *key)
{
	json_t *v = json_object_get(parent, key);
	if (!json_is_object(v)) {
		v = json_object();
		json_object_set_new(parent, key, v);
	}
	return v;
}

static json_t *require_arr(json_t *parent, const char *key)
{
	json_t *v = json_object_get(parent, key);
	if (!json_is_array(v)) {
		v = json_array();
		json_object_set_new(parent, key, v);
	}
	return v;
}

static json_t *expr(const char *key, const char *op, const char *value)
{
	json_t *e = json_object();
	json_object_set_new(e, "key", json_string(key));
	json_object_set_new(e, "operator", json_string(op));
	if (value) {
		json_t *vals = json_array();
		json_array_append_new(vals, json_string(value));
		json_object_set_new(e, "values", vals);
	}
	return e;
}

static json_t *term(json_t *exprs, const char *topology)
{
	json_t *t = json_object();
	json_t *sel = json_object();
	json_object_set_new(sel, "matchExpressions", exprs);
	json_object_set_new(t, "labelSelector", sel);
	json_object_set_new(t, "topologyKey", json_string(topology));
	json_object_set_new(t, "namespaceSelector", json_object());
	return t;
}

/* SPEC §9.2 PM5: leader affinity to its own Job, anti-affinity to others. */
static void leader_affinity(json_t *pod, const char *topology)
{
	const char *job_key = label(pod, JS_LABEL_JOB_KEY);
	const char *prio = label(pod, JS_LABEL_PRIORITY);
	char *jk = js_xstrdup(job_key ? job_key : ""), *pr = js_xstrdup(prio ? prio : "");
	json_t *aff = require_obj(require_obj(pod, "spec"), "affinity");
	json_t *pa = require_obj(aff, "podAffinity"), *paa = require_obj(aff, "podAntiAffinity");
	json_t *e1 = json_array();
	json_array_append_new(e1, expr(JS_LABEL_JOB_KEY, "In", jk));
	json_array_append_new(require_arr(pa, "requiredDuringSchedulingIgnoredDuringExecution"), term(e1, topology));
	json_t *e2 = json_array();
	json_array_append_new(e2, expr(JS_LABEL_JOB_KEY, "Exists", NULL));
	json_array_append_new(e2, expr(JS_LABEL_JOB_KEY, "NotIn", jk));
	json_array_append_new(e2, expr(JS_LABEL_PRIORITY, "In", pr));
	json_array_append_new(require_arr(paa, "requiredDuringSchedulingIgnoredDuringExecution"), term(e2, topology));
	free(jk);
	free(pr);
}

static void deny(struct js_admission_resp *resp, int code, const char *reason, const char *msg)
{
	resp->allowed = false;
	json_decref(resp->status);
	resp->status = js_admission_status(code, reason, msg);
}

/* SPEC §9.2 PM6: pin a follower to its scheduled leader's domain. Returns
 * false when the request must be rejected (resp filled). */
static bool follower_selector(const struct js_webhook_admit_cfg *cfg, const struct js_admission_req *req,
			      json_t *pod, const char *topology, struct js_admission_resp *resp)
{
	char *err = NULL;
	json_t *leader = find_leader(cfg, req->namespace_, pod, &err);
	const char *node_name = leader ? js_json_str(json_object_get(leader, "spec"), "nodeName") : NULL;
	bool ok = true;
	if (!leader || !node_name || !node_name[0])
		goto out; /* the validating webhook rejects it */
	json_t *node = NULL;
	int code = 500;
	char *nerr = NULL;
	int r = cfg->lookups.get_node ? cfg->lookups.get_node(cfg->lookups.ctx, node_name, &node, &code, &nerr)
				      : JS_ENOTFOUND;
	if (r < 0) {
		if (!cfg->lookups.get_node) {
			code = 404;
			nerr = js_xstrdup("no node lookup configured");
		}
		char msg[1024];
		snprintf(msg, sizeof(msg), "%s", nerr ? nerr : "node lookup failed");
		deny(resp, code, code == 404 ? "NotFound" : "InternalError", msg);
		free(nerr);
		ok = false;
		goto out;
	}
	const char *value = js_json_str(json_object_get(json_object_get(node, "metadata"), "labels"), topology);
	if (!value) {
		char msg[1024];
		snprintf(msg, sizeof(msg), "node does not have topology label: %s", topology);
		deny(resp, 403, "Forbidden", msg);
		ok = false;
	} else {
		json_object_set_new(require_obj(require_obj(pod, "spec"), "nodeSelector"), topology, json_string(value));
	}
	json_decref(node);
out:
	free(err);
	json_decref(leader);
	return ok;
}

static bool has_gate(const json_t *pod)
{
	size_t i;
	json_t *g;
	json_array_foreach(json_object_get(json_object_get(pod, "spec"), "schedulingGates"), i, g)
	{
		const char *name = js_json_str(g, "name");
		if (name && strcmp(name, JS_GATE_EXCLUSIVE_PLACEMENT) == 0)
			return true;
	}
	return false;
}

/* Gates mode (see the top): label the pod; gate a follower. A pod created
 * with spec.nodeName is left alone: the API server refuses scheduling gates
 * on a bound pod, and its placement is already decided. */
static void gate_follower(json_t *pod, bool leader)
{
	json_t *spec = require_obj(pod, "spec");
	const char *node = js_json_str(spec, "nodeName");
	if (node && node[0])
		return;
	json_object_set_new(require_obj(require_obj(pod, "metadata"), "labels"), JS_LABEL_EXCLUSIVE_PLACEMENT,
			    json_string(JS_LABEL_EXCLUSIVE_PLACEMENT_VALUE));
	if (leader || has_gate(pod))
		return;
	json_t *gate = json_object();
	json_object_set_new(gate, "name", json_string(JS_GATE_EXCLUSIVE_PLACEMENT));
	json_array_append_new(require_arr(spec, "schedulingGates"), gate);
}

void js__pod_admit_mutate(const struct js_webhook_admit_cfg *cfg, const struct js_admission_req *req,
			  struct js_admission_resp *resp)
{
	resp->allowed = true;
	const json_t *orig = req->object;
	if (!req->operation || strcmp(req->operation, "CREATE") != 0 || !json_is_object(orig))
		return;
	/* PM1: only JobSet pods. */
	if (!annotation(orig, JS_LABEL_JOBSET_NAME))
		return;
	json_t *pod = json_deep_copy(orig);
	/* Hang detection first: it refuses a pod that uses its names, and it
	 * applies under the node-selector strategy too. */
	char *err = NULL;
	if (js__watcher_inject(cfg, pod, &err) < 0) {
		deny(resp, 403, "Forbidden", err);
		free(err);
		json_decref(pod);
		return;
	}
	/* PM2: placement does nothing under the node-selector strategy. */
	bool placement = !annotation(orig, JS_ANN_NODE_SELECTOR);
	const json_t *prio = json_object_get(json_object_get(pod, "spec"), "priority");
	if (placement && json_is_integer(prio)) { /* PM3 */
		char buf[32];
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(prio));
		json_object_set_new(require_obj(require_obj(pod, "metadata"), "labels"), JS_LABEL_PRIORITY,
				    json_string(buf));
	}
	const char *topology = placement ? annotation(pod, JS_ANN_EXCLUSIVE_TOPOLOGY) : NULL;
	bool ok = true;
	if (topology) { /* PM4 */
		char *topo = js_xstrdup(topology);
		bool leader = is_leader(pod);
		if (leader)
			leader_affinity(pod, topo); /* PM5 */
		if (cfg->placement == JS_PLACEMENT_GATES)
			gate_follower(pod, leader);
		else if (!leader)
			ok = follower_selector(cfg, req, pod, topo, resp); /* PM6 */
		free(topo);
	}
	if (ok) {
		json_t *patch = js_jsonpatch_diff(orig, pod);
		if (json_array_size(patch))
			resp->patch = patch;
		else
			json_decref(patch);
	}
	json_decref(pod);
}

void js__pod_admit_validate(const struct js_webhook_admit_cfg *cfg, const struct js_admission_req *req,
			    struct js_admission_resp *resp)
{
	resp->allowed = true;
	const json_t *pod = req->object;
	if (!req->operation || strcmp(req->operation, "CREATE") != 0 || !json_is_object(pod))
		return;
	/* PV1-PV4. */
	if (!annotation(pod, JS_LABEL_JOBSET_NAME) || annotation(pod, JS_ANN_NODE_SELECTOR))
		return;
	const char *topology = annotation(pod, JS_ANN_EXCLUSIVE_TOPOLOGY);
	if (!topology || is_leader(pod))
		return;
	const json_t *sel = json_object_get(json_object_get(pod, "spec"), "nodeSelector");
	struct js_buf msg;
	js_buf_init(&msg, 8192);
	if (cfg->placement == JS_PLACEMENT_GATES) {
		/* A follower waits behind the gate, or was placed some other
		 * way; never refused for a leader that is not scheduled yet. */
		const char *node = js_json_str(json_object_get(pod, "spec"), "nodeName");
		if (!has_gate(pod) && !json_object_get(sel, topology) && !(node && node[0]))
			best_effort(js_buf_printf(&msg,
						  "follower pod has neither the scheduling gate %s nor a node selector for "
						  "%s: the pod mutating webhook (mpod.kb.io) did not run for it",
						  JS_GATE_EXCLUSIVE_PLACEMENT, topology));
	} else if (!json_is_object(sel)) { /* PV5 */
		best_effort(js_buf_puts(&msg, "follower pod node selector not set"));
	} else if (!json_object_get(sel, topology)) { /* PV6 */
		best_effort(js_buf_printf(&msg, "follower pod node selector for topology domain not found. missing selector: %s",
				    topology));
	} else {
		char *err = NULL;
		json_t *leader = find_leader(cfg, req->namespace_, pod, &err);
		const char *node = leader ? js_json_str(json_object_get(leader, "spec"), "nodeName") : NULL;
		if (!leader) /* PV7 */
			best_effort(js_buf_puts(&msg, err));
		else if (!node || !node[0]) /* PV8 */
			best_effort(js_buf_puts(&msg, "leader pod not yet scheduled, not creating follower pod. this is an "
						"expected, transient error"));
		free(err);
		json_decref(leader);
	}
	if (msg.len)
		deny(resp, 403, "Forbidden", js_buf_str(&msg));
	js_buf_done(&msg);
}
