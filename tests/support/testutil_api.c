/*
 * testutil_api.c - the unit-test helpers that need the JobSet API, in their
 * own library (js_test_support_api) so that the tests of base and kube link
 * no api code (the layer rule holds for tests too).
 */
#include <stdio.h>
#include <stdlib.h>

#include "api/codec.h"
#include "support/testutil.h"

struct js_jobset *tu_decode(const json_t *j)
{
	struct js_diag d;
	js_diag_init(&d);
	struct js_jobset *js = NULL;
	int r = js_codec_decode_jobset(j, JS_CODEC_STRICT, &d, &js);
	if (r < 0)
		tu_print_diag(&d);
	assert_int_equal(r, 0);
	js_diag_done(&d);
	return js;
}

struct js_jobset *tu_fixture(const char *rel, const char *patch)
{
	char *text = tu_read_file(tu_src_path(rel), NULL);
	if (!text)
		fail_msg("cannot read %s", rel);
	json_t *doc = tu_yaml(text);
	tu_merge_patch(doc, patch);
	struct js_jobset *js = tu_decode(doc);
	json_decref(doc);
	free(text);
	return js;
}
