/*
 * file.h - read a whole file or stream into memory, with a ceiling, so a
 * huge or endless input is refused without being held; replace a whole
 * file atomically, so a reader never sees half of it.
 */
#ifndef JS_FILE_H
#define JS_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/common.h"

/**
 * Read `fd` to its end. At most `max` bytes are kept: one more is an error.
 * Returns 0 and a malloc'd, NUL-terminated *ret (caller frees) with its
 * length in *ret_len; JS_ETOOLARGE past `max`; -errno on a read error.
 * Does not close `fd`.
 */
JS_WARN_UNUSED int js_file_read_fd(int fd, size_t max, char **ret, size_t *ret_len);

/** Open `path` (O_CLOEXEC) and read it as js_file_read_fd does. Extra
 * errors: -errno from open(). */
JS_WARN_UNUSED int js_file_read(const char *path, size_t max, char **ret, size_t *ret_len);

/**
 * Replace `path` with `n` bytes of `data` atomically: they are written to a
 * temporary file next to it (`<path>.tmp.<pid>`) which is then renamed over
 * it, so a reader sees the old contents or the new ones, never a part (no
 * fsync: this is about readers, not power loss). The file is 0644. Returns
 * 0, or -errno from open, write, close or rename (the temporary file is
 * removed).
 */
JS_WARN_UNUSED int js_file_write_atomic(const char *path, const void *data, size_t n);

/**
 * As js_file_write_atomic, with the file's mode exactly `mode` whatever the
 * umask (0600 for keys and certificates), and, with `sync`, the data on disk
 * (fsync) before the rename. A temporary file left by an earlier writer is
 * removed first and never reused, so its mode or owner cannot leak into the
 * result. Errors as js_file_write_atomic, plus -errno from fchmod and fsync.
 */
JS_WARN_UNUSED int js_file_write_atomic_mode(const char *path, const void *data, size_t n, unsigned mode,
					     bool sync);

/**
 * Make directory `path` and any missing parents (mkdir -p): parents get
 * `parent_mode`, the last component `leaf_mode`, exactly (set with chmod
 * after mkdir, so the umask takes nothing away: 0700 means 0700);
 * directories that exist are left as they are.
 * Returns 0, or -errno of the first mkdir(2) that failed for a reason other
 * than EEXIST.
 */
JS_WARN_UNUSED int js_file_mkdir_p(const char *path, unsigned parent_mode, unsigned leaf_mode);

#endif
