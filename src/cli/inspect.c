/*
 * inspect.c - `jobset ps`, `jobset describe POD` and `jobset logs POD`: a
 * run seen from outside, while it runs (from its live state file) and after
 * (the same file, final). cli/runinfo.h finds the run and the pod.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/manifest.h"
#include "cli/runinfo.h"
#include "local/podjson.h"
#include "local/podlog.h"

/* How often `logs -f` looks at the runner's state when no log line came:
 * it decides when to stop, not how fast lines appear (inotify does). */
#define INSPECT_FOLLOW_CHECK_MS 250
/* Longest log line kept whole by --tail; longer ones are split. */
#define INSPECT_LINE_MAX 65536

static const char ps_usage[] =
	"usage: jobset ps [-d RUN-DIR] [-o json]\n"
	"\n"
	"List the pods of a run, live or finished, as `kubectl get pods` does, with\n"
	"each finished pod's exit (\"Exited (1)\"). The run is RUN-DIR, else\n"
	"$JOBSET_RUN_DIR, else the last run you started.\n"
	"  -o json    the pods as a v1 List\n";

static const char describe_usage[] =
	"usage: jobset describe [-d RUN-DIR] POD\n"
	"\n"
	"Show one pod of a run: its containers with state, exit code, reason,\n"
	"restarts and log file, its conditions, and its events. POD is a pod name,\n"
	"the hostname of an Indexed pod (the newest pod of that name), or a unique\n"
	"prefix.\n";

static const char logs_usage[] =
	"usage: jobset logs [-d RUN-DIR] [-f] [--tail N] [-c CONTAINER] POD\n"
	"\n"
	"Print a container's log (every rotated file, oldest first). POD as for\n"
	"`jobset describe`; the container defaults to the pod's first one.\n"
	"  -f, --follow      keep printing until the container has finished for\n"
	"                    good or the run has ended\n"
	"      --tail N      only the last N lines\n"
	"  -c, --container C the container\n";

/** "Running (runner pid 123)" or the final state of the run. */
static void print_header(const struct js_cli_runinfo *ri)
{
	const json_t *runner = json_object_get(ri->state, "runner");
	const char *state = js_json_str(runner, "state");
	printf("RUN %s  jobset %s  %s", ri->dir, js_json_str(js_json_path(ri->state, "jobset"), "name"),
	       state ? state : "Unknown");
	if (ri->live)
		printf(" (runner pid %lld)\n", (long long)json_integer_value(json_object_get(runner, "pid")));
	else
		printf("%s\n", json_is_true(json_object_get(runner, "final")) ? "" : " (the runner died)");
}

static void ready_of(const json_t *pod, char *buf, size_t n)
{
	size_t ready = 0, i;
	json_t *cs;
	const json_t *l = js_json_path(pod, "status.containerStatuses");
	json_array_foreach(l, i, cs)
		ready += json_is_true(json_object_get(cs, "ready"));
	snprintf(buf, n, "%zu/%zu", ready, json_array_size(l));
}

static int restarts_of(const json_t *pod)
{
	int r = 0;
	json_t *all = js_podjson_statuses(pod);
	size_t i;
	json_t *cs;
	json_array_foreach(all, i, cs)
		r += (int)json_integer_value(json_object_get(cs, "restartCount"));
	json_decref(all);
	return r;
}

int js_cli_ps(int argc, char **argv)
{
	struct js_cli_runopts s;
	int rc = js_cli_runinfo_args("ps", ps_usage, "do", argc, argv, &s);
	if (rc >= 0)
		return rc;
	if (optind != argc) {
		fputs(ps_usage, stderr);
		return JS_EXIT_USAGE;
	}
	struct js_cli_runinfo ri;
	if ((rc = js_cli_runinfo_open("ps", s.dir, &ri)) != 0)
		return rc;
	if (!ri.state) {
		fprintf(stderr, "jobset ps: %s has no state yet (%s)\n", ri.dir, ri.live ? "starting" : "no runner");
		js_cli_runinfo_done(&ri);
		return ri.live ? JS_EXIT_OK : JS_EXIT_USAGE;
	}
	const json_t *pods = json_object_get(ri.state, "pods");
	if (s.json) {
		json_t *list = json_pack("{s:s, s:s, s:O}", "apiVersion", "v1", "kind", "List", "items", pods);
		char *out = json_dumps(list, JSON_INDENT(2));
		printf("%s\n", out ? out : "{}");
		free(out);
		json_decref(list);
		js_cli_runinfo_done(&ri);
		return JS_EXIT_OK;
	}
	print_header(&ri);
	size_t w = 4, i;
	json_t *p;
	json_array_foreach(pods, i, p)
	{
		size_t n = strlen(js_json_str(json_object_get(p, "metadata"), "name"));
		w = n > w ? n : w;
	}
	printf("%-*s  %-5s  %-18s  %-8s  %-5s  %-15s  %s\n", (int)w, "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP",
	       "EXIT");
	json_array_foreach(pods, i, p)
	{
		char ready[16], status[64], age[16], ex[32];
		ready_of(p, ready, sizeof(ready));
		const char *ip = js_json_str(json_object_get(p, "status"), "podIP");
		printf("%-*s  %-5s  %-18s  %-8d  %-5s  %-15s  %s\n", (int)w,
		       js_json_str(json_object_get(p, "metadata"), "name"), ready,
		       js_cli_runinfo_pod_status(p, status, sizeof(status)), restarts_of(p),
		       js_cli_runinfo_age(js_json_str(json_object_get(p, "metadata"), "creationTimestamp"), age,
					  sizeof(age)),
		       ip ? ip : "<none>", js_cli_runinfo_pod_exit(p, ex, sizeof(ex)));
	}
	js_cli_runinfo_done(&ri);
	return JS_EXIT_OK;
}

/* ---- describe ---- */

static void describe_term(const char *indent, const char *title, const json_t *t)
{
	printf("%s%-15s Terminated\n", indent, title);
	printf("%s  Reason:       %s\n", indent, js_json_str(t, "reason") ? js_json_str(t, "reason") : "");
	printf("%s  Exit Code:    %lld\n", indent, (long long)json_integer_value(json_object_get(t, "exitCode")));
	if (json_object_get(t, "signal"))
		printf("%s  Signal:       %lld\n", indent, (long long)json_integer_value(json_object_get(t, "signal")));
	if (js_json_str(t, "message"))
		printf("%s  Message:      %s\n", indent, js_json_str(t, "message"));
	printf("%s  Started:      %s\n", indent, js_json_str(t, "startedAt") ? js_json_str(t, "startedAt") : "");
	printf("%s  Finished:     %s\n", indent, js_json_str(t, "finishedAt") ? js_json_str(t, "finishedAt") : "");
}

static void describe_ctr(const struct js_cli_runinfo *ri, const char *pod, const json_t *cs)
{
	const char *name = js_json_str(cs, "name");
	printf("  %s:\n", name);
	printf("    Image:          %s\n", js_json_str(cs, "image") ? js_json_str(cs, "image") : "");
	const json_t *st = json_object_get(cs, "state");
	if (json_object_get(st, "running")) {
		printf("    State:          Running\n      Started:      %s\n",
		       js_json_str(json_object_get(st, "running"), "startedAt")
			       ? js_json_str(json_object_get(st, "running"), "startedAt")
			       : "");
		if (js_json_str(cs, "containerID"))
			printf("      Process:      %s\n", js_json_str(cs, "containerID"));
	} else if (json_object_get(st, "terminated")) {
		describe_term("    ", "State:", json_object_get(st, "terminated"));
	} else {
		const json_t *w = json_object_get(st, "waiting");
		printf("    State:          Waiting\n      Reason:       %s\n",
		       js_json_str(w, "reason") ? js_json_str(w, "reason") : "");
	}
	if (json_object_get(js_json_path(cs, "lastState"), "terminated"))
		describe_term("    ", "Last State:", js_json_path(cs, "lastState.terminated"));
	printf("    Ready:          %s\n", json_is_true(json_object_get(cs, "ready")) ? "True" : "False");
	printf("    Restart Count:  %lld\n", (long long)json_integer_value(json_object_get(cs, "restartCount")));
	char *log = js_cli_runinfo_log_path(ri, pod, name);
	printf("    Log:            %s\n", log);
	free(log);
}

/** The lines of events.log about pod `name`, as describe's Events. */
static void describe_events(const struct js_cli_runinfo *ri, const char *name)
{
	char *path = js_buf_format("%s/events.log", ri->dir);
	FILE *f = fopen(path, "re");
	free(path);
	printf("Events:\n");
	if (!f) {
		printf("  <none>\n");
		return;
	}
	char *needle = js_buf_format(" pod/%s", name);
	size_t nl = strlen(needle);
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int shown = 0;
	while ((n = getline(&line, &cap, f)) > 0) {
		char *at = strstr(line, needle);
		/* " pod/NAME:" or " pod/NAME" at the end: not a longer name. */
		if (!at || (at[nl] != ':' && at[nl] != '\n' && at[nl] != '\0'))
			continue;
		printf("  %s", line);
		shown++;
	}
	if (!shown)
		printf("  <none>\n");
	free(line);
	free(needle);
	fclose(f);
}

int js_cli_describe(int argc, char **argv)
{
	struct js_cli_runopts s;
	int rc = js_cli_runinfo_args("describe", describe_usage, "d", argc, argv, &s);
	if (rc >= 0)
		return rc;
	if (optind != argc - 1) {
		fputs(describe_usage, stderr);
		return JS_EXIT_USAGE;
	}
	struct js_cli_runinfo ri;
	if ((rc = js_cli_runinfo_open("describe", s.dir, &ri)) != 0)
		return rc;
	const json_t *p = js_cli_runinfo_pod(&ri, argv[optind]);
	if (!p) {
		js_cli_runinfo_done(&ri);
		return JS_EXIT_INVALID;
	}
	const json_t *m = json_object_get(p, "metadata"), *st = json_object_get(p, "status");
	const char *name = js_json_str(m, "name");
	char status[64];
	printf("Name:           %s\n", name);
	printf("Namespace:      %s\n", js_json_str(m, "namespace") ? js_json_str(m, "namespace") : "");
	printf("Job:            %s\n", js_json_str(json_object_get(m, "labels"), "job-name")
					   ? js_json_str(json_object_get(m, "labels"), "job-name")
					   : "");
	printf("Start Time:     %s\n", js_json_str(st, "startTime") ? js_json_str(st, "startTime") : "<none>");
	printf("Status:         %s (phase %s)\n", js_cli_runinfo_pod_status(p, status, sizeof(status)),
	       js_json_str(st, "phase") ? js_json_str(st, "phase") : "");
	if (js_json_str(m, "deletionTimestamp"))
		printf("Deleted:        %s (%s)\n", js_json_str(m, "deletionTimestamp"),
		       js_json_str(json_object_get(m, "annotations"), JS_PODJSON_ANN_STOP)
			       ? js_json_str(json_object_get(m, "annotations"), JS_PODJSON_ANN_STOP)
			       : "");
	printf("IP:             %s\n", js_json_str(st, "podIP") ? js_json_str(st, "podIP") : "<none>");
	static const char *const lists[] = {"initContainerStatuses", "containerStatuses"};
	static const char *const titles[] = {"Init Containers:", "Containers:"};
	for (size_t k = 0; k < 2; k++) {
		const json_t *l = json_object_get(st, lists[k]);
		if (!json_array_size(l))
			continue;
		printf("%s\n", titles[k]);
		size_t i;
		json_t *cs;
		json_array_foreach(l, i, cs)
			describe_ctr(&ri, name, cs);
	}
	printf("Conditions:\n  %-18s %s\n", "Type", "Status");
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(st, "conditions"), i, c)
	{
		printf("  %-18s %s", js_json_str(c, "type"), js_json_str(c, "status"));
		if (js_json_str(c, "reason"))
			printf("  (%s: %s)", js_json_str(c, "reason"),
			       js_json_str(c, "message") ? js_json_str(c, "message") : "");
		printf("\n");
	}
	describe_events(&ri, name);
	js_cli_runinfo_done(&ri);
	return JS_EXIT_OK;
}

/* ---- logs ---- */

/** Copy what `fd` has from its offset to stdout. */
static void copy_out(int fd)
{
	char buf[65536];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			break;
	}
	fflush(stdout);
}

/** The last `n` lines of the files in order, with a ring of line copies. */
static void tail_files(char **files, size_t n_files, int64_t n)
{
	if (n == 0)
		return;
	char **ring = js_xcalloc((size_t)n, sizeof(char *));
	size_t head = 0, count = 0;
	for (size_t i = 0; i < n_files; i++) {
		FILE *f = fopen(files[i], "re");
		char *line = NULL;
		size_t cap = 0;
		ssize_t len;
		while (f && (len = getline(&line, &cap, f)) > 0) {
			free(ring[head]);
			ring[head] = js_xstrndup(line, (size_t)len < INSPECT_LINE_MAX ? (size_t)len : INSPECT_LINE_MAX);
			head = (head + 1) % (size_t)n;
			count += count < (size_t)n;
		}
		free(line);
		if (f)
			fclose(f);
	}
	for (size_t k = 0; k < count; k++) {
		size_t at = (head + (size_t)n - count + k) % (size_t)n;
		fputs(ring[at], stdout);
	}
	for (int64_t k = 0; k < n; k++)
		free(ring[k]);
	free(ring);
	fflush(stdout);
}

/** Whether the container is done for good: the run ended, or the pod
 * finished, or the container terminated with no restart to come. */
static bool ctr_done(struct js_cli_runinfo *ri, const char *pod, const char *ctr)
{
	(void)js_cli_runinfo_reload(ri);
	if (!ri->live)
		return true;
	const json_t *p = NULL;
	size_t i;
	json_t *x;
	json_array_foreach(json_object_get(ri->state, "pods"), i, x)
	{
		if (strcmp(js_json_str(json_object_get(x, "metadata"), "name"), pod) == 0)
			p = x;
	}
	const char *phase = js_json_str(json_object_get(p, "status"), "phase");
	if (!p || (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)))
		return true;
	json_t *all = js_podjson_statuses(p);
	bool done = false;
	json_array_foreach(all, i, x)
	{
		/* A container waiting for its restart shows as waiting
		 * (CrashLoopBackOff), so terminated is for good. */
		if (strcmp(js_json_str(x, "name"), ctr) == 0)
			done = js_json_path(x, "state.terminated") != NULL;
	}
	json_decref(all);
	return done;
}

/** Follow `path` (the current file of a rotated log) from `fd`: new bytes as
 * they come, the next file after a rotation, until the container is done. */
static void follow(struct js_cli_runinfo *ri, const char *path, int fd, const char *pod, const char *ctr)
{
	int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	char *dir = js_xstrdup(path);
	*strrchr(dir, '/') = '\0';
	if (in >= 0 && inotify_add_watch(in, dir, IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
		close(in);
		in = -1; /* no directory yet: poll on the timer alone */
	}
	for (;;) {
		if (fd < 0)
			fd = open(path, O_RDONLY | O_CLOEXEC); /* it may not exist yet */
		if (fd < 0 && ctr_done(ri, pod, ctr))
			break;
		if (fd >= 0)
			copy_out(fd);
		struct stat a, b;
		if (fd >= 0 && fstat(fd, &b) == 0) {
			if (stat(path, &a) == 0 && (a.st_ino != b.st_ino || a.st_dev != b.st_dev)) {
				/* Rotated: the rest of the old file was read above;
				 * go on with the new one at once. */
				close(fd);
				fd = -1;
				continue;
			}
			if (lseek(fd, 0, SEEK_CUR) > b.st_size)
				(void)lseek(fd, 0, SEEK_SET); /* emptied in place (one file) */
		}
		if (ctr_done(ri, pod, ctr)) {
			if (fd >= 0)
				copy_out(fd);
			break;
		}
		struct pollfd pfd = {.fd = in, .events = POLLIN};
		if (poll(&pfd, 1, INSPECT_FOLLOW_CHECK_MS) > 0) {
			char ev[4096];
			while (read(in, ev, sizeof(ev)) > 0) {
				/* drained: which file changed does not matter */
			}
		}
	}
	if (fd >= 0)
		close(fd);
	if (in >= 0)
		close(in);
	free(dir);
}

/** The container to show: -c, else the pod's first regular one. */
static const char *pick_container(const json_t *pod, const char *want)
{
	static const char *const lists[] = {"status.containerStatuses", "status.initContainerStatuses"};
	size_t n = 0;
	const char *first = NULL;
	for (size_t k = 0; k < 2; k++) {
		size_t i;
		json_t *cs;
		json_array_foreach(js_json_path(pod, lists[k]), i, cs)
		{
			const char *name = js_json_str(cs, "name");
			if (want && strcmp(want, name) == 0)
				return name;
			first = first ? first : name;
			n += k == 0;
		}
	}
	if (want) {
		fprintf(stderr, "jobset logs: pod %s has no container '%s'\n",
			js_json_str(json_object_get(pod, "metadata"), "name"), want);
		return NULL;
	}
	if (n > 1)
		fprintf(stderr, "Defaulted container \"%s\" (use -c to pick another)\n", first);
	return first;
}

int js_cli_logs(int argc, char **argv)
{
	struct js_cli_runopts s;
	int rc = js_cli_runinfo_args("logs", logs_usage, "dcft", argc, argv, &s);
	if (rc >= 0)
		return rc;
	if (optind != argc - 1) {
		fputs(logs_usage, stderr);
		return JS_EXIT_USAGE;
	}
	struct js_cli_runinfo ri;
	if ((rc = js_cli_runinfo_open("logs", s.dir, &ri)) != 0)
		return rc;
	const json_t *p = js_cli_runinfo_pod(&ri, argv[optind]);
	const char *ctr = p ? pick_container(p, s.container) : NULL;
	if (!ctr) {
		js_cli_runinfo_done(&ri);
		return JS_EXIT_INVALID;
	}
	char *pod = js_xstrdup(js_json_str(json_object_get(p, "metadata"), "name"));
	char *cname = js_xstrdup(ctr);
	char *path = js_cli_runinfo_log_path(&ri, pod, cname);
	/* Rotated files first, oldest (highest number) first. */
	char **files = js_xcalloc(JS_PODLOG_MAX_MAX_FILES + 1, sizeof(char *));
	size_t n = 0;
	for (int k = JS_PODLOG_MAX_MAX_FILES - 1; k >= 1; k--) {
		char *f = js_buf_format("%s.%d", path, k);
		if (access(f, R_OK) == 0)
			files[n++] = f;
		else
			free(f);
	}
	files[n++] = js_xstrdup(path);
	int fd = -1;
	if (s.tail >= 0) {
		tail_files(files, n, s.tail);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			(void)lseek(fd, 0, SEEK_END);
	} else {
		for (size_t i = 0; i < n; i++) {
			int f = open(files[i], O_RDONLY | O_CLOEXEC);
			if (f < 0)
				continue;
			copy_out(f);
			if (i == n - 1)
				fd = f;
			else
				close(f);
		}
	}
	if (s.follow)
		follow(&ri, path, fd, pod, cname);
	else if (fd >= 0)
		close(fd);
	for (size_t i = 0; i < n; i++)
		free(files[i]);
	free(files);
	free(path);
	free(pod);
	free(cname);
	js_cli_runinfo_done(&ri);
	return JS_EXIT_OK;
}
