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
#include "base/buf.h"
#include "base/json.h"
#include "ctrl/ctrl_int.h"
#include "ctrl/owner.h"

#define QUEUE_NAME "jobset"
#define CONTROLLER_NAME "jobset"

/* ---- metrics (docs/controller.md lists them) ---- */

static const double reconcile_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
static const double queue_buckets[] = {1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1000};

static const struct js_metrics_family families[JS__M__COUNT] = {
	[JS__M_FAILED] = {"jobset_failed_total", "Number of failed JobSets", JS_METRICS_COUNTER,
			  {"jobset_name", "namespace"}, NULL, 0},
	[JS__M_COMPLETED] = {"jobset_completed_total", "Number of completed JobSets", JS_METRICS_COUNTER,
			     {"jobset_name", "namespace"}, NULL, 0},
	[JS__M_RESTARTS] = {"jobset_restarts_total", "JobSet restarts (status.restarts increments) written",
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
};

uint64_t js__ctrl_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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

/* ---- event handlers: map to keys, never more (STYLE §3.18) ---- */

static void enqueue(struct js_controller *c, const char *key)
{
	if (!key)
		return;
	pthread_mutex_lock(&c->mu);
	if (!json_object_get(c->enqueued, key))
		json_object_set_new(c->enqueued, key, json_integer((json_int_t)js__ctrl_now_ns()));
	pthread_mutex_unlock(&c->mu);
	const char *v[] = {QUEUE_NAME};
	(void)js_metrics_add(c->metrics, JS__M_QUEUE_ADDS, v, 1);
	js_workqueue_add(c->q, key);
}

static void enqueue_self(struct js_controller *c, const json_t *obj)
{
	char *key = js_owner_object_key(obj);
	enqueue(c, key);
	free(key);
}

static void enqueue_owner(struct js_controller *c, const json_t *obj)
{
	char *key = js_owner_jobset_key(obj);
	enqueue(c, key);
	free(key);
}

static void js_add(void *user, const json_t *obj)
{
	enqueue_self(user, obj);
}

static void js_update(void *user, const json_t *old_obj, const json_t *obj)
{
	(void)old_obj;
	enqueue_self(user, obj);
}

static void js_delete(void *user, const json_t *obj, bool unknown)
{
	(void)unknown;
	enqueue_self(user, obj);
}

static void child_add(void *user, const json_t *obj)
{
	enqueue_owner(user, obj);
}

static void child_update(void *user, const json_t *old_obj, const json_t *obj)
{
	/* An owner reference can change (orphaning, adoption by hand): tell
	 * both JobSets. The queue folds the duplicate when they are equal. */
	enqueue_owner(user, old_obj);
	enqueue_owner(user, obj);
}

static void child_delete(void *user, const json_t *obj, bool unknown)
{
	(void)unknown;
	enqueue_owner(user, obj);
}

static void index_owner(const json_t *obj, js_informer_emit_fn *emit, void *ctx)
{
	const char *uid = js_owner_jobset_uid(obj);
	if (uid)
		emit(ctx, uid);
}

/* ---- workers ---- */

static double since_s(uint64_t t0)
{
	return (double)(js__ctrl_now_ns() - t0) / 1e9;
}

static void note_dequeued(struct js_controller *c, const char *key)
{
	pthread_mutex_lock(&c->mu);
	json_t *t = json_object_get(c->enqueued, key);
	uint64_t t0 = t ? (uint64_t)json_integer_value(t) : 0;
	if (t)
		json_object_del(c->enqueued, key);
	pthread_mutex_unlock(&c->mu);
	if (t0) {
		const char *v[] = {QUEUE_NAME};
		(void)js_metrics_observe(c->metrics, JS__M_QUEUE_LATENCY, v, since_s(t0));
	}
}

static void process(struct js_controller *c, const char *key)
{
	uint64_t t0 = js__ctrl_now_ns();
	struct js__sync_result res = {0};
	js__sync_key(c, key, &res);
	const char *ctl[] = {CONTROLLER_NAME};
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
		js__ctrl_logf(c, res.conflict ? JS_CONTROLLER_LOG_DEBUG : JS_CONTROLLER_LOG_INFO,
			      "jobset '%s': retry in %.3f s", key, (double)d / 1e9);
	} else {
		js_workqueue_forget(c->q, key);
		if (res.has_requeue_after) {
			result = "requeue_after";
			int64_t s = res.requeue_after < 0 ? 0 : res.requeue_after;
			js_workqueue_add_after(c->q, key, (uint64_t)s * 1000000000u);
		} else {
			result = "success";
		}
	}
	const char *rv[] = {CONTROLLER_NAME, result};
	(void)js_metrics_add(c->metrics, JS__M_RECONCILE_TOTAL, rv, 1);
}

static bool caches_synced(struct js_controller *c)
{
	return js_informer_has_synced(c->jobsets) && js_informer_has_synced(c->jobs) &&
	       js_informer_has_synced(c->services);
}

static void *worker(void *arg)
{
	struct js_controller *c = arg;
	/* Never act on a partial view: a missing Job would be created twice. */
	while (!atomic_load(&c->stopping) && !caches_synced(c)) {
		if (js_informer_wait_synced(c->jobsets, 200) == 0 && js_informer_wait_synced(c->jobs, 200) == 0)
			(void)!js_informer_wait_synced(c->services, 200);
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
			process(c, key);
			pthread_mutex_lock(&c->mu);
			c->busy--;
			pthread_mutex_unlock(&c->mu);
		}
		js_workqueue_done(c->q, key);
		free(key);
	}
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
	pthread_mutex_unlock(&c->mu);
	js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "starting %d workers", c->n_threads);
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
	/* Lost the lease: stop acting at once; main exits (as upstream). */
	js__ctrl_logf(c, JS_CONTROLLER_LOG_ERROR, "leader election lost");
	atomic_store(&c->lost, true);
	atomic_store(&c->stopping, true);
	js_workqueue_shutdown(c->q);
}

static void on_new_leader(void *user, const char *identity)
{
	struct js_controller *c = user;
	js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "leader is now '%s'", identity ? identity : "");
}

/* ---- lifecycle ---- */

static int make_informer(struct js_controller *c, const struct js_resource *res, const char *selector,
			 const struct js_informer_handlers *h, struct js_informer **ret)
{
	struct js_informer_opts io = {.res = res, .label_selector = selector, .handlers = *h};
	io.handlers.user = c;
	return js_informer_new(c->client, &io, ret);
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
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->enqueued = json_object();

	int r = js_metrics_new(families, JS__M__COUNT, &c->metrics);
	if (r == 0) {
		struct js_workqueue_opts qo = {0};
		r = js_workqueue_new(&qo, &c->q);
	}
	struct js_informer_handlers jsh = {.on_add = js_add, .on_update = js_update, .on_delete = js_delete};
	struct js_informer_handlers ch = {.on_add = child_add, .on_update = child_update, .on_delete = child_delete};
	if (r == 0)
		r = make_informer(c, &js_client_res_jobsets, NULL, &jsh, &c->jobsets);
	if (r == 0)
		r = make_informer(c, &js_client_res_jobs, JS_LABEL_JOBSET_NAME, &ch, &c->jobs);
	if (r == 0)
		r = js_informer_add_index(c->jobs, JS__CTRL_INDEX_OWNER, index_owner);
	if (r == 0)
		r = make_informer(c, &js_client_res_services, JS_LABEL_JOBSET_NAME, &ch, &c->services);
	if (r == 0) {
		struct js_recorder_opts ro = {.controller = "jobset", .instance = c->identity};
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
			.user = c,
		};
		r = js_leader_new(c->client, &lo, &c->le);
	}
	if (r < 0) {
		js_controller_free(c);
		return r;
	}
	*ret = c;
	return 0;
}

int js_controller_start(struct js_controller *c)
{
	if (atomic_exchange(&c->started, true))
		return -EBUSY;
	int r = js_informer_start(c->jobsets);
	if (r == 0)
		r = js_informer_start(c->jobs);
	if (r == 0)
		r = js_informer_start(c->services);
	if (r < 0)
		return r;
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

int js_controller_stop(struct js_controller *c, int timeout_ms)
{
	if (atomic_exchange(&c->stopped, true))
		return 0;
	atomic_store(&c->stopping, true);
	js_workqueue_shutdown(c->q);
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	int r = 0;
	pthread_mutex_lock(&c->mu);
	while (c->alive > 0 && r == 0) {
		if (pthread_cond_timedwait(&c->cond, &c->mu, &dl) == ETIMEDOUT)
			r = -ETIMEDOUT;
	}
	int n = c->n_threads;
	pthread_mutex_unlock(&c->mu);
	for (int i = 0; i < n; i++) {
		if (r == 0)
			pthread_join(c->threads[i], NULL);
		else
			pthread_detach(c->threads[i]);
	}
	/* Only now that no worker acts may a successor take over. */
	if (c->le)
		js_leader_stop(c->le);
	return r;
}

struct js_controller *js_controller_free(struct js_controller *c)
{
	if (!c)
		return NULL;
	if (atomic_load(&c->started))
		(void)js_controller_stop(c, 30000);
	c->le = js_leader_free(c->le);
	c->jobsets = js_informer_free(c->jobsets);
	c->jobs = js_informer_free(c->jobs);
	c->services = js_informer_free(c->services);
	c->rec = js_recorder_free(c->rec);
	c->q = js_workqueue_free(c->q);
	c->metrics = js_metrics_free(c->metrics);
	json_decref(c->enqueued);
	free(c->threads);
	free(c->lease_namespace);
	free(c->lease_name);
	free(c->identity);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->mu);
	free(c);
	return NULL;
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
}
