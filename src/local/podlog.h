/*
 * podlog.h - a container's log file, capped and rotated the way the kubelet
 * rotates container logs (containerLogMaxSize, containerLogMaxFiles).
 *
 * The log is `<path>` plus up to max_files - 1 older files `<path>.1` (the
 * newest) to `<path>.<max_files - 1>` (the oldest). No file grows past
 * max_bytes: a write that would cross the cap fills the current file up to
 * it, then the files shift by one (the oldest is dropped), a new `<path>` is
 * started and the rest of the write goes there. So a container's output on
 * disk never exceeds max_bytes * max_files, however much it writes. Lines
 * may be split across two files; `jobset logs` reads them in order.
 *
 * The file is opened for appending: a restarted container continues its
 * predecessor's log (the kubelet keeps one file per restart instead; `jobset
 * logs` shows every attempt, in order). Writes are best effort: a full disk
 * loses log bytes, never the run.
 *
 * Not thread-safe; one owner (the pod).
 */
#ifndef JS_PODLOG_H
#define JS_PODLOG_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

/* The kubelet's defaults (KubeletConfiguration containerLogMaxSize 10Mi,
 * containerLogMaxFiles 5). */
#define JS_PODLOG_DEFAULT_MAX_BYTES (10 * 1024 * 1024)
#define JS_PODLOG_DEFAULT_MAX_FILES 5
/* Bounds of the options: a cap below 1 KiB would rotate on every line; more
 * than 100 files per container is a mistake, not a policy. */
#define JS_PODLOG_MIN_MAX_BYTES 1024
#define JS_PODLOG_MAX_MAX_FILES 100

struct js_podlog;

/**
 * Open (create, or append to) the log at `path`, keeping at most
 * `max_bytes` (>= JS_PODLOG_MIN_MAX_BYTES) per file and `max_files` (1 to
 * JS_PODLOG_MAX_MAX_FILES; 1 = the file is emptied when full) files in all.
 * An existing file over the cap is rotated at the first write. Returns 0
 * and *ret_log (free with js_podlog_free), -EINVAL for out-of-range limits,
 * or -errno from open(2).
 */
JS_WARN_UNUSED int js_podlog_open(const char *path, int64_t max_bytes, int max_files, struct js_podlog **ret_log);

/** Append `n` bytes, rotating as described above. Best effort: errors of
 * write(2) and rename(2) are counted (js_podlog_errors), not returned. */
void js_podlog_write(struct js_podlog *log, const void *data, size_t n);

/** Bytes in the current file. */
int64_t js_podlog_size(const struct js_podlog *log);

/** Number of rotations since open. */
int64_t js_podlog_rotations(const struct js_podlog *log);

/** Number of failed writes or renames since open. */
int64_t js_podlog_errors(const struct js_podlog *log);

/** Close the file and free. NULL is a no-op. Returns NULL. */
struct js_podlog *js_podlog_free(struct js_podlog *log);

#endif
