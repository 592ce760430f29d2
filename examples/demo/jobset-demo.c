/*
 * jobset-demo - a small distributed program for `jobset run` (and for a
 * cluster: it only uses DNS, TCP and a shared directory).
 *
 *   jobset-demo leader --workers N [--steps S] [--port P] [--ckpt DIR]
 *   jobset-demo worker --leader HOST --rank R [--steps S] [--port P]
 *                      [--ckpt DIR] [--per-job N] [--step-ms MS]
 *                      [--fail-at STEP [--fail-rank R] [--fail-code C]
 *                      [--fail-always | --fail-attempt A]]
 *
 * The leader listens on the address its own hostname resolves to; workers
 * find it by DNS name (e.g. the JobSet coordinator endpoint), retrying until
 * it resolves and accepts. Then they run in lockstep: every step each worker
 * sends a value, the leader sums them and sends the running total back.
 * After each step the leader writes <DIR>/leader.ckpt and each worker
 * <DIR>/worker-R.ckpt; a restarted run resumes from the leader's checkpoint.
 * --step-ms makes each step take that long (the work a real step does), so
 * a run lasts long enough to watch. --fail-at makes a worker exit with
 * --fail-code at that step, once (a marker file in DIR remembers it), always
 * (--fail-always), or only in the JobSet's restart attempt A
 * (--fail-attempt, from $RESTART_ATTEMPT: the same on every run, whatever
 * an earlier run left in DIR), to exercise failure policies. On success the leader prints the result and removes
 * the checkpoints. SIGTERM ends either role with status 143.
 *
 * Names resolve through the system resolver, and where that fails through
 * the hosts file $JOBSET_HOSTS_FILE names (`jobset run --no-namespaces`,
 * where pods share the machine's /etc/hosts); the own hostname is
 * $HOSTNAME when set.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORKERS 256

struct opts {
	const char *role, *leader, *ckpt, *port;
	int workers, rank, steps, fail_at, fail_code, fail_always, per_job, fail_rank, fail_attempt, step_ms;
};

static void on_term(int sig)
{
	(void)sig;
	_exit(143);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static int num(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || v < 0 || v > 1000000) {
		fprintf(stderr, "bad number '%s'\n", s);
		exit(2);
	}
	return (int)v;
}

static int read_ckpt(const char *dir, const char *name, long *total)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "re");
	int step = 0;
	if (!f)
		return 0;
	if (fscanf(f, "%d %ld", &step, total) != 2)
		step = 0;
	fclose(f);
	return step;
}

static void write_ckpt(const char *dir, const char *name, int step, long total)
{
	char path[512], tmp[520];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "we");
	if (!f)
		return;
	fprintf(f, "%d %ld\n", step, total);
	fclose(f);
	rename(tmp, path);
}

/* Without namespaces (`jobset run --no-namespaces`) pod names are not in
 * /etc/hosts; the runner names a hosts file with every pod in
 * $JOBSET_HOSTS_FILE. Look `host` up there: its address, or NULL. */
static const char *hosts_file_lookup(const char *host, char *ip, size_t n)
{
	const char *path = getenv("JOBSET_HOSTS_FILE");
	FILE *f = path ? fopen(path, "re") : NULL;
	char line[1024];
	const char *found = NULL;
	while (f && !found && fgets(line, sizeof(line), f)) {
		char *save = NULL, *addr = strtok_r(line, " \t\n", &save);
		for (char *name; addr && addr[0] != '#' && !found && (name = strtok_r(NULL, " \t\n", &save));) {
			if (strcmp(name, host) == 0) {
				snprintf(ip, n, "%s", addr);
				found = ip;
			}
		}
	}
	if (f)
		fclose(f);
	return found;
}

static int resolve(const char *host, const char *port, int passive, struct addrinfo **ret)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM, .ai_flags = passive};
	int r = getaddrinfo(host, port, &hints, ret);
	char ip[64];
	if (r != 0 && hosts_file_lookup(host, ip, sizeof(ip))) {
		hints.ai_flags |= AI_NUMERICHOST;
		r = getaddrinfo(ip, port, &hints, ret);
	}
	return r;
}

/* The pod's hostname: $HOSTNAME as the kubelet (and jobset run) set it;
 * without a UTS namespace the machine's name would be another one. */
static void my_hostname(char *host, size_t n)
{
	const char *h = getenv("HOSTNAME");
	if (h && h[0])
		snprintf(host, n, "%s", h);
	else if (gethostname(host, n) < 0)
		snprintf(host, n, "localhost");
}

static int recv_line(FILE *f, char *buf, size_t n)
{
	return fgets(buf, (int)n, f) ? 0 : -1;
}

static int leader(const struct opts *o)
{
	char host[256];
	my_hostname(host, sizeof(host));
	struct addrinfo *ai;
	int r = resolve(host, o->port, AI_PASSIVE, &ai);
	if (r) {
		say("leader: cannot resolve my own name %s: %s", host, gai_strerror(r));
		return 3;
	}
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	char ip[64];
	getnameinfo(ai->ai_addr, ai->ai_addrlen, ip, sizeof(ip), NULL, 0, NI_NUMERICHOST);
	if (bind(ls, ai->ai_addr, ai->ai_addrlen) < 0 || listen(ls, MAX_WORKERS) < 0) {
		say("leader: cannot listen on %s:%s: %s", ip, o->port, strerror(errno));
		return 3;
	}
	freeaddrinfo(ai);
	long total = 0;
	int start = read_ckpt(o->ckpt, "leader.ckpt", &total);
	const char *att = getenv("RESTART_ATTEMPT");
	int my_attempt = att ? num(att) : 0;
	say("leader %s listening on %s:%s for %d workers", host, ip, o->port, o->workers);
	if (start > 0)
		say("leader: resumed from checkpoint at step %d (total %ld)", start, total);
	FILE *w[MAX_WORKERS];
	for (int i = 0; i < o->workers; i++) {
		int s = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (s < 0)
			return 3;
		w[i] = fdopen(s, "r+");
		char line[256];
		int rank = -1;
		char name[200] = "?";
		int attempt = -1;
		if (recv_line(w[i], line, sizeof(line)) < 0 ||
		    sscanf(line, "HELLO %d %199s %d", &rank, name, &attempt) != 3 || attempt != my_attempt) {
			/* A worker of another restart attempt (the JobSet recreates
			 * Jobs one by one): turn it away, it will retry. */
			fclose(w[i]);
			i--;
			continue;
		}
		say("leader: worker %d connected from %s", rank, name);
		fprintf(w[i], "START %d\n", start);
		fflush(w[i]);
	}
	for (int step = start + 1; step <= o->steps; step++) {
		for (int i = 0; i < o->workers; i++) {
			char line[256];
			int s;
			long v;
			if (recv_line(w[i], line, sizeof(line)) < 0 || sscanf(line, "STEP %d %ld", &s, &v) != 2) {
				/* Leave recovery to the JobSet's failure policy: the
				 * worker's Job fails, and the policy restarts or fails
				 * the whole JobSet (this pod gets SIGTERM then). Exiting
				 * here would race with it by failing the leader's Job. */
				say("leader: lost a worker at step %d; waiting for the JobSet to act", step);
				for (;;)
					pause();
			}
			total += v;
		}
		for (int i = 0; i < o->workers; i++) {
			fprintf(w[i], "TOTAL %d %ld\n", step, total);
			fflush(w[i]);
		}
		write_ckpt(o->ckpt, "leader.ckpt", step, total);
		say("leader: step %d total %ld", step, total);
	}
	say("leader: result=%ld", total);
	/* Done: the next run starts afresh. */
	DIR *d = opendir(o->ckpt);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (strcmp(e->d_name, "leader.ckpt") == 0 || strncmp(e->d_name, "failed-", 7) == 0)
			unlinkat(dirfd(d), e->d_name, 0);
	}
	if (d)
		closedir(d);
	return 0;
}

static int worker(const struct opts *o)
{
	char host[256], path[512];
	my_hostname(host, sizeof(host));
	FILE *f = NULL;
	int tries = 0;
again:
	/* The leader may not be up yet: retry until its name resolves and it
	 * accepts, for up to a minute. */
	for (int attempt = 0; attempt < 600 && !f; attempt++) {
		struct addrinfo *ai;
		if (resolve(o->leader, o->port, 0, &ai) == 0) {
			int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (connect(s, ai->ai_addr, ai->ai_addrlen) == 0) {
				char ip[64];
				getnameinfo(ai->ai_addr, ai->ai_addrlen, ip, sizeof(ip), NULL, 0, NI_NUMERICHOST);
				say("worker %d (%s): connected to leader %s at %s", o->rank, host, o->leader, ip);
				f = fdopen(s, "r+");
			} else {
				close(s);
			}
			freeaddrinfo(ai);
		}
		if (!f)
			nanosleep(&(struct timespec){0, 100000000}, NULL);
	}
	if (!f) {
		say("worker %d: leader %s unreachable", o->rank, o->leader);
		return 3;
	}
	fprintf(f, "HELLO %d %s %s\n", o->rank, host, getenv("RESTART_ATTEMPT") ? getenv("RESTART_ATTEMPT") : "0");
	fflush(f);
	char line[256], name[64];
	int start = 0;
	if (recv_line(f, line, sizeof(line)) < 0 || sscanf(line, "START %d", &start) != 1) {
		/* A leader of an older attempt: try again. */
		fclose(f);
		f = NULL;
		if (++tries > 600) {
			say("worker %d: no leader of my attempt answered", o->rank);
			return 3;
		}
		nanosleep(&(struct timespec){0, 100000000}, NULL);
		goto again;
	}
	long mine = 0;
	snprintf(name, sizeof(name), "worker-%d.ckpt", o->rank);
	int own = read_ckpt(o->ckpt, name, &mine);
	if (start > 0)
		say("worker %d: resuming from checkpoint at step %d (own checkpoint step %d)", o->rank, start, own);
	const char *att = getenv("RESTART_ATTEMPT");
	int my_attempt = att ? num(att) : 0;
	for (int step = start + 1; step <= o->steps; step++) {
		if (o->step_ms > 0)
			nanosleep(&(struct timespec){o->step_ms / 1000, (long)(o->step_ms % 1000) * 1000000L}, NULL);
		if (step == o->fail_at && (o->fail_rank < 0 || o->fail_rank == o->rank)) {
			snprintf(path, sizeof(path), "%s/failed-%d", o->ckpt, o->rank);
			bool fail = o->fail_attempt >= 0 ? my_attempt == o->fail_attempt
						       : o->fail_always || access(path, F_OK) != 0;
			if (fail) {
				FILE *m = fopen(path, "we");
				if (m)
					fclose(m);
				say("worker %d: failing at step %d with exit code %d", o->rank, step, o->fail_code);
				return o->fail_code;
			}
		}
		long v = (long)(o->rank + 1) * step;
		fprintf(f, "STEP %d %ld\n", step, v);
		fflush(f);
		long total;
		int s;
		if (recv_line(f, line, sizeof(line)) < 0 || sscanf(line, "TOTAL %d %ld", &s, &total) != 2)
			return 4;
		mine += v;
		write_ckpt(o->ckpt, name, step, mine);
	}
	say("worker %d: done", o->rank);
	snprintf(path, sizeof(path), "%s/%s", o->ckpt, name);
	unlink(path);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.ckpt = "ckpt", .port = "7077", .workers = 1, .steps = 5, .fail_code = 1, .fail_rank = -1,
			 .fail_attempt = -1};
	signal(SIGTERM, on_term);
	if (argc < 2) {
		fprintf(stderr, "usage: jobset-demo leader|worker [options]\n");
		return 2;
	}
	o.role = argv[1];
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : "";
		if (strcmp(a, "--fail-always") == 0) {
			o.fail_always = 1;
			continue;
		}
		i++;
		if (strcmp(a, "--workers") == 0)
			o.workers = num(v);
		else if (strcmp(a, "--steps") == 0)
			o.steps = num(v);
		else if (strcmp(a, "--port") == 0)
			o.port = v;
		else if (strcmp(a, "--ckpt") == 0)
			o.ckpt = v;
		else if (strcmp(a, "--leader") == 0)
			o.leader = v;
		else if (strcmp(a, "--fail-rank") == 0)
			o.fail_rank = num(v);
		else if (strcmp(a, "--per-job") == 0)
			o.per_job = num(v);
		else if (strcmp(a, "--rank") == 0)
			o.rank = num(v);
		else if (strcmp(a, "--fail-at") == 0)
			o.fail_at = num(v);
		else if (strcmp(a, "--fail-code") == 0)
			o.fail_code = num(v);
		else if (strcmp(a, "--fail-attempt") == 0)
			o.fail_attempt = num(v);
		else if (strcmp(a, "--step-ms") == 0)
			o.step_ms = num(v);
		else {
			fprintf(stderr, "unknown option %s\n", a);
			return 2;
		}
	}
	if (o.per_job > 0) {
		/* Global rank from the Job index and the completion index, both
		 * passed in by the JobSet and Job controllers. */
		const char *ji = getenv("JOB_INDEX"), *ci = getenv("JOB_COMPLETION_INDEX");
		o.rank = num(ji ? ji : "0") * o.per_job + num(ci ? ci : "0");
	}
	if (o.workers > MAX_WORKERS)
		o.workers = MAX_WORKERS;
	/* mkdir -p: the checkpoint directory is shared by every pod. */
	char dir[512];
	snprintf(dir, sizeof(dir), "%s", o.ckpt);
	for (char *p = dir + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir(dir, 0755);
			*p = '/';
		}
	}
	mkdir(dir, 0755);
	if (strcmp(o.role, "leader") == 0)
		return leader(&o);
	if (strcmp(o.role, "worker") == 0 && o.leader)
		return worker(&o);
	fprintf(stderr, "usage: jobset-demo leader|worker [options]\n");
	return 2;
}
