/*
 * exec.c - this runtime as a body of the one executor (core/exec.h): one
 * pass of the core over the Jobs as recorded (each decoded once per change
 * of its Job), and its plan applied - Jobs created, deleted and patched in
 * memory (this runtime is its own API server), the headless Service as
 * hosts entries, claims as directories - then the plan's JobSet, with its
 * new status, stored. Guards against a plan repeated with nothing changing.
 */
#include "local/local_int.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/render.h"
#include "base/arena.h"
#include "base/buf.h"
#include "base/hmap.h"
#include "base/json.h"
#include "base/parse.h"
#include "base/time.h"
#include "core/exec.h"
#include "core/job.h"
#include "core/reconcile.h"
#include "local/gpu.h"
#include "local/hosts.h"

/* Retry delay after a reconcile error (the controller backs off 5 ms to
 * 1000 s; locally a steady second is enough and keeps the log readable). */
#define LOCAL_RETRY_MS 1000

static int local_create_jobs(void *self, const struct js_action *acts, size_t n, const struct js_exec_run *run)
{
	struct js_local *l = self;
	int first = 0;
	for (size_t i = 0; i < n; i++) {
		const char *name = acts[i].name;
		if (js__job_find(l, name)) {
			js__report_event(l, "Warning", "JobCreationFailed", "jobset", js_jobset_name(l->js),
			      "job \"%s\" creation failed with error: jobs.batch \"%s\" already exists", name, name);
			first = first ? first : JS_EEXISTS;
			continue;
		}
		json_t *obj = js_exec_render(run, i);
		if (!obj)
			return JS_EINVALID;
		json_t *meta = js_json_path_make(obj, "metadata");
		char *uid = js__local_new_uid(l);
		char ts[21];
		js__local_wall_stamp(ts);
		json_object_set_new(meta, "uid", json_string(uid));
		json_object_set_new(meta, "creationTimestamp", json_string(ts));
		free(uid);
		json_object_set_new(obj, "status", json_object());
		l->jobs = js_xrealloc(l->jobs, (l->n_jobs + 1) * sizeof(*l->jobs));
		l->jobs[l->n_jobs++] = (struct ljob){.obj = obj, .name = js_xstrdup(name), .wake_ms = -1};
		l->dirty = true;
		js__report_event(l, "Normal", "Created", "job", name, "%s", "");
	}
	return first;
}

static int local_delete_jobs(void *self, const struct js_action *acts, size_t n)
{
	struct js_local *l = self;
	for (size_t i = 0; i < n; i++) {
		struct ljob *j = js__job_find(l, acts[i].name);
		if (j)
			js__job_delete(l, j, l->turn_ms);
	}
	l->dirty = true;
	return 0;
}

static int local_patch_job(void *self, const struct js_action *a)
{
	struct js_local *l = self;
	struct ljob *j = js__job_find(l, a->name);
	if (!j)
		return JS_ENOTFOUND;
	/* Spec and status alike: this runtime is its own API server. */
	js_json_merge_patch(j->obj, a->object);
	js__job_stale(j);
	l->dirty = true;
	return 0;
}

static int local_apply_other(void *self, const struct js_action *a)
{
	struct js_local *l = self;
	if (a->kind == JS_ACTION_CREATE_SERVICE) {
		/* Degraded: no pod has a file of its own; they look themselves
		 * up in this one ($JOBSET_HOSTS_FILE), so it keeps bare names. */
		int r = js_hosts_write_service(l->hosts_path, l->js, js_net_ipam(l->net), l->host.mode == JS_SANDBOX_NONE);
		if (r < 0) {
			js__report_event(l, "Warning", "HeadlessServiceCreationFailed", "jobset", js_jobset_name(l->js), "%s: %s",
			      l->hosts_path, js_strerror(r));
			return r;
		}
		l->service_exists = true;
		js__report_event(l, "Normal", "Created", "service", a->name, "hosts entries in %s", l->hosts_path);
	} else if (a->kind == JS_ACTION_CREATE_PVC) {
		/* A claim is a directory of the run. It must be recorded as
		 * existing: the core asks for every claim it does not see, and
		 * an unrecorded one was asked for again on every pass. */
		char *dir = js_buf_format("%s/volumes/%s", l->run_dir, a->name);
		int r = js__local_mkdir_p(dir);
		if (r < 0) {
			js__report_event(l, "Warning", "PVCCreationFailed", "jobset", js_jobset_name(l->js),
			      "persistentvolumeclaim %s: %s: %s", a->name, dir, js_strerror(r));
			free(dir);
			return r;
		}
		l->pvcs = js_xrealloc(l->pvcs, (l->n_pvcs + 1) * sizeof(*l->pvcs));
		l->pvcs[l->n_pvcs++] = js_xstrdup(a->name);
		js__report_event(l, "Normal", "Created", "persistentvolumeclaim", a->name, "directory %s", dir);
		free(dir);
	} else if (a->kind != JS_ACTION_DELETE_JOBSET) {
		return JS_EUNSUPPORTED; /* KEP-969 objects: `jobset run` refuses the gate */
	}
	/* DeleteJobSet (TTL after finished): the run is over anyway. */
	l->dirty = true;
	return 0;
}

/* The status is stored by taking the plan's JobSet once the whole plan was
 * applied (reconcile below); nothing can fail here. */
static int local_write_status(void *self, const struct js_plan *plan)
{
	(void)self;
	(void)plan;
	return 0;
}

/* Events of one plan with the same type and message are one event (the
 * core emits a condition's event and an action's event with one message:
 * "DefaultFailurePolicy" and "RestartJobSetFailurePolicyAction"; upstream
 * does the same), so each is held until the next differs or the plan ends. */
static void flush_jobset_event(struct js_local *l)
{
	if (!l->ev_reasons.len)
		return;
	js__report_event(l, l->ev_type, js_buf_str(&l->ev_reasons), "jobset", js_jobset_name(l->js), "%s", l->ev_message);
	js_buf_clear(&l->ev_reasons);
	free(l->ev_message);
	l->ev_message = NULL;
}

static void local_emit_event(void *self, const struct js_event *e)
{
	struct js_local *l = self;
	if (l->ev_reasons.len && (strcmp(l->ev_type, e->type) != 0 || strcmp(l->ev_message, e->message) != 0))
		flush_jobset_event(l);
	if (!l->ev_reasons.len) {
		l->ev_type = e->type; /* static */
		l->ev_message = js_xstrdup(e->message);
	}
	if (js_buf_printf(&l->ev_reasons, "%s%s", l->ev_reasons.len ? "," : "", e->reason) < 0) {
		/* a reason list past 4 KiB: the rest is dropped */
	}
}

static void local_requeue_after(void *self, int64_t seconds)
{
	struct js_local *l = self;
	/* Any int64 of seconds (activeDeadlineSeconds may be the largest):
	 * saturated, so a far requeue is "never" rather than in the past. */
	l->requeue_ms = js_sat_add(l->turn_ms, js_sat_s_to_ms(seconds < 0 ? 0 : seconds));
}

static const struct js_exec_ops local_ops = {
	.create_jobs = local_create_jobs,
	.delete_jobs = local_delete_jobs,
	.patch_job = local_patch_job,
	.apply_other = local_apply_other,
	.write_status = local_write_status,
	.emit_event = local_emit_event,
	.requeue_after = local_requeue_after,
};

/* The record of Job `j`, decoded from its JSON only when that changed. */
static const struct js_obsjob *record(struct ljob *j)
{
	if (!j->rec)
		j->rec = js_job_from_json(j->obj, NULL);
#ifndef NDEBUG
	/* A record that missed a change of its Job would be a silent wrong
	 * decision; debug builds check every one against a fresh decode. */
	struct js_obsjob *fresh = js_job_from_json(j->obj, NULL);
	assert(js_job_same(j->rec, fresh));
	js_job_unref(fresh);
#endif
	return j->rec;
}

/* Hash of what a plan does: kinds and names of its actions, in order. */
static uint64_t plan_signature(const struct js_plan *plan)
{
	uint64_t h = JS_HASH_FNV_SEED;
	for (size_t i = 0; i < plan->n_actions; i++) {
		const struct js_action *a = &plan->actions[i];
		unsigned char kind = (unsigned char)a->kind;
		h = js_hash_fnv(h, &kind, 1);
		/* With its NUL, so that ("ab","c") and ("a","bc") differ. */
		h = js_hash_fnv(h, a->name ? a->name : "", a->name ? strlen(a->name) + 1 : 1);
	}
	return h;
}

/* The guard against applying the same plan forever (issue 11): a plan
 * whose actions were all carried out is never planned again unless the
 * world changed. Only a bug of this runtime - an action it reports done
 * but does not record, as CreatePVC once was - can repeat one with nothing
 * observed changing in between. A few repeats are tolerated (an action's
 * effect may show one turn late); past that the run ends, said as what it
 * is, instead of spinning. Returns true when the run was ended. */
#define LOCAL_MAX_SAME_PLANS 8
static bool repeated_plan(struct js_local *l, const struct js_plan *plan)
{
	uint64_t sig = plan_signature(plan);
	bool same = plan->n_actions > 0 && sig == l->plan_sig && !l->observed_change;
	l->plan_sig = sig;
	l->observed_change = false;
	l->same_plans = same ? l->same_plans + 1 : 0;
	if (l->same_plans < LOCAL_MAX_SAME_PLANS)
		return false;
	const struct js_action *a = &plan->actions[0];
	js__report_event(l, "Warning", "RuntimeBug", "jobset", js_jobset_name(l->js),
	      "the same %zu action(s) (first: %s %s) were planned %d times in a row with nothing observed changing "
	      "in between; this is a bug of the local runtime, not of the JobSet, so the run stops instead of "
	      "repeating them",
	      plan->n_actions, js_reconcile_action_kind_name(a->kind), a->name, l->same_plans + 1);
	l->stalled = true;
	return true;
}

/* Node quarantine on one machine (docs/node-quarantine.md "Locally"): the
 * nodes are the GPUs. A pod of a Job that is not being deleted, which
 * ended badly (phase Failed, a non-zero exit code, or DisruptionTarget), is
 * one failed pod per device it was given, each "on" the node
 * js_gpu_node_name names: which of its devices failed cannot be told, so
 * all are blamed. Pods without GPUs are on no node. Memory: arena `a`. */
static const struct js_failpod *failed_gpu_pods(struct js_local *l, struct js_arena *a, size_t *ret_n)
{
	size_t n = 0, cap = 0;
	struct js_failpod *out = NULL;
	for (size_t i = 0; l->opts.gates.node_quarantine && l->opts.gpus && i < l->n_jobs; i++) {
		const struct ljob *j = &l->jobs[i];
		int64_t attempt = 0;
		const char *al = j->rec ? j->rec->restart_attempt : NULL;
		if (j->deleting || !al || js_parse_i64_in(al, strlen(al), 0, INT32_MAX, &attempt) < 0)
			continue;
		for (size_t k = 0; k < j->n_pods; k++) {
			struct js_pod *p = j->pods[k];
			const char *devs[JS_GPU_MAX];
			size_t nd = js_gpu_last_held(l->opts.gpus, js_pod_id(p), devs, JS_GPU_MAX);
			size_t nc = js_pod_n_containers(p);
			int32_t *codes = js_arena_calloc(a, 2 * nc + 1, sizeof(*codes));
			size_t ne = 0;
			for (size_t c = 0; c < nc; c++) {
				struct js_pod_ctr_info ci;
				js_pod_ctr_info(p, c, &ci);
				if (ci.has_term && ci.term.exit_code != 0)
					codes[ne++] = ci.term.exit_code;
				if (ci.has_last && ci.last.exit_code != 0)
					codes[ne++] = ci.last.exit_code;
			}
			struct js_pod_info pi;
			js_pod_info(p, &pi);
			/* The condition a stop set (DisruptionTarget, ProgressDeadlineExceeded). */
			const char **cond = js_arena_calloc(a, 1, sizeof(*cond));
			cond[0] = pi.condition_type ? js_arena_strdup(a, pi.condition_type) : NULL;
			bool bad = js_pod_phase(p) == JS_JOBCTL_FAILED || ne > 0 || cond[0];
			for (size_t d = 0; bad && d < nd; d++) {
				struct js_buf node;
				js_buf_init(&node, 0);
				if (js_gpu_node_name(devs[d], &node) < 0)
					js_buf_clear(&node);
				if (n == cap) {
					cap = cap ? 2 * cap : 16;
					struct js_failpod *grown = js_arena_calloc(a, cap, sizeof(*grown));
					if (n)
						memcpy(grown, out, n * sizeof(*out));
					out = grown;
				}
				out[n++] = (struct js_failpod){
					.name = js_arena_strdup(a, js_pod_name(p)),
					.node = js_arena_strdup(a, js_buf_str(&node)),
					.attempt = (int32_t)attempt,
					.exit_codes = codes,
					.n_exit_codes = ne,
					.conditions = cond,
					.n_conditions = cond[0] ? 1 : 0,
					/* The Job's labels are its pods' (one
					 * template): a per-Job restart blames
					 * only its own Job's pods. */
					.rjob_name = j->rec->rjob_name,
					.job_index = j->rec->job_index,
					.job_restart_attempt = j->rec->job_restart_attempt,
				};
				js_buf_done(&node);
			}
		}
	}
	*ret_n = n;
	return out;
}

/* No room left on one machine (core/noroom.c): a pod the quarantine keeps
 * from enough GPUs (jobs.c take_gpus) is what a cluster's scheduler would
 * leave Pending, and it is told to the core in the scheduler's words, the
 * GPUs standing for the nodes. The pod does not exist yet: it is named by
 * its hostname (<job>-<index>). Memory: arena `a`. */
static const struct js_pendpod *waiting_gpu_pods(struct js_local *l, struct js_arena *a, size_t *ret_n)
{
	struct js_pendpod *out = js_arena_calloc(a, l->n_jobs + 1, sizeof(*out));
	size_t n = 0;
	for (size_t i = 0; l->opts.gates.node_quarantine && i < l->n_jobs; i++) {
		const struct ljob *j = &l->jobs[i];
		int64_t attempt = 0;
		const char *al = j->rec ? j->rec->restart_attempt : NULL;
		if (j->deleting || !j->noroom.waits || !al ||
		    js_parse_i64_in(al, strlen(al), 0, INT32_MAX, &attempt) < 0)
			continue;
		size_t out_of = j->noroom.total - j->noroom.usable;
		out[n++] = (struct js_pendpod){
			.name = j->noroom.index >= 0 ? js_arena_printf(a, "%s-%d", j->name, j->noroom.index)
						     : js_arena_strdup(a, j->name),
			.attempt = (int32_t)attempt,
			.reason = "Unschedulable",
			.message = js_arena_printf(a,
						   "0/%zu nodes are available: %zu node(s) didn't match Pod's node "
						   "affinity/selector (jobset run: each GPU is a node; the pod needs "
						   "%lld %s and %zu are not quarantined)",
						   j->noroom.total, out_of, (long long)j->noroom.need, JS_GPU_RESOURCE,
						   j->noroom.usable),
		};
	}
	*ret_n = n;
	return out;
}

/** One pass of the core over what is observed now. Returns what
 * js_reconcile_run returns. */
int js__exec_plan_now(struct js_local *l, struct js_plan **ret_plan, char **ret_err)
{
	const struct js_obsjob **obs = js_xcalloc(l->n_jobs + 1, sizeof(*obs));
	size_t n = 0;
	for (size_t i = 0; i < l->n_jobs; i++) {
		const struct js_obsjob *o = record(&l->jobs[i]);
		if (o)
			obs[n++] = o;
	}
	/* Pods only matter to the in-place restart step (gate InPlaceRestart):
	 * their failure and restart counts, and the attempt their agent wrote
	 * (in_place_agents). */
	size_t n_pods = 0;
	for (size_t i = 0; l->opts.gates.in_place_restart && i < l->n_jobs; i++)
		n_pods += l->jobs[i].deleting ? 0 : l->jobs[i].n_pods;
	struct js_obspod *pods = js_xcalloc(n_pods + 1, sizeof(*pods));
	size_t np = 0;
	for (size_t i = 0; n_pods && i < l->n_jobs; i++) {
		for (size_t k = 0; !l->jobs[i].deleting && k < l->jobs[i].n_pods; k++) {
			struct js_pod *p = l->jobs[i].pods[k];
			const struct js_inplace_agent *ag = js_pod_agent(p);
			pods[np++] = (struct js_obspod){.name = js_pod_name(p),
							.failed = js_pod_phase(p) == JS_JOBCTL_FAILED,
							.max_restart_count = js_pod_max_restarts(p),
							.in_place_attempt = ag && ag->has_attempt ? js_pod_annotation(p, JS_ANN_IN_PLACE_RESTART_ATTEMPT) : NULL};
		}
	}
	struct js_arena *fa = js_arena_new(0);
	size_t n_failed = 0;
	const struct js_failpod *failed = failed_gpu_pods(l, fa, &n_failed);
	size_t n_waiting = 0;
	const struct js_pendpod *waiting = waiting_gpu_pods(l, fa, &n_waiting);
	struct js_reconcile_input in = {
		.failed_pods = failed, .n_failed_pods = n_failed,
		.jobset = l->js, .jobs = obs, .n_jobs = n, .service_exists = l->service_exists, .pods = pods,
		.n_pods = np, .gates = l->opts.gates, .now = js__local_wall_ms() / 1000,
		.pvcs = (const char *const *)l->pvcs, .n_pvcs = l->n_pvcs,
		/* Known always: the runner has its pods at hand, so a
		 * restart never waits for them (docs/node-quarantine.md
		 * "Locally"). */
		.failed_pods_known = true,
		/* Likewise the pods that wait for GPUs: at hand, so read_at 0
		 * (nothing to read again). */
		.pending_pods_known = true, .pending_pods = waiting, .n_pending_pods = n_waiting,
	};
	int r = js_reconcile_run(&in, ret_plan, ret_err);
	js_arena_free(fa);
	free(obs);
	free(pods);
	return r;
}

/* Feed the phase the JobSet is in now to the accountant (core/phase.h),
 * as the controller does after each reconcile (ctrl/phases.c). */
static void account_phase(struct js_local *l, int64_t t)
{
	struct js_phase_obs obs;
	js_phase_observe(l->js, &obs);
	struct js_phase_ready r;
	if (js_phase_acct_step(&l->phases, obs.phase, t, &r)) {
		if (l->n_readies < JS_LOCAL_MAX_READIES)
			l->readies[l->n_readies] = r;
		l->n_readies++;
	}
}

/* A whole-JobSet restart the stored status now counts (it had `before`):
 * the picture's attempt marker, with RestartingJobSet's reason. */
static void record_restart(struct js_local *l, int32_t before)
{
	if (l->js->status.restarts <= before)
		return;
	const struct js_condition *c = js_jobset_condition(l->js, "RestartingJobSet");
	js_timeline_add_restart(l->timeline, js__local_wall_ms(), l->js->status.restarts, c ? c->reason : NULL,
				c ? c->message : NULL);
}

void js__exec_reconcile(struct js_local *l, int64_t t)
{
	struct js_plan *plan = NULL;
	char *err = NULL;
	int r = js__exec_plan_now(l, &plan, &err);
	l->dirty = false;
	if (r < 0) {
		js__report_event(l, "Warning", "ReconcileError", "jobset", js_jobset_name(l->js), "%s", err ? err : js_strerror(r));
		free(err);
		l->requeue_ms = t + LOCAL_RETRY_MS;
		return;
	}
	if (repeated_plan(l, plan)) {
		js_reconcile_plan_free(plan);
		return;
	}
	l->turn_ms = t;
	l->requeue_ms = -1;
	r = js_exec_apply(&local_ops, l, plan, NULL);
	flush_jobset_event(l);
	if (r < 0) {
		/* SPEC §11.2: stopped, nothing written; retry with backoff. */
		l->requeue_ms = t + LOCAL_RETRY_MS;
	} else if (plan->status_changed) {
		/* The plan's working copy, carrying the new status, becomes the
		 * stored JobSet: taken, not copied. */
		int32_t before = l->js->status.restarts;
		js_jobset_free(l->js);
		l->js = js_plan_take_jobset(plan);
		l->dirty = true;
		record_restart(l, before);
	}
	if (r >= 0)
		account_phase(l, t);
	js_reconcile_plan_free(plan);
}
