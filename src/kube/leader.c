/*
 * leader.c - Lease-based leader election (leader.h).
 */
#include "kube/leader.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/time.h"
#include "kube/kube_int.h"

struct js_leader {
	struct js_client *c;
	struct js_leader_opts o;
	char *ns, *name, *id;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	bool started, stop, leading, ended;
	bool joined;          /* the thread has been joined (stopped) */
	atomic_bool cancel;   /* ends a request in flight when stopping */
	/* last observed record and when we saw it change (our clock) */
	char *obs_holder, *obs_renew;
	uint64_t obs_ns;
	char *last_leader;
	char *last_error;     /* last message given to on_error, NULL after a success */
	uint64_t last_error_ns;
};

int js_leader_new(struct js_client *c, const struct js_leader_opts *opts, struct js_leader **ret)
{
	if (!opts->namespace || !opts->name || !opts->identity || !*opts->identity)
		return JS_EINVALID;
	struct js_leader *le = js_xcalloc(1, sizeof *le);
	le->c = c;
	le->o = *opts;
	if (!le->o.lease_duration_ms)
		le->o.lease_duration_ms = 15000;
	if (!le->o.renew_deadline_ms)
		le->o.renew_deadline_ms = 10000;
	if (!le->o.retry_period_ms)
		le->o.retry_period_ms = 2000;
	if (le->o.lease_duration_ms <= le->o.renew_deadline_ms ||
	    (double)le->o.renew_deadline_ms <= 1.2 * le->o.retry_period_ms || le->o.retry_period_ms <= 0) {
		free(le);
		return JS_EINVALID;
	}
	le->ns = js_xstrdup(opts->namespace);
	le->name = js_xstrdup(opts->name);
	le->id = js_xstrdup(opts->identity);
	pthread_mutex_init(&le->lock, NULL);
	js_clock_cond_init(&le->cond);
	atomic_init(&le->cancel, false);
	*ret = le;
	return 0;
}

static bool wait_ms(struct js_leader *le, int ms)
{
	struct timespec ts = js_clock_deadline_ts(ms);
	pthread_mutex_lock(&le->lock);
	while (!le->stop)
		if (pthread_cond_timedwait(&le->cond, &le->lock, &ts) == ETIMEDOUT)
			break;
	bool s = le->stop;
	pthread_mutex_unlock(&le->lock);
	return s;
}

static json_t *lease_spec(const char *holder, int duration_s, const char *acquire, const char *renew,
			  json_int_t transitions)
{
	return json_pack("{s:s,s:i,s:s,s:s,s:I}", "holderIdentity", holder, "leaseDurationSeconds", duration_s,
			 "acquireTime", acquire, "renewTime", renew, "leaseTransitions", transitions);
}

static void note_leader(struct js_leader *le, const char *holder)
{
	if (!holder || !*holder)
		return;
	if (le->last_leader && strcmp(le->last_leader, holder) == 0)
		return;
	free(le->last_leader);
	le->last_leader = js_xstrdup(holder);
	if (le->o.on_new_leader)
		le->o.on_new_leader(le->o.user, holder);
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* How often an unchanged failure is reported again (opts.on_error). */
#define ERROR_REPEAT_NS (30ull * 1000000000u)

/* A request of `what` on the Lease failed with `r`/`err`: tell on_error
 * when the failure is new, or unchanged for ERROR_REPEAT_NS. */
static void note_error(struct js_leader *le, const char *what, int r, const struct js_apierr *err)
{
	if (!le->o.on_error)
		return;
	pthread_mutex_lock(&le->lock);
	bool stopping = le->stop;
	pthread_mutex_unlock(&le->lock);
	if (stopping)
		return;
	char msg[512];
	snprintf(msg, sizeof msg, "%s lease %s/%s: %s", what, le->ns, le->name,
		 err && err->message ? err->message : js_apierr_strerror(r));
	uint64_t now = js_clock_now_ns();
	if (str_eq(msg, le->last_error) && now - le->last_error_ns < ERROR_REPEAT_NS)
		return;
	free(le->last_error);
	le->last_error = js_xstrdup(msg);
	le->last_error_ns = now;
	le->o.on_error(le->o.user, msg);
}

static void note_ok(struct js_leader *le)
{
	free(le->last_error);
	le->last_error = NULL;
}

/** This replica's write of the Lease (create or update) was accepted: it
 * holds it, renewed at `now` (RFC 3339 micro time). */
static void observed_self(struct js_leader *le, const char *now)
{
	free(le->obs_holder);
	le->obs_holder = js_xstrdup(le->id);
	free(le->obs_renew);
	le->obs_renew = js_xstrdup(now);
	le->obs_ns = js_clock_now_ns();
	note_leader(le, le->id);
}

/* One attempt. Returns true when we hold the lease afterwards. */
static bool try_acquire_or_renew(struct js_leader *le)
{
	char now[48];
	js__kutil_microtime(js__kutil_wall_ns(), now);
	int dur_s = (le->o.lease_duration_ms + 999) / 1000;
	json_t *lease = NULL;
	struct js_apierr err = {0};
	int r = js_client_get(le->c, &js_client_res_leases, le->ns, le->name, NULL, &lease, &err);
	if (r == JS_ENOTFOUND) {
		json_t *obj = json_pack("{s:s,s:s,s:{s:s,s:s},s:o}", "apiVersion", "coordination.k8s.io/v1", "kind",
					"Lease", "metadata", "name", le->name, "namespace", le->ns, "spec",
					lease_spec(le->id, dur_s, now, now, 0));
		js_apierr_done(&err);
		r = js_client_create(le->c, &js_client_res_leases, le->ns, obj, NULL, NULL, &err);
		json_decref(obj);
		if (r == 0) {
			observed_self(le, now);
			note_ok(le);
		} else {
			note_error(le, "create", r, &err);
		}
		js_apierr_done(&err);
		return r == 0;
	}
	if (r < 0) {
		note_error(le, "get", r, &err);
		js_apierr_done(&err);
		return false;
	}
	json_t *spec = json_object_get(lease, "spec");
	const char *holder = js_json_str(spec, "holderIdentity");
	const char *renew = js_json_str(spec, "renewTime");
	json_t *tr = json_object_get(spec, "leaseTransitions");
	json_int_t transitions = json_is_integer(tr) ? json_integer_value(tr) : 0;
	json_t *ld = json_object_get(spec, "leaseDurationSeconds");
	/* Another holder's Lease says how long it lasts, in any int64 someone
	 * wrote there: saturated, and negative is already over (as client-go
	 * adds it to the observed time). */
	uint64_t their_ns = json_is_integer(ld) ? js_sat_scale_u64(json_integer_value(ld), 1000000000u)
						: js_sat_scale_u64(le->o.lease_duration_ms, 1000000u);
	uint64_t t = js_clock_now_ns();
	if (!str_eq(holder, le->obs_holder) || !str_eq(renew, le->obs_renew)) {
		free(le->obs_holder);
		le->obs_holder = holder ? js_xstrdup(holder) : NULL;
		free(le->obs_renew);
		le->obs_renew = renew ? js_xstrdup(renew) : NULL;
		le->obs_ns = t;
	}
	note_leader(le, holder);
	bool mine = holder && strcmp(holder, le->id) == 0;
	if (holder && *holder && !mine && js_sat_add_u64(le->obs_ns, their_ns) > t) {
		json_decref(lease);
		note_ok(le);
		return false; /* held by someone else and not expired */
	}
	const char *acquire = js_json_str(spec, "acquireTime");
	json_t *nspec = lease_spec(le->id, dur_s, mine && acquire ? acquire : now, now,
				   mine ? transitions : transitions + 1);
	json_object_set_new(lease, "spec", nspec);
	json_object_del(json_object_get(lease, "metadata"), "managedFields");
	r = js_client_update(le->c, &js_client_res_leases, le->ns, lease, NULL, NULL, &err);
	json_decref(lease);
	if (r == 0) {
		observed_self(le, now);
		note_ok(le);
	} else {
		note_error(le, "update", r, &err);
	}
	js_apierr_done(&err);
	return r == 0;
}

static void release(struct js_leader *le)
{
	json_t *lease = NULL;
	if (js_client_get(le->c, &js_client_res_leases, le->ns, le->name, NULL, &lease, NULL) < 0)
		return;
	json_t *spec = json_object_get(lease, "spec");
	const char *holder = js_json_str(spec, "holderIdentity");
	if (holder && strcmp(holder, le->id) == 0) {
		char now[48];
		js__kutil_microtime(js__kutil_wall_ns(), now);
		json_object_set_new(spec, "holderIdentity", json_string(""));
		json_object_set_new(spec, "leaseDurationSeconds", json_integer(1));
		json_object_set_new(spec, "renewTime", json_string(now));
		json_object_set_new(spec, "acquireTime", json_string(now));
		if (js_client_update(le->c, &js_client_res_leases, le->ns, lease, NULL, NULL, NULL) < 0) {
			/* Nothing more to do: the lease expires by itself. */
		}
	}
	json_decref(lease);
}

static void set_leading(struct js_leader *le, bool v)
{
	pthread_mutex_lock(&le->lock);
	le->leading = v;
	pthread_mutex_unlock(&le->lock);
}

static void *run(void *arg)
{
	struct js_leader *le = arg;
	/* A GET or renew in flight when stop comes is cancelled (stop must not
	 * wait out a slow API server); the release below runs uncancelled. */
	js_client_bind_cancel(le->c, &le->cancel);
	/* Acquire. */
	while (!try_acquire_or_renew(le))
		if (wait_ms(le, le->o.retry_period_ms))
			return NULL;
	set_leading(le, true);
	if (le->o.on_started)
		le->o.on_started(le->o.user);
	/* Renew, as client-go does: every retry period a renewal cycle
	 * starts, which tries every retry period until it succeeds or
	 * `renew_deadline` has passed since it started; a cycle that fails
	 * ends our leadership. Every request of a cycle ends by its deadline
	 * (client-go runs it under a context with that timeout): a request
	 * left hanging - an API server that holds it, a network that drops the
	 * answers - must not keep us leading while a successor takes the
	 * expired lease (issue 13, leader-failover). The last moment we act
	 * is thus a retry period plus the renew deadline after the last
	 * renewal, which lease_duration > renew_deadline + retry_period
	 * keeps before a successor's first (js_leader_new checks the weaker
	 * client-go rule only). */
	uint64_t deadline = 0;
	js_client_bind_deadline(le->c, &deadline);
	bool stopped = false, renewed = true;
	while (renewed) {
		if (wait_ms(le, le->o.retry_period_ms)) {
			stopped = true;
			break;
		}
		deadline = js_clock_after_ns(le->o.renew_deadline_ms);
		for (;;) {
			renewed = try_acquire_or_renew(le);
			if (renewed || js_clock_now_ns() >= deadline)
				break;
			if (wait_ms(le, le->o.retry_period_ms)) {
				stopped = true;
				break;
			}
		}
		if (stopped)
			break;
	}
	js_client_bind_deadline(le->c, NULL);
	set_leading(le, false);
	if (stopped) {
		pthread_mutex_lock(&le->lock);
		atomic_store(&le->cancel, false);
		pthread_mutex_unlock(&le->lock);
	}
	if (stopped && !le->o.no_release)
		release(le);
	if (le->o.on_stopped)
		le->o.on_stopped(le->o.user);
	pthread_mutex_lock(&le->lock);
	le->ended = !stopped;
	pthread_mutex_unlock(&le->lock);
	return NULL;
}

int js_leader_start(struct js_leader *le)
{
	if (le->started)
		return -EBUSY;
	int r = pthread_create(&le->thread, NULL, run, le);
	if (r)
		return -r;
	le->started = true;
	return 0;
}

int js_leader_stop(struct js_leader *le)
{
	if (!le->started || le->joined)
		return 0;
	if (pthread_equal(pthread_self(), le->thread))
		return -EDEADLK;
	/* Both under the lock: the thread resets `cancel` only after it has
	 * seen `stop`, so its release is never cancelled by this. */
	pthread_mutex_lock(&le->lock);
	le->stop = true;
	atomic_store(&le->cancel, true);
	pthread_cond_broadcast(&le->cond);
	pthread_mutex_unlock(&le->lock);
	js_client_wakeup(le->c);
	pthread_join(le->thread, NULL);
	le->joined = true;
	return 0;
}

int js_leader_free(struct js_leader *le)
{
	if (!le)
		return 0;
	if (le->started && !le->joined)
		return -EBUSY;
	pthread_mutex_destroy(&le->lock);
	pthread_cond_destroy(&le->cond);
	free(le->ns);
	free(le->name);
	free(le->id);
	free(le->obs_holder);
	free(le->obs_renew);
	free(le->last_leader);
	free(le->last_error);
	free(le);
	return 0;
}

bool js_leader_is_leader(struct js_leader *le)
{
	pthread_mutex_lock(&le->lock);
	bool v = le->leading;
	pthread_mutex_unlock(&le->lock);
	return v;
}

bool js_leader_ended(struct js_leader *le)
{
	pthread_mutex_lock(&le->lock);
	bool v = le->ended;
	pthread_mutex_unlock(&le->lock);
	return v;
}
