/*
 * pendpods.c - the pods of a JobSet's current attempt that wait to be
 * scheduled, read for node quarantine's "no room left" (ours, gate
 * NodeQuarantine; core/noroom.c, docs/node-quarantine.md) when the core asks
 * (plan->want_pending_pods).
 *
 * No cache: the pod cache holds metadata only, and the core asks only while
 * a JobSet has a quarantine list and pods that are not ready, at most once
 * per JS_NOROOM_INTERVAL_S, so one label-scoped, paginated LIST of that
 * JobSet's Pending pods of that attempt (jobset-name and restart-attempt
 * labels, field selector status.phase=Pending) costs the API server little,
 * and 10k JobSets without a list cost nothing. Of each pod only its name and
 * its PodScheduled=False reason and message are kept, at most MAX_PODS pods
 * and MAX_MESSAGE bytes of a message. A field that is absent or not what
 * the API defines leaves the pod out (it is not known to be unschedulable).
 *
 * Memory: the worker's arena (reset after the reconcile).
 */
#include <string.h>

#include "base/arena.h"
#include "base/json.h"
#include "ctrl/sync_int.h"

/* Pods kept at most: the core names one and counts the rest. */
#define MAX_PODS 4096
/* Bytes of a scheduler message kept: the core quotes at most 512. */
#define MAX_MESSAGE 1024

struct reading {
	struct js_arena *a;
	int32_t attempt;
	const char *uid;
	struct js_pendpod *pods;
	size_t n;
};

/* Keep `pod` when the scheduler said it could not place it. */
static void add_pod(struct reading *rd, const json_t *pod)
{
	const json_t *meta = json_object_get(pod, "metadata");
	const char *name = js_json_str(meta, "name");
	const char *uid = js_json_str(json_object_get(meta, "labels"), JS_LABEL_JOBSET_UID);
	if (rd->n == MAX_PODS || !name || (rd->uid && (!uid || strcmp(uid, rd->uid) != 0)))
		return;
	size_t i;
	const json_t *cd;
	json_array_foreach(js_json_path(pod, "status.conditions"), i, cd) {
		const char *t = js_json_str(cd, "type"), *s = js_json_str(cd, "status");
		if (!t || strcmp(t, "PodScheduled") != 0 || !s || strcmp(s, "False") != 0)
			continue;
		const char *reason = js_json_str(cd, "reason"), *msg = js_json_str(cd, "message");
		rd->pods[rd->n++] = (struct js_pendpod){
			.name = js_arena_strdup(rd->a, name),
			.attempt = rd->attempt,
			.reason = reason ? js_arena_strdup(rd->a, reason) : NULL,
			/* The core cuts it again on a character boundary. */
			.message = msg ? js_arena_printf(rd->a, "%.*s", MAX_MESSAGE, msg) : NULL,
		};
		return;
	}
}

static bool each_pending(void *ctx, const json_t *pod)
{
	struct reading *rd = ctx;
	add_pod(rd, pod);
	return rd->n < MAX_PODS; /* enough kept: the rest would only be counted */
}

int js__pendpods_read(struct js_controller *c, struct js_arena *a, const struct js__observed *o,
		      struct js_reconcile_input *in)
{
	const struct js_jobset *js = o->rec->js;
	struct reading rd = {.a = a, .attempt = js->status.restarts, .uid = js->meta.uid};
	rd.pods = js_arena_calloc(a, MAX_PODS, sizeof(*rd.pods));
	int r = js__failpods_list(c, a, o, "status.phase=Pending", "pending", each_pending, &rd);
	if (r < 0)
		return r; /* logged; the condition stays until the next interval */
	in->pending_pods_known = true;
	in->pending_pods = rd.pods;
	in->n_pending_pods = rd.n;
	return 0;
}
