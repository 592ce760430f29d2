/*
 * heartbeat.h - what a JobSet says about hang detection (the
 * ProgressDeadline gate, ours; docs/progress-deadline.md): the two
 * annotations, the heartbeat file's environment variable and place, and
 * the settings in effect for one ReplicatedJob.
 *
 * A JobSet states, in metadata.annotations (every ReplicatedJob) or in a
 * ReplicatedJob's template.metadata.annotations (that one only; each key
 * overrides the JobSet's):
 *  - jobset.sigs.k8s.io/progress-deadline-seconds: the longest silence
 *    allowed between two heartbeats, once the first came;
 *  - jobset.sigs.k8s.io/progress-startup-seconds: the allowance from the
 *    containers' start to the first heartbeat (default: the deadline).
 * Both are whole seconds, 1..2^31-1, written as strings (annotations are).
 * The workload beats by touching (updating the mtime of) the file named by
 * $JOBSET_PROGRESS_FILE. What decides is core/progress.h; validation
 * (api/validate.h) refuses the annotations while the gate is off.
 *
 * Pure; thread-safe.
 */
#ifndef JS_HEARTBEAT_H
#define JS_HEARTBEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/jobset.h"
#include "base/common.h"

#define JS_ANN_PROGRESS_DEADLINE "jobset.sigs.k8s.io/progress-deadline-seconds"
#define JS_ANN_PROGRESS_STARTUP "jobset.sigs.k8s.io/progress-startup-seconds"

/** The environment variable naming the heartbeat file in every container
 * of a pod with a deadline. */
#define JS_HEARTBEAT_ENV "JOBSET_PROGRESS_FILE"

/** Where the heartbeat directory is mounted in a container (container
 * mode, and the cluster's emptyDir), and the file's name in it. In process
 * mode the file is on the host, in the run directory. */
#define JS_HEARTBEAT_MOUNT "/run/jobset/progress"
#define JS_HEARTBEAT_FILE "heartbeat"

/** The settings in effect for one ReplicatedJob. */
struct js_heartbeat {
	bool on;             /* a deadline is set */
	int32_t deadline_s;  /* 1..INT32_MAX when on */
	int32_t startup_s;   /* 1..INT32_MAX when on (the deadline if unset) */
};

/**
 * Parse one annotation value: a whole number of seconds from 1 to
 * 2147483647, decimal, nothing else (no sign, blanks or unit). Returns 0
 * and *ret, or JS_EINVALID (NULL `s` too) with *ret untouched.
 */
JS_WARN_UNUSED int js_heartbeat_parse(const char *s, int32_t *ret);

/**
 * The settings in effect for ReplicatedJob `rjob` of `js`: each key from
 * the ReplicatedJob's template.metadata.annotations, else from the
 * JobSet's metadata.annotations. Returns 0 and *ret (ret->on false when
 * no deadline is in effect; a startup allowance alone means nothing), or
 * JS_EINVALID when a value in effect does not parse or `rjob` is out of
 * range (validation reports which; *ret untouched).
 */
JS_WARN_UNUSED int js_heartbeat_of(const struct js_jobset *js, size_t rjob, struct js_heartbeat *ret);

#endif
