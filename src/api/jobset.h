/*
 * jobset.h - the jobset.x-k8s.io/v1alpha2 JobSet API as C types (SPEC.md §3).
 *
 * Plain data: every field is public. Optional scalars carry a `has_` flag
 * (zero never means "unset"); optional strings are NULL when absent; optional
 * objects are pointers, NULL when absent; lists carry their count and a
 * `has_` flag so that an explicit empty list (`dependsOn: []`) differs from
 * an absent one (SPEC §5.3 V2 depends on that).
 *
 * Kubernetes objects that JobSet embeds but does not own (the batch/v1
 * JobTemplateSpec of a ReplicatedJob, PersistentVolumeClaim templates, most of
 * ObjectMeta) are kept as jansson trees, verbatim, so nothing a user wrote is
 * lost on the way to the API server. api/template.h reads the handful of their
 * fields that JobSet logic needs.
 *
 * Every struct is owned by the js_jobset it hangs off; js_jobset_free()
 * releases the whole tree. The codec (api/codec.h) converts to and from JSON.
 * Not thread-safe; a js_jobset has one owner at a time.
 */
#ifndef JS_JOBSET_H
#define JS_JOBSET_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Resource identity (SPEC §1) ---- */
#define JS_API_GROUP "jobset.x-k8s.io"
#define JS_API_VERSION "jobset.x-k8s.io/v1alpha2"
#define JS_KIND "JobSet"
#define JS_GROUP "jobset.x-k8s.io"

/* ---- Keys (SPEC §2) ---- */
#define JS_LABEL_JOBSET_NAME "jobset.sigs.k8s.io/jobset-name"
#define JS_LABEL_JOBSET_UID "jobset.sigs.k8s.io/jobset-uid"
#define JS_LABEL_RJOB_NAME "jobset.sigs.k8s.io/replicatedjob-name"
#define JS_LABEL_RJOB_REPLICAS "jobset.sigs.k8s.io/replicatedjob-replicas"
#define JS_LABEL_GLOBAL_REPLICAS "jobset.sigs.k8s.io/global-replicas"
#define JS_LABEL_JOB_INDEX "jobset.sigs.k8s.io/job-index"
#define JS_LABEL_JOB_GLOBAL_INDEX "jobset.sigs.k8s.io/job-global-index"
#define JS_LABEL_JOB_KEY "jobset.sigs.k8s.io/job-key"
#define JS_LABEL_GROUP_NAME "jobset.sigs.k8s.io/group-name"
#define JS_LABEL_GROUP_REPLICAS "jobset.sigs.k8s.io/group-replicas"
#define JS_LABEL_JOB_GROUP_INDEX "jobset.sigs.k8s.io/job-group-index"
#define JS_LABEL_RESTART_ATTEMPT "jobset.sigs.k8s.io/restart-attempt"
#define JS_LABEL_JOB_RESTART_ATTEMPT "jobset.sigs.k8s.io/job-restart-attempt"
#define JS_LABEL_COORDINATOR "jobset.sigs.k8s.io/coordinator"
#define JS_LABEL_PRIORITY "jobset.sigs.k8s.io/priority"
#define JS_ANN_EXCLUSIVE_TOPOLOGY "alpha.jobset.sigs.k8s.io/exclusive-topology"
#define JS_ANN_NODE_SELECTOR "alpha.jobset.sigs.k8s.io/node-selector"
#define JS_NODE_SELECTOR_NAMESPACED_JOB "alpha.jobset.sigs.k8s.io/namespaced-job"
#define JS_TOLERATION_NO_SCHEDULE "alpha.jobset.sigs.k8s.io/no-schedule"
#define JS_ANN_IN_PLACE_RESTART_ATTEMPT "jobset.sigs.k8s.io/in-place-restart-attempt"
#define JS_ANN_DISABLE_IN_PLACE_RESTART "jobset.sigs.k8s.io/disable-in-place-restart"
/* KEP-1282: the execution attempt a Job (and its pods) belongs to, on the
 * Job and its pod template (gate ExecutionAttemptsTracking). */
#define JS_ANN_EXECUTION_ATTEMPT "jobset.sigs.k8s.io/execution-attempt"
/* Ours, not upstream's (docs/differences.md "Restart on request"): a
 * whole-JobSet restart asked for by a user (`kubectl jobset restart`). The
 * value is the status.restarts the requester saw, i.e. the attempt it wants
 * ended; once status.restarts has moved past it the request is spent. */
#define JS_ANN_RESTART_REQUEST "jobset.sigs.k8s.io/restart-request"
#define JS_MANAGED_BY_SELF "jobset.sigs.k8s.io/jobset-controller"
#define JS_ANN_JOB_COMPLETION_INDEX "batch.kubernetes.io/job-completion-index"
/* Exclusive placement through scheduling gates (ours, not upstream's: upstream
 * has no gate; docs/differences.md). The pod webhook puts the label on every
 * pod of an exclusive Job using the affinity strategy, so the controller's pod
 * cache holds those pods only, and the gate on each follower until the
 * controller pins it to its leader's domain. */
#define JS_GATE_EXCLUSIVE_PLACEMENT "jobset.sigs.k8s.io/exclusive-placement"
#define JS_LABEL_EXCLUSIVE_PLACEMENT "jobset.sigs.k8s.io/exclusive-placement"
#define JS_LABEL_EXCLUSIVE_PLACEMENT_VALUE "gated"
/* Put by the controller on the follower it lets lead an exclusive Job
 * that will never have a leader pod again (index 0 finished and its pod
 * gone, and no follower placed to take the domain from; core/placement.h
 * js_placement_elect). Ours; value JS_ANN_PLACEMENT_LEADER_ELECTED. */
#define JS_ANN_PLACEMENT_LEADER "jobset.sigs.k8s.io/exclusive-placement-leader"
#define JS_ANN_PLACEMENT_LEADER_ELECTED "elected"
/* Pod condition written before a follower on the wrong domain is deleted, and
 * its reason (SPEC §2.4, §10). */
#define JS_POD_CONDITION_DISRUPTION_TARGET "DisruptionTarget"
#define JS_REASON_EXCLUSIVE_PLACEMENT_VIOLATION "ExclusivePlacementViolation"
#define JS_MESSAGE_EXCLUSIVE_PLACEMENT_VIOLATION "Pod violated JobSet exclusive placement policy"

/* ---- Enums: each has one string table in api/enums.c ---- */

enum js_success_op {
	JS_SUCCESS_OP__INVALID = -1,
	JS_SUCCESS_OP_ALL, /* "All" */
	JS_SUCCESS_OP_ANY, /* "Any" */
	JS_SUCCESS_OP__COUNT
};

enum js_startup_order {
	JS_STARTUP_ORDER__INVALID = -1,
	JS_STARTUP_ORDER_ANY, /* "AnyOrder" */
	JS_STARTUP_ORDER_IN,  /* "InOrder" */
	JS_STARTUP_ORDER__COUNT
};

enum js_restart_strategy {
	JS_RESTART_STRATEGY__INVALID = -1,
	JS_RESTART_STRATEGY_RECREATE,          /* "Recreate" */
	JS_RESTART_STRATEGY_BLOCKING_RECREATE, /* "BlockingRecreate" */
	JS_RESTART_STRATEGY_IN_PLACE,          /* "InPlaceRestart" */
	JS_RESTART_STRATEGY__COUNT
};

enum js_fp_action {
	JS_FP_ACTION__INVALID = -1,
	JS_FP_ACTION_FAIL_JOBSET,                    /* "FailJobSet" */
	JS_FP_ACTION_RESTART_JOBSET,                 /* "RestartJobSet" */
	JS_FP_ACTION_RESTART_JOBSET_IGNORE_MAX,      /* "RestartJobSetAndIgnoreMaxRestarts" */
	JS_FP_ACTION_RESTART_JOB,                    /* "RestartJob" */
	JS_FP_ACTION_RESTART_JOB_IGNORE_MAX,         /* "RestartJobAndIgnoreMaxRestarts" */
	JS_FP_ACTION__COUNT
};

enum js_depends_status {
	JS_DEPENDS_STATUS__INVALID = -1,
	JS_DEPENDS_STATUS_READY,    /* "Ready" */
	JS_DEPENDS_STATUS_COMPLETE, /* "Complete" */
	JS_DEPENDS_STATUS__COUNT
};

enum js_when_deleted {
	JS_WHEN_DELETED__INVALID = -1,
	JS_WHEN_DELETED_DELETE, /* "Delete" */
	JS_WHEN_DELETED_RETAIN, /* "Retain" */
	JS_WHEN_DELETED__COUNT
};

/** Job failure reasons accepted in onJobFailureReasons (SPEC §2.4). */
enum js_job_failure_reason {
	JS_JOB_FAILURE_REASON__INVALID = -1,
	JS_JOB_FAILURE_REASON_BACKOFF_LIMIT_EXCEEDED,      /* "BackoffLimitExceeded" */
	JS_JOB_FAILURE_REASON_DEADLINE_EXCEEDED,           /* "DeadlineExceeded" */
	JS_JOB_FAILURE_REASON_FAILED_INDEXES,              /* "FailedIndexes" */
	JS_JOB_FAILURE_REASON_MAX_FAILED_INDEXES_EXCEEDED, /* "MaxFailedIndexesExceeded" */
	JS_JOB_FAILURE_REASON_POD_FAILURE_POLICY,          /* "PodFailurePolicy" */
	JS_JOB_FAILURE_REASON__COUNT
};

const char *js_success_op_to_string(enum js_success_op v);
enum js_success_op js_success_op_from_string(const char *s);
const char *js_startup_order_to_string(enum js_startup_order v);
enum js_startup_order js_startup_order_from_string(const char *s);
const char *js_restart_strategy_to_string(enum js_restart_strategy v);
enum js_restart_strategy js_restart_strategy_from_string(const char *s);
const char *js_fp_action_to_string(enum js_fp_action v);
enum js_fp_action js_fp_action_from_string(const char *s);
const char *js_depends_status_to_string(enum js_depends_status v);
enum js_depends_status js_depends_status_from_string(const char *s);
const char *js_when_deleted_to_string(enum js_when_deleted v);
enum js_when_deleted js_when_deleted_from_string(const char *s);
const char *js_job_failure_reason_to_string(enum js_job_failure_reason v);
enum js_job_failure_reason js_job_failure_reason_from_string(const char *s);

/* ---- Lists of scalars ---- */

/** A list of strings; `has` distinguishes `[]` from absent. */
struct js_strlist {
	bool has;
	size_t n;
	char **items;
};

/** True when `s` (NULL: never) is one of the items of `l` (NULL items are
 * skipped). */
bool js_strlist_has(const struct js_strlist *l, const char *s);

/** A list of int32; `has` distinguishes `[]` from absent. */
struct js_i32list {
	bool has;
	size_t n;
	int32_t *items;
};

/* ---- ObjectMeta (the fields JobSet reads; the rest kept verbatim) ---- */

struct js_meta {
	char *name;
	char *generate_name;
	char *namespace_; /* "namespace" */
	char *uid;
	char *resource_version;
	bool has_generation;
	int64_t generation;
	char *creation_timestamp; /* RFC 3339 */
	char *deletion_timestamp; /* RFC 3339 */
	json_t *labels;           /* object of strings, or NULL */
	json_t *annotations;      /* object of strings, or NULL */
	json_t *extra;            /* every other ObjectMeta field, verbatim, or NULL */
};

/* ---- Spec (SPEC §3.2-3.11) ---- */

struct js_depends_on {
	char *name;
	bool has_status;
	enum js_depends_status status;
};

struct js_rjob {
	char *name;
	char *group_name;   /* CRD default "default" */
	json_t *template_;  /* batch/v1 JobTemplateSpec, verbatim ("template") */
	bool has_replicas;  /* CRD default 1 */
	int32_t replicas;
	bool has_depends_on;
	size_t n_depends_on;
	struct js_depends_on *depends_on;
};

struct js_network {
	bool has_enable_dns_hostnames;
	bool enable_dns_hostnames;
	char *subdomain; /* NULL or "" = use the JobSet name */
	bool has_publish_not_ready_addresses;
	bool publish_not_ready_addresses;
};

struct js_success_policy {
	bool has_operator;
	enum js_success_op operator_;
	struct js_strlist target_replicated_jobs;
};

struct js_fp_rule {
	char *name;
	bool has_action;
	enum js_fp_action action;
	struct js_strlist on_job_failure_reasons;
	struct js_strlist on_job_failure_message_patterns;
	struct js_strlist target_replicated_jobs;
};

struct js_failure_policy {
	bool has_max_restarts;
	int32_t max_restarts;
	bool has_restart_strategy;
	enum js_restart_strategy restart_strategy;
	bool has_rules;
	size_t n_rules;
	struct js_fp_rule *rules;
};

struct js_startup_policy {
	bool has_order;
	enum js_startup_order order; /* "startupPolicyOrder" */
};

struct js_coordinator {
	char *replicated_job;
	bool has_job_index;
	int32_t job_index;
	bool has_pod_index;
	int32_t pod_index;
};

struct js_retention_policy {
	bool has_when_deleted;
	enum js_when_deleted when_deleted;
};

struct js_vcp {
	json_t *templates; /* array of core/v1 PersistentVolumeClaim, verbatim, or NULL */
	struct js_retention_policy *retention_policy;
};

struct js_spec {
	bool has_replicated_jobs;
	size_t n_replicated_jobs;
	struct js_rjob *replicated_jobs;
	struct js_network *network;
	struct js_success_policy *success_policy;
	struct js_failure_policy *failure_policy;
	struct js_startup_policy *startup_policy;
	bool has_suspend;
	bool suspend;
	struct js_coordinator *coordinator;
	char *managed_by;
	bool has_ttl_seconds_after_finished;
	int32_t ttl_seconds_after_finished;
	/* KEP-1186 "API Changes": seconds the JobSet may stay continuously
	 * active, from status.startTime (minimum 1; mutable). */
	bool has_active_deadline_seconds;
	int64_t active_deadline_seconds;
	bool has_volume_claim_policies;
	size_t n_volume_claim_policies;
	struct js_vcp *volume_claim_policies;
	json_t *scheduling; /* KEP-969 "scheduling", verbatim object, or NULL;
			       read through api/sched.h */
};

/* ---- Status (SPEC §3.12) ---- */

/** metav1.Condition. */
struct js_condition {
	char *type;
	char *status; /* "True" | "False" | "Unknown" */
	char *reason;
	char *message;
	char *last_transition_time; /* RFC 3339 */
	bool has_observed_generation;
	int64_t observed_generation;
};

struct js_rjob_status {
	char *name;
	int32_t ready, succeeded, failed, active, suspended; /* always emitted */
	struct js_i32list job_restarts;
	struct js_i32list job_restarts_count_towards_max;
};

struct js_status {
	bool has_conditions;
	size_t n_conditions;
	struct js_condition *conditions;
	int32_t restarts; /* always emitted */
	int32_t restarts_count_towards_max; /* omitted when 0 */
	char *terminal_state; /* "Completed" | "Failed" | NULL */
	bool has_replicated_jobs_status;
	size_t n_replicated_jobs_status;
	struct js_rjob_status *replicated_jobs_status;
	bool has_previous_in_place_restart_attempt;
	int32_t previous_in_place_restart_attempt;
	bool has_current_in_place_restart_attempt;
	int32_t current_in_place_restart_attempt;
	/* KEP-1282 "API Changes": execution lifecycles (resumes and whole-JobSet
	 * restarts); absent = never run or gate off. */
	bool has_execution_attempts;
	int32_t execution_attempts;
	/* KEP-1186 "API Changes": when the JobSet last became active (RFC 3339);
	 * NULL while suspended or with the gate off. */
	char *start_time;
};

/* ---- The object ---- */

struct js_jobset {
	char *api_version;
	char *kind;
	struct js_meta meta;
	bool has_spec;
	struct js_spec spec;
	bool has_status;
	struct js_status status;
};

/** Allocate an empty JobSet (apiVersion/kind set). Free with js_jobset_free. */
struct js_jobset *js_jobset_new(void);

/** Free a JobSet and everything it owns. NULL is a no-op. Returns NULL. */
struct js_jobset *js_jobset_free(struct js_jobset *js);

/** Copy (api/codec.c, by the field tables): structs, strings and lists are
 * copied; the verbatim JSON (templates, labels, annotations, unmodelled
 * metadata) is shared by reference, so it must be replaced, never changed in
 * place, in either JobSet (api/defaults.c does so). Caller owns the result
 * (js_jobset_free). */
struct js_jobset *js_jobset_copy(const struct js_jobset *js);

/** Index of the ReplicatedJob named `name`, or -1. */
int js_jobset_find_rjob(const struct js_jobset *js, const char *name);

/** Index of the status entry for ReplicatedJob `name`, or -1. */
int js_jobset_find_rjob_status(const struct js_jobset *js, const char *name);

/** The condition of `type` in status, or NULL. Borrowed. */
const struct js_condition *js_jobset_condition(const struct js_jobset *js, const char *type);

/** True when condition `type` is present with status "True". */
bool js_jobset_condition_true(const struct js_jobset *js, const char *type);

/** Feature gates that change API behaviour (SPEC §12.3). All default off. */
struct js_gates {
	bool restart_job;      /* "RestartJob" */
	bool in_place_restart; /* "InPlaceRestart" */
	bool elastic_jobset;   /* "ElasticJobSet" */
	bool execution_attempts;     /* "ExecutionAttemptsTracking" (KEP-1282) */
	bool mutable_pod_resources;  /* "MutablePodResourcesForSuspendedJobSets"
					(KEP-1150) */
	bool active_deadline;        /* "JobSetActiveDeadlineSeconds" (KEP-1186) */
	bool workload_aware_scheduling; /* "JobSetWorkloadAwareSchedulingAPI" (KEP-969;
					   deprecated alias "WorkloadAwareScheduling") */
	bool progress_deadline;      /* "ProgressDeadline" (ours: hang
					detection, docs/progress-deadline.md) */
	bool node_quarantine;        /* "NodeQuarantine" (ours; docs/node-quarantine.md) */
};

/** How followers of an exclusive Job (affinity strategy) wait for their
 * leader (jobset-controller --exclusive-placement; docs/differences.md). */
enum js_placement_mode {
	/* Ours, the default: the pod webhook gates each follower and the
	 * controller lifts the gate with the leader's domain as nodeSelector. */
	JS_PLACEMENT_GATES = 0,
	/* Upstream's: followers are refused at admission until the leader is
	 * bound, then pinned by the mutating webhook (SPEC §9). */
	JS_PLACEMENT_WEBHOOK,
};

#endif
