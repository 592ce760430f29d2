/*
 * log.h - the logging callback that library modules take from their owner.
 *
 * Library code never prints (STYLE.md convention 20): a module that has
 * something worth logging takes a js_log_fn and a user pointer in its
 * options, and `main` decides where the line goes.
 */
#ifndef JS_LOG_H
#define JS_LOG_H

#include <stdarg.h>

#include "base/common.h"

/** Receives one formatted line at a klog-style `level` (0 = always). */
typedef void js_log_fn(void *user, int level, const char *msg);

/** Format and hand one line to `fn`; a NULL `fn` drops it. Lines are cut
 * at 4 KiB. */
void js_log_printf(js_log_fn *fn, void *user, int level, const char *fmt, ...) JS_PRINTF(4, 5);

/** As js_log_printf with a va_list, for modules' own printf-like wrappers. */
void js_log_vprintf(js_log_fn *fn, void *user, int level, const char *fmt, va_list ap) JS_PRINTF(4, 0);

#endif
