/*
 * auth_ctest.c - credentials against the real API server: kubeconfig files
 * with relative paths and KUBECONFIG lists, bearer token, token file with
 * rotation (401 -> re-read), exec credential plugin (cached, re-run after a
 * 401, KUBERNETES_EXEC_INFO), tls-server-name, insecure-skip-tls-verify, and
 * in-cluster configuration. Identity is checked with SelfSubjectReview.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "cluster/kt.h"

static struct js_client *ADMIN;
static const char *NS;
static char DIR_[256];
static char TOKEN[4096];
static struct js_kubeconfig KC; /* the admin configuration */
static char SA_USER[256];

static void write_file(const char *name, const char *data, size_t len, int mode)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", DIR_, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		KT_DIE("cannot write %s", p);
	if (write(fd, data, len) != (ssize_t)len)
		KT_DIE("short write %s", p);
	close(fd);
}

static char *whoami(struct js_client *c, int *ret_err)
{
	json_t *req = json_pack("{s:s,s:s}", "apiVersion", "authentication.k8s.io/v1", "kind", "SelfSubjectReview");
	json_t *out = NULL;
	struct js_apierr e = {0};
	*ret_err = js_client_call(c, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", NULL, req, &out, &e);
	json_decref(req);
	js_apierr_done(&e);
	if (*ret_err < 0)
		return NULL;
	const char *u = js_json_str(json_object_get(json_object_get(out, "status"), "userInfo"), "username");
	char *s = strdup(u ? u : "");
	json_decref(out);
	return s;
}

/* Client from a kubeconfig text written to DIR_/name. */
static struct js_client *client_from(const char *name, const char *text, int *ret_err)
{
	write_file(name, text, strlen(text), 0600);
	char p[512];
	snprintf(p, sizeof p, "/nonexistent/first:%s/%s", DIR_, name); /* missing list entries are skipped */
	struct js_kubeconfig kc = {0};
	struct js_diag d = {0};
	*ret_err = js_kubeconfig_load(p, NULL, &d, &kc);
	if (*ret_err < 0) {
		print_message("kubeconfig: %s\n", d.n ? d.items[0].message : "?");
		js_diag_done(&d);
		return NULL;
	}
	js_diag_done(&d);
	struct js_client *c = NULL;
	struct js_client_opts o = {.qps = -1};
	*ret_err = js_client_new(&kc, &o, &c);
	js_kubeconfig_done(&kc);
	return c;
}

static char *kubeconfig_text(const char *cluster_extra, const char *user_body)
{
	static char buf[8192];
	snprintf(buf, sizeof buf,
		 "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
		 "clusters:\n- name: c\n  cluster:\n    server: %s\n%s"
		 "users:\n- name: u\n  user:\n%s"
		 "contexts:\n- name: t\n  context: {cluster: c, user: u, namespace: %s}\n",
		 KC.server, cluster_extra, user_body, NS);
	return buf;
}

static int setup(void **state)
{
	(void)state;
	ADMIN = kt_client(NULL);
	kt_config(&KC);
	NS = kt_namespace(ADMIN, "kube-auth");
	snprintf(DIR_, sizeof DIR_, "/tmp/kube-auth-%d", (int)getpid());
	mkdir(DIR_, 0700);
	write_file("ca.crt", KC.ca, KC.ca_len, 0600);
	write_file("admin.crt", KC.cert, KC.cert_len, 0600);
	write_file("admin.key", KC.key, KC.key_len, 0600);
	/* A service account and a token for it (TokenRequest). */
	json_t *sa = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "v1", "kind", "ServiceAccount", "metadata", "name",
			       "tester", "namespace", NS);
	struct js_apierr e = {0};
	if (js_client_create(ADMIN, &js_client_res_serviceaccounts, NULL, sa, NULL, NULL, &e) < 0)
		KT_DIE("cannot create service account: %s", e.message ? e.message : "?");
	json_decref(sa);
	json_t *tr = json_pack("{s:s,s:s,s:{s:i}}", "apiVersion", "authentication.k8s.io/v1", "kind", "TokenRequest",
			       "spec", "expirationSeconds", 3600);
	struct js_buf p;
	js_buf_init(&p, 0);
	if (js_client_path(&js_client_res_serviceaccounts, NS, "tester", "token", &p) < 0)
		KT_DIE("path");
	json_t *out = NULL;
	if (js_client_call(ADMIN, "POST", js_buf_str(&p), NULL, tr, &out, &e) < 0)
		KT_DIE("TokenRequest failed: %s", e.message ? e.message : "?");
	snprintf(TOKEN, sizeof TOKEN, "%s", js_json_str(json_object_get(out, "status"), "token"));
	snprintf(SA_USER, sizeof SA_USER, "system:serviceaccount:%s:tester", NS);
	json_decref(out);
	json_decref(tr);
	js_buf_done(&p);
	js_apierr_done(&e);
	write_file("token", TOKEN, strlen(TOKEN), 0600);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	kt_delete_namespace(ADMIN, NS);
	ADMIN = js_client_free(ADMIN);
	js_kubeconfig_done(&KC);
	static const char *const files[] = {"ca.crt", "admin.crt", "admin.key", "token", "k-cert", "k-token",
					    "k-tokfile", "rot-token", "plugin.sh", "count", "info", "k-exec",
					    "k-sni", "k-sni-bad", "k-insecure", "k-noca", "sa/token", "sa/ca.crt",
					    "sa/namespace", "sa", ""};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char p[512];
		snprintf(p, sizeof p, "%s/%s", DIR_, files[i]);
		if (unlink(p) < 0)
			rmdir(p);
	}
	return 0;
}

/* GET /version: 0 or the error. Used where the outcome may be a 401: the
 * apiserver closes HTTP/2 connections of unauthenticated clients, and a
 * request with a body can then see the reset before the 401 (docs/kube.md). */
static int get_version(struct js_client *c)
{
	json_t *v = NULL;
	int r = js_client_call(c, "GET", "/version", NULL, NULL, &v, NULL);
	json_decref(v);
	return r;
}

static void expect_user(struct js_client *c, const char *user)
{
	int err = 0;
	char *u = whoami(c, &err);
	if (!u)
		fail_msg("whoami failed: %d (%s)", err, js_apierr_strerror(err));
	assert_string_equal(u, user);
	free(u);
}

static void test_client_cert_files_relative(void **state)
{
	(void)state;
	int err;
	struct js_client *c = client_from("k-cert", kubeconfig_text("    certificate-authority: ca.crt\n",
								     "    client-certificate: admin.crt\n"
								     "    client-key: admin.key\n"),
					  &err);
	assert_non_null(c);
	int e2;
	char *admin = whoami(ADMIN, &e2);
	assert_non_null(admin);
	expect_user(c, admin);
	free(admin);
	js_client_free(c);
}

static void test_bearer_token(void **state)
{
	(void)state;
	char user[4200];
	snprintf(user, sizeof user, "    token: %s\n", TOKEN);
	int err;
	struct js_client *c = client_from("k-token", kubeconfig_text("    certificate-authority: ca.crt\n", user), &err);
	assert_non_null(c);
	expect_user(c, SA_USER);
	assert_string_equal(js_client_namespace(c), NS);
	js_client_free(c);
}

static void test_token_file_rotation(void **state)
{
	(void)state;
	write_file("rot-token", "not-a-valid-token\n", 18, 0600);
	int err;
	struct js_client *c = client_from("k-tokfile", kubeconfig_text("    certificate-authority: ca.crt\n",
								        "    tokenFile: rot-token\n"),
					  &err);
	assert_non_null(c);
	assert_int_equal(get_version(c), JS_APIERR_EUNAUTHORIZED);
	/* The file is rotated: the next 401 makes the client re-read it. */
	write_file("rot-token", TOKEN, strlen(TOKEN), 0600);
	assert_int_equal(get_version(c), 0);
	expect_user(c, SA_USER);
	struct js_client_stats st;
	js_client_stats(c, &st);
	assert_true(st.retries >= 1);
	js_client_free(c);
}

static const char plugin[] =
	"#!/bin/sh\n"
	"d=\"$1\"\n"
	"n=$(cat \"$d/count\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$d/count\"\n"
	"printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$d/info\"\n"
	"if [ \"$MODE\" = badfirst ] && [ $n -eq 1 ]; then tok=invalid; else tok=$(cat \"$d/token\"); fi\n"
	"printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
	"\"status\":{\"token\":\"%s\",\"expirationTimestamp\":\"2099-01-01T00:00:00Z\"}}' \"$tok\"\n";

static int count_runs(void)
{
	char p[512], buf[32] = "";
	snprintf(p, sizeof p, "%s/count", DIR_);
	FILE *f = fopen(p, "re");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof buf, f))
		buf[0] = '\0';
	fclose(f);
	return atoi(buf);
}

static struct js_client *exec_client(const char *mode)
{
	char p[512];
	snprintf(p, sizeof p, "%s/count", DIR_);
	unlink(p);
	write_file("plugin.sh", plugin, strlen(plugin), 0700);
	char user[2048];
	snprintf(user, sizeof user,
		 "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: %s/plugin.sh\n"
		 "      args: [\"%s\"]\n      env: [{name: MODE, value: %s}]\n      provideClusterInfo: true\n"
		 "      interactiveMode: Never\n",
		 DIR_, DIR_, mode);
	int err;
	struct js_client *c = client_from("k-exec", kubeconfig_text("    certificate-authority: ca.crt\n", user), &err);
	assert_non_null(c);
	return c;
}

static void test_exec_plugin_cached(void **state)
{
	(void)state;
	struct js_client *c = exec_client("good");
	expect_user(c, SA_USER);
	expect_user(c, SA_USER);
	assert_int_equal(count_runs(), 1); /* cached until expirationTimestamp */
	/* KUBERNETES_EXEC_INFO carried the cluster (provideClusterInfo). */
	char p[512];
	snprintf(p, sizeof p, "%s/info", DIR_);
	json_t *info = json_load_file(p, 0, NULL);
	assert_non_null(info);
	assert_string_equal(js_json_str(info, "kind"), "ExecCredential");
	assert_string_equal(js_json_str(json_object_get(json_object_get(info, "spec"), "cluster"), "server"), KC.server);
	assert_non_null(js_json_str(json_object_get(json_object_get(info, "spec"), "cluster"),
				    "certificate-authority-data"));
	json_decref(info);
	/* The plugin's MODE reached only the child. */
	assert_null(getenv("MODE"));
	js_client_free(c);
}

static void test_exec_plugin_rerun_after_401(void **state)
{
	(void)state;
	struct js_client *c = exec_client("badfirst");
	assert_int_equal(get_version(c), 0); /* 401 with the first token, then a new run */
	assert_int_equal(count_runs(), 2);
	expect_user(c, SA_USER);
	assert_int_equal(count_runs(), 2);
	js_client_free(c);
}

static void test_tls_server_name(void **state)
{
	(void)state;
	int err;
	/* The apiserver certificate names DNS:kubernetes but we dial 127.0.0.1. */
	struct js_client *c = client_from("k-sni", kubeconfig_text("    certificate-authority: ca.crt\n"
								    "    tls-server-name: kubernetes\n",
								    "    client-certificate: admin.crt\n"
								    "    client-key: admin.key\n"),
					  &err);
	assert_non_null(c);
	char *u = whoami(c, &err);
	assert_non_null(u);
	free(u);
	js_client_free(c);
	c = client_from("k-sni-bad", kubeconfig_text("    certificate-authority: ca.crt\n"
						      "    tls-server-name: wrong.example\n",
						      "    client-certificate: admin.crt\n    client-key: admin.key\n"),
			&err);
	assert_non_null(c);
	u = whoami(c, &err);
	assert_null(u);
	assert_int_equal(err, -EPROTO);
	js_client_free(c);
}

static void test_insecure_and_unknown_ca(void **state)
{
	(void)state;
	int err;
	struct js_client *c = client_from("k-insecure", kubeconfig_text("    insecure-skip-tls-verify: true\n",
									"    client-certificate: admin.crt\n"
									"    client-key: admin.key\n"),
					  &err);
	assert_non_null(c);
	char *u = whoami(c, &err);
	assert_non_null(u);
	free(u);
	js_client_free(c);
	/* Without our CA the server certificate is not trusted. */
	c = client_from("k-noca", kubeconfig_text("", "    client-certificate: admin.crt\n    client-key: admin.key\n"),
			&err);
	assert_non_null(c);
	u = whoami(c, &err);
	assert_null(u);
	assert_int_equal(err, -EPROTO);
	js_client_free(c);
}

static void test_in_cluster(void **state)
{
	(void)state;
	char sa[512];
	snprintf(sa, sizeof sa, "%s/sa", DIR_);
	mkdir(sa, 0700);
	char p[600];
	snprintf(p, sizeof p, "%s/sa/token", DIR_);
	FILE *f = fopen(p, "we");
	fputs(TOKEN, f);
	fclose(f);
	snprintf(p, sizeof p, "%s/sa/ca.crt", DIR_);
	f = fopen(p, "we");
	fwrite(KC.ca, 1, KC.ca_len, f);
	fclose(f);
	snprintf(p, sizeof p, "%s/sa/namespace", DIR_);
	f = fopen(p, "we");
	fprintf(f, "%s\n", NS);
	fclose(f);
	/* host and port from the kubeconfig's https://127.0.0.1:PORT */
	const char *hp = KC.server + strlen("https://");
	const char *colon = strrchr(hp, ':');
	char host[64];
	snprintf(host, sizeof host, "%.*s", (int)(colon - hp), hp);
	setenv("KUBERNETES_SERVICE_HOST", host, 1);
	setenv("KUBERNETES_SERVICE_PORT", colon + 1, 1);
	struct js_kubeconfig kc = {0};
	assert_int_equal(js_kubeconfig_in_cluster(sa, &kc), 0);
	assert_string_equal(kc.namespace, NS);
	struct js_client *c = NULL;
	assert_int_equal(js_client_new(&kc, NULL, &c), 0);
	expect_user(c, SA_USER);
	assert_string_equal(js_client_namespace(c), NS);
	js_client_free(c);
	js_kubeconfig_done(&kc);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_cert_files_relative),
		cmocka_unit_test(test_bearer_token),
		cmocka_unit_test(test_token_file_rotation),
		cmocka_unit_test(test_exec_plugin_cached),
		cmocka_unit_test(test_exec_plugin_rerun_after_401),
		cmocka_unit_test(test_tls_server_name),
		cmocka_unit_test(test_insecure_and_unknown_ca),
		cmocka_unit_test(test_in_cluster),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
