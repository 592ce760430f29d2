/*
 * rw.c - read-your-writes (ctrl/sync_int.h): a pass never acts on caches
 * older than what an earlier pass of its key wrote.
 *
 * No worker waits for a watch. A pass notes what it wrote (Jobs created,
 * deleted, suspended or resumed, the JobSet's status), and at its end that
 * becomes its key's expectations (ctrl/expect.h, client-go's
 * ControllerExpectations). The next pass of the key first asks whether the
 * caches show all of it; while they do not, the pass does nothing and the
 * key is looked at again (the watch events of the writes queue it sooner).
 * Until issue 22 the worker itself waited up to 3 s at the end of a pass:
 * a JobSet of 10,000 Jobs outran that (the next pass on a lagging cache
 * created 2,963 Jobs again, each answered AlreadyExists), and a Job the
 * cache could never show held a worker 3 s on every pass of its key.
 *
 * Bounded: a key's expectations are given up JS_EXPECT_TIMEOUT_NS after
 * its last write, logged once with what was still missing; a write is
 * shown when the cache holds its result, or when the watch has passed the
 * resourceVersion its answer carried (a Job created and deleted again
 * before the check, which the cache never shows, is not waited for).
 * resourceVersions are compared as numbers (etcd revisions); one that is
 * not a number is never taken as passed, and only presence counts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "ctrl/sync_int.h"

void js__rw_note(struct js__body *b, enum js_expect_want want, const char *name, const char *uid, const char *rv)
{
	if (b->n_wrote < b->cap_wrote)
		b->wrote[b->n_wrote++] = (struct js_expect_write){want, name, uid, rv};
}

void js__rw_expect(struct js__body *b, const char *key)
{
	struct js_controller *c = b->c;
	if (c->o.cache_wait_ms < 0 || b->n_wrote == 0)
		return;
	int r = js_expect_add(c->expect, key, b->o->rec->uid, b->wrote, b->n_wrote, js_clock_now_ns());
	if (r < 0)
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO,
			      "jobset '%s': %zu writes not remembered (more than %zu held for all JobSets): "
			      "its next pass may act on a cache that does not show them yet",
			      key, b->n_wrote, (size_t)JS_EXPECT_MAX_NAMES);
}

/* A resourceVersion as a number; false when it is not one. */
static bool rv_number(const char *rv, unsigned long long *ret)
{
	if (!rv || *rv < '0' || *rv > '9')
		return false;
	char *end;
	errno = 0;
	*ret = strtoull(rv, &end, 10);
	return errno == 0 && *end == '\0';
}

/* True when resourceVersion `have` is `want` or later. */
static bool rv_reached(const char *have, const char *want)
{
	unsigned long long h, w;
	if (!have || !want)
		return false;
	if (strcmp(have, want) == 0)
		return true;
	return rv_number(have, &h) && rv_number(want, &w) && h >= w;
}

struct seen_ctx {
	struct js_controller *c;
	const char *ns, *name; /* the JobSet */
	char jobs_rv[64];      /* where the Job watch is; "" until asked */
};

/* js_expect_seen_fn: do the caches show write `w`? */
static bool seen(void *user, const struct js_expect_write *w)
{
	struct seen_ctx *s = user;
	struct js_controller *c = s->c;
	if (w->want == JS_EXPECT_STATUS) {
		char rv[128];
		int r = js_informer_object_rv(c->jobsets, s->ns, s->name, rv, sizeof rv);
		return r == JS_ENOTFOUND || (r == 0 && rv_reached(rv, w->rv));
	}
	if (w->rv) {
		if (!s->jobs_rv[0])
			js_informer_resource_version(c->jobs, s->jobs_rv, sizeof s->jobs_rv);
		/* The informer moves its resourceVersion only after it has
		 * stored the event and run its handlers (kube/informer.c). */
		if (rv_reached(s->jobs_rv, w->rv))
			return true;
	}
	const struct js_obsjob *j = js_informer_get(c->jobs, s->ns, w->name);
	bool ok = true;
	switch (w->want) {
	case JS_EXPECT_EXISTS:
		ok = j != NULL;
		break;
	case JS_EXPECT_GONE:
		ok = !j || j->deleting || (w->uid && j->uid && strcmp(j->uid, w->uid) != 0);
		break;
	case JS_EXPECT_SUSPENDED:
	case JS_EXPECT_RESUMED:
		/* Without this a pass soon after would patch the same Jobs
		 * again: a suspend of 1,000 Jobs sent half as often again. */
		ok = !j || (j->has_suspend && j->suspend) == (w->want == JS_EXPECT_SUSPENDED);
		break;
	case JS_EXPECT_STATUS:
	case JS_EXPECT__COUNT:
		break;
	}
	js_informer_unref(c->jobs, j);
	return ok;
}

bool js__rw_pending(struct js_controller *c, const char *key, const struct js__observed *o,
		    struct js__sync_result *res)
{
	if (!o) {
		js_expect_forget(c->expect, key);
		return false;
	}
	struct seen_ctx s = {.c = c, .ns = o->ns, .name = o->name};
	struct js_expect_result er;
	size_t n = js_expect_check(c->expect, key, o->rec->uid, seen, &s, js_clock_now_ns(), &er);
	if (er.expired) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s': %s", key, er.expired);
		free(er.expired);
	}
	if (n == 0)
		return false;
	js__ctrl_logf(c, JS_CONTROLLER_LOG_DEBUG, "jobset '%s': the caches do not show %zu of its writes yet, waiting",
		      key, n);
	res->has_requeue_after = true;
	res->requeue_after = 1;
	return true;
}
