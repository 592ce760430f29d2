/*
 * placement.h - the decisions of exclusive placement through scheduling
 * gates (docs/controller.md "Exclusive placement", docs/differences.md):
 * which pod of a Job is its usable leader, whether the leader's topology
 * domain is known, and what to do with each follower. Pure: no I/O, no
 * clock; the controller (ctrl/placement.c) feeds it the pods of one Job as
 * its cache sees them and the leader's Node as the API returned it.
 *
 * The known failure modes of upstream's webhook design are rules here:
 *  - a failed leader (kept by the Job controller beside its retry) is not a
 *    leader (upstream #1276); a succeeded one is, when no live leader
 *    exists: index 0 is done and never made again, and a follower made after
 *    it finished (the retry of a failed follower) must still follow it into
 *    its domain, as upstream's webhook lets it (found by tests/chaos);
 *  - with no usable leader pod (index 0 done and its pod deleted), the
 *    domain is the one the Job's placed followers are pinned to, when they
 *    agree (js_placement_followers_domain; found by tests/chaos);
 *  - with neither (e.g. the Job was suspended and resumed after index 0
 *    finished, which deletes every follower), one follower is elected to
 *    lead: its gate is lifted without a domain, and the others follow it
 *    (js_placement_elect; found by tests/chaos, seed 4242);
 *  - a deleted Node, a Node without the topology label or with an empty
 *    value gives no domain, so nothing is injected (#1088);
 *  - a terminating leader, or one of another incarnation of the Job (another
 *    owner uid), is never used (#1021, #433);
 *  - a follower pinned to another domain than the leader's is repaired:
 *    deleted, so the Job controller makes a new, gated one (#1269);
 *  - the reason a follower waits is one of enum js_placement_why, which
 *    js_placement_explain() puts in plain words (#1187).
 *
 * Threading: every function is reentrant.
 */
#ifndef JS_CORE_PLACEMENT_H
#define JS_CORE_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/common.h"

struct js_jobset;

/** One pod of a Job as the decisions read it. Strings are borrowed. */
struct js_placement_pod {
	const char *name;
	const char *owner_uid;        /* uid of the controller owner (the Job); NULL = none */
	const char *completion_index; /* batch.kubernetes.io/job-completion-index; NULL = absent */
	const char *node_name;        /* spec.nodeName; NULL or "" = not bound */
	const char *selector;         /* spec.nodeSelector[topologyKey]; NULL = absent */
	bool terminal;                /* status.phase Succeeded or Failed */
	bool deleting;                /* metadata.deletionTimestamp set */
	bool gated;                   /* spec.schedulingGates holds JS_GATE_EXCLUSIVE_PLACEMENT */
	bool succeeded;               /* status.phase Succeeded (terminal is true too) */
	bool elected;                 /* annotation JS_ANN_PLACEMENT_LEADER is
					 JS_ANN_PLACEMENT_LEADER_ELECTED */
};

/** Why followers cannot be placed yet (JS_PLACEMENT_READY: they can). */
enum js_placement_why {
	JS_PLACEMENT_READY = 0,      /* leader bound, its domain known */
	JS_PLACEMENT_NO_LEADER,      /* no live leader pod of this Job */
	JS_PLACEMENT_LEADERS,        /* more than one live leader pod */
	JS_PLACEMENT_LEADER_UNBOUND, /* the leader is not scheduled yet */
	JS_PLACEMENT_NODE_GONE,      /* the leader's Node does not exist */
	JS_PLACEMENT_NODE_NO_LABEL,  /* the leader's Node lacks the topology label */
	JS_PLACEMENT_NODE_EMPTY,     /* the label's value is empty */
	JS_PLACEMENT_NO_TOPOLOGY,    /* the JobSet names no topology key for the Job */
	JS_PLACEMENT_FOLLOWERS_SPLIT, /* no leader, and the placed followers name
					 different domains */
};

/** What to do with one pod. */
enum js_placement_act {
	JS_PLACEMENT_KEEP = 0, /* nothing (the leader, a finished or terminating pod, a placed follower) */
	JS_PLACEMENT_WAIT,     /* a gated follower stays gated: say why */
	JS_PLACEMENT_UNGATE,   /* add nodeSelector[topologyKey] = domain, remove the gate */
	JS_PLACEMENT_REPAIR,   /* pinned elsewhere: DisruptionTarget condition, then delete */
};

/**
 * The topology key the pods of a Job follow, from the JobSet `js` (never
 * from a pod, whose annotations anyone allowed to edit pods can change):
 * the annotation JS_ANN_EXCLUSIVE_TOPOLOGY of the Job template of the
 * ReplicatedJob `rjob_name`, else the JobSet's own, else the one of that
 * ReplicatedJob's pod template (SPEC §6.3, §9: what rendering puts on the
 * pods). When `rjob_name` is NULL or names no
 * ReplicatedJob (a label someone edited), the key every ReplicatedJob
 * resolves to when they all agree, else NULL. NULL also when the JobSet
 * names none (then nothing is placed: JS_PLACEMENT_NO_TOPOLOGY). Borrowed
 * from `js`; an empty value is none.
 */
const char *js_placement_topology(const struct js_jobset *js, const char *rjob_name);

/** True for a leader pod: completion index "0" (SPEC §9). */
bool js_placement_is_leader(const struct js_placement_pod *p);

/**
 * Find the usable leader among `pods` (n of them), the pods of the Job whose
 * uid is `job_uid`: completion index "0", owned by that Job, neither terminal
 * nor terminating; when there is none, a succeeded one that is bound and not
 * terminating (the first, should there be several); when there is none
 * either, a live, ungated follower of that Job elected to lead
 * (js_placement_elect; more than one is JS_PLACEMENT_LEADERS). Returns
 * JS_PLACEMENT_LEADER_UNBOUND or JS_PLACEMENT_READY (bound; the caller then
 * reads its Node) with *ret_leader its index, else JS_PLACEMENT_NO_LEADER or
 * JS_PLACEMENT_LEADERS. *ret_count (may be NULL) gets the number of live
 * leaders, or 1 when a succeeded leader is used.
 */
enum js_placement_why js_placement_find_leader(const struct js_placement_pod *pods, size_t n, const char *job_uid,
					       size_t *ret_leader, size_t *ret_count);

/**
 * The domain of a Job that has no usable leader pod (js_placement_find_leader
 * said JS_PLACEMENT_NO_LEADER), from its placed followers: pods of the Job
 * whose uid is `job_uid` that are not the leader, carry no gate, are not
 * terminating, are bound to a Node and name a domain (their selector; pods
 * of any phase, a Failed follower ran there too). Returns JS_PLACEMENT_READY
 * with *ret_domain borrowed from a pod when there is at least one and all
 * name the same domain, JS_PLACEMENT_FOLLOWERS_SPLIT when two differ, else
 * JS_PLACEMENT_NO_LEADER (*ret_domain NULL in both).
 *
 * Why followers and not a record of our own: when index 0 succeeded and its
 * pod was deleted (by a user, or the pod garbage collector), the Job
 * controller never makes a leader again, yet it retries a follower that
 * fails; without a domain that follower waits behind its gate for ever
 * (tests/chaos, seed 20261205; upstream's webhook refuses it for ever). A
 * placed follower's nodeSelector was written by us from the leader's Node
 * (or found equal to it) and cannot change once the pod is ungated (the API
 * server allows adding to a gated pod's nodeSelector only), and the
 * scheduler bound the pod inside it; an annotation on the Job would cost a
 * write per Job and could be edited by anyone allowed to patch Jobs. When no
 * follower is left either, the follower waits as before (nothing is known).
 * A new leader, should the Job controller make one, has a required pod
 * affinity to its own Job's running pods, so it joins the same domain.
 */
enum js_placement_why js_placement_followers_domain(const struct js_placement_pod *pods, size_t n, const char *job_uid,
						    const char **ret_domain);

/**
 * The follower to elect as the leader of the Job whose uid is `job_uid`,
 * when the Job will never have a leader pod again: `index0_done` (its
 * status.completedIndexes holds 0, js_job_completed_index0), no usable
 * leader (js_placement_find_leader said JS_PLACEMENT_NO_LEADER) and no
 * placed follower (js_placement_followers_domain said the same), and no
 * live elected pod already. The one elected is the gated, live follower of
 * the Job with the lowest completion index, so that passes that run before
 * the cache shows an election pick the same pod (whose patch then fails its
 * test of the gate) rather than a second one. Returns true with *ret_at its
 * position in `pods`, else false.
 *
 * The elected pod's gate is lifted and nothing pins it: the scheduler
 * places it where the required anti-affinity of every other exclusive
 * Job's leader allows (a pod carrying a job-key label cannot land in their
 * domains), and its domain then leads the others (js_placement_find_leader
 * takes a live, ungated, elected pod as the leader when index 0 has none).
 * It has no affinity of its own, so unlike a leader it does not keep other
 * Jobs' leaderless followers out of its domain (docs/controller.md).
 */
bool js_placement_elect(const struct js_placement_pod *pods, size_t n, const char *job_uid, bool index0_done,
			size_t *ret_at);

/**
 * The leader's domain from its Node: `node_found` false when the Node does
 * not exist (GET answered NotFound), else `value` is the Node's label
 * topologyKey (NULL = absent). Returns JS_PLACEMENT_READY with *ret_domain =
 * value (borrowed), or JS_PLACEMENT_NODE_GONE / _NODE_NO_LABEL / _NODE_EMPTY
 * with *ret_domain NULL: an empty or unknown domain is never injected.
 */
enum js_placement_why js_placement_domain(bool node_found, const char *value, const char **ret_domain);

/**
 * What to do with pod `p` of the Job whose uid is `job_uid`, given the
 * leader's domain (NULL while unknown). The leader, pods of another owner
 * and terminal or terminating pods are kept. A gated follower is ungated
 * when its selector is absent or already the domain, repaired when it names
 * another domain, and waits while the domain is unknown. An ungated follower
 * is kept when its selector is the domain, repaired otherwise (also with no
 * selector: upstream's rule), and kept while the domain is unknown; an
 * ungated elected follower (the leader of a Job whose index 0 is done) is
 * kept.
 */
enum js_placement_act js_placement_follower(const struct js_placement_pod *p, const char *job_uid,
					    const char *domain);

/**
 * Append to `out` one plain sentence saying why a follower waits: `why` with
 * the leader pod's name, its Node's name and the topology key (each may be
 * NULL where `why` does not use it). Returns 0 or the js_buf error
 * (JS_ETOOLARGE at the buffer's ceiling). Source: upstream #1187.
 */
JS_WARN_UNUSED int js_placement_explain(enum js_placement_why why, const char *leader, const char *node,
					const char *topology_key, struct js_buf *out);

#endif
