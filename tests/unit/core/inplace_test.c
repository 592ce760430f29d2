/* core/inplace.h: the in-place restart agent's decisions (SPEC §13), one
 * row per rule, and the view of a decoded JobSet. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "api/codec.h"
#include "core/inplace.h"

static void test_step(void **state)
{
	(void)state;
	/* view: bypass, has_cur, cur, has_prev, prev; agent: has_att, att, barrier */
	static const struct {
		const char *name;
		struct js_inplace_view v;
		struct js_inplace_agent a;
		int want_r;
		bool patch;
		int32_t patch_attempt;
		bool exit, lift;
	} rows[] = {
		{"bypass lifts the barrier", {true, true, 3, true, 9}, {false, 0, true}, 0, false, 0, false, true},
		{"bypass once lifted does nothing", {true, false, 0, false, 0}, {false, 0, false}, 0, false, 0, false, false},
		{"first start writes 0", {false, false, 0, false, 0}, {false, 0, true}, 0, true, 0, false, false},
		{"restart writes current + 1", {false, true, 4, true, 3}, {false, 0, true}, 0, true, 5, false, false},
		{"writes even with the barrier gone", {false, true, 1, false, 0}, {false, 0, false}, 0, true, 2, false, false},
		{"current + 1 overflows", {false, true, INT32_MAX, false, 0}, {false, 0, true}, JS_EINVALID, false, 0, false,
		 false},
		{"at current: lift", {false, true, 2, true, 1}, {true, 2, true}, 0, false, 0, false, true},
		{"at current, lifted: nothing", {false, true, 2, true, 1}, {true, 2, false}, 0, false, 0, false, false},
		{"ahead of current: wait", {false, true, 2, true, 1}, {true, 3, true}, 0, false, 0, false, false},
		{"no current yet: wait", {false, false, 0, false, 0}, {true, 0, true}, 0, false, 0, false, false},
		{"at previous: exit", {false, true, 2, true, 2}, {true, 2, false}, 0, false, 0, true, false},
		{"below previous: exit", {false, true, 2, true, 2}, {true, 1, true}, 0, false, 0, true, false},
		{"above previous: stays", {false, true, 2, true, 2}, {true, 3, true}, 0, false, 0, false, false},
		{"exit wins over lift", {false, true, 2, true, 2}, {true, 2, true}, 0, false, 0, true, false},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct js_inplace_step s;
		memset(&s, 0x5a, sizeof(s));
		int r = js_inplace_agent_step(&rows[i].v, &rows[i].a, &s);
		if (r != rows[i].want_r || s.patch != rows[i].patch || (s.patch && s.patch_attempt != rows[i].patch_attempt) ||
		    s.exit != rows[i].exit || s.lift != rows[i].lift)
			fail_msg("%s: r=%d patch=%d/%d exit=%d lift=%d", rows[i].name, r, s.patch, s.patch_attempt, s.exit,
				 s.lift);
	}
}

static void test_view(void **state)
{
	(void)state;
	static const struct {
		const char *json;
		bool bypass, has_cur;
		int32_t cur;
		bool has_prev;
		int32_t prev;
	} rows[] = {
		{"{\"spec\":{}}", true, false, 0, false, 0},
		{"{\"spec\":{\"failurePolicy\":{\"restartStrategy\":\"Recreate\"}}}", true, false, 0, false, 0},
		{"{\"spec\":{\"failurePolicy\":{\"restartStrategy\":\"InPlaceRestart\"}},"
		 "\"status\":{\"currentInPlaceRestartAttempt\":3,\"previousInPlaceRestartAttempt\":2}}",
		 false, true, 3, true, 2},
		{"{\"metadata\":{\"annotations\":{\"jobset.sigs.k8s.io/disable-in-place-restart\":\"\"}},"
		 "\"spec\":{\"failurePolicy\":{\"restartStrategy\":\"InPlaceRestart\"}}}",
		 true, false, 0, false, 0},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct js_jobset *js = NULL;
		struct js_diag d = {0};
		json_t *root = json_loads(rows[i].json, 0, NULL);
		if (!root || js_codec_decode_jobset(root, JS_CODEC_LENIENT, &d, &js) != 0)
			fail_msg("row %zu: does not decode", i);
		json_decref(root);
		struct js_inplace_view v = js_inplace_view_of(js);
		assert_int_equal(v.bypass, rows[i].bypass);
		assert_int_equal(v.has_current, rows[i].has_cur);
		assert_int_equal(v.has_previous, rows[i].has_prev);
		if (v.has_current)
			assert_int_equal(v.current, rows[i].cur);
		if (v.has_previous)
			assert_int_equal(v.previous, rows[i].prev);
		js_jobset_free(js);
		js_diag_done(&d);
	}
	struct js_inplace_view none = js_inplace_view_of(NULL);
	assert_false(none.bypass || none.has_current || none.has_previous);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_step),
		cmocka_unit_test(test_view),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
