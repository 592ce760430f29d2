/*
 * informer_test.c - what an informer makes of a watch stream
 * (js_informer_replay: the reflector's framing, decoding, store writes and
 * handler calls, without a request), as a table of recorded streams: the
 * handler calls in order, the store afterwards, the resourceVersion it
 * would resume from, and how the stream ended. Each stream is also fed
 * byte by byte, which must change nothing. The list+watch loop against an
 * API server is tested on hack/cluster (tests/cluster/informer_ctest.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "kube/client.h"
#include "kube/informer.h"

#define EV(type, name, rv) "{\"type\":\"" type "\",\"object\":{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns\"," \
	"\"resourceVersion\":\"" rv "\"}}}\n"

/* "add:a;upd:a;del:a;" per handler call. */
static void log_call(void *user, const char *what, const json_t *rec)
{
	const char *name = js_json_str(json_object_get(rec, "metadata"), "name");
	assert_int_equal(js_buf_printf(user, "%s:%s;", what, name ? name : "-"), 0);
}

static void on_add(void *user, const void *rec, const json_t *obj)
{
	(void)obj;
	log_call(user, "add", rec);
}

static void on_update(void *user, const void *old_rec, const void *rec, const json_t *obj)
{
	(void)old_rec;
	(void)obj;
	log_call(user, "upd", rec);
}

static void on_delete(void *user, const void *rec, const json_t *obj, bool unknown)
{
	(void)obj;
	assert_false(unknown);
	log_call(user, "del", rec);
}

static const struct rcase {
	const char *name;
	const char *stream;
	int r;             /* what replay returns */
	const char *calls; /* handler calls */
	const char *keys;  /* stored keys, sorted, ";"-separated */
	const char *rv;    /* resume resourceVersion */
} cases[] = {
	{"add, update, delete", EV("ADDED", "a", "1") EV("ADDED", "b", "2") EV("MODIFIED", "a", "3") EV("DELETED", "b", "4"),
	 0, "add:a;add:b;upd:a;del:b;", "ns/a;", "4"},
	{"same resourceVersion is no change", EV("ADDED", "a", "1") EV("MODIFIED", "a", "1"), 0, "add:a;", "ns/a;", "1"},
	{"bookmark moves the resourceVersion only",
	 EV("ADDED", "a", "1") "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}\n", 0,
	 "add:a;", "ns/a;", "9"},
	{"CRLF and blank lines", EV("ADDED", "a", "1") "\r\n   \n" EV("ADDED", "b", "2"), 0, "add:a;add:b;", "ns/a;ns/b;",
	 "2"},
	{"delete of an unknown object", EV("DELETED", "x", "5"), 0, "", "", "5"},
	{"410 Gone ends the stream",
	 EV("ADDED", "a", "1") "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}\n"
		 EV("ADDED", "b", "2"),
	 JS_EGONE, "add:a;", "ns/a;", "1"},
	{"malformed line ends the stream", EV("ADDED", "a", "1") "{\"type\":\"ADDED\"}\n" EV("ADDED", "b", "2"), JS_EINVALID,
	 "add:a;", "ns/a;", "1"},
	{"unfinished last line is dropped", EV("ADDED", "a", "1") "{\"type\":\"ADDED\",\"object\":{\"metadata\":{", 0,
	 "add:a;", "ns/a;", "1"},
	{"object without a name is not stored", "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"3\"}}}\n",
	 0, "", "", "3"},
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Replay `c` in slices of `step` bytes (0: one slice) and check the result. */
static void run_case(const struct rcase *c, size_t step)
{
	struct js_buf calls;
	js_buf_init(&calls, 0);
	struct js_informer_opts o = {.res = &js_client_res_jobs, .handlers = {on_add, on_update, on_delete, &calls, NULL}};
	struct js_informer *inf = NULL;
	assert_int_equal(js_informer_new(NULL, &o, &inf), 0);
	size_t n = strlen(c->stream), k = step ? (n + step - 1) / step : 1;
	const char **chunks = calloc(k ? k : 1, sizeof *chunks);
	size_t *lens = calloc(k ? k : 1, sizeof *lens);
	for (size_t i = 0; i < k; i++) {
		chunks[i] = c->stream + i * step;
		lens[i] = step && n - i * step > step ? step : n - i * step;
	}
	int r = js_informer_replay(inf, chunks, lens, k);
	if (r != c->r || strcmp(js_buf_str(&calls), c->calls) != 0)
		fail_msg("%s (step %zu): r=%d calls '%s', want r=%d calls '%s'", c->name, step, r, js_buf_str(&calls), c->r,
			 c->calls);
	const void **recs = NULL;
	size_t nr = js_informer_list(inf, &recs);
	const char **names = calloc(nr ? nr : 1, sizeof *names);
	for (size_t i = 0; i < nr; i++)
		names[i] = js_json_str(json_object_get(recs[i], "metadata"), "name");
	qsort(names, nr, sizeof *names, cmp_str);
	struct js_buf keys;
	js_buf_init(&keys, 0);
	for (size_t i = 0; i < nr; i++)
		assert_int_equal(js_buf_printf(&keys, "ns/%s;", names[i]), 0);
	assert_string_equal(js_buf_str(&keys), c->keys);
	char rv[128];
	js_informer_resource_version(inf, rv, sizeof rv);
	assert_string_equal(rv, c->rv);
	js_informer_release(inf, recs, nr);
	free(names);
	free(chunks);
	free(lens);
	js_buf_done(&keys);
	js_buf_done(&calls);
	assert_int_equal(js_informer_free(inf), 0);
}

static void test_replay_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		run_case(&cases[i], 0);
		run_case(&cases[i], 1);
		run_case(&cases[i], 7);
	}
}

static void test_replay_refused_once_started(void **state)
{
	(void)state;
	/* A started informer's store belongs to its reflector thread: replay
	 * refuses without touching it. The client points at a port nothing
	 * listens on, so the reflector only retries its LIST. */
	struct js_kubeconfig kc = {.server = "https://127.0.0.1:1"};
	struct js_client *c = NULL;
	assert_int_equal(js_client_new(&kc, NULL, &c), 0);
	struct js_informer_opts o = {.res = &js_client_res_jobs};
	struct js_informer *inf = NULL;
	assert_int_equal(js_informer_new(c, &o, &inf), 0);
	const char *chunk = EV("ADDED", "a", "1");
	size_t len = strlen(chunk);
	assert_int_equal(js_informer_start(inf), 0);
	assert_int_equal(js_informer_replay(inf, &chunk, &len, 1), -EBUSY);
	assert_int_equal(js_informer_len(inf), 0);
	assert_int_equal(js_informer_stop(inf), 0);
	assert_int_equal(js_informer_replay(inf, &chunk, &len, 1), -EBUSY);
	assert_int_equal(js_informer_free(inf), 0);
	js_client_free(c);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_table),
		cmocka_unit_test(test_replay_refused_once_started),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return r;
}
