/*
 * phases.c - the controller's restart and phase metrics (issue 16;
 * docs/metrics.md): one accountant (core/phase.h) per JobSet key, fed the
 * JobSet as each successful reconcile leaves it, exported as
 *
 *   jobset_phase_duration_seconds{jobset_name,namespace,phase}  per JobSet,
 *     dropped when the JobSet is deleted
 *   jobset_phase_seconds_total{phase}                             fleet total:
 *     every JobSet's seconds, added as they accrue (so a deleted JobSet's
 *     time stays in it after its per-JobSet series goes)
 *   jobset_goodput_ratio{jobset_name,namespace}                  per JobSet
 *   jobset_time_to_all_ready_seconds{trigger}                    histogram
 *   jobset_restarts_by_reason_total{reason,action}               counter
 *
 * The controller keeps nothing across its own restarts: the accountant of a
 * JobSet starts at the first reconcile that sees it, from what the object
 * says (js_phase_acct_init: the current phase counts from its condition's
 * lastTransitionTime, a wait in progress keeps its start; earlier phases are
 * not attributed). A phase change between two reconciles is seen at the
 * second, so a phase boundary is as late as the reconcile that notices it
 * (one watch round trip: milliseconds to a second on a healthy cluster).
 *
 * Thread-safe: the map has its own mutex, so workers and the /metrics
 * handler never wait on the controller's main lock.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/phase.h"
#include "core/plan.h"
#include "ctrl/ctrl_int.h"
#include "ctrl/owner.h"

/* The phases exported (finished is not: nothing runs then). */
#define EXPORTED_PHASES JS_PHASE_FINISHED

struct entry {
	char *uid;
	struct js_phase_acct acct;
	double exported[JS_PHASE__COUNT]; /* seconds already in the totals */
};

static void free_entry(void *p)
{
	struct entry *e = p;
	if (e)
		free(e->uid);
	free(e);
}

static const struct js_hmap_type entry_type = {.free_value = free_entry};

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void js__phases_new(struct js_controller *c)
{
	pthread_mutex_init(&c->phase_mu, NULL);
	c->phases = js_hmap_new(&entry_type);
}

void js__phases_free(struct js_controller *c)
{
	c->phases = js_hmap_free(c->phases);
	pthread_mutex_destroy(&c->phase_mu);
}

/* Bring the metrics of `key` up to `now`; under phase_mu. */
static void export_entry(struct js_controller *c, const char *key, struct entry *e, int64_t now)
{
	/* Finished before this controller first saw it: nothing was
	 * observed, so no series (zeros would read as a run without goodput). */
	char *ns = NULL, *name = NULL;
	if ((e->acct.phase == JS_PHASE_FINISHED && e->acct.first_start_ms < 0) ||
	    js_owner_split_key(key, &ns, &name) < 0)
		return;
	struct js_phase_summary s;
	js_phase_acct_summary(&e->acct, now, &s);
	for (int p = 0; p < EXPORTED_PHASES; p++) {
		const char *v[] = {name, ns, js_phase_name(p)};
		(void)js_metrics_set(c->metrics, JS__M_PHASE_DURATION, v, s.seconds[p]);
		if (s.seconds[p] > e->exported[p]) {
			const char *t[] = {js_phase_name(p)};
			(void)js_metrics_add(c->metrics, JS__M_PHASE_TOTAL, t, s.seconds[p] - e->exported[p]);
			e->exported[p] = s.seconds[p];
		}
	}
	const char *g[] = {name, ns};
	if (e->acct.first_start_ms >= 0)
		(void)js_metrics_set(c->metrics, JS__M_GOODPUT, g, s.goodput);
	free(ns);
	free(name);
}

/* Fold the entry of `key` into the totals and drop its series; under
 * phase_mu. */
static void forget_locked(struct js_controller *c, const char *key, int64_t now)
{
	struct entry *e = js_hmap_get(c->phases, key);
	if (!e)
		return;
	export_entry(c, key, e, now);
	char *ns = NULL, *name = NULL;
	if (js_owner_split_key(key, &ns, &name) == 0) {
		const char *v[] = {name, ns, NULL};
		(void)js_metrics_remove(c->metrics, JS__M_PHASE_DURATION, v);
		(void)js_metrics_remove(c->metrics, JS__M_GOODPUT, v);
	}
	free(ns);
	free(name);
	js_hmap_del(c->phases, key, NULL);
}

void js__phases_observe(struct js_controller *c, const char *key, const struct js_jobset *js,
			const struct js_plan *plan)
{
	for (size_t i = 0; plan && i < plan->n_restarts; i++) {
		const char *v[] = {plan->restarts[i].reason, plan->restarts[i].action};
		(void)js_metrics_add(c->metrics, JS__M_RESTARTS_BY_REASON, v, 1);
	}
	int64_t now = wall_ms();
	struct js_phase_obs obs;
	js_phase_observe(js, &obs);
	const char *uid = js->meta.uid ? js->meta.uid : "";
	pthread_mutex_lock(&c->phase_mu);
	struct entry *e = js_hmap_get(c->phases, key);
	if (e && strcmp(e->uid, uid) != 0) {
		/* Deleted and created again between two looks. */
		forget_locked(c, key, now);
		e = NULL;
	}
	if (!e) {
		e = js_xcalloc(1, sizeof(*e));
		e->uid = js_xstrdup(uid);
		js_phase_acct_init(&e->acct, &obs, now);
		(void)js_hmap_put(c->phases, key, e, NULL);
	} else {
		struct js_phase_ready r;
		if (js_phase_acct_step(&e->acct, obs.phase, now, &r)) {
			const char *v[] = {js_phase_trigger_name(r.trigger)};
			(void)js_metrics_observe(c->metrics, JS__M_TIME_TO_READY, v, r.seconds);
		}
	}
	export_entry(c, key, e, now);
	pthread_mutex_unlock(&c->phase_mu);
}

void js__phases_forget(struct js_controller *c, const char *key)
{
	pthread_mutex_lock(&c->phase_mu);
	forget_locked(c, key, wall_ms());
	pthread_mutex_unlock(&c->phase_mu);
}

void js__phases_refresh(struct js_controller *c)
{
	/* The keys first, then which are no longer cached, without phase_mu:
	 * the informer may call js__phases_forget while it holds its store's
	 * lock (a relist), so the cache is never asked under phase_mu. */
	pthread_mutex_lock(&c->phase_mu);
	size_t n = js_hmap_len(c->phases), k = 0;
	char **keys = js_xcalloc(n + 1, sizeof(*keys));
	struct js_hmap_iter it = {0};
	const char *key;
	while (k < n && js_hmap_next(c->phases, &it, &key, NULL))
		keys[k++] = js_xstrdup(key);
	pthread_mutex_unlock(&c->phase_mu);
	bool *gone = js_xcalloc(k + 1, sizeof(*gone));
	for (size_t i = 0; i < k; i++) {
		char *ns = NULL, *name = NULL;
		/* A key no longer cached went while a reconcile was adding it
		 * back (the delete handler ran first). */
		gone[i] = js_owner_split_key(keys[i], &ns, &name) < 0 ||
			  (c->jobsets && !js_informer_has(c->jobsets, ns, name));
		free(ns);
		free(name);
	}
	int64_t now = wall_ms();
	pthread_mutex_lock(&c->phase_mu);
	for (size_t i = 0; i < k; i++) {
		struct entry *e = js_hmap_get(c->phases, keys[i]);
		if (gone[i])
			forget_locked(c, keys[i], now);
		else if (e)
			export_entry(c, keys[i], e, now);
		free(keys[i]);
	}
	pthread_mutex_unlock(&c->phase_mu);
	free(keys);
	free(gone);
}
