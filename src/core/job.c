/*
 * job.c - the observed-Job record: decoding from batch/v1 JSON, packing
 * into one allocation, sharing by atomic reference count.
 *
 * Both constructors end in pack(): from_json first points a temporary
 * record at the strings inside the JSON tree (borrowed), then pack() sizes
 * and copies everything into one block, so the two paths cannot drift.
 */
#include "core/job.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api/jobset.h"
#include "api/quarantine.h"
#include "api/render.h"
#include "base/json.h"
#include "base/time.h"

/* The block behind every record: header, the public struct, then the
 * conditions, then the strings. */
struct rec {
	atomic_size_t refs;
	struct js_obsjob j;
};

static struct rec *rec_of(const struct js_obsjob *j)
{
	return (struct rec *)((uintptr_t)j - offsetof(struct rec, j));
}

/* ---- packing ---- */

static size_t slen(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

/* Copy `s` to *cursor and advance it; NULL stays NULL. */
static const char *put(char **cursor, const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *d = *cursor;
	memcpy(d, s, n);
	*cursor += n;
	return d;
}

static json_t *copy_array(const json_t *a)
{
	return json_is_array(a) ? json_deep_copy(a) : NULL;
}

static json_t *copy_object(const json_t *o)
{
	return json_is_object(o) ? json_deep_copy(o) : NULL;
}

/* One block holding `src` and everything it points to (JSON arrays are deep
 * copies beside it). Refcount 1. */
static struct js_obsjob *pack(const struct js_obsjob *src)
{
	const char *const strs[] = {src->name, src->uid, src->owner_uid, src->rjob_name, src->job_index,
				    src->restart_attempt, src->job_restart_attempt, src->execution_attempt,
				    src->quarantined_nodes};
	size_t bytes = 0, n_conds = 0;
	for (size_t i = 0; i < JS_ARRAY_SIZE(strs); i++)
		bytes += slen(strs[i]);
	for (size_t i = 0; i < src->n_conditions; i++) {
		const struct js_jobcond *c = &src->conditions[i];
		if (!c->type || !c->status)
			continue; /* a condition has both (job.h) */
		bytes += slen(c->type) + slen(c->status) + slen(c->reason) + slen(c->message);
		n_conds++;
	}
	_Static_assert(sizeof(struct rec) % alignof(struct js_jobcond) == 0, "conditions follow the header aligned");
	size_t conds = n_conds * sizeof(struct js_jobcond);
	struct rec *r = js_xmalloc(sizeof(*r) + conds + bytes);
	struct js_jobcond *cv = (struct js_jobcond *)(r + 1);
	char *cur = (char *)cv + conds;

	atomic_init(&r->refs, 1);
	r->j = *src;
	r->j.name = put(&cur, src->name);
	r->j.uid = put(&cur, src->uid);
	r->j.owner_uid = put(&cur, src->owner_uid);
	r->j.rjob_name = put(&cur, src->rjob_name);
	r->j.job_index = put(&cur, src->job_index);
	r->j.restart_attempt = put(&cur, src->restart_attempt);
	r->j.job_restart_attempt = put(&cur, src->job_restart_attempt);
	r->j.execution_attempt = put(&cur, src->execution_attempt);
	r->j.quarantined_nodes = put(&cur, src->quarantined_nodes);
	size_t k = 0;
	for (size_t i = 0; i < src->n_conditions; i++) {
		const struct js_jobcond *c = &src->conditions[i];
		if (!c->type || !c->status)
			continue;
		cv[k] = *c;
		cv[k].type = put(&cur, c->type);
		cv[k].status = put(&cur, c->status);
		cv[k].reason = put(&cur, c->reason);
		cv[k].message = put(&cur, c->message);
		k++;
	}
	r->j.n_conditions = k;
	r->j.conditions = k ? cv : NULL;
	r->j.tolerations = copy_array(src->tolerations);
	r->j.scheduling_gates = copy_array(src->scheduling_gates);
	r->j.node_selector = copy_object(src->node_selector);
	r->j.containers = copy_array(src->containers);
	r->j.init_containers = copy_array(src->init_containers);
	return &r->j;
}

struct js_obsjob *js_job_build(const struct js_obsjob_init *init)
{
	return init->job.name ? pack(&init->job) : NULL;
}

/* ---- decoding ---- */

static bool get_i32(const json_t *o, const char *key, int32_t *ret)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v))
		return false;
	json_int_t x = json_integer_value(v);
	if (x < INT32_MIN || x > INT32_MAX)
		return false;
	*ret = (int32_t)x;
	return true;
}

/* The conditions the core reads (job.h): True, and one of three types. */
static bool kept_condition(const char *type, const char *status)
{
	return type && status && strcmp(status, "True") == 0 &&
	       (strcmp(type, "Complete") == 0 || strcmp(type, "Failed") == 0 || strcmp(type, "FailureTarget") == 0);
}

/* Point `out` at the kept conditions of `conds` (strings borrowed from
 * the tree). Returns the count; `out` holds at least as many entries as
 * `conds` has. */
static size_t borrow_conditions(const json_t *conds, struct js_jobcond *out)
{
	size_t i, n = 0;
	json_t *c;
	json_array_foreach(conds, i, c) {
		const char *type = js_json_str(c, "type"), *status = js_json_str(c, "status");
		if (!kept_condition(type, status))
			continue;
		struct js_jobcond *jc = &out[n++];
		*jc = (struct js_jobcond){.type = type,
					  .status = status,
					  .reason = js_json_str(c, "reason"),
					  .message = js_json_str(c, "message")};
		jc->has_last_transition_time =
			js_time_parse_rfc3339(js_json_str(c, "lastTransitionTime"), &jc->last_transition_time) == 0;
	}
	return n;
}

/* A jobset.sigs.k8s.io/ label the core reads, from the pod template when
 * it has one, else from the Job's own labels. The controller writes the
 * same values to both (api/render.c); the template's cannot be changed
 * once the Job has started (batch/v1 allows template label edits only on
 * a suspended Job that never ran) and are what its pods carry, while any
 * user may remove or rewrite the Job's own: read from there, a stray edit
 * made a running Job unreadable (the core refused the JobSet every pass)
 * or passed it for another restart attempt (tests/chaos "job-label"). */
static const char *our_label(const json_t *pod_labels, const json_t *job_labels, const char *key)
{
	const char *v = js_json_str(pod_labels, key);
	return v ? v : js_json_str(job_labels, key);
}

bool js_job_completed_index0(const char *completed)
{
	/* Intervals in ascending order ("0-3,5,7-9"): index 0 can only be the
	 * first, as "0" alone or the start of a range. */
	return completed && completed[0] == '0' && (completed[1] == '\0' || completed[1] == ',' || completed[1] == '-');
}

struct js_obsjob *js_job_from_json(const json_t *job, int *ret_err)
{
	const json_t *meta = json_object_get(job, "metadata");
	const json_t *spec = json_object_get(job, "spec");
	const json_t *st = json_object_get(job, "status");
	const json_t *labels = json_object_get(meta, "labels");
	const json_t *pod_spec = js_json_path(spec, "template.spec");
	struct js_obsjob j = {0};

	if (!js_json_str(meta, "name")) {
		if (ret_err)
			*ret_err = JS_EINVALID;
		return NULL;
	}
	j.name = js_json_str(meta, "name");
	j.uid = js_json_str(meta, "uid");
	j.owner_uid = js_json_str(js_render_jobset_owner(job), "uid");
	const json_t *pod_labels = js_json_path(spec, "template.metadata.labels");
	j.rjob_name = our_label(pod_labels, labels, JS_LABEL_RJOB_NAME);
	j.job_index = our_label(pod_labels, labels, JS_LABEL_JOB_INDEX);
	j.restart_attempt = our_label(pod_labels, labels, JS_LABEL_RESTART_ATTEMPT);
	j.job_restart_attempt = our_label(pod_labels, labels, JS_LABEL_JOB_RESTART_ATTEMPT);
	j.execution_attempt = js_json_str(json_object_get(meta, "annotations"), JS_ANN_EXECUTION_ATTEMPT);
	/* The pod template's: immutable once the Job ran, and what its pods
	 * carry (the Job's own annotations any user may edit). */
	j.quarantined_nodes = js_json_str(js_json_path(spec, "template.metadata.annotations"), JS_ANN_QUARANTINED_NODES);
	json_t *del = json_object_get(meta, "deletionTimestamp");
	j.deleting = del && !json_is_null(del);

	json_t *susp = json_object_get(spec, "suspend");
	if (json_is_boolean(susp)) {
		j.has_suspend = true;
		j.suspend = json_is_true(susp);
	}
	j.has_parallelism = get_i32(spec, "parallelism", &j.parallelism);
	j.has_completions = get_i32(spec, "completions", &j.completions);
	j.tolerations = json_object_get(pod_spec, "tolerations");
	j.scheduling_gates = json_object_get(pod_spec, "schedulingGates");
	if (j.has_suspend && j.suspend) {
		/* Only a resume reads them, and only a suspended Job is resumed:
		 * a running Job's record does not carry its containers (the
		 * bulk of a Job), so the cache of a large running JobSet does
		 * not grow with them. */
		j.node_selector = json_object_get(pod_spec, "nodeSelector");
		j.containers = json_object_get(pod_spec, "containers");
		j.init_containers = json_object_get(pod_spec, "initContainers");
	}

	(void)get_i32(st, "active", &j.active);
	(void)get_i32(st, "succeeded", &j.succeeded);
	(void)get_i32(st, "failed", &j.failed);
	j.has_ready = get_i32(st, "ready", &j.ready);
	j.has_terminating = get_i32(st, "terminating", &j.terminating);
	j.has_start_time = js_time_parse_rfc3339(js_json_str(st, "startTime"), &j.start_time) == 0;
	j.index0_done = js_job_completed_index0(js_json_str(st, "completedIndexes"));

	/* A handful of conditions at most; the scratch copy of the borrowed
	 * view lives only until pack() has copied it. */
	const json_t *conds = json_object_get(st, "conditions");
	struct js_jobcond *cv = NULL;
	if (json_array_size(conds) > 0) {
		cv = js_xcalloc(json_array_size(conds), sizeof(*cv));
		j.n_conditions = borrow_conditions(conds, cv);
		j.conditions = cv;
	}
	struct js_obsjob *rec = pack(&j);
	free(cv);
	return rec;
}

/* ---- sharing ---- */

const struct js_obsjob *js_job_ref(const struct js_obsjob *j)
{
	if (j)
		atomic_fetch_add_explicit(&rec_of(j)->refs, 1, memory_order_relaxed);
	return j;
}

void js_job_unref(const struct js_obsjob *j)
{
	if (!j)
		return;
	struct rec *r = rec_of(j);
	/* Release on the decrement, acquire before freeing: every write of
	 * another holder happens-before the free (the usual refcount rule).
	 * Both on the one read-modify-write (acq_rel) rather than a release
	 * decrement and an acquire fence: the same ordering (one locked
	 * instruction on x86 either way), and ThreadSanitizer does not model
	 * standalone fences - it reported the free as racing with the last
	 * decrement of another thread (docs/reliability.md "Sanitizers"). */
	if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1)
		return;
	json_decref(r->j.tolerations);
	json_decref(r->j.scheduling_gates);
	json_decref(r->j.node_selector);
	json_decref(r->j.containers);
	json_decref(r->j.init_containers);
	free(r);
}

/* ---- reading ---- */

static bool str_same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static bool json_same(const json_t *a, const json_t *b)
{
	return a == b || (a && b && json_equal(a, b));
}

static bool cond_same(const struct js_jobcond *a, const struct js_jobcond *b)
{
	return str_same(a->type, b->type) && str_same(a->status, b->status) && str_same(a->reason, b->reason) &&
	       str_same(a->message, b->message) && a->has_last_transition_time == b->has_last_transition_time &&
	       (!a->has_last_transition_time || a->last_transition_time == b->last_transition_time);
}

/* Optional scalars compare equal when both are absent, whatever their
 * value slot holds. */
#define OPT_SAME(a, b, f) ((a)->has_##f == (b)->has_##f && (!(a)->has_##f || (a)->f == (b)->f))

bool js_job_same(const struct js_obsjob *a, const struct js_obsjob *b)
{
	if (a == b)
		return true;
	if (!a || !b)
		return false;
	if (!str_same(a->name, b->name) || !str_same(a->uid, b->uid) || !str_same(a->owner_uid, b->owner_uid) ||
	    !str_same(a->rjob_name, b->rjob_name) || !str_same(a->job_index, b->job_index) ||
	    !str_same(a->restart_attempt, b->restart_attempt) ||
	    !str_same(a->job_restart_attempt, b->job_restart_attempt) ||
	    !str_same(a->execution_attempt, b->execution_attempt) ||
	    !str_same(a->quarantined_nodes, b->quarantined_nodes))
		return false;
	if (a->deleting != b->deleting || !OPT_SAME(a, b, suspend) || !OPT_SAME(a, b, parallelism) ||
	    !OPT_SAME(a, b, completions) || a->active != b->active || a->succeeded != b->succeeded ||
	    a->failed != b->failed || !OPT_SAME(a, b, ready) || !OPT_SAME(a, b, terminating) ||
	    !OPT_SAME(a, b, start_time) || a->index0_done != b->index0_done)
		return false;
	if (a->n_conditions != b->n_conditions)
		return false;
	for (size_t i = 0; i < a->n_conditions; i++)
		if (!cond_same(&a->conditions[i], &b->conditions[i]))
			return false;
	return json_same(a->tolerations, b->tolerations) && json_same(a->scheduling_gates, b->scheduling_gates) &&
	       json_same(a->node_selector, b->node_selector) && json_same(a->containers, b->containers) &&
	       json_same(a->init_containers, b->init_containers);
}

const struct js_jobcond *js_job_condition_true(const struct js_obsjob *j, const char *type)
{
	for (size_t i = 0; i < j->n_conditions; i++) {
		const struct js_jobcond *c = &j->conditions[i];
		if (strcmp(c->type, type) == 0 && strcmp(c->status, "True") == 0)
			return c;
	}
	return NULL;
}
