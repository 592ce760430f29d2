/*
 * container_test.c - container mode's pure parts (local/container.h): the
 * runtime client's argv for a container (command and args as ENTRYPOINT
 * and CMD overrides, env, volumes, GPUs, podman pods vs docker networks),
 * and the option names. Running containers is tested end to end
 * (tests/e2e/local/test_containers.py). Table-driven; each case names
 * itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "local/container.h"

static char *const cmd[] = {(char *)"/bin/app", (char *)"--flag", (char *)"a1", NULL};
static char *const env[] = {(char *)"A=1", (char *)"B=two words", NULL};
static const char *const gpus[] = {"0", "3", NULL};
static const struct js_mounts_spec mounts[] = {{"/run/d/pods/p/e", "/scratch", false}, {"/srv/data", "/data", true}};

static const struct argv_case {
	const char *name;
	enum js_container_runtime rt;
	struct js_container_run run;
	const char *want; /* argv joined by '|' */
} cases[] = {
	{"podman: command and args, env, mounts, gpus, workdir", JS_CONTAINER_PODMAN,
	 {.name = "p-c-0", .pod = "p", .ip = "10.244.0.2", .hostname = "h", .hosts_file = "/run/d/hosts",
	  .image = "img:1", .command = cmd, .n_command = 2, .args = cmd + 2, .n_args = 1, .env = env,
	  .working_dir = "/w", .mounts = mounts, .n_mounts = 2, .gpus = gpus},
	 "podman|run|--rm|--pull|never|--sig-proxy=true|--name=p-c-0|--label=io.jobset.run=net|--pod=p|"
	 "--volume=/run/d/hosts:/etc/hosts:ro|--workdir=/w|--env=A=1|--env=B=two words|"
	 "--volume=/run/d/pods/p/e:/scratch|--volume=/srv/data:/data:ro|--device=nvidia.com/gpu=0|"
	 "--device=nvidia.com/gpu=3|--entrypoint=[\"/bin/app\",\"--flag\"]|img:1|a1"},
	{"podman: args only keep the ENTRYPOINT", JS_CONTAINER_PODMAN,
	 {.name = "n", .pod = "p", .image = "img", .args = cmd, .n_args = 1},
	 "podman|run|--rm|--pull|never|--sig-proxy=true|--name=n|--label=io.jobset.run=net|--pod=p|img|/bin/app"},
	{"podman: neither: ENTRYPOINT and CMD", JS_CONTAINER_PODMAN, {.name = "n", .pod = "p", .image = "img"},
	 "podman|run|--rm|--pull|never|--sig-proxy=true|--name=n|--label=io.jobset.run=net|--pod=p|img"},
	{"podman: the pidfile that tells a container that ran from podman's own error", JS_CONTAINER_PODMAN,
	 {.name = "n", .pod = "p", .image = "img", .pidfile = "/run/d/containers/n.pid"},
	 "podman|run|--rm|--pull|never|--sig-proxy=true|--name=n|--label=io.jobset.run=net|--pod=p|"
	 "--pidfile=/run/d/containers/n.pid|img"},
	{"docker: no pods, the network per container", JS_CONTAINER_DOCKER,
	 {.name = "n", .pod = "p", .ip = "10.244.0.9", .own_ip = true, .hostname = "h", .image = "img"},
	 "docker|run|--rm|--pull|never|--sig-proxy=true|--name=n|--label=io.jobset.run=net|--network=net|"
	 "--hostname=h|--ip=10.244.0.9|img"},
	{"docker: a second container has an address of its own", JS_CONTAINER_DOCKER,
	 {.name = "n", .pod = "p", .ip = "10.244.0.9", .hostname = "h", .image = "img"},
	 "docker|run|--rm|--pull|never|--sig-proxy=true|--name=n|--label=io.jobset.run=net|--network=net|"
	 "--hostname=h|img"},
};

static void test_argv(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char **argv = js_container_argv(cases[i].rt, "net", "net", &cases[i].run);
		struct js_buf b;
		js_buf_init(&b, 0);
		for (size_t k = 0; argv[k]; k++)
			assert_int_equal(js_buf_printf(&b, "%s%s", k ? "|" : "", argv[k]), 0);
		if (strcmp(js_buf_str(&b), cases[i].want) != 0)
			fail_msg("case '%s':\n got: %s\nwant: %s", cases[i].name, js_buf_str(&b), cases[i].want);
		js_buf_done(&b);
		js_container_argv_free(argv);
	}
}

static void test_names(void **state)
{
	(void)state;
	for (int r = 0; r < JS_CONTAINER__COUNT; r++)
		assert_int_equal(js_container_runtime_from_string(js_container_runtime_to_string(r)), r);
	assert_int_equal(js_container_runtime_from_string("rkt"), JS_CONTAINER__INVALID);
	assert_int_equal(js_container_pull_from_string("missing"), JS_CONTAINER_PULL_MISSING);
	assert_int_equal(js_container_pull_from_string("always"), JS_CONTAINER_PULL__INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_argv),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
