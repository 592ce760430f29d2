/*
 * hangs.c - hang detection's controller half (gate ProgressDeadline;
 * docs/progress-deadline.md "On a cluster"): the watcher sidecar of a pod
 * (src/agent/beats.h) that finds the pod over its progress deadline exits
 * with JS_HEARTBEAT_EXIT_EXCEEDED and its report as termination message;
 * the kubelet puts both in the pod's status. Here the controller sees that
 * in its cache of watched pods (the label the pod webhook set,
 * webhook/watcher.c: never a cluster-wide pod cache), judges the report
 * again, and acts: the pod condition ProgressDeadlineExceeded (status
 * True), a Warning event on the pod, the pod's activeDeadlineSeconds set
 * to 1 s, then the pod's deletion within its grace period, so that the Job
 * counts a failed pod with the condition and its podFailurePolicy's
 * onPodConditions can match it.
 *
 * Why the active deadline: a deletion alone lets the kubelet end the pod
 * Succeeded when its workload exits 0 on SIGTERM (restart policy Never,
 * every container exited 0: kubelet_pods.go getPhase), and a Job with a
 * podFailurePolicy counts a pod by its phase alone - the hung index would
 * count as done. Writing phase Failed ourselves (as PodGC does for pods
 * of a node that is gone) would make the pod terminal while its containers
 * still run: the API then deletes it at once (grace 0, so the kubelet cuts
 * the workload's grace period to its 2 s minimum) and the scheduler frees
 * its resources before the kubelet does. A pod past its active deadline is
 * the kubelet's own verdict (its ShouldEvict in generateAPIPodStatus): it
 * stops the containers within the pod's grace period and reports phase
 * Failed, reason DeadlineExceeded, only once they stopped.
 *
 * A report is never taken on trust: the settings come from the JobSet
 * (api/heartbeat.h, the ReplicatedJob the pod's label names), the
 * workload's start from the container statuses the kubelet wrote, and the
 * report gives only the heartbeat's mtime and the instant it was judged,
 * all on the node's clock. The verdict is core/progress.h's at that
 * instant: a report of a pod whose JobSet has no deadline (the gate is on
 * but the pod is not the JobSet's to watch), a garbled one, or one made
 * before the workload's latest start (the watcher started before a slow
 * image pull, or the containers restarted since) is refused and said in
 * the log; nothing else is done for it.
 *
 * Keys are JS__CTRL_HANG_PREFIX "<namespace>/<pod name>", in the JobSets'
 * queue (a namespace never holds ':').
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api/heartbeat.h"
#include "api/jobset.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/str.h"
#include "base/time.h"
#include "core/progress.h"
#include "ctrl/ctrl_int.h"

/* ---- the record ---- */

/* One allocation per record; every string is owned. */
struct hpodrec {
	struct js__hang_pod pub; /* first: the record is read as the public type */
	atomic_int refs;
};

static char *dup_or_null(const char *s)
{
	return s ? js_xstrdup(s) : NULL;
}

/* The latest state.running.startedAt of the regular containers, in ms: the
 * workload's start (sidecars and init containers are not the workload, as
 * in `jobset run`). */
static bool workload_start(const json_t *status, int64_t *ret)
{
	bool any = false;
	size_t i;
	json_t *cs;
	json_array_foreach(json_object_get(status, "containerStatuses"), i, cs)
	{
		const char *at = js_json_str(json_object_get(json_object_get(cs, "state"), "running"), "startedAt");
		int64_t s;
		if (!at || js_time_parse_rfc3339(at, &s) < 0)
			continue;
		s = js_sat_s_to_ms(s);
		if (!any || s > *ret)
			*ret = s;
		any = true;
	}
	return any;
}

/* The watcher's report: its termination message when it ended with our
 * exit code, now or the time before (the kubelet restarts a sidecar, so
 * the report is usually in lastState). */
static const char *watcher_report(const json_t *status)
{
	size_t i;
	json_t *cs;
	json_array_foreach(json_object_get(status, "initContainerStatuses"), i, cs)
	{
		if (!js_str_match(js_json_str(cs, "name"), JS_HEARTBEAT_WATCHER))
			continue;
		static const char *const states[] = {"state", "lastState"};
		for (size_t k = 0; k < JS_ARRAY_SIZE(states); k++) {
			const json_t *t = json_object_get(json_object_get(cs, states[k]), "terminated");
			const json_t *code = json_object_get(t, "exitCode");
			if (json_is_integer(code) && json_integer_value(code) == JS_HEARTBEAT_EXIT_EXCEEDED)
				return js_json_str(t, "message");
		}
	}
	return NULL;
}

static bool condition_true(const json_t *status, const char *type)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(status, "conditions"), i, c)
	{
		if (js_str_match(js_json_str(c, "type"), type))
			return js_str_match(js_json_str(c, "status"), "True");
	}
	return false;
}

static const void *hpod_transform(const json_t *obj, int *ret_err)
{
	(void)ret_err;
	const json_t *md = json_object_get(obj, "metadata"), *st = json_object_get(obj, "status");
	const json_t *labels = json_object_get(md, "labels"), *del = json_object_get(md, "deletionTimestamp");
	const char *phase = js_json_str(st, "phase");
	struct hpodrec *r = js_xcalloc(1, sizeof *r);
	atomic_init(&r->refs, 1);
	struct js__hang_pod *p = &r->pub;
	p->ns = dup_or_null(js_json_str(md, "namespace"));
	p->name = dup_or_null(js_json_str(md, "name"));
	p->uid = dup_or_null(js_json_str(md, "uid"));
	p->jobset = dup_or_null(js_json_str(labels, JS_LABEL_JOBSET_NAME));
	p->rjob = dup_or_null(js_json_str(labels, JS_LABEL_RJOB_NAME));
	p->deleting = del && !json_is_null(del);
	p->terminal = phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
	p->marked = condition_true(st, JS_HEARTBEAT_CONDITION);
	p->has_start = workload_start(st, &p->start_ms);
	p->report = dup_or_null(watcher_report(st));
	return r;
}

static const void *hpod_ref(const void *p)
{
	atomic_fetch_add(&((struct hpodrec *)(uintptr_t)p)->refs, 1);
	return p;
}

static void hpod_unref(const void *p)
{
	struct hpodrec *r = (struct hpodrec *)(uintptr_t)p;
	if (atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	char *strs[] = {(char *)(uintptr_t)r->pub.ns,	  (char *)(uintptr_t)r->pub.name,
			(char *)(uintptr_t)r->pub.uid,	  (char *)(uintptr_t)r->pub.jobset,
			(char *)(uintptr_t)r->pub.rjob,	  (char *)(uintptr_t)r->pub.report};
	for (size_t i = 0; i < JS_ARRAY_SIZE(strs); i++)
		free(strs[i]);
	free(r);
}

/* Equal in what the judgement reads: the kubelet's status updates of a
 * running pod (readiness, restarts of other containers) start nothing. */
static bool hpod_same(const void *pa, const void *pb)
{
	const struct js__hang_pod *a = pa, *b = pb;
	return js_str_same(a->ns, b->ns) && js_str_same(a->name, b->name) && js_str_same(a->uid, b->uid) &&
	       js_str_same(a->jobset, b->jobset) && js_str_same(a->rjob, b->rjob) && a->deleting == b->deleting &&
	       a->terminal == b->terminal && a->marked == b->marked && a->has_start == b->has_start &&
	       (!a->has_start || a->start_ms == b->start_ms) && js_str_same(a->report, b->report);
}

const struct js_store_type js__hangs_pod_type = {
	.transform = hpod_transform,
	.ref = hpod_ref,
	.unref = hpod_unref,
	.same = hpod_same,
};

/* ---- the judgement (pure) ---- */

/* "2026-12-02T15:40:01.250Z" of a wall-clock ms time. */
static void stamp(int64_t ms, char out[32])
{
	char s[21];
	js_time_format_rfc3339(ms / 1000, s);
	snprintf(out, 32, "%.19s.%03dZ", s, (int)(ms % 1000));
}

static int settings(const struct js_jobset *js, const char *rjob, struct js_heartbeat *ret)
{
	for (size_t i = 0; js && rjob && i < js->spec.n_replicated_jobs; i++) {
		if (js_str_match(js->spec.replicated_jobs[i].name, rjob))
			return js_heartbeat_of(js, i, ret);
	}
	return JS_ENOTFOUND;
}

void js__hangs_judge(const struct js__hang_pod *p, const struct js_jobset *js, struct js__hang_judgement *ret)
{
	struct js__hang_judgement j = {.verdict = JS__HANG_NONE};
	struct js_heartbeat h;
	struct js_heartbeat_report rep;
	if (!p->report || p->terminal || !p->ns || !p->name || !p->uid) {
		*ret = j;
		return;
	}
	if (p->marked) {
		/* Our own condition (pods/status is not the workload's to
		 * write): only the deletion is left, or under way. */
		j.verdict = p->deleting ? JS__HANG_NONE : JS__HANG_DELETE;
		*ret = j;
		return;
	}
	if (p->deleting) {
		*ret = j;
		return;
	}
	j.verdict = JS__HANG_REFUSED;
	if (!js) {
		j.why = js_buf_format("no JobSet '%s' in its namespace", p->jobset ? p->jobset : "");
	} else if (settings(js, p->rjob, &h) < 0 || !h.on) {
		j.why = js_buf_format("JobSet '%s' sets no valid progress deadline for ReplicatedJob '%s'",
				      p->jobset ? p->jobset : "", p->rjob ? p->rjob : "");
	} else if (js_heartbeat_report_parse(p->report, &rep) < 0) {
		j.why = js_buf_format("the watcher's report is not one (%.80s)", p->report);
	} else if (!p->has_start) {
		j.why = js_buf_format("no regular container is running");
	} else {
		struct js_progress_in in = {.start_ms = p->start_ms, .has_beat = rep.has_beat, .beat_ms = rep.beat_ms,
					    .deadline_s = h.deadline_s, .startup_s = h.startup_s, .now_ms = rep.at_ms};
		struct js_progress_out o;
		char last[32], at[32];
		stamp(rep.at_ms, at);
		if (js_progress_check(&in, &o) < 0) {
			j.why = js_xstrdup("the JobSet's settings are out of range");
		} else if (o.verdict == JS_PROGRESS_OK) {
			stamp(p->start_ms, last);
			j.why = js_buf_format("within its deadline at the report's time %s (its containers started at %s)",
					      at, last);
		} else {
			stamp(o.last_ms, last);
			j.verdict = JS__HANG_ACT;
			j.why = o.first ? js_buf_format("no heartbeat since its containers started at %s, as of %s: "
							"startup allowance %lld s (" JS_ANN_PROGRESS_STARTUP
							") exceeded by %lld ms",
							last, at, (long long)in.startup_s, (long long)o.late_ms)
					: js_buf_format("last heartbeat at %s, %.1f s before %s: progress deadline %lld s ("
							JS_ANN_PROGRESS_DEADLINE ") exceeded by %lld ms",
							last, (double)js_sat_sub(rep.at_ms, o.last_ms) / 1000.0, at,
							(long long)in.deadline_s, (long long)o.late_ms);
		}
	}
	*ret = j;
}

void js__hang_judgement_done(struct js__hang_judgement *j)
{
	free(j->why);
	j->why = NULL;
}

/* ---- event handlers ---- */

static void pod_event(struct js_controller *c, const struct js__hang_pod *p)
{
	/* Only pods with something to do reach the queue: the cache's
	 * same() already dropped status updates that change nothing here. */
	if (!p->report || p->terminal || !p->ns || !p->name)
		return;
	char *key = js_buf_format("%s%s/%s", JS__CTRL_HANG_PREFIX, p->ns, p->name);
	js__ctrl_enqueue(c, key, false, "pods");
	free(key);
}

static void pod_add(void *user, const void *rec, const json_t *obj)
{
	(void)obj;
	pod_event(js__ctrl_of(user), rec);
}

static void pod_update(void *user, const void *old_rec, const void *rec, const json_t *obj)
{
	(void)obj;
	(void)old_rec;
	pod_event(js__ctrl_of(user), rec);
}

int js__hangs_informer(struct js_controller *c)
{
	c->hpods_ctx = (struct js__ctrl_cache){c, "watched pods"};
	struct js_informer_opts io = {
		.res = &js_client_res_pods,
		.type = &js__hangs_pod_type,
		/* Only the pods the pod webhook gave a watcher. */
		.label_selector = JS_LABEL_PROGRESS,
		.handlers = {.on_add = pod_add, .on_update = pod_update, .on_error = js__ctrl_cache_error,
			     .user = &c->hpods_ctx},
	};
	return js_informer_new(c->client, &io, &c->hpods);
}

/* ---- acting ---- */

static void count(struct js_controller *c, const char *method, int r, const struct js_apierr *e)
{
	js__ctrl_count_request(c, method, r == 0 ? 200 : e->http_code);
}

/* Ensure the condition on the pod's status (this incarnation: same uid).
 * Returns 0, JS_ENOTFOUND (gone or replaced), or the client's error. */
static int mark(struct js_controller *c, const struct js__hang_pod *p, const char *msg)
{
	struct js__podcond pc = {.ns = p->ns, .name = p->name, .uid = p->uid, .type = JS_HEARTBEAT_CONDITION,
				 .reason = JS_HEARTBEAT_CONDITION, .message = msg};
	return js__podcond_ensure(c, &pc);
}

static json_t *regarding(const struct js__hang_pod *p)
{
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:s}}", "apiVersion", "v1", "kind", "Pod", "metadata", "name", p->name,
			 "namespace", p->ns, "uid", p->uid);
}

json_t *js__hangs_expire_patch(const struct js__hang_pod *p)
{
	if (!p->uid)
		return NULL;
	/* "add" replaces a deadline the pod has: the API allows lowering it,
	 * and 1 is the least valid value. */
	return json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:i}]", "op", "test", "path", "/metadata/uid", "value", p->uid, "op",
			 "add", "path", "/spec/activeDeadlineSeconds", "value", 1);
}

/* Make the kubelet end this incarnation Failed once its containers have
 * stopped (js__hangs_expire_patch; see the top of the file). */
static int expire(struct js_controller *c, const struct js__hang_pod *p)
{
	json_t *patch = js__hangs_expire_patch(p);
	if (!patch)
		return 0;
	struct js_apierr e = {0};
	int r = js_client_patch(c->client, &js_client_res_pods, p->ns, p->name, JS_PATCH_JSON, patch, NULL, NULL, &e);
	count(c, "PATCH", r, &e);
	js_apierr_done(&e);
	json_decref(patch);
	return r == JS_ENOTFOUND ? 0 : r;
}

/* Delete this incarnation of the pod with its own grace period, as the
 * taint manager deletes a pod it marked DisruptionTarget: the pod's object
 * goes once the kubelet has stopped it (its active deadline makes that end
 * Failed), not before. */
static int delete_pod(struct js_controller *c, const struct js__hang_pod *p)
{
	struct js_delete_opts d = {.propagation = "Background", .precondition_uid = p->uid};
	struct js_apierr e = {0};
	int r = js_client_delete(c->client, &js_client_res_pods, p->ns, p->name, &d, NULL, &e);
	count(c, "DELETE", r, &e);
	js_apierr_done(&e);
	return r == JS_ENOTFOUND || r == JS_ECONFLICT ? 0 : r;
}

void js__hangs_sync(struct js_controller *c, const char *key, struct js__sync_result *res)
{
	const char *slash = strchr(key, '/');
	if (!slash)
		return;
	char *ns = js_xstrndup(key, (size_t)(slash - key));
	const struct js__hang_pod *p = js_informer_get(c->hpods, ns, slash + 1);
	free(ns);
	if (!p)
		return; /* gone: nothing to fail */
	char *jskey = js_buf_format("%s/%s", p->ns ? p->ns : "", p->jobset ? p->jobset : "");
	const struct js_cache_jobset *cj = p->jobset ? js_informer_get(c->jobsets, p->ns, p->jobset) : NULL;
	struct js__hang_judgement j;
	js__hangs_judge(p, cj && !cj->deleting ? cj->js : NULL, &j);
	int r = 0;
	switch (j.verdict) {
	case JS__HANG_NONE:
		break;
	case JS__HANG_REFUSED:
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO,
			      "pod %s/%s: the progress watcher's report is refused: %s; ignoring it", p->ns, p->name,
			      j.why);
		break;
	case JS__HANG_ACT:
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "pod %s/%s of jobset '%s': %s; failing it", p->ns, p->name,
			      jskey, j.why);
		r = mark(c, p, j.why);
		if (r == 0)
			r = expire(c, p);
		if (r == 0) {
			json_t *reg = regarding(p);
			(void)!js_recorder_eventf(c->rec, reg, "Warning", JS_HEARTBEAT_CONDITION, "Delete",
						  "%s; deleting it within its grace period (the pod fails)", j.why);
			json_decref(reg);
			r = delete_pod(c, p);
		}
		break;
	case JS__HANG_DELETE:
		r = expire(c, p);
		if (r == 0)
			r = delete_pod(c, p);
		break;
	}
	if (r < 0 && r != JS_ENOTFOUND) {
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "pod %s/%s: failing it for its progress deadline: %s", p->ns,
			      p->name, js_apierr_strerror(r));
		res->error = true;
	}
	js__hang_judgement_done(&j);
	if (cj)
		js_informer_unref(c->jobsets, cj);
	js_informer_unref(c->hpods, p);
	free(jskey);
}
