/*
 * failpods.c - the failed pods of a JobSet's current attempt, read for node
 * quarantine (ours, gate NodeQuarantine; core/avoid.c,
 * docs/node-quarantine.md) when the core asks (plan->want_failed_pods).
 *
 * No cache: the core asks only before a whole-JobSet or per-Job restart
 * of a JobSet that states quarantine rules, so one label-scoped, paginated
 * LIST of that JobSet's pods of that attempt (jobset-name and
 * restart-attempt labels) costs the API server what one restart does
 * anyway, and 10k JobSets that never fail cost nothing. Of each pod only
 * what a rule can use is kept (node name, non-zero exit codes, True
 * condition types the rules name, the labels naming its Job), and only
 * pods a rule may blame, at most MAX_PODS. The node-lost rule
 * costs one GET per distinct node of those pods, at most MAX_NODE_GETS.
 *
 * Memory: the worker's arena (reset after the reconcile).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "api/quarantine.h"
#include "base/arena.h"
#include "base/buf.h"
#include "base/json.h"
#include "ctrl/sync_int.h"

#define PAGE 500
/* Pods kept at most: a restart blames at most JS_QUARANTINE_MAX_NODES
 * nodes, and pods beyond a few thousand bad ones add no node. */
#define MAX_PODS 4096
#define MAX_EXIT_CODES 16
#define MAX_NODE_GETS JS_QUARANTINE_MAX_NODES

static const struct js_resource res_nodes = {"", "v1", "nodes", false};

/* Non-zero exit codes of the terminated containers of `statuses` (state and
 * lastState: with restartPolicy OnFailure the container restarts in the
 * same pod and its exit is in lastState). */
static void exit_codes(const json_t *statuses, int32_t *codes, size_t *n)
{
	size_t i;
	const json_t *s;
	json_array_foreach(statuses, i, s) {
		const char *where[] = {"state.terminated.exitCode", "lastState.terminated.exitCode"};
		for (size_t k = 0; k < 2 && *n < MAX_EXIT_CODES; k++) {
			const json_t *x = js_json_path(s, where[k]);
			if (json_is_integer(x) && json_integer_value(x) != 0 && json_integer_value(x) >= INT32_MIN &&
			    json_integer_value(x) <= INT32_MAX)
				codes[(*n)++] = (int32_t)json_integer_value(x);
		}
	}
}

struct reading {
	struct js_arena *a;
	const struct js_quarantine_rules *rules;
	int32_t attempt;
	const char *uid;
	struct js_failpod *pods;
	size_t n;
};

/* Label `key` copied into arena `a`, or NULL when absent. */
static const char *label(struct js_arena *a, const json_t *labels, const char *key)
{
	const char *v = js_json_str(labels, key);
	return v ? js_arena_strdup(a, v) : NULL;
}

/* Keep `pod` when a rule may blame its node. */
static void add_pod(struct reading *rd, const json_t *pod)
{
	const json_t *meta = json_object_get(pod, "metadata"), *st = json_object_get(pod, "status");
	const json_t *labels = json_object_get(meta, "labels");
	const char *uid = js_json_str(labels, JS_LABEL_JOBSET_UID);
	const char *node = js_json_str(json_object_get(pod, "spec"), "nodeName");
	if (rd->n == MAX_PODS || !node || !*node || (rd->uid && (!uid || strcmp(uid, rd->uid) != 0)))
		return;
	int32_t codes[MAX_EXIT_CODES];
	size_t nc = 0;
	exit_codes(json_object_get(st, "initContainerStatuses"), codes, &nc);
	exit_codes(json_object_get(st, "containerStatuses"), codes, &nc);
	const char *conds[JS_QUARANTINE_MAX_CONDITIONS];
	size_t nt = 0;
	size_t i;
	const json_t *cd;
	json_array_foreach(json_object_get(st, "conditions"), i, cd) {
		const char *t = js_json_str(cd, "type"), *s = js_json_str(cd, "status");
		if (t && s && strcmp(s, "True") == 0 && js_quarantine_rules_condition(rd->rules, t) &&
		    nt < JS_QUARANTINE_MAX_CONDITIONS)
			conds[nt++] = t;
	}
	const char *phase = js_json_str(st, "phase");
	bool failed = phase && strcmp(phase, "Failed") == 0;
	if (!failed && nc == 0 && nt == 0)
		return;
	struct js_failpod *p = &rd->pods[rd->n++];
	*p = (struct js_failpod){
		.name = js_arena_strdup(rd->a, js_json_str(meta, "name")),
		.node = js_arena_strdup(rd->a, node),
		.attempt = rd->attempt,
		.n_exit_codes = nc,
		.n_conditions = nt,
		/* Which Job it belongs to: the labels our pod template
		 * carries (api/render.c), which the core also reads from the
		 * Job (core/job.h), so a per-Job restart can take that Job's
		 * pods only, of its job-restart-attempt only. */
		.rjob_name = label(rd->a, labels, JS_LABEL_RJOB_NAME),
		.job_index = label(rd->a, labels, JS_LABEL_JOB_INDEX),
		.job_restart_attempt = label(rd->a, labels, JS_LABEL_JOB_RESTART_ATTEMPT),
	};
	int32_t *cc = js_arena_calloc(rd->a, nc ? nc : 1, sizeof(*cc));
	memcpy(cc, codes, nc * sizeof(*cc));
	p->exit_codes = cc;
	const char **tt = js_arena_calloc(rd->a, nt ? nt : 1, sizeof(*tt));
	for (size_t k = 0; k < nt; k++)
		tt[k] = js_arena_strdup(rd->a, conds[k]);
	p->conditions = tt;
}

/* A node is lost when it is gone or its Ready condition is not True. -1
 * on an error other than NotFound (then nothing is said of the node). */
static int node_lost(struct js_controller *c, const char *name, bool *lost)
{
	json_t *obj = NULL;
	struct js_apierr e = {0};
	int r = js_client_get(c->client, &res_nodes, NULL, name, NULL, &obj, &e);
	js__count(c, "GET", r, &e, 200);
	if (r < 0) {
		bool gone = e.http_code == 404;
		js_apierr_done(&e);
		if (!gone)
			return -1;
		*lost = true;
		return 0;
	}
	js_apierr_done(&e);
	*lost = true;
	size_t i;
	const json_t *cd;
	json_array_foreach(js_json_path(obj, "status.conditions"), i, cd) {
		const char *t = js_json_str(cd, "type"), *s = js_json_str(cd, "status");
		if (t && strcmp(t, "Ready") == 0)
			*lost = !s || strcmp(s, "True") != 0;
	}
	json_decref(obj);
	return 0;
}

static void mark_lost_nodes(struct js_controller *c, struct reading *rd)
{
	size_t gets = 0;
	for (size_t i = 0; i < rd->n; i++) {
		bool seen = false, lost = false;
		for (size_t k = 0; k < i && !seen; k++)
			if (strcmp(rd->pods[k].node, rd->pods[i].node) == 0) {
				seen = true;
				rd->pods[i].node_lost = rd->pods[k].node_lost;
			}
		if (seen || gets == MAX_NODE_GETS)
			continue;
		gets++;
		if (node_lost(c, rd->pods[i].node, &lost) == 0)
			rd->pods[i].node_lost = lost;
	}
}

int js__failpods_list(struct js_controller *c, struct js_arena *a, const struct js__observed *o,
		      const char *field_selector, const char *what, bool (*each)(void *ctx, const json_t *pod),
		      void *ctx)
{
	const struct js_jobset *js = o->rec->js;
	char *sel = js_arena_printf(a, "%s=%s,%s=%" PRId32, JS_LABEL_JOBSET_NAME, o->name, JS_LABEL_RESTART_ATTEMPT,
				    js->status.restarts);
	char *cont = NULL;
	struct js_apierr err = {0};
	int r = 0;
	bool more = true;
	do {
		struct js_list_opts lo = {.label_selector = sel, .field_selector = field_selector, .limit = PAGE,
					  .continue_token = cont};
		json_t *page = NULL;
		js_apierr_done(&err);
		r = js_client_list(c->client, &js_client_res_pods, o->ns, &lo, &page, &err);
		js__count(c, "GET", r, &err, 200);
		if (r < 0)
			break;
		size_t i;
		const json_t *pod;
		json_array_foreach(json_object_get(page, "items"), i, pod)
			more = more && each(ctx, pod);
		free(cont);
		const char *next = js_json_str(json_object_get(page, "metadata"), "continue");
		cont = more && next && *next ? js_xstrdup(next) : NULL;
		json_decref(page);
	} while (cont);
	free(cont);
	if (r < 0 && !js__aborted(c))
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO,
			      "jobset '%s/%s': listing the %s pods of attempt %" PRId32 " for node quarantine: %s", o->ns,
			      o->name, what, js->status.restarts, js__why(&err, r));
	js_apierr_done(&err);
	return r;
}

static bool each_failed(void *ctx, const json_t *pod)
{
	add_pod(ctx, pod);
	return true;
}

int js__failpods_read(struct js_controller *c, struct js_arena *a, const struct js__observed *o,
		      struct js_reconcile_input *in)
{
	const struct js_jobset *js = o->rec->js;
	struct js_quarantine_rules *rules = js_arena_calloc(a, 1, sizeof(*rules));
	if (js_quarantine_rules_read(js->meta.annotations, rules, NULL) < 0) {
		/* Partly invalid: the valid rules stand, as in the core. */
	}
	struct reading rd = {.a = a, .rules = rules, .attempt = js->status.restarts, .uid = js->meta.uid};
	rd.pods = js_arena_calloc(a, MAX_PODS, sizeof(*rd.pods));
	int r = js__failpods_list(c, a, o, NULL, "failed", each_failed, &rd);
	if (r < 0)
		return r;
	if (rules->node_lost)
		mark_lost_nodes(c, &rd);
	in->failed_pods_known = true;
	in->failed_pods = rd.pods;
	in->n_failed_pods = rd.n;
	return 0;
}
