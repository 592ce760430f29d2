/*
 * run.c - `jobset run FILE`: run a JobSet on this machine until it is
 * terminal (the local runtime, src/local/local.h), and show it: a live view
 * per ReplicatedJob on a terminal, timestamped event lines otherwise,
 * `pod/container | line` with --follow, and a summary at the end.
 *
 * Exit status: 0 Completed, 1 Failed (or stalled: nothing left that could
 * change the state), 2 invalid input or usage, 130 interrupted.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "api/render.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/manifest.h"
#include "core/job.h"
#include "local/local.h"

#define RUN_EXIT_FAILED 1
#define RUN_EXIT_INVALID 2
#define RUN_TICK_MS 500
/* --publish flags per run: a handful in practice; the bound keeps the
 * forwarder's poll set small. */
#define RUN_PUBLISH_MAX 32

static const char usage[] =
	"usage: jobset run [OPTIONS] FILE\n"
	"\n"
	"Run a JobSet on this machine: its Jobs are run by a local Job controller\n"
	"and its pods as processes (command+args exec'd directly; images are not\n"
	"pulled), with the same names, environment, DNS names and failure and\n"
	"success policies as on a cluster. Logs and the final JobSet (status\n"
	"included, jobset.json) go to the run directory.\n"
	"\n"
	"  -d, --run-dir DIR        where logs and results go\n"
	"                           (default $TMPDIR/jobset-run/NAME-TIME)\n"
	"  -n, --namespace NS       namespace of the JobSet (default: the manifest's,\n"
	"                           else 'default')\n"
	"  -f, --follow             stream container output as 'pod/container | line'\n"
	"  -q, --quiet              print only errors\n"
	"      --backoff-ms N       first pod re-creation / container restart delay,\n"
	"                           doubling (default 1000; Kubernetes uses 10000)\n"
	"  -p, --publish POD:PORT[:HOSTPORT]\n"
	"                           forward 127.0.0.1:HOSTPORT (default PORT) to PORT\n"
	"                           of the pod with hostname POD (an Indexed pod,\n"
	"                           e.g. NAME-leader-0-0); repeatable\n"
	"      --no-namespaces      do not use Linux namespaces (degraded mode: pods\n"
	"                           share this machine's network, each run gets its\n"
	"                           own loopback block 127.B.0.0/16)\n"
	"      --feature-gates G    A=true,B=false: RestartJob, ElasticJobSet (off by\n"
	"                           default); they apply to validation and to the\n"
	"                           reconcile core. InPlaceRestart=true is refused:\n"
	"                           nothing restarts pods in place here\n"
	"  -h, --help               this help\n"
	"\n"
	"Exit status: 0 Completed, 1 Failed (or stalled), 2 invalid input,\n"
	"130 interrupted.\n";

struct out {
	bool tty, quiet, follow;
	size_t drawn; /* lines of the live view on screen */
	const char *name;
};

static void ts(int64_t ms, char *buf, size_t n)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	size_t k = strftime(buf, n, "%H:%M:%S", &tm);
	snprintf(buf + k, n - k, ".%03d", (int)(ms % 1000));
}

static void erase_view(struct out *o)
{
	for (size_t i = 0; i < o->drawn; i++)
		fputs("\033[1A\033[2K", stdout);
	o->drawn = 0;
}

static void on_event(void *ctx, int64_t now_ms, const char *text)
{
	struct out *o = ctx;
	if (o->quiet)
		return;
	char t[32];
	ts(now_ms, t, sizeof(t));
	if (o->tty && !o->follow) {
		/* Above the live view only what needs attention. */
		if (strncmp(text, "Warning", 7) != 0)
			return;
		erase_view(o);
		printf("%s %s\n", t, text);
		return;
	}
	fprintf(o->follow ? stderr : stdout, "%s %s\n", t, text);
	fflush(o->follow ? stderr : stdout);
}

static void on_line(void *ctx, const struct js_pod *pod, const char *container, const char *line, size_t n)
{
	struct out *o = ctx;
	if (!o->follow)
		return;
	printf("%s/%s | %.*s\n", js_pod_name(pod), container, (int)n, line);
	fflush(stdout);
}

static void on_view(void *ctx, const struct js_local_view *v)
{
	struct out *o = ctx;
	if (!o->tty || o->quiet || o->follow)
		return;
	erase_view(o);
	printf("jobset %s  %s  restarts %d  elapsed %.1fs\n", o->name, v->state, v->restarts,
	       (double)v->elapsed_ms / 1000.0);
	printf("  %-20s %8s %8s %8s %8s %8s %8s %8s\n", "REPLICATEDJOB", "JOBS", "ACTIVE", "READY", "SUCCEEDED",
	       "FAILED", "JOBSOK", "RESTARTS");
	o->drawn = 2;
	for (size_t i = 0; i < v->n_rjobs; i++) {
		const struct js_local_rjob_view *r = &v->rjobs[i];
		printf("  %-20s %4d/%-3d %8d %8d %8d %8d %8d %8d\n", r->name, r->jobs_active + r->jobs_succeeded +
		       r->jobs_failed, r->replicas, r->pods_active, r->pods_ready, r->pods_succeeded, r->pods_failed,
		       r->jobs_succeeded, r->restarts);
		o->drawn++;
	}
	fflush(stdout);
}

/** Read the one JobSet of FILE, defaulted and validated. */
static int load(const char *file, const struct js_gates *gates, struct js_jobset **ret_js)
{
	struct js_diag diag;
	js_diag_init(&diag);
	struct js_docs *docs = NULL;
	int rc = RUN_EXIT_INVALID;
	struct js_jobset *found = NULL;
	if (js_docs_load_file(file, &diag, &docs) < 0) {
		js_cli_print_diag(stderr, &diag);
		goto out;
	}
	size_t n = js_docs_count(docs);
	for (size_t i = 0; i < n; i++) {
		char desc[512];
		struct js_jobset *js = NULL;
		enum js_cli_doc_kind k = js_cli_read_doc(docs, i, gates, &diag, &js, desc, sizeof(desc));
		if (k == JS_CLI_DOC_OTHER)
			continue;
		if (k == JS_CLI_DOC_INVALID) {
			js_cli_print_diag(stderr, &diag);
			fprintf(stderr, "jobset run: %s:%d: %s is invalid; nothing was started\n", js_docs_file(docs),
				js_docs_line(docs, i), desc);
			js_jobset_free(found);
			found = NULL;
			goto out;
		}
		if (found) {
			fprintf(stderr, "jobset run: %s holds more than one JobSet; run one at a time\n", file);
			js_jobset_free(js);
			js_jobset_free(found);
			found = NULL;
			goto out;
		}
		found = js;
	}
	if (!found) {
		fprintf(stderr, "jobset run: %s: no JobSet documents found\n", file);
		goto out;
	}
	rc = 0;
out:
	js_docs_free(docs);
	js_diag_done(&diag);
	*ret_js = found;
	return rc;
}

static char *default_run_dir(const char *name)
{
	const char *tmp = getenv("TMPDIR");
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	size_t n = strlen(tmp ? tmp : "/tmp") + strlen(name) + 80;
	char *d = malloc(n);
	if (d)
		snprintf(d, n, "%s/jobset-run/%s-%s-%d", tmp ? tmp : "/tmp", name, stamp, (int)getpid());
	return d;
}

/* Bounds of --backoff-ms: at least a millisecond, at most an hour. */
#define RUN_BACKOFF_MIN_MS 1
#define RUN_BACKOFF_MAX_MS 3600000

static int summary(const struct out *o, struct js_local *l, enum js_local_result res, const char *run_dir)
{
	const struct js_jobset *js = js_local_jobset(l);
	const char *state = res == JS_LOCAL_INTERRUPTED ? "Interrupted"
			    : res == JS_LOCAL_COMPLETED ? "Completed"
			    : res == JS_LOCAL_STALLED   ? "Stalled (Failed)"
							: "Failed";
	if (!o->quiet) {
		const struct js_condition *c = js_jobset_condition(js, res == JS_LOCAL_COMPLETED ? "Completed" : "Failed");
		printf("jobset %s %s in %.1fs, restarts %d%s%s%s\n", o->name, state,
		       (double)js_local_elapsed_ms(l) / 1000.0, js->status.restarts, c && c->reason ? " (" : "",
		       c && c->reason ? c->reason : "", c && c->reason ? ")" : "");
		if (c && c->message && res == JS_LOCAL_FAILED)
			printf("  %s\n", c->message);
		if (res == JS_LOCAL_STALLED)
			printf("  nothing was left running or scheduled; see the Stalled event in %s/events.log\n",
			       run_dir);
		printf("  logs:   %s/logs\n  status: %s/jobset.json\n", run_dir, run_dir);
	} else if (res != JS_LOCAL_COMPLETED && res != JS_LOCAL_INTERRUPTED) {
		/* --quiet prints only errors, and a failed JobSet is one. */
		const struct js_condition *c = js_jobset_condition(js, "Failed");
		fprintf(stderr, "jobset %s %s%s%s; logs in %s/logs\n", o->name, state, c && c->message ? ": " : "",
			c && c->message ? c->message : "", run_dir);
	}
	return res == JS_LOCAL_INTERRUPTED ? JS_EXIT_INTERRUPTED
	       : res == JS_LOCAL_COMPLETED ? JS_EXIT_OK
					   : RUN_EXIT_FAILED;
}

/* Open files a run may want: per pod a network namespace and, per
 * container, an output pipe and a log file. The soft limit is often 1024
 * (about 300 pods); the hard limit, up to this, is ours to take. */
#define RUN_NOFILE_MAX 65536

static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= RUN_NOFILE_MAX || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max < RUN_NOFILE_MAX ? rl.rlim_max : RUN_NOFILE_MAX;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		/* the run goes on with the lower limit */
	}
}

static void close_ports(struct js_publish *pub, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (pub[i].listen_fd >= 0)
			close(pub[i].listen_fd);
		pub[i].listen_fd = -1;
	}
}

/** Check every --publish pod against the JobSet and bind its host port, so
 * a mistake is a usage error before anything starts. */
static int publish_ports(const struct js_jobset *js, const char *file, struct js_publish *pub, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t pos;
		char *err = NULL;
		if (js_publish_resolve(js, &pub[i], &pos, &err) < 0) {
			fprintf(stderr, "jobset run: %s: %s; nothing was started\n", file, err);
			free(err);
			close_ports(pub, n);
			return -1;
		}
		int r = js_publish_listen(&pub[i]);
		if (r < 0) {
			fprintf(stderr, "jobset run: --publish %s:%u:%u: cannot listen on 127.0.0.1:%u: %s; nothing was "
					"started\n",
				pub[i].pod, pub[i].port, pub[i].host_port, pub[i].host_port, js_strerror(r));
			close_ports(pub, n);
			return -1;
		}
	}
	return 0;
}

int js_cli_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{"run-dir", required_argument, NULL, 'd'}, {"namespace", required_argument, NULL, 'n'},
		{"follow", no_argument, NULL, 'f'},        {"quiet", no_argument, NULL, 'q'},
		{"backoff-ms", required_argument, NULL, 'b'}, {"no-namespaces", no_argument, NULL, 'N'},
		{"feature-gates", required_argument, NULL, 'g'}, {"publish", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
	};
	const char *run_dir = NULL, *ns = NULL;
	struct out o = {.tty = isatty(STDOUT_FILENO) == 1};
	int64_t backoff = 1000;
	bool no_ns = false;
	struct js_gates gates = {0};
	struct js_publish pub[RUN_PUBLISH_MAX];
	size_t n_pub = 0;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "d:n:p:fqh", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (!optarg[0]) {
				fprintf(stderr, "jobset run: --run-dir needs a directory, not an empty string\n");
				return JS_EXIT_USAGE;
			}
			run_dir = optarg;
			break;
		case 'n':
			ns = optarg;
			break;
		case 'f':
			o.follow = true;
			break;
		case 'q':
			o.quiet = true;
			break;
		case 'b':
			if (js_parse_i64_in(optarg, strlen(optarg), RUN_BACKOFF_MIN_MS, RUN_BACKOFF_MAX_MS, &backoff) < 0) {
				fprintf(stderr, "jobset run: --backoff-ms takes %d..%d, not '%s'\n", RUN_BACKOFF_MIN_MS,
					RUN_BACKOFF_MAX_MS, optarg);
				return RUN_EXIT_INVALID;
			}
			break;
		case 'N':
			no_ns = true;
			break;
		case 'p': {
			char *perr = NULL;
			if (n_pub == RUN_PUBLISH_MAX) {
				fprintf(stderr, "jobset run: at most %d --publish flags\n", RUN_PUBLISH_MAX);
				return RUN_EXIT_INVALID;
			}
			if (js_publish_parse(optarg, &pub[n_pub], &perr) < 0) {
				fprintf(stderr, "jobset run: %s\n", perr);
				free(perr);
				return RUN_EXIT_INVALID;
			}
			n_pub++;
			break;
		}
		case 'g':
			if (js_cli_opt_gates("run", optarg, &gates) != JS_EXIT_OK)
				return RUN_EXIT_INVALID;
			break;
		case 'h':
			fputs(usage, stdout);
			return JS_EXIT_OK;
		default:
			fputs(usage, stderr);
			return RUN_EXIT_INVALID;
		}
	}
	if (optind != argc - 1) {
		fputs(usage, stderr);
		return RUN_EXIT_INVALID;
	}
	if (js_cli_refuse_in_place("run", &gates,
				   "no in-place restart agent (SPEC §13) restarts a pod's containers in place and records "
				   "the attempt on the pod") != JS_EXIT_OK)
		return RUN_EXIT_INVALID;
	struct js_jobset *js = NULL;
	if (load(argv[optind], &gates, &js) != 0)
		return RUN_EXIT_INVALID;
	if (ns) {
		free(js->meta.namespace_);
		js->meta.namespace_ = strdup(ns);
	}
	char *err = NULL;
	if (js_local_preflight(js, &err) < 0) {
		fprintf(stderr, "jobset run: %s: %s; nothing was started\n", argv[optind], err);
		free(err);
		js_jobset_free(js);
		return RUN_EXIT_INVALID;
	}
	if (js->spec.has_suspend && js->spec.suspend) {
		fprintf(stderr, "jobset run: %s: spec.suspend is true, so nothing would ever run; set it to false\n",
			argv[optind]);
		js_jobset_free(js);
		return RUN_EXIT_INVALID;
	}
	if (publish_ports(js, argv[optind], pub, n_pub) < 0) {
		js_jobset_free(js);
		return RUN_EXIT_INVALID;
	}
	o.name = js_jobset_name(js);
	char *dir = run_dir ? strdup(run_dir) : default_run_dir(o.name);
	struct js_local_opts lo = {
		.run_dir = dir, .backoff_base_ms = backoff, .tick_ms = o.tty && !o.quiet ? RUN_TICK_MS : 0,
		.no_namespaces = no_ns, .publish = pub, .n_publish = n_pub, .gates = gates, .on_event = on_event,
		.on_view = on_view, .on_line = on_line, .ctx = &o,
	};
	struct js_local *l = NULL;
	int r = dir ? js_local_new(js, &lo, &l) : -12;
	if (r < 0) {
		fprintf(stderr, "jobset run: cannot create run directory '%s': %s\n", dir ? dir : "", js_strerror(r));
		free(dir);
		js_jobset_free(js);
		close_ports(pub, n_pub);
		return RUN_EXIT_INVALID;
	}
	enum js_local_result res = JS_LOCAL_FAILED;
	raise_nofile();
	r = js_local_run(l, &res);
	int rc;
	if (r < 0) {
		fprintf(stderr, "jobset run: %s\n", js_strerror(r));
		rc = RUN_EXIT_FAILED;
	} else {
		rc = summary(&o, l, res, dir);
	}
	js_local_free(l);
	close_ports(pub, n_pub);
	js_jobset_free(js);
	free(dir);
	return rc;
}
