/*
 * cleanup.h - the restart cleanup: how the Jobs and pods of an older
 * restart attempt go, and when a Job name may be created again (SPEC §6.1,
 * §11.9; upstream #392). Every rule of it lives in cleanup.c: the reconcile
 * pass calls it to delete the old attempt (R7) and before each create; a
 * runtime calls js_cleanup_wants_old_pods, js_cleanup_old_pods_selector and
 * js_cleanup_classify_pod to know which pods to pass in.
 *
 * THE INVARIANT. No two pods of the same hostname from different restart
 * attempts of a JobSet run at once. A pod's hostname is
 * <Job name>-<completion index> and a Job name is the same in every attempt,
 * so it holds when a Job name of the current attempt is never created while
 * a pod of an older attempt of that name may still run (a pod runs until it
 * is Succeeded, Failed or gone; a pod being deleted still runs through its
 * grace period). Why each mode keeps it:
 *
 *  - Foreground (--restart-cleanup=foreground, upstream's): an old Job is
 *    deleted with Foreground propagation, so the API server keeps it, marked
 *    for deletion, until the garbage collector has removed every pod it owns
 *    (the Job controller sets blockOwnerDeletion); a name any observed Job
 *    holds is never created (create.c). Nothing else is needed.
 *  - Direct (the default): old Jobs are deleted in the Background, so their
 *    names are free at once while their pods terminate; we delete those pods
 *    ourselves (DeletePod). A name is created only when
 *      (1) the runtime passed the old-attempt pods (js_cleanup_wants_old_pods
 *          is true whenever the JobSet has restarted and is not finished,
 *          whatever its conditions: a rule that depended on
 *          RestartingJobSet=True let a JobSet suspended mid-restart, which
 *          sets it False, create every free name, and its resume start new
 *          pods beside old ones still in their grace period);
 *      (2) every Job of an older attempt is gone or marked for deletion: the
 *          Job controller creates no pod for a Job marked for deletion, so
 *          from then on no old pod can appear;
 *      (3) when the runtime's view is a watch cache, which can lag a pod the
 *          Job controller created just before its Job went, the view was
 *          confirmed once in this attempt by a quorum LIST made after (2)
 *          held (plan->confirm_old_pods asks for it);
 *      (4) no pod of an older attempt with that Job name (label
 *          batch.kubernetes.io/job-name) runs. A running pod without that
 *          label cannot be placed, so it holds every name.
 *    After (2) and (3) old pods can only go, so a name created under (4)
 *    never meets one later.
 *  - BlockingRecreate: no name is created while any Job of an older attempt
 *    exists (marked or not) or, in direct mode, while any pod of an older
 *    attempt runs, whatever its name (a check of the old Jobs alone is
 *    empty one pass after a Background delete).
 *  - Suspend during a restart, and resume: the rules above do not look at
 *    spec.suspend or the conditions. A Job created while suspended was
 *    created under them, so when it is resumed no old pod of its name runs;
 *    a name still held at the resume is created once its old pods are gone.
 *  - RestartJob (per-Job restarts): the old Job keeps the current
 *    restart-attempt label and is deleted in the Foreground in both modes,
 *    so its name is held by the Job itself, as in Foreground mode.
 *  - In-place restart (§11.16): containers restart inside the same pods, so
 *    no second pod of a hostname exists; a Job that fails under it is
 *    recreated through a whole-JobSet restart under the rules above.
 *  - A finished JobSet creates nothing, so it needs no old pods.
 * A status.restarts someone wrote back to a lower number is restored first
 * (core/status.c): from the highest restart-attempt label among the
 * JobSet's Jobs and, when the runtime passes it, among its running pods
 * (js_reconcile_input.pods_top_attempt), and from the highest count the
 * runtime saw (restarts_seen), so no name is made under the lower attempt
 * while a pod of the higher one runs, even with every Job of that attempt
 * gone (at restarts 0 the old pods are not read at all).
 * Labels edited by users: the controller's cache keeps a pod's Job name
 * and restart attempt from its first sight (ctrl/cache.c), so a pod of an
 * older attempt relabelled as the current one still holds its name.
 * A pod whose jobset-name label a user removed leaves the controller's
 * label-scoped cache as if deleted: the controller holds every old pod that
 * leaves that cache until a GET confirms it gone or terminal
 * (ctrl/holdpods.h), so its name stays held while it runs.
 * Not covered: pods of one attempt replaced by the Job controller (its
 * podReplacementPolicy decides), pods whose labels a user rewrote to pass
 * for another JobSet or before the controller first saw them, pods that
 * left the controller's cache beyond its bound of held pods (logged), and a
 * pod create the Job controller had in flight
 * when its Job was deleted that lands after the confirming LIST: the
 * garbage collector deletes that orphan, and the cache holds its name once
 * it has seen it.
 *
 * Pure, reentrant, no I/O: the runtime lists or watches, the core decides.
 */
#ifndef JS_CLEANUP_H
#define JS_CLEANUP_H

#include <stdbool.h>
#include <stdint.h>

#include "api/jobset.h"
#include "base/buf.h"
#include "base/common.h"

/** A pod of an older restart attempt that is neither Succeeded nor Failed
 * (restart cleanup "direct"), as the runtime passes it in
 * js_reconcile_input.old_pods. */
struct js_oldpod {
	const char *name;
	const char *job_name; /* label batch.kubernetes.io/job-name (else
				 job-name); NULL when absent: the pod then
				 holds every name */
	bool deleting;        /* metadata.deletionTimestamp is set */
	bool attempt_unknown; /* its restart-attempt label is absent or not
				 a number (JS_CLEANUP_POD_UNKNOWN): it holds
				 its name but is not deleted, as it may be of
				 the current attempt */
};

/** What a pod of the JobSet is to the cleanup, by its restart-attempt
 * label (js_cleanup_classify_pod). */
enum js_cleanup_pod_kind {
	JS_CLEANUP_POD_CURRENT, /* of the current attempt: not an old pod */
	JS_CLEANUP_POD_OLD,     /* of another attempt: pass it */
	JS_CLEANUP_POD_UNKNOWN, /* label absent or invalid: pass it with
				   attempt_unknown */
};

/**
 * True when the runtime must pass the pods of older attempts
 * (js_reconcile_input.old_pods, old_pods_known) to this JobSet's reconcile:
 * restart cleanup is direct, the JobSet has restarted (status.restarts > 0)
 * and is not finished. The JobSet's conditions and spec.suspend play no
 * part (invariant, rule (1)). Without them such a pass creates no Job.
 */
bool js_cleanup_wants_old_pods(const struct js_jobset *js, bool cleanup_direct);

/**
 * The label selector of the pods of older restart attempts of `js`: its
 * jobset-uid (else jobset-name) label, and a restart-attempt other than
 * status.restarts (which also matches pods without that label). Runtimes
 * add the field selector status.phase!=Succeeded,status.phase!=Failed.
 * Written to `out`; returns 0, or -ENOMEM.
 */
JS_WARN_UNUSED int js_cleanup_old_pods_selector(const struct js_jobset *js, struct js_buf *out);

/** A pod of `js` whose label jobset.sigs.k8s.io/restart-attempt is
 * `attempt` (NULL when absent): current, old, or unknown (see the enum). */
enum js_cleanup_pod_kind js_cleanup_classify_pod(const struct js_jobset *js, const char *attempt);

#endif
