/*
 * kubeconfig_test.c - kubeconfig parsing and merging, in-cluster config,
 * exec credential output (kube/kubeconfig.h, kube/execcred.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kube/execcred.h"
#include "kube/kubeconfig.h"

/* "hello" = aGVsbG8=, "PEM" = UEVN */
#define HEAD "apiVersion: v1\nkind: Config\n"

static const struct kcase {
	const char *name;
	const char *yaml;
	const char *context; /* NULL = current */
	int r;
	const char *want;    /* on success: "server|ns|token|ca|cert|exec"; on failure: message fragment */
} cases[] = {
	{"token and CA data", HEAD "current-context: c\nclusters:\n- name: k\n  cluster:\n    server: https://h:6443/\n"
	 "    certificate-authority-data: aGVsbG8=\nusers:\n- name: u\n  user:\n    token: T0K\n"
	 "contexts:\n- name: c\n  context: {cluster: k, user: u, namespace: team}\n",
	 NULL, 0, "https://h:6443|team|T0K|hello|-|-"},
	{"client cert data", HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: \"https://h\"}\n"
	 "users:\n- name: u\n  user: {client-certificate-data: UEVN, client-key-data: aGVsbG8=}\n"
	 "contexts:\n- name: c\n  context: {cluster: k, user: u}\n",
	 NULL, 0, "https://h|-|-|-|PEM|-"},
	{"explicit context", HEAD "current-context: a\nclusters:\n- name: k1\n  cluster: {server: \"https://one\"}\n"
	 "- name: k2\n  cluster: {server: \"https://two\"}\ncontexts:\n- name: a\n  context: {cluster: k1}\n"
	 "- name: b\n  context: {cluster: k2}\n",
	 "b", 0, "https://two|-|-|-|-|-"},
	{"exec plugin", HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: \"https://h\"}\n"
	 "users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n"
	 "      command: get-token\n      args: [\"--a\", \"b\"]\n      env: [{name: X, value: \"1\"}]\n"
	 "      provideClusterInfo: true\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n",
	 NULL, 0, "https://h|-|-|-|-|get-token"},
	{"JSON kubeconfig", "{\"current-context\":\"c\",\"clusters\":[{\"name\":\"k\",\"cluster\":{\"server\":\"https://j\"}}],"
	 "\"contexts\":[{\"name\":\"c\",\"context\":{\"cluster\":\"k\"}}]}",
	 NULL, 0, "https://j|-|-|-|-|-"},
	{"no current context", HEAD "clusters: []\n", NULL, JS_EINVALID, "no context"},
	{"unknown context", HEAD "current-context: nope\ncontexts: []\n", NULL, JS_EINVALID, "'nope' not found"},
	{"context names a missing cluster", HEAD "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n",
	 NULL, JS_EINVALID, "cluster 'k'"},
	{"context names a missing user", HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: \"https://h\"}\n"
	 "contexts:\n- name: c\n  context: {cluster: k, user: u}\n",
	 NULL, JS_EINVALID, "user 'u'"},
	{"no server", HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {}\ncontexts:\n- name: c\n  context: {cluster: k}\n",
	 NULL, JS_EINVALID, "no server"},
	{"insecure with CA", HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: \"https://h\", "
	 "insecure-skip-tls-verify: true, certificate-authority-data: aGVsbG8=}\ncontexts:\n- name: c\n  context: {cluster: k}\n",
	 NULL, JS_EINVALID, "cannot be combined"},
	{"bad base64", HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: \"https://h\", "
	 "certificate-authority-data: \"!!\"}\ncontexts:\n- name: c\n  context: {cluster: k}\n",
	 NULL, JS_EINVALID, "base64"},
	{"cert without key", HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: \"https://h\"}\n"
	 "users:\n- name: u\n  user: {client-certificate-data: UEVN}\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n",
	 NULL, JS_EINVALID, "together"},
	{"missing CA file", HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: \"https://h\", "
	 "certificate-authority: /nonexistent/ca.crt}\ncontexts:\n- name: c\n  context: {cluster: k}\n",
	 NULL, -2, "cannot read"},
	{"auth-provider refused", HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: \"https://h\"}\n"
	 "users:\n- name: u\n  user: {auth-provider: {name: gcp}}\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n",
	 NULL, JS_EINVALID, "auth-provider"},
	{"exec without command", HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: \"https://h\"}\n"
	 "users:\n- name: u\n  user: {exec: {apiVersion: x}}\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n",
	 NULL, JS_EINVALID, "command"},
	{"clusters not a list", HEAD "clusters: {a: b}\n", NULL, JS_EINVALID, "must be a list"},
	{"entry without name", HEAD "clusters:\n- cluster: {server: \"https://h\"}\n", NULL, JS_EINVALID, "needs a name"},
	{"not a mapping", "- a\n- b\n", NULL, JS_EINVALID, "mapping"},
	{"YAML syntax", "a: [\n", NULL, JS_EINVALID, ""},
};

static void summary(const struct js_kubeconfig *kc, char *out, size_t n)
{
	snprintf(out, n, "%s|%s|%s|%s|%s|%s", kc->server, kc->namespace ? kc->namespace : "-",
		 kc->token ? kc->token : "-", kc->ca ? kc->ca : "-", kc->cert ? kc->cert : "-",
		 kc->exec ? kc->exec->command : "-");
}

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct kcase *c = &cases[i];
		struct js_kubeconfig kc = {0};
		struct js_diag d = {0};
		int r = js_kubeconfig_parse("kc", c->yaml, strlen(c->yaml), NULL, c->context, &d, &kc);
		if (r != c->r)
			fail_msg("case '%s': r=%d (%s), expected %d", c->name, r, d.n ? d.items[0].message : "", c->r);
		if (r == 0) {
			char got[512];
			summary(&kc, got, sizeof got);
			if (strcmp(got, c->want) != 0)
				fail_msg("case '%s': got %s, expected %s", c->name, got, c->want);
		} else {
			if (!d.n || !strstr(d.items[0].message, c->want))
				fail_msg("case '%s': message '%s' lacks '%s'", c->name, d.n ? d.items[0].message : "",
					 c->want);
		}
		js_kubeconfig_done(&kc);
		js_diag_done(&d);
	}
}

static void test_exec_fields(void **state)
{
	(void)state;
	const char *y = cases[3].yaml;
	struct js_kubeconfig kc = {0};
	struct js_diag d = {0};
	assert_int_equal(js_kubeconfig_parse("kc", y, strlen(y), NULL, NULL, &d, &kc), 0);
	assert_string_equal(kc.exec->api_version, "client.authentication.k8s.io/v1beta1");
	assert_int_equal(kc.exec->nargs, 2);
	assert_string_equal(kc.exec->args[1], "b");
	assert_int_equal(kc.exec->nenv, 1);
	assert_string_equal(kc.exec->env[0], "X=1");
	assert_true(kc.exec->provide_cluster_info);
	assert_false(kc.exec->interactive);
	js_kubeconfig_done(&kc);
	js_diag_done(&d);
}

static char tmpdir[64];

static void put(const char *rel, const char *data)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", tmpdir, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	close(fd);
}

static void test_merge_files_and_relative_paths(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/kc-test-%d", (int)getpid());
	mkdir(tmpdir, 0700);
	char sub[128];
	snprintf(sub, sizeof sub, "%s/sub", tmpdir);
	mkdir(sub, 0700);
	put("sub/ca.pem", "CA-FROM-FILE");
	put("sub/tok", "file-token\n");
	/* first file: current-context and cluster "k" (relative CA path) */
	put("sub/one", HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: \"https://first\", "
		       "certificate-authority: ca.pem}\nusers:\n- name: u\n  user: {tokenFile: tok}\n");
	/* second file: a cluster "k" that must lose, plus the context */
	put("two", HEAD "current-context: other\nclusters:\n- name: k\n  cluster: {server: \"https://second\"}\n"
		   "contexts:\n- name: c\n  context: {cluster: k, user: u}\n");
	char list[512];
	snprintf(list, sizeof list, "%s/missing:%s/sub/one::%s/two", tmpdir, tmpdir, tmpdir);
	struct js_kubeconfig kc = {0};
	struct js_diag d = {0};
	int r = js_kubeconfig_load(list, NULL, &d, &kc);
	if (r)
		fail_msg("load: %d %s", r, d.n ? d.items[0].message : "");
	assert_string_equal(kc.server, "https://first");
	assert_string_equal(kc.ca, "CA-FROM-FILE");
	char want[256];
	snprintf(want, sizeof want, "%s/sub/tok", tmpdir);
	assert_string_equal(kc.token_file, want);
	assert_string_equal(kc.context, "c");
	js_kubeconfig_done(&kc);
	/* KUBECONFIG from the environment, and a list with no file at all */
	setenv("KUBECONFIG", list, 1);
	assert_int_equal(js_kubeconfig_load(NULL, "c", &d, &kc), 0);
	js_kubeconfig_done(&kc);
	unsetenv("KUBECONFIG");
	assert_int_equal(js_kubeconfig_load("/nonexistent/a:/nonexistent/b", NULL, &d, &kc), -2);
	js_diag_done(&d);
	static const char *const files[] = {"sub/ca.pem", "sub/tok", "sub/one", "two", "sub", ""};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char p[256];
		snprintf(p, sizeof p, "%s/%s", tmpdir, files[i]);
		if (unlink(p) < 0)
			rmdir(p);
	}
}

static void test_in_cluster(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/kc-sa-%d", (int)getpid());
	mkdir(tmpdir, 0700);
	put("token", "sa-token");
	put("ca.crt", "SA-CA");
	put("namespace", "jobset-system\n");
	struct js_kubeconfig kc = {0};
	unsetenv("KUBERNETES_SERVICE_HOST");
	assert_int_equal(js_kubeconfig_in_cluster(tmpdir, &kc), JS_ENOTFOUND);
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(js_kubeconfig_in_cluster(tmpdir, &kc), 0);
	assert_string_equal(kc.server, "https://[fd00::1]:443");
	assert_string_equal(kc.ca, "SA-CA");
	assert_string_equal(kc.namespace, "jobset-system");
	assert_non_null(strstr(kc.token_file, "/token"));
	assert_null(kc.token); /* read per request, so rotation is seen */
	js_kubeconfig_done(&kc);
	setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
	assert_int_equal(js_kubeconfig_in_cluster("/nonexistent", &kc), -2);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	static const char *const files[] = {"token", "ca.crt", "namespace"};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char p[256];
		snprintf(p, sizeof p, "%s/%s", tmpdir, files[i]);
		unlink(p);
	}
	rmdir(tmpdir);
}

static const struct ecase {
	const char *name;
	const char *out;
	int r;
	const char *token;
	int64_t expires;
} ecases[] = {
	{"token", "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
		  "\"status\":{\"token\":\"abc\",\"expirationTimestamp\":\"2030-01-02T03:04:05Z\"}}",
	 0, "abc", 1893553445},
	{"offset time", "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
			"\"status\":{\"token\":\"abc\",\"expirationTimestamp\":\"2030-01-02T05:04:05.123+02:00\"}}",
	 0, "abc", 1893553445},
	{"cert pair", "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
		      "\"status\":{\"clientCertificateData\":\"C\",\"clientKeyData\":\"K\"}}",
	 0, NULL, 0},
	{"wrong version", "{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\","
			  "\"status\":{\"token\":\"abc\"}}",
	 JS_EINVALID, NULL, 0},
	{"wrong kind", "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"Secret\"}", JS_EINVALID, NULL, 0},
	{"empty status", "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{}}",
	 JS_EINVALID, NULL, 0},
	{"cert without key", "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
			     "\"status\":{\"clientCertificateData\":\"C\"}}",
	 JS_EINVALID, NULL, 0},
	{"bad time", "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
		     "\"status\":{\"token\":\"a\",\"expirationTimestamp\":\"tomorrow\"}}",
	 JS_EINVALID, NULL, 0},
	{"not JSON", "Please log in", JS_EINVALID, NULL, 0},
};

static void test_execcred_parse(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof ecases / sizeof ecases[0]; i++) {
		const struct ecase *c = &ecases[i];
		struct js_execcred ec = {0};
		char why[128] = "";
		int r = js_execcred_parse(c->out, strlen(c->out), "client.authentication.k8s.io/v1", &ec, why,
					  sizeof why);
		if (r != c->r)
			fail_msg("case '%s': r=%d (%s), expected %d", c->name, r, why, c->r);
		if (r == 0) {
			if (c->token)
				assert_string_equal(ec.token, c->token);
			else
				assert_null(ec.token);
			assert_int_equal(ec.expires_s, c->expires);
		} else {
			assert_true(why[0] != '\0');
		}
		js_execcred_done(&ec);
	}
}

static void test_execcred_run(void **state)
{
	(void)state;
	/* A real child: argv (no shell parsing of our strings), env only in the
	 * child, KUBERNETES_EXEC_INFO set, non-zero exit and timeout handled. */
	char *args[] = {"-c",
			"[ \"$ONLY_CHILD\" = yes ] && [ -n \"$KUBERNETES_EXEC_INFO\" ] && printf "
			"'{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
			"\"status\":{\"token\":\"%s\"}}' \"$1\"",
			"sh", "tok en;$(x)"};
	char *env[] = {"ONLY_CHILD=yes"};
	struct js_kubeconfig_exec x = {.command = "/bin/sh", .args = args, .nargs = 4, .env = env, .nenv = 1,
				       .api_version = "client.authentication.k8s.io/v1"};
	struct js_kubeconfig kc = {.server = "https://h", .exec = &x};
	struct js_execcred ec = {0};
	char why[128] = "";
	int r = js_execcred_run(&kc, 10000, &ec, why, sizeof why);
	if (r)
		fail_msg("run: %d %s", r, why);
	assert_string_equal(ec.token, "tok en;$(x)");
	assert_null(getenv("ONLY_CHILD"));
	js_execcred_done(&ec);
	args[1] = "exit 3";
	assert_int_equal(js_execcred_run(&kc, 10000, &ec, why, sizeof why), JS_EINVALID);
	args[1] = "sleep 5";
	assert_int_equal(js_execcred_run(&kc, 200, &ec, why, sizeof why), -ETIMEDOUT);
	x.command = "/nonexistent/plugin";
	assert_true(js_execcred_run(&kc, 1000, &ec, why, sizeof why) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_exec_fields),
		cmocka_unit_test(test_merge_files_and_relative_paths),
		cmocka_unit_test(test_in_cluster),
		cmocka_unit_test(test_execcred_parse),
		cmocka_unit_test(test_execcred_run),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
