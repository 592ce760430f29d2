/*
 * metrics_test.c - the metric registry and its Prometheus text exposition
 * (ctrl/metrics.h): counters with labels, gauges, histograms, escaping,
 * bad updates.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrl/metrics.h"

static const double buckets[] = {0.1, 1, 10};

enum { F_FAILED, F_DEPTH, F_TIME, F_PLAIN, F__N };

static const struct js_metrics_family fams[F__N] = {
	[F_FAILED] = {"jobset_failed_total", "Number of failed JobSets", JS_METRICS_COUNTER,
		      {"jobset_name", "namespace"}, NULL, 0},
	[F_DEPTH] = {"workqueue_depth", "Current depth\nof workqueue \\ x", JS_METRICS_GAUGE, {"name"}, NULL, 0},
	[F_TIME] = {"reconcile_time_seconds", "Reconcile time", JS_METRICS_HISTOGRAM, {"controller"}, buckets, 3},
	[F_PLAIN] = {"plain_total", "No labels", JS_METRICS_COUNTER, {NULL}, NULL, 0},
};

static char *expose(struct js_metrics *m)
{
	struct js_buf b;
	js_buf_init(&b, 0);
	assert_int_equal(js_metrics_expose(m, &b), 0);
	return js_buf_take(&b);
}

static void test_exposition(void **state)
{
	(void)state;
	struct js_metrics *m = NULL;
	assert_int_equal(js_metrics_new(fams, F__N, &m), 0);
	const char *a[] = {"train", "ns1"};
	const char *b[] = {"we\"ird\\na\nme", "ns2"};
	assert_int_equal(js_metrics_add(m, F_FAILED, a, 1), 0);
	assert_int_equal(js_metrics_add(m, F_FAILED, a, 2), 0);
	assert_int_equal(js_metrics_add(m, F_FAILED, b, 1), 0);
	const char *q[] = {"jobset"};
	assert_int_equal(js_metrics_set(m, F_DEPTH, q, 7), 0);
	assert_int_equal(js_metrics_set(m, F_DEPTH, q, 3), 0);
	const char *ctl[] = {"jobset"};
	assert_int_equal(js_metrics_observe(m, F_TIME, ctl, 0.05), 0);
	assert_int_equal(js_metrics_observe(m, F_TIME, ctl, 0.5), 0);
	assert_int_equal(js_metrics_observe(m, F_TIME, ctl, 100), 0);
	assert_int_equal(js_metrics_add(m, F_PLAIN, NULL, 1.5), 0);

	char *text = expose(m);
	static const char want[] =
		"# HELP jobset_failed_total Number of failed JobSets\n"
		"# TYPE jobset_failed_total counter\n"
		"jobset_failed_total{jobset_name=\"train\",namespace=\"ns1\"} 3\n"
		"jobset_failed_total{jobset_name=\"we\\\"ird\\\\na\\nme\",namespace=\"ns2\"} 1\n"
		"# HELP workqueue_depth Current depth\\nof workqueue \\\\ x\n"
		"# TYPE workqueue_depth gauge\n"
		"workqueue_depth{name=\"jobset\"} 3\n"
		"# HELP reconcile_time_seconds Reconcile time\n"
		"# TYPE reconcile_time_seconds histogram\n"
		"reconcile_time_seconds_bucket{controller=\"jobset\",le=\"0.1\"} 1\n"
		"reconcile_time_seconds_bucket{controller=\"jobset\",le=\"1\"} 2\n"
		"reconcile_time_seconds_bucket{controller=\"jobset\",le=\"10\"} 2\n"
		"reconcile_time_seconds_bucket{controller=\"jobset\",le=\"+Inf\"} 3\n"
		"reconcile_time_seconds_sum{controller=\"jobset\"} 100.55\n"
		"reconcile_time_seconds_count{controller=\"jobset\"} 3\n"
		"# HELP plain_total No labels\n"
		"# TYPE plain_total counter\n"
		"plain_total 1.5\n";
	if (strcmp(text, want) != 0)
		fail_msg("exposition differs:\n--- got\n%s--- want\n%s", text, want);
	free(text);

	assert_true(js_metrics_value(m, F_FAILED, a) == 3);
	assert_true(js_metrics_value(m, F_TIME, ctl) == 3);
	const char *none[] = {"x", "y"};
	assert_true(js_metrics_value(m, F_FAILED, none) == 0);
	js_metrics_free(m);
}

static void test_bad_updates(void **state)
{
	(void)state;
	struct js_metrics *m = NULL;
	assert_int_equal(js_metrics_new(fams, F__N, &m), 0);
	const char *a[] = {"x", "y"};
	static const struct {
		const char *name;
		int op; /* 0 add, 1 set, 2 observe */
		size_t fam;
		double v;
	} cases[] = {
		{"negative counter", 0, F_FAILED, -1},
		{"set on counter", 1, F_FAILED, 1},
		{"observe on gauge", 2, F_DEPTH, 1},
		{"add on histogram", 0, F_TIME, 1},
		{"family out of range", 0, F__N, 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = cases[i].op == 0   ? js_metrics_add(m, cases[i].fam, a, cases[i].v)
			: cases[i].op == 1 ? js_metrics_set(m, cases[i].fam, a, cases[i].v)
					   : js_metrics_observe(m, cases[i].fam, a, cases[i].v);
		if (r == 0)
			fail_msg("%s: accepted", cases[i].name);
	}
	js_metrics_free(m);

	/* Unsorted buckets are refused at creation. */
	static const double unsorted[] = {1, 0.5};
	struct js_metrics_family bad = {"h", "h", JS_METRICS_HISTOGRAM, {NULL}, unsorted, 2};
	struct js_metrics *m2 = NULL;
	assert_int_equal(js_metrics_new(&bad, 1, &m2), -1000);
	assert_null(m2);
}

/* A per-object series goes with its object; NULL matches any value. */
static void test_remove(void **state)
{
	(void)state;
	struct js_metrics *m = NULL;
	assert_int_equal(js_metrics_new(fams, F__N, &m), 0);
	const char *series[][2] = {{"a", "ns1"}, {"b", "ns1"}, {"a", "ns2"}, {"c", "ns2"}};
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(js_metrics_add(m, F_FAILED, series[i], (double)i + 1), 0);
	static const struct {
		const char *name, *v0, *v1;
		size_t dropped;
		const char *left; /* what the family exposes afterwards */
	} cases[] = {
		{"no match", "z", "ns1", 0, "a/ns1=1 b/ns1=2 a/ns2=3 c/ns2=4 "},
		{"one series", "a", "ns1", 1, "b/ns1=2 a/ns2=3 c/ns2=4 "},
		{"wildcard name", NULL, "ns2", 2, "b/ns1=2 "},
		{"all", NULL, NULL, 1, ""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *v[] = {cases[i].v0, cases[i].v1};
		size_t n = js_metrics_remove(m, F_FAILED, v);
		char left[256] = "";
		for (size_t k = 0; k < 4; k++) {
			double x = js_metrics_value(m, F_FAILED, series[k]);
			if (x > 0)
				snprintf(left + strlen(left), sizeof(left) - strlen(left), "%s/%s=%g ", series[k][0],
					 series[k][1], x);
		}
		if (n != cases[i].dropped || strcmp(left, cases[i].left) != 0)
			fail_msg("%s: dropped %zu, left '%s'", cases[i].name, n, left);
	}
	/* A dropped series starts again from zero. */
	assert_int_equal(js_metrics_add(m, F_FAILED, series[0], 1), 0);
	assert_true(js_metrics_value(m, F_FAILED, series[0]) == 1);
	assert_int_equal(js_metrics_remove(m, F__N, series[0]), 0);
	assert_int_equal(js_metrics_remove(m, F_FAILED, NULL), 0);

	/* Many series (a per-JobSet family), values that could run into
	 * each other if joined naively; removal re-indexes the rest. */
	enum { N = 20000 };
	char name[32], ns[32];
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "j%d", i);
		snprintf(ns, sizeof(ns), "%s", i % 2 ? "odd" : "even");
		const char *v[] = {name, ns};
		assert_int_equal(js_metrics_add(m, F_FAILED, v, i + 1), 0);
	}
	const char *glued1[] = {"a:b", "c"}, *glued2[] = {"a", "b:c"};
	assert_int_equal(js_metrics_add(m, F_FAILED, glued1, 1), 0);
	assert_true(js_metrics_value(m, F_FAILED, glued2) == 0);
	const char *odd[] = {NULL, "odd"};
	assert_int_equal(js_metrics_remove(m, F_FAILED, odd), N / 2);
	for (int i = 0; i < N; i += 999) {
		snprintf(name, sizeof(name), "j%d", i);
		const char *v[] = {name, i % 2 ? "odd" : "even"};
		assert_true(js_metrics_value(m, F_FAILED, v) == (i % 2 ? 0 : i + 1));
	}
	js_metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exposition),
		cmocka_unit_test(test_bad_updates),
		cmocka_unit_test(test_remove),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
