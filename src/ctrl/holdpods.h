/*
 * holdpods.h - pods of older restart attempts that left the controller's
 * label-scoped pod cache while they may still run (restart cleanup
 * "direct"; core/cleanup.h, issue 22).
 *
 * Why: the cache of JobSet pods (ctrl/oldpods.c) watches only pods that
 * carry the jobset-name label. A user who removes that label from an old
 * pod in its grace period makes the API server send a DELETED event for it
 * (it left the selection, not the store). That event carries the pod's
 * previous state, labels included, so it cannot be told from a real delete
 * (nor, in a metadata-only watch, from a turn to Succeeded or Failed), and
 * without this module the pod's Job name would be created beside it.
 * Upstream's Foreground deletion waits for such a pod because the garbage
 * collector follows ownerReferences.
 *
 * So every pod of an older attempt that leaves the cache is held here with
 * what the cache knew of it from first sight (its Job name and restart
 * attempt), its JobSet's passes count it as an old pod still running, and
 * the caller confirms its end by a GET of the pod, first at once, then with
 * backoff (1 s doubling up to `max_backoff_ns`), until the pod is NotFound,
 * has another uid, or is Succeeded or Failed.
 *
 * Bounded: at most `max_pods` over all JobSets (a pod beyond that is not
 * held: js_holdpods_add says so and the caller logs it); a JobSet's pods
 * are dropped when it is gone, finished, no longer restarted
 * (js_holdpods_forget) or of another uid.
 *
 * Time is the caller's monotonic clock in ns, so tests drive it.
 * Thread-safe: one mutex.
 */
#ifndef JS_CTRL_HOLDPODS_H
#define JS_CTRL_HOLDPODS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/common.h"

/** Defaults of struct js_holdpods_opts. */
#define JS_HOLDPODS_MAX_PODS ((size_t)100000)
#define JS_HOLDPODS_MAX_BACKOFF_NS (16ull * 1000000000ull)

struct js_holdpods_opts {
	size_t max_pods;         /* held over all JobSets; 0 = 100,000 (about 20 MB at most) */
	uint64_t max_backoff_ns; /* longest wait between two checks of a pod; 0 = 16 s */
};

/** A held pod. Strings are copied by js_holdpods_add; in the array of
 * js_holdpods_list they live in the caller's arena. */
struct js_holdpod {
	const char *name;     /* metadata.name (the key, with the namespace of its JobSet) */
	const char *uid;      /* metadata.uid when known, else NULL (any uid counts as it) */
	const char *job_name; /* its Job name from first sight, or NULL */
	const char *attempt;  /* its restart-attempt label from first sight, or NULL */
	bool deleting;        /* metadata.deletionTimestamp was set when last seen */
	bool due;             /* (js_holdpods_list) its check is due now */
};

/** What a check of a held pod found (js_holdpods_checked). */
enum js_holdpods_seen {
	JS_HOLDPODS_GONE,    /* NotFound, another uid, Succeeded or Failed: dropped */
	JS_HOLDPODS_RUNNING, /* still there and not terminal: checked again later */
	JS_HOLDPODS_MARKED,  /* as RUNNING, and marked for deletion */
	JS_HOLDPODS_ERROR,   /* the check failed: checked again later */
};

struct js_holdpods;

/** A new, empty set; `opts` may be NULL (defaults). Caller frees with
 * js_holdpods_free. Aborts on OOM (js_xmalloc). */
struct js_holdpods *js_holdpods_new(const struct js_holdpods_opts *opts);

/** Free `h` and everything it holds (NULL is a no-op). */
void js_holdpods_free(struct js_holdpods *h);

/**
 * Hold pod `p` of the JobSet `key` ("<namespace>/<name>", incarnation
 * `jobset_uid`, may be NULL) from `now`; its first check is due at once.
 * A pod already held under `key` is updated (uid, deleting), keeping its
 * Job name and attempt. Returns false, holding nothing, when `p->name` is
 * NULL or `max_pods` are already held.
 */
bool js_holdpods_add(struct js_holdpods *h, const char *key, const char *jobset_uid, const struct js_holdpod *p,
		     uint64_t now);

/**
 * The pods held for JobSet `key` of incarnation `jobset_uid`, copied into
 * `a` (*ret, NULL when none); `due` tells which to check now. Pods held for
 * another incarnation of `key` are dropped first. *ret_wait_ns (may be
 * NULL) gets the time until the next check is due when none is due now
 * (UINT64_MAX when nothing is held). Returns the count.
 */
size_t js_holdpods_list(struct js_holdpods *h, const char *key, const char *jobset_uid, struct js_arena *a,
			struct js_holdpod **ret, uint64_t now, uint64_t *ret_wait_ns);

/** Record what a check of pod `name` of `key` found at `now`: GONE drops
 * it, anything else doubles its backoff. Unknown names are ignored. */
void js_holdpods_checked(struct js_holdpods *h, const char *key, const char *name, enum js_holdpods_seen seen,
			 uint64_t now);

/** Stop holding pod `name` of `key` (the pod cache sees it again). */
void js_holdpods_drop(struct js_holdpods *h, const char *key, const char *name);

/** Drop every pod held for `key` (the JobSet is gone, finished or no longer
 * restarted). */
void js_holdpods_forget(struct js_holdpods *h, const char *key);

/** Pods held over all JobSets. */
size_t js_holdpods_count(struct js_holdpods *h);

#endif
