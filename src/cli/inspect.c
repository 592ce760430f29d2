/*
 * inspect.c - `jobset ps`, `jobset describe POD` and `jobset logs POD`: a
 * run seen from outside, while it runs (from its live state file) and after
 * (the same file, final). cli/runinfo.h finds the run and the pod.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
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
/* How many times `logs` opens a log's files again when a rotation renamed
 * them while it opened them (each try takes microseconds; a rotation
 * takes a write of a whole file). */
#define INSPECT_SCAN_TRIES 50
/* Longest part of a line `logs` holds back until its newline comes. */
#define INSPECT_LINE_HOLD (1024 * 1024)
/* How long `logs -f` waits for the pod to appear in a live run that is
 * still starting its pods, and how often it looks. */
#define INSPECT_POD_WAIT_MS 60000
#define INSPECT_POD_POLL_MS 50

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
	"                    good or the run has ended; waits (up to 60 s) for a\n"
	"                    pod the live run has not started yet. Every line\n"
	"                    still on disk is printed once, in order, rotated\n"
	"                    files included; when the log rotates away files\n"
	"                    before they are read, stderr says lines may be\n"
	"                    missing\n"
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

/** Whether the pod's phase is Succeeded or Failed: it can no longer change. */
static bool finished(const json_t *pod)
{
	const char *phase = js_json_str(json_object_get(pod, "status"), "phase");
	return phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
}

int js_cli_ps(int argc, char **argv)
{
	struct js_cli_runopts s;
	int rc = js_cli_runinfo_args("ps", ps_usage, "do", argc, argv, &s);
	if (rc >= 0 || (rc = js_cli_runinfo_operands("ps", ps_usage, argc, argv, 0)) >= 0)
		return rc;
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
	(void)js_cli_runinfo_leftovers(&ri, false); /* a line when the runner died */
	size_t w = 4, i;
	json_t *p;
	json_array_foreach(pods, i, p)
	{
		size_t n = strlen(js_json_str(json_object_get(p, "metadata"), "name"));
		w = n > w ? n : w;
	}
	printf("%-*s  %-5s  %-18s  %-8s  %-5s  %-15s  %s\n", (int)w, "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP",
	       "EXIT");
	bool stale = js_cli_runinfo_stale(&ri);
	json_array_foreach(pods, i, p)
	{
		char ready[16], status[64], age[16], ex[32];
		ready_of(p, ready, sizeof(ready));
		if (stale && !finished(p)) {
			/* The runner died: what its pods do now is not known (as
			 * kubectl shows the pods of a lost node). */
			snprintf(ready, sizeof(ready), "0/%zu", json_array_size(js_json_path(p, "status.containerStatuses")));
		}
		const char *ip = js_json_str(json_object_get(p, "status"), "podIP");
		printf("%-*s  %-5s  %-18s  %-8d  %-5s  %-15s  %s\n", (int)w,
		       js_json_str(json_object_get(p, "metadata"), "name"), ready,
		       stale && !finished(p) ? "Unknown" : js_cli_runinfo_pod_status(p, status, sizeof(status)),
		       restarts_of(p),
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
	if (rc >= 0 || (rc = js_cli_runinfo_operands("describe", describe_usage, argc, argv, 1)) >= 0)
		return rc;
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
	if (js_cli_runinfo_stale(&ri) && !finished(p))
		printf("Status:         Unknown (the runner died; it last said %s, phase %s)\n",
		       js_cli_runinfo_pod_status(p, status, sizeof(status)),
		       js_json_str(st, "phase") ? js_json_str(st, "phase") : "");
	else
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

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The files of a rotated log (local/podlog.h), held open oldest first:
 * rotation renames and deletes names, never what an open descriptor reads,
 * so a file once held is read whole whatever the writer does next. Every
 * file but the last is complete (a newer one was started after it). */
struct held_file {
	int fd;
	dev_t dev;
	ino_t ino;
	int k;          /* 0: <path>, k: <path>.k, when it was opened */
	bool numbered;  /* serial is known */
	int64_t serial; /* its place in the files created since the watch began */
};

struct held_log {
	const char *path; /* <dir>/logs/<pod>/<ctr>.log */
	const char *pod, *ctr;
	/* The output is written in whole lines, so that lines lost to a
	 * rotation leave no half line joined to another: the bytes after the
	 * last newline wait here (up to INSPECT_LINE_HOLD). */
	struct js_buf pend;
	bool midline; /* part of the current line was written already */
	bool skip;    /* drop bytes up to the first newline: the tail of a lost line */
	/* inotify (-1 without -f): the log's directory wakes the follower,
	 * and the files the writer created are counted to number them. */
	int in;
	bool watched;    /* the log's own directory is watched */
	bool counted;    /* every creation since was counted */
	bool from_start; /* counted from before the first file: it is file 1 */
	int64_t created; /* files created since the watch began */
	size_t n;
	struct held_file f[JS_PODLOG_MAX_MAX_FILES + 1]; /* a scan, or the newest held and a scan */
};

/** Keep `n` bytes for later in h->pend; written at once if it is full,
 * which its ceiling (twice INSPECT_LINE_HOLD, above what out_lines keeps)
 * never makes it. */
static void hold(struct held_log *h, const char *p, size_t n)
{
	if (js_buf_add(&h->pend, p, n) < 0) {
		(void)fwrite(p, 1, n, stdout);
		h->midline = true;
	}
}

/** Write `n` bytes of the log from `p`, whole lines only (see pend). */
static void out_lines(struct held_log *h, const char *p, size_t n)
{
	if (h->skip) {
		const char *nl = memchr(p, '\n', n);
		if (!nl)
			return;
		h->skip = false;
		n -= (size_t)(nl + 1 - p);
		p = nl + 1;
	}
	const char *last = n ? memrchr(p, '\n', n) : NULL;
	if (!last) {
		hold(h, p, n);
		if (h->pend.len > INSPECT_LINE_HOLD) {
			(void)fwrite(h->pend.p, 1, h->pend.len, stdout);
			h->midline = true;
			js_buf_clear(&h->pend);
		}
		return;
	}
	if (h->pend.len)
		(void)fwrite(h->pend.p, 1, h->pend.len, stdout);
	js_buf_clear(&h->pend);
	(void)fwrite(p, 1, (size_t)(last + 1 - p), stdout);
	h->midline = false;
	hold(h, last + 1, (size_t)(p + n - (last + 1)));
}

/** Write what `fd` has from its offset (see out_lines). */
static void copy_out(struct held_log *h, int fd)
{
	char buf[65536];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		out_lines(h, buf, (size_t)n);
	fflush(stdout);
}

/** Write the half line held back: the end of the output, or a quiet log. */
static void out_rest(struct held_log *h)
{
	if (h->pend.len)
		(void)fwrite(h->pend.p, 1, h->pend.len, stdout);
	js_buf_clear(&h->pend);
	fflush(stdout);
}

static void held_close(struct held_log *h, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		close(h->f[i].fd);
}

/** Whether every name of the log still is what the scan in `h` found: the
 * files it opened under the same names, and no file under the others (a
 * rename into a name already found missing would hide a file). */
static bool names_stable(const char *path, const struct held_log *h)
{
	char name[PATH_MAX];
	size_t i = 0; /* h->f is in the order of the scan: k down to 0 */
	for (int k = JS_PODLOG_MAX_MAX_FILES - 1; k >= 0; k--) {
		struct stat st;
		snprintf(name, sizeof(name), k ? "%s.%d" : "%s", path, k);
		bool there = stat(name, &st) == 0;
		bool found = i < h->n && h->f[i].k == k;
		if (there != found || (found && (st.st_ino != h->f[i].ino || st.st_dev != h->f[i].dev)))
			return false;
		i += found;
	}
	return true;
}

/** Watch the directory of the log for new files and writes. The runner
 * makes a pod's log directory at its first output (local/pod.c); the
 * follower makes it first when the run's logs/ exists, so that it watches
 * before the first file is written and knows that every file is counted
 * (h->from_start). Else it watches the nearest parent that exists (logs/,
 * then the run directory), whose change wakes it to try again. Sets
 * h->watched once the log's own directory is watched. */
static void watch_log_dir(struct held_log *h)
{
	char *dir = js_xstrdup(h->path);
	for (int up = 0; up < 3; up++) {
		char *slash = strrchr(dir, '/');
		if (!slash)
			break;
		*slash = '\0';
		if (up == 0 && mkdir(dir, 0755) < 0 && errno != EEXIST) {
			/* no logs/ yet: a parent is watched below */
		}
		uint32_t mask = up == 0 ? IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE : IN_CREATE | IN_MOVED_TO;
		if (inotify_add_watch(h->in, dir, mask) >= 0) {
			h->watched = up == 0;
			h->counted = h->watched;
			if (h->watched) {
				char *rotated = js_buf_format("%s.1", h->path);
				h->from_start = access(h->path, F_OK) < 0 && access(rotated, F_OK) < 0;
				free(rotated);
			}
			break;
		}
	}
	free(dir);
}

/** Read every queued inotify event, counting the creations of the log's
 * file (one per file the writer starts: the first, then one per rotation). */
static void read_events(struct held_log *h)
{
	if (h->in < 0)
		return;
	const char *base = strrchr(h->path, '/') + 1;
	_Alignas(struct inotify_event) char ev[4096];
	ssize_t n;
	while ((n = read(h->in, ev, sizeof(ev))) > 0) {
		for (char *p = ev; p < ev + n;) {
			const struct inotify_event *e = (const struct inotify_event *)p;
			if (e->mask & IN_Q_OVERFLOW)
				h->counted = false; /* creations were missed: serials are unknown from now on */
			else if ((e->mask & IN_CREATE) && e->len && strcmp(e->name, base) == 0)
				h->created++;
			p += sizeof(*e) + e->len;
		}
	}
}

/** Open every file of the log now on disk into *s, oldest first, retried
 * while a rotation shifts the names under it. With the creations counted
 * (h->counted), each file gets its serial number: the files on disk are
 * consecutive, and the newest is the last one created. */
static void scan_log(struct held_log *h, struct held_log *s)
{
	char name[PATH_MAX];
	for (int attempt = 0;; attempt++) {
		read_events(h);
		int64_t created = h->created;
		s->n = 0;
		for (int k = JS_PODLOG_MAX_MAX_FILES - 1; k >= 0; k--) {
			snprintf(name, sizeof(name), k ? "%s.%d" : "%s", h->path, k);
			int fd = open(name, O_RDONLY | O_CLOEXEC);
			struct stat st;
			if (fd >= 0 && fstat(fd, &st) < 0) {
				close(fd);
				fd = -1;
			}
			if (fd < 0)
				continue;
			s->f[s->n].fd = fd;
			s->f[s->n].dev = st.st_dev;
			s->f[s->n].ino = st.st_ino;
			s->f[s->n++].k = k;
		}
		read_events(h);
		bool stable = names_stable(h->path, s) && created == h->created;
		if (stable || attempt >= INSPECT_SCAN_TRIES) {
			for (size_t i = 0; i < s->n; i++) {
				s->f[i].numbered = stable && h->counted;
				s->f[i].serial = h->created - (int64_t)(s->n - 1 - i);
			}
			return;
		}
		held_close(s, 0, s->n);
	}
}

/** Print what the held files have unread; keep only the newest open. */
static void held_drain(struct held_log *h)
{
	for (size_t i = 0; i < h->n; i++)
		copy_out(h, h->f[i].fd);
	if (h->n > 1) {
		held_close(h, 0, h->n - 1);
		h->f[0] = h->f[h->n - 1];
		h->n = 1;
	}
}

/**
 * Hold the files of the log newer than those already held. When the newest
 * held file is no longer on disk, the writer rotated more than the number
 * of files kept since the last look, and files may have come and gone
 * unread: the serial numbers tell (else it is assumed). Lines lost so are
 * said on stderr, and the output goes on with the oldest file still there,
 * from its first whole line.
 */
static void held_advance(struct held_log *h)
{
	if (h->in >= 0 && !h->watched)
		watch_log_dir(h);
	struct held_log s = {0};
	scan_log(h, &s);
	size_t from = 0;
	if (h->n && s.n) {
		const struct held_file *last = &h->f[h->n - 1];
		size_t i;
		for (i = 0; i < s.n; i++) {
			if (s.f[i].ino == last->ino && s.f[i].dev == last->dev)
				break;
		}
		if (i < s.n) {
			from = i + 1;
		} else if (!last->numbered || !s.f[0].numbered || s.f[0].serial > last->serial + 1) {
			if (last->numbered && s.f[0].numbered)
				fprintf(stderr,
					"jobset logs: the log of %s/%s rotated faster than it was read: %lld "
					"file(s) of it were deleted unread; lines are missing here\n",
					h->pod, h->ctr, (long long)(s.f[0].serial - last->serial - 1));
			else
				fprintf(stderr,
					"jobset logs: the log of %s/%s rotated faster than it was read: lines "
					"may be missing here\n",
					h->pod, h->ctr);
			/* The held files are complete (the newest was rotated):
			 * write them out first. Then the half line they end
			 * with stays unwritten, and the oldest file on disk
			 * starts with the tail of a line: skipped too. */
			held_drain(h);
			js_buf_clear(&h->pend);
			if (h->midline)
				fputc('\n', stdout);
			h->midline = false;
			h->skip = true;
		}
	}
	if (!h->n && s.n && h->from_start && s.f[0].numbered && s.f[0].serial > 1) {
		fprintf(stderr,
			"jobset logs: the log of %s/%s rotated faster than it was read: its first %lld file(s) were "
			"deleted unread; lines are missing here\n",
			h->pod, h->ctr, (long long)(s.f[0].serial - 1));
		h->skip = true;
	}
	held_close(&s, 0, from);
	for (size_t i = from; i < s.n; i++)
		h->f[h->n++] = s.f[i]; /* h holds one file here (held_drain) */
}

/** The last `n` lines of the held files in order, then keep only the newest
 * file open, at its end. Lines are kept whole, however long, and a line
 * split across two files (local/podlog.h) is one line. */
static void held_tail(struct held_log *h, int64_t n)
{
	struct line {
		char *s;
		size_t n;
	} *ring = NULL;
	size_t cap = 0, count = 0, head = 0;
	bool open_line = false; /* the last line kept has no newline yet */
	for (size_t i = 0; i < h->n && n > 0; i++) {
		int fd = dup(h->f[i].fd); /* shares the offset: the end once read */
		FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
		if (!f && fd >= 0)
			close(fd);
		char *buf = NULL;
		size_t bcap = 0;
		ssize_t len;
		while (f && (len = getline(&buf, &bcap, f)) > 0) {
			if (open_line) {
				struct line *l = &ring[count < (size_t)n ? count - 1 : (head + cap - 1) % cap];
				l->s = js_xrealloc(l->s, l->n + (size_t)len);
				memcpy(l->s + l->n, buf, (size_t)len);
				l->n += (size_t)len;
			} else {
				size_t at;
				if (count < (size_t)n) {
					if (count == cap) {
						size_t want = cap ? cap * 2 : 64;
						cap = want < (size_t)n ? want : (size_t)n;
						ring = js_xrealloc(ring, cap * sizeof(*ring));
					}
					at = count++;
				} else {
					at = head;
					head = (head + 1) % cap;
					free(ring[at].s);
				}
				ring[at].s = memcpy(js_xmalloc((size_t)len), buf, (size_t)len);
				ring[at].n = (size_t)len;
			}
			open_line = buf[len - 1] != '\n';
		}
		free(buf);
		if (f)
			fclose(f);
	}
	for (size_t k = 0; k < count; k++) {
		struct line *l = &ring[(head + k) % cap];
		(void)fwrite(l->s, 1, l->n, stdout);
		free(l->s);
	}
	free(ring);
	fflush(stdout);
	for (size_t i = 0; i < h->n; i++)
		(void)lseek(h->f[i].fd, 0, SEEK_END); /* --tail 0 read nothing */
	h->midline = open_line;
	held_drain(h);
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
	if (!p || finished(p))
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

/** Follow the log held in `h`: new bytes as they come, each newer file
 * after a rotation, until the container is done. */
static void follow(struct js_cli_runinfo *ri, struct held_log *h, const char *pod, const char *ctr)
{
	int64_t next_check = 0;
	for (;;) {
		held_advance(h);
		held_drain(h);
		if (h->n == 1) {
			/* One file emptied in place (--log-max-files 1). */
			struct stat st;
			if (h->f[0].k == 0 && fstat(h->f[0].fd, &st) == 0 && lseek(h->f[0].fd, 0, SEEK_CUR) > st.st_size)
				(void)lseek(h->f[0].fd, 0, SEEK_SET);
		}
		/* The state file is read at most every check period, however
		 * fast the lines come. */
		if (mono_ms() >= next_check) {
			if (ctr_done(ri, pod, ctr)) {
				held_advance(h);
				held_drain(h);
				break;
			}
			next_check = mono_ms() + INSPECT_FOLLOW_CHECK_MS;
		}
		/* Wake on the next event; held_advance reads them. A half
		 * line (a prompt, a progress bar) shows once the log has been
		 * quiet for a check period. */
		struct pollfd pfd = {.fd = h->in, .events = POLLIN};
		if (poll(&pfd, 1, INSPECT_FOLLOW_CHECK_MS) == 0 && h->pend.len) {
			out_rest(h);
			h->midline = true;
		}
	}
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

/** The pod `query` names; with `wait`, waits (at most INSPECT_POD_WAIT_MS)
 * while the run is live and still starting pods for one to appear, as
 * `logs -f` right after `run --detach` needs. NULL after printing why. */
static const json_t *find_pod(struct js_cli_runinfo *ri, const char *query, bool wait)
{
	int64_t deadline = mono_ms() + INSPECT_POD_WAIT_MS;
	for (;;) {
		size_t n_prefix = 0;
		const json_t *p = js_cli_runinfo_find(ri, query, &n_prefix);
		if (p)
			return p;
		if (!wait || n_prefix > 1 || !ri->live || js_cli_runinfo_final(ri) || mono_ms() >= deadline)
			return js_cli_runinfo_pod(ri, query); /* says why */
		(void)poll(NULL, 0, INSPECT_POD_POLL_MS);
		(void)js_cli_runinfo_reload(ri);
	}
}

int js_cli_logs(int argc, char **argv)
{
	struct js_cli_runopts s;
	int rc = js_cli_runinfo_args("logs", logs_usage, "dcft", argc, argv, &s);
	if (rc >= 0 || (rc = js_cli_runinfo_operands("logs", logs_usage, argc, argv, 1)) >= 0)
		return rc;
	struct js_cli_runinfo ri;
	if ((rc = js_cli_runinfo_open("logs", s.dir, &ri)) != 0)
		return rc;
	const json_t *p = find_pod(&ri, argv[optind], s.follow);
	const char *ctr = p ? pick_container(p, s.container) : NULL;
	if (!ctr) {
		js_cli_runinfo_done(&ri);
		return JS_EXIT_INVALID;
	}
	char *pod = js_xstrdup(js_json_str(json_object_get(p, "metadata"), "name"));
	char *cname = js_xstrdup(ctr);
	char *path = js_cli_runinfo_log_path(&ri, pod, cname);
	struct held_log *h = js_xcalloc(1, sizeof(*h));
	*h = (struct held_log){.path = path, .pod = pod, .ctr = cname, .in = -1};
	if (s.follow)
		h->in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK); /* -1: poll on the timer alone */
	js_buf_init(&h->pend, 2 * INSPECT_LINE_HOLD);
	held_advance(h); /* every file on disk, oldest first */
	if (s.tail >= 0)
		held_tail(h, s.tail);
	else
		held_drain(h);
	if (s.follow)
		follow(&ri, h, pod, cname);
	out_rest(h);
	held_close(h, 0, h->n);
	js_buf_done(&h->pend);
	if (h->in >= 0)
		close(h->in);
	free(h);
	free(path);
	free(pod);
	free(cname);
	js_cli_runinfo_done(&ri);
	return JS_EXIT_OK;
}
