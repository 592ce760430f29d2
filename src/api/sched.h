/*
 * sched.h - gang scheduling of a JobSet (KEP-969, "Workload-Aware
 * Scheduling Integration", gate JobSetWorkloadAwareSchedulingAPI): read and
 * check `spec.scheduling`, decide the PodGroups it stands for, and render
 * the Kubernetes objects that carry them - one scheduling.k8s.io/v1alpha2
 * Workload (Kubernetes 1.36) and one PodGroup per group.
 *
 * Field names are the KEP's (keps/969-WAS-integration): schedulingPolicy,
 * schedulingConstraints, disruptionMode ({single: {}} | {all: {}}) and
 * replicatedJobs[] (targetReplicatedJobs, ...). Our first names - policy,
 * constraints, disruption (Single|All), replicatedJobPolicies[] with
 * targetReplicatedJob - are read as deprecated aliases of them for one
 * release (js_sched_warnings); a block that gives both names of one field
 * is refused.
 *
 * Modes (KEP-969 "Controller Integration"):
 *   - top-level: no replicatedJobs entries and no sequenced startup
 *     (startupPolicyOrder InOrder, or any dependsOn): one group for the whole
 *     JobSet, named after it, Gang by default with minCount = the sum of
 *     parallelism x replicas over all ReplicatedJobs (Basic when asked);
 *   - per-ReplicatedJob: otherwise; one group per replicatedJobs entry,
 *     holding all of its targets, named <jobset>-<target1>-<target2>...,
 *     and one per ReplicatedJob no entry targets, <jobset>-<replicatedJob>
 *     (each shortened with a hash past 63 characters); an entry's fields
 *     override the top-level ones; Gang by default with minCount = the sum
 *     of parallelism x replicas of what the group holds. Sequenced startup
 *     needs this mode: a single group could never reach its minCount while
 *     later Jobs wait for earlier ones.
 *
 * The defaults are applied when the groups are computed, never written back
 * into the JobSet (docs/differences.md).
 *
 * Pure; thread-safe.
 */
#ifndef JS_SCHED_H
#define JS_SCHED_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/jobset.h"
#include "base/common.h"
#include "base/diag.h"

/** The group-template annotation on child Jobs (KEP-969 "Controller
 * Integration": an annotation, not a label). */
#define JS_ANN_SCHED_GROUP_TEMPLATE "scheduling.k8s.io/group-template-name"
/** The API version of the generated Workload and PodGroups (Kubernetes 1.36). */
#define JS_SCHED_API_VERSION "scheduling.k8s.io/v1alpha2"
/** At most this many podGroupTemplates in one Workload (Kubernetes 1.36's
 * WorkloadMaxPodGroupTemplates) and resource claims per group
 * (MaxPodGroupResourceClaims). */
#define JS_SCHED_MAX_TEMPLATES 8
#define JS_SCHED_MAX_CLAIMS 4

enum js_sched_policy {
	JS_SCHED_GANG = 0,
	JS_SCHED_BASIC,
};

/** One PodGroup of the JobSet. */
struct js_sched_group {
	char *name;          /* the PodGroup's name */
	char *template_name; /* its podGroupTemplate in the Workload */
	enum js_sched_policy policy;
	int32_t min_count;   /* Gang only */
	json_t *template_;   /* the Workload's podGroupTemplate entry */
};

/** The groups of one JobSet. Free with js_sched_groups_free. */
struct js_sched_groups {
	bool per_rjob;
	size_t n;
	struct js_sched_group *items;
	size_t n_rjobs; /* spec.replicatedJobs' length */
	int *of_rjob;   /* per ReplicatedJob, the index of its group in items */
};

/**
 * Check `js->spec.scheduling` (the caller checks it is set and the gate is
 * on) against KEP-969's rules - known fields and shapes (the KEP's names,
 * or their deprecated aliases, not both), Basic or Gang, disruptionMode
 * single or all, 1..50 targets per entry naming existing ReplicatedJobs,
 * each targeted once, no per-Job `job` gangs (not implemented), minCount
 * within 1 and the represented pod count, no explicit top-level Gang
 * minCount with sequenced startup, one priorityClassName per group, at
 * most JS_SCHED_MAX_TEMPLATES groups - and compute its groups. Problems go to `diag` (may be NULL) with spec.scheduling field
 * paths. Returns 0 and *ret (caller frees with js_sched_groups_free), or
 * JS_EINVALID (nothing allocated) when anything is wrong. Source: KEP-969
 * "Defaulting", "Validation", "Controller Integration"; the limits are
 * Kubernetes 1.36's (k8s.io/api scheduling/v1alpha2).
 */
JS_WARN_UNUSED int js_sched_groups(const struct js_jobset *js, struct js_diag *diag, struct js_sched_groups **ret);

/**
 * The deprecated field names `js->spec.scheduling` uses, one message each
 * naming the field path and the KEP's name to use instead (for admission
 * warnings and `jobset validate`). Returns a new JSON array of strings
 * (caller json_decref's it), empty when none or when the field is unset.
 */
json_t *js_sched_warnings(const struct js_jobset *js);

/** Free the groups. NULL is a no-op. Returns NULL. */
struct js_sched_groups *js_sched_groups_free(struct js_sched_groups *g);

/** The group that ReplicatedJob `rjob` (an index into spec.replicatedJobs)
 * belongs to, or NULL when there is none. Borrowed from `g`. */
const struct js_sched_group *js_sched_group_of(const struct js_sched_groups *g, size_t rjob);

/** The Workload's name: the JobSet's (KEP-969). Borrowed from `js`. */
const char *js_sched_workload_name(const struct js_jobset *js);

/**
 * The scheduling.k8s.io/v1alpha2 Workload of `js` (controllerRef and owner
 * reference the JobSet, the jobset-name label, every group's template).
 * Returns a new reference (caller json_decref's it). Source: KEP-969
 * "Controller Integration"; fields as Kubernetes 1.36's Workload.
 */
json_t *js_sched_render_workload(const struct js_jobset *js, const struct js_sched_groups *g);

/**
 * The scheduling.k8s.io/v1alpha2 PodGroup of group `i`, pointing at its
 * template in the Workload. Returns a new reference (caller json_decref's
 * it), or NULL when `i` is out of range. Source: KEP-969; fields as
 * Kubernetes 1.36's PodGroup.
 */
json_t *js_sched_render_podgroup(const struct js_jobset *js, const struct js_sched_groups *g, size_t i);

#endif
