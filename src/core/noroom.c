/*
 * noroom.c - no room left by node quarantine (ours, gate NodeQuarantine;
 * docs/node-quarantine.md "No room left"): the condition
 * QuarantineLeavesNoRoom, so a JobSet whose quarantine keeps its pods off
 * every node that would take them says so instead of waiting silently.
 *
 * The evidence is the scheduler's: a pod of the current attempt is Pending
 * with PodScheduled=False, reason Unschedulable, and a message saying that
 * some nodes did not match the pod's node affinity/selector - the list's
 * `metadata.name NotIn` requirement is part of that affinity. The message
 * does not say which term failed, so this is a heuristic: a user's own
 * selector that matches no node reads the same while a list applies, and is
 * reported too (the message quotes the scheduler, so a reader can tell). A
 * pod that waits only for cpu or memory ("Insufficient cpu") is not ours to
 * report.
 *
 * Cost: the runtime reads the pods only when asked (plan->want_pending_pods):
 * while the attempt's list is non-empty and one of its Jobs has pods that
 * are not ready, at most once per JS_NOROOM_INTERVAL_S (from the time of the
 * last read the runtime passes back; it keeps nothing else). Everything
 * here is linear in the attempt's Jobs and the pods passed.
 */
#include <inttypes.h>
#include <string.h>

#include "api/quarantine.h"
#include "base/buf.h"
#include "core/core_int.h"

#define COND JS_COND_QUARANTINE_NO_ROOM
#define REASON_NO_ROOM "QuarantineLeavesNoRoom"
#define REASON_ROOM "QuarantineLeavesRoom"
/* Bytes of the scheduler's message quoted at most: enough for its summary
 * of a few reasons; the condition message stays far below the CRD's 32 KiB
 * with 32 node names of 253 bytes beside it. */
#define MAX_QUOTE 512
/* Bytes of a pod name quoted at most (a pod name is a DNS subdomain). */
#define MAX_POD_NAME 253

/* What kube-scheduler's NodeAffinity plugin says of the nodes a pod's
 * required node affinity or nodeSelector kept it off: "node(s) didn't match
 * Pod's node affinity/selector" since Kubernetes 1.22, "node(s) didn't match
 * node selector" before. Not "didn't match scheduler-enforced node affinity"
 * (a scheduler profile's, not the pod's). */
static const char *const affinity_says[] = {
	"didn't match Pod's node affinity",
	"didn't match node selector",
};

static bool is_true(const struct js__ctx *c)
{
	const struct js_condition *k = js_jobset_condition(c->js, COND);
	return k && k->status && strcmp(k->status, "True") == 0;
}

/* True -> False with `why`; never added False when it was never True. */
static void clear(struct js__ctx *c, const char *why)
{
	if (is_true(c))
		(void)js__status_set_condition(c, COND, false, REASON_ROOM, why, "Normal");
}

/* A pod the quarantine may be keeping off every node (the heuristic above). */
static bool blocked(const struct js_pendpod *p, int32_t attempt)
{
	if (p->attempt != attempt || !p->reason || strcmp(p->reason, "Unschedulable") != 0 || !p->message)
		return false;
	for (size_t i = 0; i < JS_ARRAY_SIZE(affinity_says); i++)
		if (strstr(p->message, affinity_says[i]))
			return true;
	return false;
}

/* A Job of the current attempt has pods that are not ready (Pending ones
 * among them): only then may a pod be waiting for a node. A Job that does
 * not report status.ready counts as not ready. */
static bool unready(const struct js__ctx *c)
{
	for (size_t i = 0; i < c->active.n; i++) {
		const struct js_obsjob *j = c->active.items[i];
		if (j->active > (j->has_ready ? j->ready : 0))
			return true;
	}
	return false;
}

/* The pod named at the start of the condition's message ("pod <name>
 * ..."): its first byte in *ret_name and its length; 0 when it names none. */
static size_t named_pod(const struct js__ctx *c, const char **ret_name)
{
	const struct js_condition *k = js_jobset_condition(c->js, COND);
	if (!k || !k->message || strncmp(k->message, "pod ", 4) != 0)
		return 0;
	const char *end = strchr(k->message + 4, ' ');
	*ret_name = k->message + 4;
	return end ? (size_t)(end - *ret_name) : 0;
}

/* Append at most MAX_QUOTE bytes of `s`, cut before a UTF-8 continuation
 * byte so the quote stays valid text. */
static int quote(struct js_buf *b, const char *s)
{
	size_t n = strlen(s);
	if (n <= MAX_QUOTE)
		return js_buf_puts(b, s);
	n = MAX_QUOTE;
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	return js_buf_printf(b, "%.*s...", (int)n, s);
}

static void set_true(struct js__ctx *c, const struct js_pendpod *first, size_t n_blocked,
		     const struct js_quarantine_list *l)
{
	int32_t attempt = c->js->status.restarts;
	struct js_buf b;
	js_buf_init(&b, 0);
	int r = js_buf_printf(&b, "pod %.*s cannot be scheduled", MAX_POD_NAME, first->name ? first->name : "?");
	if (r == 0 && n_blocked > 1)
		r = js_buf_printf(&b, " (nor %zu more pod%s)", n_blocked - 1, n_blocked == 2 ? "" : "s");
	if (r == 0)
		r = js_buf_printf(&b, " while attempt %" PRId32 " keeps off %zu node%s (", attempt, l->n,
				  l->n == 1 ? "" : "s");
	for (size_t i = 0; r == 0 && i < l->n; i++)
		r = js_buf_printf(&b, "%s%s", i ? ", " : "", l->items[i].node);
	if (r == 0)
		r = js_buf_puts(&b, "); the scheduler says: ");
	if (r == 0)
		r = quote(&b, first->message);
	if (r < 0)
		js_buf_clear(&b); /* bounded above: only out of memory gets here */
	(void)js__status_set_condition(c, COND, true, REASON_NO_ROOM, js_buf_str(&b), "Warning");
	js_buf_done(&b);
}

/* The pods were read: True while one is blocked, False once none is. */
static void decide(struct js__ctx *c, const struct js_quarantine_list *l)
{
	int32_t attempt = c->js->status.restarts;
	const struct js_pendpod *first = NULL;
	size_t n = 0;
	const char *named = NULL;
	size_t named_n = named_pod(c, &named);
	bool named_blocked = false;
	for (size_t i = 0; i < c->in->n_pending_pods; i++) {
		const struct js_pendpod *p = &c->in->pending_pods[i];
		if (!blocked(p, attempt))
			continue;
		n++;
		first = first ? first : p;
		named_blocked |= named_n && p->name && strlen(p->name) == named_n &&
				 memcmp(p->name, named, named_n) == 0;
	}
	if (n == 0) {
		clear(c, js__fmt(c, "no pod of attempt %" PRId32 " waits for a node the quarantine keeps it off",
				 attempt));
		return;
	}
	/* Already True naming a pod that still waits: left as it is, so a
	 * JobSet stuck for hours costs one status write and one event, not one
	 * per read (the scheduler's counts in its message change). */
	if (is_true(c) && named_blocked)
		return;
	set_true(c, first, n, l);
}

void js__noroom_run(struct js__ctx *c)
{
	if (!c->in->gates.node_quarantine)
		return;
	const struct js_quarantine_list *l = c->plan->quarantine;
	if (!l || l->n == 0) {
		clear(c, js__fmt(c, "attempt %" PRId32 " keeps off no node", c->js->status.restarts));
		return;
	}
	bool waiting = unready(c);
	int64_t at = c->in->pending_pods_read_at, now = c->in->now;
	if (c->in->pending_pods_known) {
		decide(c, l);
		/* A runtime that reads them on request looks again after the
		 * interval while pods still wait: a pod may get a node when a
		 * node is added or another JobSet leaves. */
		if (at > 0 && waiting)
			js__ctx_requeue(c, JS_NOROOM_INTERVAL_S);
		return;
	}
	if (!waiting) {
		clear(c, js__fmt(c, "no pod of attempt %" PRId32 " waits to be scheduled", c->js->status.restarts));
		return;
	}
	/* Read not long ago (a clock that went back counts as long ago): the
	 * condition stays as it is until the interval is over. */
	if (at > 0 && now >= at && now - at < JS_NOROOM_INTERVAL_S) {
		js__ctx_requeue(c, at + JS_NOROOM_INTERVAL_S - now);
		return;
	}
	c->plan->want_pending_pods = true;
}

void js__noroom_finished(struct js__ctx *c)
{
	if (c->in->gates.node_quarantine)
		clear(c, "the JobSet finished");
}
