/*
 * mounts.h - a container's volume mounts in process mode: where the
 * kubelet hands a runtime a list of mounts for the container's own root
 * file system, a local container shares the machine's, so this module
 * plans how to lay each volume over it inside the container's private
 * mount namespace without ever changing the machine's directories.
 *
 * The rule (docs/local.md, "Volumes"): a mount target that exists is
 * bind-mounted over. A target that does not exist must not be created on
 * the machine, so the deepest directory A above it that exists is replaced,
 * in the container's namespace only, by a replica: a tmpfs holding, for
 * each entry of A, an empty directory or file with the original
 * bind-mounted onto it (recursively: mounts below come along) or a copy of
 * the symbolic link; the missing directories are then made in the tmpfs.
 * When A is `/`, the replica becomes the container's root (moved over `/`
 * and entered with chroot); otherwise it is moved onto A. The replica is
 * built at a scratch directory that exists on the machine and stays empty
 * there, and is unbindable while it is built, so copying `/` recursively
 * into it never copies it into itself. A target inside another volume is
 * made in that volume's directory, as runc makes mount points inside
 * volumes. Targets are handled parents first (by depth), so a nested
 * mount lands on top.
 *
 * js_mounts_plan reads the machine's directories (lstat, readdir) in the
 * runner; js_mounts_apply replays the plan between clone() and execve():
 * system calls only, on the plan's memory, no allocation, so it is safe in
 * a child of a multi-threaded runner.
 *
 * Not thread-safe; a plan is read-only once made.
 */
#ifndef JS_MOUNTS_H
#define JS_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/common.h"

/* Entries of one directory that a replica copies: a directory with more
 * (a home directory, /usr/lib) is better made a mount target on the
 * machine than copied for every container start. */
#define JS_MOUNTS_MAX_ENTRIES 4096

/** One volume mount of a container. Borrowed for the call. */
struct js_mounts_spec {
	const char *source;   /* a path on the machine (file or directory) */
	const char *target;   /* absolute path in the container */
	bool read_only;
};

struct js_mounts;

/**
 * Plan the mounts `m[0..n)`, with `scratch` (an existing empty directory on
 * the machine) for building replicas. Targets must be absolute, without
 * `..`, not `/`, and distinct. Missing directories inside another volume's
 * source are created now (mkdir -p on that source, as runc would). Returns
 * 0 and *ret (free with js_mounts_free; NULL when n is 0), or JS_EINVALID
 * with *ret_err (caller frees) naming the mount: a bad target, a source that
 * does not exist, a directory source over a file target or the reverse, or
 * a replica of a directory with more than JS_MOUNTS_MAX_ENTRIES entries.
 */
JS_WARN_UNUSED int js_mounts_plan(const struct js_mounts_spec *m, size_t n, const char *scratch,
				  struct js_mounts **ret, char **ret_err);

/** Free a plan. NULL is a no-op. Returns NULL. */
struct js_mounts *js_mounts_free(struct js_mounts *p);

/**
 * Carry out the plan in the calling process, which must be alone in a
 * private mount namespace (MS_PRIVATE on `/` already done). Stops at the
 * first failing step. Async-signal-safe. Returns 0 or -errno. NULL is no
 * work.
 */
int js_mounts_apply(const struct js_mounts *p);

/** True when the plan gives the container a new root (chroot): the caller
 * must then set the working directory itself (js_mounts_apply leaves it at
 * the runner's, inside the new root). */
bool js_mounts_new_root(const struct js_mounts *p);

/** mkdir -p: make `path` and its missing parents with `mode` (before the
 * umask). Returns 0 (also when it exists) or -errno of the first failure. */
JS_WARN_UNUSED int js_mounts_mkdir_p(const char *path, unsigned mode);

/** The plan as text, one step a line ("tmpfs S", "bind A B", ...), for
 * tests and debugging. Caller frees. */
char *js_mounts_dump(const struct js_mounts *p);

#endif
