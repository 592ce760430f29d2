/*
 * informer.h - a cache of one resource type kept in sync by list+watch
 * (client-go's reflector + thread-safe indexed store + event handlers).
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
 * Scoping: one namespace or all, label and field selectors. Cached objects
 * have metadata.managedFields removed and are immutable: never modify what
 * get/list return (json_deep_copy first). Indexes: "namespace" and
 * "owner-uid" (every ownerReferences[].uid) are built in; more can be added
 * before start.
 *
 * Threading: handlers run on the informer's own thread, one at a time, in
 * event order; they may call the client. Reads (get/list/by_index) are
 * thread-safe and return new references.
 */
#ifndef JS_INFORMER_H
#define JS_INFORMER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "kube/client.h"

#define JS_INFORMER_INDEX_NAMESPACE "namespace"
#define JS_INFORMER_INDEX_OWNER_UID "owner-uid"

struct js_informer;

/** Event handlers (any may be NULL). Objects are borrowed for the call. */
struct js_informer_handlers {
	void (*on_add)(void *user, const json_t *obj);
	void (*on_update)(void *user, const json_t *old_obj, const json_t *obj);
	/* final_state_unknown: the delete was inferred from a relist, and `obj`
	 * is the last state we saw */
	void (*on_delete)(void *user, const json_t *obj, bool final_state_unknown);
	void *user;
};

/** Options; zero fields take the defaults. */
struct js_informer_opts {
	const struct js_resource *res; /* required */
	const char *namespace;         /* NULL = all namespaces */
	const char *label_selector;
	const char *field_selector;
	long page_size;          /* LIST limit; 0 = 500 */
	int stall_s;             /* 0 = 90 (bookmarks come about once a minute) */
	int watch_timeout_s;     /* server-side timeoutSeconds; 0 = random 300..600 */
	int backoff_initial_ms;  /* 0 = 200 */
	int backoff_max_ms;      /* 0 = 30000 */
	struct js_informer_handlers handlers;
};

/** Values of one object for an index: call emit(ctx, value) per value. */
typedef void js_informer_emit_fn(void *ctx, const char *value);
typedef void js_informer_index_fn(const json_t *obj, js_informer_emit_fn *emit, void *ctx);

/** Create (not started). `c` must outlive the informer. Returns 0 or
 * JS_EINVALID (no resource). */
JS_WARN_UNUSED int js_informer_new(struct js_client *c, const struct js_informer_opts *opts,
				   struct js_informer **ret);

/** Add an index before start. Returns 0, JS_EEXISTS, or -EBUSY after start. */
JS_WARN_UNUSED int js_informer_add_index(struct js_informer *inf, const char *name, js_informer_index_fn *fn);

/** Start the reflector thread. Returns 0, -EBUSY if started, or -errno. */
JS_WARN_UNUSED int js_informer_start(struct js_informer *inf);

/** Stop, join and free. Handlers are not called after it returns. NULL is a
 * no-op. Returns NULL. */
struct js_informer *js_informer_free(struct js_informer *inf);

/** Wait until the first LIST has been stored. Returns 0 or -ETIMEDOUT. */
JS_WARN_UNUSED int js_informer_wait_synced(struct js_informer *inf, int timeout_ms);

/** True once the first LIST has been stored. */
bool js_informer_has_synced(struct js_informer *inf);

/** Store generation: increases with every change to the store. */
uint64_t js_informer_generation(struct js_informer *inf);

/** Wait until the generation exceeds `gen`. Returns 0 or -ETIMEDOUT. */
JS_WARN_UNUSED int js_informer_wait_change(struct js_informer *inf, uint64_t gen, int timeout_ms);

/** The cached object, a new reference, or NULL. `ns` NULL for cluster-scoped. */
json_t *js_informer_get(struct js_informer *inf, const char *ns, const char *name);

/** Every cached object as a new array (order unspecified). */
json_t *js_informer_list(struct js_informer *inf);

/** Objects whose index `index` has `value`, as a new array (empty when the
 * index is unknown). */
json_t *js_informer_by_index(struct js_informer *inf, const char *index, const char *value);

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
};

void js_informer_stats(struct js_informer *inf, struct js_informer_stats *ret);

#endif
