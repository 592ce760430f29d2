/*
 * restart_ctest.c - the informer across API-server restarts, on the real
 * control plane (disruptive: ctest runs it alone, RUN_SERIAL).
 *
 * 1. A watch resumes across a kube-apiserver restart and no change is lost.
 * 2. 410 Gone after etcd compaction: while the apiserver is down an object
 *    is deleted directly in etcd and etcd is compacted, so the informer's
 *    resourceVersion is gone when it reconnects; it must relist and report
 *    the vanished object as a delete (final state unknown), losing nothing.
 *
 * The apiserver is restarted with its own command line (from /proc) and its
 * pid file in $JOBSET_CLUSTER_DIR/pids is updated, so `hack/cluster down`
 * still stops it.
 */
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cluster/kt.h"
#include "kube/informer.h"

extern char **environ;

static struct js_client *C;
static const char *NS;

static const char *env_or_die(const char *name)
{
	const char *v = getenv(name);
	if (!v || !*v)
		KT_DIE("%s is not set: eval \"$(hack/cluster env)\" first", name);
	return v;
}

/* ---- apiserver stop/start ---------------------------------------------- */

struct cmdline {
	char *buf;
	char *argv[256];
};

static pid_t read_pid(void)
{
	char p[512];
	snprintf(p, sizeof p, "%s/pids/kube-apiserver.pid", env_or_die("JOBSET_CLUSTER_DIR"));
	FILE *f = fopen(p, "re");
	if (!f)
		KT_DIE("no apiserver pid file %s", p);
	int pid = 0;
	if (fscanf(f, "%d", &pid) != 1)
		KT_DIE("bad pid file %s", p);
	fclose(f);
	return (pid_t)pid;
}

static void read_cmdline(pid_t pid, struct cmdline *cl)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/cmdline", (int)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		KT_DIE("apiserver pid %d is not running", (int)pid);
	cl->buf = calloc(1, 65536);
	ssize_t n = read(fd, cl->buf, 65535);
	close(fd);
	if (n <= 0)
		KT_DIE("cannot read %s", p);
	size_t k = 0;
	for (ssize_t i = 0; i < n && k < 255; i += (ssize_t)strlen(cl->buf + i) + 1)
		cl->argv[k++] = cl->buf + i;
	cl->argv[k] = NULL;
}

static bool alive(pid_t pid)
{
	char p[64], line[256];
	snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
	FILE *f = fopen(p, "re");
	if (!f)
		return false;
	bool zombie = false;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, "State:", 6) == 0 && strchr(line, 'Z'))
			zombie = true;
	fclose(f);
	return !zombie;
}

/* SIGTERM, then SIGKILL after 10 s as `hack/cluster down` does. Returns the
 * time it took, ms. */
static uint64_t stop_apiserver(pid_t pid)
{
	uint64_t t0 = kt_now_ms();
	kill(pid, SIGTERM);
	uint64_t end = kt_now_ms() + 10000;
	while (alive(pid)) {
		if (kt_now_ms() > end) {
			kill(pid, SIGKILL);
			end = kt_now_ms() + 10000;
		}
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
		waitpid(pid, NULL, WNOHANG); /* when it was our child (second restart) */
	}
	return kt_now_ms() - t0;
}

static void start_apiserver(struct cmdline *cl)
{
	const char *dir = env_or_die("JOBSET_CLUSTER_DIR");
	char log[512], pidf[512];
	snprintf(log, sizeof log, "%s/logs/kube-apiserver.log", dir);
	snprintf(pidf, sizeof pidf, "%s/pids/kube-apiserver.pid", dir);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_APPEND | O_CREAT, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	posix_spawnattr_t at;
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
	pid_t pid;
	if (posix_spawn(&pid, cl->argv[0], &fa, &at, cl->argv, environ) != 0)
		KT_DIE("cannot restart %s", cl->argv[0]);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	FILE *f = fopen(pidf, "we");
	fprintf(f, "%d\n", (int)pid);
	fclose(f);
}

static uint64_t wait_ready(void)
{
	uint64_t end = kt_now_ms() + 90000;
	while (kt_now_ms() < end) {
		struct js_client_req req = {.method = "GET", .path = "/readyz"};
		struct js_client_resp resp = {0};
		int r = js_client_do(C, &req, &resp, NULL, 0);
		long code = resp.code;
		js_client_resp_done(&resp);
		if (r == 0 && code == 200)
			return kt_now_ms();
		struct timespec ts = {0, 50 * 1000000L};
		nanosleep(&ts, NULL);
	}
	KT_DIE("kube-apiserver did not become ready within 90 s after restart");
}

/* ---- etcd (v3 JSON gateway) --------------------------------------------- */

static size_t sink(char *p, size_t s, size_t n, void *ud)
{
	struct js_buf *b = ud;
	return js_buf_add(b, p, s * n) == 0 ? s * n : 0;
}

static json_t *etcd_post(const char *path, json_t *body)
{
	char url[512];
	snprintf(url, sizeof url, "%s%s", env_or_die("JOBSET_TEST_ETCD"), path);
	char *data = json_dumps(body, JSON_COMPACT);
	struct js_buf out;
	js_buf_init(&out, 0);
	CURL *e = curl_easy_init();
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, data);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &out);
	CURLcode cc = curl_easy_perform(e);
	long code = 0;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(e);
	free(data);
	if (cc != CURLE_OK || code != 200)
		KT_DIE("etcd %s failed: curl %d http %ld %s", path, (int)cc, code, js_buf_str(&out));
	json_t *j = json_loads(js_buf_str(&out), 0, NULL);
	js_buf_done(&out);
	return j;
}

static char *b64(const char *s)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(s);
	char *o = calloc(1, n / 3 * 4 + 8);
	size_t k = 0;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned char)s[i] << 16;
		if (i + 1 < n)
			v |= (unsigned char)s[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)s[i + 2];
		o[k++] = t[(v >> 18) & 63];
		o[k++] = t[(v >> 12) & 63];
		o[k++] = i + 1 < n ? t[(v >> 6) & 63] : '=';
		o[k++] = i + 2 < n ? t[v & 63] : '=';
	}
	return o;
}

/* Delete one object straight from etcd and compact to the head revision. */
static void etcd_delete_and_compact(const char *key)
{
	char *k = b64(key);
	json_t *req = json_pack("{s:s}", "key", k);
	json_t *res = etcd_post("/v3/kv/deleterange", req);
	const char *deleted = js_json_str(res, "deleted");
	if (!deleted || strcmp(deleted, "1") != 0)
		KT_DIE("etcd key %s was not deleted", key);
	const char *rev = js_json_str(json_object_get(res, "header"), "revision");
	json_t *creq = json_pack("{s:s,s:b}", "revision", rev, "physical", 1);
	json_decref(etcd_post("/v3/kv/compaction", creq));
	json_decref(creq);
	json_decref(req);
	json_decref(res);
	free(k);
}

/* ---- informer helpers --------------------------------------------------- */

struct counts {
	pthread_mutex_t lock;
	int deletes, unknown;
	char last_unknown[64];
};

static void on_delete(void *u, const void *rec, const json_t *o, bool unknown)
{
	struct counts *c = u;
	/* A delete inferred by a relist has no final JSON: the record (the
	 * last JSON seen, for an informer without a type) names it. */
	if (!o)
		o = rec;
	pthread_mutex_lock(&c->lock);
	c->deletes++;
	if (unknown) {
		c->unknown++;
		snprintf(c->last_unknown, sizeof c->last_unknown, "%s",
			 js_json_str(json_object_get(o, "metadata"), "name"));
	}
	pthread_mutex_unlock(&c->lock);
}

static void put(const char *name, const char *app)
{
	json_t *cm = kt_configmap(NS, name, app, "x");
	struct js_apierr e = {0};
	KT_OK(js_client_create(C, &js_client_res_configmaps, NULL, cm, NULL, NULL, &e), &e);
	json_decref(cm);
	js_apierr_done(&e);
}

/* Wait until the cache holds exactly what the server lists for `sel`
 * (same names and resourceVersions). */
static bool wait_consistent(struct js_informer *inf, const char *sel, int timeout_ms)
{
	uint64_t end = kt_now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		uint64_t gen = js_informer_generation(inf);
		json_t *list = NULL;
		struct js_list_opts lo = {.label_selector = sel};
		bool same = false;
		if (js_client_list(C, &js_client_res_configmaps, NS, &lo, &list, NULL) == 0) {
			json_t *items = json_object_get(list, "items");
			same = json_array_size(items) == js_informer_len(inf);
			size_t i;
			json_t *o;
			json_array_foreach(items, i, o) {
				json_t *md = json_object_get(o, "metadata");
				json_t *c = js_informer_get_json(inf, NS, js_json_str(md, "name"));
				const char *crv = js_json_str(json_object_get(c, "metadata"), "resourceVersion");
				if (!crv || strcmp(crv, js_json_str(md, "resourceVersion")) != 0)
					same = false;
				json_decref(c);
			}
			json_decref(list);
		}
		if (same)
			return true;
		uint64_t now = kt_now_ms();
		if (now >= end)
			return false;
		int r = js_informer_wait_change(inf, gen, (int)(end - now > 500 ? 500 : end - now));
		(void)r; /* re-check either way: the server side may have moved */
	}
}

static int setup(void **state)
{
	(void)state;
	struct js_client_opts o = {.qps = -1};
	C = kt_client(&o);
	NS = kt_namespace(C, "kube-restart");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	kt_delete_namespace(C, NS);
	C = js_client_free(C);
	return 0;
}

static void test_watch_resumes_across_restart(void **state)
{
	(void)state;
	struct js_informer_opts o = {.res = &js_client_res_configmaps, .namespace = NS, .label_selector = "app=r",
				     .backoff_initial_ms = 50, .backoff_max_ms = 500};
	struct js_informer *inf = NULL;
	assert_int_equal(js_informer_new(C, &o, &inf), 0);
	assert_int_equal(js_informer_start(inf), 0);
	assert_int_equal(js_informer_wait_synced(inf, 20000), 0);
	put("r1", "r");
	assert_true(wait_consistent(inf, "app=r", 10000));

	pid_t pid = read_pid();
	struct cmdline cl;
	read_cmdline(pid, &cl);
	uint64_t stop_ms = stop_apiserver(pid);
	uint64_t t_start = kt_now_ms();
	start_apiserver(&cl);
	uint64_t t_ready = wait_ready();
	put("r2", "r");
	uint64_t t_put = kt_now_ms();
	uint64_t gen = js_informer_generation(inf);
	json_t *r2 = NULL;
	while (!(r2 = js_informer_get_json(inf, NS, "r2")) && kt_now_ms() < t_put + 20000)
		if (js_informer_wait_change(inf, gen, 200) == 0)
			gen = js_informer_generation(inf);
	uint64_t t_seen = kt_now_ms();
	assert_non_null(r2);
	json_decref(r2);
	assert_true(wait_consistent(inf, "app=r", 10000));
	struct js_informer_stats st;
	js_informer_stats(inf, &st);
	print_message("apiserver restart: stop %llu ms, start->ready %llu ms; event created after ready seen in %llu ms; "
		      "watches %llu, watch errors %llu, lists %llu, relists on 410 %llu\n",
		      (unsigned long long)stop_ms, (unsigned long long)(t_ready - t_start), (unsigned long long)(t_seen - t_put),
		      (unsigned long long)st.watches, (unsigned long long)st.watch_errors, (unsigned long long)st.lists,
		      (unsigned long long)st.relists_gone);
	assert_true(st.watch_errors >= 1);
	assert_true(st.watches >= 2);
	assert_int_equal(js_informer_stop(inf), 0);
	assert_int_equal(js_informer_free(inf), 0);
	free(cl.buf);
}

static void test_gone_after_compaction_relists(void **state)
{
	(void)state;
	struct counts cnt = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct js_informer_opts o = {.res = &js_client_res_configmaps, .namespace = NS, .label_selector = "app=g",
				     .backoff_initial_ms = 50, .backoff_max_ms = 500,
				     .handlers = {.on_delete = on_delete, .user = &cnt}};
	put("g1", "g");
	put("g2", "g");
	put("g3", "g");
	struct js_informer *inf = NULL;
	assert_int_equal(js_informer_new(C, &o, &inf), 0);
	assert_int_equal(js_informer_start(inf), 0);
	assert_int_equal(js_informer_wait_synced(inf, 20000), 0);
	assert_int_equal(js_informer_len(inf), 3);

	pid_t pid = read_pid();
	struct cmdline cl;
	read_cmdline(pid, &cl);
	stop_apiserver(pid);
	/* While nobody can watch: g2 vanishes, and history is compacted away. */
	char key[256];
	snprintf(key, sizeof key, "/registry/configmaps/%s/g2", NS);
	etcd_delete_and_compact(key);
	start_apiserver(&cl);
	wait_ready();
	put("g4", "g");
	assert_true(wait_consistent(inf, "app=g", 20000));
	assert_null(js_informer_get(inf, NS, "g2"));
	json_t *g4 = js_informer_get_json(inf, NS, "g4");
	assert_non_null(g4);
	json_decref(g4);
	struct js_informer_stats st;
	js_informer_stats(inf, &st);
	print_message("after compaction: lists %llu, relists on 410 %llu, inferred deletes %llu\n",
		      (unsigned long long)st.lists, (unsigned long long)st.relists_gone,
		      (unsigned long long)st.relist_deletes);
	assert_true(st.relists_gone >= 1);
	assert_true(st.lists >= 2);
	/* The store changes before handlers run: wait for the handler too. */
	uint64_t end = kt_now_ms() + 5000;
	for (;;) {
		pthread_mutex_lock(&cnt.lock);
		int u = cnt.unknown;
		pthread_mutex_unlock(&cnt.lock);
		if (u >= 1 || kt_now_ms() > end)
			break;
		struct timespec ts = {0, 5 * 1000000L};
		nanosleep(&ts, NULL);
	}
	pthread_mutex_lock(&cnt.lock);
	assert_int_equal(cnt.unknown, 1);
	assert_string_equal(cnt.last_unknown, "g2");
	pthread_mutex_unlock(&cnt.lock);
	assert_int_equal(js_informer_stop(inf), 0);
	assert_int_equal(js_informer_free(inf), 0);
	free(cl.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_watch_resumes_across_restart),
		cmocka_unit_test(test_gone_after_compaction_relists),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
