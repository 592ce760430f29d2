/*
 * placement.c - exclusive placement decisions. See placement.h.
 */
#include "core/placement.h"

#include <string.h>

#include "api/jobset.h"
#include "api/template.h"
#include "base/json.h"
#include "base/str.h"

/* The key the pods of ReplicatedJob `r` are rendered with: its Job
 * template's, else the JobSet's (both put on the pod template, SPEC §6.3),
 * else the pod template's own. */
static const char *rjob_topology(const struct js_jobset *js, const struct js_rjob *r)
{
	const char *k = js_tmpl_annotation(r, JS_ANN_EXCLUSIVE_TOPOLOGY);
	if (!k)
		k = js_json_str(js->meta.annotations, JS_ANN_EXCLUSIVE_TOPOLOGY);
	if (!k)
		k = js_json_str(js_json_path(r->template_, "spec.template.metadata.annotations"), JS_ANN_EXCLUSIVE_TOPOLOGY);
	return k && k[0] ? k : NULL;
}

const char *js_placement_topology(const struct js_jobset *js, const char *rjob_name)
{
	if (!js)
		return NULL;
	int at = rjob_name ? js_jobset_find_rjob(js, rjob_name) : -1;
	if (at >= 0)
		return rjob_topology(js, &js->spec.replicated_jobs[at]);
	const char *key = NULL;
	for (size_t i = 0; i < js->spec.n_replicated_jobs; i++) {
		const char *k = rjob_topology(js, &js->spec.replicated_jobs[i]);
		if (!k || (key && strcmp(k, key) != 0))
			return NULL;
		key = k;
	}
	return key;
}

bool js_placement_is_leader(const struct js_placement_pod *p)
{
	return js_str_match(p->completion_index, "0");
}

/* Finished or going: it counts neither as a leader nor as a follower to
 * place (#1276, #1021). */
static bool gone(const struct js_placement_pod *p)
{
	return p->terminal || p->deleting;
}

/* A follower elected to lead that still can: live, ungated, of this Job. */
static bool elected_leader(const struct js_placement_pod *p, const char *job_uid)
{
	return p->elected && !p->gated && !gone(p) && !js_placement_is_leader(p) && js_str_match(p->owner_uid, job_uid);
}

enum js_placement_why js_placement_find_leader(const struct js_placement_pod *pods, size_t n, const char *job_uid,
					       size_t *ret_leader, size_t *ret_count)
{
	size_t count = 0, found = 0;
	for (size_t i = 0; i < n; i++) {
		const struct js_placement_pod *p = &pods[i];
		/* Another incarnation of the Job is a stale leader (#433). */
		if (!js_placement_is_leader(p) || gone(p) || !js_str_match(p->owner_uid, job_uid))
			continue;
		if (count++ == 0)
			found = i;
	}
	if (count == 0) {
		/* Index 0 done: the Job controller makes no other leader, and a
		 * follower made after it (a retry) follows the finished one. */
		for (size_t i = 0; i < n; i++) {
			const struct js_placement_pod *p = &pods[i];
			if (js_placement_is_leader(p) && p->succeeded && !p->deleting && js_str_match(p->owner_uid, job_uid) &&
			    p->node_name && p->node_name[0]) {
				count = 1;
				found = i;
				break;
			}
		}
	}
	if (count == 0) {
		/* Index 0 done and its pod gone: the follower elected to lead
		 * (js_placement_elect). Counted, so that two (an edit) wait. */
		for (size_t i = 0; i < n; i++) {
			if (elected_leader(&pods[i], job_uid) && count++ == 0)
				found = i;
		}
	}
	if (ret_count)
		*ret_count = count;
	if (count == 0)
		return JS_PLACEMENT_NO_LEADER;
	if (count > 1)
		return JS_PLACEMENT_LEADERS;
	*ret_leader = found;
	const char *node = pods[found].node_name;
	return node && node[0] ? JS_PLACEMENT_READY : JS_PLACEMENT_LEADER_UNBOUND;
}

enum js_placement_why js_placement_followers_domain(const struct js_placement_pod *pods, size_t n, const char *job_uid,
						    const char **ret_domain)
{
	const char *domain = NULL;
	*ret_domain = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct js_placement_pod *p = &pods[i];
		if (js_placement_is_leader(p) || p->gated || p->deleting || !js_str_match(p->owner_uid, job_uid) ||
		    !p->node_name || !p->node_name[0] || !p->selector || !p->selector[0])
			continue;
		if (domain && strcmp(domain, p->selector) != 0)
			return JS_PLACEMENT_FOLLOWERS_SPLIT;
		domain = p->selector;
	}
	if (!domain)
		return JS_PLACEMENT_NO_LEADER;
	*ret_domain = domain;
	return JS_PLACEMENT_READY;
}

/* The completion index of `p` as a number, or -1 when absent or not a
 * plain decimal (an edited annotation). */
static long index_of(const struct js_placement_pod *p)
{
	const char *s = p->completion_index;
	if (!s || !*s || strlen(s) > 10)
		return -1;
	long v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

bool js_placement_elect(const struct js_placement_pod *pods, size_t n, const char *job_uid, bool index0_done,
			size_t *ret_at)
{
	if (!index0_done)
		return false;
	long best = -1;
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		const struct js_placement_pod *p = &pods[i];
		if (elected_leader(p, job_uid))
			return false;
		long idx = index_of(p);
		if (!p->gated || gone(p) || js_placement_is_leader(p) || idx < 0 || !js_str_match(p->owner_uid, job_uid))
			continue;
		if (best < 0 || idx < best) {
			best = idx;
			at = i;
		}
	}
	if (best < 0)
		return false;
	*ret_at = at;
	return true;
}

enum js_placement_why js_placement_domain(bool node_found, const char *value, const char **ret_domain)
{
	*ret_domain = NULL;
	if (!node_found)
		return JS_PLACEMENT_NODE_GONE;
	if (!value)
		return JS_PLACEMENT_NODE_NO_LABEL;
	if (!value[0])
		return JS_PLACEMENT_NODE_EMPTY;
	*ret_domain = value;
	return JS_PLACEMENT_READY;
}

enum js_placement_act js_placement_follower(const struct js_placement_pod *p, const char *job_uid,
					    const char *domain)
{
	if (js_placement_is_leader(p) || gone(p) || !js_str_match(p->owner_uid, job_uid) || (p->elected && !p->gated))
		return JS_PLACEMENT_KEEP;
	if (!domain)
		return p->gated ? JS_PLACEMENT_WAIT : JS_PLACEMENT_KEEP;
	if (p->gated)
		return !p->selector || strcmp(p->selector, domain) == 0 ? JS_PLACEMENT_UNGATE : JS_PLACEMENT_REPAIR;
	return js_str_match(p->selector, domain) ? JS_PLACEMENT_KEEP : JS_PLACEMENT_REPAIR;
}

static const char *or_unknown(const char *s)
{
	return s && s[0] ? s : "(unknown)";
}

int js_placement_explain(enum js_placement_why why, const char *leader, const char *node, const char *topology_key,
			 struct js_buf *out)
{
	const char *l = or_unknown(leader), *nd = or_unknown(node), *k = or_unknown(topology_key);
	switch (why) {
	case JS_PLACEMENT_READY:
		return js_buf_printf(out, "leader pod %s is on node %s; this pod joins its %s domain", l, nd, k);
	case JS_PLACEMENT_NO_LEADER:
		return js_buf_puts(out, "waiting for the leader pod (completion index 0) of this Job: none is running or "
					"pending (a leader that failed or is being deleted does not count), and no "
					"follower of it is placed in a domain yet");
	case JS_PLACEMENT_LEADERS:
		return js_buf_puts(out, "waiting: this Job has more than one live leader pod (completion index 0); "
					"placement goes on once only one is left");
	case JS_PLACEMENT_LEADER_UNBOUND:
		return js_buf_printf(out,
				     "waiting for leader pod %s to be scheduled; this pod then follows it into its %s "
				     "domain",
				     l, k);
	case JS_PLACEMENT_NODE_GONE:
		return js_buf_printf(out,
				     "waiting: node %s of leader pod %s does not exist, so the leader's %s domain is "
				     "unknown",
				     nd, l, k);
	case JS_PLACEMENT_NODE_NO_LABEL:
		return js_buf_printf(out,
				     "waiting: node %s of leader pod %s has no label %s, so the leader's domain is "
				     "unknown",
				     nd, l, k);
	case JS_PLACEMENT_NO_TOPOLOGY:
		return js_buf_printf(out,
				     "waiting: the JobSet names no topology key (annotation %s) for this pod's "
				     "ReplicatedJob, so there is no domain to follow the leader into",
				     JS_ANN_EXCLUSIVE_TOPOLOGY);
	case JS_PLACEMENT_FOLLOWERS_SPLIT:
		return js_buf_printf(out,
				     "waiting: this Job has no leader pod (completion index 0) and its placed followers "
				     "are pinned to different %s domains, so the domain to join is unknown",
				     k);
	case JS_PLACEMENT_NODE_EMPTY:
		return js_buf_printf(out,
				     "waiting: node %s of leader pod %s has an empty value for label %s, so the "
				     "leader's domain is unknown",
				     nd, l, k);
	}
	return js_buf_puts(out, "waiting for the leader pod");
}
