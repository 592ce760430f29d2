/*
 * controller.c - informers, event handlers, work queue, workers, leader
 * election and metrics of the JobSet controller. See controller.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/jobset.h"
#include "base/arena.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/time.h"
#include "ctrl/ctrl_int.h"
#include "ctrl/owner.h"

#define QUEUE_NAME "jobset"
#define CONTROLLER_NAME "jobset"
#define PLACEMENT_CONTROLLER_NAME "pod"
/* The longest a stop waits for queued events to be sent (within its grace
 * period): a blocked events endpoint must not hold a stop. */
#define EVENTS_DRAIN_MS 5000

/* ---- metrics (docs/controller.md lists them) ---- */

static const double reconcile_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
/* Waits for all-ready: seconds (pod start) to hours (a large gang behind a
 * busy queue). */
static const double ready_buckets[] = {1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400};
static const double queue_buckets[] = {1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1000};

static const struct js_metrics_family families[JS__M__COUNT] = {
	[JS__M_FAILED] = {"jobset_failed_total", "Number of failed JobSets", JS_METRICS_COUNTER,
			  {"jobset_name", "namespace"}, NULL, 0},
	[JS__M_COMPLETED] = {"jobset_completed_total", "Number of completed JobSets", JS_METRICS_COUNTER,
			     {"jobset_name", "namespace"}, NULL, 0},
	[JS__M_RESTARTS] = {"jobset_restarts_total", "JobSet restarts (status.restarts increments) written",
			    JS_METRICS_COUNTER, {"jobset_name", "namespace"}, NULL, 0},
	[JS__M_DEADLINE_EXCEEDED] = {"jobset_active_deadline_exceeded_total",
				     "JobSets failed because they were active longer than activeDeadlineSeconds",
				     JS_METRICS_COUNTER, {"jobset_name", "namespace"}, NULL, 0},
	[JS__M_RECONCILE_TOTAL] = {"controller_runtime_reconcile_total", "Total number of reconciliations per controller",
				   JS_METRICS_COUNTER, {"controller", "result"}, NULL, 0},
	[JS__M_RECONCILE_ERRORS] = {"controller_runtime_reconcile_errors_total",
				    "Total number of reconciliation errors per controller", JS_METRICS_COUNTER,
				    {"controller"}, NULL, 0},
	[JS__M_RECONCILE_TIME] = {"controller_runtime_reconcile_time_seconds",
				  "Length of time per reconciliation per controller", JS_METRICS_HISTOGRAM,
				  {"controller"}, reconcile_buckets, JS_ARRAY_SIZE(reconcile_buckets)},
	[JS__M_ACTIONS] = {"jobset_controller_actions_total", "Plan actions applied, by kind and result",
			   JS_METRICS_COUNTER, {"action", "result"}, NULL, 0},
	[JS__M_STATUS_CONFLICTS] = {"jobset_controller_status_conflicts_total",
				    "Status writes refused with a resourceVersion conflict", JS_METRICS_COUNTER,
				    {NULL}, NULL, 0},
	[JS__M_QUEUE_DEPTH] = {"workqueue_depth", "Current depth of workqueue", JS_METRICS_GAUGE, {"name"}, NULL, 0},
	[JS__M_QUEUE_ADDS] = {"workqueue_adds_total", "Total number of adds handled by workqueue", JS_METRICS_COUNTER,
			      {"name"}, NULL, 0},
	[JS__M_QUEUE_RETRIES] = {"workqueue_retries_total", "Total number of retries handled by workqueue",
				 JS_METRICS_COUNTER, {"name"}, NULL, 0},
	[JS__M_QUEUE_LATENCY] = {"workqueue_queue_duration_seconds",
				 "How long in seconds an item stays in workqueue before being requested",
				 JS_METRICS_HISTOGRAM, {"name"}, queue_buckets, JS_ARRAY_SIZE(queue_buckets)},
	[JS__M_QUEUE_WORK] = {"workqueue_work_duration_seconds",
			      "How long in seconds processing an item from workqueue takes", JS_METRICS_HISTOGRAM,
			      {"name"}, queue_buckets, JS_ARRAY_SIZE(queue_buckets)},
	[JS__M_REST] = {"rest_client_requests_total",
			"Number of HTTP requests of the reconcilers, partitioned by method and status code",
			JS_METRICS_COUNTER, {"method", "code"}, NULL, 0},
	[JS__M_LEADER] = {"leader_election_master_status", "1 while this replica leads (or election is off)",
			  JS_METRICS_GAUGE, {"name"}, NULL, 0},
	[JS__M_WORKERS] = {"controller_runtime_active_workers", "Number of currently used workers per controller",
			   JS_METRICS_GAUGE, {"controller"}, NULL, 0},
	[JS__M_CACHE_OBJECTS] = {"jobset_controller_cache_objects", "Objects in the informer caches",
				 JS_METRICS_GAUGE, {"resource"}, NULL, 0},
	[JS__M_INFORMER_LISTS] = {"jobset_controller_informer_lists_total", "Complete LISTs of the informers",
				  JS_METRICS_COUNTER, {"resource"}, NULL, 0},
	[JS__M_INFORMER_WATCHES] = {"jobset_controller_informer_watches_total", "WATCH requests of the informers",
				    JS_METRICS_COUNTER, {"resource"}, NULL, 0},
	[JS__M_WATCH_EVENTS] = {"jobset_controller_watch_events_total",
				"Informer events by resource and verdict: enqueued (a reconcile, possibly folded into "
				"a pending one), filtered (nothing the reconcile reads changed) or unchanged (an "
				"update whose cached record is equal: no handler ran)",
				JS_METRICS_COUNTER, {"resource", "verdict"}, NULL, 0},
	[JS__M_RESTARTS_BY_REASON] = {"jobset_restarts_by_reason_total",
				      "Restarts the failure policy decided, by the failed Job's reason and the action",
				      JS_METRICS_COUNTER, {"reason", "action"}, NULL, 0},
	[JS__M_TIME_TO_READY] = {"jobset_time_to_all_ready_seconds",
				 "Seconds from a creation, resume or restart decision to every Job being ready",
				 JS_METRICS_HISTOGRAM, {"trigger"}, ready_buckets, JS_ARRAY_SIZE(ready_buckets)},
	[JS__M_PHASE_DURATION] = {"jobset_phase_duration_seconds",
				  "Seconds an existing JobSet spent in each phase since this controller first saw it",
				  JS_METRICS_GAUGE, {"jobset_name", "namespace", "phase"}, NULL, 0},
	[JS__M_PHASE_TOTAL] = {"jobset_phase_seconds_total", "Seconds all JobSets spent in each phase",
			       JS_METRICS_COUNTER, {"phase"}, NULL, 0},
	[JS__M_GOODPUT] = {"jobset_goodput_ratio",
			   "All-ready time over wall time since the JobSet first started (0..1)", JS_METRICS_GAUGE,
			   {"jobset_name", "namespace"}, NULL, 0},
	[JS__M_EVENTS_DROPPED] = {"jobset_controller_events_dropped_total",
				  "Events never sent: the event queue was full, or the controller stopped before "
				  "they were sent",
				  JS_METRICS_COUNTER, {NULL}, NULL, 0},
};

void js__ctrl_logf(struct js_controller *c, int level, const char *fmt, ...)
{
	if (!c->o.log)
		return;
	struct js_buf b;
	js_buf_init(&b, 16384);
	va_list ap;
	va_start(ap, fmt);
	(void)!js_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	c->o.log(c->o.log_user, level, js_buf_str(&b));
	js_buf_done(&b);
}

void js__ctrl_count_request(struct js_controller *c, const char *method, long http_code)
{
	char code[32];
	if (http_code > 0)
		snprintf(code, sizeof(code), "%ld", http_code);
	else
		snprintf(code, sizeof(code), "<error>");
	const char *v[] = {method, code};
	(void)js_metrics_add(c->metrics, JS__M_REST, v, 1);
}

/* What our last status write of a key was (ctrl/cache.h). */
struct written {
	char *rv;       /* NULL until the write is answered */
	json_t *status;
};

static void free_written(void *p)
{
	struct written *w = p;
	free(w->rv);
	json_decref(w->status);
	free(w);
}

/* Whether the JobSet of `key` ("ns/name") is in the cache now. */
static bool jobset_cached(struct js_controller *c, const char *key)
{
	const char *slash = strchr(key, '/');
	char ns[256];
	if (!slash || (size_t)(slash - key) >= sizeof ns)
		return false;
	memcpy(ns, key, (size_t)(slash - key));
	ns[slash - key] = '\0';
	return js_informer_has(c->jobsets, ns, slash + 1);
}

void js__ctrl_note_written(struct js_controller *c, const char *key, const char *rv, const json_t *status)
{
	struct written *w = js_xcalloc(1, sizeof *w);
	w->rv = rv ? js_xstrdup(rv) : NULL;
	w->status = status ? json_deep_copy(status) : NULL;
	pthread_mutex_lock(&c->mu);
	/* A JobSet deleted while its pass ran: its delete handler already
	 * dropped the entry, and nothing would drop it again (issue 22: one
	 * entry leaked per such JobSet). The check is under c->mu, which the
	 * delete handler takes after the cache has dropped the JobSet, so
	 * either the handler runs after this put or this sees the JobSet
	 * gone. (Lock order: c->mu, then the cache's own lock; handlers hold
	 * no cache lock.) */
	if (jobset_cached(c, key))
		js_hmap_put(c->written, key, JS_TAKE_PTR(w), NULL);
	pthread_mutex_unlock(&c->mu);
	if (w)
		free_written(w);
}

/* The highest status.restarts of one JobSet incarnation that the watch
 * delivered (c->restarts_seen, under c->mu). */
struct seen_restarts {
	char *uid;
	int32_t top;
};

static void free_seen_restarts(void *p)
{
	struct seen_restarts *s = p;
	free(s->uid);
	free(s);
}

/* Every version of a JobSet passes through the handlers, also one the
 * cache replaced before a pass read it: a status.restarts someone wrote back
 * right after ours landed would otherwise leave no trace of ours
 * (core/status.c restores the counter from this). Under c->mu. */
static void note_restarts(struct js_controller *c, const struct js_cache_jobset *r)
{
	if (!r->js || !r->uid)
		return;
	int32_t v = r->js->status.restarts;
	struct seen_restarts *s = js_hmap_get(c->restarts_seen, r->key);
	if (s && strcmp(s->uid, r->uid) == 0) {
		if (v > s->top)
			s->top = v;
		return;
	}
	s = js_xcalloc(1, sizeof *s);
	s->uid = js_xstrdup(r->uid);
	s->top = v;
	js_hmap_put(c->restarts_seen, r->key, s, NULL); /* another incarnation: replaced */
}

int32_t js__ctrl_restarts_seen(struct js_controller *c, const char *key, const char *uid)
{
	int32_t top = 0;
	pthread_mutex_lock(&c->mu);
	const struct seen_restarts *s = uid ? js_hmap_get(c->restarts_seen, key) : NULL;
	if (s && strcmp(s->uid, uid) == 0)
		top = s->top;
	pthread_mutex_unlock(&c->mu);
	return top;
}

int64_t js__ctrl_pending_read_at(struct js_controller *c, const char *key)
{
	pthread_mutex_lock(&c->mu);
	int64_t at = (int64_t)(uintptr_t)js_hmap_get(c->pending_read, key);
	pthread_mutex_unlock(&c->mu);
	return at;
}

void js__ctrl_note_pending_read(struct js_controller *c, const char *key, int64_t now)
{
	/* Unix seconds fit a pointer-sized integer on the 64-bit hosts we
	 * build for; a negative clock reads as "never". */
	pthread_mutex_lock(&c->mu);
	(void)js_hmap_put(c->pending_read, key, (void *)(uintptr_t)(now > 0 ? now : 0), NULL);
	pthread_mutex_unlock(&c->mu);
}

/* ---- event handlers: map to keys, never more (STYLE §3.18) ---- */

static void count_event(struct js_controller *c, const char *resource, const char *verdict)
{
	const char *v[] = {resource, verdict};
	(void)js_metrics_add(c->metrics, JS__M_WATCH_EVENTS, v, 1);
}

/* js__ctrl_enqueue: queue `key` now, or after the fold window (`fold`): every event of the
 * window then ends in the one reconcile that runs when it closes
 * (workqueue.h add_after). */
void js__ctrl_enqueue(struct js_controller *c, const char *key, bool fold, const char *resource)
{
	if (!key)
		return;
	pthread_mutex_lock(&c->mu);
	if (!js_hmap_has(c->enqueued, key))
		js_hmap_put(c->enqueued, key, (void *)(uintptr_t)js_clock_now_ns(), NULL);
	pthread_mutex_unlock(&c->mu);
	const char *v[] = {QUEUE_NAME};
	(void)js_metrics_add(c->metrics, JS__M_QUEUE_ADDS, v, 1);
	count_event(c, resource, "enqueued");
	uint64_t window = fold ? js_sat_scale_u64(c->o.fold_window_ms, 1000000u) : 0;
	js_workqueue_add_after(c->q, key, window);
}

static void jobset_add(void *user, const void *rec, const json_t *obj)
{
	(void)obj;
	struct js_controller *c = user;
	pthread_mutex_lock(&c->mu);
	note_restarts(c, js_cache_jobset_of(rec));
	pthread_mutex_unlock(&c->mu);
	js__ctrl_enqueue(c, js_cache_jobset_of(rec)->key, false, "jobsets");
}

static void jobset_update(void *user, const void *old_rec, const void *rec, const json_t *obj)
{
	(void)obj;
	struct js_controller *c = user;
	const struct js_cache_jobset *cur = js_cache_jobset_of(rec);
	pthread_mutex_lock(&c->mu);
	note_restarts(c, cur);
	const struct written *w = js_hmap_get(c->written, cur->key);
	struct js_cache_written cw = {w ? w->rv : NULL, w ? w->status : NULL};
	/* Under the lock: a worker may replace the entry meanwhile. */
	bool changed = js_cache_jobset_changed(js_cache_jobset_of(old_rec), cur, w ? &cw : NULL);
	pthread_mutex_unlock(&c->mu);
	if (changed)
		js__ctrl_enqueue(c, cur->key, false, "jobsets");
	else
		count_event(c, "jobsets", "filtered");
}

static void jobset_delete(void *user, const void *rec, const json_t *obj, bool unknown)
{
	(void)obj;
	(void)unknown;
	struct js_controller *c = user;
	const char *key = js_cache_jobset_of(rec)->key;
	pthread_mutex_lock(&c->mu);
	js_hmap_del(c->written, key, NULL);
	js_hmap_del(c->restarts_seen, key, NULL);
	js_hmap_del(c->pending_read, key, NULL);
	pthread_mutex_unlock(&c->mu);
	js__phases_forget(c, key);
	js__ctrl_enqueue(c, key, false, "jobsets");
}

/* The key of the JobSet whose uid is `uid`, or NULL (caller frees). */
static char *jobset_key_by_uid(struct js_controller *c, const char *uid)
{
	if (!uid)
		return NULL;
	const void **recs = NULL;
	size_t n = js_informer_by_index(c->jobsets, JS__CTRL_INDEX_UID, uid, &recs);
	char *key = n > 0 ? js_xstrdup(js_cache_jobset_of(recs[0])->key) : NULL;
	js_informer_release(c->jobsets, recs, n);
	return key;
}

/* A Job's JobSet: from its JSON when the event carries one, else (a delete
 * inferred by a relist) from the owner uid its record kept. A Job no
 * JobSet controls enqueues each JobSet it holds a Job name of
 * (js_owner_unowned_keys, JS__CTRL_INDEX_UNOWNED): that JobSet must see it
 * go, or be controlled again, to proceed. */
static void enqueue_job_owner(struct js_controller *c, const struct js_obsjob *j, const json_t *obj)
{
	char *key = obj ? js_owner_jobset_key(obj) : jobset_key_by_uid(c, j->owner_uid);
	if (!key && obj) {
		char *keys[2];
		size_t n = js_owner_unowned_keys(obj, keys);
		for (size_t i = 0; i < n; i++) {
			js__ctrl_enqueue(c, keys[i], true, "jobs");
			free(keys[i]);
		}
		return;
	}
	js__ctrl_enqueue(c, key, true, "jobs");
	free(key);
}

static void job_add(void *user, const void *rec, const json_t *obj)
{
	enqueue_job_owner(user, rec, obj);
}

/* Called only when js_job_same() found a difference (the informer filters
 * equal records, counted as its stats.unchanged). */
static void job_update(void *user, const void *old_rec, const void *rec, const json_t *obj)
{
	struct js_controller *c = user;
	const struct js_obsjob *old = old_rec, *cur = rec;
	enqueue_job_owner(c, cur, obj);
	/* An owner reference can change (orphaning, adoption by hand): the
	 * former owner must see it go. */
	if (old->owner_uid && (!cur->owner_uid || strcmp(old->owner_uid, cur->owner_uid) != 0))
		enqueue_job_owner(c, old, NULL);
}

static void job_delete(void *user, const void *rec, const json_t *obj, bool unknown)
{
	(void)unknown;
	enqueue_job_owner(user, rec, obj);
}

/* Services and PVCs: only their existence matters (same() drops every
 * update that keeps the JobSet they belong to). `user` is the informer's
 * struct js__ctrl_cache. */
static void child_event(const struct js__ctrl_cache *ch, const void *rec)
{
	js__ctrl_enqueue(ch->c, ((const struct js_cache_child *)rec)->jobset_key, true, ch->name);
}

static void child_add(void *user, const void *rec, const json_t *obj)
{
	(void)obj;
	child_event(user, rec);
}

static void child_update(void *user, const void *old_rec, const void *rec, const json_t *obj)
{
	(void)obj;
	child_event(user, old_rec);
	child_event(user, rec);
}

static void child_delete(void *user, const void *rec, const json_t *obj, bool unknown)
{
	(void)obj;
	(void)unknown;
	child_event(user, rec);
}

static void index_owner(const json_t *obj, js_store_emit_fn *emit, void *ctx)
{
	const char *uid = js_owner_jobset_uid(obj);
	if (uid)
		emit(ctx, uid);
}

static void index_unowned(const json_t *obj, js_store_emit_fn *emit, void *ctx)
{
	char *keys[2];
	size_t n = js_owner_unowned_keys(obj, keys);
	for (size_t i = 0; i < n; i++) {
		emit(ctx, keys[i]);
		free(keys[i]);
	}
}

static void index_uid(const json_t *obj, js_store_emit_fn *emit, void *ctx)
{
	const char *uid = js_json_str(json_object_get(obj, "metadata"), "uid");
	if (uid)
		emit(ctx, uid);
}

/* ---- workers ---- */

static double since_s(uint64_t t0)
{
	return (double)(js_clock_now_ns() - t0) / 1e9;
}

static void note_dequeued(struct js_controller *c, const char *key)
{
	void *t = NULL;
	pthread_mutex_lock(&c->mu);
	bool had = js_hmap_del(c->enqueued, key, &t);
	pthread_mutex_unlock(&c->mu);
	if (had) {
		const char *v[] = {QUEUE_NAME};
		(void)js_metrics_observe(c->metrics, JS__M_QUEUE_LATENCY, v, since_s((uint64_t)(uintptr_t)t));
	}
}

static void process(struct js_controller *c, const char *key, struct js_arena *arena)
{
	uint64_t t0 = js_clock_now_ns();
	struct js__sync_result res = {0};
	size_t pl = strlen(JS__CTRL_PLACEMENT_PREFIX), hl = strlen(JS__CTRL_HANG_PREFIX);
	bool placement = strncmp(key, JS__CTRL_PLACEMENT_PREFIX, pl) == 0;
	bool hang = !placement && strncmp(key, JS__CTRL_HANG_PREFIX, hl) == 0;
	if (placement)
		js__placement_sync(c, key + pl, &res);
	else if (hang)
		js__hangs_sync(c, key + hl, &res);
	else
		js__sync_key(c, key, arena, &res);
	js_arena_reset(arena);
	const char *ctl[] = {placement || hang ? PLACEMENT_CONTROLLER_NAME : CONTROLLER_NAME};
	const char *qn[] = {QUEUE_NAME};
	double dt = since_s(t0);
	(void)js_metrics_observe(c->metrics, JS__M_RECONCILE_TIME, ctl, dt);
	(void)js_metrics_observe(c->metrics, JS__M_QUEUE_WORK, qn, dt);
	const char *result;
	if (res.error) {
		result = "error";
		(void)js_metrics_add(c->metrics, JS__M_RECONCILE_ERRORS, ctl, 1);
		(void)js_metrics_add(c->metrics, JS__M_QUEUE_RETRIES, qn, 1);
		uint64_t d = js_workqueue_add_rate_limited(c->q, key);
		if (!atomic_load(&c->abort))
			js__ctrl_logf(c, res.conflict ? JS_CONTROLLER_LOG_DEBUG : JS_CONTROLLER_LOG_INFO,
				      "%s '%s': retry in %.3f s", placement ? "pods of Job" : hang ? "pod" : "jobset", key,
				      (double)d / 1e9);
	} else if (res.backoff) {
		result = "requeue";
		(void)js_workqueue_add_rate_limited(c->q, key);
	} else {
		js_workqueue_forget(c->q, key);
		if (res.has_requeue_after) {
			result = "requeue_after";
			/* Any int64 of seconds (a JobSet's activeDeadlineSeconds
			 * may be the largest): saturated, negative is now. */
			js_workqueue_add_after(c->q, key, js_sat_scale_u64(res.requeue_after, 1000000000u));
		} else {
			result = "success";
		}
	}
	const char *rv[] = {ctl[0], result};
	(void)js_metrics_add(c->metrics, JS__M_RECONCILE_TOTAL, rv, 1);
}

static bool caches_synced(struct js_controller *c)
{
	return js_informer_has_synced(c->jobsets) && js_informer_has_synced(c->jobs) &&
	       js_informer_has_synced(c->services) && js_informer_has_synced(c->pvcs) &&
	       (!c->pods || js_informer_has_synced(c->pods)) && (!c->ipods || js_informer_has_synced(c->ipods)) &&
	       (!c->hpods || js_informer_has_synced(c->hpods)) &&
	       (!c->opods || js_informer_has_synced(c->opods));
}

static void *worker(void *arg)
{
	struct js_controller *c = arg;
	/* Every request of this thread ends when the stop grace period is over. */
	js_client_bind_cancel(c->client, &c->abort);
	/* Scratch memory of one reconcile at a time, reused (sync.c). */
	struct js_arena *arena = js_arena_new(64 * 1024);
	/* Never act on a partial view: a missing Job would be created twice. */
	while (!atomic_load(&c->stopping) && !caches_synced(c)) {
		if (js_informer_wait_synced(c->jobsets, 200) == 0 && js_informer_wait_synced(c->jobs, 200) == 0 &&
		    js_informer_wait_synced(c->services, 200) == 0 && js_informer_wait_synced(c->pvcs, 200) == 0) {
			if (c->pods)
				(void)!js_informer_wait_synced(c->pods, 200);
			if (c->ipods)
				(void)!js_informer_wait_synced(c->ipods, 200);
			if (c->opods)
				(void)!js_informer_wait_synced(c->opods, 200);
		}
	}
	for (;;) {
		char *key = NULL;
		if (js_workqueue_get(c->q, -1, &key) < 0)
			break;
		note_dequeued(c, key);
		if (!atomic_load(&c->stopping)) {
			pthread_mutex_lock(&c->mu);
			c->busy++;
			pthread_mutex_unlock(&c->mu);
			process(c, key, arena);
			pthread_mutex_lock(&c->mu);
			c->busy--;
			pthread_mutex_unlock(&c->mu);
		}
		js_workqueue_done(c->q, key);
		free(key);
	}
	js_client_bind_cancel(c->client, NULL);
	js_arena_free(arena);
	pthread_mutex_lock(&c->mu);
	c->alive--;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

static void start_workers(struct js_controller *c)
{
	pthread_mutex_lock(&c->mu);
	if (!atomic_load(&c->workers_started) && !atomic_load(&c->stopping)) {
		int n = c->o.workers > 0 ? c->o.workers : 1;
		c->threads = js_xcalloc((size_t)n, sizeof(*c->threads));
		for (int i = 0; i < n; i++) {
			if (pthread_create(&c->threads[c->n_threads], NULL, worker, c) == 0) {
				c->n_threads++;
				c->alive++;
			}
		}
		atomic_store(&c->workers_started, true);
	}
	int n = c->n_threads;
	pthread_mutex_unlock(&c->mu);
	js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "starting %d workers", n);
}

static void on_started(void *user)
{
	struct js_controller *c = user;
	js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "became leader (lease %s/%s, identity %s)", c->lease_namespace,
		      c->lease_name, c->identity);
	start_workers(c);
}

static void on_stopped(void *user)
{
	struct js_controller *c = user;
	if (atomic_load(&c->stopping))
		return;
	/* Lost the lease: stop acting at once - cancel what the workers have
	 * in flight, not only take no new keys: a successor may take the lease
	 * as soon as it expires, and a reconcile left running would act beside
	 * it (issue 13, leader-failover). main exits (as upstream). */
	js__ctrl_logf(c, JS_CONTROLLER_LOG_ERROR, "leader election lost");
	atomic_store(&c->lost, true);
	atomic_store(&c->stopping, true);
	atomic_store(&c->abort, true);
	js_client_wakeup(c->client);
	js_workqueue_shutdown(c->q);
}

static void on_new_leader(void *user, const char *identity)
{
	struct js_controller *c = user;
	js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "leader is now '%s'", identity ? identity : "");
}

/* The Lease cannot be read or written (RBAC, a missing namespace, ...):
 * said in the log (kube/leader.h limits the repeats), or a replica that can
 * never lead waits in silence with /readyz answering ok. */
static void lease_error(void *user, const char *msg)
{
	struct js_controller *c = user;
	js__ctrl_logf(c, JS_CONTROLLER_LOG_ERROR, "leader election: %s (retrying)", msg);
}

/* A cache that cannot list or watch (a verb missing from the RBAC, ...):
 * said in the log, every time, so a controller that never becomes ready
 * says why. The informer retries with backoff (at most every 30 s). */
static void cache_error(struct js_controller *c, const char *resource, const char *verb, int err, const char *msg)
{
	if (!atomic_load(&c->stopping))
		js__ctrl_logf(c, JS_CONTROLLER_LOG_ERROR, "cache of %s: %s failed: %s (retrying)", resource, verb,
			      msg ? msg : js_apierr_strerror(err));
}

static void jobset_cache_error(void *user, const char *verb, int err, const char *msg)
{
	cache_error(user, "jobsets", verb, err, msg);
}

static void job_cache_error(void *user, const char *verb, int err, const char *msg)
{
	cache_error(user, "jobs", verb, err, msg);
}

void js__ctrl_cache_error(void *user, const char *verb, int err, const char *msg)
{
	const struct js__ctrl_cache *ch = user;
	cache_error(ch->c, ch->name, verb, err, msg);
}

/* ---- lifecycle ---- */

static int make_informer(struct js_controller *c, const struct js_resource *res, const struct js_store_type *type,
			 const char *selector, const struct js_informer_handlers *h, void *user,
			 struct js_informer **ret)
{
	struct js_informer_opts io = {.res = res, .type = type, .label_selector = selector, .handlers = *h};
	io.handlers.user = user;
	return js_informer_new(c->client, &io, ret);
}

static const struct js_hmap_type written_type = {.free_value = free_written};
static const struct js_hmap_type seen_restarts_type = {.free_value = free_seen_restarts};

/* The four caches: every JobSet; Jobs, Services and PVCs labelled with a
 * JobSet name (what we create always is: SPEC §6.2, §7, §8). */
static int make_informers(struct js_controller *c)
{
	static const struct js_informer_handlers jsh = {.on_add = jobset_add, .on_update = jobset_update,
							.on_delete = jobset_delete, .on_error = jobset_cache_error};
	static const struct js_informer_handlers jh = {.on_add = job_add, .on_update = job_update,
						       .on_delete = job_delete, .on_error = job_cache_error};
	static const struct js_informer_handlers ch = {.on_add = child_add, .on_update = child_update,
						       .on_delete = child_delete, .on_error = js__ctrl_cache_error};
	c->service_events = (struct js__ctrl_cache){c, "services"};
	c->pvc_events = (struct js__ctrl_cache){c, "persistentvolumeclaims"};
	int r = make_informer(c, &js_client_res_jobsets, &js_cache_jobset_type, NULL, &jsh, c, &c->jobsets);
	if (r == 0)
		r = js_informer_add_index(c->jobsets, JS__CTRL_INDEX_UID, index_uid);
	if (r == 0)
		r = make_informer(c, &js_client_res_jobs, &js_cache_job_type, JS_LABEL_JOBSET_NAME, &jh, c, &c->jobs);
	if (r == 0)
		r = js_informer_add_index(c->jobs, JS__CTRL_INDEX_OWNER, index_owner);
	if (r == 0)
		r = js_informer_add_index(c->jobs, JS__CTRL_INDEX_UNOWNED, index_unowned);
	if (r == 0)
		r = make_informer(c, &js_client_res_services, &js_cache_service_type, JS_LABEL_JOBSET_NAME, &ch,
				  &c->service_events, &c->services);
	if (r == 0)
		r = make_informer(c, &js_client_res_pvcs, &js_cache_pvc_type, JS_LABEL_JOBSET_NAME, &ch,
				  &c->pvc_events, &c->pvcs);
	if (r == 0 && c->o.placement == JS_PLACEMENT_GATES)
		r = js__placement_informer(c);
	if (r == 0 && c->o.gates.in_place_restart)
		r = js__inplace_informer(c);
	/* Hang detection: with the gate off, no pod cache and no watch. */
	if (r == 0 && c->o.gates.progress_deadline)
		r = js__hangs_informer(c);
	if (r == 0 && c->o.cleanup_direct)
		r = js__oldpods_informer(c);
	return r;
}

/* kube/recorder.h on_error: an event that was not written. Drops are
 * counted (one log line per drop would flood the log exactly when the
 * events endpoint is slow); failed writes are logged, as a reconcile did
 * when it wrote its events itself. */
static void event_not_written(void *user, const char *reason, int err, const char *message)
{
	struct js_controller *c = user;
	if (err == -ENOBUFS || err == -ECANCELED) {
		(void)js_metrics_add(c->metrics, JS__M_EVENTS_DROPPED, NULL, 1);
		return;
	}
	if (!atomic_load(&c->abort))
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "event %s: %s, ignoring", reason,
			      message ? message : js_apierr_strerror(err));
}

int js_controller_new(const struct js_controller_opts *opts, struct js_controller **ret)
{
	if (!opts->client)
		return JS_EINVALID;
	if (opts->leader_elect && (!opts->lease_namespace || !opts->lease_name || !opts->identity))
		return JS_EINVALID;
	struct js_controller *c = js_xcalloc(1, sizeof(*c));
	c->o = *opts;
	c->client = opts->client;
	c->lease_namespace = opts->lease_namespace ? js_xstrdup(opts->lease_namespace) : NULL;
	c->lease_name = opts->lease_name ? js_xstrdup(opts->lease_name) : NULL;
	c->identity = js_xstrdup(opts->identity ? opts->identity : "jobset-controller");
	c->o.lease_namespace = c->lease_namespace;
	c->o.lease_name = c->lease_name;
	c->o.identity = c->identity;
	if (c->o.cache_wait_ms == 0)
		c->o.cache_wait_ms = 3000;
	if (c->o.fold_window_ms < 0)
		c->o.fold_window_ms = 0;
	pthread_mutex_init(&c->mu, NULL);
	js_clock_cond_init(&c->cond);
	c->enqueued = js_hmap_new(NULL);
	c->written = js_hmap_new(&written_type);
	c->restarts_seen = js_hmap_new(&seen_restarts_type);
	c->pending_read = js_hmap_new(NULL);
	c->expect = js_expect_new(NULL);
	js__phases_new(c);
	c->waits = js_hmap_new(NULL);
	atomic_init(&c->abort, false);

	int r = js_metrics_new(families, JS__M__COUNT, &c->metrics);
	if (r == 0) {
		struct js_workqueue_opts qo = {0};
		r = js_workqueue_new(&qo, &c->q);
	}
	if (r == 0)
		r = make_informers(c);
	if (r == 0) {
		struct js_recorder_opts ro = {.controller = "jobset",
					      .instance = c->identity,
					      .on_error = event_not_written,
					      .user = c};
		r = js_recorder_new(c->client, &ro, &c->rec);
	}
	if (r == 0 && opts->leader_elect) {
		struct js_leader_opts lo = {
			.namespace = c->lease_namespace,
			.name = c->lease_name,
			.identity = c->identity,
			.lease_duration_ms = opts->lease_duration_ms,
			.renew_deadline_ms = opts->renew_deadline_ms,
			.retry_period_ms = opts->retry_period_ms,
			.on_started = on_started,
			.on_stopped = on_stopped,
			.on_new_leader = on_new_leader,
			.on_error = lease_error,
			.user = c,
		};
		r = js_leader_new(c->client, &lo, &c->le);
	}
	if (r < 0) {
		(void)!js_controller_free(c); /* nothing started yet: cannot refuse */
		return r;
	}
	*ret = c;
	return 0;
}

int js_controller_start(struct js_controller *c)
{
	if (atomic_exchange(&c->started, true))
		return -EBUSY;
	struct js_informer *infs[] = {c->jobsets, c->jobs, c->services, c->pvcs, c->pods, c->ipods, c->hpods, c->opods};
	for (size_t i = 0; i < JS_ARRAY_SIZE(infs); i++) {
		if (!infs[i])
			continue;
		int r = js_informer_start(infs[i]);
		if (r < 0)
			return r; /* js_controller_stop stops what did start */
	}
	if (c->le)
		return js_leader_start(c->le);
	start_workers(c);
	return 0;
}

bool js_controller_ready(struct js_controller *c)
{
	return atomic_load(&c->started) && caches_synced(c) && !atomic_load(&c->lost);
}

bool js_controller_active(struct js_controller *c)
{
	return atomic_load(&c->workers_started) && !atomic_load(&c->stopping);
}

bool js_controller_lost(struct js_controller *c)
{
	return atomic_load(&c->lost);
}

/* Wait for every worker to exit: up to `timeout_ms` (< 0: no limit).
 * Returns the workers still alive. */
static int wait_workers(struct js_controller *c, int timeout_ms)
{
	struct timespec dl = js_clock_deadline_ts(timeout_ms);
	pthread_mutex_lock(&c->mu);
	while (c->alive > 0) {
		if (timeout_ms < 0)
			pthread_cond_wait(&c->cond, &c->mu);
		else if (pthread_cond_timedwait(&c->cond, &c->mu, &dl) == ETIMEDOUT)
			break;
	}
	int alive = c->alive;
	pthread_mutex_unlock(&c->mu);
	return alive;
}

int js_controller_stop(struct js_controller *c, int timeout_ms)
{
	if (atomic_load(&c->stopped))
		return c->stop_result;
	uint64_t t0 = js_clock_now_ns();
	atomic_store(&c->stopping, true);
	js_workqueue_shutdown(c->q);
	int r = 0;
	int alive = wait_workers(c, timeout_ms);
	if (alive > 0) {
		/* The grace period is over: cut the in-flight reconciles short
		 * (their requests end with -ECANCELED, their waits give up), and
		 * still wait for the last worker - never leave one running on a
		 * controller the caller is about to free. */
		pthread_mutex_lock(&c->mu);
		int busy = c->busy;
		pthread_mutex_unlock(&c->mu);
		js__ctrl_logf(c, JS_CONTROLLER_LOG_ERROR,
			      "stop: %d reconciles still running after %d ms: cancelling their requests", busy,
			      timeout_ms);
		atomic_store(&c->abort, true);
		js_client_wakeup(c->client);
		(void)wait_workers(c, -1);
		r = -ETIMEDOUT;
	}
	pthread_mutex_lock(&c->mu);
	int n = c->n_threads;
	pthread_mutex_unlock(&c->mu);
	for (int i = 0; i < n; i++)
		pthread_join(c->threads[i], NULL);
	/* Only now that no worker acts may a successor take over. */
	if (c->le)
		(void)js_leader_stop(c->le); /* not its own thread: cannot refuse */
	struct js_informer *infs[] = {c->jobsets, c->jobs, c->services, c->pvcs, c->pods, c->ipods, c->hpods, c->opods};
	for (size_t i = 0; i < JS_ARRAY_SIZE(infs); i++)
		if (infs[i])
			(void)js_informer_stop(infs[i]);
	/* The events the workers queued: sent within what is left of the
	 * grace period (at most EVENTS_DRAIN_MS), the rest dropped. */
	if (c->rec) {
		int64_t left = timeout_ms < 0 ? EVENTS_DRAIN_MS
					      : (int64_t)timeout_ms - (int64_t)((js_clock_now_ns() - t0) / 1000000u);
		int drain = left <= 0 ? 0 : left > EVENTS_DRAIN_MS ? EVENTS_DRAIN_MS : (int)left;
		if (js_recorder_shutdown(c->rec, drain) < 0)
			js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "stop: events still unsent after %d ms dropped", drain);
	}
	c->stop_result = r;
	atomic_store(&c->stopped, true);
	return r;
}

int js_controller_free(struct js_controller *c)
{
	if (!c)
		return 0;
	if (atomic_load(&c->started) && !atomic_load(&c->stopped)) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_ERROR,
			      "js_controller_free: the controller is still running (js_controller_stop first), "
			      "refusing to free it");
		return -EBUSY;
	}
	(void)!js_leader_free(c->le); /* stopped: cannot refuse */
	c->le = NULL;
	struct js_informer **infs[] = {&c->jobsets, &c->jobs, &c->services, &c->pvcs, &c->pods, &c->ipods, &c->hpods, &c->opods};
	for (size_t i = 0; i < JS_ARRAY_SIZE(infs); i++) {
		(void)!js_informer_free(*infs[i]); /* stopped: cannot refuse */
		*infs[i] = NULL;
	}
	js__oldpods_free(c);
	c->rec = js_recorder_free(c->rec);
	c->q = js_workqueue_free(c->q);
	c->metrics = js_metrics_free(c->metrics);
	js_hmap_free(c->enqueued);
	js_hmap_free(c->written);
	js_hmap_free(c->restarts_seen);
	js_hmap_free(c->pending_read);
	js_expect_free(c->expect);
	js__phases_free(c);
	js_hmap_free(c->waits);
	free(c->threads);
	free(c->lease_namespace);
	free(c->lease_name);
	free(c->identity);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->mu);
	free(c);
	return 0;
}

struct js_metrics *js_controller_metrics(struct js_controller *c)
{
	return c->metrics;
}

static void informer_metrics(struct js_controller *c, struct js_informer *inf, const char *name)
{
	const char *v[] = {name};
	struct js_informer_stats st;
	js_informer_stats(inf, &st);
	(void)js_metrics_set(c->metrics, JS__M_CACHE_OBJECTS, v, (double)js_informer_len(inf));
	/* Counters are cumulative in the informer: add the difference. */
	double lists = js_metrics_value(c->metrics, JS__M_INFORMER_LISTS, v);
	double watches = js_metrics_value(c->metrics, JS__M_INFORMER_WATCHES, v);
	if ((double)st.lists > lists)
		(void)js_metrics_add(c->metrics, JS__M_INFORMER_LISTS, v, (double)st.lists - lists);
	if ((double)st.watches > watches)
		(void)js_metrics_add(c->metrics, JS__M_INFORMER_WATCHES, v, (double)st.watches - watches);
	/* Updates the record type found equal never reach a handler. */
	const char *ev[] = {name, "unchanged"};
	double unchanged = js_metrics_value(c->metrics, JS__M_WATCH_EVENTS, ev);
	if ((double)st.unchanged > unchanged)
		(void)js_metrics_add(c->metrics, JS__M_WATCH_EVENTS, ev, (double)st.unchanged - unchanged);
}

void js_controller_refresh_metrics(struct js_controller *c)
{
	const char *qn[] = {QUEUE_NAME};
	(void)js_metrics_set(c->metrics, JS__M_QUEUE_DEPTH, qn, (double)js_workqueue_len(c->q));
	const char *ln[] = {c->lease_name ? c->lease_name : ""};
	(void)js_metrics_set(c->metrics, JS__M_LEADER, ln, js_controller_active(c) ? 1 : 0);
	const char *ctl[] = {CONTROLLER_NAME};
	pthread_mutex_lock(&c->mu);
	int busy = c->busy;
	pthread_mutex_unlock(&c->mu);
	(void)js_metrics_set(c->metrics, JS__M_WORKERS, ctl, busy);
	informer_metrics(c, c->jobsets, "jobsets");
	informer_metrics(c, c->jobs, "jobs");
	informer_metrics(c, c->services, "services");
	informer_metrics(c, c->pvcs, "persistentvolumeclaims");
	if (c->pods)
		informer_metrics(c, c->pods, "pods");
	if (c->ipods)
		informer_metrics(c, c->ipods, "jobset-pods");
	if (c->hpods)
		informer_metrics(c, c->hpods, "watched-pods");
	if (c->opods)
		informer_metrics(c, c->opods, "jobset-pod-metadata");
	js__phases_refresh(c);
}
