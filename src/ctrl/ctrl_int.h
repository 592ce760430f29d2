/*
 * ctrl_int.h - internals shared by controller.c (wiring) and the files of
 * src/ctrl that it drives: one reconcile of one key (sync.c and the files
 * ctrl/sync_int.h lists), placement, in-place restarts, phases. Nothing
 * outside src/ctrl includes this.
 */
#ifndef JS_CTRL_INT_H
#define JS_CTRL_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/hmap.h"
#include "ctrl/cache.h"
#include "ctrl/controller.h"
#include "ctrl/expect.h"
#include "ctrl/metrics.h"
#include "kube/informer.h"
#include "kube/leader.h"
#include "kube/recorder.h"
#include "kube/workqueue.h"

/* Index of Jobs by the uid of their controller JobSet owner (SPEC §11.1). */
#define JS__CTRL_INDEX_OWNER "jobset-owner"
/* Index of Jobs labelled (or whose pod template is labelled) with a JobSet
 * name but not controlled by a JobSet of that name, by "<namespace>/<name>"
 * (ctrl/owner.h js_owner_unowned_keys): the names they hold are shown to the core, which
 * says why it cannot create them (JobCreationBlocked). */
#define JS__CTRL_INDEX_UNOWNED "jobset-unowned"
/* Index of JobSets by metadata.uid (an orphaned Job's former owner). */
#define JS__CTRL_INDEX_UID "uid"

/* Work-queue keys of the placement controller (ctrl/placement.c):
 * prefix + "<namespace>/<Job uid>". */
#define JS__CTRL_PLACEMENT_PREFIX "placement:"
/* Work-queue keys of hang detection (ctrl/hangs.c): prefix +
 * "<namespace>/<pod name>". */
#define JS__CTRL_HANG_PREFIX "hang:"

/* Metric families, in the order of the table in controller.c. */
enum {
	JS__M_FAILED,            /* jobset_failed_total{jobset_name,namespace} */
	JS__M_COMPLETED,         /* jobset_completed_total{jobset_name,namespace} */
	JS__M_RESTARTS,          /* jobset_restarts_total{jobset_name,namespace} */
	JS__M_DEADLINE_EXCEEDED, /* jobset_active_deadline_exceeded_total{jobset_name,namespace} (KEP-1186) */
	JS__M_RECONCILE_TOTAL,   /* controller_runtime_reconcile_total{controller,result} */
	JS__M_RECONCILE_ERRORS,  /* controller_runtime_reconcile_errors_total{controller} */
	JS__M_RECONCILE_TIME,    /* controller_runtime_reconcile_time_seconds{controller} */
	JS__M_ACTIONS,           /* jobset_controller_actions_total{action,result} */
	JS__M_STATUS_CONFLICTS,  /* jobset_controller_status_conflicts_total */
	JS__M_QUEUE_DEPTH,       /* workqueue_depth{name} */
	JS__M_QUEUE_ADDS,        /* workqueue_adds_total{name} */
	JS__M_QUEUE_RETRIES,     /* workqueue_retries_total{name} */
	JS__M_QUEUE_LATENCY,     /* workqueue_queue_duration_seconds{name} */
	JS__M_QUEUE_WORK,        /* workqueue_work_duration_seconds{name} */
	JS__M_REST,              /* rest_client_requests_total{method,code} */
	JS__M_LEADER,            /* leader_election_master_status{name} */
	JS__M_WORKERS,           /* controller_runtime_active_workers{controller} */
	JS__M_CACHE_OBJECTS,     /* jobset_controller_cache_objects{resource} */
	JS__M_INFORMER_LISTS,    /* jobset_controller_informer_lists_total{resource} */
	JS__M_INFORMER_WATCHES,  /* jobset_controller_informer_watches_total{resource} */
	JS__M_WATCH_EVENTS,      /* jobset_controller_watch_events_total{resource,verdict} */
	/* Restarts and phases (issue 16; docs/metrics.md, ctrl/phases.c). */
	JS__M_RESTARTS_BY_REASON, /* jobset_restarts_by_reason_total{reason,action} */
	JS__M_TIME_TO_READY,     /* jobset_time_to_all_ready_seconds{trigger} */
	JS__M_PHASE_DURATION,    /* jobset_phase_duration_seconds{jobset_name,namespace,phase} */
	JS__M_PHASE_TOTAL,       /* jobset_phase_seconds_total{phase} */
	JS__M_GOODPUT,           /* jobset_goodput_ratio{jobset_name,namespace} */
	/* Events (kube/recorder.h, issue 22): sent off the reconcile path. */
	JS__M_EVENTS_DROPPED,    /* jobset_controller_events_dropped_total */
	JS__M__COUNT
};

/* The event-handler context (the informer's `user`) of a cache whose
 * errors the log names: the controller and the cache's name, the "cache
 * of <name>" of js__ctrl_cache_error; for Services and PVCs also the
 * metric label of their events. */
struct js__ctrl_cache {
	struct js_controller *c;
	const char *name;
};

/* Informer on_error of a cache whose handlers' `user` is a struct
 * js__ctrl_cache: "cache of <name>: <verb> failed: ... (retrying)" in the
 * log at error level, every time (so a controller that never becomes
 * ready says why), and nothing while the controller stops. The informer
 * retries with its backoff. controller.c. */
void js__ctrl_cache_error(void *user, const char *verb, int err, const char *msg);

/* The controller of a handler's `user` (a struct js__ctrl_cache). */
static inline struct js_controller *js__ctrl_of(void *user)
{
	return ((struct js__ctrl_cache *)user)->c;
}

struct js_controller {
	struct js_controller_opts o; /* strings below are owned copies */
	char *lease_namespace, *lease_name, *identity;

	struct js_client *client;
	struct js_metrics *metrics;
	struct js_informer *jobsets, *jobs, *services, *pvcs;
	struct js_informer *pods;    /* placement: labelled pods only; NULL in webhook mode */
	struct js_informer *ipods;   /* in-place restart: pods with the jobset-name
					label; NULL unless the InPlaceRestart gate is on */
	struct js_informer *hpods;   /* hang detection: the pods the pod webhook gave a
					watcher; NULL unless the ProgressDeadline gate is on */
	struct js_informer *opods;   /* restart cleanup "direct": the metadata of
					non-terminal JobSet pods; NULL in foreground */
	struct js__oldpods *oldpods; /* with opods: the confirming LISTs (oldpods.c) */
	struct js__ctrl_cache service_events, pvc_events;
	/* The handler contexts of the pod caches (hpods, pods, ipods, opods). */
	struct js__ctrl_cache hpods_ctx, pods_ctx, ipods_ctx, opods_ctx;
	struct js_workqueue *q;
	struct js_recorder *rec;
	struct js_leader *le;

	pthread_mutex_t mu;          /* guards the fields below */
	pthread_cond_t cond;         /* CLOCK_MONOTONIC; signalled when a worker exits */
	pthread_t *threads;
	int n_threads;
	int busy;                    /* workers inside a reconcile */
	int alive;                   /* worker threads not yet exited */
	struct js_hmap *enqueued;    /* key -> monotonic ns of first add, for queue latency */
	struct js_hmap *written;     /* key -> what our last status write was (controller.c) */
	struct js_hmap *restarts_seen; /* key -> the highest status.restarts of its
					  incarnation the watch delivered (controller.c) */
	struct js_hmap *pending_read; /* key -> Unix seconds of its last read of
					 the pods that wait to be scheduled
					 (pendpods.c; uintptr_t values) */
	struct js_expect *expect;    /* what each key wrote and the caches do not show yet
					(ctrl/expect.h; rw.c); its own lock */
	struct js_hmap *waits;       /* pod uid -> 1 + the js_placement_why last said (placement.c) */
	int stop_result;             /* what the first js_controller_stop returned */

	pthread_mutex_t phase_mu;    /* guards `phases` (phases.c) */
	struct js_hmap *phases;      /* JobSet key -> its phase accountant */

	atomic_bool started, workers_started, stopping, stopped, lost;
	/* Set when the stop grace period has passed: the workers' requests
	 * (bound with js_client_bind_cancel) end with -ECANCELED, so the
	 * workers finish promptly (no pass waits for a watch: rw.c). */
	atomic_bool abort;
};

/* Outcome of one reconcile. */
struct js__sync_result {
	bool error;             /* retry with backoff */
	bool conflict;          /* (error) status write conflicted: do not log */
	bool backoff;           /* not an error: look again with the queue's backoff */
	bool has_requeue_after; /* reconcile again after ... */
	int64_t requeue_after;  /* ... seconds */
};

struct js_arena;
struct js__oldpods;
struct js_obspod;
struct js_jobset;

/* Reconcile key "ns/name" once (SPEC §11.2), with scratch memory from
 * `arena` (the caller resets it afterwards). sync.c (ctrl/sync_int.h). */
void js__sync_key(struct js_controller *c, const char *key, struct js_arena *arena, struct js__sync_result *res);

/* Create c->pods, the placement controller's pod cache with its index.
 * Returns 0 or an informer error. placement.c. */
int js__placement_informer(struct js_controller *c);

/* Place the followers of one Job: `key` without JS__CTRL_PLACEMENT_PREFIX,
 * "<namespace>/<Job uid>". placement.c. */
void js__placement_sync(struct js_controller *c, const char *key, struct js__sync_result *res);

/* The JSON patch (RFC 6902) that pins follower `p` to `domain` under the
 * JobSet's topology `key` and lifts our gate, with tests that make it apply
 * only to the pod as the cache saw it (same uid, the gate still at
 * p->gate_at). NULL when there is nothing to patch: a pod without
 * namespace, name or uid, without our gate, or an absent or empty key or
 * domain. Caller owns the result. placement.c. */
json_t *js__placement_ungate_patch(const struct js_cache_xpod *p, const char *key, const char *domain);

/* The JSON patch (RFC 6902) that lets follower `p` lead its Job
 * (core/placement.h js_placement_elect): lifts our gate without a domain
 * and adds the annotation JS_ANN_PLACEMENT_LEADER, with the same tests as
 * js__placement_ungate_patch (same uid, the gate still at p->gate_at), so
 * that two passes never elect it twice. NULL for a pod without namespace,
 * name or uid, or without our gate. Caller owns the result. placement.c. */
json_t *js__placement_elect_patch(const struct js_cache_xpod *p);

/* A pod the pod webhook gave a progress watcher (label JS_LABEL_PROGRESS):
 * what hangs.c reads of it. Read-only; every string owned, NULL when
 * absent. */
struct js__hang_pod {
	const char *ns, *name, *uid;
	const char *jobset;   /* label jobset.sigs.k8s.io/jobset-name */
	const char *rjob;     /* label jobset.sigs.k8s.io/replicatedjob-name */
	bool deleting;        /* metadata.deletionTimestamp set */
	bool terminal;        /* phase Succeeded or Failed */
	bool marked;          /* condition ProgressDeadlineExceeded is True */
	bool has_start;       /* a regular container runs ... */
	int64_t start_ms;     /* ... the latest started at (ms, the node's clock) */
	const char *report;   /* the watcher's termination message when it exited
				 with JS_HEARTBEAT_EXIT_EXCEEDED (state or lastState) */
};

/* Store type of the cache of watched pods (records: struct js__hang_pod). */
extern const struct js_store_type js__hangs_pod_type;

/* What to do with a watched pod. */
enum js__hang_verdict {
	JS__HANG_NONE,     /* nothing: no report, or the pod is going already */
	JS__HANG_REFUSED,  /* a report not to act on (why says why) */
	JS__HANG_ACT,      /* over its deadline: condition, event, stop (why: the
			      condition's message) */
	JS__HANG_DELETE,   /* the condition is set: stop it (a retry) */
};

struct js__hang_judgement {
	enum js__hang_verdict verdict;
	char *why; /* malloc'd, or NULL (NONE, DELETE) */
};

/* Judge pod `p` against `js`, the JobSet its label names (NULL: none, or
 * being deleted): the settings are the JobSet's for the pod's
 * ReplicatedJob, the start the kubelet's, and of the watcher's report only
 * the heartbeat's mtime and the report's time are used; the verdict is
 * core/progress.h's at that time. Pure. Free with
 * js__hang_judgement_done. hangs.c. */
void js__hangs_judge(const struct js__hang_pod *p, const struct js_jobset *js, struct js__hang_judgement *ret);
void js__hang_judgement_done(struct js__hang_judgement *j);

/* Create c->hpods. Returns 0 or an informer error. hangs.c. */
int js__hangs_informer(struct js_controller *c);

/* The JSON patch that makes the kubelet end pod `p` Failed: the uid tested
 * (this incarnation only), spec.activeDeadlineSeconds set to 1, the least
 * the API allows, so that it is over at once. Owned by the caller
 * (json_decref); NULL for a record without a uid. hangs.c. */
json_t *js__hangs_expire_patch(const struct js__hang_pod *p);

/* Act on watched pod `key` (without JS__CTRL_HANG_PREFIX: "<namespace>/<pod
 * name>"). hangs.c. */
void js__hangs_sync(struct js_controller *c, const char *key, struct js__sync_result *res);

/* A pod condition to set (podcond.c); every string borrowed. */
struct js__podcond {
	const char *ns, *name, *uid; /* the pod, this incarnation */
	const char *type, *reason, *message;
};

/* Ensure condition pc->type is True on pod pc->ns/pc->name of uid pc->uid,
 * with pc->reason and pc->message (left as it is when it is True
 * already): a GET, then an update of the status subresource. Returns 0,
 * JS_ENOTFOUND (gone, or another incarnation), or the client's error
 * (JS_ECONFLICT when the pod changed in between). podcond.c. */
int js__podcond_ensure(struct js_controller *c, const struct js__podcond *pc);

/* True when `js` restarts in place (failurePolicy.restartStrategy
 * InPlaceRestart). NULL is false. inplace.c. */
bool js__inplace_strategy(const struct js_jobset *js);

/* Create c->ipods, the cache of JobSet pods the in-place restart
 * bookkeeping reads (SPEC §11.16), with its index. Returns 0 or an informer
 * error. inplace.c. */
int js__inplace_informer(struct js_controller *c);

/* The observed pods of JobSet `key` ("<namespace>/<name>") for the core:
 * *ret_pods (in `a`, borrowing the records' strings) and *ret_recs (the
 * records, one reference each: js_informer_release(c->ipods, ...) once the
 * reconcile is done). Returns their count; 0 and NULLs without the cache.
 * inplace.c. */
size_t js__inplace_observe(struct js_controller *c, struct js_arena *a, const char *key, const void ***ret_recs,
			   struct js_obspod **ret_pods);

/* Create c->opods, the metadata-only cache of non-terminal JobSet pods the
 * restart cleanup reads, with its index, and c->oldpods. Returns 0 or an
 * informer error. oldpods.c. */
int js__oldpods_informer(struct js_controller *c);

/* Free c->oldpods (the informer goes with the others). oldpods.c. */
void js__oldpods_free(struct js_controller *c);

/* Queue `key` now, or (`fold`) after the fold window; counts the event of
 * `resource`. controller.c. */
void js__ctrl_enqueue(struct js_controller *c, const char *key, bool fold, const char *resource);

/* Log a formatted line through the user's callback. controller.c. */
void js__ctrl_logf(struct js_controller *c, int level, const char *fmt, ...) JS_PRINTF(3, 4);

/* Count one API request by verb and HTTP code (0 = no answer). controller.c. */
void js__ctrl_count_request(struct js_controller *c, const char *method, long http_code);

struct js_plan;

/* Set up and free c->phases and its lock. phases.c. */
void js__phases_new(struct js_controller *c);
void js__phases_free(struct js_controller *c);

/* After a successful reconcile of `key`: count the restarts `plan` (may be
 * NULL) decided, feed the phase `js` (as the reconcile left it) is in to
 * the JobSet's accountant, and export its phase metrics. phases.c. */
void js__phases_observe(struct js_controller *c, const char *key, const struct js_jobset *js,
			const struct js_plan *plan);

/* The JobSet `key` was deleted: fold its time into the totals and drop its
 * per-JobSet series. phases.c. */
void js__phases_forget(struct js_controller *c, const char *key);

/* Bring every JobSet's phase metrics up to now (before a scrape); drop
 * accountants of JobSets no longer cached. phases.c. */
void js__phases_refresh(struct js_controller *c);

/* Remember our status write of `key` - the full status asked for, before
 * the write, then also the resourceVersion it returned - so that the watch
 * event of that write does not start another pass (ctrl/cache.h).
 * controller.c. */
void js__ctrl_note_written(struct js_controller *c, const char *key, const char *rv, const json_t *status);

/* The highest status.restarts any version of JobSet `key` ("ns/name") of
 * uid `uid` carried as the JobSet watch delivered it since this process
 * started (every version, also one the cache replaced before a pass read
 * it); 0 when unknown: js_reconcile_input.restarts_seen. Takes c->mu. */
int32_t js__ctrl_restarts_seen(struct js_controller *c, const char *key, const char *uid);

/* Node quarantine's "no room left" (core/noroom.c): when this process last
 * read the pending pods of JobSet `key` (Unix seconds; 0: never), and
 * noting a read. Only a rate limit: losing it (a restart, another leader)
 * costs one more read. Take c->mu. controller.c. */
int64_t js__ctrl_pending_read_at(struct js_controller *c, const char *key);
void js__ctrl_note_pending_read(struct js_controller *c, const char *key, int64_t now);

#endif
