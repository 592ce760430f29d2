/*
 * main.c - the `jobset` command: dispatch to a subcommand.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
	"usage: jobset COMMAND [ARGS]\n"
	"\n"
	"JobSet (jobset.x-k8s.io/v1alpha2) for one machine and for Kubernetes.\n"
	"\n"
	"Commands:\n"
	"  run FILE        run a JobSet on this machine, pods as processes\n"
	"  ps              list the pods of a run (the last one, or -d RUN-DIR)\n"
	"  logs POD        print (-f: follow) a container's log of a run\n"
	"  describe POD    show a pod of a run: containers, exit codes, events\n"
	"  evict POD       evict a pod of a running run (DisruptionTarget)\n"
	"  down            stop a running run (as Ctrl-C)\n"
	"  validate FILE   check manifests before you submit them\n"
	"  render FILE     print the child Jobs and Service the controller creates\n"
	"  simulate FILE   replay Job events through the controller's state machine\n"
	"  kubectl CMD     JobSets on a cluster: get, describe, logs, restart, diff\n"
	"                  (the same as `kubectl jobset CMD` with kubectl-jobset on PATH)\n"
	"  version         print the version\n"
	"\n"
	"Run 'jobset COMMAND --help' for a command's options.\n";

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
};

static int version(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		puts("usage: jobset version\n\nPrint the version of jobset and the API it implements.");
		return JS_EXIT_OK;
	}
	printf("jobset %s (API jobset.x-k8s.io/v1alpha2)\n", JS_VERSION);
	return JS_EXIT_OK;
}

int main(int argc, char **argv)
{
	static const struct cmd cmds[] = {
		{"validate", js_cli_validate},
		{"render", js_cli_render},
		{"version", version},
		{"kubectl", js_cli_kubectl},
#ifdef JS_HAVE_RUN
		{"run", js_cli_run},
		{"ps", js_cli_ps},
		{"logs", js_cli_logs},
		{"describe", js_cli_describe},
		{"evict", js_cli_evict},
		{"down", js_cli_down},
#endif
#ifdef JS_HAVE_SIMULATE
		{"simulate", js_cli_simulate},
#endif
	};
	/* kubectl's plugin discovery: `kubectl jobset ARGS` runs kubectl-jobset
	 * ARGS. Only that name (or `jobset kubectl`) reaches a cluster. */
	const char *base = argv[0] ? strrchr(argv[0], '/') : NULL;
	base = base ? base + 1 : argv[0];
	if (base && strcmp(base, "kubectl-jobset") == 0)
		return js_cli_kubectl(argc, argv);
	if (argc < 2) {
		fputs(usage, stderr);
		return JS_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		fputs(usage, stdout);
		return JS_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0)
		return version(1, argv);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(argv[1], cmds[i].name) == 0)
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "jobset: unknown command '%s'\n\n%s", argv[1], usage);
	return JS_EXIT_USAGE;
}
