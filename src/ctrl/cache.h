/*
 * cache.h - what the controller's informers keep, and which changes are
 * worth a reconcile (issue 9: decode once at ingest, react only to what
 * changed).
 *
 * Each informer of the controller has a record type (kube/store.h) whose
 * transform runs once per received object; the object's JSON is freed right
 * after, so the caches hold only:
 *
 *   JobSets   struct js_cache_jobset: the decoded JobSet (what the core
 *             reconciles), its key and resourceVersion, and the raw status
 *             (the base of the status write's merge patch and of change
 *             detection). The rest of the JSON is not kept.
 *   Jobs      the core's js_obsjob records (core/job.h): only the fields
 *             the core reads; the pod template is not kept.
 *   Services, PVCs
 *             struct js_cache_child: existence, plus the key of the JobSet
 *             the object belongs to (for the event handlers).
 *   Pods      (gate InPlaceRestart only) struct js_cache_pod: what the
 *             in-place restart bookkeeping reads (SPEC §11.16).
 *   Pod metadata
 *             (restart cleanup "direct", ctrl/oldpods.c) struct
 *             js_cache_metapod: the non-terminal JobSet pods as
 *             PartialObjectMetadata, only what the restart cleanup reads.

 *   Pods of exclusive placement (--exclusive-placement=gates) struct
 *             js_cache_xpod: what the placement decisions read
 *             (ctrl/placement.c, core/placement.h).
 *
 * Change filters (pure) decide which updates enqueue their JobSet; the
 * informer already drops updates whose records its type's same() finds
 * equal.
 *
 * Records are immutable and reference-counted (atomically); any thread may
 * read them.
 */
#ifndef JS_CACHE_H
#define JS_CACHE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/jobset.h"
#include "core/job.h"
#include "core/placement.h"
#include "core/policy.h"
#include "kube/store.h"

/** A cached JobSet. Read-only; the reference count is private. */
struct js_cache_jobset {
	const char *key;            /* "namespace/name" */
	const char *rv;             /* metadata.resourceVersion ("" when absent) */
	const char *uid;            /* metadata.uid, or NULL */
	const struct js_jobset *js; /* decoded leniently; NULL when it does not decode */
	const char *error;          /* why js is NULL (first decode problem) */
	const json_t *status;       /* the raw status object, or NULL */
	const json_t *labels;       /* metadata.labels, or NULL */
	const json_t *annotations;  /* metadata.annotations, or NULL */
	bool deleting;              /* metadata.deletionTimestamp set */
	bool has_generation;
	int64_t generation;
	/* The failure policy's message patterns compiled (core/policy.h), for
	 * the core to borrow; NULL when js is NULL. Compiled once per
	 * generation: the records of later resourceVersions of the same
	 * incarnation and generation share it. */
	const struct js_policy *policy;
};

/** A cached Service or PVC: it exists, and belongs to `jobset_key`. */
struct js_cache_child {
	const char *jobset_key; /* "namespace/name" of the JobSet it is for, or NULL */
};

/** A cached JobSet pod (gate InPlaceRestart, ctrl/inplace.c). */
struct js_cache_pod {
	const char *jobset_key;    /* "<namespace>/<jobset-name label>", or NULL */
	const char *name;          /* metadata.name */
	const char *attempt;       /* annotation jobset.sigs.k8s.io/in-place-restart-attempt, or NULL */
	bool failed;               /* status.phase Failed */
	int32_t max_restart_count; /* largest restartCount of its init and regular containers */
};

/** A non-terminal JobSet pod, from its metadata only (ctrl/oldpods.c). */
struct js_cache_metapod {
	const char *jobset_key; /* "<namespace>/<jobset-name label>", or NULL */
	const char *jobset_uid; /* label jobset.sigs.k8s.io/jobset-uid, or NULL */
	const char *name;       /* metadata.name */
	const char *job_name;   /* label batch.kubernetes.io/job-name (else
				   job-name), or NULL */
	const char *attempt;    /* label jobset.sigs.k8s.io/restart-attempt, or NULL */
	bool deleting;          /* metadata.deletionTimestamp set */
};

/** The index of the pod caches by JobSet: "<namespace>/<value of the
 * jobset-name label>" (none without the label). */
#define JS_CACHE_INDEX_POD_JOBSET "jobset"
void js_cache_index_pod_jobset(const json_t *obj, js_store_emit_fn *emit, void *ctx);

/**
 * A cached pod of exclusive placement (ctrl/placement.c). Every field is
 * what the pod says now, and any of them may be absent or of another JSON
 * type than the API's (anyone allowed to edit the pod can remove or change
 * it): absent strings are NULL, a field of the wrong type counts as absent.
 * Nothing here says which topology key the pod follows: that comes from the
 * JobSet (js_placement_topology), never from the pod's own annotation.
 */
struct js_cache_xpod {
	const char *ns, *name, *uid; /* metadata */
	const char *owner_uid;       /* uid of the controller ownerReference (its Job) */
	const char *owner_name;      /* name of that reference */
	const char *index;           /* annotation batch.kubernetes.io/job-completion-index */
	const char *node;            /* spec.nodeName */
	const json_t *node_selector; /* spec.nodeSelector when an object, else NULL (a copy) */
	const char *topology;        /* annotation alpha.jobset.sigs.k8s.io/exclusive-topology
					when a string, else NULL: read only for
					a Job no JobSet owns (ctrl/placement.c) */
	bool terminal;               /* status.phase Succeeded or Failed */
	bool succeeded;              /* status.phase Succeeded */
	bool deleting;               /* metadata.deletionTimestamp set (not null) */
	int gate_at;                 /* index of JS_GATE_EXCLUSIVE_PLACEMENT in
					spec.schedulingGates, -1 none */
	bool elected;                /* annotation JS_ANN_PLACEMENT_LEADER is
					JS_ANN_PLACEMENT_LEADER_ELECTED */
};

/** JobSets: transform decodes (lenient, managedFields dropped) and compiles
 * the failure policy's patterns, or (transform_from) shares them with the
 * stored record of the same uid and generation; same() compares every
 * field of struct js_cache_jobset except rv and policy. */
extern const struct js_store_type js_cache_jobset_type;

/** Jobs: the core's records (js_job_from_json, js_job_ref/unref,
 * js_job_same). */
extern const struct js_store_type js_cache_job_type;

/** Services: jobset_key from the controller owner reference (a JobSet),
 * else the jobset-name label. same() compares jobset_key. */
extern const struct js_store_type js_cache_service_type;

/** PVCs: jobset_key from the jobset-name label (SPEC §8 labels every PVC it
 * creates so). same() compares jobset_key. */
extern const struct js_store_type js_cache_pvc_type;

/** JobSet pods: struct js_cache_pod. same() compares every field, so a
 * pod's other status updates (conditions, heartbeats) are not events. */
extern const struct js_store_type js_cache_pod_type;

/** JobSet pods as PartialObjectMetadata: struct js_cache_metapod. same()
 * compares every field, so the pod's status changes (which a metadata
 * watch still delivers, as new resourceVersions) are not events. */
extern const struct js_store_type js_cache_metapod_type;

/** Pods of exclusive placement: struct js_cache_xpod. same() compares
 * every field, so status heartbeats of a running pod are not events. */
extern const struct js_store_type js_cache_xpod_type;

/**
 * The placement decisions' view of `p` (core/placement.h) when its Job's
 * pods follow the topology key `key` (from the JobSet; NULL while unknown:
 * then the pod has no selector). Strings are borrowed from `p` and `key`.
 */
struct js_placement_pod js_cache_xpod_view(const struct js_cache_xpod *p, const char *key);

/** What our last status write of a JobSet was, for the change filter. */
struct js_cache_written {
	const char *rv;       /* resourceVersion the write returned, or NULL
				 (not answered yet, or failed) */
	const json_t *status; /* the status we asked for (full, encoded), or NULL */
};

/**
 * The JobSet change filter (issue 9, deliver 2): true when an update from
 * `old` to `cur` changes something the reconcile reads - uid, generation
 * (the spec), labels, annotations, deletionTimestamp, whether it decodes -
 * or changes the status in a way the next pass must see. `w` (NULL: no
 * write yet) says what we wrote last. An update carrying the
 * resourceVersion that write returned, or a status equal to the one we
 * asked for (the echo can arrive before the write's answer), is our own
 * write: it starts no pass when it changed only the replicatedJobsStatus
 * counters, which every pass recomputes from the Jobs - the common case
 * while Jobs start. Our writes of conditions, restarts, the terminal state
 * or per-Job restart counts do start one: the core acts on them in the
 * next pass (a restart deletes the old attempt once restarts has grown).
 */
bool js_cache_jobset_changed(const struct js_cache_jobset *old, const struct js_cache_jobset *cur,
			     const struct js_cache_written *w);

/** The record of a JobSet cache read as the JobSet type. */
static inline const struct js_cache_jobset *js_cache_jobset_of(const void *rec)
{
	return rec;
}

#endif
