/*
 * beats.h - `in-place-restart-agent --watch-progress`: hang detection's
 * watcher on a cluster (gate ProgressDeadline; docs/progress-deadline.md
 * "On a cluster"), the sidecar the pod webhook gives a pod with a progress
 * deadline (webhook/watcher.c).
 *
 * It judges the heartbeat file's mtime with core/progress.h, the rule
 * `jobset run` applies, sleeping until the first instant the pod could be
 * late (no polling). Over the deadline it writes its report
 * (api/heartbeat.h js_heartbeat_report_format) to its termination-message
 * file and exits with JS_HEARTBEAT_EXIT_EXCEEDED: the kubelet carries both
 * into the pod's status, where the controller reads them (ctrl/hangs.c).
 * No API credentials, no network.
 *
 * The workload's start is taken as the watcher's own start: it is the
 * last init container, so the regular containers start right after it.
 * The controller judges again with the start the kubelet reports, so an
 * early start here can delay a verdict (a slow image pull), never cause
 * a wrong one.
 *
 * Environment: JOBSET_PROGRESS_FILE, JOBSET_PROGRESS_DEADLINE_SECONDS
 * (required), JOBSET_PROGRESS_STARTUP_SECONDS (default: the deadline),
 * JOBSET_PROGRESS_REPORT (default /dev/termination-log, the kubelet's
 * default terminationMessagePath).
 */
#ifndef JS_BEATS_H
#define JS_BEATS_H

#include <stdarg.h>

#include "base/common.h"

/**
 * Watch until the pod is over its deadline or a signal (SIGTERM, SIGINT)
 * comes. Returns the process's exit status: JS_HEARTBEAT_EXIT_EXCEEDED
 * having written the report, 0 on a signal, 1 for a configuration error
 * or a report that could not be written (said on stderr: this is main's
 * body, not library code).
 */
int js_beats_run(void);

/** One line on stderr: a UTC timestamp (RFC 3339, seconds), `who`, ": ",
 * then `fmt` formatted with `ap`. The agent's log format, shared by the
 * in-place restart agent and the progress watcher; nothing to free. */
void js_agent_vlogf(const char *who, const char *fmt, va_list ap) JS_PRINTF(2, 0);

#endif
