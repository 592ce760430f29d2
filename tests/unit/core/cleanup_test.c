/*
 * cleanup_test.c - what the restart cleanup (core/cleanup.h) tells a
 * runtime: when to pass the old attempts' pods, which pods are old, and
 * the label selector that lists them, table-driven. The rules that hold
 * names run in the scenarios tests/cases/core/bug-392-*.scn and
 * cleanup-*.scn.
 */
#include <string.h>

#include "base/buf.h"
#include "core/cleanup.h"
#include "support/testutil.h"

/* FIX-A (tests/cases/core/fix-a.yaml: test-js, uid uid-test-js) with a
 * JSON merge patch. */
static struct js_jobset *jobset(const char *patch)
{
	return tu_fixture("tests/cases/core/fix-a.yaml", patch);
}

static void test_wants_old_pods(void **state)
{
	static const struct {
		const char *name;
		const char *patch;
		bool direct;
		bool want;
	} cases[] = {
		{"never restarted: no older attempt", NULL, true, false},
		{"restarting", "{\"status\":{\"restarts\":1,\"conditions\":[{\"type\":\"RestartingJobSet\","
			       "\"status\":\"True\"}]}}",
		 true, true},
		/* #392: a suspend during the restart sets RestartingJobSet=False;
		 * old pods may still be in their grace period. */
		{"suspended mid-restart",
		 "{\"spec\":{\"suspend\":true},\"status\":{\"restarts\":1,\"conditions\":[{\"type\":"
		 "\"RestartingJobSet\",\"status\":\"False\",\"reason\":\"JobSetSuspended\"}]}}",
		 true, true},
		{"resumed after that",
		 "{\"status\":{\"restarts\":1,\"conditions\":[{\"type\":\"RestartingJobSet\",\"status\":\"False\","
		 "\"reason\":\"JobSetSuspended\"},{\"type\":\"Suspended\",\"status\":\"False\"}]}}",
		 true, true},
		{"restarted, all ready again", "{\"status\":{\"restarts\":2,\"conditions\":[{\"type\":"
					       "\"RestartingJobSet\",\"status\":\"False\",\"reason\":\"JobsReady\"}]}}",
		 true, true},
		{"finished: creates nothing", "{\"status\":{\"restarts\":1,\"conditions\":[{\"type\":\"Failed\","
					      "\"status\":\"True\"}]}}",
		 true, false},
		{"foreground: the old Jobs hold their names", "{\"status\":{\"restarts\":1}}", false, false},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct js_jobset *js = jobset(cases[i].patch);
		if (js_cleanup_wants_old_pods(js, cases[i].direct) != cases[i].want)
			fail_msg("%s: want %d", cases[i].name, cases[i].want);
		js_jobset_free(js);
	}
}

static void test_classify_pod(void **state)
{
	static const struct {
		const char *attempt;
		enum js_cleanup_pod_kind kind;
	} cases[] = {
		{"2", JS_CLEANUP_POD_CURRENT}, {"1", JS_CLEANUP_POD_OLD},     {"0", JS_CLEANUP_POD_OLD},
		{"3", JS_CLEANUP_POD_OLD},     {NULL, JS_CLEANUP_POD_UNKNOWN}, {"", JS_CLEANUP_POD_UNKNOWN},
		{"x", JS_CLEANUP_POD_UNKNOWN}, {"2 ", JS_CLEANUP_POD_UNKNOWN}, {"99999999999", JS_CLEANUP_POD_UNKNOWN},
	};
	(void)state;
	struct js_jobset *js = jobset("{\"status\":{\"restarts\":2}}");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (js_cleanup_classify_pod(js, cases[i].attempt) != cases[i].kind)
			fail_msg("attempt %s: want kind %d", cases[i].attempt ? cases[i].attempt : "(none)",
				 (int)cases[i].kind);
	js_jobset_free(js);
}

static void test_selector(void **state)
{
	static const struct {
		const char *patch;
		const char *want;
	} cases[] = {
		{"{\"status\":{\"restarts\":3}}",
		 "jobset.sigs.k8s.io/jobset-uid=uid-test-js,jobset.sigs.k8s.io/restart-attempt!=3"},
		{"{\"metadata\":{\"uid\":null},\"status\":{\"restarts\":1}}",
		 "jobset.sigs.k8s.io/jobset-name=test-js,jobset.sigs.k8s.io/restart-attempt!=1"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct js_jobset *js = jobset(cases[i].patch);
		struct js_buf b;
		js_buf_init(&b, 0);
		assert_int_equal(js_cleanup_old_pods_selector(js, &b), 0);
		assert_string_equal(js_buf_str(&b), cases[i].want);
		js_buf_done(&b);
		js_jobset_free(js);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wants_old_pods),
		cmocka_unit_test(test_classify_pod),
		cmocka_unit_test(test_selector),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
