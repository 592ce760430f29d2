/*
 * metrics.h - a small metric registry (counters, gauges, histograms with
 * labels) and its Prometheus text exposition (format 0.0.4), for
 * jobset-controller's /metrics (SPEC §12.7).
 *
 * The families are fixed when the registry is made, from a caller's table;
 * series (one per distinct label-value tuple) are created on first use.
 * Exposition lists families in table order and series in first-use order,
 * escapes label values (\\, \", \n), and writes histograms as cumulative
 * `_bucket{le=...}` lines plus `_sum` and `_count`. No sockets here: the
 * HTTP side is a plain-HTTP server of webhook/webhook.h, set up in main.c.
 *
 * Threading: every function is thread-safe (one mutex per registry).
 */
#ifndef JS_METRICS_H
#define JS_METRICS_H

#include <stddef.h>

#include "base/buf.h"
#include "base/common.h"

#define JS_METRICS_MAX_LABELS 4
#define JS_METRICS_MAX_BUCKETS 24

enum js_metrics_type {
	JS_METRICS_TYPE__INVALID = -1,
	JS_METRICS_COUNTER,
	JS_METRICS_GAUGE,
	JS_METRICS_HISTOGRAM,
	JS_METRICS_TYPE__COUNT
};

/** One family (static data the registry borrows for its lifetime). */
struct js_metrics_family {
	const char *name;
	const char *help;
	enum js_metrics_type type;
	const char *labels[JS_METRICS_MAX_LABELS]; /* NULL-terminated early */
	const double *buckets; /* histograms: ascending upper bounds (+Inf implied) */
	size_t n_buckets;
};

struct js_metrics;

/** Create a registry over `families` (borrowed, n at most 64). Returns 0 or
 * JS_EINVALID (too many families/labels/buckets, unsorted buckets). */
JS_WARN_UNUSED int js_metrics_new(const struct js_metrics_family *families, size_t n, struct js_metrics **ret);

/** Free. NULL is a no-op. Returns NULL. */
struct js_metrics *js_metrics_free(struct js_metrics *m);

/**
 * Update family `family` (index into the table) for the series named by
 * `values` (one string per label of the family; copied): counters add `v`
 * (must be >= 0), gauges set `v`, histograms observe `v`. Returns 0 or
 * JS_EINVALID (bad index, wrong operation for the type, negative counter
 * increment, too many series: 100000 per family).
 */
int js_metrics_add(struct js_metrics *m, size_t family, const char *const *values, double v);
int js_metrics_set(struct js_metrics *m, size_t family, const char *const *values, double v);
int js_metrics_observe(struct js_metrics *m, size_t family, const char *const *values, double v);

/**
 * Drop the series of family `family` whose label values match `values`
 * (one per label; a NULL entry matches any value), so that a per-object
 * series disappears with its object (docs/metrics.md). Returns how many
 * were dropped; 0 for a bad index.
 */
size_t js_metrics_remove(struct js_metrics *m, size_t family, const char *const *values);

/** Current value of a counter or gauge series (0 when absent); a
 * histogram's count. For tests and health checks. */
double js_metrics_value(struct js_metrics *m, size_t family, const char *const *values);

/** Append the Prometheus text exposition to `out`. Errors as js_buf_add. */
JS_WARN_UNUSED int js_metrics_expose(struct js_metrics *m, struct js_buf *out);

#endif
