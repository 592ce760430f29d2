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
 * With the gate off nothing here runs: no condition, no annotation, no
 * affinity. Bounded: at most JS_QUARANTINE_MAX_NODES entries, each failed
 * pod looked at once.
 */
#include <inttypes.h>
#include <string.h>

#include "api/quarantine.h"
#include "api/validate.h"
#include "base/buf.h"
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

static const struct js_obsjob *first_current_job(const struct js__ctx *c)
{
	const struct js__bucket *b[] = {&c->active, &c->succeeded, &c->failed};
	for (size_t i = 0; i < JS_ARRAY_SIZE(b); i++)
		if (b[i]->n > 0)
			return b[i]->items[0];
	return NULL;
}

/* The list of the current attempt (status.restarts of the pass's copy):
 * from its Jobs when one exists (all carry the same), else from the
 * condition the restart wrote. Entries past their last attempt are
 * dropped. A text that does not parse (garbage a status writer put there)
 * reads as the empty list. */
static void current_list(struct js__ctx *c, struct js_quarantine_list *l)
{
	const struct js_obsjob *j = first_current_job(c);
	const char *text = NULL;
	if (j) {
		text = j->quarantined_nodes;
	} else {
		const struct js_condition *cond = js_jobset_condition(c->js, JS_COND_NODES_QUARANTINED);
		const char *m = cond && cond->status && strcmp(cond->status, "True") == 0 ? cond->message : NULL;
		const char *at = m ? strstr(m, MARKER) : NULL;
		text = at ? at + strlen(MARKER) : NULL;
	}
	if (js_quarantine_list_parse(text, l) < 0)
		l->n = 0;
	int32_t now = c->js->status.restarts;
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

static void event(struct js__ctx *c, const struct js_quarantine_entry *e, const char *pod)
{
	struct js_buf why;
	js_buf_init(&why, 0);
	if (js_quarantine_why_text(e, &why) < 0)
		js_buf_clear(&why);
	js__ctx_event(c, "Warning", "NodeQuarantined",
		      js__fmt(c, "node %s is kept off attempts %" PRId32 " to %" PRId32 ": pod %s failed there (%s)",
			      e->node, c->js->status.restarts, e->until, pod ? pod : "?", js_buf_str(&why)));
	js_buf_done(&why);
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

	int64_t until64 = (int64_t)next + r->attempts - 1;
	int32_t until = until64 > INT32_MAX ? INT32_MAX : (int32_t)until64;
	size_t dropped = 0;
	for (size_t i = 0; c->in->failed_pods_known && i < c->in->n_failed_pods; i++) {
		const struct js_failpod *p = &c->in->failed_pods[i];
		struct js_quarantine_entry e = {0};
		if (p->attempt != ended || !p->node || strlen(p->node) > JS_QUARANTINE_MAX_NODE ||
		    !js_is_dns1123_subdomain(p->node) || !blame(r, p, &e))
			continue;
		memcpy(e.node, p->node, strlen(p->node) + 1);
		e.until = until;
		int at = js_quarantine_list_find(l, e.node);
		if (at >= 0) {
			/* Several pods on one node, or the node failed again
			 * while avoided (another JobSet's pods... or ours that
			 * got there before the list): one entry, one event. */
			if (l->items[at].until == until)
				continue;
			l->items[at] = e;
		} else if (l->n == JS_QUARANTINE_MAX_NODES) {
			dropped++;
			continue;
		} else {
			l->items[l->n++] = e;
		}
		event(c, &e, p->name);
	}
	if (dropped)
		js__ctx_event(c, "Warning", "NodeQuarantineFull",
			      js__fmt(c, "%zu more node%s blamed for a failure %s not kept off: an attempt avoids at most %d "
					 "nodes",
				      dropped, dropped == 1 ? "" : "s", dropped == 1 ? "is" : "are",
				      JS_QUARANTINE_MAX_NODES));
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
