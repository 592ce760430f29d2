/*
 * file.h - read a whole file or stream into memory, with a ceiling, so a
 * huge or endless input is refused without being held.
 */
#ifndef JS_FILE_H
#define JS_FILE_H

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

#endif
