/*
 * podjson.h - a local pod as the core/v1 Pod a kubelet and an API server
 * would show (`kubectl get pod -o json`): metadata with the Job's owner
 * reference, the spec it was made from, and a status with phase,
 * conditions, podIP and a ContainerStatus per container - state running,
 * waiting (PodInitializing, CrashLoopBackOff) or terminated with exitCode,
 * signal, reason (Completed, Error, StartError), message and times, and
 * lastState for a restarted container.
 *
 * What the local runtime adds, so scripts need no second file: metadata
 * annotation `jobset.local/stop` naming why a pod was stopped
 * (JobController, JobFailed, JobDeleted, Runner, Evicted), and status.containerStatuses
 * [].containerID `local://<pid>` for a running container.
 *
 * Pure rendering from js_pod accessors; no I/O. Not thread-safe per pod.
 */
#ifndef JS_PODJSON_H
#define JS_PODJSON_H

#include <jansson.h>
#include <stdbool.h>

#include "local/pod.h"

/* The annotation naming why a pod was stopped (local runtime only). */
#define JS_PODJSON_ANN_STOP "jobset.local/stop"

/**
 * The pod as a core/v1 Pod. With `with_spec` false only apiVersion, kind,
 * metadata and status are rendered (the live state file keeps it small).
 * Returns a new reference (caller json_decref's it); never NULL.
 */
json_t *js_podjson_pod(const struct js_pod *pod, bool with_spec);

/** Every container status of a rendered pod (`pod` as js_podjson_pod made
 * it, or read back from jobs.json or state.json): initContainerStatuses
 * first, then containerStatuses. A new array (json_decref it) whose
 * elements are `pod`'s own. */
json_t *js_podjson_statuses(const json_t *pod);

/** "JobController", "JobFailed", "JobDeleted", "Runner", "Evicted", or NULL for
 * JS_POD_STOP_NONE (static). */
const char *js_podjson_stop_name(enum js_pod_stop stop);

/** core/v1 PodPhase of a jobctl phase: "Pending", "Running", "Succeeded",
 * "Failed" (static). */
const char *js_podjson_phase_name(enum js_jobctl_phase phase);

#endif
