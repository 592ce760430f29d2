/*
 * avoid.c - node quarantine across restarts (ours, gate NodeQuarantine;
 * docs/node-quarantine.md): which nodes the next attempt keeps off.
 *
 * Decided at a whole-JobSet restart, from the failed pods of the attempt
 * that ends (the runtime reads them when asked: plan->want_failed_pods)
 * and the list of that attempt; remembered on every Job of the new attempt
 * (api/quarantine.h js_quarantine_apply), read back from there. Until the
 * new attempt's first Job exists, the NodesQuarantined condition written
 * with the restart carries the list (its message ends with the list's
 * text): the failed pods and the old Jobs are gone by then.
 *
 * A per-Job restart (RestartJob) keeps the attempt: the nodes of the
 * restarted Job's own failed pods join the current attempt's list, so
 * every Job made from then on keeps off them, its recreation included.
 * The Jobs of one attempt then carry different lists (each the list as it
 * was when the Job was made; the list only grows within an attempt), so
 * the list read back is the union of theirs; the condition bridges while a
 * recreation is still to be made.
 *
 * With the gate off nothing here runs: no condition, no annotation, no
 * affinity. Bounded: at most JS_QUARANTINE_MAX_NODES entries, each failed
 * pod looked at once.
 */
#include <inttypes.h>
#include <string.h>

#include "api/quarantine.h"
#include "api/validate.h"
#include "base/buf.h"
#include "base/parse.h"
#include "core/core_int.h"

#define MARKER JS_QUARANTINE_MARKER

/* The JobSet's rules, or NULL when the gate is off or it states none. A
 * value that never met the webhook and is not valid is left out (the rest
 * apply), as validation would have refused it. */
static const struct js_quarantine_rules *rules(struct js__ctx *c)
{
	if (!c->in->gates.node_quarantine)
		return NULL;
	if (!c->avoid.read) {
		c->avoid.read = true;
		struct js_quarantine_rules *r = js_arena_calloc(c->plan->arena, 1, sizeof(*r));
		if (js_quarantine_rules_read(c->js->meta.annotations, r, NULL) < 0) {
			/* Partly invalid: the valid rules stand. */
		}
		c->avoid.rules = r->any ? r : NULL;
	}
	return c->avoid.rules;
}

/* Merge `from` into `into`: one entry per node, the later last attempt
 * wins; entries beyond JS_QUARANTINE_MAX_NODES are dropped (only a list
 * someone wrote by hand gets there: within an attempt the list only grows,
 * and every Job made carries all of it). */
static void merge(struct js_quarantine_list *into, const struct js_quarantine_list *from)
{
	for (size_t i = 0; i < from->n; i++) {
		int at = js_quarantine_list_find(into, from->items[i].node);
		if (at >= 0) {
			if (from->items[i].until > into->items[at].until)
				into->items[at] = from->items[i];
		} else if (into->n < JS_QUARANTINE_MAX_NODES) {
			into->items[into->n++] = from->items[i];
		}
	}
}

/* The attempt a NodesQuarantined message names ("attempt N keeps off"),
 * or -1 when it names none. */
static int64_t cond_attempt(const char *m)
{
	static const char prefix[] = "attempt ";
	size_t n = 0;
	int64_t v;
	if (!m || strncmp(m, prefix, sizeof(prefix) - 1) != 0)
		return -1;
	m += sizeof(prefix) - 1;
	while (m[n] >= '0' && m[n] <= '9' && n < 11)
		n++;
	if (m[n] != ' ' || js_parse_i64_in(m, n, 0, INT32_MAX, &v) < 0)
		return -1;
	return v;
}

/* A per-Job restart of this attempt whose new Job does not exist yet:
 * some index has jobRestarts above 0 and no current Job carries that
 * job-restart-attempt. Counted, not matched one by one: one name per
 * index, so at most one current Job per index. */
static bool recreation_pending(const struct js__ctx *c)
{
	const struct js_status *st = &c->js->status;
	size_t want = 0, have = 0;
	for (size_t i = 0; i < st->n_replicated_jobs_status; i++) {
		const struct js_i32list *l = &st->replicated_jobs_status[i].job_restarts;
		for (size_t k = 0; k < l->n; k++)
			want += l->items[k] > 0;
	}
	if (want == 0)
		return false;
	const struct js__bucket *b[] = {&c->active, &c->succeeded, &c->failed};
	for (size_t i = 0; i < JS_ARRAY_SIZE(b); i++) {
		for (size_t k = 0; k < b[i]->n; k++) {
			const struct js_obsjob *j = b[i]->items[k];
			int32_t idx, att;
			int si = j->rjob_name ? js_jobset_find_rjob_status(c->js, j->rjob_name) : -1;
			if (si < 0 || !j->job_index || !js__parse_i32(j->job_index, &idx) || idx < 0 ||
			    !j->job_restart_attempt || !js__parse_i32(j->job_restart_attempt, &att) || att <= 0)
				continue;
			const struct js_i32list *l = &st->replicated_jobs_status[si].job_restarts;
			have += (size_t)idx < l->n && l->items[idx] == att;
		}
	}
	return have < want;
}

/* The list of the current attempt (status.restarts of the pass's copy):
 * the union of its Jobs' lists, plus the condition's while it is the
 * bridge - no Job of the attempt exists yet (a whole-JobSet restart), or a
 * Job restarted on its own is still to be made - and it names this
 * attempt. Once every Job exists the templates alone count: the condition
 * is status, which anyone allowed to patch it rewrites. Entries past their
 * last attempt are dropped. A text that does not parse (garbage a status
 * or Job writer put there) counts as the empty list. */
static void current_list(struct js__ctx *c, struct js_quarantine_list *l)
{
	struct js_quarantine_list *one = js_arena_calloc(c->plan->arena, 1, sizeof(*one));
	const struct js__bucket *b[] = {&c->active, &c->succeeded, &c->failed};
	/* Most Jobs carry the same text: each distinct one is parsed once. */
	const char *seen[8];
	size_t n_seen = 0, n_jobs = 0;
	l->n = 0;
	for (size_t i = 0; i < JS_ARRAY_SIZE(b); i++) {
		for (size_t k = 0; k < b[i]->n; k++) {
			const char *text = b[i]->items[k]->quarantined_nodes;
			bool dup = false;
			n_jobs++;
			for (size_t s = 0; s < n_seen && !dup; s++)
				dup = strcmp(seen[s], text ? text : "") == 0;
			if (dup)
				continue;
			if (n_seen < JS_ARRAY_SIZE(seen))
				seen[n_seen++] = text ? text : "";
			if (js_quarantine_list_parse(text, one) == 0)
				merge(l, one);
		}
	}
	int32_t now = c->js->status.restarts;
	if (n_jobs == 0 || recreation_pending(c)) {
		const struct js_condition *cond = js_jobset_condition(c->js, JS_COND_NODES_QUARANTINED);
		const char *m = cond && cond->status && strcmp(cond->status, "True") == 0 ? cond->message : NULL;
		const char *at = m && cond_attempt(m) == now ? strstr(m, MARKER) : NULL;
		if (at && js_quarantine_list_parse(at + strlen(MARKER), one) == 0)
			merge(l, one);
	}
	size_t k = 0;
	for (size_t i = 0; i < l->n; i++)
		if (l->items[i].until >= now)
			l->items[k++] = l->items[i];
	l->n = k;
}

static void set_condition(struct js__ctx *c, const struct js_quarantine_list *l)
{
	if (l->n == 0) {
		(void)js__status_set_condition(c, JS_COND_NODES_QUARANTINED, false, "NoNodesQuarantined",
					       "no node is kept off the current attempt", "Normal");
		return;
	}
	struct js_buf b;
	js_buf_init(&b, 0);
	if (js_buf_printf(&b, "attempt %" PRId32 " keeps off %zu node%s" MARKER, c->js->status.restarts, l->n,
			  l->n == 1 ? "" : "s") < 0 ||
	    js_quarantine_list_format(l, &b) < 0)
		js_buf_clear(&b); /* bounded: JS_QUARANTINE_MAX_NODES entries */
	(void)js__status_set_condition(c, JS_COND_NODES_QUARANTINED, true, "NodesQuarantined", js_buf_str(&b),
				       "Warning");
	js_buf_done(&b);
}

bool js__avoid_hold(struct js__ctx *c)
{
	if (!rules(c) || c->in->failed_pods_known)
		return false;
	c->plan->want_failed_pods = true;
	return true;
}

/* What of `p` blames its node under `r`, in *e (node set by the caller);
 * false when nothing does. Exit codes first, then conditions, then the
 * node lost: the most specific reason wins. */
static bool blame(const struct js_quarantine_rules *r, const struct js_failpod *p, struct js_quarantine_entry *e)
{
	for (size_t i = 0; i < p->n_exit_codes; i++) {
		int32_t x = p->exit_codes[i];
		if (x >= 1 && x <= 255 && r->exit_code[x]) {
			e->why = JS_QUARANTINE_EXIT_CODE;
			e->exit_code = x;
			return true;
		}
	}
	for (size_t i = 0; i < p->n_conditions; i++) {
		const char *t = p->conditions[i];
		if (t && js_quarantine_rules_condition(r, t) && strlen(t) <= JS_QUARANTINE_MAX_TYPE) {
			e->why = JS_QUARANTINE_POD_CONDITION;
			memcpy(e->condition, t, strlen(t) + 1);
			return true;
		}
	}
	if (r->node_lost && p->node_lost) {
		e->why = JS_QUARANTINE_NODE_LOST;
		return true;
	}
	return false;
}

/* `job`: the Job a per-Job restart makes again, or NULL for a whole-JobSet
 * restart. */
static void event(struct js__ctx *c, const struct js_quarantine_entry *e, const char *pod, const char *job)
{
	struct js_buf why;
	js_buf_init(&why, 0);
	if (js_quarantine_why_text(e, &why) < 0)
		js_buf_clear(&why);
	int32_t from = c->js->status.restarts;
	const char *msg =
		job ? js__fmt(c,
			      "node %s is kept off the Jobs made from now on, through attempt %" PRId32
			      ": pod %s failed there (%s), and its Job %s is restarted on its own",
			      e->node, e->until, pod ? pod : "?", js_buf_str(&why), job)
		    : js__fmt(c, "node %s is kept off attempts %" PRId32 " to %" PRId32 ": pod %s failed there (%s)",
			      e->node, from, e->until, pod ? pod : "?", js_buf_str(&why));
	js__ctx_event(c, "Warning", "NodeQuarantined", msg);
	js_buf_done(&why);
}

static bool parse_label(const char *v, int32_t *ret)
{
	*ret = 0; /* a missing job-restart-attempt label is attempt 0 */
	return !v || (js__parse_i32(v, ret) && *ret >= 0);
}

/* Whether failed pod `p` belongs to Job `j` as it is now: the same
 * ReplicatedJob and index, and the same job-restart-attempt, so a pod of
 * an earlier Job of that index (blamed when that one was restarted) is
 * not blamed again. */
static bool pod_of(const struct js_failpod *p, const struct js_obsjob *j)
{
	int32_t pi, ji, pa, ja;
	return p->rjob_name && j->rjob_name && strcmp(p->rjob_name, j->rjob_name) == 0 && p->job_index &&
	       j->job_index && js__parse_i32(p->job_index, &pi) && js__parse_i32(j->job_index, &ji) && pi == ji &&
	       parse_label(p->job_restart_attempt, &pa) && parse_label(j->job_restart_attempt, &ja) && pa == ja;
}

/* Add to `l` the node of each failed pod of attempt `attempt` (of Job
 * `job` only, unless NULL) that `r` blames, kept off through attempt
 * `until`; a NodeQuarantined event per node added or extended, and one
 * NodeQuarantineFull for the nodes the list had no room for. */
static void blame_pods(struct js__ctx *c, const struct js_quarantine_rules *r, struct js_quarantine_list *l,
		       int32_t attempt, int32_t until, const struct js_obsjob *job)
{
	size_t dropped = 0;
	for (size_t i = 0; c->in->failed_pods_known && i < c->in->n_failed_pods; i++) {
		const struct js_failpod *p = &c->in->failed_pods[i];
		struct js_quarantine_entry e = {0};
		if (p->attempt != attempt || (job && !pod_of(p, job)) || !p->node ||
		    strlen(p->node) > JS_QUARANTINE_MAX_NODE || !js_is_dns1123_subdomain(p->node) || !blame(r, p, &e))
			continue;
		memcpy(e.node, p->node, strlen(p->node) + 1);
		e.until = until;
		int at = js_quarantine_list_find(l, e.node);
		if (at >= 0) {
			/* Several pods on one node, or the node failed again
			 * while avoided (another JobSet's pods... or ours that
			 * got there before the list): one entry, one event. */
			if (l->items[at].until >= until)
				continue;
			l->items[at] = e;
		} else if (l->n == JS_QUARANTINE_MAX_NODES) {
			dropped++;
			continue;
		} else {
			l->items[l->n++] = e;
		}
		event(c, &e, p->name, job ? job->name : NULL);
	}
	if (dropped)
		js__ctx_event(c, "Warning", "NodeQuarantineFull",
			      js__fmt(c, "%zu more node%s blamed for a failure %s not kept off: an attempt avoids at most %d "
					 "nodes",
				      dropped, dropped == 1 ? "" : "s", dropped == 1 ? "is" : "are",
				      JS_QUARANTINE_MAX_NODES));
}

/* The last attempt a node blamed in attempt `from` is kept off. */
static int32_t last_attempt(const struct js_quarantine_rules *r, int32_t from)
{
	int64_t until64 = (int64_t)from + r->attempts - 1;
	return until64 > INT32_MAX ? INT32_MAX : (int32_t)until64;
}

void js__avoid_restart(struct js__ctx *c)
{
	const struct js_quarantine_rules *r = rules(c);
	if (!r)
		return;
	/* status.restarts is the new attempt already; the Jobs and the
	 * condition still describe the one that ends. */
	int32_t next = c->js->status.restarts, ended = next - 1;
	struct js_quarantine_list *l = js_arena_calloc(c->plan->arena, 1, sizeof(*l));
	c->js->status.restarts = ended;
	current_list(c, l);
	c->js->status.restarts = next;
	size_t k = 0;
	for (size_t i = 0; i < l->n; i++)
		if (l->items[i].until >= next)
			l->items[k++] = l->items[i];
	l->n = k;
	blame_pods(c, r, l, ended, last_attempt(r, next), NULL);
	c->plan->quarantine = l->n ? l : NULL;
	set_condition(c, l);
}

void js__avoid_restart_job(struct js__ctx *c, const struct js_obsjob *j)
{
	const struct js_quarantine_rules *r = rules(c);
	if (!r)
		return;
	/* The attempt goes on: the list grows, and the Jobs made from now on
	 * (the recreation of `j` among them) carry it. The condition written
	 * with this pass's status is what the next passes read until the
	 * recreation exists (current_list). */
	int32_t now = c->js->status.restarts;
	struct js_quarantine_list *l = js_arena_calloc(c->plan->arena, 1, sizeof(*l));
	current_list(c, l);
	blame_pods(c, r, l, now, last_attempt(r, now), j);
	c->plan->quarantine = l->n ? l : NULL;
	set_condition(c, l);
}

void js__avoid_current(struct js__ctx *c)
{
	if (!c->in->gates.node_quarantine)
		return;
	if (!rules(c)) {
		/* Rules removed: the next Jobs avoid nothing, and an old
		 * condition says so. */
		(void)js__status_set_condition(c, JS_COND_NODES_QUARANTINED, false, "NoNodesQuarantined",
					       "no node is kept off the current attempt", "Normal");
		return;
	}
	struct js_quarantine_list *l = js_arena_calloc(c->plan->arena, 1, sizeof(*l));
	current_list(c, l);
	c->plan->quarantine = l->n ? l : NULL;
	set_condition(c, l);
}
