/*
 * log.c - formatting for js_log_fn callbacks.
 */
#include "base/log.h"

#include <stdarg.h>

#include "base/buf.h"

void js_log_vprintf(js_log_fn *fn, void *user, int level, const char *fmt, va_list ap)
{
	if (!fn)
		return;
	struct js_buf b;
	js_buf_init(&b, 4096);
	if (js_buf_vprintf(&b, fmt, ap) < 0) {
		/* Longer than the cap: say so rather than drop the line silently. */
		js_buf_clear(&b);
		(void)!js_buf_puts(&b, "(log line over 4 KiB dropped)");
	}
	fn(user, level, js_buf_str(&b));
	js_buf_done(&b);
}

void js_log_printf(js_log_fn *fn, void *user, int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	js_log_vprintf(fn, user, level, fmt, ap);
	va_end(ap);
}
