/*
 * recorder.h - an event recorder writing events.k8s.io/v1 Events about
 * objects ("regarding"), as client-go's tools/events recorder.
 *
 * Each call creates an Event named "<object name>.<hex wall-clock ns>" in
 * the object's namespace ("default" for cluster-scoped objects). Repeats of
 * the same (object uid, type, reason, action, note) within 6 minutes are
 * folded into the first Event's `series` (count, lastObservedTime) with a
 * merge patch instead of a new object, which is what keeps a failing
 * reconcile loop from flooding etcd. The note is cut to 1 KiB, the API
 * limit.
 *
 * Threading: thread-safe; the calls block on the API like every client verb.
 */
#ifndef JS_RECORDER_H
#define JS_RECORDER_H

#include <jansson.h>

#include "base/common.h"
#include "kube/client.h"

struct js_recorder;

struct js_recorder_opts {
	const char *controller; /* reportingController, e.g. "jobset.sigs.k8s.io/jobset-controller"; required */
	const char *instance;   /* reportingInstance, e.g. the pod name; required */
};

/** Create. Copies the options. Returns 0 or JS_EINVALID. */
JS_WARN_UNUSED int js_recorder_new(struct js_client *c, const struct js_recorder_opts *opts,
				   struct js_recorder **ret);

/** Free. NULL is a no-op. Returns NULL. */
struct js_recorder *js_recorder_free(struct js_recorder *r);

/**
 * Record an event about `regarding` (an object with apiVersion, kind and
 * metadata). `type` is "Normal" or "Warning"; `reason` and `action` are
 * UpperCamelCase words; the note is printf-formatted. Returns 0, JS_EINVALID
 * for a bad type or missing fields, or a client error code.
 */
JS_WARN_UNUSED int js_recorder_eventf(struct js_recorder *r, const json_t *regarding, const char *type,
				      const char *reason, const char *action, const char *fmt, ...)
	JS_PRINTF(6, 7);

#endif
