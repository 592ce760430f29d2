/*
 * hosts_test.c - pod positions and the hosts files that stand in for the
 * headless Service, table-driven: a pod's own file (with and without a
 * subdomain, with the shared file appended), and the shared file of a
 * JobSet (every Indexed pod, none of the NonIndexed ones, positions counted
 * over both, addresses from the run's block), the number of positions and
 * the position of a hostname (--publish).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "api/codec.h"
#include "api/defaults.h"
#include "base/diag.h"
#include "local/hosts.h"

#define HEADER                                                                                        \
	"# Written by jobset run: the pod's own name and the JobSet's headless Service.\n"           \
	"127.0.0.1\tlocalhost\n"                                                                      \
	"::1\tlocalhost ip6-localhost ip6-loopback\n"

struct fixture {
	char dir[64];
	char path[96], shared[96];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/js-hosts-test-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/own", f->dir);
	snprintf(f->shared, sizeof(f->shared), "%s/hosts", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	(void)unlink(f->path);
	(void)unlink(f->shared);
	int rc = rmdir(f->dir); /* fails if a temporary file was left behind */
	free(f);
	return rc;
}

static char *slurp(const char *path)
{
	FILE *fp = fopen(path, "re");
	if (!fp)
		fail_msg("cannot open '%s': %s", path, strerror(errno));
	char *buf = calloc(1, 65536);
	size_t n = fread(buf, 1, 65535, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

/* ---- a pod's own file ---- */

struct owncase {
	const char *name;
	const char *ip, *host, *subdomain, *ns;
	const char *shared; /* content of the shared file, or NULL for none */
	const char *want;   /* after the header */
};

static const struct owncase own_cases[] = {
	{"no subdomain", "127.10.0.5", "solo-abcde", NULL, "default", NULL, "127.10.0.5\tsolo-abcde\n"},
	{"subdomain: every DNS form", "127.10.1.1", "js-w-0-0", "js", "team", NULL,
	 "127.10.1.1\tjs-w-0-0.js.team.svc.cluster.local js-w-0-0.js.team.svc js-w-0-0.js js-w-0-0\n"},
	{"shared entries follow, without the shared file's header", "127.10.1.1", "h", NULL, "default",
	 HEADER "127.10.1.2\tpeer.js.default.svc.cluster.local peer.js.default.svc peer.js peer\n",
	 "127.10.1.1\th\n127.10.1.2\tpeer.js.default.svc.cluster.local peer.js.default.svc peer.js peer\n"},
	{"its own line of the shared file (no bare name) gives way to its own entry; peers keep no bare name",
	 "10.244.0.2", "js-w-0-0", "js", "team",
	 HEADER "10.244.0.2\tjs-w-0-0.js.team.svc.cluster.local js-w-0-0.js.team.svc js-w-0-0.js\n"
		"10.244.0.3\tjs-w-0-1.js.team.svc.cluster.local js-w-0-1.js.team.svc js-w-0-1.js\n"
		"10.244.0.20\tjs-w-1-8.js.team.svc.cluster.local js-w-1-8.js.team.svc js-w-1-8.js\n",
	 "10.244.0.2\tjs-w-0-0.js.team.svc.cluster.local js-w-0-0.js.team.svc js-w-0-0.js js-w-0-0\n"
	 "10.244.0.3\tjs-w-0-1.js.team.svc.cluster.local js-w-0-1.js.team.svc js-w-0-1.js\n"
	 "10.244.0.20\tjs-w-1-8.js.team.svc.cluster.local js-w-1-8.js.team.svc js-w-1-8.js\n"},
};

static void test_own(void **state)
{
	struct fixture *f = *state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(own_cases); i++) {
		const struct owncase *c = &own_cases[i];
		if (c->shared) {
			FILE *fp = fopen(f->shared, "we");
			assert_non_null(fp);
			assert_int_equal(fputs(c->shared, fp) >= 0, 1);
			assert_int_equal(fclose(fp), 0);
		}
		int rc = js_hosts_write_own(f->path, c->ip, c->host, c->subdomain, c->ns, c->shared ? f->shared : NULL);
		if (rc != 0)
			fail_msg("case '%s': js_hosts_write_own: %s", c->name, js_strerror(rc));
		char *got = slurp(f->path);
		size_t hn = strlen(HEADER);
		if (strncmp(got, HEADER, hn) != 0 || strcmp(got + hn, c->want) != 0)
			fail_msg("case '%s':\nwant:\n%s%s\ngot:\n%s", c->name, HEADER, c->want, got);
		free(got);
		(void)unlink(f->shared);
	}
}

static void test_own_missing_shared_file(void **state)
{
	struct fixture *f = *state;
	/* The shared file appears only with the Service; a pod started before
	 * it still gets its own entry. */
	assert_int_equal(js_hosts_write_own(f->path, "127.10.0.5", "h", NULL, "default", f->shared), 0);
	char *got = slurp(f->path);
	assert_string_equal(got, HEADER "127.10.0.5\th\n");
	free(got);
}

static void test_unwritable(void **state)
{
	struct fixture *f = *state;
	char path[128];
	snprintf(path, sizeof(path), "%s/no-such-dir/hosts", f->dir);
	assert_int_equal(js_hosts_write_own(path, "127.10.0.5", "h", NULL, "default", NULL), -ENOENT);
}

/* ---- the shared file of a JobSet ---- */

struct svccase {
	const char *name;
	const char *jobset; /* JSON of the JobSet, defaulted before use */
	const char *want;   /* after the header */
	uint64_t n_positions;
	const char *find;   /* a hostname to look up, or NULL */
	int64_t find_pos;   /* its position, or -1 for "not found" */
};

#define TMPL(extra)                                                                                   \
	"\"template\":{\"spec\":{" extra "\"template\":{\"spec\":{\"restartPolicy\":\"Never\","           \
	"\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"command\":[\"true\"]}]}}}}"

static const struct svccase svc_cases[] = {
	{"indexed pods in JobSet order; NonIndexed ones keep their ordinals but get no entry",
	 "{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":{\"name\":\"js\","
	 "\"namespace\":\"team\"},\"spec\":{\"replicatedJobs\":["
	 "{\"name\":\"a\",\"replicas\":2," TMPL("\"completions\":2,\"parallelism\":2,") "},"
	 "{\"name\":\"b\"," TMPL("\"completionMode\":\"NonIndexed\",\"completions\":3,\"parallelism\":3,") "},"
	 "{\"name\":\"c\"," TMPL("") "}]}}",
	 "10.244.0.2\tjs-a-0-0.js.team.svc.cluster.local js-a-0-0.js.team.svc js-a-0-0.js\n"
	 "10.244.0.3\tjs-a-0-1.js.team.svc.cluster.local js-a-0-1.js.team.svc js-a-0-1.js\n"
	 "10.244.0.4\tjs-a-1-0.js.team.svc.cluster.local js-a-1-0.js.team.svc js-a-1-0.js\n"
	 "10.244.0.5\tjs-a-1-1.js.team.svc.cluster.local js-a-1-1.js.team.svc js-a-1-1.js\n"
	 "10.244.0.9\tjs-c-0-0.js.team.svc.cluster.local js-c-0-0.js.team.svc js-c-0-0.js\n",
	 8, "js-c-0-0", 7},
	{"a NonIndexed pod has no stable hostname to find",
	 "{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":{\"name\":\"js\"},"
	 "\"spec\":{\"replicatedJobs\":["
	 "{\"name\":\"b\"," TMPL("\"completionMode\":\"NonIndexed\",\"completions\":3,\"parallelism\":3,") "}]}}",
	 "", 3, "js-b-0-0", -1},
	{"custom subdomain and default namespace",
	 "{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":{\"name\":\"t\"},"
	 "\"spec\":{\"network\":{\"subdomain\":\"net\"},\"replicatedJobs\":[{\"name\":\"w\"," TMPL("") "}]}}",
	 "10.244.0.2\tt-w-0-0.net.default.svc.cluster.local t-w-0-0.net.default.svc t-w-0-0.net\n", 1,
	 "t-w-0-0", 0},
	{"replicas 0: only the header",
	 "{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":{\"name\":\"z\"},"
	 "\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":0," TMPL("") "}]}}",
	 "", 0, "z-w-0-0", -1},
};

static void test_service(void **state)
{
	struct fixture *f = *state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(svc_cases); i++) {
		const struct svccase *c = &svc_cases[i];
		json_error_t e;
		json_t *root = json_loads(c->jobset, 0, &e);
		if (!root)
			fail_msg("case '%s': bad JSON: %s at %d:%d", c->name, e.text, e.line, e.column);
		struct js_diag diag;
		js_diag_init(&diag);
		struct js_jobset *js = NULL;
		if (js_codec_decode_jobset(root, JS_CODEC_STRICT, &diag, &js) < 0)
			fail_msg("case '%s': the JobSet does not decode (%zu problems)", c->name, diag.n);
		(void)js_default_jobset(js);
		struct js_ipam *ipam = js_ipam_new(JS_IPAM_POD_BASE, js_hosts_n_positions(js));
		int rc = js_hosts_write_service(f->shared, js, ipam, false);
		js_ipam_free(ipam);
		if (rc != 0)
			fail_msg("case '%s': js_hosts_write_service: %s", c->name, js_strerror(rc));
		if (js_hosts_n_positions(js) != c->n_positions)
			fail_msg("case '%s': want %llu positions, got %llu", c->name, (unsigned long long)c->n_positions,
				 (unsigned long long)js_hosts_n_positions(js));
		uint64_t pos = 0;
		rc = js_hosts_find(js, c->find, &pos);
		if (c->find_pos < 0 ? rc != JS_ENOTFOUND : (rc != 0 || pos != (uint64_t)c->find_pos))
			fail_msg("case '%s': find '%s': want %lld, got rc %d pos %llu", c->name, c->find,
				 (long long)c->find_pos, rc, (unsigned long long)pos);
		char *got = slurp(f->shared);
		size_t hn = strlen(HEADER);
		if (strncmp(got, HEADER, hn) != 0 || strcmp(got + hn, c->want) != 0)
			fail_msg("case '%s':\nwant:\n%s%s\ngot:\n%s", c->name, HEADER, c->want, got);
		free(got);
		js_jobset_free(js);
		js_diag_done(&diag);
		json_decref(root);
	}
}

/* Issue 22: what a local run holds at once, and its Indexed hostnames, fit
 * the run's addresses, or the run is refused naming the ReplicatedJob. */
static void test_capacity(void **state)
{
	static const struct {
		const char *name;
		const char *rjobs; /* the replicatedJobs list */
		const char *err;   /* NULL: fits 10 addresses */
	} cases[] = {
		{"10 pods at once fit", "{\"name\":\"a\",\"replicas\":5," TMPL("\"completions\":2,\"parallelism\":2,") "}", NULL},
		{"parallelism 2147483647 (NonIndexed)",
		 "{\"name\":\"a\"," TMPL("\"completionMode\":\"NonIndexed\",\"completions\":2147483647,\"parallelism\":2147483647,") "}",
		 "spec.replicatedJobs[0] (a): the run would hold 2147483647 pods at once"},
		{"parallelism capped by completions", "{\"name\":\"a\"," TMPL("\"completionMode\":\"NonIndexed\",\"completions\":3,\"parallelism\":2147483647,") "}",
		 NULL},
		{"completions 2147483647 one at a time (NonIndexed)",
		 "{\"name\":\"a\"," TMPL("\"completionMode\":\"NonIndexed\",\"completions\":2147483647,\"parallelism\":1,") "}", NULL},
		{"Indexed hostnames past the addresses",
		 "{\"name\":\"a\",\"replicas\":2," TMPL("\"completions\":6,\"parallelism\":1,") "}",
		 "the run would hold 12 Indexed hostnames (replicas x completions)"},
		{"summed over ReplicatedJobs", "{\"name\":\"a\",\"replicas\":6," TMPL("") "},{\"name\":\"b\",\"replicas\":5," TMPL("") "}",
		 "spec.replicatedJobs[1] (b): the run would hold 11 pods at once"},
		{"replicas 2000000000", "{\"name\":\"a\",\"replicas\":2000000000," TMPL("") "}", "2000000000 pods at once"},
	};
	(void)state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(cases); i++) {
		char *text = NULL;
		if (asprintf(&text, "{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":"
				    "{\"name\":\"js\"},\"spec\":{\"replicatedJobs\":[%s]}}",
			     cases[i].rjobs) < 0)
			fail_msg("out of memory");
		json_t *root = json_loads(text, 0, NULL);
		free(text);
		struct js_diag diag;
		js_diag_init(&diag);
		struct js_jobset *js = NULL;
		if (!root || js_codec_decode_jobset(root, JS_CODEC_STRICT, &diag, &js) < 0)
			fail_msg("case '%s': the JobSet does not decode", cases[i].name);
		(void)js_default_jobset(js);
		char *err = NULL;
		int rc = js_hosts_check_capacity(js, 10, &err);
		if (cases[i].err ? rc != JS_EINVALID || !strstr(err, cases[i].err) || !strstr(err, "has 10")
				 : rc != 0)
			fail_msg("case '%s': rc %d, err %s", cases[i].name, rc, err ? err : "-");
		free(err);
		js_jobset_free(js);
		js_diag_done(&diag);
		json_decref(root);
	}
}

/* The degraded mode's file: every pod looks itself up in it, so it keeps
 * the bare names. */
static void test_service_bare(void **state)
{
	struct fixture *f = *state;
	json_t *root = json_loads("{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":"
				  "{\"name\":\"t\"},\"spec\":{\"replicatedJobs\":[{\"name\":\"w\"," TMPL("") "}]}}",
				  0, NULL);
	assert_non_null(root);
	struct js_diag diag;
	js_diag_init(&diag);
	struct js_jobset *js = NULL;
	assert_int_equal(js_codec_decode_jobset(root, JS_CODEC_STRICT, &diag, &js), 0);
	(void)js_default_jobset(js);
	struct js_ipam *ipam = js_ipam_new(JS_IPAM_POD_BASE, js_hosts_n_positions(js));
	assert_int_equal(js_hosts_write_service(f->shared, js, ipam, true), 0);
	js_ipam_free(ipam);
	char *got = slurp(f->shared);
	assert_string_equal(got + strlen(HEADER),
			    "10.244.0.2\tt-w-0-0.t.default.svc.cluster.local t-w-0-0.t.default.svc t-w-0-0.t t-w-0-0\n");
	free(got);
	js_jobset_free(js);
	js_diag_done(&diag);
	json_decref(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_own, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_missing_shared_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unwritable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_service, setup, teardown),
		cmocka_unit_test_setup_teardown(test_service_bare, setup, teardown),
		cmocka_unit_test(test_capacity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
