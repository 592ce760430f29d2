/*
 * bench_local - time until N pods of a JobSet run under `jobset run`,
 * against N bare fork+exec of the same command.
 *
 *   cc -O2 -o /tmp/bench_local bench/local/bench_local.c
 *   /tmp/bench_local build/jobset [N=256] [ROUNDS=5] [RUN OPTIONS...]
 *
 * RUN OPTIONS go to `jobset run` (e.g. --no-namespaces, to compare the
 * degraded mode). Each invocation works in its own /tmp/bench_local-XXXXXX,
 * so concurrent benchmarks do not meet.
 *
 * The command of every pod (and of every bare process) is
 *   sh -c 'touch "$D/$HOSTNAME"; exec sleep 600'
 * so "running" means: the process started and executed its first action.
 * The clock starts when the runner (or the first fork) is started and stops
 * when N marker files exist. Prints min/median/max per mode and the per-pod
 * overhead ((jobset - bare) / N).
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void wait_files(const char *dir, int n)
{
	/* A benchmark may poll: 200 us granularity against ~100 ms totals. */
	while (count(dir) < n)
		usleep(200);
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
	wait_files(dir, n);
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
		     double *ret_cpu, double *ret_total)
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
	wait_files(dir, n);
	double t = now() - t0;
	*ret_cpu = cpu_of(p);
	*ret_total = cpu_of(p) + tree_cpu(p);
	kill(p, SIGTERM);
	waitpid(p, NULL, 0);
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

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_local JOBSET_BIN [N] [ROUNDS] [RUN OPTIONS...]\n");
		return 2;
	}
	int n = argc > 2 ? atoi(argv[2]) : 256, rounds = argc > 3 ? atoi(argv[3]) : 5;
	n = n / 16 * 16;
	char work[] = "/tmp/bench_local-XXXXXX";
	if (!mkdtemp(work)) {
		perror("mkdtemp");
		return 1;
	}
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/ready", work);
	double b[64], j[64], c[64], bt[64], jt[64], over[64];
	if (rounds > 64)
		rounds = 64;
	for (int r = 0; r < rounds; r++) {
		b[r] = bare(dir, n, &bt[r]);
		j[r] = jobset(argv[1], dir, work, n, argv + 4, argc > 4 ? argc - 4 : 0, &c[r], &jt[r]);
		over[r] = jt[r] - bt[r];
	}
	qsort(b, (size_t)rounds, sizeof(double), cmp);
	qsort(j, (size_t)rounds, sizeof(double), cmp);
	qsort(c, (size_t)rounds, sizeof(double), cmp);
	qsort(bt, (size_t)rounds, sizeof(double), cmp);
	qsort(jt, (size_t)rounds, sizeof(double), cmp);
	qsort(over, (size_t)rounds, sizeof(double), cmp);
	printf("pods=%d rounds=%d\n", n, rounds);
	printf("bare fork+exec : min %.1f ms  median %.1f ms  max %.1f ms\n", b[0] * 1e3, b[rounds / 2] * 1e3,
	       b[rounds - 1] * 1e3);
	printf("jobset run     : min %.1f ms  median %.1f ms  max %.1f ms\n", j[0] * 1e3, j[rounds / 2] * 1e3,
	       j[rounds - 1] * 1e3);
	printf("per-pod overhead (median): %.2f ms\n", (j[rounds / 2] - b[rounds / 2]) * 1e3 / n);
	printf("runner CPU per pod: min %.2f ms  median %.2f ms  max %.2f ms\n", c[0] * 1e3 / n,
	       c[rounds / 2] * 1e3 / n, c[rounds - 1] * 1e3 / n);
	printf("total CPU per pod: bare median %.2f ms  jobset median %.2f ms  over bare: min %.2f ms  median %.2f ms\n",
	       bt[rounds / 2] * 1e3 / n, jt[rounds / 2] * 1e3 / n, over[0] * 1e3 / n, over[rounds / 2] * 1e3 / n);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", work);
	return system(cmd) == 0 ? 0 : 1;
}
