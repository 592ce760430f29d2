/*
 * pod_test.c - the parts of a pod that need no process: command, args and
 * environment as they will be exec'd ($(VAR) expansion, fieldRef values,
 * the base environment, JOB_COMPLETION_INDEX), template errors, and a
 * container whose executable cannot be found (resolved before anything is
 * spawned). Table-driven; each case names itself on failure.
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
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/buf.h"
#include "base/json.h"
#include "local/pod.h"
#include "local/podjson.h"

#define T0 1700000000000LL /* ms */
#define BASE_MS 100
#define MAX_MS 1000

struct fixture {
	char dir[64];     /* scratch: logs/ and an empty bin/ */
	char logs[96], bin[96];
	struct js_pod_host host;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/js-pod-test-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->logs, sizeof(f->logs), "%s/logs", f->dir);
	snprintf(f->bin, sizeof(f->bin), "%s/bin", f->dir);
	if (mkdir(f->logs, 0755) < 0 || mkdir(f->bin, 0755) < 0)
		return -1;
	f->host = (struct js_pod_host){
		.mode = JS_SANDBOX_NONE, .death_fd = -1, .log_dir = f->logs, .node_name = "node-a",
		.path_env = f->bin, .home_env = "/home/u", .restart_base_ms = BASE_MS, .restart_max_ms = MAX_MS,
	};
	*state = f;
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	int rc = nftw(f->dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	free(f);
	return rc == 0 ? 0 : -1;
}

static json_t *parse(const char *name, const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);
	if (!j)
		fail_msg("case '%s': bad template JSON: %s at %d:%d", name, e.text, e.line, e.column);
	return j;
}

static struct js_pod_init pod_init(const json_t *tmpl, int32_t index)
{
	return (struct js_pod_init){
		.id = 1, .name = "js-w-0-1-abcde", .namespace_ = "team", .uid = "uid-1", .job_name = "js-w-0",
		.index = index, .hostname = "js-w-0-1", .subdomain = "js", .ip = "127.10.1.2", .hosts_file = NULL,
		.tmpl = tmpl,
	};
}

/** "a|b|c" of a NULL-terminated vector. Caller frees. */
static char *join(char *const *v)
{
	struct js_buf b;
	js_buf_init(&b, 0);
	for (size_t i = 0; v && v[i]; i++)
		assert_int_equal(js_buf_printf(&b, "%s%s", i ? "|" : "", v[i]), 0);
	return js_buf_take(&b);
}

/* ---- command, args and environment ---- */

#define BASE_ENV "PATH=@BIN@|HOME=/home/u|HOSTNAME=js-w-0-1"

struct envcase {
	const char *name;
	const char *tmpl;   /* PodTemplateSpec JSON */
	int32_t index;      /* completion index, -1 NonIndexed */
	size_t ctr;         /* which container to look at */
	const char *ctr_name;
	const char *argv;   /* "a|b" */
	const char *env;    /* the whole environment, "K=V|..."; @BIN@ is the
			       fixture's PATH */
};

static const struct envcase env_cases[] = {
	{"command then args", "{\"spec\":{\"containers\":[{\"name\":\"c\",\"command\":[\"prog\",\"-v\"],\"args\":[\"x\"]}]}}",
	 1, 0, "c", "prog|-v|x", BASE_ENV "|JOB_COMPLETION_INDEX=1"},
	{"NonIndexed has no JOB_COMPLETION_INDEX", "{\"spec\":{\"containers\":[{\"name\":\"c\",\"command\":[\"p\"]}]}}",
	 -1, 0, "c", "p", BASE_ENV},
	{"env values expand earlier variables only",
	 "{\"spec\":{\"containers\":[{\"name\":\"c\",\"command\":[\"p\"],\"env\":["
	 "{\"name\":\"A\",\"value\":\"$(B)\"},{\"name\":\"B\",\"value\":\"b\"},{\"name\":\"C\",\"value\":\"$(B)-$(HOSTNAME)\"}]}]}}",
	 -1, 0, "c", "p", BASE_ENV "|A=$(B)|B=b|C=b-js-w-0-1"},
	{"$$ escapes and undefined or unterminated references stay",
	 "{\"spec\":{\"containers\":[{\"name\":\"c\",\"command\":[\"p\"],\"env\":["
	 "{\"name\":\"A\",\"value\":\"a\"},{\"name\":\"E\",\"value\":\"$$(A)\"},{\"name\":\"U\",\"value\":\"$(NOPE)\"},"
	 "{\"name\":\"T\",\"value\":\"$(A\"},{\"name\":\"D\",\"value\":\"$$$\"},{\"name\":\"M\",\"value\":\"x$(A)y$(A)\"}]}]}}",
	 -1, 0, "c", "p", BASE_ENV "|A=a|E=$(A)|U=$(NOPE)|T=$(A|D=$$|M=xaya"},
	{"command and args expand the final environment, the later definition wins",
	 "{\"spec\":{\"containers\":[{\"name\":\"c\",\"command\":[\"$(A)\"],"
	 "\"args\":[\"$(A)$(A)\",\"$(JOB_COMPLETION_INDEX)\",\"$$(A)\",\"$(MISSING)\"],"
	 "\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"A\",\"value\":\"2\"}]}]}}",
	 3, 0, "c", "2|22|3|$(A)|$(MISSING)", BASE_ENV "|A=1|A=2|JOB_COMPLETION_INDEX=3"},
	{"a user JOB_COMPLETION_INDEX is kept",
	 "{\"spec\":{\"containers\":[{\"name\":\"c\",\"command\":[\"p\"],\"env\":[{\"name\":\"JOB_COMPLETION_INDEX\",\"value\":\"9\"}]}]}}",
	 1, 0, "c", "p", BASE_ENV "|JOB_COMPLETION_INDEX=9"},
	{"fieldRef: pod identity and addresses",
	 "{\"spec\":{\"serviceAccountName\":\"trainer\",\"containers\":[{\"name\":\"c\",\"command\":[\"p\"],\"env\":["
	 "{\"name\":\"N\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}},"
	 "{\"name\":\"NS\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.namespace\"}}},"
	 "{\"name\":\"UID\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.uid\"}}},"
	 "{\"name\":\"IP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.podIP\"}}},"
	 "{\"name\":\"IPS\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.podIPs\"}}},"
	 "{\"name\":\"HIP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.hostIP\"}}},"
	 "{\"name\":\"NODE\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"spec.nodeName\"}}},"
	 "{\"name\":\"SA\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"spec.serviceAccountName\"}}}]}]}}",
	 -1, 0, "c", "p",
	 BASE_ENV "|N=js-w-0-1-abcde|NS=team|UID=uid-1|IP=127.10.1.2|IPS=127.10.1.2|HIP=127.0.0.1|NODE=node-a|SA=trainer"},
	{"fieldRef: labels and annotations, missing keys are empty, values are not expanded",
	 "{\"metadata\":{\"labels\":{\"app\":\"demo\"},\"annotations\":{\"jobset.sigs.k8s.io/job-index\":\"0\","
	 "\"raw\":\"$(A)\"}},"
	 "\"spec\":{\"containers\":[{\"name\":\"c\",\"command\":[\"p\"],\"env\":["
	 "{\"name\":\"A\",\"value\":\"a\"},"
	 "{\"name\":\"L\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.labels['app']\"}}},"
	 "{\"name\":\"J\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.annotations['jobset.sigs.k8s.io/job-index']\"}}},"
	 "{\"name\":\"R\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.annotations['raw']\"}}},"
	 "{\"name\":\"X\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.labels['nope']\"}}}]}]}}",
	 -1, 0, "c", "p", BASE_ENV "|A=a|L=demo|J=0|R=$(A)|X="},
	{"default service account",
	 "{\"spec\":{\"containers\":[{\"name\":\"c\",\"command\":[\"p\"],\"env\":["
	 "{\"name\":\"SA\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"spec.serviceAccountName\"}}}]}]}}",
	 -1, 0, "c", "p", BASE_ENV "|SA=default"},
	{"init containers come first, each with its own environment",
	 "{\"spec\":{\"initContainers\":[{\"name\":\"setup\",\"command\":[\"s\"],\"env\":[{\"name\":\"I\",\"value\":\"1\"}]}],"
	 "\"containers\":[{\"name\":\"main\",\"command\":[\"m\"],\"env\":[{\"name\":\"M\",\"value\":\"$(I)\"}]}]}}",
	 0, 1, "main", "m", BASE_ENV "|M=$(I)|JOB_COMPLETION_INDEX=0"},
};

/** Replace @BIN@ in `want` by the fixture's PATH. Caller frees. */
static char *subst_bin(const char *want, const char *bin)
{
	struct js_buf b;
	js_buf_init(&b, 0);
	const char *at = strstr(want, "@BIN@");
	if (at)
		assert_int_equal(js_buf_printf(&b, "%.*s%s%s", (int)(at - want), want, bin, at + 5), 0);
	else
		assert_int_equal(js_buf_puts(&b, want), 0);
	return js_buf_take(&b);
}

static void test_env_and_args(void **state)
{
	struct fixture *f = *state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(env_cases); i++) {
		const struct envcase *c = &env_cases[i];
		json_t *tmpl = parse(c->name, c->tmpl);
		struct js_pod_init init = pod_init(tmpl, c->index);
		struct js_pod *pod = NULL;
		char *err = NULL;
		if (js_pod_new(&init, &f->host, &pod, &err) < 0)
			fail_msg("case '%s': js_pod_new failed: %s", c->name, err);
		char *check_err = NULL;
		if (js_pod_check_template(tmpl, &check_err) < 0)
			fail_msg("case '%s': js_pod_check_template refused it: %s", c->name, check_err);
		assert_true(c->ctr < js_pod_n_containers(pod));
		char *argv = join(js_pod_ctr_argv(pod, c->ctr));
		char *env = join(js_pod_ctr_envp(pod, c->ctr));
		char *want_env = subst_bin(c->env, f->bin);
		if (strcmp(js_pod_ctr_name(pod, c->ctr), c->ctr_name) != 0 || strcmp(argv, c->argv) != 0 ||
		    strcmp(env, want_env) != 0)
			fail_msg("case '%s':\n  container want '%s' got '%s'\n  argv want '%s'\n       got '%s'\n"
				 "  env  want '%s'\n       got '%s'",
				 c->name, c->ctr_name, js_pod_ctr_name(pod, c->ctr), c->argv, argv, want_env, env);
		free(argv);
		free(env);
		free(want_env);
		js_pod_free(pod);
		json_decref(tmpl);
	}
}

/* ---- template errors ---- */

struct errcase {
	const char *name;
	const char *tmpl;
	const char *err; /* substring of the message */
};

static const struct errcase err_cases[] = {
	{"no command", "{\"spec\":{\"containers\":[{\"name\":\"trainer\",\"image\":\"python:3\"}]}}",
	 "container 'trainer' has no command"},
	{"empty command", "{\"spec\":{\"containers\":[{\"name\":\"c\",\"command\":[]}]}}", "container 'c' has no command"},
	{"init container without command",
	 "{\"spec\":{\"initContainers\":[{\"name\":\"i\"}],\"containers\":[{\"name\":\"c\",\"command\":[\"p\"]}]}}",
	 "container 'i' has no command"},
	{"no containers", "{\"spec\":{\"containers\":[]}}", "no containers"},
	{"resourceFieldRef",
	 "{\"spec\":{\"containers\":[{\"name\":\"c\",\"command\":[\"p\"],\"env\":[{\"name\":\"S\",\"valueFrom\":"
	 "{\"resourceFieldRef\":{\"resource\":\"limits.cpu\"}}}]}]}}",
	 "container 'c': env 'S': only valueFrom.fieldRef, configMapKeyRef and secretKeyRef are supported"},
	{"unknown fieldPath",
	 "{\"spec\":{\"containers\":[{\"name\":\"c\",\"command\":[\"p\"],\"env\":[{\"name\":\"G\",\"valueFrom\":"
	 "{\"fieldRef\":{\"fieldPath\":\"metadata.generateName\"}}}]}]}}",
	 "fieldPath 'metadata.generateName' is not supported locally"},
	{"malformed map reference",
	 "{\"spec\":{\"containers\":[{\"name\":\"c\",\"command\":[\"p\"],\"env\":[{\"name\":\"L\",\"valueFrom\":"
	 "{\"fieldRef\":{\"fieldPath\":\"metadata.labels['app'\"}}}]}]}}",
	 "fieldPath 'metadata.labels['app'' is not supported locally"},
};

static void test_template_errors(void **state)
{
	struct fixture *f = *state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(err_cases); i++) {
		const struct errcase *c = &err_cases[i];
		json_t *tmpl = parse(c->name, c->tmpl);
		char *err = NULL;
		int rc = js_pod_check_template(tmpl, &err);
		if (rc != JS_EINVALID || !err || !strstr(err, c->err))
			fail_msg("case '%s': js_pod_check_template: want JS_EINVALID with '%s', got %d '%s'", c->name,
				 c->err, rc, err ? err : "(null)");
		free(err);
		err = NULL;
		struct js_pod_init init = pod_init(tmpl, 0);
		struct js_pod *pod = NULL;
		rc = js_pod_new(&init, &f->host, &pod, &err);
		if (rc != JS_EINVALID || pod || !err || !strstr(err, c->err))
			fail_msg("case '%s': js_pod_new: want JS_EINVALID with '%s', got %d '%s'", c->name, c->err, rc,
				 err ? err : "(null)");
		free(err);
		json_decref(tmpl);
	}
}

/* ---- a command that cannot be found (nothing is spawned) ---- */

static struct js_pod *missing_cmd_pod(struct fixture *f, const char *restart_policy, bool init_fails)
{
	char tmpl[512];
	snprintf(tmpl, sizeof(tmpl),
		 "{\"spec\":{\"restartPolicy\":\"%s\",%s\"containers\":[{\"name\":\"c\",\"command\":[\"%s\"]}]}}",
		 restart_policy, init_fails ? "\"initContainers\":[{\"name\":\"i\",\"command\":[\"no-such-init\"]}]," : "",
		 init_fails ? "never-reached" : "no-such-program-xyz");
	json_t *t = parse(restart_policy, tmpl);
	struct js_pod_init init = pod_init(t, 1);
	struct js_pod *pod = NULL;
	char *err = NULL;
	if (js_pod_new(&init, &f->host, &pod, &err) < 0)
		fail_msg("js_pod_new: %s", err);
	json_decref(t);
	return pod;
}

/** Step as the runtime does right after creating a pod: until it settles. */
static void settle(struct js_pod *pod, const struct js_pod_host *host, int64_t now)
{
	int k = 0;
	while (js_pod_step(pod, host, now))
		assert_true(++k < 8);
}

static char *read_log(const struct fixture *f, const char *pod, const char *ctr)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s/%s.log", f->logs, pod, ctr);
	FILE *fp = fopen(path, "re");
	assert_non_null(fp);
	char *buf = calloc(1, 4096);
	size_t n = fread(buf, 1, 4095, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

static void test_not_found_never_fails_the_pod(void **state)
{
	struct fixture *f = *state;
	struct js_pod *pod = missing_cmd_pod(f, "Never", false);
	settle(pod, &f->host, T0);
	assert_int_equal(js_pod_phase(pod), JS_JOBCTL_FAILED);
	assert_true(js_pod_gone(pod));
	assert_false(js_pod_ready(pod));
	assert_int_equal(js_pod_wake(pod), -1);
	assert_int_equal(js_pod_n_fds(pod), 0);
	struct js_jobctl_exit exits[1];
	struct js_jobctl_pod obs;
	js_pod_observe(pod, exits, &obs);
	assert_int_equal(obs.phase, JS_JOBCTL_FAILED);
	assert_false(obs.terminating);
	assert_int_equal(obs.finished_ms, T0);
	assert_int_equal(obs.n_exits, 1);
	assert_string_equal(obs.exits[0].container, "c");
	assert_int_equal(obs.exits[0].exit_code, 128);
	const char *want = "container 'c': exec: \"no-such-program-xyz\": executable file not found in $PATH";
	assert_string_equal(js_pod_start_error(pod), want);
	char *log = read_log(f, "js-w-0-1-abcde", "c");
	assert_non_null(strstr(log, want));
	free(log);
	js_pod_free(pod);
}

static void test_not_found_onfailure_restarts(void **state)
{
	struct fixture *f = *state;
	struct js_pod *pod = missing_cmd_pod(f, "OnFailure", false);
	settle(pod, &f->host, T0);
	/* Not failed: the container waits for its restart, as in CrashLoopBackOff. */
	assert_int_equal(js_pod_phase(pod), JS_JOBCTL_RUNNING);
	assert_false(js_pod_ready(pod));
	assert_int_equal(js_pod_restarts(pod), 0);
	assert_int_equal(js_pod_wake(pod), T0 + BASE_MS);
	settle(pod, &f->host, T0 + BASE_MS - 1);
	assert_int_equal(js_pod_restarts(pod), 0);
	/* Each attempt fails again and doubles the delay. */
	settle(pod, &f->host, T0 + BASE_MS);
	assert_int_equal(js_pod_restarts(pod), 1);
	assert_int_equal(js_pod_max_restarts(pod), 1);
	assert_int_equal(js_pod_wake(pod), T0 + BASE_MS + 2 * BASE_MS);
	assert_int_equal(js_pod_phase(pod), JS_JOBCTL_RUNNING);
	struct js_jobctl_exit exits[1];
	struct js_jobctl_pod obs;
	js_pod_observe(pod, exits, &obs);
	assert_int_equal(obs.restarts, 1);
	assert_int_equal(obs.n_exits, 1);
	assert_int_equal(obs.exits[0].exit_code, 128);
	/* Deleting it needs no process to exit. */
	js_pod_delete(pod, &f->host, T0 + 2 * BASE_MS, JS_POD_STOP_JOB_CONTROLLER);
	settle(pod, &f->host, T0 + 2 * BASE_MS);
	assert_true(js_pod_gone(pod));
	assert_int_equal(js_pod_phase(pod), JS_JOBCTL_FAILED);
	assert_int_equal(js_pod_wake(pod), -1);
	js_pod_free(pod);
}

static void test_not_found_init_container_fails_the_pod(void **state)
{
	struct fixture *f = *state;
	struct js_pod *pod = missing_cmd_pod(f, "Never", true);
	settle(pod, &f->host, T0);
	assert_int_equal(js_pod_phase(pod), JS_JOBCTL_FAILED);
	assert_true(js_pod_gone(pod));
	struct js_jobctl_exit exits[2];
	struct js_jobctl_pod obs;
	js_pod_observe(pod, exits, &obs);
	/* Only the init container ran (and failed); the main one never started. */
	assert_int_equal(obs.n_exits, 1);
	assert_string_equal(obs.exits[0].container, "i");
	assert_non_null(strstr(js_pod_start_error(pod), "container 'i': exec: \"no-such-init\""));
	js_pod_free(pod);
}

struct notes {
	int n;
	char last[256];
};

static void on_note(void *ctx, const struct js_pod *pod, const char *type, const char *reason, const char *message)
{
	struct notes *nt = ctx;
	(void)pod;
	nt->n++;
	snprintf(nt->last, sizeof(nt->last), "%s %s %s", type, reason, message);
}

/* A restart is a note (an event), the pod's status reads as a kubelet's
 * (CrashLoopBackOff with lastState), and an eviction sets DisruptionTarget,
 * which the Job controller sees and jobs.json shows. */
static void test_status_restart_note_and_eviction(void **state)
{
	struct fixture *f = *state;
	struct notes nt = {0};
	f->host.on_note = on_note;
	f->host.note_ctx = &nt;
	struct js_pod *pod = missing_cmd_pod(f, "OnFailure", false);
	settle(pod, &f->host, T0);
	assert_int_equal(nt.n, 1);
	assert_non_null(strstr(nt.last, "Warning BackOff back-off 100 ms restarting failed container c (restart 1): "
					 "exit code 128 (StartError)"));
	json_t *j = js_podjson_pod(pod, true);
	const json_t *cs = json_array_get(js_json_path(j, "status.containerStatuses"), 0);
	assert_string_equal(js_json_str(js_json_path(cs, "state.waiting"), "reason"), "CrashLoopBackOff");
	const json_t *last = js_json_path(cs, "lastState.terminated");
	assert_int_equal(json_integer_value(json_object_get(last, "exitCode")), 128);
	assert_string_equal(js_json_str(last, "reason"), "StartError");
	assert_non_null(strstr(js_json_str(last, "message"), "executable file not found"));
	assert_string_equal(js_json_str(js_json_path(j, "status"), "phase"), "Running");
	assert_string_equal(js_json_str(js_json_path(j, "metadata"), "name"), "js-w-0-1-abcde");
	assert_string_equal(js_json_str(js_json_path(j, "spec"), "hostname"), "js-w-0-1");
	assert_null(js_json_path(j, "metadata.deletionTimestamp"));
	json_decref(j);

	assert_int_equal(js_pod_evict(pod, &f->host, T0 + 1, 1700000000123, "EvictionByEvictionAPI", "Eviction API: evicting"),
			 0);
	assert_int_equal(js_pod_evict(pod, &f->host, T0 + 1, 1700000000123, "X", "again"), JS_EINVALID);
	settle(pod, &f->host, T0 + 1);
	assert_int_equal(js_pod_phase(pod), JS_JOBCTL_FAILED);
	struct js_jobctl_exit exits[1];
	struct js_jobctl_pod obs;
	js_pod_observe(pod, exits, &obs);
	assert_false(obs.deleted_by_controller); /* an eviction counts */
	assert_int_equal(obs.n_conditions, 1);
	assert_string_equal(obs.conditions[0], "DisruptionTarget");
	j = js_podjson_pod(pod, false);
	assert_null(json_object_get(j, "spec"));
	assert_string_equal(js_json_str(js_json_path(j, "metadata.annotations"), JS_PODJSON_ANN_STOP), "Evicted");
	assert_non_null(js_json_str(js_json_path(j, "metadata"), "deletionTimestamp"));
	const json_t *dt = js_jobctl_condition(j, "DisruptionTarget");
	assert_non_null(dt);
	/* A pod without a network namespace of its own is always ready to
	 * start containers. */
	assert_non_null(js_jobctl_condition(j, "PodReadyToStartContainers"));
	assert_string_equal(js_json_str(dt, "status"), "True");
	assert_string_equal(js_json_str(dt, "reason"), "EvictionByEvictionAPI");
	assert_string_equal(js_json_str(dt, "lastTransitionTime"), "2023-11-14T22:13:20Z");
	json_decref(j);
	js_pod_free(pod);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_env_and_args, setup, teardown),
		cmocka_unit_test_setup_teardown(test_template_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_found_never_fails_the_pod, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_found_onfailure_restarts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_found_init_container_fails_the_pod, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_restart_note_and_eviction, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
