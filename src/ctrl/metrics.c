/*
 * metrics.c - metric registry and Prometheus text exposition. See metrics.h.
 */
#include "ctrl/metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/hmap.h"

#define MAX_FAMILIES 64
/* Per family: bounds memory if a label explodes (about 250 bytes a
 * series), yet holds the per-JobSet families of tens of thousands of
 * JobSets (docs/metrics.md: 5 series each). */
#define MAX_SERIES 100000

struct series {
	char *values[JS_METRICS_MAX_LABELS];
	double v;                                  /* counter/gauge value, histogram sum */
	unsigned long long count;                  /* histogram observations */
	unsigned long long bucket[JS_METRICS_MAX_BUCKETS]; /* non-cumulative */
};

struct fam {
	const struct js_metrics_family *def;
	size_t n_labels;
	struct series *series;
	size_t n, cap;
	struct js_hmap *index; /* label values (series_key) -> 1 + position */
};

struct js_metrics {
	pthread_mutex_t mu;
	struct fam fams[MAX_FAMILIES];
	size_t n;
};

int js_metrics_new(const struct js_metrics_family *families, size_t n, struct js_metrics **ret)
{
	if (n > MAX_FAMILIES)
		return JS_EINVALID;
	for (size_t i = 0; i < n; i++) {
		const struct js_metrics_family *f = &families[i];
		if (!f->name || f->type < 0 || f->type >= JS_METRICS_TYPE__COUNT || f->n_buckets > JS_METRICS_MAX_BUCKETS)
			return JS_EINVALID;
		for (size_t b = 1; b < f->n_buckets; b++) {
			if (!(f->buckets[b] > f->buckets[b - 1]))
				return JS_EINVALID;
		}
	}
	struct js_metrics *m = js_xcalloc(1, sizeof(*m));
	pthread_mutex_init(&m->mu, NULL);
	m->n = n;
	for (size_t i = 0; i < n; i++) {
		m->fams[i].def = &families[i];
		m->fams[i].index = js_hmap_new(NULL);
		while (m->fams[i].n_labels < JS_METRICS_MAX_LABELS && families[i].labels[m->fams[i].n_labels])
			m->fams[i].n_labels++;
	}
	*ret = m;
	return 0;
}

struct js_metrics *js_metrics_free(struct js_metrics *m)
{
	if (!m)
		return NULL;
	for (size_t i = 0; i < m->n; i++) {
		for (size_t s = 0; s < m->fams[i].n; s++) {
			for (size_t l = 0; l < m->fams[i].n_labels; l++)
				free(m->fams[i].series[s].values[l]);
		}
		free(m->fams[i].series);
		js_hmap_free(m->fams[i].index);
	}
	pthread_mutex_destroy(&m->mu);
	free(m);
	return NULL;
}

/* The index key of a tuple of label values: each value with its length in
 * front, so no value can run into the next. Caller frees. */
static char *series_key(const struct fam *f, const char *const *values)
{
	struct js_buf b;
	js_buf_init(&b, 0);
	for (size_t l = 0; l < f->n_labels; l++) {
		const char *v = values[l] ? values[l] : "";
		(void)!js_buf_printf(&b, "%zu:%s", strlen(v), v);
	}
	return js_buf_take(&b);
}

/* Find or (when `create`) add the series; under the lock. O(1): a
 * per-JobSet family is updated at every reconcile and scrape. */
static struct series *lookup(struct fam *f, const char *const *values, bool create)
{
	char *key = series_key(f, values);
	uintptr_t at = (uintptr_t)js_hmap_get(f->index, key);
	if (at || !create || f->n >= MAX_SERIES) {
		free(key);
		return at ? &f->series[at - 1] : NULL;
	}
	(void)js_hmap_put(f->index, key, (void *)(uintptr_t)(f->n + 1), NULL);
	free(key);
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 8;
		f->series = js_xrealloc(f->series, f->cap * sizeof(*f->series));
	}
	struct series *s = &f->series[f->n++];
	memset(s, 0, sizeof(*s));
	for (size_t l = 0; l < f->n_labels; l++)
		s->values[l] = js_xstrdup(values[l] ? values[l] : "");
	return s;
}

static int update(struct js_metrics *m, size_t family, const char *const *values, double v, enum js_metrics_type want)
{
	if (!m || family >= m->n || m->fams[family].def->type != want || (want == JS_METRICS_COUNTER && !(v >= 0)))
		return JS_EINVALID;
	static const char *const none[JS_METRICS_MAX_LABELS] = {0};
	if (!values)
		values = none;
	pthread_mutex_lock(&m->mu);
	struct fam *f = &m->fams[family];
	struct series *s = lookup(f, values, true);
	int r = 0;
	if (!s) {
		r = JS_EINVALID;
	} else if (want == JS_METRICS_COUNTER) {
		s->v += v;
	} else if (want == JS_METRICS_GAUGE) {
		s->v = v;
	} else {
		s->v += v;
		s->count++;
		size_t b = 0;
		while (b < f->def->n_buckets && v > f->def->buckets[b])
			b++;
		if (b < f->def->n_buckets)
			s->bucket[b]++;
	}
	pthread_mutex_unlock(&m->mu);
	return r;
}

int js_metrics_add(struct js_metrics *m, size_t family, const char *const *values, double v)
{
	return update(m, family, values, v, JS_METRICS_COUNTER);
}

int js_metrics_set(struct js_metrics *m, size_t family, const char *const *values, double v)
{
	return update(m, family, values, v, JS_METRICS_GAUGE);
}

int js_metrics_observe(struct js_metrics *m, size_t family, const char *const *values, double v)
{
	return update(m, family, values, v, JS_METRICS_HISTOGRAM);
}

size_t js_metrics_remove(struct js_metrics *m, size_t family, const char *const *values)
{
	if (!m || family >= m->n || !values)
		return 0;
	pthread_mutex_lock(&m->mu);
	struct fam *f = &m->fams[family];
	size_t kept = 0, dropped = 0;
	for (size_t s = 0; s < f->n; s++) {
		bool match = true;
		for (size_t l = 0; l < f->n_labels && match; l++)
			match = !values[l] || strcmp(f->series[s].values[l], values[l]) == 0;
		if (!match) {
			f->series[kept++] = f->series[s]; /* first-use order kept */
			continue;
		}
		for (size_t l = 0; l < f->n_labels; l++)
			free(f->series[s].values[l]);
		dropped++;
	}
	f->n = kept;
	if (dropped) { /* positions moved: index them again */
		js_hmap_clear(f->index);
		for (size_t s = 0; s < f->n; s++) {
			char *key = series_key(f, (const char *const *)f->series[s].values);
			(void)js_hmap_put(f->index, key, (void *)(uintptr_t)(s + 1), NULL);
			free(key);
		}
	}
	pthread_mutex_unlock(&m->mu);
	return dropped;
}

double js_metrics_value(struct js_metrics *m, size_t family, const char *const *values)
{
	if (!m || family >= m->n)
		return 0;
	static const char *const none[JS_METRICS_MAX_LABELS] = {0};
	pthread_mutex_lock(&m->mu);
	struct fam *f = &m->fams[family];
	struct series *s = lookup(f, values ? values : none, false);
	double v = 0;
	if (s)
		v = f->def->type == JS_METRICS_HISTOGRAM ? (double)s->count : s->v;
	pthread_mutex_unlock(&m->mu);
	return v;
}

/* ---- exposition ---- */

static int put_escaped(struct js_buf *out, const char *s, bool help)
{
	int r = 0;
	for (; *s && r == 0; s++) {
		if (*s == '\\')
			r = js_buf_puts(out, "\\\\");
		else if (*s == '\n')
			r = js_buf_puts(out, "\\n");
		else if (*s == '"' && !help)
			r = js_buf_puts(out, "\\\"");
		else
			r = js_buf_add(out, s, 1);
	}
	return r;
}

static int put_number(struct js_buf *out, double v)
{
	if (isinf(v))
		return js_buf_puts(out, v > 0 ? "+Inf" : "-Inf");
	if (isnan(v))
		return js_buf_puts(out, "NaN");
	if (v == floor(v) && fabs(v) < 1e15)
		return js_buf_printf(out, "%.0f", v);
	return js_buf_printf(out, "%.15g", v);
}

/* name{l1="v1",...,extra_key="extra_val"} */
static int put_labels(struct js_buf *out, const struct fam *f, const struct series *s, const char *extra_key,
		      const char *extra_val)
{
	if (f->n_labels == 0 && !extra_key)
		return 0;
	int r = js_buf_puts(out, "{");
	for (size_t l = 0; l < f->n_labels && r == 0; l++) {
		r = js_buf_printf(out, "%s%s=\"", l ? "," : "", f->def->labels[l]);
		if (r == 0)
			r = put_escaped(out, s->values[l], false);
		if (r == 0)
			r = js_buf_puts(out, "\"");
	}
	if (extra_key && r == 0)
		r = js_buf_printf(out, "%s%s=\"%s\"", f->n_labels ? "," : "", extra_key, extra_val);
	if (r == 0)
		r = js_buf_puts(out, "}");
	return r;
}

static int expose_series(struct js_buf *out, const struct fam *f, const struct series *s)
{
	const char *name = f->def->name;
	int r = 0;
	if (f->def->type != JS_METRICS_HISTOGRAM) {
		r = js_buf_puts(out, name);
		r = r ? r : put_labels(out, f, s, NULL, NULL);
		r = r ? r : js_buf_puts(out, " ");
		r = r ? r : put_number(out, s->v);
		return r ? r : js_buf_puts(out, "\n");
	}
	unsigned long long cum = 0;
	for (size_t b = 0; b <= f->def->n_buckets && r == 0; b++) {
		char le[64];
		if (b < f->def->n_buckets) {
			cum += s->bucket[b];
			struct js_buf t;
			js_buf_init(&t, sizeof(le) - 1);
			(void)put_number(&t, f->def->buckets[b]);
			snprintf(le, sizeof(le), "%s", js_buf_str(&t));
			js_buf_done(&t);
		} else {
			cum = s->count;
			snprintf(le, sizeof(le), "+Inf");
		}
		r = js_buf_printf(out, "%s_bucket", name);
		r = r ? r : put_labels(out, f, s, "le", le);
		r = r ? r : js_buf_printf(out, " %llu\n", cum);
	}
	r = r ? r : js_buf_printf(out, "%s_sum", name);
	r = r ? r : put_labels(out, f, s, NULL, NULL);
	r = r ? r : js_buf_puts(out, " ");
	r = r ? r : put_number(out, s->v);
	r = r ? r : js_buf_printf(out, "\n%s_count", name);
	r = r ? r : put_labels(out, f, s, NULL, NULL);
	return r ? r : js_buf_printf(out, " %llu\n", s->count);
}

int js_metrics_expose(struct js_metrics *m, struct js_buf *out)
{
	static const char *const types[] = {"counter", "gauge", "histogram"};
	int r = 0;
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->n && r == 0; i++) {
		const struct fam *f = &m->fams[i];
		r = js_buf_printf(out, "# HELP %s ", f->def->name);
		r = r ? r : put_escaped(out, f->def->help ? f->def->help : "", true);
		r = r ? r : js_buf_printf(out, "\n# TYPE %s %s\n", f->def->name, types[f->def->type]);
		for (size_t s = 0; s < f->n && r == 0; s++)
			r = expose_series(out, f, &f->series[s]);
	}
	pthread_mutex_unlock(&m->mu);
	return r;
}
