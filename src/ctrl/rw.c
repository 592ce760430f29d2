/*
 * rw.c - read-your-writes (ctrl/sync_int.h): after writing, the worker
 * waits (bounded by --cache-wait) until its own caches show what it wrote,
 * so the next reconcile of the key does not act on a view older than its
 * own last write. The waits give up once the controller's abort flag is
 * set (a stop past its grace period).
 */
#include <string.h>

#include "base/clock.h"
#include "ctrl/sync_int.h"

static int left_ms(uint64_t dl)
{
	uint64_t now = js_clock_now_ns();
	return now >= dl ? 0 : (int)((dl - now) / 1000000u) + 1;
}

static bool rw_shows(const struct js_obsjob *j, enum js__rw_want w)
{
	switch (w) {
	case JS__RW_EXISTS:
		return j != NULL;
	case JS__RW_GONE:
		return !j || j->deleting;
	case JS__RW_SUSPENDED:
	case JS__RW_RESUMED:
		/* Without this a pass soon after would patch the same Jobs
		 * again: a suspend of 1,000 Jobs sent half as often again. */
		return !j || (j->has_suspend && j->suspend) == (w == JS__RW_SUSPENDED);
	}
	return true;
}

void js__rw_wait_jobs(struct js_controller *c, const char *ns, const char *const *names, size_t n,
		      enum js__rw_want want)
{
	if (c->o.cache_wait_ms < 0 || n == 0)
		return;
	uint64_t dl = js_clock_after_ns(c->o.cache_wait_ms);
	size_t done = 0;
	while (done < n && !js__aborted(c)) {
		uint64_t gen = js_informer_generation(c->jobs);
		while (done < n) {
			const struct js_obsjob *j = js_informer_get(c->jobs, ns, names[done]);
			bool ok = rw_shows(j, want);
			js_informer_unref(c->jobs, j);
			if (!ok)
				break;
			done++;
		}
		if (done == n || left_ms(dl) == 0 || js_informer_wait_change(c->jobs, gen, left_ms(dl)) < 0)
			break;
	}
}

void js__rw_wait_jobset_rv(struct js_controller *c, const struct js__observed *o, const char *rv)
{
	if (c->o.cache_wait_ms < 0 || !rv)
		return;
	uint64_t dl = js_clock_after_ns(c->o.cache_wait_ms);
	while (!js__aborted(c)) {
		uint64_t gen = js_informer_generation(c->jobsets);
		char crv[128];
		int r = js_informer_object_rv(c->jobsets, o->ns, o->name, crv, sizeof crv);
		bool ok = r == JS_ENOTFOUND || (r == 0 && strcmp(crv, rv) == 0);
		if (ok || left_ms(dl) == 0 || js_informer_wait_change(c->jobsets, gen, left_ms(dl)) < 0)
			return;
	}
}
