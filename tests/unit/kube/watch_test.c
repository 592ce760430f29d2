/*
 * watch_test.c - watch stream framing and event decoding of odd responses
 * (kube/watch.h): every chunk split, CRLF, blank lines, a line over the
 * ceiling, truncated streams, ERROR events, malformed events.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "kube/watch.h"

struct collect {
	struct js_buf out; /* "TYPE:name;" per event */
	int stop_after;    /* return an error after this many lines (0 = never) */
	int lines;
};

static int on_line(void *user, const char *line, size_t len)
{
	struct collect *c = user;
	struct js_watch_event ev;
	c->lines++;
	int r = js_watch_decode(line, len, &ev);
	if (r < 0) {
		assert_int_equal(js_buf_puts(&c->out, "BAD;"), 0);
	} else {
		const char *name = js_json_str(json_object_get(ev.object, "metadata"), "name");
		assert_int_equal(js_buf_printf(&c->out, "%s:%s;", js_watch_type_to_string(ev.type), name ? name : "-"),
				 0);
		json_decref(ev.object);
	}
	if (c->stop_after && c->lines == c->stop_after)
		return -42;
	return 0;
}

static const char stream[] =
	"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"}}}\n"
	"\r\n"
	"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"2\"}}}\r\n"
	"   \n"
	"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"3\"}}}\n"
	"{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"4\"}}}\n"
	"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}\n";

static const char expected[] = "ADDED:a;MODIFIED:a;BOOKMARK:-;DELETED:a;ERROR:-;";

static void test_every_split(void **state)
{
	(void)state;
	size_t n = strlen(stream);
	/* one split point anywhere, and also byte-by-byte */
	for (size_t cut = 0; cut <= n; cut++) {
		struct js_watch_framer f;
		struct collect c = {0};
		js_buf_init(&c.out, 0);
		js_watch_framer_init(&f, 0);
		assert_int_equal(js_watch_framer_feed(&f, stream, cut, on_line, &c), 0);
		assert_int_equal(js_watch_framer_feed(&f, stream + cut, n - cut, on_line, &c), 0);
		if (strcmp(js_buf_str(&c.out), expected) != 0)
			fail_msg("split at %zu: got %s", cut, js_buf_str(&c.out));
		assert_int_equal(js_watch_framer_pending(&f), 0);
		js_watch_framer_done(&f);
		js_buf_done(&c.out);
	}
	struct js_watch_framer f;
	struct collect c = {0};
	js_buf_init(&c.out, 0);
	js_watch_framer_init(&f, 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(js_watch_framer_feed(&f, stream + i, 1, on_line, &c), 0);
	assert_string_equal(js_buf_str(&c.out), expected);
	js_watch_framer_done(&f);
	js_buf_done(&c.out);
}

static void test_truncated_and_ceiling(void **state)
{
	(void)state;
	struct js_watch_framer f;
	struct collect c = {0};
	js_buf_init(&c.out, 0);
	/* A stream cut mid-event leaves bytes pending, and nothing is emitted. */
	js_watch_framer_init(&f, 0);
	assert_int_equal(js_watch_framer_feed(&f, stream, 20, on_line, &c), 0);
	assert_int_equal(js_watch_framer_pending(&f), 20);
	assert_int_equal(c.lines, 0);
	js_watch_framer_done(&f);
	/* Lines over the ceiling are refused, whether split or whole. */
	js_watch_framer_init(&f, 16);
	assert_int_equal(js_watch_framer_feed(&f, "0123456789", 10, on_line, &c), 0);
	assert_int_equal(js_watch_framer_feed(&f, "0123456789\n", 11, on_line, &c), JS_ETOOLARGE);
	js_watch_framer_done(&f);
	js_watch_framer_init(&f, 16);
	assert_int_equal(js_watch_framer_feed(&f, "{\"a\":\"0123456789abcdef\"}\n", 25, on_line, &c), JS_ETOOLARGE);
	js_watch_framer_done(&f);
	/* The callback's error stops feeding and is returned. */
	js_watch_framer_init(&f, 0);
	c.stop_after = 2;
	c.lines = 0;
	assert_int_equal(js_watch_framer_feed(&f, stream, strlen(stream), on_line, &c), -42);
	assert_int_equal(c.lines, 2);
	js_watch_framer_done(&f);
	js_buf_done(&c.out);
}

static const struct dcase {
	const char *name;
	const char *line;
	int r;
	enum js_watch_type type;
	int err;
} dcases[] = {
	{"added", "{\"type\":\"ADDED\",\"object\":{}}", 0, JS_WATCH_ADDED, 0},
	{"error 410", "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}", 0,
	 JS_WATCH_ERROR, JS_EGONE},
	{"error 410 without reason", "{\"type\":\"ERROR\",\"object\":{\"code\":410}}", 0, JS_WATCH_ERROR, JS_EGONE},
	{"error 500", "{\"type\":\"ERROR\",\"object\":{\"code\":500,\"reason\":\"InternalError\"}}", 0, JS_WATCH_ERROR,
	 -1104},
	{"unknown type", "{\"type\":\"RENAMED\",\"object\":{}}", JS_EINVALID, 0, 0},
	{"lowercase type", "{\"type\":\"added\",\"object\":{}}", JS_EINVALID, 0, 0},
	{"no object", "{\"type\":\"ADDED\"}", JS_EINVALID, 0, 0},
	{"object is a string", "{\"type\":\"ADDED\",\"object\":\"x\"}", JS_EINVALID, 0, 0},
	{"not JSON", "HTTP/1.1 500 oops", JS_EINVALID, 0, 0},
	{"array", "[]", JS_EINVALID, 0, 0},
	{"duplicate keys", "{\"type\":\"ADDED\",\"type\":\"DELETED\",\"object\":{}}", JS_EINVALID, 0, 0},
	{"trailing garbage", "{\"type\":\"ADDED\",\"object\":{}} x", JS_EINVALID, 0, 0},
};

static void test_decode_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof dcases / sizeof dcases[0]; i++) {
		const struct dcase *c = &dcases[i];
		struct js_watch_event ev = {0};
		int r = js_watch_decode(c->line, strlen(c->line), &ev);
		if (r != c->r)
			fail_msg("case '%s': r=%d, expected %d", c->name, r, c->r);
		if (r == 0) {
			assert_int_equal(ev.type, c->type);
			assert_int_equal(ev.err, c->err);
			json_decref(ev.object);
		}
	}
	assert_int_equal(js_watch_type_from_string("BOOKMARK"), JS_WATCH_BOOKMARK);
	assert_int_equal(js_watch_type_from_string(NULL), JS_WATCH__INVALID);
	assert_null(js_watch_type_to_string(JS_WATCH__COUNT));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_split),
		cmocka_unit_test(test_truncated_and_ceiling),
		cmocka_unit_test(test_decode_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
