/*
 * placement.c - the placement controller of --exclusive-placement=gates
 * (docs/controller.md "Exclusive placement"; the decisions are
 * core/placement.h): a cache of the pods the pod webhook labelled
 * JS_LABEL_EXCLUSIVE_PLACEMENT (the pods of exclusive Jobs, nothing else),
 * one work-queue key per Job, and per Job: find its usable leader, read the
 * leader's Node (with no leader pod at all, take the domain the Job's placed
 * followers agree on), then lift the gate of each waiting follower with
 * that domain as nodeSelector, repair followers pinned elsewhere, and say
 * in an Event why a follower still waits.
 *
 * Keys are JS__CTRL_PLACEMENT_PREFIX "<namespace>/<Job uid>", in the same
 * queue as the JobSets: a namespace never holds ':', so they cannot clash
 * with a JobSet's "<namespace>/<name>".
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/jobset.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/str.h"
#include "base/time.h"
#include "core/placement.h"
#include "ctrl/ctrl_int.h"

/* Index of the pod cache: uid of the pod's controller owner (its Job). */
#define INDEX_JOB "job-owner"
/* Event reasons (ours; upstream's pod controller records none). */
#define REASON_WAITING "ExclusivePlacementWaiting"
#define REASON_ELECTED "ExclusivePlacementLeaderElected"

/* The pod records are struct js_cache_xpod (ctrl/cache.h): any field a
 * user removed or garbled is absent there, and the topology key of a
 * JobSet's Job comes from the JobSet (js_placement_topology), never from a
 * pod. Only a Job that no JobSet owns (created with the JobSet labels by
 * hand, which upstream's pod controller places too) is placed by its pods'
 * annotation, and then only when every pod that carries one agrees. */
static void index_job(const json_t *obj, js_store_emit_fn *emit, void *ctx)
{
	const char *uid = js_json_controller_uid(obj);
	if (uid)
		emit(ctx, uid);
}

/* ---- event handlers ---- */

static void pod_event(struct js_controller *c, const struct js_cache_xpod *r)
{
	if (!r->owner_uid || !r->ns)
		return;
	char *key = js_buf_format("%s%s/%s", JS__CTRL_PLACEMENT_PREFIX, r->ns, r->owner_uid);
	js__ctrl_enqueue(c, key, true, "pods");
	free(key);
}

static void pod_add(void *user, const void *rec, const json_t *obj)
{
	(void)obj;
	pod_event(js__ctrl_of(user), rec);
}

static void pod_update(void *user, const void *old_rec, const void *rec, const json_t *obj)
{
	(void)obj;
	(void)old_rec;
	pod_event(js__ctrl_of(user), rec);
}

static void pod_delete(void *user, const void *rec, const json_t *obj, bool unknown)
{
	(void)obj;
	(void)unknown;
	struct js_controller *c = js__ctrl_of(user);
	const struct js_cache_xpod *r = rec;
	if (r->uid) {
		pthread_mutex_lock(&c->mu);
		js_hmap_del(c->waits, r->uid, NULL);
		pthread_mutex_unlock(&c->mu);
	}
	pod_event(c, r);
}

int js__placement_informer(struct js_controller *c)
{
	c->pods_ctx = (struct js__ctrl_cache){c, "pods"};
	struct js_informer_opts io = {
		.res = &js_client_res_pods,
		.type = &js_cache_xpod_type,
		/* Only the pods the pod webhook labelled (api/jobset.h): never a
		 * cluster-wide pod cache (upstream #778). */
		.label_selector = JS_LABEL_EXCLUSIVE_PLACEMENT,
		.handlers = {.on_add = pod_add, .on_update = pod_update, .on_delete = pod_delete,
			     .on_error = js__ctrl_cache_error, .user = &c->pods_ctx},
	};
	int r = js_informer_new(c->client, &io, &c->pods);
	return r < 0 ? r : js_informer_add_index(c->pods, INDEX_JOB, index_job);
}

/* ---- one Job ---- */

static void count(struct js_controller *c, const char *method, int r, const struct js_apierr *e)
{
	js__ctrl_count_request(c, method, r == 0 ? 200 : e->http_code);
}

/* A pod the placement can act on: one the API can be asked about by name
 * and held to by uid. A record without them (edited, or not what the API
 * server writes) is left alone: nothing is patched, deleted or said. */
static bool addressable(const struct js_cache_xpod *p)
{
	return p->ns && p->ns[0] && p->name && p->name[0] && p->uid && p->uid[0];
}

static json_t *regarding(const struct js_cache_xpod *p)
{
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:s}}", "apiVersion", "v1", "kind", "Pod", "metadata", "name", p->name,
			 "namespace", p->ns, "uid", p->uid);
}

/* Say why `p` waits, once per reason: the recorder folds repeats, but a
 * reconcile per leader event would still patch the Event each time. */
static void note_wait(struct js_controller *c, const struct js_cache_xpod *p, enum js_placement_why why,
		      const char *leader, const char *node, const char *key)
{
	if (!addressable(p))
		return;
	void *want = (void *)(uintptr_t)(why + 1);
	pthread_mutex_lock(&c->mu);
	bool same = js_hmap_get(c->waits, p->uid) == want;
	if (!same)
		js_hmap_put(c->waits, p->uid, want, NULL);
	pthread_mutex_unlock(&c->mu);
	if (same)
		return;
	struct js_buf b;
	js_buf_init(&b, 2048);
	(void)!js_placement_explain(why, leader, node, key, &b);
	json_t *reg = regarding(p);
	int r = js_recorder_eventf(c->rec, reg, "Normal", REASON_WAITING, "Wait", "%s", js_buf_str(&b));
	if (r < 0) {
		/* Said next pass instead. */
		pthread_mutex_lock(&c->mu);
		js_hmap_del(c->waits, p->uid, NULL);
		pthread_mutex_unlock(&c->mu);
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "pod %s/%s: event %s: %s", p->ns, p->name, REASON_WAITING,
			      js_strerror(r));
	}
	json_decref(reg);
	js_buf_done(&b);
}

/* RFC 6901: '~' as "~0", '/' as "~1". */
static char *pointer_token(const char *s)
{
	struct js_buf b;
	js_buf_init(&b, 4096);
	for (; *s; s++)
		(void)!(*s == '~' ? js_buf_puts(&b, "~0") : *s == '/' ? js_buf_puts(&b, "~1")
								      : js_buf_printf(&b, "%c", *s));
	return js_buf_take(&b);
}

/* The start of every patch that lifts our gate from `p`: tests that hold
 * it to the pod as the cache saw it (same uid, the gate still at
 * p->gate_at), then the removal. NULL when `p` cannot be addressed or has
 * no gate of ours. */
static json_t *lift_gate_patch(const struct js_cache_xpod *p)
{
	if (!addressable(p) || p->gate_at < 0)
		return NULL;
	char gate_path[64];
	snprintf(gate_path, sizeof(gate_path), "/spec/schedulingGates/%d", p->gate_at);
	char gate_name[96];
	snprintf(gate_name, sizeof(gate_name), "%s/name", gate_path);
	json_t *patch = json_array();
	json_array_append_new(patch, json_pack("{s:s,s:s,s:s}", "op", "test", "path", "/metadata/uid", "value", p->uid));
	json_array_append_new(patch, json_pack("{s:s,s:s,s:s}", "op", "test", "path", gate_name, "value",
					       JS_GATE_EXCLUSIVE_PLACEMENT));
	json_array_append_new(patch, json_pack("{s:s,s:s}", "op", "remove", "path", gate_path));
	return patch;
}

json_t *js__placement_ungate_patch(const struct js_cache_xpod *p, const char *key, const char *domain)
{
	if (!key || !key[0] || !domain || !domain[0])
		return NULL;
	json_t *patch = lift_gate_patch(p);
	if (!patch)
		return NULL;
	if (p->node_selector) {
		char *tok = pointer_token(key);
		char *path = js_buf_format("/spec/nodeSelector/%s", tok);
		json_array_append_new(patch, json_pack("{s:s,s:s,s:s}", "op", "add", "path", path, "value", domain));
		free(path);
		free(tok);
	} else {
		json_array_append_new(patch, json_pack("{s:s,s:s,s:{s:s}}", "op", "add", "path", "/spec/nodeSelector",
						       "value", key, domain));
	}
	return patch;
}

/* Pin `p` to `domain` under the JobSet's topology `key` and lift our gate
 * (js__placement_ungate_patch); nothing for a pod it cannot address. */
static int ungate(struct js_controller *c, const struct js_cache_xpod *p, const char *key, const char *domain)
{
	json_t *patch = js__placement_ungate_patch(p, key, domain);
	if (!patch)
		return 0;
	struct js_apierr e = {0};
	int r = js_client_patch(c->client, &js_client_res_pods, p->ns, p->name, JS_PATCH_JSON, patch, NULL, NULL, &e);
	count(c, "PATCH", r, &e);
	if (r < 0 && r != JS_ENOTFOUND)
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "pod %s/%s: lifting gate %s: %s", p->ns, p->name,
			      JS_GATE_EXCLUSIVE_PLACEMENT, e.message ? e.message : js_strerror(r));
	else if (r == 0)
		js__ctrl_logf(c, JS_CONTROLLER_LOG_DEBUG, "pod %s/%s: gate lifted, nodeSelector %s=%s", p->ns, p->name,
			      key, domain);
	js_apierr_done(&e);
	json_decref(patch);
	return r == JS_ENOTFOUND ? 0 : r;
}

json_t *js__placement_elect_patch(const struct js_cache_xpod *p)
{
	json_t *patch = lift_gate_patch(p);
	if (!patch)
		return NULL;
	char *tok = pointer_token(JS_ANN_PLACEMENT_LEADER);
	char *ann_path = js_buf_format("/metadata/annotations/%s", tok);
	free(tok);
	/* Pods made by the Job controller always carry annotations (the
	 * completion index): the map exists to add to. */
	json_array_append_new(patch, json_pack("{s:s,s:s,s:s}", "op", "add", "path", ann_path, "value",
					       JS_ANN_PLACEMENT_LEADER_ELECTED));
	free(ann_path);
	return patch;
}

/* Let `p` lead its Job (js__placement_elect_patch): a patch that fails its
 * test (another pass or a user got there first) is left to the next pass. */
static int elect(struct js_controller *c, const struct js_cache_xpod *p)
{
	json_t *patch = js__placement_elect_patch(p);
	if (!patch)
		return 0;
	struct js_apierr e = {0};
	int r = js_client_patch(c->client, &js_client_res_pods, p->ns, p->name, JS_PATCH_JSON, patch, NULL, NULL, &e);
	count(c, "PATCH", r, &e);
	if (r == 0) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO,
			      "pod %s/%s: elected to lead its Job (index 0 finished and its pod is gone, no follower placed)",
			      p->ns, p->name);
		json_t *reg = regarding(p);
		(void)!js_recorder_eventf(c->rec, reg, "Normal", REASON_ELECTED, "Elect",
					  "its Job's leader (completion index 0) finished and its pod is gone, and no "
					  "follower is placed: this pod leads instead, and the Job's other pods follow it "
					  "into its domain");
		json_decref(reg);
	} else if (r != JS_ENOTFOUND && r != JS_EINVALID) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "pod %s/%s: electing it to lead: %s", p->ns, p->name,
			      e.message ? e.message : js_strerror(r));
	}
	js_apierr_done(&e);
	json_decref(patch);
	return r == 0 || r == JS_ENOTFOUND || r == JS_EINVALID ? 0 : r;
}

/* Ensure DisruptionTarget=True (reason ExclusivePlacementViolation) on the
 * pod's status, so a podFailurePolicy can ignore the deletion (SPEC §10).
 * Returns 0, JS_ENOTFOUND (gone, or another incarnation), or the client
 * error. */
static int mark_disrupted(struct js_controller *c, const struct js_cache_xpod *p)
{
	struct js__podcond pc = {.ns = p->ns, .name = p->name, .uid = p->uid,
				 .type = JS_POD_CONDITION_DISRUPTION_TARGET,
				 .reason = JS_REASON_EXCLUSIVE_PLACEMENT_VIOLATION,
				 .message = JS_MESSAGE_EXCLUSIVE_PLACEMENT_VIOLATION};
	return js__podcond_ensure(c, &pc);
}

/* #1269: a follower pinned to another domain than its leader's is deleted
 * (this incarnation only); the Job controller makes a new, gated one. */
static int repair(struct js_controller *c, const struct js_cache_xpod *p, const char *key, const char *domain)
{
	if (!addressable(p) || !key || !domain)
		return 0;
	const char *pinned = js_json_str(p->node_selector, key);
	js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO,
		      "pod %s/%s: pinned to %s=%s, its leader is in %s: deleting it so that the Job makes a new one",
		      p->ns, p->name, key, pinned ? pinned : "(none)", domain);
	int r = mark_disrupted(c, p);
	if (r == JS_ENOTFOUND)
		return 0;
	if (r < 0)
		return r;
	struct js_delete_opts d = {.propagation = "Background", .precondition_uid = p->uid};
	struct js_apierr e = {0};
	r = js_client_delete(c->client, &js_client_res_pods, p->ns, p->name, &d, NULL, &e);
	count(c, "DELETE", r, &e);
	js_apierr_done(&e);
	if (r == 0) {
		json_t *reg = regarding(p);
		(void)!js_recorder_eventf(c->rec, reg, "Warning", JS_REASON_EXCLUSIVE_PLACEMENT_VIOLATION, "Delete",
					  "deleted: pinned to %s=%s while its leader pod is in %s", key,
					  pinned ? pinned : "(none)", domain);
		json_decref(reg);
	}
	return r == JS_ENOTFOUND || r == JS_ECONFLICT ? 0 : r;
}

/* The leader as the API has it now, checked against the cache's view: a
 * cache that lags must not pin followers to where a deleted or replaced
 * leader was (#1021, #433). Returns true when it still holds. */
static bool leader_current(struct js_controller *c, const struct js_cache_xpod *l, bool *ret_error)
{
	*ret_error = false;
	if (!addressable(l))
		return false;
	struct js_apierr e = {0};
	json_t *pod = NULL;
	int r = js_client_get(c->client, &js_client_res_pods, l->ns, l->name, NULL, &pod, &e);
	count(c, "GET", r, &e);
	js_apierr_done(&e);
	*ret_error = r < 0 && r != JS_ENOTFOUND;
	if (r < 0)
		return false;
	const json_t *md = json_object_get(pod, "metadata");
	const json_t *del = json_object_get(md, "deletionTimestamp");
	/* A leader that succeeded meanwhile still holds its domain (core/placement.h). */
	bool ok = js_str_match(js_json_str(md, "uid"), l->uid) && (!del || json_is_null(del)) &&
		  js_str_match(js_json_str(json_object_get(pod, "spec"), "nodeName"), l->node) &&
		  !js_str_match(js_json_str(json_object_get(pod, "status"), "phase"), "Failed");
	json_decref(pod);
	return ok;
}

/* The leader's Node: its label `key` into *ret_value (malloc'd, NULL when
 * absent or not a string); *ret_found false on NotFound. Returns 0 or the
 * client error. */
static int leader_node(struct js_controller *c, const char *node, const char *key, bool *ret_found, char **ret_value)
{
	static const struct js_resource res_nodes = {"", "v1", "nodes", false};
	*ret_found = false;
	*ret_value = NULL;
	struct js_apierr e = {0};
	json_t *obj = NULL;
	int r = js_client_get(c->client, &res_nodes, NULL, node, NULL, &obj, &e);
	count(c, "GET", r, &e);
	js_apierr_done(&e);
	*ret_found = r == 0;
	const char *v = r == 0 ? js_json_str(json_object_get(json_object_get(obj, "metadata"), "labels"), key) : NULL;
	*ret_value = v ? js_xstrdup(v) : NULL;
	json_decref(obj);
	return r == JS_ENOTFOUND ? 0 : r;
}

/* The topology annotation the pods of a Job no JobSet owns agree on
 * (malloc'd), or NULL when none carries one or two differ. */
static char *pods_topology(const void **recs, size_t n)
{
	const char *key = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct js_cache_xpod *p = recs[i];
		if (!p->topology || !p->topology[0])
			continue;
		if (key && strcmp(key, p->topology) != 0)
			return NULL;
		key = p->topology;
	}
	return key ? js_xstrdup(key) : NULL;
}

/*
 * The topology key of the Job whose uid is `job_uid`, from its JobSet's
 * spec as the caches hold them: the Job found by a name its pods' owner
 * reference gives (and held to by uid), its JobSet by the owner uid the Job
 * record keeps; for a Job no JobSet owns, from its pods (pods_topology).
 * Returns 0 with *ret_key (malloc'd; NULL when the JobSet
 * names none for this Job) and *ret_index0_done (the Job's index 0 is done:
 * js_job_completed_index0), or JS_ENOTFOUND while the Job, its JobSet or a
 * decoded spec is not in the caches yet (or any more).
 */
static int job_topology(struct js_controller *c, const void **recs, size_t n, const char *job_uid, char **ret_key,
			bool *ret_index0_done)
{
	*ret_key = NULL;
	*ret_index0_done = false;
	const struct js_obsjob *job = NULL;
	const char *tried = NULL;
	for (size_t i = 0; i < n && !job; i++) {
		const struct js_cache_xpod *p = recs[i];
		/* Every pod names the same Job, unless someone edited one. */
		if (!p->ns || !p->owner_name || js_str_same(p->owner_name, tried))
			continue;
		tried = p->owner_name;
		const struct js_obsjob *j = js_informer_get(c->jobs, p->ns, p->owner_name);
		if (j && js_str_match(j->uid, job_uid))
			job = j;
		else if (j)
			js_informer_unref(c->jobs, j);
	}
	if (!job)
		return JS_ENOTFOUND;
	*ret_index0_done = job->index0_done;
	if (!job->owner_uid) {
		*ret_key = pods_topology(recs, n);
		js_informer_unref(c->jobs, job);
		return 0;
	}
	const void **js_recs = NULL;
	size_t m = job->owner_uid ? js_informer_by_index(c->jobsets, JS__CTRL_INDEX_UID, job->owner_uid, &js_recs) : 0;
	const struct js_cache_jobset *jsr = m > 0 ? js_cache_jobset_of(js_recs[0]) : NULL;
	int r = jsr && jsr->js ? 0 : JS_ENOTFOUND;
	if (r == 0) {
		const char *key = js_placement_topology(jsr->js, job->rjob_name);
		*ret_key = key ? js_xstrdup(key) : NULL;
	}
	js_informer_release(c->jobsets, js_recs, m);
	js_informer_unref(c->jobs, job);
	return r;
}

void js__placement_sync(struct js_controller *c, const char *key, struct js__sync_result *res)
{
	const char *slash = strchr(key, '/');
	if (!slash || !slash[1])
		return;
	const char *job_uid = slash + 1;
	const void **recs = NULL;
	size_t n = js_informer_by_index(c->pods, INDEX_JOB, job_uid, &recs);
	if (n == 0) {
		js_informer_release(c->pods, recs, n);
		return;
	}
	char *topology = NULL;
	char *value = NULL;
	struct js_placement_pod *pods = NULL;
	bool index0_done = false;
	if (job_topology(c, recs, n, job_uid, &topology, &index0_done) < 0) {
		/* The Job or its JobSet is not cached (yet, or any more): the
		 * pods are looked at again with the queue's backoff; nothing is
		 * decided without the JobSet's word on the topology. */
		js__ctrl_logf(c, JS_CONTROLLER_LOG_DEBUG,
			      "placement of Job %s: its Job or JobSet is not in the cache, looking again later", key);
		res->backoff = true;
		goto out;
	}
	pods = js_xcalloc(n, sizeof *pods);
	for (size_t i = 0; i < n; i++)
		pods[i] = js_cache_xpod_view(recs[i], topology);
	size_t li = 0;
	enum js_placement_why why = js_placement_find_leader(pods, n, job_uid, &li, NULL);
	const struct js_cache_xpod *leader = why == JS_PLACEMENT_READY || why == JS_PLACEMENT_LEADER_UNBOUND ? recs[li] : NULL;
	const char *domain = NULL;
	bool failed = false;
	if (!topology) {
		why = JS_PLACEMENT_NO_TOPOLOGY;
	} else if (why == JS_PLACEMENT_READY) {
		bool found = false;
		if (!leader_current(c, leader, &failed)) {
			/* Nothing is decided on a leader that changed under the
			 * cache; its watch event is on the way and starts the
			 * next pass. */
			if (!failed)
				js__ctrl_logf(c, JS_CONTROLLER_LOG_DEBUG,
					      "leader pod %s/%s changed since the cache saw it: waiting for the event",
					      leader->ns ? leader->ns : "", leader->name ? leader->name : "");
			res->error = failed;
			goto out;
		}
		if (leader_node(c, leader->node, topology, &found, &value) < 0) {
			res->error = true;
			goto out;
		}
		why = js_placement_domain(found, value, &domain);
	} else if (why == JS_PLACEMENT_NO_LEADER) {
		/* No leader pod to read a domain from (index 0 done and its
		 * pod deleted): the placed followers' domain, when they agree
		 * (core/placement.h says why not a record of our own). The
		 * selectors are the cache's, immutable once a pod is ungated,
		 * so nothing is re-read. */
		why = js_placement_followers_domain(pods, n, job_uid, &domain);
		if (domain)
			js__ctrl_logf(c, JS_CONTROLLER_LOG_DEBUG,
				      "placement of Job %s: no leader pod, its placed followers are in %s=%s", key,
				      topology, domain);
		size_t at = 0;
		if (why == JS_PLACEMENT_NO_LEADER && js_placement_elect(pods, n, job_uid, index0_done, &at)) {
			/* No leader pod will come and no follower holds a
			 * domain: one follower leads instead (core/placement.h).
			 * The others wait for it to be scheduled; its update
			 * starts the next pass. */
			if (elect(c, recs[at]) < 0)
				res->error = true;
			leader = recs[at];
			pods[at].gated = false; /* not a follower to wait or ungate in this pass */
			pods[at].elected = true;
			why = JS_PLACEMENT_LEADER_UNBOUND;
		}
	}
	bool waiting = false;
	for (size_t i = 0; i < n; i++) {
		const struct js_cache_xpod *r = recs[i];
		int rr = 0;
		switch (js_placement_follower(&pods[i], job_uid, domain)) {
		case JS_PLACEMENT_KEEP:
			break;
		case JS_PLACEMENT_WAIT:
			waiting = true;
			note_wait(c, r, why, leader ? leader->name : NULL, leader ? leader->node : NULL, topology);
			break;
		case JS_PLACEMENT_UNGATE:
			rr = ungate(c, r, topology, domain);
			break;
		case JS_PLACEMENT_REPAIR:
			rr = repair(c, r, topology, domain);
			break;
		}
		if (rr < 0)
			res->error = true;
	}
	/* Nodes are not watched, and neither is the JobSet here: a Node that
	 * is gone or lacks the label, or a JobSet naming no topology, is
	 * looked at again with the queue's backoff. */
	if (waiting && (why == JS_PLACEMENT_NODE_GONE || why == JS_PLACEMENT_NODE_NO_LABEL ||
			why == JS_PLACEMENT_NODE_EMPTY || why == JS_PLACEMENT_NO_TOPOLOGY))
		res->backoff = true;
out:
	free(value);
	free(topology);
	free(pods);
	js_informer_release(c->pods, recs, n);
}
