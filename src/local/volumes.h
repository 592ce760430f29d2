/*
 * volumes.h - a pod's volumes on this machine, as the kubelet's volume
 * manager prepares them, and each container's volumeMounts as a mount
 * plan (local/mounts.h).
 *
 * Where each kind of volume lives (docs/local.md, "Volumes"):
 *  - emptyDir: <run-dir>/pods/<pod>/<volume>, made with the pod and removed
 *    once the pod is terminal and its processes are gone (medium Memory is
 *    a directory too; sizeLimit is not enforced);
 *  - hostPath: the path itself, checked against `type` (DirectoryOrCreate
 *    and FileOrCreate create it, as the kubelet does);
 *  - persistentVolumeClaim: <run-dir>/volumes/<claimName>, made when first
 *    needed (claims of volumeClaimPolicies are made by the run when the core
 *    asks, CreatePVC) and kept, or removed at the end of the run by the
 *    retention policy (js_volumes_retain);
 *  - configMap and secret: the object's keys (or `items`) written as files
 *    under <run-dir>/pods/<pod>/<volume> with defaultMode or the item's mode,
 *    from the manifest's ConfigMaps and Secrets (local/objects.h), always
 *    mounted read-only.
 * Other kinds (downwardAPI, projected, csi, ...) are refused before the run
 * starts (js_volumes_check).
 *
 * Not thread-safe: the runner's thread.
 */
#ifndef JS_VOLUMES_H
#define JS_VOLUMES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "api/jobset.h"
#include "base/common.h"
#include "local/mounts.h"
#include "local/objects.h"

struct js_volumes_pod;

/**
 * Check a PodTemplateSpec's volumes and every container's volumeMounts and
 * env/envFrom references against `objects` before anything starts: known
 * volume kinds only, unique volume names, every mount naming a volume, an
 * absolute mountPath used once per container, a relative subPath without
 * `..`, ConfigMaps, Secrets and keys that exist unless marked optional.
 * Returns 0, or JS_EINVALID with *ret_err (caller frees) naming the
 * container or volume.
 */
JS_WARN_UNUSED int js_volumes_check(const json_t *tmpl, const struct js_objects *objects, char **ret_err);

/**
 * Prepare the volumes of a new pod: make emptyDir and claim directories,
 * write configMap and secret files, check hostPath types. `run_dir` holds
 * pods/ and volumes/. Returns 0 and *ret (free with js_volumes_pod_free),
 * or JS_EINVALID with *ret_err (caller frees) when a volume cannot be
 * prepared (a hostPath of the wrong type, a file that cannot be written).
 */
JS_WARN_UNUSED int js_volumes_pod_new(const json_t *pod_spec, const char *run_dir, const char *pod_name,
				      const struct js_objects *objects, struct js_volumes_pod **ret,
				      char **ret_err);

/** Remove what belongs to the pod alone (its directory under pods/:
 * emptyDirs, configMap and secret files). Idempotent; NULL is a no-op. */
void js_volumes_pod_release(struct js_volumes_pod *v);

/** Free (without removing anything). NULL is a no-op. Returns NULL. */
struct js_volumes_pod *js_volumes_pod_free(struct js_volumes_pod *v);

/**
 * The mount plan of container `ctr` (its volumeMounts) over the pod's
 * volumes, built with `scratch` (mounts.h). subPaths that do not exist are
 * made in the volume, as the kubelet does. Returns 0 and *ret (NULL when
 * the container mounts nothing), or JS_EINVALID with *ret_err (caller
 * frees).
 */
JS_WARN_UNUSED int js_volumes_ctr_mounts(const struct js_volumes_pod *v, const json_t *ctr, const char *scratch,
					 struct js_mounts **ret, char **ret_err);

/** A container's volumeMounts as bind mounts of directories (or files) of
 * this machine: what container mode hands the runtime. */
struct js_volumes_binds {
	size_t n;
	struct js_mounts_spec *specs; /* their sources point into `sources` */
	char **sources;
};

/** The binds of container `ctr` over the pod's volumes (subPaths made as
 * for js_volumes_ctr_mounts). Returns 0 and fills *ret (release with
 * js_volumes_binds_done), or JS_EINVALID with *ret_err (caller frees). */
JS_WARN_UNUSED int js_volumes_ctr_binds(const struct js_volumes_pod *v, const json_t *ctr,
					struct js_volumes_binds *ret, char **ret_err);

/** Free what a js_volumes_binds holds and zero it. */
void js_volumes_binds_done(struct js_volumes_binds *b);

/** True when container `ctr` has volumeMounts. */
bool js_volumes_ctr_has_mounts(const json_t *ctr);

/**
 * The end of a run: the JobSet goes away with it, so claims that
 * volumeClaimPolicies made with retentionPolicy.whenDeleted Delete go too
 * (their directories under <run_dir>/volumes are removed), as the garbage
 * collector would remove PVCs owned by a deleted JobSet; Retain claims and
 * claims the JobSet does not own stay. `made` lists the claims the run
 * made. Returns the number of claims removed; *ret_err (caller frees, may be
 * NULL) names the first one that could not be removed.
 */
size_t js_volumes_retain(const struct js_jobset *js, const char *run_dir, const char *const *made, size_t n_made,
			 char **ret_err);

/** Remove `path` and everything below it without following symbolic links
 * or crossing into other file systems. Returns 0 (also when it does not
 * exist) or -errno. */
int js_volumes_rmtree(const char *path);

#endif
