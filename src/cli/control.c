/*
 * control.c - `jobset down` and `jobset evict POD`: commands to a live
 * runner, through its run directory's control FIFO (local/rundir.h). There
 * is no reply channel: each command watches the run's state file for the
 * effect, with a deadline.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/runinfo.h"
#include "local/rundir.h"

/* How often a command looks at the state file while it waits. */
#define CONTROL_POLL_MS 50
/* How long `jobset evict` waits for the runner to act on the eviction. */
#define CONTROL_EVICT_WAIT_MS 10000
/* Default of `jobset down --timeout`: longer than the default grace period
 * of a pod (30 s), so a normal teardown is waited for. */
#define CONTROL_DOWN_WAIT_S 60
/* Past the runner's window (LOCAL_SAME_INTERRUPT_MS, 500 ms) in which a
 * repeated "down" counts as the first one again. */
#define CONTROL_SAME_REQUEST_MS 600

static const char down_usage[] =
	"usage: jobset down [-d RUN-DIR] [--timeout SECONDS]\n"
	"\n"
	"Stop a running run as Ctrl-C does: every pod gets its grace period, then\n"
	"the runner writes its results and exits. Waits until it has (at most\n"
	"SECONDS, default 60; then the pods are killed at once; 0: no grace, kill\n"
	"them now). The run is\n"
	"RUN-DIR, else $JOBSET_RUN_DIR, else the last run you started.\n";

static const char evict_usage[] =
	"usage: jobset evict [-d RUN-DIR] POD\n"
	"\n"
	"Evict a running pod as the Eviction API does: the pod gets the condition\n"
	"DisruptionTarget=True (reason EvictionByEvictionAPI) and is deleted with\n"
	"its grace period. It then fails, and a podFailurePolicy rule on\n"
	"onPodConditions DisruptionTarget decides what that means (Ignore: not\n"
	"counted, the pod is replaced).\n";

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap(void)
{
	(void)poll(NULL, 0, CONTROL_POLL_MS);
}

/** Send `line`; prints why it could not be sent. */
static int send_line(const struct js_cli_runinfo *ri, const char *line)
{
	int r = js_rundir_control_send(ri->dir, line);
	if (r == -ESRCH)
		fprintf(stderr, "jobset %s: no runner is live in %s\n", ri->cmd, ri->dir);
	else if (r < 0)
		fprintf(stderr, "jobset %s: cannot reach the runner of %s: %s\n", ri->cmd, ri->dir, js_strerror(r));
	return r;
}

int js_cli_down(int argc, char **argv)
{
	struct js_cli_runopts o;
	int rc = js_cli_runinfo_args("down", down_usage, "dT", argc, argv, &o);
	if (rc >= 0)
		return rc;
	const char *dir = o.dir;
	int64_t timeout = o.timeout_s >= 0 ? o.timeout_s : CONTROL_DOWN_WAIT_S;
	if ((rc = js_cli_runinfo_operands("down", down_usage, argc, argv, 0)) >= 0)
		return rc;
	struct js_cli_runinfo ri;
	if ((rc = js_cli_runinfo_open("down", dir, &ri)) != 0)
		return rc;
	if (!ri.live) {
		/* As `docker compose down` on nothing: not an error. A runner
		 * that died leaves containers behind only if its reaper died
		 * too (local/container.h): what is left goes now. */
		printf("no runner is live in %s\n", ri.dir);
		rc = js_cli_runinfo_leftovers(&ri, true);
		js_cli_runinfo_done(&ri);
		return rc == 0 ? JS_EXIT_OK : JS_EXIT_INVALID;
	}
	if (send_line(&ri, "down") < 0) {
		js_cli_runinfo_done(&ri);
		return JS_EXIT_INVALID;
	}
	/* The runner takes a second "down" within half a second of the first
	 * for the same request delivered twice (local/loop.c, interrupt()): with
	 * --timeout 0 the second is sent just after that window. */
	int64_t deadline = mono_ms() + (timeout ? timeout * 1000 : CONTROL_SAME_REQUEST_MS);
	bool again = false;
	while (js_rundir_live(ri.dir)) {
		if (!again && mono_ms() >= deadline) {
			/* The second "down" is Ctrl-C pressed twice: no more grace. */
			if (timeout > 0)
				fprintf(stderr, "jobset down: still stopping after %llds; killing every pod now\n",
					(long long)timeout);
			if (js_rundir_control_send(ri.dir, "down") < 0) {
				/* it ended between the check and the send */
			}
			again = true;
		}
		nap();
	}
	(void)js_cli_runinfo_reload(&ri);
	const char *state = js_json_str(js_json_path(ri.state, "runner"), "state");
	printf("jobset %s: %s (%s)\n", js_json_str(js_json_path(ri.state, "jobset"), "name"), state ? state : "stopped",
	       ri.dir);
	js_cli_runinfo_done(&ri);
	return JS_EXIT_OK;
}

/** The pod's DisruptionTarget condition in the current state, if any. */
static bool disrupted(const struct js_cli_runinfo *ri, const char *name)
{
	size_t i, k;
	json_t *p, *c;
	json_array_foreach(json_object_get(ri->state, "pods"), i, p)
	{
		if (strcmp(js_json_str(json_object_get(p, "metadata"), "name"), name) != 0)
			continue;
		json_array_foreach(js_json_path(p, "status.conditions"), k, c)
		{
			if (strcmp(js_json_str(c, "type"), "DisruptionTarget") == 0 &&
			    strcmp(js_json_str(c, "status"), "True") == 0)
				return true;
		}
	}
	return false;
}

int js_cli_evict(int argc, char **argv)
{
	struct js_cli_runopts o;
	int rc = js_cli_runinfo_args("evict", evict_usage, "d", argc, argv, &o);
	if (rc >= 0)
		return rc;
	const char *dir = o.dir;
	if ((rc = js_cli_runinfo_operands("evict", evict_usage, argc, argv, 1)) >= 0)
		return rc;
	struct js_cli_runinfo ri;
	if ((rc = js_cli_runinfo_open("evict", dir, &ri)) != 0)
		return rc;
	const json_t *p = js_cli_runinfo_pod(&ri, argv[optind]);
	const char *phase = js_json_str(json_object_get(p, "status"), "phase");
	if (p && (!phase || (strcmp(phase, "Running") != 0 && strcmp(phase, "Pending") != 0) ||
		  js_json_str(json_object_get(p, "metadata"), "deletionTimestamp"))) {
		fprintf(stderr, "jobset evict: pod %s is not running (it is %s%s)\n",
			js_json_str(json_object_get(p, "metadata"), "name"), phase ? phase : "unknown",
			js_json_str(json_object_get(p, "metadata"), "deletionTimestamp") ? ", being deleted" : "");
		p = NULL;
	}
	char *name = p ? js_buf_format("evict %s", js_json_str(json_object_get(p, "metadata"), "name")) : NULL;
	if (!name || send_line(&ri, name) < 0) {
		free(name);
		js_cli_runinfo_done(&ri);
		return JS_EXIT_INVALID;
	}
	const char *pod = name + strlen("evict ");
	int64_t deadline = mono_ms() + CONTROL_EVICT_WAIT_MS;
	bool done = false;
	while (!(done = disrupted(&ri, pod)) && ri.live && mono_ms() < deadline) {
		nap();
		(void)js_cli_runinfo_reload(&ri);
	}
	if (done)
		printf("pod/%s evicted\n", pod);
	else
		fprintf(stderr, "jobset evict: the runner did not evict pod %s (see %s/events.log)\n", pod, ri.dir);
	free(name);
	js_cli_runinfo_done(&ri);
	return done ? JS_EXIT_OK : JS_EXIT_INVALID;
}
