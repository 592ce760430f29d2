/*
 * fromapi.h - the timeline of a JobSet on a cluster (picture/timeline.h),
 * rebuilt from what the API server holds: the JobSet (status.restarts,
 * conditions with their times, terminalState), its Jobs (label
 * restart-attempt, creation time), its pods (container start and finish
 * times, exit codes and reasons, phase, label restart-attempt) and the
 * events of all three. `kubectl jobset report` draws it with the local
 * run's renderer (picture/html.h), so a cluster's picture and a local
 * one are the same page.
 *
 * What the API no longer holds is said, never made up:
 * - A restart deletes the Jobs of the attempt that ended, and their pods
 *   with them. Such a pod is rebuilt from its events (its Job's
 *   SuccessfulCreate and SuccessfulDelete, its own Started and Killing
 *   when a kubelet wrote them, its Job's failure): its row is marked
 *   "from events", its phases "not recorded" unless a start was recorded,
 *   and a failure's exit code as not recorded. Events expire (the API
 *   server's --event-ttl, 1 h by default); once they have, a pod position
 *   of an older attempt gets a "no record" row spanning its attempt.
 * - A restart whose event expired is placed at its attempt's first Job's
 *   creation (an upper bound), its reason "not recorded".
 * - The phase totals and goodput are not computed: the status keeps only
 *   each condition's last transition, so how long earlier attempts were
 *   pending, running or restarting is not recorded anywhere the API
 *   serves. The page says so, with the current phase as core/phase reads
 *   the JobSet (js_phase_observe) and the metrics that count them live.
 * - Object times (creationTimestamp, startedAt, finishedAt) are whole
 *   seconds; only event times have fractions.
 *
 * Pure: works on the JSON as read (garbage or missing fields are skipped,
 * never trusted), no I/O, no clock. Thread-safe.
 */
#ifndef JS_FROMAPI_H
#define JS_FROMAPI_H

#include <jansson.h>
#include <stdint.h>

#include "base/common.h"
#include "picture/timeline.h"

/* Rows of "no record" (an older attempt's pod position with nothing left)
 * drawn at most; past this the page says how many more. */
#define JS_FROMAPI_MAX_NO_RECORD 2000

/** What the API returned about one JobSet. Every pointer is borrowed. */
struct js_fromapi_input {
	const json_t *jobset;       /* the JobSet object */
	const json_t *jobs;         /* array of Job objects (its, by label); may be NULL */
	const json_t *pods;         /* array of Pod objects (its, by label); may be NULL */
	const json_t *events;       /* array of events.k8s.io/v1 Events of its
				       namespace (filtered here), or NULL when
				       they could not be read */
	const char *events_error;   /* why events is NULL (the server's words), or NULL */
	int64_t now_ms;             /* when they were read (Unix ms): the end of
				       a JobSet still running */
};

/**
 * Build the timeline of in->jobset from the objects in `in` (origin
 * JS_TIMELINE_CLUSTER, with the notes of what it cannot show). Returns 0
 * and *ret_t (free with js_timeline_free), or JS_EINVALID, *ret_t
 * untouched, when in->jobset is not an object with metadata.name.
 */
JS_WARN_UNUSED int js_fromapi_timeline(const struct js_fromapi_input *in, struct js_timeline **ret_t);

#endif
