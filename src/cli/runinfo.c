/*
 * runinfo.c - reading a run directory for the inspect commands (see
 * runinfo.h).
 */
#include "cli/runinfo.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/time.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/manifest.h"
#include "local/container.h"
#include "local/jobctl.h"
#include "local/podjson.h"
#include "local/rundir.h"

int js_cli_runinfo_args(const char *cmd, const char *usage, const char *accept, int argc, char **argv,
			struct js_cli_runopts *s)
{
	static const struct option opts[] = {
		{"run-dir", required_argument, NULL, 'd'},   {"output", required_argument, NULL, 'o'},
		{"follow", no_argument, NULL, 'f'},          {"tail", required_argument, NULL, 't'},
		{"container", required_argument, NULL, 'c'}, {"timeout", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0},
	};
	*s = (struct js_cli_runopts){.tail = -1, .timeout_s = -1};
	int c;
	optind = 1;
	opterr = 0; /* our own message, prefixed "jobset CMD: " */
	while ((c = getopt_long(argc, argv, ":d:o:c:fh", opts, NULL)) != -1) {
		/* An option the command does not take is a usage error, as an
		 * unknown one is. */
		if (c != '?' && c != ':' && c != 'h' && !strchr(accept, c)) {
			const struct option *o = opts;
			while (o->val != c)
				o++;
			return js_cli_runinfo_usage(cmd, usage, "--%s is not an option of %s", o->name, cmd);
		}
		switch (c) {
		case 'd':
			s->dir = optarg;
			break;
		case 'o':
			if (js_cli_opt_output(cmd, optarg, "text", &s->json) != JS_EXIT_OK)
				return JS_EXIT_USAGE;
			break;
		case 'f':
			s->follow = true;
			break;
		case 't':
		case 'T':
			/* --timeout 0: no grace at all, stop now. */
			if (js_parse_i64_in(optarg, strlen(optarg), 0, c == 't' ? INT32_MAX : 86400,
					    c == 't' ? &s->tail : &s->timeout_s) < 0)
				return js_cli_runinfo_usage(cmd, usage, "--%s takes a whole number from 0 to %d, not '%s'",
							    c == 't' ? "tail" : "timeout",
							    c == 't' ? INT32_MAX : 86400, optarg);
			break;
		case 'c':
			s->container = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return JS_EXIT_OK;
		case ':':
			return js_cli_runinfo_usage(cmd, usage, "option '%s' needs a value", argv[optind - 1]);
		default:
			if (optopt)
				return js_cli_runinfo_usage(cmd, usage, "unknown option '-%c'", optopt);
			return js_cli_runinfo_usage(cmd, usage, "unknown option '%s'", argv[optind - 1]);
		}
	}
	return -1;
}

int js_cli_runinfo_operands(const char *cmd, const char *usage, int argc, char **argv, int want)
{
	int have = argc - optind;
	if (have == want)
		return -1;
	if (have > want)
		return js_cli_runinfo_usage(cmd, usage, "unexpected argument '%s'", argv[optind + want]);
	return js_cli_runinfo_usage(cmd, usage, "a POD is needed");
}

int js_cli_runinfo_usage(const char *cmd, const char *usage, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "jobset %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	/* The synopsis (the usage's first line), not the whole help. */
	const char *nl = strchr(usage, '\n');
	fprintf(stderr, "\n%.*s\nRun 'jobset %s --help' for more.\n", nl ? (int)(nl - usage) : (int)strlen(usage), usage,
		cmd);
	return JS_EXIT_USAGE;
}

int js_cli_runinfo_open(const char *cmd, const char *dir, struct js_cli_runinfo *ret)
{
	*ret = (struct js_cli_runinfo){.cmd = cmd};
	const char *env = getenv("JOBSET_RUN_DIR");
	if (!dir && env && env[0])
		dir = env;
	char *err = NULL;
	if (dir) {
		ret->dir = js_xstrdup(dir);
	} else if (js_rundir_latest(&ret->dir, &err) < 0) {
		fprintf(stderr, "jobset %s: %s\n", cmd, err);
		free(err);
		return JS_EXIT_USAGE;
	}
	struct stat st;
	char *lock = js_buf_format("%s/runner.lock", ret->dir);
	bool is_run = stat(lock, &st) == 0;
	free(lock);
	if (!is_run) {
		fprintf(stderr, "jobset %s: '%s' is not a run directory (no run has used it)\n", cmd, ret->dir);
		js_cli_runinfo_done(ret);
		return JS_EXIT_USAGE;
	}
	(void)js_cli_runinfo_reload(ret);
	return 0;
}

int js_cli_runinfo_reload(struct js_cli_runinfo *ri)
{
	ri->live = js_rundir_live(ri->dir);
	char *path = js_buf_format("%s/state.json", ri->dir);
	json_error_t jerr;
	json_t *s = json_load_file(path, 0, &jerr);
	free(path);
	if (!s)
		return -ENOENT;
	json_decref(ri->state);
	ri->state = s;
	return 0;
}

void js_cli_runinfo_done(struct js_cli_runinfo *ri)
{
	free(ri->dir);
	json_decref(ri->state);
	*ri = (struct js_cli_runinfo){0};
}

static const char *pod_name(const json_t *pod)
{
	const char *n = js_json_str(json_object_get(pod, "metadata"), "name");
	return n ? n : "";
}

/** The hostname of a pod: <job>-<completion index> for an Indexed pod. */
static bool has_hostname(const json_t *pod, const char *host)
{
	const char *job = js_json_str(js_json_path(pod, "metadata.labels"), "job-name");
	const char *idx = js_json_str(js_json_path(pod, "metadata.annotations"), "batch.kubernetes.io/job-completion-index");
	if (!job || !idx)
		return false;
	size_t n = strlen(job);
	return strncmp(host, job, n) == 0 && host[n] == '-' && strcmp(host + n + 1, idx) == 0;
}

const json_t *js_cli_runinfo_find(const struct js_cli_runinfo *ri, const char *query, size_t *ret_n_prefix)
{
	const json_t *pods = json_object_get(ri->state, "pods");
	const json_t *by_host = NULL, *by_prefix = NULL;
	size_t n_prefix = 0, i;
	json_t *p;
	json_array_foreach(pods, i, p)
	{
		const char *name = pod_name(p);
		if (strcmp(name, query) == 0)
			return p;
		if (has_hostname(p, query))
			by_host = p; /* pods are listed oldest first: the newest wins */
		if (strncmp(name, query, strlen(query)) == 0) {
			by_prefix = p;
			n_prefix++;
		}
	}
	*ret_n_prefix = n_prefix;
	if (by_host)
		return by_host;
	return n_prefix == 1 ? by_prefix : NULL;
}

bool js_cli_runinfo_final(const struct js_cli_runinfo *ri)
{
	return json_is_true(js_json_path(ri->state, "runner.final"));
}

bool js_cli_runinfo_stale(const struct js_cli_runinfo *ri)
{
	return !ri->live && !js_cli_runinfo_final(ri);
}

/** "2 pods, 3 containers, 1 network" into buf. */
static const char *left_text(const struct js_container_left *l, char *buf, size_t n)
{
	snprintf(buf, n, "%zu pod%s, %zu container%s, %zu network%s", l->n_pods, l->n_pods == 1 ? "" : "s",
		 l->n_containers, l->n_containers == 1 ? "" : "s", l->n_networks, l->n_networks == 1 ? "" : "s");
	return buf;
}

int js_cli_runinfo_leftovers(const struct js_cli_runinfo *ri, bool remove)
{
	const json_t *ct = js_json_path(ri->state, "runner.containers");
	enum js_container_runtime rt = js_container_runtime_from_string(js_json_str(ct, "runtime"));
	const char *net = js_json_str(ct, "network");
	if (!js_cli_runinfo_stale(ri) || rt <= JS_CONTAINER_PROCESS || !net)
		return 0;
	struct js_container_left before = {0}, left;
	char a[128], b[128];
	int r = remove ? js_container_remove_leftovers(rt, net, &before) : 0;
	if (r >= 0)
		r = js_container_leftovers(rt, net, &left);
	if (r < 0) {
		fprintf(stderr, "jobset %s: cannot ask %s what the run left (label " JS_CONTAINER_LABEL "=%s): %s\n",
			ri->cmd, js_container_runtime_to_string(rt), net, js_strerror(r));
		js_container_left_done(&before);
		return -1;
	}
	size_t n_left = left.n_pods + left.n_containers + left.n_networks;
	size_t n_before = before.n_pods + before.n_containers + before.n_networks;
	if (remove && n_before)
		printf("removed what the runner left in %s: %s (network %s)\n", js_container_runtime_to_string(rt),
		       left_text(&before, a, sizeof(a)), net);
	if (n_left)
		printf("left by the runner in %s: %s (network %s)%s\n", js_container_runtime_to_string(rt),
		       left_text(&left, b, sizeof(b)), net, remove ? "" : "; `jobset down` removes them");
	else if (!remove || !n_before)
		printf("containers: nothing of this run is left in %s (network %s)\n", js_container_runtime_to_string(rt),
		       net);
	js_container_left_done(&before);
	js_container_left_done(&left);
	return n_left ? 1 : 0;
}

const json_t *js_cli_runinfo_pod(const struct js_cli_runinfo *ri, const char *query)
{
	size_t n_prefix = 0;
	const json_t *p = js_cli_runinfo_find(ri, query, &n_prefix);
	if (p)
		return p;
	if (n_prefix > 1)
		fprintf(stderr, "jobset %s: '%s' names %zu pods; give more of the name (jobset ps --run-dir %s)\n",
			ri->cmd, query, n_prefix, ri->dir);
	else if (ri->live && !js_cli_runinfo_final(ri))
		fprintf(stderr,
			"jobset %s: no pod '%s' in %s yet: the run is still starting its pods (jobset ps --run-dir %s; "
			"`jobset logs -f` waits for the pod)\n",
			ri->cmd, query, ri->dir, ri->dir);
	else
		fprintf(stderr, "jobset %s: no pod '%s' in %s (jobset ps --run-dir %s)\n", ri->cmd, query, ri->dir,
			ri->dir);
	return NULL;
}

static const json_t *terminated(const json_t *cs)
{
	return js_json_path(cs, "state.terminated");
}

const char *js_cli_runinfo_pod_status(const json_t *pod, char *buf, size_t n)
{
	const json_t *st = json_object_get(pod, "status");
	const char *phase = js_json_str(st, "phase");
	const char *stop = js_json_str(js_json_path(pod, "metadata.annotations"), JS_PODJSON_ANN_STOP);
	bool deleting = js_json_str(json_object_get(pod, "metadata"), "deletionTimestamp") != NULL;
	bool finished = phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
	snprintf(buf, n, "%s", phase ? phase : "Unknown");
	if (finished && stop) {
		/* A pod stopped for missing its progress deadline failed, as an
		 * evicted one did: both say why instead of "Stopped". */
		snprintf(buf, n, "%s", strcmp(stop, "Evicted") == 0			     ? "Evicted"
				       : strcmp(stop, "ProgressDeadlineExceeded") == 0 ? "ProgressDeadlineExceeded"
										       : "Stopped");
		return buf;
	}
	if (deleting && !finished) {
		snprintf(buf, n, "Terminating");
		return buf;
	}
	/* Its network is still being made: what kubectl shows of a pod whose
	 * sandbox is not ready. */
	if (phase && strcmp(phase, "Pending") == 0 && !js_jobctl_condition(pod, "PodReadyToStartContainers")) {
		snprintf(buf, n, "ContainerCreating");
		return buf;
	}
	/* Init containers first, as kubectl: a failing one, or how far they got. */
	const json_t *inits = json_object_get(st, "initContainerStatuses");
	size_t i, done = 0;
	json_t *cs;
	json_array_foreach(inits, i, cs)
	{
		const json_t *t = terminated(cs);
		const char *wait = js_json_str(js_json_path(cs, "state.waiting"), "reason");
		if (t && json_integer_value(json_object_get(t, "exitCode")) == 0) {
			done++;
		} else if (t) {
			snprintf(buf, n, "Init:%s", js_json_str(t, "reason") ? js_json_str(t, "reason") : "Error");
			return buf;
		} else if (wait && strcmp(wait, "PodInitializing") != 0 && strcmp(wait, "ContainerCreating") != 0) {
			snprintf(buf, n, "Init:%s", wait);
			return buf;
		} else if (json_is_true(json_object_get(cs, "started"))) {
			done++; /* a running sidecar counts as done */
		}
	}
	if (phase && strcmp(phase, "Pending") == 0 && json_array_size(inits)) {
		snprintf(buf, n, "Init:%zu/%zu", done, json_array_size(inits));
		return buf;
	}
	json_array_foreach(json_object_get(st, "containerStatuses"), i, cs)
	{
		const json_t *t = terminated(cs);
		const char *wait = js_json_str(js_json_path(cs, "state.waiting"), "reason");
		if (wait && strcmp(wait, "ContainerCreating") != 0)
			snprintf(buf, n, "%s", wait);
		else if (t && (json_integer_value(json_object_get(t, "exitCode")) != 0 || finished))
			snprintf(buf, n, "%s", js_json_str(t, "reason") ? js_json_str(t, "reason") : "Error");
		else
			continue;
		if (!t || json_integer_value(json_object_get(t, "exitCode")) != 0)
			return buf; /* a failure names the pod's status */
	}
	return buf;
}

const char *js_cli_runinfo_pod_exit(const json_t *pod, char *buf, size_t n)
{
	buf[0] = '\0';
	const char *phase = js_json_str(json_object_get(pod, "status"), "phase");
	if (!phase || (strcmp(phase, "Succeeded") != 0 && strcmp(phase, "Failed") != 0))
		return buf;
	json_int_t code = 0;
	json_t *all = js_podjson_statuses(pod);
	size_t i;
	json_t *cs;
	json_array_foreach(all, i, cs)
	{
		json_int_t c = json_integer_value(json_object_get(terminated(cs), "exitCode"));
		if (c && !code)
			code = c;
	}
	json_decref(all);
	snprintf(buf, n, "Exited (%lld)", (long long)code);
	return buf;
}

const char *js_cli_runinfo_age(const char *rfc3339, char *buf, size_t n)
{
	int64_t t;
	if (!rfc3339 || js_time_parse_rfc3339(rfc3339, &t) < 0) {
		snprintf(buf, n, "-");
		return buf;
	}
	int64_t d = (int64_t)time(NULL) - t;
	d = d < 0 ? 0 : d;
	if (d < 120)
		snprintf(buf, n, "%llds", (long long)d);
	else if (d < 7200)
		snprintf(buf, n, "%lldm", (long long)(d / 60));
	else if (d < 172800)
		snprintf(buf, n, "%lldh", (long long)(d / 3600));
	else
		snprintf(buf, n, "%lldd", (long long)(d / 86400));
	return buf;
}

char *js_cli_runinfo_log_path(const struct js_cli_runinfo *ri, const char *pod, const char *ctr)
{
	return js_buf_format("%s/logs/%s/%s.log", ri->dir, pod, ctr);
}
