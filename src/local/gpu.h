/*
 * gpu.h - NVIDIA GPUs for a local run, as the device plugin hands them to
 * pods on a node: `resources.limits["nvidia.com/gpu"]: N` gives a container
 * N devices of its own out of those present.
 *
 * The inventory is a list of device ids: `--gpus 0,1,...` (ids or UUIDs),
 * else /dev/nvidiaN, else `nvidia-smi -L`. A pod takes the devices its
 * containers ask for when it is created - the regular containers' sum, or
 * the largest init container's if that is more (init containers run one
 * at a time and hand theirs on, as the kubelet's device manager does) - and
 * gives them back once it is terminal and its processes are gone. Each
 * container sees only its own: process mode sets CUDA_VISIBLE_DEVICES and
 * NVIDIA_VISIBLE_DEVICES to them (a container that asks for none gets
 * neither variable), container mode passes them as CDI devices
 * (`--device nvidia.com/gpu=ID`).
 *
 * A JobSet whose pods would need more GPUs at once than exist is refused
 * before anything starts (js_gpu_check). At run time a pod whose devices are
 * still held by pods being stopped (a restart) waits: it is not created
 * until they are given back. No device is ever given to two pods.
 *
 * Not thread-safe: the runner's thread.
 */
#ifndef JS_GPU_H
#define JS_GPU_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/jobset.h"
#include "base/buf.h"
#include "base/common.h"

/* The extended resource name of NVIDIA's device plugin. */
#define JS_GPU_RESOURCE "nvidia.com/gpu"

/* Devices one run may know: more than any one machine holds. */
#define JS_GPU_MAX 256

struct js_gpu;

/**
 * Parse a --gpus list ("0,1,3" or "GPU-uuid,..."): ids of letters, digits,
 * '-' and '_', none twice, at most JS_GPU_MAX; "" or "none" is no GPU.
 * Returns 0 and *ret (free with js_gpu_free), or JS_EINVALID with *ret_err
 * (caller frees).
 */
JS_WARN_UNUSED int js_gpu_parse(const char *arg, struct js_gpu **ret, char **ret_err);

/**
 * The GPUs of this machine: /dev/nvidiaN (ids N, in order), else the
 * indexes `nvidia-smi -L` lists (spawned from $PATH; not found is no GPU).
 * `dev_dir` is "/dev" (a parameter for tests). Returns a new inventory
 * (possibly empty; free with js_gpu_free). Never fails.
 */
struct js_gpu *js_gpu_discover(const char *dev_dir);

/** Free. NULL is a no-op. Returns NULL. */
struct js_gpu *js_gpu_free(struct js_gpu *g);

/** Number of devices in the inventory, and id `i` (borrowed). */
size_t js_gpu_count(const struct js_gpu *g);
const char *js_gpu_id(const struct js_gpu *g, size_t i);

/**
 * GPUs container `ctr` asks for: resources.limits["nvidia.com/gpu"] (a
 * whole number, as an integer or a string; requests, if given, must be the
 * same). Returns 0 and *ret (0 when none), or JS_EINVALID with *ret_err.
 */
JS_WARN_UNUSED int js_gpu_ctr_count(const json_t *ctr, int64_t *ret, char **ret_err);

/** GPUs a pod with spec `pod_spec` holds: max(sum of the regular
 * containers', largest init container's). Returns 0 and *ret, or
 * JS_EINVALID with *ret_err (caller frees) naming the container. */
JS_WARN_UNUSED int js_gpu_pod_count(const json_t *pod_spec, int64_t *ret, char **ret_err);

/**
 * Refuse a JobSet that needs more GPUs at once than `available`: every
 * ReplicatedJob's pods (replicas x parallelism, at most completions) at the
 * same time, except that a ReplicatedJob that must be Complete before
 * another starts (dependsOn, transitively) never runs beside it. Returns 0,
 * or JS_EINVALID with *ret_err (caller frees) giving the count and which
 * pods need how many.
 */
JS_WARN_UNUSED int js_gpu_check(const struct js_jobset *js, size_t available, char **ret_err);

/**
 * Take `n` free devices for pod `pod_id` (lowest ids first). Returns 0 and
 * *ret_devs (a NULL-terminated array of ids borrowed until js_gpu_put or
 * js_gpu_free; NULL for n == 0), or -EBUSY when fewer are free now.
 */
JS_WARN_UNUSED int js_gpu_take(struct js_gpu *g, uint64_t pod_id, int64_t n, const char *const **ret_devs);

/** Devices a take must not give (node quarantine, docs/node-quarantine.md
 * "Locally"): `fn(id, ctx)` true for each device to leave out. */
struct js_gpu_skip {
	bool (*fn)(const char *id, void *ctx);
	void *ctx;
};

/** As js_gpu_take, never giving a device `skip` (may be NULL) leaves out;
 * -EBUSY when fewer of the others are free now. */
JS_WARN_UNUSED int js_gpu_take_except(struct js_gpu *g, uint64_t pod_id, int64_t n, const struct js_gpu_skip *skip,
				      const char *const **ret_devs);

/** Devices `skip` (may be NULL) does not leave out: all, or only the free
 * ones with `free_only`. */
size_t js_gpu_count_except(const struct js_gpu *g, const struct js_gpu_skip *skip, bool free_only);

/** The devices pod `pod_id` was given (still held, or given back since and
 * not given to another pod): at most `max` borrowed ids into `ret`.
 * Returns how many. */
size_t js_gpu_last_held(const struct js_gpu *g, uint64_t pod_id, const char **ret, size_t max);

/** The node a device stands for in node quarantine: "gpu-" and the id,
 * lower-cased, '_' as '-' (a DNS subdomain for every id --gpus accepts),
 * appended to `out`. Returns 0 or the error of js_buf_add. */
JS_WARN_UNUSED int js_gpu_node_name(const char *id, struct js_buf *out);

/** Give back pod `pod_id`'s devices. Returns true when it held any. */
bool js_gpu_put(struct js_gpu *g, uint64_t pod_id);

/** Devices free now. */
size_t js_gpu_free_count(const struct js_gpu *g);

/**
 * The devices of one container out of its pod's `devs` (NULL-terminated):
 * regular containers take consecutive ones from *cursor on (which moves
 * past them), init containers from the first. Returns a NULL-terminated
 * array of borrowed ids (caller frees the array only), or NULL when the
 * container asks for none.
 */
const char **js_gpu_ctr_devices(const json_t *ctr, bool init, const char *const *devs, size_t *cursor);

/** "a,b,c" of a NULL-terminated id list. Caller frees. */
char *js_gpu_join(const char *const *ids);

#endif
