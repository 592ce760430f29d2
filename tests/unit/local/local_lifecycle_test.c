/*
 * local_lifecycle_test.c - the local runtime's lifecycle contract (issue 10): a
 * run refuses to be freed or started again from inside itself (its
 * callbacks), and frees cleanly once it has returned. Each row is a call
 * made from the run's first event callback and the answer it must get.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "local/local.h"
#include "support/testutil.h"

enum call { CALL_FREE, CALL_RUN };

struct lcase {
	const char *name;
	enum call call;
	int want;
};

static const struct lcase cases[] = {
	{"free from a callback", CALL_FREE, -EBUSY},
	{"run from a callback", CALL_RUN, -EBUSY},
};

struct ctx {
	struct js_local *l;
	const struct lcase *c;
	bool called;
	int got;
};

static void on_event(void *p, const struct js_local_event *e)
{
	(void)e;
	struct ctx *x = p;
	if (x->called)
		return;
	x->called = true;
	enum js_local_result res;
	x->got = x->c->call == CALL_FREE ? js_local_free(x->l) : js_local_run(x->l, &res);
}

static const char *manifest = "apiVersion: jobset.x-k8s.io/v1alpha2\n"
			      "kind: JobSet\n"
			      "metadata: {name: life}\n"
			      "spec:\n"
			      "  replicatedJobs:\n"
			      "  - name: w\n"
			      "    template:\n"
			      "      spec:\n"
			      "        template:\n"
			      "          spec:\n"
			      "            restartPolicy: Never\n"
			      "            containers:\n"
			      "            - {name: c, image: none, command: [/bin/true]}\n";

static void test_contract(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct lcase *c = &cases[i];
		char dir[] = "/tmp/js-lifecycle-XXXXXX";
		assert_non_null(mkdtemp(dir));
		json_t *j = tu_yaml(manifest);
		struct js_jobset *js = tu_decode(j);
		struct ctx x = {.c = c};
		struct js_local_opts o = {.run_dir = dir, .no_namespaces = true, .backoff_base_ms = 10,
					  .on_event = on_event, .ctx = &x};
		int r = js_local_new(js, &o, &x.l);
		if (r < 0)
			fail_msg("%s: js_local_new: %d", c->name, r);
		enum js_local_result res;
		r = js_local_run(x.l, &res);
		assert_int_equal(r, 0);
		if (!x.called || x.got != c->want)
			fail_msg("%s: got %d, want %d", c->name, x.got, c->want);
		assert_int_equal(res, JS_LOCAL_COMPLETED);
		assert_int_equal(js_local_free(x.l), 0);
		assert_int_equal(js_local_free(NULL), 0);
		js_jobset_free(js);
		json_decref(j);
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		assert_int_equal(system(cmd), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_contract),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
