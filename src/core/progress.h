/*
 * progress.h - hang detection (the ProgressDeadline gate, ours;
 * docs/progress-deadline.md): given when a pod's containers last started,
 * when its workload last touched its heartbeat file, the deadline and the
 * startup allowance, is the pod still making progress, and when must it be
 * looked at again?
 *
 * The one rule, shared by both bodies: `jobset run` (src/local/watchdog.c)
 * feeds it the heartbeat file's mtime; on a cluster the watcher sidecar
 * (src/agent/beats.h) does the same, and the controller judges the
 * watcher's report again with it (ctrl/hangs.c; docs/progress-deadline.md
 * "On a cluster"). Pure: no I/O, no clock; every time is an argument, in
 * milliseconds on one clock (the bodies use the wall clock, because a
 * file's mtime is on it).
 *
 * Threading: reentrant.
 */
#ifndef JS_CORE_PROGRESS_H
#define JS_CORE_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/common.h"

/** The largest deadline or allowance, in seconds (the annotations' range,
 * api/heartbeat.h): 2^31-1, as Kubernetes' int32 durations. */
#define JS_PROGRESS_MAX_SECONDS INT32_MAX

/** What is known of one pod at `now_ms`. */
struct js_progress_in {
	int64_t start_ms;      /* its watched containers last (re)started */
	bool has_beat;         /* the heartbeat file exists */
	int64_t beat_ms;       /* ... its mtime */
	int64_t deadline_s;    /* longest silence between heartbeats,
				  1..JS_PROGRESS_MAX_SECONDS */
	int64_t startup_s;     /* from start to the first heartbeat, same
				  range */
	int64_t now_ms;
};

/** The verdict. */
enum js_progress_verdict {
	JS_PROGRESS_OK,        /* within its deadline: look again at next_ms */
	JS_PROGRESS_EXCEEDED,  /* silent for longer than allowed */
};

struct js_progress_out {
	enum js_progress_verdict verdict;
	bool first;            /* no heartbeat since the start counted: the
				  startup allowance applied */
	int64_t last_ms;       /* the heartbeat counted (or the start when
				  `first`): the silence began here */
	int64_t due_ms;        /* the last instant allowed: last_ms + the
				  allowance, saturated */
	int64_t next_ms;       /* OK: the first instant the pod could be over
				  its deadline (due_ms + 1, saturated), or,
				  before the first heartbeat, over the
				  deadline of a heartbeat that came at now_ms
				  (now_ms + deadline + 1, when sooner): the
				  caller, who does not see heartbeats come,
				  looks again then, or earlier */
	int64_t late_ms;       /* EXCEEDED: now_ms - due_ms (> 0, saturated) */
};

/**
 * Decide whether a pod is over its progress deadline at in->now_ms.
 *
 * A heartbeat older than start_ms was written by an earlier run of the
 * containers (a restart keeps the file) and does not count; one later than
 * now_ms (a clock stepped back) counts as now_ms, so a clock step can
 * delay a verdict but never cause one. The silence is allowed up to and
 * including deadline_s (startup_s before the first heartbeat): EXCEEDED
 * only when now_ms > due_ms. Every sum saturates at the int64 bounds, so
 * extreme times and a deadline of 2^31-1 s never wrap.
 *
 * Returns 0 and fills *ret, or JS_EINVALID (and *ret untouched) when
 * deadline_s or startup_s is outside 1..JS_PROGRESS_MAX_SECONDS.
 */
JS_WARN_UNUSED int js_progress_check(const struct js_progress_in *in, struct js_progress_out *ret);

#endif
