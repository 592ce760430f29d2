/*
 * kprint.c - kubectl's output conventions (kube/kprint.h).
 */
#include "kube/kprint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/time.h"

const char *js_kprint_duration(int64_t s, char out[JS_KPRINT_AGE_LEN])
{
	/* apimachinery util/duration.HumanDuration, step for step. */
	const int64_t min = 60, hour = 3600, day = 86400, year = 365 * day;
	if (s < -1)
		(void)snprintf(out, JS_KPRINT_AGE_LEN, "<invalid>");
	else if (s < 0)
		(void)snprintf(out, JS_KPRINT_AGE_LEN, "0s");
	else if (s < 2 * min)
		(void)snprintf(out, JS_KPRINT_AGE_LEN, "%llds", (long long)s);
	else if (s < 10 * min)
		(void)snprintf(out, JS_KPRINT_AGE_LEN, s % min ? "%lldm%llds" : "%lldm", (long long)(s / min), (long long)(s % min));
	else if (s < 3 * hour)
		(void)snprintf(out, JS_KPRINT_AGE_LEN, "%lldm", (long long)(s / min));
	else if (s < 8 * hour)
		(void)snprintf(out, JS_KPRINT_AGE_LEN, (s / min) % 60 ? "%lldh%lldm" : "%lldh", (long long)(s / hour),
			       (long long)((s / min) % 60));
	else if (s < 48 * hour)
		(void)snprintf(out, JS_KPRINT_AGE_LEN, "%lldh", (long long)(s / hour));
	else if (s < 8 * day)
		(void)snprintf(out, JS_KPRINT_AGE_LEN, (s / hour) % 24 ? "%lldd%lldh" : "%lldd", (long long)(s / day),
			       (long long)((s / hour) % 24));
	else if (s < 2 * year)
		(void)snprintf(out, JS_KPRINT_AGE_LEN, "%lldd", (long long)(s / day));
	else if (s < 8 * year)
		(void)snprintf(out, JS_KPRINT_AGE_LEN, (s / day) % 365 ? "%lldy%lldd" : "%lldy", (long long)(s / year),
			       (long long)((s / day) % 365));
	else
		(void)snprintf(out, JS_KPRINT_AGE_LEN, "%lldy", (long long)(s / year));
	return out;
}

const char *js_kprint_age(const char *timestamp, int64_t now, char out[JS_KPRINT_AGE_LEN])
{
	int64_t t;
	if (!timestamp || js_time_parse_rfc3339(timestamp, &t) < 0) {
		(void)snprintf(out, JS_KPRINT_AGE_LEN, "<unknown>");
		return out;
	}
	return js_kprint_duration(now - t, out);
}

struct js_ktable {
	size_t ncols, nrows, cap;
	char **cells; /* nrows * ncols */
};

struct js_ktable *js_ktable_new(size_t ncols)
{
	struct js_ktable *t = js_xcalloc(1, sizeof(*t));
	t->ncols = ncols ? ncols : 1;
	return t;
}

struct js_ktable *js_ktable_free(struct js_ktable *t)
{
	if (!t)
		return NULL;
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
	return NULL;
}

/* A cell as kubectl prints it: cut at the first line break, then "...". */
static char *cell_text(const char *s)
{
	s = s ? s : "";
	size_t n = strcspn(s, "\n\r\f");
	if (!s[n])
		return js_xstrdup(s);
	char *c = js_xmalloc(n + 4);
	memcpy(c, s, n);
	memcpy(c + n, "...", 4);
	return c;
}

void js_ktable_add(struct js_ktable *t, const char *const *cells)
{
	if (t->nrows == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 8;
		t->cells = js_xrealloc(t->cells, t->cap * t->ncols * sizeof(*t->cells));
	}
	for (size_t i = 0; i < t->ncols; i++)
		t->cells[t->nrows * t->ncols + i] = cell_text(cells[i]);
	t->nrows++;
}

size_t js_ktable_rows(const struct js_ktable *t)
{
	return t->nrows;
}

int js_ktable_print(const struct js_ktable *t, const char *indent, struct js_buf *out)
{
	size_t *w = js_xcalloc(t->ncols, sizeof(*w));
	int r = 0;
	for (size_t c = 0; c + 1 < t->ncols; c++) {
		w[c] = 6;
		for (size_t i = 0; i < t->nrows; i++) {
			size_t l = strlen(t->cells[i * t->ncols + c]) + 3;
			w[c] = l > w[c] ? l : w[c];
		}
	}
	for (size_t i = 0; i < t->nrows && r == 0; i++) {
		r = js_buf_puts(out, indent ? indent : "");
		for (size_t c = 0; c < t->ncols && r == 0; c++) {
			const char *s = t->cells[i * t->ncols + c];
			r = c + 1 < t->ncols ? js_buf_printf(out, "%-*s", (int)w[c], s) : js_buf_puts(out, s);
		}
		if (r == 0)
			r = js_buf_puts(out, "\n");
	}
	free(w);
	return r;
}

json_t *js_kprint_prune(const json_t *live, const json_t *shape)
{
	if (!live)
		return NULL;
	if (json_is_object(live) && json_is_object(shape)) {
		json_t *o = json_object();
		const char *k;
		json_t *v;
		json_object_foreach(js_json_unconst(shape), k, v) {
			json_t *lv = json_object_get(live, k);
			if (lv)
				json_object_set_new(o, k, js_kprint_prune(lv, v));
		}
		return o;
	}
	if (json_is_array(live) && json_is_array(shape) && json_array_size(live) == json_array_size(shape)) {
		json_t *a = json_array();
		for (size_t i = 0; i < json_array_size(live); i++)
			json_array_append_new(a, js_kprint_prune(json_array_get(live, i), json_array_get(shape, i)));
		return a;
	}
	return json_deep_copy(live);
}
