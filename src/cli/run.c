/*
 * run.c - `jobset run FILE`: run a JobSet on this machine until it is
 * terminal (the local runtime, src/local/local.h), and show it
 * (cli/runview.h): a live view per ReplicatedJob on a terminal, event lines
 * (text or JSON) otherwise, `pod/container | line` with --follow, and a
 * summary at the end (text, or JSON with -o json). With --detach the run
 * goes on in the background (a new session) and the command returns once
 * the runner holds its run directory.
 *
 * Exit status: 0 Completed, 1 Failed (or stalled: nothing left that could
 * change the state), 2 invalid input or usage, 130 interrupted.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/render.h"
#include "api/validate.h"
#include "base/buf.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/manifest.h"
#include "cli/runview.h"
#include "core/job.h"
#include "local/local.h"
#include "local/podlog.h"
#include "local/publish.h"
#include "local/rundir.h"

#define RUN_EXIT_FAILED 1
#define RUN_EXIT_INVALID 2
#define RUN_TICK_MS 500
/* How long --detach waits for the background runner to hold its run
 * directory before it gives up on it. */
#define RUN_DETACH_WAIT_MS 30000
/* --publish flags per run: a handful in practice; the bound keeps the
 * forwarder's poll set small. */
#define RUN_PUBLISH_MAX 32

extern char **environ;

static const char usage[] =
	"usage: jobset run [OPTIONS] FILE\n"
	"\n"
	"Run a JobSet on this machine: its Jobs are run by a local Job controller\n"
	"and its pods as processes (command+args exec'd directly; images are not\n"
	"pulled), with the same names, environment, DNS names and failure and\n"
	"success policies as on a cluster. Logs and the final JobSet (status\n"
	"included, jobset.json) go to the run directory; `jobset ps`, `logs`,\n"
	"`describe` and `down` look at a run while it runs and after.\n"
	"\n"
	"  -d, --run-dir DIR        where logs and results go; must be new or empty\n"
	"                           (default: a new directory under\n"
	"                           $XDG_RUNTIME_DIR/jobset or $TMPDIR/jobset-run-UID)\n"
	"      --reuse-run-dir      reuse a non-empty --run-dir: its previous logs and\n"
	"                           results are removed, work/ and volumes/ kept\n"
	"  -n, --namespace NS       namespace of the JobSet (default: the manifest's,\n"
	"                           else 'default')\n"
	"  -f, --follow             stream container output as 'pod/container | line'\n"
	"  -q, --quiet              print only errors\n"
	"  -o, --output FORMAT      text (default) or json: the summary as one JSON\n"
	"                           object on stdout (events go to stderr)\n"
	"      --events FORMAT      text (default) or json: one JSON object per event\n"
	"      --detach             run in the background; print the run directory\n"
	"      --workdir MODE       the pods' default working directory: run (default:\n"
	"                           RUN-DIR/work, shared by every pod), pod (RUN-DIR/\n"
	"                           work/HOSTNAME, one per pod) or cwd (this directory)\n"
	"      --log-max-bytes N    cap of one container log file (K, Ki, M, Mi, G, Gi\n"
	"                           suffixes; default 10Mi, as the kubelet)\n"
	"      --log-max-files N    log files kept per container, rotated (default 5)\n"
	"      --backoff-ms N       first pod re-creation / container restart delay,\n"
	"                           doubling (default 1000; Kubernetes uses 10000)\n"
	"  -p, --publish POD:PORT[:HOSTPORT]\n"
	"                           forward 127.0.0.1:HOSTPORT (default PORT) to PORT\n"
	"                           of the pod with hostname POD (an Indexed pod,\n"
	"                           e.g. NAME-leader-0-0); repeatable\n"
	"      --runtime R          process (default: pods are processes of this\n"
	"                           machine), podman or docker (pods are containers\n"
	"                           of their images)\n"
	"      --pull P             never (default: a missing image is an error) or\n"
	"                           missing (pull missing images before the run)\n"
	"      --gpus IDS           the GPUs pods may have (nvidia.com/gpu limits):\n"
	"                           ids such as 0,1,3, or 'none' (default: found\n"
	"                           from /dev/nvidiaN or 'nvidia-smi -L')\n"
	"      --no-namespaces      do not use Linux namespaces (degraded mode: pods\n"
	"                           share this machine's network, each run gets its\n"
	"                           own loopback block 127.B.0.0/16)\n"
	"      --feature-gates G    A=true,B=false: RestartJob, InPlaceRestart,\n"
	"                           ElasticJobSet, ExecutionAttemptsTracking,\n"
	"                           JobSetActiveDeadlineSeconds,\n"
	"                           MutablePodResourcesForSuspendedJobSets (off by\n"
	"                           default); they apply to validation and to the\n"
	"                           reconcile core; with InPlaceRestart the runner\n"
	"                           restarts pods in place; with ProgressDeadline\n"
	"                           it stops pods that stop heartbeating\n"
	"                           (docs/progress-deadline.md)\n"
	"                           (JobSetWorkloadAwareSchedulingAPI=true is\n"
	"                           refused: no Kubernetes scheduler here to gang\n"
	"                           pods)\n"
	"  -h, --help               this help\n"
	"\n"
	"Exit status: 0 Completed, 1 Failed (or stalled), 2 invalid input,\n"
	"130 interrupted.\n";

/** Keep document `i` if it is an object the run serves to pods
 * (ConfigMap, Secret, PersistentVolumeClaim: local/objects.h). Returns 0,
 * or -1 after saying why it is malformed. */
static int take_object(const struct js_docs *docs, size_t i, struct js_objects *objects)
{
	char *err = NULL;
	if (js_objects_add(objects, js_docs_root(docs, i), &err) >= 0)
		return 0;
	fprintf(stderr, "jobset run: %s:%d: %s; nothing was started\n", js_docs_file(docs), js_docs_line(docs, i), err);
	free(err);
	return -1;
}

/** Read the one JobSet of FILE, defaulted and validated, and the objects
 * beside it that pods may use. */
static int load(const char *file, const struct js_gates *gates, struct js_objects *objects, struct js_jobset **ret_js)
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
		if (k == JS_CLI_DOC_OTHER && take_object(docs, i, objects) < 0) {
			js_jobset_free(found);
			found = NULL;
			goto out;
		}
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

/** A new run directory under the per-user root: NAME-TIME-PID. */
static char *default_run_dir(const char *name, char **ret_root)
{
	char *root = NULL, *err = NULL;
	if (js_rundir_root(&root, &err) < 0) {
		fprintf(stderr, "jobset run: %s\n", err);
		free(err);
		return NULL;
	}
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	char *d = js_buf_format("%s/%s-%s-%d", root, name, stamp, (int)getpid());
	*ret_root = root;
	return d;
}

/* Bounds of --backoff-ms: at least a millisecond, at most an hour. */
#define RUN_BACKOFF_MIN_MS 1
#define RUN_BACKOFF_MAX_MS 3600000
/* Largest --log-max-bytes: 1 TiB, far above any sane cap. */
#define RUN_LOG_MAX_BYTES (1LL << 40)

/** "10Mi", "512K", "1048576": a size as kubelet flags write them. */
static int parse_size(const char *s, int64_t *ret)
{
	static const struct {
		const char *suffix;
		int64_t mult;
	} units[] = {{"Ki", 1LL << 10}, {"Mi", 1LL << 20}, {"Gi", 1LL << 30}, {"K", 1000}, {"M", 1000000},
		     {"G", 1000000000}, {"", 1}};
	size_t n = strlen(s);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t k = strlen(units[i].suffix);
		if (n <= k || strcmp(s + n - k, units[i].suffix) != 0)
			continue;
		int64_t v;
		if (js_parse_i64_in(s, n - k, 0, RUN_LOG_MAX_BYTES / units[i].mult, &v) < 0)
			return -EINVAL;
		*ret = v * units[i].mult;
		return 0;
	}
	return -EINVAL;
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

/**
 * --detach: start this same command again in a new session (posix_spawn of
 * /proc/self/exe: no fork without exec), with its output in
 * RUN-DIR/runner.log and a pipe on fd 3 it writes to once it holds the run
 * directory. Returns the exit code for the foreground command.
 */
static int detach(int argc, char **argv, const char *dir)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		fprintf(stderr, "jobset run: --detach: cannot find this program: %s\n", js_strerror(-errno));
		return RUN_EXIT_INVALID;
	}
	self[n] = '\0';
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return RUN_EXIT_INVALID;
	/* The same arguments, without --detach, with the run directory. */
	char **args = js_xcalloc((size_t)argc + 6, sizeof(char *));
	size_t k = 0;
	args[k++] = self;
	args[k++] = "run";
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--detach") != 0)
			args[k++] = argv[i];
	}
	args[k++] = "--ready-fd=3";
	args[k++] = "--run-dir";
	args[k++] = (char *)(uintptr_t)dir;
	/* The file name comes last, after the options (getopt permutes). */
	char *log = js_buf_format("%s/runner.log", dir);
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	posix_spawn_file_actions_adddup2(&fa, p[1], 3);
	pid_t pid;
	int r = posix_spawn(&pid, self, &fa, &at, args, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	free(args);
	close(p[1]);
	if (r != 0) {
		fprintf(stderr, "jobset run: --detach: cannot start the runner: %s\n", js_strerror(-r));
		close(p[0]);
		free(log);
		return RUN_EXIT_INVALID;
	}
	struct pollfd pfd = {.fd = p[0], .events = POLLIN};
	char c = 0;
	int pr;
	do
		pr = poll(&pfd, 1, RUN_DETACH_WAIT_MS);
	while (pr < 0 && errno == EINTR);
	bool ready = pr > 0 && read(p[0], &c, 1) == 1 && c == 'R';
	close(p[0]);
	if (!ready) {
		fprintf(stderr, "jobset run: --detach: the runner did not start; see %s\n", log);
		free(log);
		return RUN_EXIT_FAILED;
	}
	/* The runner is in its own session now; nothing here waits for it. */
	printf("%s\n", dir);
	fprintf(stderr,
		"jobset run: running in the background (pid %d): jobset ps --run-dir %s; jobset logs -f POD; jobset "
		"down\n",
		(int)pid, dir);
	free(log);
	return JS_EXIT_OK;
}

/** The options of one `jobset run`. */
struct run_opts {
	const char *run_dir, *ns;
	bool reuse, detach, no_ns;
	int ready_fd;
	int64_t backoff, log_max_bytes, log_max_files;
	enum js_local_workdir workdir;
	struct js_gates gates;
	struct js_publish pub[RUN_PUBLISH_MAX];
	size_t n_pub;
	const char *gpus;                  /* --gpus, or NULL: discover */
	enum js_container_runtime runtime; /* --runtime */
	enum js_container_pull pull;       /* --pull */
};

/** Parse argv into *o and the view flags. Returns -1 to go on, else the
 * exit code (help, usage errors). */
static int parse_args(int argc, char **argv, struct run_opts *o, struct js_cli_runview *v)
{
	enum { O_REUSE = 256, O_EVENTS, O_DETACH, O_WORKDIR, O_LOG_BYTES, O_LOG_FILES, O_READY, O_GPUS, O_RUNTIME,
	       O_PULL };
	static const struct option opts[] = {
		{"run-dir", required_argument, NULL, 'd'},     {"namespace", required_argument, NULL, 'n'},
		{"follow", no_argument, NULL, 'f'},            {"quiet", no_argument, NULL, 'q'},
		{"output", required_argument, NULL, 'o'},      {"events", required_argument, NULL, O_EVENTS},
		{"reuse-run-dir", no_argument, NULL, O_REUSE}, {"detach", no_argument, NULL, O_DETACH},
		{"workdir", required_argument, NULL, O_WORKDIR}, {"log-max-bytes", required_argument, NULL, O_LOG_BYTES},
		{"log-max-files", required_argument, NULL, O_LOG_FILES}, {"ready-fd", required_argument, NULL, O_READY},
		{"backoff-ms", required_argument, NULL, 'b'}, {"no-namespaces", no_argument, NULL, 'N'},
		{"feature-gates", required_argument, NULL, 'g'}, {"publish", required_argument, NULL, 'p'},
		{"gpus", required_argument, NULL, O_GPUS},    {"runtime", required_argument, NULL, O_RUNTIME},
		{"pull", required_argument, NULL, O_PULL},    {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	int64_t v64;
	char *perr = NULL;
	optind = 1;
	opterr = 0; /* said below, with the command's name */
	while ((c = getopt_long(argc, argv, "d:n:o:p:fqh", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (!optarg[0]) {
				fprintf(stderr, "jobset run: --run-dir needs a directory, not an empty string\n");
				return JS_EXIT_USAGE;
			}
			o->run_dir = optarg;
			break;
		case 'n':
			/* Checked as metadata.namespace is: it ends up in every
			 * pod's hosts entries and the Service's names. */
			if (!js_is_dns1123_label(optarg)) {
				fprintf(stderr,
					"jobset run: -n takes a namespace, a DNS-1123 label (at most 63 lower-case "
					"letters, digits or '-', starting and ending with a letter or digit), not '%s'\n",
					optarg);
				return RUN_EXIT_INVALID;
			}
			o->ns = optarg;
			break;
		case 'f':
			v->follow = true;
			break;
		case 'q':
			v->quiet = true;
			break;
		case 'o':
			if (js_cli_opt_output("run", optarg, "text", &v->output_json) != JS_EXIT_OK)
				return RUN_EXIT_INVALID;
			break;
		case O_EVENTS:
			if (js_cli_opt_format("run", "--events", optarg, "text", &v->events_json) != JS_EXIT_OK)
				return RUN_EXIT_INVALID;
			break;
		case O_REUSE:
			o->reuse = true;
			break;
		case O_DETACH:
			o->detach = true;
			break;
		case O_WORKDIR:
			if (strcmp(optarg, "run") == 0)
				o->workdir = JS_LOCAL_WORKDIR_RUN;
			else if (strcmp(optarg, "pod") == 0)
				o->workdir = JS_LOCAL_WORKDIR_POD;
			else if (strcmp(optarg, "cwd") == 0)
				o->workdir = JS_LOCAL_WORKDIR_CWD;
			else {
				fprintf(stderr, "jobset run: --workdir takes run, pod or cwd, not '%s'\n", optarg);
				return RUN_EXIT_INVALID;
			}
			break;
		case O_LOG_BYTES:
			if (parse_size(optarg, &o->log_max_bytes) < 0) {
				fprintf(stderr, "jobset run: --log-max-bytes takes a number of bytes with an optional "
						"suffix K, Ki, M, Mi, G or Gi (as a Kubernetes quantity: 10Mi), not '%s'\n",
					optarg);
				return RUN_EXIT_INVALID;
			}
			if (o->log_max_bytes < JS_PODLOG_MIN_MAX_BYTES) {
				fprintf(stderr, "jobset run: --log-max-bytes must be at least %d bytes, not '%s'\n",
					JS_PODLOG_MIN_MAX_BYTES, optarg);
				return RUN_EXIT_INVALID;
			}
			break;
		case O_LOG_FILES:
			if (js_parse_i64_in(optarg, strlen(optarg), 1, JS_PODLOG_MAX_MAX_FILES, &o->log_max_files) < 0) {
				fprintf(stderr, "jobset run: --log-max-files takes 1..%d, not '%s'\n", JS_PODLOG_MAX_MAX_FILES,
					optarg);
				return RUN_EXIT_INVALID;
			}
			break;
		case O_READY:
			if (js_parse_i64_in(optarg, strlen(optarg), 3, INT_MAX, &v64) < 0)
				return RUN_EXIT_INVALID;
			o->ready_fd = (int)v64;
			break;
		case 'b':
			if (js_parse_i64_in(optarg, strlen(optarg), RUN_BACKOFF_MIN_MS, RUN_BACKOFF_MAX_MS, &o->backoff) < 0) {
				fprintf(stderr, "jobset run: --backoff-ms takes %d..%d, not '%s'\n", RUN_BACKOFF_MIN_MS,
					RUN_BACKOFF_MAX_MS, optarg);
				return RUN_EXIT_INVALID;
			}
			break;
		case 'N':
			o->no_ns = true;
			break;
		case 'p':
			if (o->n_pub == RUN_PUBLISH_MAX) {
				fprintf(stderr, "jobset run: at most %d --publish flags\n", RUN_PUBLISH_MAX);
				return RUN_EXIT_INVALID;
			}
			if (js_publish_parse(optarg, &o->pub[o->n_pub], &perr) < 0) {
				fprintf(stderr, "jobset run: %s\n", perr);
				free(perr);
				return RUN_EXIT_INVALID;
			}
			o->n_pub++;
			break;
		case 'g':
			if (js_cli_opt_gates("run", optarg, &o->gates) != JS_EXIT_OK)
				return RUN_EXIT_INVALID;
			break;
		case O_GPUS:
			o->gpus = optarg;
			break;
		case O_RUNTIME:
			o->runtime = js_container_runtime_from_string(optarg);
			if (o->runtime == JS_CONTAINER__INVALID) {
				fprintf(stderr, "jobset run: --runtime takes process, podman or docker, not '%s'\n", optarg);
				return RUN_EXIT_INVALID;
			}
			break;
		case O_PULL:
			o->pull = js_container_pull_from_string(optarg);
			if (o->pull == JS_CONTAINER_PULL__INVALID) {
				fprintf(stderr, "jobset run: --pull takes never or missing, not '%s'\n", optarg);
				return RUN_EXIT_INVALID;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			return JS_EXIT_OK;
		default:
			fprintf(stderr, "jobset run: unknown option, or an option without its value: '%s' ('jobset run "
					"--help' lists the options)\n", argv[optind - 1]);
			return RUN_EXIT_INVALID;
		}
	}
	if (optind != argc - 1) {
		if (optind >= argc)
			fprintf(stderr, "jobset run: which manifest? usage: jobset run [OPTIONS] FILE ('-' for standard "
					"input; 'jobset run --help' lists the options)\n");
		else
			fprintf(stderr, "jobset run: one manifest FILE at a time, not %d ('%s', '%s'%s)\n", argc - optind,
				argv[optind], argv[optind + 1], argc - optind > 2 ? ", ..." : "");
		return RUN_EXIT_INVALID;
	}
	if (v->follow && v->output_json) {
		fprintf(stderr, "jobset run: --follow writes the pods' output to standard output, where -o json "
				"writes its summary: use one or the other (the pods' logs are in RUN-DIR/logs either "
				"way)\n");
		return RUN_EXIT_INVALID;
	}
	if (o->runtime != JS_CONTAINER_PROCESS && o->n_pub) {
		fprintf(stderr, "jobset run: --publish works with --runtime process only\n");
		return RUN_EXIT_INVALID;
	}
	return -1;
}

/** What a run reads before it starts: the JobSet, the objects beside it,
 * the GPUs. */
struct run_inputs {
	struct js_jobset *js;
	struct js_objects *objects;
	struct js_gpu *gpus;
};

static void inputs_done(struct run_inputs *in)
{
	js_jobset_free(in->js);
	js_objects_free(in->objects);
	js_gpu_free(in->gpus);
	*in = (struct run_inputs){0};
}

/** Load the manifest and the GPUs and check everything a run needs before
 * anything starts (preflight, images). Returns 0, or an exit code after
 * saying why. */
static int read_inputs(const char *file, const struct run_opts *ro, struct run_inputs *in)
{
	char *err = NULL;
	in->objects = js_objects_new();
	if (!ro->gpus)
		in->gpus = js_gpu_discover("/dev");
	else if (js_gpu_parse(ro->gpus, &in->gpus, &err) < 0) {
		fprintf(stderr, "jobset run: %s\n", err);
		free(err);
		return RUN_EXIT_INVALID;
	}
	if (load(file, &ro->gates, in->objects, &in->js) != 0)
		return RUN_EXIT_INVALID;
	if (ro->ns) {
		free(in->js->meta.namespace_);
		in->js->meta.namespace_ = js_xstrdup(ro->ns);
	}
	struct js_local_opts check = {.objects = in->objects, .gpus = in->gpus, .runtime = ro->runtime,
				      .gates = ro->gates};
	if (js_local_preflight(in->js, &check, &err) < 0 ||
	    (ro->runtime != JS_CONTAINER_PROCESS && js_container_images(ro->runtime, ro->pull, in->js, &err) < 0)) {
		fprintf(stderr, "jobset run: %s: %s; nothing was started\n", file, err);
		free(err);
		return RUN_EXIT_INVALID;
	}
	return 0;
}

/** Tell a waiting `--detach` that the run directory is held. */
static void signal_ready(int fd)
{
	if (fd < 0)
		return;
	if (write(fd, "R", 1) < 0) {
		/* the foreground command is gone; nothing to tell */
	}
	close(fd);
}

int js_cli_run(int argc, char **argv)
{
	struct run_opts ro = {.backoff = 1000, .ready_fd = -1};
	struct js_cli_runview o = {.tty = isatty(STDOUT_FILENO) == 1};
	int pr = parse_args(argc, argv, &ro, &o);
	if (pr >= 0)
		return pr;
	if (js_cli_refuse_gang("run", &ro.gates) != JS_EXIT_OK)
		return RUN_EXIT_INVALID;
	struct run_inputs in = {0};
	int rr = read_inputs(argv[optind], &ro, &in);
	if (rr != 0) {
		inputs_done(&in);
		return rr;
	}
	struct js_jobset *js = in.js;
	char *err = NULL;
	if (js->spec.has_suspend && js->spec.suspend) {
		fprintf(stderr, "jobset run: %s: spec.suspend is true, so nothing would ever run; set it to false\n",
			argv[optind]);
		inputs_done(&in);
		return RUN_EXIT_INVALID;
	}
	/* Checked (and bound) before anything starts; the background half of
	 * --detach binds them again for itself. */
	if (publish_ports(js, argv[optind], ro.pub, ro.n_pub) < 0) {
		inputs_done(&in);
		return RUN_EXIT_INVALID;
	}
	o.name = js_jobset_name(js);
	char *root = NULL;
	char *dir = ro.run_dir ? js_xstrdup(ro.run_dir) : default_run_dir(o.name, &root);
	/* A run starts in a fresh directory: old logs never mix with new ones.
	 * The background half of --detach gets the directory its foreground
	 * half prepared (holding runner.log already). */
	int r = dir ? 0 : -ENOENT;
	if (dir && ro.ready_fd < 0 && (r = js_rundir_prepare(dir, ro.reuse ? JS_RUNDIR_REUSE : JS_RUNDIR_FRESH, &err)) < 0) {
		fprintf(stderr, "jobset run: %s; nothing was started\n", err);
		free(err);
	}
	if (r >= 0 && !root && js_rundir_root(&root, &err) < 0) {
		free(err); /* no root: no `latest` link, nothing else lost */
		root = NULL;
	}
	if (r >= 0 && root && js_rundir_set_latest(root, dir) < 0) {
		/* best effort: commands can always be given --run-dir */
	}
	free(root);
	if (r < 0 || ro.detach) {
		close_ports(ro.pub, ro.n_pub);
		int rc = r < 0 ? RUN_EXIT_INVALID : detach(argc, argv, dir);
		free(dir);
		inputs_done(&in);
		return rc;
	}
	/* `run ... | head`: a reader that goes away must not take the run (and
	 * its jobset.json) with it. Containers get SIGPIPE back (sandbox.c). */
	signal(SIGPIPE, SIG_IGN);
	struct js_local_opts lo = {
		.run_dir = dir, .backoff_base_ms = ro.backoff, .tick_ms = js_cli_runview_live(&o) ? RUN_TICK_MS : 0,
		.no_namespaces = ro.no_ns, .workdir = ro.workdir, .log_max_bytes = ro.log_max_bytes,
		.log_max_files = (int)ro.log_max_files, .publish = ro.pub, .n_publish = ro.n_pub, .gates = ro.gates,
		.on_event = js_cli_runview_event,
		.on_view = js_cli_runview_view, .on_line = js_cli_runview_line, .ctx = &o, .objects = in.objects,
		.gpus = in.gpus, .runtime = ro.runtime,
	};
	struct js_local *l = NULL;
	r = js_local_new(js, &lo, &l);
	if (r < 0) {
		fprintf(stderr, "jobset run: cannot use run directory '%s': %s\n", dir,
			r == -EBUSY ? "another runner is live in it" : js_strerror(r));
		free(dir);
		inputs_done(&in);
		close_ports(ro.pub, ro.n_pub);
		if (ro.ready_fd >= 0)
			close(ro.ready_fd);
		return RUN_EXIT_INVALID;
	}
	signal_ready(ro.ready_fd);
	enum js_local_result res = JS_LOCAL_FAILED;
	raise_nofile();
	/* The interrupts stay blocked from here until the process exits: the
	 * run reads them from its loop (js_local_run blocks them too, and puts
	 * back this mask when it returns), and once it has returned an
	 * interrupt is late, not a request. Unblocked, a SIGTERM sent again
	 * while the run finished (`timeout`, a user's third Ctrl-C) killed
	 * this process in its own cleanup and turned exit 130 into "killed by
	 * SIGTERM". */
	sigset_t interrupts;
	js_local_interrupts(&interrupts);
	(void)sigprocmask(SIG_BLOCK, &interrupts, NULL);
	r = js_local_run(l, &res);
	int rc;
	if (r < 0) {
		fprintf(stderr, "jobset run: %s\n", js_strerror(r));
		rc = RUN_EXIT_FAILED;
	} else {
		rc = js_cli_runview_summary(&o, l, res, dir);
	}
	(void)js_local_free(l);
	close_ports(ro.pub, ro.n_pub);
	inputs_done(&in);
	free(dir);
	return rc;
}
