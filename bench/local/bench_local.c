/*
 * bench_local - time until N pods of a JobSet run under `jobset run`,
 * against N bare fork+exec of the same command.
 *
 *   cc -O2 -o /tmp/bench_local bench/local/bench_local.c
 *   /tmp/bench_local build/jobset [N=256] [ROUNDS=5] [RUN OPTIONS...]
 *
 * Every round measures, one after the other, N bare fork+exec, `jobset run`
 * in its default mode (a network namespace per pod) and `jobset run
 * --no-namespaces`, with a pause of BENCH_SETTLE_MS (1500) after each, so
 * the per-pod overheads over bare are ratios taken side by side, within a
 * round; the load average at the start and end is printed with them.
 * RUN OPTIONS go to both `jobset run`s. Each invocation works in its own
 * /tmp/bench_local-XXXXXX, so concurrent benchmarks do not meet.
 *
 * The command of every pod (and of every bare process) is
 *   sh -c 'touch "$D/$HOSTNAME"; exec sleep 600'
 * so "running" means: the process started and executed its first action.
 * The clock starts when the runner (or the first fork) is started and stops
 * when N marker files exist (inotify: the benchmark waits without taking
 * CPU from what it measures). Prints min/median/max per mode, the per-pod
 * overhead ((jobset - bare) / N, per round, then the median over rounds),
 * and how long the runner took to stop after SIGTERM (every pod stopped,
 * results written; the kernel destroys the namespaces after that).
 *
 * It prints the scheduling policy it ran under: run it as `chrt -f 1
 * bench_local ...` on a shared machine to measure as on an idle one.
 *
 * It also prints the runner's own CPU time (user + system, every thread of
 * the jobset process, read from /proc when the last pod is running) per
 * pod: on a shared machine wall time swings with the load, CPU time much
 * less, and the kernel's work for namespaces is system time of the thread
 * that asks for it. And the CPU time of everything a run started, per pod
 * and over the bare processes': the runner and every process below it
 * (user + system of each, and of its reaped children: the pods' `touch`),
 * against the same for the bare processes (not counting this program's
 * forks, ~30 us each), at the moment the last one is running (a process's
 * own time from /proc/<pid>/schedstat: its main thread, to the ns). That is the
 * overhead in CPU, which on a loaded machine decides the wall time (work
 * the kernel does in its own threads, such as tearing namespaces down
 * afterwards, is not in it).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int count(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* Waits without polling: the waiting must not take CPU from what it
 * measures (a readdir of the directory every 200 us took a tenth of a core
 * on this 2-vCPU machine). The watch is made before the clock starts, so no
 * creation is missed; the events only say when to count again. */
static int watch_dir(const char *dir)
{
	int fd = inotify_init1(IN_CLOEXEC);
	if (fd < 0 || inotify_add_watch(fd, dir, IN_CREATE) < 0) {
		perror("inotify");
		exit(1);
	}
	return fd;
}

static void wait_files(int fd, const char *dir, int n)
{
	char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
	int seen = count(dir);
	while (seen < n) {
		ssize_t k = read(fd, buf, sizeof(buf));
		if (k <= 0) {
			perror("inotify read");
			exit(1);
		}
		bool overflow = false;
		for (char *q = buf; q < buf + k;) {
			struct inotify_event *e = (struct inotify_event *)q;
			overflow |= (e->mask & IN_Q_OVERFLOW) != 0;
			seen += (e->mask & IN_CREATE) != 0;
			q += sizeof(*e) + e->len;
		}
		if (overflow || seen >= n)
			seen = count(dir);
	}
	close(fd);
}

static void fresh(const char *dir)
{
	char cmd[1100];
	snprintf(cmd, sizeof(cmd), "rm -rf %s && mkdir -p %s", dir, dir);
	if (system(cmd) != 0)
		exit(1);
}

/** From /proc/<pid>/stat: the parent, utime + stime, and the same of the
 * reaped children (seconds). Returns 0, or -1 when the process is gone. */
static int stat_of(pid_t pid, pid_t *ret_ppid, double *ret_cpu, double *ret_children)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Fields after the command name, which ends at the last ')'. */
	char *p = strrchr(buf, ')');
	int ppid = 0;
	unsigned long ut = 0, st = 0;
	long cut = 0, cst = 0;
	if (!p || sscanf(p + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %ld %ld", &ppid, &ut, &st, &cut,
			 &cst) != 5)
		return -1;
	double tck = (double)sysconf(_SC_CLK_TCK);
	*ret_ppid = ppid;
	*ret_cpu = (double)(ut + st) / tck;
	*ret_children = (double)(cut + cst) / tck;
	return 0;
}

/** utime + stime of process `pid` in seconds, or -1. */
static double cpu_of(pid_t pid)
{
	pid_t ppid;
	double cpu, children;
	return stat_of(pid, &ppid, &cpu, &children) == 0 ? cpu : -1;
}

/** Time on a CPU (s) of the process's main thread, in ns precision
 * (/proc/<pid>/schedstat), or 0. */
static double run_time(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	FILE *f = fopen(path, "r");
	unsigned long long ns = 0;
	if (f && fscanf(f, "%llu", &ns) != 1)
		ns = 0;
	if (f)
		fclose(f);
	return (double)ns / 1e9;
}

/** CPU time (s) of every process below `root` (not root itself), with
 * their reaped children's. */
static double tree_cpu(pid_t root)
{
	enum { MAX = 1 << 16 };
	static pid_t pid[MAX], ppid[MAX];
	static double cpu[MAX];
	static char below[MAX];
	int n = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d)) && n < MAX) {
		double c, ch;
		if (e->d_name[0] < '1' || e->d_name[0] > '9' || stat_of(atoi(e->d_name), &ppid[n], &c, &ch) < 0)
			continue;
		pid[n] = atoi(e->d_name);
		/* Its own time precisely (stat counts whole clock ticks, and a
		 * pod's process runs for a few ms), its reaped children's from
		 * stat (summed in ns before the rounding). */
		cpu[n] = run_time(pid[n]) + ch;
		below[n] = 0;
		n++;
	}
	if (d)
		closedir(d);
	/* Mark descendants until nothing changes: a parent may be listed after
	 * its child. */
	for (int changed = 1; changed;) {
		changed = 0;
		for (int i = 0; i < n; i++) {
			for (int k = 0; !below[i] && k < n; k++) {
				if (ppid[i] == root || (below[k] && ppid[i] == pid[k]))
					below[i] = changed = 1;
			}
		}
	}
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += below[i] ? cpu[i] : 0;
	return sum;
}

static double bare(const char *dir, int n, double *ret_cpu)
{
	fresh(dir);
	pid_t *pids = calloc((size_t)n, sizeof(pid_t));
	int watch = watch_dir(dir);
	double t0 = now();
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			char host[32], d[600];
			snprintf(host, sizeof(host), "HOSTNAME=p%d", i);
			snprintf(d, sizeof(d), "D=%s", dir);
			char *env[] = {host, d, "PATH=/usr/bin:/bin", NULL};
			char *argv[] = {"sh", "-c", "touch \"$D/$HOSTNAME\"; exec sleep 600", NULL};
			execve("/bin/sh", argv, env);
			_exit(127);
		}
	}
	wait_files(watch, dir, n);
	double t = now() - t0;
	*ret_cpu = tree_cpu(getpid());
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	for (int i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	free(pids);
	return t;
}

static double jobset(const char *bin, const char *dir, const char *work, int n, char **extra, int n_extra,
		     double *ret_cpu, double *ret_total, double *ret_down)
{
	fresh(dir);
	char manifest[600];
	snprintf(manifest, sizeof(manifest), "%s/bench.yaml", work);
	FILE *f = fopen(manifest, "w");
	fprintf(f,
		"apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: bench}\nspec:\n"
		"  replicatedJobs:\n  - name: w\n    replicas: 16\n    template:\n      spec:\n"
		"        completions: %d\n        parallelism: %d\n        template:\n          spec:\n"
		"            restartPolicy: Never\n            terminationGracePeriodSeconds: 0\n"
		"            containers:\n            - name: c\n              image: busybox\n"
		"              command: [sh, -c, 'touch \"$D/$HOSTNAME\"; exec sleep 600']\n"
		"              env: [{name: D, value: \"%s\"}]\n",
		n / 16, n / 16, dir);
	fclose(f);
	char rundir[600];
	snprintf(rundir, sizeof(rundir), "%s/run", work);
	int watch = watch_dir(dir);
	double t0 = now();
	pid_t p = fork();
	if (p == 0) {
		char *args[64];
		int k = 0;
		args[k++] = (char *)bin;
		args[k++] = "run";
		args[k++] = "-q";
		args[k++] = "--run-dir";
		args[k++] = rundir;
		for (int i = 0; i < n_extra && k < 62; i++)
			args[k++] = extra[i];
		args[k++] = manifest;
		args[k] = NULL;
		execv(bin, args);
		_exit(127);
	}
	wait_files(watch, dir, n);
	double t = now() - t0;
	*ret_cpu = cpu_of(p);
	*ret_total = cpu_of(p) + tree_cpu(p);
	double t1 = now();
	kill(p, SIGTERM);
	waitpid(p, NULL, 0);
	*ret_down = now() - t1;
	char cmd[1100];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", rundir);
	if (system(cmd) != 0)
		return t;
	return t;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/** Sorts v[0..n-1] in place and returns its median. */
static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp);
	return v[n / 2];
}

static double loadavg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f && fscanf(f, "%lf", &l) != 1)
		l = -1;
	if (f)
		fclose(f);
	return l;
}

/* Pause between measurements (ms), so that what one leaves behind (the
 * kernel destroys a run's namespaces after the runner exits) does not land
 * in the next one's time. BENCH_SETTLE_MS overrides. */
#define SETTLE_MS 1500

enum { BARE, PODNET, NONS, MODES };
static const char *const mode_name[MODES] = {"bare fork+exec", "jobset run (netns per pod)", "jobset run --no-namespaces"};

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_local JOBSET_BIN [N] [ROUNDS] [RUN OPTIONS...]\n");
		return 2;
	}
	int n = argc > 2 ? atoi(argv[2]) : 256, rounds = argc > 3 ? atoi(argv[3]) : 5;
	n = n / 16 * 16;
	if (n <= 0 || rounds <= 0) {
		fprintf(stderr, "bench_local: N must be >= 16 and ROUNDS >= 1\n");
		return 2;
	}
	const char *settle_env = getenv("BENCH_SETTLE_MS");
	useconds_t settle = (useconds_t)(settle_env ? atoi(settle_env) : SETTLE_MS) * 1000u;
	char work[] = "/tmp/bench_local-XXXXXX";
	if (!mkdtemp(work)) {
		perror("mkdtemp");
		return 1;
	}
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/ready", work);
	if (rounds > 64)
		rounds = 64;
	/* Options for the two jobset modes: the caller's, then --no-namespaces
	 * for the second. */
	int n_extra = argc > 4 ? argc - 4 : 0;
	char **nons = calloc((size_t)n_extra + 2, sizeof(char *));
	for (int i = 0; i < n_extra; i++)
		nons[i] = argv[4 + i];
	nons[n_extra] = "--no-namespaces";
	double t[MODES][64], cpu[MODES][64], runner[MODES][64], down[MODES][64], over[MODES][64], cpu_over[MODES][64];
	double load0 = loadavg();
	for (int r = 0; r < rounds; r++) {
		/* Interleaved, one of each per round, so drift in the machine's
		 * load hits every mode alike; ratios are taken within a round. */
		t[BARE][r] = bare(dir, n, &cpu[BARE][r]);
		usleep(settle);
		t[PODNET][r] = jobset(argv[1], dir, work, n, argv + 4, n_extra, &runner[PODNET][r], &cpu[PODNET][r],
				      &down[PODNET][r]);
		usleep(settle);
		t[NONS][r] = jobset(argv[1], dir, work, n, nons, n_extra + 1, &runner[NONS][r], &cpu[NONS][r],
				    &down[NONS][r]);
		usleep(settle);
		for (int m = PODNET; m < MODES; m++) {
			over[m][r] = (t[m][r] - t[BARE][r]) / n;
			cpu_over[m][r] = (cpu[m][r] - cpu[BARE][r]) / n;
		}
		fprintf(stderr, "round %d: bare %.0f ms, netns %.0f ms, no-namespaces %.0f ms (load %.1f)\n", r + 1,
			t[BARE][r] * 1e3, t[PODNET][r] * 1e3, t[NONS][r] * 1e3, loadavg());
	}
	double load1 = loadavg();
	printf("pods=%d rounds=%d settle=%u ms load average (1 min) %.2f at the start, %.2f at the end, %ld CPUs\n", n,
	       rounds, (unsigned)(settle / 1000), load0, load1, sysconf(_SC_NPROCESSORS_ONLN));
	/* Everything measured (the bare processes, the runner, its pods)
	 * inherits this policy: under `chrt -f 1` the CPUs go to it ahead of
	 * every other process of a shared machine, the nearest it gets to an
	 * idle one; the load average above still counts the others. */
	int policy = sched_getscheduler(0);
	struct sched_param sp = {0};
	(void)sched_getparam(0, &sp);
	if (policy == SCHED_FIFO || policy == SCHED_RR)
		printf("scheduling: %s priority %d (real-time: ahead of the machine's other processes)\n",
		       policy == SCHED_FIFO ? "SCHED_FIFO" : "SCHED_RR", sp.sched_priority);
	else
		printf("scheduling: time-shared, nice %d (sharing the CPUs with the machine's other processes)\n",
		       getpriority(PRIO_PROCESS, 0));
	printf("%-28s %28s %23s %25s %18s %14s\n", "mode", "all running min/median/max", "over bare per pod",
	       "CPU over bare per pod", "runner CPU/pod", "stop (SIGTERM)");
	printf("%-28s %28s %23s %25s %18s %14s\n", "", "(ms)", "median (min) ms", "median (min) ms", "median ms",
	       "median ms");
	double med[MODES], med_over[MODES];
	for (int m = 0; m < MODES; m++) {
		med[m] = median(t[m], rounds);
		double lo = t[m][0] * 1e3, hi = t[m][rounds - 1] * 1e3;
		if (m == BARE) {
			printf("%-28s %8.0f / %7.0f / %7.0f %23s %25s %18s %14s\n", mode_name[m], lo, med[m] * 1e3, hi, "-",
			       "-", "-", "-");
			continue;
		}
		med_over[m] = median(over[m], rounds);
		double cpu_med = median(cpu_over[m], rounds);
		printf("%-28s %8.0f / %7.0f / %7.0f %15.2f (%5.2f) %17.2f (%5.2f) %18.2f %14.0f\n", mode_name[m], lo,
		       med[m] * 1e3, hi, med_over[m] * 1e3, over[m][0] * 1e3, cpu_med * 1e3, cpu_over[m][0] * 1e3,
		       median(runner[m], rounds) * 1e3 / n, median(down[m], rounds) * 1e3);
	}
	printf("issue 11 targets (netns per pod): <= 2 ms per pod over bare: %.2f ms (%s); %d pods all running <= 1 s: "
	       "%.0f ms median, %.0f ms best (%s)\n",
	       med_over[PODNET] * 1e3, med_over[PODNET] <= 0.002 ? "met" : "not met", n, med[PODNET] * 1e3,
	       t[PODNET][0] * 1e3, med[PODNET] <= 1.0 ? "met" : "not met");
	free(nons);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", work);
	return system(cmd) == 0 ? 0 : 1;
}
