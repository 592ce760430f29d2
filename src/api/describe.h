/*
 * describe.h - the body of `kubectl jobset describe` (docs/kubectl-jobset.md)
 * as pure functions of the objects the API server returned: the JobSet's
 * policies in words, and the tree ReplicatedJobs -> restart attempts -> Jobs
 * -> pods. Works on the raw JSON (a JobSet that no longer decodes still
 * describes); no I/O, no clock.
 */
#ifndef JS_DESCRIBE_H
#define JS_DESCRIBE_H

#include <jansson.h>

#include "base/buf.h"
#include "base/common.h"

/**
 * Append the "Policies:" section for JobSet object `jobset`: the success
 * policy (spec.successPolicy, SPEC §11.10), the failure policy with its
 * rules and restart budget (spec.failurePolicy, §11.8; restarts counted
 * from status.restartsCountTowardsMax), the startup order and dependsOn
 * (spec.startupPolicy, §11.11-§11.12), and a pending restart request
 * (annotation jobset.sigs.k8s.io/restart-request, docs/differences.md),
 * and node quarantine (docs/node-quarantine.md): its rules and the nodes
 * the current attempt keeps off (from the NodesQuarantined condition).
 * Absent policies are described by their defaults. Returns 0, or
 * JS_ETOOLARGE when `out` is full.
 */
JS_WARN_UNUSED int js_describe_policies(const json_t *jobset, struct js_buf *out);

/**
 * Append the "Replicated Jobs:" tree of `jobset`: for each ReplicatedJob of
 * the spec (in order) its status counters, then each restart attempt seen
 * on its Jobs and pods (label jobset.sigs.k8s.io/restart-attempt; newest
 * first, the one equal to status.restarts marked "current", older ones
 * "previous"), under it each Job name (an attempt's pods whose Job object is
 * gone still show, under "Job NAME (deleted)"), under it each pod with its
 * phase ("Terminating" once deletionTimestamp is set), node and container
 * restarts. `jobs` and `pods` are arrays of Job and Pod objects (the
 * JobSet's, by label jobset.sigs.k8s.io/jobset-name; other entries are
 * ignored); either may be NULL. Returns 0, or JS_ETOOLARGE.
 */
JS_WARN_UNUSED int js_describe_tree(const json_t *jobset, const json_t *jobs, const json_t *pods,
				    struct js_buf *out);

#endif
