/*
 * cli.h - the `jobset` command's subcommands. Each takes the arguments after
 * its own name (argv[0] is the subcommand name) and returns the process exit
 * code. Only this folder prints; the layers below return errors as data.
 *
 * Exit codes shared by all subcommands: 0 success, 1 the input is invalid (or
 * the JobSet failed, for run), 2 usage or I/O error, 130 interrupted.
 */
#ifndef JS_CLI_H
#define JS_CLI_H

#define JS_EXIT_OK 0
#define JS_EXIT_INVALID 1
#define JS_EXIT_USAGE 2
#define JS_EXIT_INTERRUPTED 130

int js_cli_validate(int argc, char **argv);
int js_cli_render(int argc, char **argv);
int js_cli_simulate(int argc, char **argv); /* src/cli/simulate.c (core issue) */
int js_cli_run(int argc, char **argv);      /* src/cli/run.c (local runtime issue) */
/* Commands on a run directory (issue 11): src/cli/inspect.c, src/cli/control.c. */
int js_cli_ps(int argc, char **argv);
int js_cli_describe(int argc, char **argv);
int js_cli_logs(int argc, char **argv);
int js_cli_down(int argc, char **argv);
int js_cli_evict(int argc, char **argv);
/* Against a cluster (issue 16): `jobset kubectl ...`, or the binary run as
 * kubectl-jobset (src/cli/kubectl.c; docs/kubectl-jobset.md). argv[0] is
 * the command word, argv[1] the subcommand. */
int js_cli_kubectl(int argc, char **argv);

#endif
