/*
 * kube_int.h - helpers shared by the files of src/kube/ only: time
 * formats, URL escaping and the wall clock (the monotonic one is
 * base/clock.h). Nothing outside src/kube/
 * includes this header.
 */
#ifndef JS_KUBE_INT_H
#define JS_KUBE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/buf.h"
#include "base/common.h"

/* Largest response body we read into memory (a LIST page of 500 big objects
 * stays far below this; etcd refuses objects over 1.5 MiB). Candidate for
 * base/limits.h. */
#define JS__KUBE_MAX_BODY (256u * 1024u * 1024u)

/* Longest watch event line (one object plus framing). */
#define JS__KUBE_MAX_EVENT (64u * 1024u * 1024u)

/* Longest ExecCredential output read from a credential plugin. */
#define JS__KUBE_MAX_EXEC_OUT (1024u * 1024u)

/* Longest kubeconfig or credential file read. */
#define JS__KUBE_MAX_FILE (16u * 1024u * 1024u)

/** Wall clock, nanoseconds since the epoch. */
uint64_t js__kutil_wall_ns(void);

/** Append `s` percent-encoded for a URL query value. Errors as js_buf_add. */
JS_WARN_UNUSED int js__kutil_escape(struct js_buf *b, const char *s);

/** Format wall time `ns` as a Kubernetes MicroTime
 * ("2006-01-02T15:04:05.000000Z") into `out` (48 bytes). */
void js__kutil_microtime(uint64_t ns, char out[48]);


#endif
