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

/* ---- The cluster body (docs/progress-deadline.md "On a cluster") ----
 *
 * The pod webhook (webhook/watcher.c) gives a pod with a deadline an
 * emptyDir volume JS_HEARTBEAT_VOLUME mounted at JS_HEARTBEAT_MOUNT, and a
 * native sidecar JS_HEARTBEAT_WATCHER running `in-place-restart-agent
 * --watch-progress` (src/agent/watch.c), and labels it JS_LABEL_PROGRESS so
 * that the controller's cache of such pods selects it. The watcher has no
 * API credentials: over the deadline it writes a report (below) to its
 * termination-message file and exits with JS_HEARTBEAT_EXIT_EXCEEDED; the
 * kubelet puts both in the pod's status, where the controller
 * (ctrl/hangs.c) reads them, checks them against the JobSet and acts. */

/** The reserved names: the volume and the sidecar container. */
#define JS_HEARTBEAT_VOLUME "jobset-progress"
#define JS_HEARTBEAT_WATCHER "jobset-progress"
/** The label the pod webhook sets on the pods it gave a watcher. */
#define JS_LABEL_PROGRESS "jobset.sigs.k8s.io/progress-watch"
#define JS_LABEL_PROGRESS_VALUE "watched"
/** The watcher's settings (the settings in effect, from the webhook). */
#define JS_HEARTBEAT_ENV_DEADLINE "JOBSET_PROGRESS_DEADLINE_SECONDS"
#define JS_HEARTBEAT_ENV_STARTUP "JOBSET_PROGRESS_STARTUP_SECONDS"
/** The watcher's exit code when it reports a pod over its deadline: not
 * one a crash or a signal gives (1, 2, 126-165). */
#define JS_HEARTBEAT_EXIT_EXCEEDED 86
/** The pod condition type and reason of a stalled pod (both bodies). */
#define JS_HEARTBEAT_CONDITION "ProgressDeadlineExceeded"
/** The longest report: the kubelet keeps 4096 bytes of a termination
 * message. */
#define JS_HEARTBEAT_REPORT_MAX 4096

/** What the watcher reports: the only facts taken from the pod; the
 * settings and the workload's start come from the JobSet and the pod's
 * status, which the workload cannot write. */
struct js_heartbeat_report {
	bool has_beat;     /* the heartbeat file existed */
	int64_t beat_ms;   /* ... its mtime, wall ms on the node's clock */
	int64_t at_ms;     /* when the watcher judged, wall ms on the node's clock */
};

/**
 * The report as the watcher writes it: one JSON object,
 * {"reason":"ProgressDeadlineExceeded","atMs":N[,"heartbeatMs":N],
 * "message":"..."}, `message` (may be NULL) cut so that the whole stays
 * under JS_HEARTBEAT_REPORT_MAX. Caller frees the result.
 */
char *js_heartbeat_report_format(const struct js_heartbeat_report *r, const char *message);

/**
 * Parse a report (a termination message): exactly the object above with
 * the reason, atMs a non-negative integer and heartbeatMs, when present,
 * one too; other members are ignored. Returns 0 and *ret, or JS_EINVALID
 * (NULL, too long, not JSON, wrong reason or types; *ret untouched).
 */
JS_WARN_UNUSED int js_heartbeat_report_parse(const char *s, struct js_heartbeat_report *ret);

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
