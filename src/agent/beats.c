/*
 * beats.c - the watcher of `in-place-restart-agent --watch-progress`
 * (beats.h).
 */
#include "agent/beats.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/heartbeat.h"
#include "core/progress.h"

#define DEFAULT_REPORT "/dev/termination-log"

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

void js_agent_vlogf(const char *who, const char *fmt, va_list ap)
{
	char ts[32];
	time_t t = time(NULL);
	struct tm tm;
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
	fprintf(stderr, "%s %s: ", ts, who);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	js_agent_vlogf("progress watcher", fmt, ap);
	va_end(ap);
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleep until wall time `ms`, or a signal. On the wall clock, as the
 * mtimes: a clock step moves the wake-up with it. */
static void sleep_until(int64_t ms)
{
	struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
	(void)clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL);
}

static int write_report(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	size_t n = strlen(text), off = 0;
	int r = 0;
	while (off < n) {
		ssize_t k = write(fd, text + off, n - off);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		off += (size_t)k;
	}
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);
	return v && *v ? v : dflt;
}

/* The report and its exit, once `o` says EXCEEDED. */
static int report(const struct js_progress_in *in, const struct js_progress_out *o, const char *path)
{
	char *msg = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&msg, &len);
	if (!f)
		return 1;
	if (o->first)
		fprintf(f, "no heartbeat in %lld ms since the watcher started: startup allowance %lld s exceeded by %lld ms",
			(long long)(in->now_ms - o->last_ms), (long long)in->startup_s, (long long)o->late_ms);
	else
		fprintf(f, "last heartbeat %lld ms ago: progress deadline %lld s exceeded by %lld ms",
			(long long)(in->now_ms - o->last_ms), (long long)in->deadline_s, (long long)o->late_ms);
	fclose(f);
	struct js_heartbeat_report rep = {.has_beat = in->has_beat, .beat_ms = in->beat_ms, .at_ms = in->now_ms};
	char *text = js_heartbeat_report_format(&rep, msg);
	int r = write_report(path, text);
	say("%s; reported (exit %d)", msg, JS_HEARTBEAT_EXIT_EXCEEDED);
	if (r < 0)
		say("cannot write the report to %s: %s", path, strerror(-r));
	free(text);
	free(msg);
	return r < 0 ? 1 : JS_HEARTBEAT_EXIT_EXCEEDED;
}

int js_beats_run(void)
{
	const char *file = env_or(JS_HEARTBEAT_ENV, NULL);
	const char *path = env_or("JOBSET_PROGRESS_REPORT", DEFAULT_REPORT);
	const char *ds = env_or(JS_HEARTBEAT_ENV_DEADLINE, NULL), *ss = env_or(JS_HEARTBEAT_ENV_STARTUP, ds);
	int32_t deadline, startup;
	if (!file) {
		say("%s must be set", JS_HEARTBEAT_ENV);
		return 1;
	}
	if (js_heartbeat_parse(ds, &deadline) < 0 || js_heartbeat_parse(ss, &startup) < 0) {
		say("invalid %s=%s or %s=%s: whole seconds from 1 to 2147483647", JS_HEARTBEAT_ENV_DEADLINE,
		    ds ? ds : "", JS_HEARTBEAT_ENV_STARTUP, ss ? ss : "");
		return 1;
	}
	/* No SA_RESTART: the signal ends the sleep. */
	struct sigaction sa = {.sa_handler = on_stop};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	struct js_progress_in in = {.start_ms = wall_ms(), .deadline_s = deadline, .startup_s = startup};
	say("watching %s: deadline %d s, startup allowance %d s", file, (int)deadline, (int)startup);
	bool warned = false;
	while (!stop_signal) {
		struct stat st;
		in.now_ms = wall_ms();
		in.has_beat = stat(file, &st) == 0;
		if (in.has_beat)
			in.beat_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
		else if (errno != ENOENT && !warned) {
			/* Unreadable is silent, as a missing beat: say it once. */
			say("stat %s: %s (counted as no heartbeat)", file, strerror(errno));
			warned = true;
		}
		struct js_progress_out o;
		if (js_progress_check(&in, &o) < 0)
			return 1; /* the settings were checked above */
		if (o.verdict == JS_PROGRESS_EXCEEDED)
			return report(&in, &o, path);
		sleep_until(o.next_ms);
	}
	say("signal %d: stopping", (int)stop_signal);
	return 0;
}
