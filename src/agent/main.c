/*
 * main.c - in-place-restart-agent: the pod side of in-place restart
 * (KEP-467, SPEC §13; docs/in-place-restart.md), compatible with upstream's
 * cmd/in-place-restart-agent: the same environment, annotation, field
 * manager, exit codes and barrier.
 *
 * It watches its JobSet (one object: a field selector on metadata.name),
 * asks core/inplace.h what to do with each version it sees, and does it:
 * writes the pod's attempt annotation by server-side apply (field manager
 * in-place-restart-agent, forced), exits with IN_PLACE_RESTART_EXIT_CODE
 * when its attempt is outdated (the pod's restartPolicyRules restart it in
 * place), and lifts the barrier when its attempt is current:
 *
 *   sidecar mode (no WORKER_COMMAND): serve 200 on STARTUP_PROBE_PATH at
 *     STARTUP_PROBE_PORT (defaults /barrier-is-down, 8081), which the
 *     sidecar's startupProbe waits for before the worker containers start;
 *   main-container mode (WORKER_COMMAND): run it with $SHELL -c (else bash,
 *     else /bin/sh) and exit with its exit code (128 + signal when killed).
 *
 * Environment: JOBSET_NAME, POD_NAME (required), IN_PLACE_RESTART_EXIT_CODE
 * (default 1), WORKER_COMMAND, STARTUP_PROBE_PATH, STARTUP_PROBE_PORT. The
 * namespace is the service account's namespace file, as upstream's; ours
 * also takes $NAMESPACE when that file is absent (the KEP's env, and an
 * agent run outside a pod). The API server: $KUBECONFIG when set, else the
 * in-cluster configuration.
 *
 * With the one argument --watch-progress it is hang detection's watcher
 * instead (beats.h; docs/progress-deadline.md).
 *
 * Exit status: the restart exit code for an in-place restart, the worker's
 * in main-container mode, 0 on SIGTERM/SIGINT in sidecar mode, 1 on a
 * configuration error.
 */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/beats.h"
#include "api/codec.h"
#include "api/jobset.h"
#include "base/clock.h"
#include "base/buf.h"
#include "base/common.h"
#include "base/diag.h"
#include "core/inplace.h"
#include "kube/apierr.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "kube/kubeconfig.h"

#define FIELD_MANAGER "in-place-restart-agent"
#define NAMESPACE_FILE "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

struct env {
	char *ns;
	const char *jobset, *pod, *worker, *probe_path;
	int exit_code, probe_port;
};

/* Shared between the informer's thread (writer) and main (reader). */
struct shared {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool fresh; /* a version not yet looked at */
	struct js_inplace_view view;
};

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static void logf_(const char *fmt, ...) JS_PRINTF(1, 2);
static void logf_(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	js_agent_vlogf("in-place-restart-agent", fmt, ap);
	va_end(ap);
}

static bool parse_int(const char *s, long lo, long hi, int *ret)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*ret = (int)v;
	return true;
}

static const char *getenv_set(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* Returns 0, or -1 having said why. */
static int read_env(struct env *e)
{
	memset(e, 0, sizeof(*e));
	e->jobset = getenv_set("JOBSET_NAME");
	e->pod = getenv_set("POD_NAME");
	if (!e->jobset || !e->pod) {
		logf_("env var %s must be set", e->jobset ? "POD_NAME" : "JOBSET_NAME");
		return -1;
	}
	FILE *f = fopen(NAMESPACE_FILE, "re");
	if (f) {
		char buf[256] = "";
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		buf[strcspn(buf, "\r\n")] = 0;
		e->ns = js_xstrdup(buf);
	} else if (getenv_set("NAMESPACE")) {
		e->ns = js_xstrdup(getenv_set("NAMESPACE"));
	}
	if (!e->ns || !*e->ns) {
		logf_("no namespace: %s unreadable (is automountServiceAccountToken false?) and NAMESPACE unset",
		      NAMESPACE_FILE);
		return -1;
	}
	const char *code = getenv_set("IN_PLACE_RESTART_EXIT_CODE");
	e->exit_code = 1;
	if (code && !parse_int(code, 0, 255, &e->exit_code)) {
		logf_("invalid env var value: IN_PLACE_RESTART_EXIT_CODE=%s (an exit code, 0-255)", code);
		return -1;
	}
	e->worker = getenv_set("WORKER_COMMAND");
	const char *path = getenv_set("STARTUP_PROBE_PATH"), *port = getenv_set("STARTUP_PROBE_PORT");
	if (e->worker && (path || port)) {
		logf_("invalid env var configuration: WORKER_COMMAND cannot be set with STARTUP_PROBE_PATH or "
		      "STARTUP_PROBE_PORT");
		return -1;
	}
	e->probe_path = path ? path : "/barrier-is-down";
	e->probe_port = 8081;
	if (port && !parse_int(port, 1, 65535, &e->probe_port)) {
		logf_("invalid env var value: STARTUP_PROBE_PORT=%s", port);
		return -1;
	}
	return 0;
}

/* ---- the JobSet watch ---- */

static void seen(struct shared *s, const json_t *obj)
{
	struct js_jobset *js = NULL;
	struct js_diag d = {0};
	int r = js_codec_decode_jobset(obj, JS_CODEC_LENIENT, &d, &js);
	js_diag_done(&d);
	if (r < 0)
		return; /* an undecodable version changes nothing */
	pthread_mutex_lock(&s->mu);
	s->view = js_inplace_view_of(js);
	s->fresh = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->mu);
	js_jobset_free(js);
}

static void on_add(void *user, const void *rec, const json_t *obj)
{
	(void)rec;
	seen(user, obj);
}

static void on_update(void *user, const void *old_rec, const void *rec, const json_t *obj)
{
	(void)old_rec;
	(void)rec;
	seen(user, obj);
}

static void on_error(void *user, const char *verb, int err, const char *msg)
{
	(void)user;
	logf_("watching the JobSet: %s failed: %s (retrying)", verb, msg ? msg : js_apierr_strerror(err));
}

/* ---- actions ---- */

static int patch_attempt(struct js_client *c, const struct env *e, int32_t attempt)
{
	char val[16];
	snprintf(val, sizeof val, "%d", (int)attempt);
	json_t *body = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}}}", "apiVersion", "v1", "kind", "Pod", "metadata", "name",
				 e->pod, "namespace", e->ns, "annotations", JS_ANN_IN_PLACE_RESTART_ATTEMPT, val);
	struct js_write_opts wo = {.field_manager = FIELD_MANAGER, .force = true};
	struct js_apierr err = {0};
	int r = js_client_patch(c, &js_client_res_pods, e->ns, e->pod, JS_PATCH_APPLY, body, &wo, NULL, &err);
	if (r < 0)
		logf_("unable to patch Pod annotation %s=%s: %s", JS_ANN_IN_PLACE_RESTART_ATTEMPT, val,
		      err.message ? err.message : js_apierr_strerror(r));
	else
		logf_("successfully updated Pod in-place restart attempt annotation to %s", val);
	js_apierr_done(&err);
	json_decref(body);
	return r;
}

struct probe {
	int fd;
	const char *path;
	atomic_bool stop;
	pthread_t thread;
};

/* Answer each request: 200 on the probe path, 404 elsewhere. */
static void *probe_main(void *arg)
{
	struct probe *p = arg;
	while (!atomic_load(&p->stop)) {
		struct pollfd pfd = {.fd = p->fd, .events = POLLIN};
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		int cfd = accept4(p->fd, NULL, NULL, SOCK_CLOEXEC);
		if (cfd < 0)
			continue;
		char req[2048];
		size_t n = 0;
		struct pollfd cp = {.fd = cfd, .events = POLLIN};
		while (n < sizeof(req) - 1 && !memchr(req, '\n', n) && poll(&cp, 1, 2000) > 0) {
			ssize_t k = read(cfd, req + n, sizeof(req) - 1 - n);
			if (k <= 0)
				break;
			n += (size_t)k;
		}
		req[n] = 0;
		char *sp = strchr(req, ' '), *end = sp ? strpbrk(sp + 1, " ?\r\n") : NULL;
		bool ok = sp && end && (size_t)(end - sp - 1) == strlen(p->path) &&
			  strncmp(sp + 1, p->path, strlen(p->path)) == 0;
		const char *resp = ok ? "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
				      : "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
		(void)!write(cfd, resp, strlen(resp));
		close(cfd);
	}
	return NULL;
}

static int probe_start(struct probe *p, const struct env *e)
{
	p->path = e->probe_path;
	atomic_init(&p->stop, false);
	p->fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int fam6 = p->fd >= 0;
	if (!fam6)
		p->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (p->fd < 0)
		return -errno;
	int one = 1, zero = 0;
	(void)setsockopt(p->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	int r;
	if (fam6) {
		(void)setsockopt(p->fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
		struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)e->probe_port),
					 .sin6_addr = IN6ADDR_ANY_INIT};
		r = bind(p->fd, (struct sockaddr *)&a, sizeof a);
	} else {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)e->probe_port),
					.sin_addr.s_addr = htonl(INADDR_ANY)};
		r = bind(p->fd, (struct sockaddr *)&a, sizeof a);
	}
	if (r < 0 || listen(p->fd, 16) < 0) {
		r = -errno;
		close(p->fd);
		p->fd = -1;
		return r;
	}
	r = pthread_create(&p->thread, NULL, probe_main, p);
	if (r != 0) {
		close(p->fd);
		p->fd = -1;
		return -r;
	}
	return 0;
}

static void probe_stop(struct probe *p)
{
	if (p->fd < 0)
		return;
	atomic_store(&p->stop, true);
	pthread_join(p->thread, NULL);
	close(p->fd);
	p->fd = -1;
}

static pid_t worker_start(const char *cmd)
{
	const char *shell = getenv_set("SHELL");
	if (!shell)
		shell = access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
	pid_t pid = fork();
	if (pid == 0) {
		setpgid(0, 0); /* its own group: an in-place exit takes all of it */
		signal(SIGPIPE, SIG_DFL); /* ignored here, and an ignored signal stays so across exec */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execl(shell, shell, "-c", cmd, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		setpgid(pid, pid);
	return pid;
}

static int exit_status(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
	/* Hang detection's watcher (beats.h) shares the binary, so a cluster
	 * that runs the agent's image has it; it needs none of the rest. */
	if (argc == 2 && strcmp(argv[1], "--watch-progress") == 0)
		return js_beats_run();
	if (argc > 1) {
		logf_("unknown argument '%s' (the only one is --watch-progress)", argv[1]);
		return 1;
	}
	struct env e;
	if (read_env(&e) < 0)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	curl_global_init(CURL_GLOBAL_DEFAULT);

	struct js_kubeconfig kc = {0};
	struct js_diag d = {0};
	const char *kcpath = getenv_set("KUBECONFIG");
	int r = kcpath ? js_kubeconfig_load(kcpath, NULL, &d, &kc) : js_kubeconfig_in_cluster(NULL, &kc);
	if (r < 0) {
		logf_("%s: %s", kcpath ? "kubeconfig" : "in-cluster configuration",
		      d.n ? d.items[0].message : js_strerror(r));
		js_diag_done(&d);
		free(e.ns);
		return 1;
	}
	js_diag_done(&d);
	struct js_client *client = NULL;
	struct js_client_opts co = {.user_agent = "in-place-restart-agent/" JS_VERSION};
	r = js_client_new(&kc, &co, &client);
	js_kubeconfig_done(&kc);
	if (r < 0) {
		logf_("client: %s", js_strerror(r));
		free(e.ns);
		return 1;
	}
	logf_("%s mode; jobset %s/%s, pod %s, restart exit code %d", e.worker ? "main container" : "sidecar container",
	      e.ns, e.jobset, e.pod, e.exit_code);

	struct shared sh = {.fresh = false};
	pthread_mutex_init(&sh.mu, NULL);
	js_clock_cond_init(&sh.cond);
	char *fs = js_buf_format("metadata.name=%s", e.jobset);
	struct js_informer *inf = NULL;
	struct js_informer_opts io = {.res = &js_client_res_jobsets, .namespace = e.ns, .field_selector = fs,
				      .handlers = {.on_add = on_add, .on_update = on_update, .on_error = on_error,
						   .user = &sh}};
	r = js_informer_new(client, &io, &inf);
	if (r == 0)
		r = js_informer_start(inf);
	int rc = 1;
	if (r < 0) {
		logf_("watching the JobSet: %s", js_strerror(r));
		goto out;
	}

	struct js_inplace_agent st = {.barrier_active = true};
	struct js_inplace_view view = {0};
	struct probe probe = {.fd = -1};
	pid_t worker = -1;
	bool pending = false; /* a step to retry (a failed patch) */
	for (;;) {
		if (got_signal) {
			logf_("signal %d: stopping", (int)got_signal);
			if (worker > 0) {
				kill(-worker, SIGTERM);
				int ws;
				rc = waitpid(worker, &ws, 0) == worker ? exit_status(ws) : 1;
			} else {
				rc = 0;
			}
			break;
		}
		if (worker > 0) {
			int ws;
			if (waitpid(worker, &ws, WNOHANG) == worker) {
				rc = exit_status(ws);
				logf_("worker command finished: exiting with its exit code %d", rc);
				break;
			}
		}
		pthread_mutex_lock(&sh.mu);
		if (!sh.fresh && !pending) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += 200 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&sh.cond, &sh.mu, &ts);
		}
		bool got = sh.fresh;
		if (got) {
			view = sh.view;
			sh.fresh = false;
		}
		pthread_mutex_unlock(&sh.mu);
		if (!got && !pending)
			continue;
		pending = false;
		struct js_inplace_step step;
		if (js_inplace_agent_step(&view, &st, &step) < 0) {
			logf_("currentInPlaceRestartAttempt %d cannot grow: waiting", (int)view.current);
			continue;
		}
		if (step.patch) {
			if (patch_attempt(client, &e, step.patch_attempt) < 0) {
				pending = true;
				sleep(1);
				continue;
			}
			st.has_attempt = true;
			st.attempt = step.patch_attempt;
			if (js_inplace_agent_step(&view, &st, &step) < 0)
				continue;
		}
		if (step.exit) {
			logf_("pod attempt %d <= previousInPlaceRestartAttempt %d: exiting with %d to restart this Pod "
			      "in place",
			      (int)st.attempt, (int)view.previous, e.exit_code);
			if (worker > 0) {
				kill(-worker, SIGKILL);
				(void)waitpid(worker, NULL, 0);
			}
			rc = e.exit_code;
			break;
		}
		if (step.lift) {
			if (view.bypass)
				logf_("bypassing the barrier: in-place restart disabled or not the JobSet's restart strategy");
			else
				logf_("pod attempt %d is current: lifting the barrier", (int)st.attempt);
			if (e.worker) {
				worker = worker_start(e.worker);
				if (worker < 0) {
					logf_("cannot start the worker command: %s", strerror(errno));
					break;
				}
			} else if ((r = probe_start(&probe, &e)) < 0) {
				logf_("startup probe server on port %d: %s", e.probe_port, strerror(-r));
				break;
			}
			st.barrier_active = false;
		}
	}
	probe_stop(&probe);
out:
	(void)js_informer_stop(inf);
	(void)!js_informer_free(inf);
	js_client_free(client);
	free(fs);
	pthread_cond_destroy(&sh.cond);
	pthread_mutex_destroy(&sh.mu);
	free(e.ns);
	curl_global_cleanup();
	return rc;
}
