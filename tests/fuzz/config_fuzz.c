/*
 * config_fuzz.c - libFuzzer target for the settings of jobset-controller
 * (ctrl/config.h). Two kinds of input:
 *
 *   - a Configuration file (YAML or JSON): applied on top of the defaults
 *     with js_config_apply_file, then checked as merged with flags by
 *     js_config_parse_args (no flags);
 *   - input starting with '-': a command line, one argument per line,
 *     through js_config_parse_args. Arguments naming --config are dropped
 *     (the flag reads a file; the file's contents are the first kind).
 *
 * Nothing may crash, leak or trip a sanitizer; every refusal comes with a
 * message. No state survives between inputs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "ctrl/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 64

static void check(int r, char *msg)
{
	if ((r < 0) != (msg != NULL))
		abort(); /* an error without a message, or a message without one */
	free(msg);
}

static bool names_config(const char *a)
{
	const char *name = a + (a[1] == '-' ? 2 : 1);
	return strncmp(name, "config", 6) == 0 && (name[6] == '\0' || name[6] == '=');
}

static void args(const char *p, size_t n)
{
	char *buf = js_xstrndup(p, n); /* stops at a NUL byte, as argv would */
	char *argv[MAX_ARGS + 1] = {"jobset-controller"};
	int argc = 1;
	for (char *a = buf; a && argc < MAX_ARGS;) {
		char *nl = strchr(a, '\n');
		if (nl)
			*nl = '\0';
		if (!(a[0] == '-' && a[1] && names_config(a)))
			argv[argc++] = a;
		a = nl ? nl + 1 : NULL;
	}
	argv[argc] = NULL;
	struct js_config cfg;
	js_config_defaults(&cfg);
	char *msg = NULL;
	int r = js_config_parse_args(&cfg, argc, argv, &msg);
	check(r, msg); /* not check(parse(..., &msg), msg): argument order is unspecified */
	js_config_done(&cfg);
	free(buf);
}

static void file(const char *p, size_t n)
{
	struct js_config cfg;
	js_config_defaults(&cfg);
	char *msg = NULL;
	int r = js_config_apply_file(&cfg, "fuzz.yaml", p, n, &msg);
	check(r, msg);
	if (r == 0 && !cfg.config_file) {
		char *argv[] = {"jobset-controller", NULL};
		msg = NULL;
		r = js_config_parse_args(&cfg, 1, argv, &msg);
		check(r, msg);
	}
	js_config_done(&cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 0 && data[0] == '-')
		args((const char *)data, size);
	else
		file((const char *)data, size);
	return 0;
}
