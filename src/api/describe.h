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
#include <stdbool.h>
#include <stdint.h>

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

/* ---- events (describe's table, and report's timeline: picture/fromapi.h) ---- */

/**
 * Whether events.k8s.io/v1 Event `event` regards JobSet `jobset`, one of
 * its Jobs or one of its pods: by kind and name, the Jobs and pods listed
 * in `jobs` and `pods` (either may be NULL), and, for those already
 * deleted (an older attempt's, gone at its restart), by the names the
 * JobSet gives them (<jobset>-<rjob>-<i>, pods <job>-<index>-<suffix>).
 * NULL or malformed objects regard nothing.
 */
bool js_describe_event_regards(const json_t *jobset, const json_t *jobs, const json_t *pods, const json_t *event);

/**
 * When `event` last happened, in Unix milliseconds: series.lastObservedTime,
 * deprecatedLastTimestamp, eventTime, else metadata.creationTimestamp (the
 * first that parses; fractions of a second kept). 0 when none does.
 */
int64_t js_describe_event_time_ms(const json_t *event);

/**
 * When `event` first happened, in Unix milliseconds: eventTime,
 * deprecatedFirstTimestamp, else metadata.creationTimestamp. 0 when none
 * parses.
 */
int64_t js_describe_event_first_ms(const json_t *event);

/**
 * An RFC 3339 time ("2026-12-02T15:41:52.123456Z", offsets accepted) as
 * Unix milliseconds, the fraction cut to milliseconds. Returns 0 and *ret,
 * or JS_EINVALID (NULL or malformed).
 */
JS_WARN_UNUSED int js_describe_time_ms(const char *s, int64_t *ret);

#endif
