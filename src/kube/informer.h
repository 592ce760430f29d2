/*
 * informer.h - a cache of one resource type kept in sync by list+watch
 * (client-go's reflector + indexed store + event handlers), typed by a
 * transform hook (client-go's SetTransform).
 *
 * The reflector thread LISTs (pages of `page_size`), then WATCHes from the
 * list's resourceVersion with bookmarks, resuming from the last seen
 * resourceVersion whenever the stream ends or breaks (exponential backoff,
 * reset by a healthy stream). A watch that receives nothing, not even a
 * bookmark, for `stall_s` seconds is treated as dead and reconnected. A
 * 410 Gone (compaction, or an API server restart whose watch cache starts
 * later) triggers a full relist; objects missing from the new list are
 * delivered as deletes with final_state_unknown, so no change is lost.
 *
 * Records: each object is turned into a record at ingest by the informer's
 * type (kube/store.h) and its JSON is freed right after, page by page for a
 * LIST and event by event for a WATCH, so the cache holds records only.
 * Without a type the record is the json_t itself (metadata.managedFields
 * removed). Records are immutable; reads return new references.
 *
 * Scoping: one namespace or all, label and field selectors. Indexes
 * (kube/store.h; js_store_index_namespace and js_store_index_owner_uids are
 * ready-made) are added before start and run on the JSON at ingest.
 *
 * Handlers run on the informer's own thread, one at a time, in event order;
 * they may call the client. An update whose records the type's same() finds
 * equal calls no handler (it is counted in stats.unchanged).
 *
 * Lifecycle (libuv-style, as ctrl/controller.h): js_informer_stop() joins
 * the reflector - no handler runs after it returns - and every blocking
 * call of the reflector is cancellable, so stop returns promptly.
 * js_informer_free() refuses with -EBUSY while the reflector still runs.
 *
 * Threading: reads (get/has/list/by_index/...) are thread-safe.
 */
#ifndef JS_INFORMER_H
#define JS_INFORMER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "kube/client.h"
#include "kube/store.h"

#define JS_INFORMER_INDEX_NAMESPACE "namespace"
#define JS_INFORMER_INDEX_OWNER_UID "owner-uid"

struct js_informer;

/**
 * Event handlers (any may be NULL). `rec`/`old_rec` are records of the
 * informer's type, `obj` the JSON the change arrived as; all are borrowed
 * for the call (take a reference through the type to keep a record).
 */
struct js_informer_handlers {
	void (*on_add)(void *user, const void *rec, const json_t *obj);
	void (*on_update)(void *user, const void *old_rec, const void *rec, const json_t *obj);
	/* final_state_unknown: the delete was inferred from a relist, and `obj`
	 * is NULL (`rec` is the last state we saw) */
	void (*on_delete)(void *user, const void *rec, const json_t *obj, bool final_state_unknown);
	void *user;
	/* (Last, so positional initialisers of the others keep working.)
	 * A LIST that failed, or a WATCH the API server refused (an HTTP error
	 * other than 410 Gone): `verb` "list" or "watch", `err` the code
	 * (JS_APIERR_EFORBIDDEN for a missing RBAC verb, ...), `message` the
	 * Status message or the transport error (borrowed; may be NULL). Never
	 * for a cancellation. The informer retries with backoff either way;
	 * this is how its owner gets to say why a cache does not sync. */
	void (*on_error)(void *user, const char *verb, int err, const char *message);
};

/** Options; zero fields take the defaults. */
struct js_informer_opts {
	const struct js_resource *res; /* required */
	const struct js_store_type *type; /* NULL = the JSON itself (js_store_type_json) */
	const char *namespace;         /* NULL = all namespaces */
	const char *label_selector;
	const char *field_selector;
	long page_size;          /* LIST limit; 0 = 500 */
	int stall_s;             /* 0 = 90 (bookmarks come about once a minute) */
	int watch_timeout_s;     /* server-side timeoutSeconds; 0 = random 300..600 */
	int backoff_initial_ms;  /* 0 = 200 */
	int backoff_max_ms;      /* 0 = 30000 */
	bool metadata_only;      /* LIST and WATCH as PartialObjectMetadata
				    (JS_CLIENT_ACCEPT_METADATA_LIST, _METADATA):
				    the transform sees each object's metadata
				    only, and the API server sends (and decodes
				    for us) a fraction of the bytes */
	struct js_informer_handlers handlers;
};

/** Create (not started). `c` must outlive the informer. Returns 0 or
 * JS_EINVALID (no resource). */
JS_WARN_UNUSED int js_informer_new(struct js_client *c, const struct js_informer_opts *opts,
				   struct js_informer **ret);

/** Add an index before start (kube/store.h). Returns 0, JS_EEXISTS,
 * JS_ETOOLARGE, or -EBUSY after start. */
JS_WARN_UNUSED int js_informer_add_index(struct js_informer *inf, const char *name, js_store_index_fn *fn);

/** Start the reflector thread. Returns 0, -EBUSY if started (or stopped:
 * an informer runs once), or -errno. */
JS_WARN_UNUSED int js_informer_start(struct js_informer *inf);

/** Stop the reflector (cancelling its LIST or WATCH) and join it: no
 * handler runs after this returns. Idempotent. Returns 0, or -EDEADLK when
 * called from a handler (the informer's own thread). */
int js_informer_stop(struct js_informer *inf);

/** Free. NULL is a no-op. Returns 0, or -EBUSY (nothing freed) while the
 * reflector runs: call js_informer_stop first. */
JS_WARN_UNUSED int js_informer_free(struct js_informer *inf);

/**
 * Apply a recorded watch stream, delivered in `n` slices (chunks[i] of
 * lens[i] bytes, split anywhere), to an informer that was never started:
 * the reflector's own framing, decoding, transform, store writes and
 * handler calls, on the caller's thread, without a request. For tests and
 * fuzzing (tests/fuzz/watch_fuzz.c); the client is not used. Returns 0
 * once every complete line is applied (an unfinished last line is dropped,
 * as when a stream breaks), the ERROR event's code (JS_EGONE for 410, ...),
 * JS_EINVALID for a line that is not a watch event, JS_ETOOLARGE for a line
 * over the event ceiling, or -EBUSY after js_informer_start; the lines
 * before the one that stopped it stay applied.
 */
JS_WARN_UNUSED int js_informer_replay(struct js_informer *inf, const char *const *chunks, const size_t *lens,
				      size_t n);

/** Wait until the first LIST has been stored. Returns 0 or -ETIMEDOUT. */
JS_WARN_UNUSED int js_informer_wait_synced(struct js_informer *inf, int timeout_ms);

/** True once the first LIST has been stored. */
bool js_informer_has_synced(struct js_informer *inf);

/** Store generation: increases with every change to the store. */
uint64_t js_informer_generation(struct js_informer *inf);

/** Wait until the generation exceeds `gen`. Returns 0 or -ETIMEDOUT. */
JS_WARN_UNUSED int js_informer_wait_change(struct js_informer *inf, uint64_t gen, int timeout_ms);

/** The record of ns/name, a new reference (js_informer_unref), or NULL.
 * `ns` NULL for cluster-scoped objects. */
const void *js_informer_get(struct js_informer *inf, const char *ns, const char *name);

/** For an informer without a type: the cached object, a new reference
 * (json_decref), or NULL (also for an informer with a type). */
json_t *js_informer_get_json(struct js_informer *inf, const char *ns, const char *name);

/** True when ns/name is cached (no reference taken). */
bool js_informer_has(struct js_informer *inf, const char *ns, const char *name);

/** Copy the cached resourceVersion of ns/name into `buf`. Returns 0,
 * JS_ENOTFOUND or JS_ETOOLARGE. */
JS_WARN_UNUSED int js_informer_object_rv(struct js_informer *inf, const char *ns, const char *name, char *buf,
					 size_t len);

/** Every record: *ret is a malloc'd array of new references (release with
 * js_informer_release); returns the count (order unspecified). */
size_t js_informer_list(struct js_informer *inf, const void ***ret);

/** Records whose index `index` has `value`, as js_informer_list (0 when the
 * index or value is unknown). */
size_t js_informer_by_index(struct js_informer *inf, const char *index, const char *value, const void ***ret);

/** Drop a reference returned by get/list/by_index. NULL is a no-op. */
void js_informer_unref(struct js_informer *inf, const void *rec);

/** Drop the references of a list/by_index array and free it. */
void js_informer_release(struct js_informer *inf, const void **recs, size_t n);

/** Number of cached objects. */
size_t js_informer_len(struct js_informer *inf);

/** Last resourceVersion seen (copied into buf, "" before the first list). */
void js_informer_resource_version(struct js_informer *inf, char *buf, size_t len);

struct js_informer_stats {
	uint64_t lists;         /* complete LISTs (first one included) */
	uint64_t relists_gone;  /* relists caused by 410 Gone */
	uint64_t watches;       /* watch requests started */
	uint64_t watch_ok;      /* watches answered 200 */
	uint64_t watch_errors;  /* watches that failed (transport, stall, non-200) */
	uint64_t stalls;        /* watches ended by stall detection */
	uint64_t events;        /* ADDED/MODIFIED/DELETED applied */
	uint64_t bookmarks;
	uint64_t relist_deletes; /* deletes inferred by relists */
	uint64_t unchanged;     /* updates the type's same() found equal: no handler */
	uint64_t rejected;      /* objects the type's transform refused */
};

void js_informer_stats(struct js_informer *inf, struct js_informer_stats *ret);

#endif
