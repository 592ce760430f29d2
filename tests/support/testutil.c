/*
 * testutil.c - helpers shared by the unit tests of every layer (base only;
 * the JobSet helpers are in testutil_api.c).
 */
#include "support/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/load.h"

json_t *tu_yaml(const char *yaml)
{
	struct js_diag d;
	js_diag_init(&d);
	struct js_docs *docs = NULL;
	int r = js_docs_load("test.yaml", yaml, strlen(yaml), &d, &docs);
	if (r < 0)
		tu_print_diag(&d);
	assert_int_equal(r, 0);
	assert_true(js_docs_count(docs) >= 1);
	json_t *root = json_deep_copy(js_docs_root(docs, 0));
	js_docs_free(docs);
	js_diag_done(&d);
	return root;
}

void tu_merge_patch(json_t *target, const char *patch_json)
{
	if (!patch_json)
		return;
	json_error_t err;
	json_t *p = json_loads(patch_json, 0, &err);
	if (!p)
		fprintf(stderr, "bad patch %s: %s\n", patch_json, err.text);
	assert_non_null(p);
	js_json_merge_patch(target, p);
	json_decref(p);
}

char *tu_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	struct js_buf b;
	js_buf_init(&b, 0);
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (js_buf_add(&b, chunk, n) < 0)
			break;
	fclose(f);
	if (len)
		*len = b.len;
	return js_buf_take(&b);
}

const char *tu_src_path(const char *rel)
{
	static char buf[4096];
	const char *root = getenv("JS_SOURCE_DIR");
	snprintf(buf, sizeof(buf), "%s/%s", root ? root : ".", rel);
	return buf;
}

void tu_print_diag(const struct js_diag *d)
{
	struct js_buf b;
	js_buf_init(&b, 0);
	for (size_t i = 0; i < d->n; i++) {
		js_buf_clear(&b);
		if (js_diag_format(&d->items[i], false, &b) == 0)
			fprintf(stderr, "  diag: %s\n", js_buf_str(&b));
	}
	js_buf_done(&b);
}
