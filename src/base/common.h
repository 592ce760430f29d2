/*
 * common.h - attributes, error codes and the allocation choke point shared by
 * every module.
 *
 * Errors: functions that can fail return int, 0 on success, negative on
 * failure: -errno for system errors, JS_E* (at -1000 and below) for project
 * errors. js_strerror() names both.
 */
#ifndef JS_COMMON_H
#define JS_COMMON_H

#include <stddef.h>

#define JS_WARN_UNUSED __attribute__((warn_unused_result))
#define JS_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define JS_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Project error codes. */
enum {
	JS_EINVALID = -1000,  /* input is invalid; details in a js_diag list */
	JS_ETOOLARGE = -1001, /* input exceeds a limit of base/limits.h */
	JS_ENOTFOUND = -1002, /* object not found */
	JS_ECONFLICT = -1003, /* resourceVersion conflict */
	JS_EGONE = -1004,     /* resourceVersion too old (HTTP 410) */
	JS_EEXISTS = -1005,   /* object already exists */
	JS_EUNSUPPORTED = -1006,
};

/** Text for an error code (negative errno or JS_E*). Static storage. */
const char *js_strerror(int err);

/** malloc/calloc/realloc/strdup that abort on out-of-memory. Every input is
 * bounded by base/limits.h, so running out means a bug or a dying machine. */
void *js_xmalloc(size_t n);
void *js_xcalloc(size_t n, size_t size);
void *js_xrealloc(void *p, size_t n);
char *js_xstrdup(const char *s);
char *js_xstrndup(const char *s, size_t n);

/** Transfer ownership out of a pointer variable, leaving NULL behind. */
#define JS_TAKE_PTR(p) js__take_ptr((void **)&(p))
static inline void *js__take_ptr(void **pp)
{
	void *p = *pp;
	*pp = NULL;
	return p;
}

#endif
