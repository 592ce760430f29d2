/*
 * expect.h - what this process wrote of a JobSet's Jobs and its caches do not
 * show yet (client-go's ControllerExpectations, pkg/controller of
 * kubernetes: a ReplicaSet is not synced again until the pods it created are
 * observed or five minutes have passed).
 *
 * Why: a pass that creates thousands of Jobs ends long before the Job watch
 * has delivered them all, and a pass of the same key on that lagging cache
 * plans the missing ones again. Each such create is answered 409
 * AlreadyExists, costs a request and a GET, and was 2,963 of 12,963 POSTs
 * for a JobSet of 10,000 Jobs (issue 22). So a pass records what it wrote
 * (per JobSet key: the Job names created, deleted and suspended or resumed,
 * with the uid of a deleted one, and its own status write), and the next
 * pass of that key first asks
 * whether the cache shows all of it; while it does not, the key is not
 * reconciled (the watch events of those Jobs queue it again).
 *
 * Bounded: a key's expectations are given up `timeout_ns` after its last
 * write (the caller logs once what was still missing and reconciles on the
 * cache as it is: the worst case is the old behaviour, a create answered
 * AlreadyExists); they are dropped when the JobSet is gone or has another
 * uid; and at most `max_names` are held over all keys (a write beyond that
 * is not recorded). Keys never checked again are swept after twice the
 * timeout.
 *
 * The module keeps names, not objects, and never reads a cache itself: the
 * caller's js_expect_seen_fn says whether its cache shows a write. Time is
 * the caller's monotonic clock in ns, so tests drive it.
 *
 * Thread-safe: one mutex; the seen callback runs under it (it must not call
 * back into this module).
 */
#ifndef JS_CTRL_EXPECT_H
#define JS_CTRL_EXPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

/** What the cache must show of a Job this process wrote. */
enum js_expect_want {
	JS_EXPECT_EXISTS,    /* created: a Job of that name is cached */
	JS_EXPECT_GONE,      /* deleted: absent, marked for deletion, or another uid */
	JS_EXPECT_SUSPENDED, /* spec.suspend patched true: shown so, or gone */
	JS_EXPECT_RESUMED,   /* spec.suspend patched false: shown so, or gone */
	JS_EXPECT_STATUS,    /* the JobSet's own status write: its cache at the
				write's resourceVersion or later, or the JobSet gone
				(`name` is the JobSet's) */
	JS_EXPECT__COUNT
};

/** Defaults of struct js_expect_opts. */
#define JS_EXPECT_TIMEOUT_NS (60ull * 1000000000ull)
#define JS_EXPECT_MAX_NAMES ((size_t)1000000)

struct js_expect_opts {
	uint64_t timeout_ns; /* a key's expectations are given up this long after its last write; 0 = 60 s */
	size_t max_names;    /* names held over all keys; 0 = 1,000,000 (about 100 MB at most) */
};

/** One write of one Job (or of the JobSet's status). Strings are copied by
 * js_expect_add. */
struct js_expect_write {
	enum js_expect_want want;
	const char *name; /* the Job's name */
	const char *uid;  /* the incarnation written (a delete's precondition), or NULL */
	const char *rv;   /* the resourceVersion the write's answer carried, or NULL: a
			     watch past it has delivered the write (or what came after) */
};

/** True when the caller's cache shows write `w`. */
typedef bool js_expect_seen_fn(void *user, const struct js_expect_write *w);

struct js_expect;

/** A new, empty set of expectations; `opts` may be NULL (defaults). Caller
 * frees with js_expect_free. Aborts on OOM (js_xmalloc). */
struct js_expect *js_expect_new(const struct js_expect_opts *opts);

/** Free. NULL is a no-op. */
void js_expect_free(struct js_expect *e);

/**
 * Record that JobSet `key` ("namespace/name", incarnation `owner_uid`) made
 * the `n` writes `w`, at `now_ns`; the key's deadline moves to
 * now + timeout. Expectations the key held for another owner uid are
 * dropped first. n == 0 is a no-op.
 * Returns 0, or JS_ETOOLARGE when the `max_names` bound would be passed
 * (then none of them is recorded).
 */
JS_WARN_UNUSED int js_expect_add(struct js_expect *e, const char *key, const char *owner_uid,
				 const struct js_expect_write *w, size_t n, uint64_t now_ns);

/** What js_expect_check found. */
struct js_expect_result {
	size_t pending;  /* writes the cache does not show yet; 0: reconcile */
	uint64_t left_ns; /* when pending: time until they are given up */
	/* When the deadline passed with writes still missing (the key's
	 * expectations are then dropped and pending is 0): one line saying
	 * what was waited for and how long. Caller frees; else NULL. */
	char *expired;
};

/**
 * Ask whether the cache shows what JobSet `key` (incarnation `owner_uid`)
 * wrote: `seen` is asked for each write in the order they were recorded,
 * up to the first it does not show (so a check costs what the cache caught
 * up on, plus one); writes shown are forgotten. Expectations of another
 * owner uid are dropped. Fills *res (zeroed first) and returns res->pending.
 */
size_t js_expect_check(struct js_expect *e, const char *key, const char *owner_uid, js_expect_seen_fn *seen,
		       void *user, uint64_t now_ns, struct js_expect_result *res);

/** Drop the expectations of `key` (its JobSet is gone). */
void js_expect_forget(struct js_expect *e, const char *key);

/** Names held over all keys (for tests and the memory bound). */
size_t js_expect_names(struct js_expect *e);

/** The name of `want` for log lines: "create", "delete", "suspend",
 * "resume", "status write". */
const char *js_expect_want_name(enum js_expect_want want);

#endif
