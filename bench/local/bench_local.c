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
 * that asks for it.
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

static double bare(const char *dir, int n)
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
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	for (int i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	free(pids);
	return t;
}

/** utime + stime of process `pid` in seconds, or -1. */
static double cpu_of(pid_t pid)
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
	unsigned long ut = 0, st = 0;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double jobset(const char *bin, const char *dir, const char *work, int n, char **extra, int n_extra,
		     double *ret_cpu)
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
	double b[64], j[64], c[64];
	for (int r = 0; r < rounds && r < 64; r++) {
		b[r] = bare(dir, n);
		j[r] = jobset(argv[1], dir, work, n, argv + 4, argc > 4 ? argc - 4 : 0, &c[r]);
	}
	qsort(b, (size_t)rounds, sizeof(double), cmp);
	qsort(j, (size_t)rounds, sizeof(double), cmp);
	qsort(c, (size_t)rounds, sizeof(double), cmp);
	printf("pods=%d rounds=%d\n", n, rounds);
	printf("bare fork+exec : min %.1f ms  median %.1f ms  max %.1f ms\n", b[0] * 1e3, b[rounds / 2] * 1e3,
	       b[rounds - 1] * 1e3);
	printf("jobset run     : min %.1f ms  median %.1f ms  max %.1f ms\n", j[0] * 1e3, j[rounds / 2] * 1e3,
	       j[rounds - 1] * 1e3);
	printf("per-pod overhead (median): %.2f ms\n", (j[rounds / 2] - b[rounds / 2]) * 1e3 / n);
	printf("runner CPU per pod: min %.2f ms  median %.2f ms  max %.2f ms\n", c[0] * 1e3 / n,
	       c[rounds / 2] * 1e3 / n, c[rounds - 1] * 1e3 / n);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", work);
	return system(cmd) == 0 ? 0 : 1;
}
