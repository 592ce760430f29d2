/*
 * reconcile.h - the JobSet state machine: (JobSet, observed children, now)
 * -> plan. The one brain every body (the Kubernetes controller, the local
 * runtime, the simulator) calls.
 *
 * Level-based and pure: no I/O, no clock, no globals, no logging. The same
 * input always gives the same plan, byte for byte. A runtime observes the
 * world - each child Job as a record (core/job.h) built once when the Job
 * changes, borrowed here - calls js_reconcile_run(), then applies the plan
 * (core/plan.h) with js_exec_apply() (core/exec.h), which keeps the rules:
 *
 *   1. execute the actions in order; on the first failure stop, do NOT write
 *      the status, and retry the key with backoff (SPEC §11.2 "return error");
 *   2. if status_changed, write plan->status (status subresource, carrying
 *      the resourceVersion the input was read at);
 *   3. only after that write succeeded: emit the events in order and add the
 *      metric increments (so a failed write never double counts, SPEC §16.11);
 *   4. reconcile again when anything observed changes - a status write is
 *      such a change (the controller sees it through its watch) - or after
 *      has_requeue_after seconds.
 *
 * Cost: linear in the observed Jobs (they are indexed by name in a hash map;
 * nothing is copied per Job); the plan's scratch memory is one arena.
 *
 * Failures of actions are the runtime's to report, as immediate Warning
 * events (JobCreationFailed, HeadlessServiceCreationFailed,
 * PVCCreationFailed; SPEC §11.7). The JobSet must have a metadata.uid: its
 * children are the Jobs whose controller owner reference carries it.
 *
 * One pass (SPEC §11.2), each step in its own file:
 *
 *   deleting (deletionTimestamp)           -> empty plan              (#561)
 *   default a copy of the JobSet (CRD + webhook defaults)             (#796)
 *   classify children by owner uid          active | succeeded | failed |
 *     previous (older restart attempt)                        (§11.3, #1165)
 *   managedBy another controller            -> only TTL        (R3, #1310)
 *   replicatedJobsStatus                                            (§11.4)
 *   finished (Completed/Failed=True)        -> delete active Jobs, TTL:
 *                                              delete JobSet or requeue
 *                                                           (R6, §11.14, #666)
 *   gate ExecutionAttemptsTracking: start executionAttempts  (KEP-1282 §1)
 *   gate JobSetActiveDeadlineSeconds: startTime set while active,
 *     cleared while suspended                               (KEP-1186)
 *   delete previous-attempt Jobs (Foreground; or, cleanup_direct, in
 *     the Background, with their pods; core/cleanup.h)             (R7, §11.9)
 *   all Jobs ready and not suspended        -> RestartingJobSet=False  (R8)
 *   activeDeadlineSeconds set (gate on): success policy, then the
 *     deadline (past: delete active Jobs, Failed=True DeadlineExceeded;
 *     else requeue at it), then the failure policy          (KEP-1186)
 *   any failed Job                          -> failure policy; stop   (§11.8)
 *      FailJobSet | no policy | budget spent   -> Failed=True (terminal)
 *      RestartJobSet[AndIgnoreMaxRestarts]     -> restarts++, RestartingJobSet
 *        (and executionAttempts++, startTime = now, KEP-1282/1186)
 *      RestartJob[AndIgnoreMaxRestarts]        -> jobRestarts[i]++
 *   success policy satisfied                -> Completed=True; stop  (§11.10)
 *   headless Service, PVCs                                       (§7, §8)
 *   ElasticJobSet: patch parallelism/completions                    (§11.15)
 *   a resume (Suspended=True, spec.suspend false): executionAttempts++
 *     once                                                 (KEP-1282 §2)
 *   create missing Jobs: per name, never beside a pod of an older
 *     attempt (the restart cleanup's guard, core/cleanup.h: its
 *     invariant); dependsOn; InOrder                    (§6.1, §11.11-11.12)
 *     (never while suspended since creation: no Job, no Service, #535)
 *   JobSetWorkloadAwareSchedulingAPI gate and spec.scheduling: create the Workload
 *     and its PodGroups before the Jobs; delete them while suspended
 *     (KEP-969, core/gang.c)
 *   suspend pass | resume pass (clear startTime, merge template; the
 *     execution-attempt annotation, KEP-1282 §4; container resources with
 *     gate MutablePodResourcesForSuspendedJobSets, KEP-1150)   (§11.13)
 *   InPlaceRestart gate: in-place attempt bookkeeping               (§11.16)
 *   NodeQuarantine gate: a whole-JobSet or per-Job restart first asks for
 *     the failed pods (want_failed_pods), then keeps the nodes they blame
 *     off the Jobs made next (plan->quarantine, NodesQuarantined)
 *                                                        (core/avoid.c)
 *     and, while a list applies and a Job has pods not ready, asks for
 *     the pods that wait to be scheduled (want_pending_pods, at most once
 *     per interval): QuarantineLeavesNoRoom                (core/noroom.c)
 *
 * Differences from upstream are listed in docs/differences.md.
 * Not thread-safe per call; separate calls share nothing.
 */
#ifndef JS_RECONCILE_H
#define JS_RECONCILE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/jobset.h"
#include "base/common.h"
#include "core/cleanup.h"
#include "core/job.h"
#include "core/plan.h"
#include "core/policy.h"

/* ---- Input ---- */

/** A pod of the JobSet, read only by the in-place restart step (§11.16,
 * gate InPlaceRestart). Runtimes without that strategy pass none. */
struct js_obspod {
	const char *name;
	bool failed;                     /* phase == Failed */
	int32_t max_restart_count;       /* max restartCount over all init and
					    regular container statuses */
	const char *in_place_attempt;    /* annotation
					    jobset.sigs.k8s.io/in-place-restart-attempt,
					    or NULL */
};

/** A pod of the current attempt that ended badly, read only for node
 * quarantine (gate NodeQuarantine, api/quarantine.h): a pod in phase
 * Failed, or with a container that terminated with a non-zero exit code
 * (state or lastState), or with a condition of status True the JobSet's
 * rules name. The runtime passes them when the plan asked
 * (plan->want_failed_pods). */
struct js_failpod {
	const char *name;
	const char *node;                /* spec.nodeName; NULL: never bound */
	int32_t attempt;                 /* its restart-attempt label */
	const int32_t *exit_codes;       /* non-zero exit codes of its
					    terminated containers */
	size_t n_exit_codes;
	const char *const *conditions;   /* types of its conditions with
					    status True */
	size_t n_conditions;
	bool node_lost;                  /* its node is NotReady or gone */
	/* The Job it belongs to, from its labels (the pod template's, the
	 * same the core reads from the Job, core/job.h): replicatedjob-name,
	 * job-index and job-restart-attempt (NULL when absent; a missing
	 * job-restart-attempt is 0). A per-Job restart (RestartJob) blames
	 * only the pods of the Job it restarts, of that Job's attempt. */
	const char *rjob_name, *job_index, *job_restart_attempt;
};

/** A pod of the current attempt that waits to be scheduled, read only for
 * node quarantine's "no room left" (gate NodeQuarantine, core/noroom.c):
 * a Pending pod whose PodScheduled condition is False. The runtime passes
 * them when the plan asked (plan->want_pending_pods), or, when it has its
 * pods at hand, on every pass. */
struct js_pendpod {
	const char *name;
	int32_t attempt;                 /* its restart-attempt label */
	const char *reason;              /* PodScheduled's reason
					    ("Unschedulable"), or NULL */
	const char *message;             /* the scheduler's message, or NULL */
};

/* Seconds between two reads of the pending pods of one JobSet (core/noroom.c):
 * the scheduler's answer for an unschedulable pod changes only when the
 * cluster does (a node added, a pod gone), so reading more often would
 * mostly read the same answer, and less often would leave the JobSet silent
 * longer after its pods were created. */
#define JS_NOROOM_INTERVAL_S 15

/** Everything one reconcile looks at. All pointers are borrowed. */
struct js_reconcile_input {
	const struct js_jobset *jobset;   /* as read: spec, metadata, status */
	const struct js_obsjob *const *jobs; /* every Job that might be a
					     child (records borrowed for the
					     call, core/job.h); the core keeps
					     those whose controller owner uid
					     is the JobSet's (#1165) */
	size_t n_jobs;
	bool service_exists;              /* the headless Service exists */
	const char *const *pvcs;          /* names of the PVCs that exist */
	size_t n_pvcs;
	bool workload_exists;             /* KEP-969: the JobSet's Workload
					     exists (read only with the gate
					     JobSetWorkloadAwareSchedulingAPI and
					     spec.scheduling set) */
	const char *const *podgroups;     /* names of the JobSet's PodGroups
					     that exist and are not being
					     deleted (likewise) */
	size_t n_podgroups;
	bool sched_deleting;              /* one of them is being deleted
					     (a PodGroup waits for its pods
					     to go: podgroup-protection) */
	const struct js_obspod *pods;     /* only for §11.16 */
	size_t n_pods;
	struct js_gates gates;
	/* Restart cleanup (core/cleanup.h, which states the invariant these
	 * serve; docs/differences.md "Restart without the garbage
	 * collector"). cleanup_direct: the Jobs of an older restart attempt
	 * are deleted in the Background and their pods one by one (DeletePod)
	 * instead of in the Foreground. The runtime then passes the old pods
	 * whenever js_cleanup_wants_old_pods says so. */
	bool cleanup_direct;
	bool old_pods_known;              /* the runtime passed them */
	const struct js_oldpod *old_pods; /* every pod of this JobSet that is
					     neither Succeeded nor Failed and
					     not of the current attempt
					     (js_cleanup_classify_pod) */
	size_t n_old_pods;
	bool old_pods_cached;             /* they come from a watch cache,
					     which enqueues the JobSet when
					     one goes but can lag a new pod;
					     false: from a quorum LIST made
					     for this pass */
	int32_t old_pods_confirmed_attempt; /* with old_pods_cached: the
					       status.restarts at which the
					       runtime last answered
					       plan->confirm_old_pods with a
					       quorum LIST whose pods it
					       keeps in old_pods until its
					       cache has them; any other
					       value: not confirmed */
	/* The highest jobset.sigs.k8s.io/restart-attempt label among the
	 * JobSet's pods that are neither Succeeded nor Failed and carry its
	 * jobset-uid label (each pod's labels as the runtime first saw them);
	 * 0 when there is none or the runtime does not know. A status.restarts
	 * someone wrote back below it is restored to it (core/status.c), so
	 * no Job is made under a lower attempt while such a pod runs, even
	 * when no Job of that attempt is left (core/cleanup.h). */
	int32_t pods_top_attempt;
	/* The highest status.restarts the runtime saw this JobSet (this uid)
	 * carry, in any version its watch delivered; 0 when unknown. Restored
	 * likewise: a counter written back while the old attempt's Jobs are
	 * being replaced (none of the new attempt exists yet, and the pods
	 * are of the old one) would make the old attempt's Jobs again. */
	int32_t restarts_seen;
	/* The JobSet's failure-policy patterns compiled (core/policy.h),
	 * borrowed: a runtime that caches JobSets compiles them once per
	 * generation. NULL: the core compiles them itself, once per pass, when
	 * a Job has failed. */
	const struct js_policy *policy;
	/* Node quarantine (gate NodeQuarantine; docs/node-quarantine.md):
	 * the pods of the current attempt that ended badly, when the runtime
	 * read them because the plan asked (want_failed_pods). A whole-JobSet
	 * restart or a per-Job restart (RestartJob) of a JobSet with
	 * quarantine rules waits for them. */
	bool failed_pods_known;
	const struct js_failpod *failed_pods;
	size_t n_failed_pods;
	/* No room left (core/noroom.c): the pods of the current attempt that
	 * wait to be scheduled, when the runtime read them (pending_pods_known).
	 * pending_pods_read_at: Unix seconds of the runtime's last read of them
	 * for this JobSet (this pass's when known), 0 when it never read them
	 * or passes them on every pass (then nothing is read again after an
	 * interval). The core asks at most once per JS_NOROOM_INTERVAL_S. */
	bool pending_pods_known;
	const struct js_pendpod *pending_pods;
	size_t n_pending_pods;
	int64_t pending_pods_read_at;
	int64_t now;                      /* Unix seconds */
};

/* ---- Output: struct js_plan, core/plan.h ---- */

/* ---- The state machine ---- */

/**
 * Run one reconcile pass (SPEC §11.2) over `in`.
 *
 * Returns 0 and *ret_plan (caller frees with js_reconcile_plan_free) on
 * success. Returns JS_EINVALID when the observed state cannot be
 * reconciled - a child Job with a malformed restart-attempt label (§11.3),
 * a finished JobSet whose finish time is unknown (§11.14) - and then
 * *reterr_msg (if not NULL) receives the message (caller frees); nothing
 * may be written in that case, the runtime retries with backoff.
 */
JS_WARN_UNUSED int js_reconcile_run(const struct js_reconcile_input *in, struct js_plan **ret_plan,
				    char **reterr_msg);

/** Free a plan and everything it owns: its arena (actions, events, their
 * strings), the action bodies, and the JobSet unless it was taken. NULL is a
 * no-op. Returns NULL. */
struct js_plan *js_reconcile_plan_free(struct js_plan *plan);

/** "CreateJob", "DeleteJob", ... (static). */
const char *js_reconcile_action_kind_name(enum js_action_kind k);


/** "Foreground" | "Background" (static). */
const char *js_reconcile_propagation_name(enum js_propagation p);

#endif
