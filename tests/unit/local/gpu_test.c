/*
 * gpu_test.c - the GPU inventory and assignment of a local run
 * (local/gpu.h): --gpus lists, discovery from a fake /dev, what pods ask
 * for, the before-start check, and take/give back. Table-driven where
 * there are cases; each names itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "api/jobset.h"
#include "local/gpu.h"
#include "support/testutil.h"

static const struct parse_case {
	const char *arg;
	int want;
	size_t n;
} parse_cases[] = {
	{"0,1,2", 0, 3}, {"GPU-1a2b,GPU-3c", 0, 2}, {"none", 0, 0}, {"", 0, 0},
	{"0,,1", JS_EINVALID, 0}, {"0,0", JS_EINVALID, 0}, {"0;1", JS_EINVALID, 0}, {"a b", JS_EINVALID, 0},
};

static void test_parse(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		const struct parse_case *c = &parse_cases[i];
		struct js_gpu *g = NULL;
		char *err = NULL;
		int r = js_gpu_parse(c->arg, &g, &err);
		if (r != c->want || (r == 0 && js_gpu_count(g) != c->n))
			fail_msg("case '%s': r=%d n=%zu, want %d n=%zu", c->arg, r, js_gpu_count(g), c->want, c->n);
		free(err);
		js_gpu_free(g);
	}
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

static void test_discover(void **state)
{
	(void)state;
	char dir[] = "/tmp/js-gpu-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	static const char *const names[] = {"nvidia10", "nvidia2", "nvidiactl", "nvidia-uvm", "nvidia0", "null"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char p[128];
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		int fd = open(p, O_WRONLY | O_CREAT, 0644);
		assert_true(fd >= 0);
		close(fd);
	}
	struct js_gpu *g = js_gpu_discover(dir);
	assert_int_equal(js_gpu_count(g), 3);
	assert_string_equal(js_gpu_id(g, 0), "0"); /* numeric order */
	assert_string_equal(js_gpu_id(g, 1), "2");
	assert_string_equal(js_gpu_id(g, 2), "10");
	js_gpu_free(g);
	assert_int_equal(nftw(dir, rm_one, 4, FTW_DEPTH | FTW_PHYS), 0);
}

static const struct count_case {
	const char *name;
	const char *spec;
	int want;
	int64_t n;
} count_cases[] = {
	{"none", "{containers: [{name: a}]}", 0, 0},
	{"sum of containers", "{containers: [{name: a, resources: {limits: {nvidia.com/gpu: 2}}},"
			      " {name: b, resources: {limits: {nvidia.com/gpu: '1'}}}]}", 0, 3},
	{"an init container wants more", "{initContainers: [{name: i, resources: {limits: {nvidia.com/gpu: 4}}}],"
					 " containers: [{name: a, resources: {limits: {nvidia.com/gpu: 1}}}]}", 0, 4},
	{"requests equal to limits", "{containers: [{name: a, resources: {limits: {nvidia.com/gpu: 1},"
				     " requests: {nvidia.com/gpu: 1}}}]}", 0, 1},
	{"requests differ", "{containers: [{name: a, resources: {limits: {nvidia.com/gpu: 1},"
			    " requests: {nvidia.com/gpu: 2}}}]}", JS_EINVALID, 0},
	{"requests alone", "{containers: [{name: a, resources: {requests: {nvidia.com/gpu: 1}}}]}", JS_EINVALID, 0},
	{"fraction", "{containers: [{name: a, resources: {limits: {nvidia.com/gpu: '0.5'}}}]}", JS_EINVALID, 0},
	{"negative", "{containers: [{name: a, resources: {limits: {nvidia.com/gpu: -1}}}]}", JS_EINVALID, 0},
};

static void test_pod_count(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(count_cases) / sizeof(count_cases[0]); i++) {
		const struct count_case *c = &count_cases[i];
		json_t *spec = tu_yaml(c->spec);
		int64_t n = -1;
		char *err = NULL;
		int r = js_gpu_pod_count(spec, &n, &err);
		if (r != c->want || (r == 0 && n != c->n))
			fail_msg("case '%s': r=%d n=%lld, want %d n=%lld", c->name, r, (long long)n, c->want,
				 (long long)c->n);
		free(err);
		json_decref(spec);
	}
}

/* A JobSet of rjobs a (2 Jobs x 1 pod x 1 GPU: parallelism 3 is capped by
 * completions 1) and b (1 pod x 2 GPUs), b dependsOn a with `status`, or
 * not at all. */
static struct js_jobset *two(const char *status)
{
	char dep[128] = "";
	if (status)
		snprintf(dep, sizeof(dep), "    dependsOn: [{name: a, status: %s}]\n", status);
	char buf[1024];
	snprintf(buf, sizeof(buf),
		 "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: g}\nspec:\n  replicatedJobs:\n"
		 "  - name: a\n    replicas: 2\n    template: {spec: {parallelism: 3, completions: 1, template: {spec:"
		 " {containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]}}}}\n"
		 "  - name: b\n%s    template: {spec: {template: {spec:"
		 " {containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 2}}}]}}}}\n",
		 dep);
	json_t *j = tu_yaml(buf);
	struct js_jobset *js = tu_decode(j);
	json_decref(j);
	return js;
}

static void test_check(void **state)
{
	(void)state;
	static const struct {
		const char *status;
		size_t available;
		const char *err;
	} rows[] = {
		{NULL, 4, NULL},
		{NULL, 3, "needs 4 GPUs (nvidia.com/gpu) at once (a: 2 pods x 1 = 2, b: 1 pods x 2 = 2)"},
		{"Complete", 2, NULL},   /* b runs after a: never both */
		{"Ready", 3, "needs 4 GPUs"}, /* Ready: b starts while a runs */
		{"Complete", 1, "every pod of ReplicatedJob 'b' needs 2 GPUs"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct js_jobset *js = two(rows[i].status);
		char *err = NULL;
		int r = js_gpu_check(js, rows[i].available, &err);
		if (rows[i].err ? r != JS_EINVALID || !strstr(err, rows[i].err) : r != 0)
			fail_msg("row %zu (%s, %zu): r=%d err='%s', want '%s'", i, rows[i].status ? rows[i].status : "-",
				 rows[i].available, r, err ? err : "", rows[i].err ? rows[i].err : "accepted");
		free(err);
		js_jobset_free(js);
	}
}

static void test_take_and_give_back(void **state)
{
	(void)state;
	struct js_gpu *g = NULL;
	char *err = NULL;
	assert_int_equal(js_gpu_parse("a,b,c", &g, &err), 0);
	const char *const *d1 = NULL, *const *d2 = NULL, *const *d3 = NULL;
	assert_int_equal(js_gpu_take(g, 1, 2, &d1), 0);
	assert_string_equal(d1[0], "a");
	assert_string_equal(d1[1], "b");
	assert_null(d1[2]);
	assert_int_equal(js_gpu_take(g, 2, 2, &d2), -EBUSY); /* one left */
	assert_int_equal(js_gpu_take(g, 3, 0, &d3), 0);
	assert_null(d3);
	assert_int_equal(js_gpu_free_count(g), 1);
	/* Per container: regular ones consecutive, init ones from the first. */
	json_t *c2 = tu_yaml("{name: x, resources: {limits: {nvidia.com/gpu: 1}}}");
	size_t cursor = 0;
	const char **m = js_gpu_ctr_devices(c2, false, d1, &cursor);
	char *s = js_gpu_join(m);
	assert_string_equal(s, "a");
	free(s);
	free(m);
	m = js_gpu_ctr_devices(c2, false, d1, &cursor);
	assert_string_equal(m[0], "b");
	free(m);
	m = js_gpu_ctr_devices(c2, true, d1, &cursor);
	assert_string_equal(m[0], "a");
	free(m);
	json_decref(c2);
	assert_true(js_gpu_put(g, 1));
	assert_false(js_gpu_put(g, 1)); /* once */
	assert_int_equal(js_gpu_take(g, 2, 3, &d2), 0);
	s = js_gpu_join(d2);
	assert_string_equal(s, "a,b,c");
	free(s);
	js_gpu_free(g); /* with devices still held */
}

/* Node quarantine (docs/node-quarantine.md "Locally"): a take leaves out
 * what the skip says, the devices a pod was last given are known after it
 * gave them back, and every id --gpus accepts names a node. */
static bool skip_b(const char *id, void *ctx)
{
	(void)ctx;
	return strcmp(id, "b") == 0;
}

static void test_quarantine(void **state)
{
	(void)state;
	struct js_gpu *g = NULL;
	char *err = NULL;
	assert_int_equal(js_gpu_parse("a,b,c", &g, &err), 0);
	const struct js_gpu_skip skip = {.fn = skip_b};
	const char *const *d = NULL;
	assert_int_equal(js_gpu_count_except(g, &skip, false), 2);
	assert_int_equal(js_gpu_take_except(g, 7, 2, &skip, &d), 0);
	char *s = js_gpu_join(d);
	assert_string_equal(s, "a,c"); /* b left out */
	free(s);
	assert_int_equal(js_gpu_count_except(g, &skip, true), 0);
	assert_int_equal(js_gpu_free_count(g), 1); /* b, free but quarantined */
	assert_int_equal(js_gpu_take_except(g, 8, 1, &skip, &d), -EBUSY);
	assert_true(js_gpu_put(g, 7));
	const char *last[4];
	assert_int_equal(js_gpu_last_held(g, 7, last, 4), 2);
	assert_string_equal(last[0], "a");
	assert_string_equal(last[1], "c");
	assert_int_equal(js_gpu_last_held(g, 7, last, 1), 1); /* bounded */
	assert_int_equal(js_gpu_take(g, 9, 1, &d), 0);        /* a, now pod 9's */
	assert_int_equal(js_gpu_last_held(g, 7, last, 4), 1);
	assert_string_equal(last[0], "c");
	assert_int_equal(js_gpu_last_held(g, 0, last, 4), 0);
	js_gpu_free(g);

	static const struct {
		const char *id, *node;
	} names[] = {{"0", "gpu-0"}, {"GPU-1a2B", "gpu-gpu-1a2b"}, {"x_y", "gpu-x-y"}};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct js_buf b;
		js_buf_init(&b, 0);
		assert_int_equal(js_gpu_node_name(names[i].id, &b), 0);
		assert_string_equal(js_buf_str(&b), names[i].node);
		js_buf_done(&b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_discover),
		cmocka_unit_test(test_pod_count),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_take_and_give_back),
		cmocka_unit_test(test_quarantine),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
