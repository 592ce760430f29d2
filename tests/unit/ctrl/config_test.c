/*
 * config_test.c - jobset-controller flags, Configuration file, feature
 * gates, durations and listen addresses (ctrl/config.h), as tables.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctrl/config.h"

static void test_durations(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		int ok;
		int64_t ms;
	} cases[] = {
		{"15s", 1, 15000}, {"1m30s", 1, 90000}, {"500ms", 1, 500}, {"1h", 1, 3600000}, {"0", 1, 0},
		{"1.5s", 1, 1500}, {"2m", 1, 120000},	{"", 0, 0},	   {"15", 0, 0},      {"-1s", 0, 0},
		{"1x", 0, 0},	   {"25h", 0, 0},	{"s", 0, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t ms = -7;
		int r = js_config_parse_duration_ms(cases[i].in, &ms);
		if ((r == 0) != cases[i].ok || (r == 0 && ms != cases[i].ms))
			fail_msg("duration '%s': r=%d ms=%lld, want ok=%d ms=%lld", cases[i].in, r, (long long)ms,
				 cases[i].ok, (long long)cases[i].ms);
	}
}

static void test_addresses(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		int ok;
		int disabled;
		const char *host;
		int port;
	} cases[] = {
		{":8080", 1, 0, NULL, 8080},	      {"127.0.0.1:9", 1, 0, "127.0.0.1", 9},
		{"[::1]:8443", 1, 0, "::1", 8443},    {"localhost:0", 1, 0, "localhost", 0},
		{"0", 1, 1, NULL, 0},		      {"", 1, 1, NULL, 0},
		{"8080", 0, 0, NULL, 0},	      {":70000", 0, 0, NULL, 0},
		{"::1:80", 0, 0, NULL, 0},	      {"host:x", 0, 0, NULL, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool off = false;
		char *host = NULL;
		int port = -1;
		int r = js_config_parse_addr(cases[i].in, &off, &host, &port);
		if ((r == 0) != cases[i].ok)
			fail_msg("addr '%s': r=%d, want ok=%d", cases[i].in, r, cases[i].ok);
		if (r == 0) {
			if (off != (bool)cases[i].disabled || port != (cases[i].disabled ? 0 : cases[i].port) ||
			    (cases[i].host ? !host || strcmp(host, cases[i].host) != 0 : host != NULL))
				fail_msg("addr '%s': off=%d host=%s port=%d", cases[i].in, off, host ? host : "(null)",
					 port);
		}
		free(host);
	}
}

/* A temporary Configuration file holding `text`: `path` is a mkstemp
 * template (rewritten), `flag` receives "--config=<path>". */
static void temp_config(char *path, const char *text, char *flag, size_t flag_len)
{
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	snprintf(flag, flag_len, "--config=%s", path);
}

/* js_config_parse_args on defaults, for "jobset-controller [config_flag]
 * args...": `args` holds at most `max` strings, NULL-terminated if fewer. */
static int parse(struct js_config *c, const char *config_flag, const char *const *args, size_t max, char **err)
{
	char *av[16] = {"jobset-controller"};
	int n = 1;
	if (config_flag)
		av[n++] = strdup(config_flag);
	for (size_t k = 0; k < max && args[k]; k++)
		av[n++] = strdup(args[k]);
	js_config_defaults(c);
	int r = js_config_parse_args(c, n, av, err);
	for (int k = 1; k < n; k++)
		free(av[k]);
	return r;
}

/* The controller reads gates with api/gates.h (tests/unit/api/gates_test.c);
 * file and flags merge, the last word wins (InPlaceRestart included: the
 * controller drives it with ctrl/inplace.c and the agent, SPEC §11.16, §13). */
static void test_gates(void **state)
{
	(void)state;
	static const char file_on[] = "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\n"
				      "featureGates:\n  InPlaceRestart: true\n  RestartJob: true\n";
	static const struct {
		const char *name;
		bool with_file; /* --config with InPlaceRestart and RestartJob on */
		const char *args[3];
		const char *msg; /* NULL = accepted */
		bool rj, ej, ipr;
	} cases[] = {
		{"two gates", false, {"--feature-gates=RestartJob=true, ElasticJobSet=true"}, NULL, true, true, false},
		{"in-place off", false, {"--feature-gates=InPlaceRestart=false"}, NULL, false, false, false},
		{"TLSOptions on", false, {"--feature-gates", "TLSOptions=true"}, NULL, false, false, false},
		{"in-place flag", false, {"--feature-gates=InPlaceRestart=true"}, NULL, false, false, true},
		{"in-place in a list", false, {"--feature-gates=RestartJob=true,InPlaceRestart=True"}, NULL, true, false,
		 true},
		{"in-place in the file", true, {NULL}, NULL, true, false, true},
		{"flag turns the file's off", true, {"--feature-gates=InPlaceRestart=false"}, NULL, true, false, false},
		{"the last flag wins", true, {"--feature-gates=InPlaceRestart=false", "--feature-gates=InPlaceRestart=1"},
		 NULL, true, false, true},
		{"locked", false, {"--feature-gates=TLSOptions=false"}, "locked to true", false, false, false},
		{"unknown", false, {"--feature-gates=Foo=true"}, "unknown feature gate 'Foo'", false, false, false},
		{"no value", false, {"--feature-gates=RestartJob"}, "expected Name=true|false", false, false, false},
		{"AllAlpha", false, {"--feature-gates=AllAlpha=true"}, NULL, true, true, true},
		{"AllAlpha but one", false, {"--feature-gates=ElasticJobSet=false,AllAlpha=true"}, NULL, true, false, true},
		{"AllAlpha off over the file", true, {"--feature-gates=AllAlpha=false"}, NULL, false, false, false},
		{"AllBeta", true, {"--feature-gates=AllBeta=false"}, NULL, true, false, true},
	};
	char path[] = "/tmp/js-config-gates-XXXXXX", cfgflag[128];
	temp_config(path, file_on, cfgflag, sizeof(cfgflag));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct js_config c;
		char *err = NULL;
		int r = parse(&c, cases[i].with_file ? cfgflag : NULL, cases[i].args, 3, &err);
		if (cases[i].msg && (r == 0 || !err || !strstr(err, cases[i].msg)))
			fail_msg("%s: r=%d err=%s, want '%s'", cases[i].name, r, err ? err : "(null)", cases[i].msg);
		if (!cases[i].msg && r < 0)
			fail_msg("%s: refused: %s", cases[i].name, err);
		if (!cases[i].msg && (c.gates.restart_job != cases[i].rj || c.gates.elastic_jobset != cases[i].ej ||
				      c.gates.in_place_restart != cases[i].ipr))
			fail_msg("%s: gates rj=%d ipr=%d ej=%d", cases[i].name, c.gates.restart_job,
				 c.gates.in_place_restart, c.gates.elastic_jobset);
		free(err);
		js_config_done(&c);
	}
	unlink(path);

	/* The file's map is one list too: a gate it names keeps its value
	 * whether AllAlpha comes before or after it. */
	static const char *files[] = {
		"apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\n"
		"featureGates:\n  RestartJob: false\n  AllAlpha: true\n",
		"apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\n"
		"featureGates:\n  AllAlpha: true\n  RestartJob: false\n",
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char fpath[] = "/tmp/js-config-gates-XXXXXX", fflag[128];
		temp_config(fpath, files[i], fflag, sizeof(fflag));
		struct js_config c;
		char *err = NULL;
		if (parse(&c, fflag, NULL, 0, &err) < 0)
			fail_msg("file %zu refused: %s", i, err);
		assert_false(c.gates.restart_job);
		assert_true(c.gates.in_place_restart && c.gates.elastic_jobset && c.gates.execution_attempts &&
			    c.gates.mutable_pod_resources && c.gates.workload_aware_scheduling);
		js_config_done(&c);
		unlink(fpath);
	}
}

/* KEP-969's gate by its name and by its deprecated alias, from the flag
 * and from the file: the same gate; the alias leaves the warning main logs
 * once at start, which names the new name. */
static void test_kep969_gate_alias(void **state)
{
	(void)state;
	static const struct {
		const char *file_gate; /* featureGates key, or NULL for no file */
		const char *flag;
		bool on, warned;
	} cases[] = {
		{NULL, "--feature-gates=JobSetWorkloadAwareSchedulingAPI=true", true, false},
		{NULL, "--feature-gates=WorkloadAwareScheduling=true", true, true},
		{NULL, "--feature-gates=RestartJob=true,WorkloadAwareScheduling=false", false, true},
		{"JobSetWorkloadAwareSchedulingAPI", NULL, true, false},
		{"WorkloadAwareScheduling", NULL, true, true},
		{"WorkloadAwareScheduling", "--feature-gates=JobSetWorkloadAwareSchedulingAPI=false", false, true},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char fpath[] = "/tmp/js-config-gates-XXXXXX", fflag[128], doc[256];
		if (cases[i].file_gate) {
			snprintf(doc, sizeof(doc),
				 "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\n"
				 "featureGates:\n  %s: true\n",
				 cases[i].file_gate);
			temp_config(fpath, doc, fflag, sizeof(fflag));
		}
		const char *args[2] = {cases[i].flag, NULL};
		struct js_config c;
		char *err = NULL;
		if (parse(&c, cases[i].file_gate ? fflag : NULL, args, 2, &err) < 0)
			fail_msg("case %zu refused: %s", i, err);
		if (c.gates.workload_aware_scheduling != cases[i].on ||
		    (cases[i].warned ? !c.gate_warning || !strstr(c.gate_warning, "JobSetWorkloadAwareSchedulingAPI")
				     : c.gate_warning != NULL))
			fail_msg("case %zu: gate %d warning %s", i, c.gates.workload_aware_scheduling,
				 c.gate_warning ? c.gate_warning : "(none)");
		js_config_done(&c);
		if (cases[i].file_gate)
			unlink(fpath);
	}
}

static const char good_file[] = "apiVersion: config.jobset.x-k8s.io/v1alpha1\n"
				"kind: Configuration\n"
				"leaderElection:\n"
				"  leaderElect: false\n"
				"  leaseDuration: 20s\n"
				"  resourceName: my-lease\n"
				"  resourceNamespace: ctl\n"
				"metrics:\n"
				"  bindAddress: \":9090\"\n"
				"health:\n"
				"  healthProbeBindAddress: \":9091\"\n"
				"  readinessEndpointName: ready\n"
				"clientConnection:\n"
				"  qps: 50\n"
				"  burst: 60\n"
				"internalCertManagement:\n"
				"  enable: true\n"
				"tls:\n"
				"  minVersion: VersionTLS12\n"
				"featureGates:\n"
				"  RestartJob: true\n";

static void test_file(void **state)
{
	(void)state;
	struct js_config c;
	js_config_defaults(&c);
	char *err = NULL;
	int r = js_config_apply_file(&c, "cfg.yaml", good_file, strlen(good_file), &err);
	if (r < 0)
		fail_msg("good file: %s", err);
	assert_false(c.leader_elect);
	assert_int_equal(c.lease_duration_ms, 20000);
	assert_int_equal(c.renew_deadline_ms, 10000);
	assert_string_equal(c.lease_name, "my-lease");
	assert_string_equal(c.lease_namespace, "ctl");
	assert_string_equal(c.metrics_addr, ":9090");
	assert_string_equal(c.health_addr, ":9091");
	assert_string_equal(c.readyz_path, "ready");
	assert_string_equal(c.healthz_path, "healthz");
	assert_true(c.qps == 50);
	assert_int_equal(c.burst, 60);
	assert_true(c.gates.restart_job);
	js_config_done(&c);

	static const struct {
		const char *name, *doc, *msg;
	} bad[] = {
		{"unknown top field", "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\nfoo: 1\n",
		 "unknown field \"foo\""},
		{"unknown nested field",
		 "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\nmetrics:\n  port: 1\n",
		 "metrics.port"},
		{"wrong kind", "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Config\n", "kind"},
		{"wrong apiVersion", "apiVersion: v1\nkind: Configuration\n", "apiVersion"},
		{"bad duration",
		 "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\nleaderElection:\n  retryPeriod: 2\n",
		 "leaderElection.retryPeriod"},
		{"bad type",
		 "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\nclientConnection:\n  burst: lots\n",
		 "clientConnection.burst"},
		{"unknown gate", "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\nfeatureGates:\n  X: true\n",
		 "featureGates.X"},
		{"unknown gate after AllAlpha",
		 "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\nfeatureGates:\n  AllAlpha: true\n  Nope: true\n",
		 "featureGates.Nope: unknown feature gate 'Nope'"},
		{"gate not a boolean",
		 "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\nfeatureGates:\n  AllAlpha: 1\n",
		 "featureGates.AllAlpha: expected a boolean"},
		{"TLS 1.0", "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\ntls:\n  minVersion: VersionTLS10\n",
		 "invalid minVersion"},
		{"TLS13 ciphers",
		 "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\ntls:\n  minVersion: VersionTLS13\n"
		 "  cipherSuites: [TLS_AES_128_GCM_SHA256]\n",
		 "may not be specified"},
		{"duplicate key",
		 "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\nmetrics: {}\nmetrics: {}\n", ""},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		js_config_defaults(&c);
		err = NULL;
		r = js_config_apply_file(&c, "bad.yaml", bad[i].doc, strlen(bad[i].doc), &err);
		if (r == 0 || !err || !strstr(err, bad[i].msg))
			fail_msg("%s: r=%d err=%s, want '%s'", bad[i].name, r, err ? err : "(null)", bad[i].msg);
		/* A bad file leaves the settings as they were. */
		assert_string_equal(c.metrics_addr, ":8443");
		free(err);
		js_config_done(&c);
	}
}

static void test_cert_management(void **state)
{
	(void)state;
	static const char file[] = "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\n"
				   "internalCertManagement:\n  enable: false\n  webhookServiceName: svc\n"
				   "  webhookSecretName: sec.ret\n";
	static const struct {
		const char *name;
		const char *args[4];
		bool with_file;
		const char *mode; /* NULL = decided at start-up */
		const char *service, *secret;
	} cases[] = {
		{"defaults", {NULL}, false, NULL, JS_CONFIG_SERVICE_NAME, JS_CONFIG_SECRET_NAME},
		{"file", {NULL}, true, "none", "svc", "sec.ret"},
		{"flag beats file", {"--cert-management=internal", "--webhook-secret-name=s2"}, true, "internal", "svc", "s2"},
		{"all flags",
		 {"--cert-management", "none", "--webhook-service-name=x", "--mutating-webhook-configuration="},
		 false, "none", "x", JS_CONFIG_SECRET_NAME},
	};
	char path[] = "/tmp/js-config-certs-XXXXXX", cfgflag[128];
	temp_config(path, file, cfgflag, sizeof(cfgflag));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct js_config c;
		char *err = NULL;
		int r = parse(&c, cases[i].with_file ? cfgflag : NULL, cases[i].args, 4, &err);
		if (r < 0)
			fail_msg("%s: %s", cases[i].name, err);
		if ((cases[i].mode == NULL) != (c.cert_management == NULL) ||
		    (c.cert_management && strcmp(c.cert_management, cases[i].mode) != 0))
			fail_msg("%s: cert_management %s, want %s", cases[i].name,
				 c.cert_management ? c.cert_management : "(unset)", cases[i].mode ? cases[i].mode : "(unset)");
		assert_string_equal(c.service_name, cases[i].service);
		assert_string_equal(c.secret_name, cases[i].secret);
		js_config_done(&c);
	}
	unlink(path);
}

static void test_flags_and_precedence(void **state)
{
	(void)state;
	char path[] = "/tmp/js-config-test-XXXXXX", cfgflag[128];
	temp_config(path, good_file, cfgflag, sizeof(cfgflag));

	/* Flags given explicitly win over the file, wherever they appear. */
	char *argv[] = {"jobset-controller", "--kube-api-qps", "77", "--leader-elect", cfgflag,
			"--metrics-bind-address=:1234", "--concurrency=8", "--feature-gates=ElasticJobSet=true",
			"--zap-devel", "--zap-log-level=debug", NULL};
	struct js_config c;
	js_config_defaults(&c);
	char *err = NULL;
	int r = js_config_parse_args(&c, 10, argv, &err);
	if (r < 0)
		fail_msg("parse: %s", err);
	assert_true(c.qps == 77);
	assert_int_equal(c.burst, 60);      /* from the file */
	assert_true(c.leader_elect);        /* flag beats file's false */
	assert_string_equal(c.metrics_addr, ":1234");
	assert_string_equal(c.health_addr, ":9091");
	assert_int_equal(c.concurrency, 8);
	assert_true(c.gates.restart_job);   /* file */
	assert_true(c.gates.elastic_jobset); /* flag */
	assert_int_equal(c.verbosity, 4);
	js_config_done(&c);
	unlink(path);

	/* Defaults: leader election on, upstream addresses. */
	char *argv0[] = {"jobset-controller", NULL};
	js_config_defaults(&c);
	assert_int_equal(js_config_parse_args(&c, 1, argv0, &err), 0);
	assert_true(c.leader_elect);
	assert_string_equal(c.metrics_addr, ":8443");
	assert_string_equal(c.health_addr, ":8081");
	assert_string_equal(c.lease_name, JS_CONFIG_LEASE_NAME);
	assert_true(c.qps == 500);
	assert_int_equal(c.burst, 500);
	/* Webhooks on, deploy/'s names, certificate management decided later. */
	assert_true(c.webhooks);
	assert_int_equal(c.webhook_port, 9443);
	assert_string_equal(c.webhook_cert_dir, JS_CONFIG_CERT_DIR);
	assert_null(c.cert_management);
	assert_string_equal(c.service_name, JS_CONFIG_SERVICE_NAME);
	assert_string_equal(c.secret_name, JS_CONFIG_SECRET_NAME);
	assert_string_equal(c.mutating_name, JS_CONFIG_MUTATING_NAME);
	assert_string_equal(c.validating_name, JS_CONFIG_VALIDATING_NAME);
	assert_int_equal(c.cert_interval_ms, 60000);
	assert_int_equal(c.placement, JS_PLACEMENT_GATES);
	assert_false(c.restart_foreground); /* direct */
	js_config_done(&c);

	/* Upstream's exclusive placement behind a flag (docs/differences.md). */
	char *argvp[] = {"jobset-controller", "--exclusive-placement", "webhook", NULL};
	js_config_defaults(&c);
	assert_int_equal(js_config_parse_args(&c, 3, argvp, &err), 0);
	assert_int_equal(c.placement, JS_PLACEMENT_WEBHOOK);
	js_config_done(&c);

	/* Upstream's Foreground deletion of a previous attempt, and back. */
	char *argvr[] = {"jobset-controller", "--restart-cleanup=foreground", "--restart-cleanup", "direct", NULL};
	js_config_defaults(&c);
	assert_int_equal(js_config_parse_args(&c, 2, argvr, &err), 0);
	assert_true(c.restart_foreground);
	assert_int_equal(js_config_parse_args(&c, 4, argvr, &err), 0);
	assert_false(c.restart_foreground);
	js_config_done(&c);

	static const struct {
		const char *args[4];
		const char *msg;
	} bad[] = {
		{{"--nope"}, "unknown flag '--nope'"},
		{{"--concurrency=0"}, "--concurrency"},
		{{"--kube-api-qps"}, "needs a value"},
		{{"--leader-elect=perhaps"}, "invalid boolean"},
		{{"--config=/nonexistent/x.yaml"}, "cannot read"},
		{{"positional"}, "unexpected argument"},
		{{"--feature-gates=Foo=true"}, "unknown feature gate"},
		{{"--cert-management=cert-manager"}, "expected internal or none"},
		{{"--webhook-service-name=Svc_1"}, "DNS-1035 label"},
		{{"--webhook-secret-name=-bad"}, "DNS-1123 subdomain"},
		{{"--cert-check-interval=100ms"}, "--cert-check-interval"},
		{{"--webhook-port=0"}, "--webhook-port"},
		{{"--exclusive-placement=admission"}, "--exclusive-placement: expected gates or webhook, got 'admission'"},
		{{"--restart-cleanup=drain"}, "--restart-cleanup: expected direct or foreground, got 'drain'"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err = NULL;
		r = parse(&c, NULL, bad[i].args, 4, &err);
		if (r == 0 || !err || !strstr(err, bad[i].msg))
			fail_msg("%s: r=%d err=%s, want '%s'", bad[i].args[0], r, err ? err : "(null)", bad[i].msg);
		free(err);
		js_config_done(&c);
	}
}

/* The metrics server's security and the TLS settings of both servers
 * (SPEC §12.2, §12.7): upstream's `tls` and `metrics.certDir` in the file,
 * our flags for them, flags beating the file, and upstream's refusals. */
static void test_tls_and_metrics(void **state)
{
	(void)state;
	static const char file[] = "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\n"
				   "metrics:\n  certDir: /m\n"
				   "tls:\n  minVersion: VersionTLS12\n"
				   "  cipherSuites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n";
	static const struct {
		const char *name;
		const char *args[4];
		bool with_file;
		const char *msg; /* NULL = accepted */
		bool secure;
		const char *cert_dir, *minv, *ciphers;
	} cases[] = {
		{"defaults", {NULL}, false, NULL, true, NULL, NULL, NULL},
		{"file", {NULL}, true, NULL, true, "/m", "VersionTLS12",
		 "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
		{"flags beat the file",
		 {"--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "--metrics-cert-dir", "/n"},
		 true, NULL, true, "/n", "VersionTLS12", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"},
		{"plain metrics", {"--metrics-secure=false"}, false, NULL, false, NULL, NULL, NULL},
		{"TLS 1.3 only", {"--tls-min-version=VersionTLS13"}, false, NULL, true, NULL, "VersionTLS13", NULL},
		{"TLS 1.1 flag", {"--tls-min-version=VersionTLS11"}, false, "invalid minVersion: VersionTLS11", true, NULL,
		 NULL, NULL},
		/* The file's ciphers and a TLS 1.3 minimum from a flag: refused once merged. */
		{"TLS 1.3 with the file's ciphers", {"--tls-min-version=VersionTLS13"}, true, "may not be specified", true,
		 NULL, NULL, NULL},
		{"bad secure flag", {"--metrics-secure=maybe"}, false, "invalid boolean", true, NULL, NULL, NULL},
	};
	char path[] = "/tmp/js-config-tls-XXXXXX", cfgflag[128];
	temp_config(path, file, cfgflag, sizeof(cfgflag));
	for (size_t i = 0; i < JS_ARRAY_SIZE(cases); i++) {
		struct js_config c;
		char *err = NULL;
		int r = parse(&c, cases[i].with_file ? cfgflag : NULL, cases[i].args, 4, &err);
		if (cases[i].msg) {
			if (r == 0 || !err || !strstr(err, cases[i].msg))
				fail_msg("%s: r=%d err=%s, want '%s'", cases[i].name, r, err ? err : "-", cases[i].msg);
		} else {
			if (r < 0)
				fail_msg("%s: %s", cases[i].name, err);
			assert_int_equal(c.metrics_secure, cases[i].secure);
#define SAME(field, want)                                                                                        \
	if (((want) == NULL) != (c.field == NULL) || ((want) && strcmp(c.field, (want)) != 0))                    \
	fail_msg("%s: " #field " %s, want %s", cases[i].name, c.field ? c.field : "-", (want) ? (want) : "-")
			SAME(metrics_cert_dir, cases[i].cert_dir);
			SAME(tls_min_version, cases[i].minv);
			SAME(tls_cipher_suites, cases[i].ciphers);
#undef SAME
		}
		free(err);
		js_config_done(&c);
	}
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_gates),
		cmocka_unit_test(test_kep969_gate_alias),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_flags_and_precedence),
		cmocka_unit_test(test_cert_management),
		cmocka_unit_test(test_tls_and_metrics),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
