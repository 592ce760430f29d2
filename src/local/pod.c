/*
 * pod.c - a pod as processes (see pod.h).
 *
 * Containers live in one array: init containers first (n_init of them), then
 * the regular ones. The pod advances only in js_pod_step(); js_pod_reap()
 * just records exits, so every decision is taken in one place.
 */
#include "local/pod.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/json.h"

/* Longest line kept for the line callback; longer lines are split. */
#define POD_LINE_MAX 8192
/* Default terminationGracePeriodSeconds of core/v1 PodSpec. */
#define POD_DEFAULT_GRACE_S 30
/* Exit code and reason of a container that could not be started, as
 * containerd reports them. */
#define POD_START_ERROR_CODE 128

struct ctr {
	char *name;
	bool init, sidecar;
	char *path;
	char **argv, **envp;
	char *cwd;
	enum js_pod_ctr_state state;
	pid_t pid;
	int out_fd;      /* read end of the output pipe, -1 when closed */
	int log_fd;      /* log file, -1 when closed */
	char *partial;   /* incomplete last line */
	size_t n_partial;
	int32_t exit_code;
	int32_t restarts;
	bool killed;     /* SIGKILL already sent */
	int64_t restart_at_ms; /* -1 = no restart pending */
};

struct js_pod {
	uint64_t id;
	char *name, *namespace_, *uid, *job_name, *hostname, *ip, *hosts_file;
	int32_t index;
	bool on_failure;
	int64_t grace_ms;
	size_t n_ctrs, n_init, next_init;
	struct ctr *ctrs;
	enum js_jobctl_phase phase;
	bool stopping, deleted_by_controller;
	int64_t kill_at_ms, finished_ms;
	char *start_error;
	struct js_net_pod *net;
};

/* ---- environment and templates ---- */

static const char *env_get(char *const *env, size_t n, const char *name)
{
	size_t len = strlen(name);
	for (size_t i = n; i-- > 0;) {
		if (strncmp(env[i], name, len) == 0 && env[i][len] == '=')
			return env[i] + len + 1;
	}
	return NULL;
}

/** Expand $(VAR) against `env` as the kubelet does: $$ is a literal $, an
 * undefined reference stays as written. Caller frees. */
static char *expand(const char *s, char *const *env, size_t n)
{
	struct js_buf b;
	js_buf_init(&b, 0);
	bool ok = true;
	for (const char *p = s; *p && ok;) {
		if (p[0] == '$' && p[1] == '$') {
			ok = js_buf_add(&b, "$", 1) == 0;
			p += 2;
			continue;
		}
		if (p[0] == '$' && p[1] == '(') {
			const char *end = strchr(p + 2, ')');
			if (end) {
				char *name = js_xstrndup(p + 2, (size_t)(end - p - 2));
				const char *v = env_get(env, n, name);
				free(name);
				if (v) {
					ok = js_buf_puts(&b, v) == 0;
					p = end + 1;
					continue;
				}
			}
		}
		ok = js_buf_add(&b, p, 1) == 0;
		p++;
	}
	return js_buf_take(&b);
}

/** `metadata.labels['k']` -> "labels" and k. */
static bool parse_map_ref(const char *path, const char *prefix, char **ret_key)
{
	size_t n = strlen(prefix);
	if (strncmp(path, prefix, n) != 0 || strncmp(path + n, "['", 2) != 0)
		return false;
	const char *k = path + n + 2;
	const char *end = strstr(k, "']");
	if (!end || end[2])
		return false;
	*ret_key = js_xstrndup(k, (size_t)(end - k));
	return true;
}

/** Value of a fieldRef for a pod; NULL (and *ret_ok false) when unsupported. */
static char *field_ref(const json_t *meta, const struct js_pod *pod, const struct js_pod_host *host, const char *sa,
		       const char *path, bool *ret_ok)
{
	char *key = NULL;
	*ret_ok = true;
	if (parse_map_ref(path, "metadata.labels", &key) || parse_map_ref(path, "metadata.annotations", &key)) {
		const char *which = strncmp(path, "metadata.labels", 15) == 0 ? "labels" : "annotations";
		const char *v = js_json_str(json_object_get(meta, which), key);
		free(key);
		return js_xstrdup(v ? v : "");
	}
	if (strcmp(path, "metadata.name") == 0)
		return js_xstrdup(pod ? pod->name : "");
	if (strcmp(path, "metadata.namespace") == 0)
		return js_xstrdup(pod ? pod->namespace_ : "");
	if (strcmp(path, "metadata.uid") == 0)
		return js_xstrdup(pod && pod->uid ? pod->uid : "");
	if (strcmp(path, "status.podIP") == 0 || strcmp(path, "status.podIPs") == 0)
		return js_xstrdup(pod ? pod->ip : "");
	if (strcmp(path, "status.hostIP") == 0 || strcmp(path, "status.hostIPs") == 0)
		return js_xstrdup(host && host->host_ip ? host->host_ip : "127.0.0.1");
	if (strcmp(path, "spec.nodeName") == 0)
		return js_xstrdup(host && host->node_name ? host->node_name : "");
	if (strcmp(path, "spec.serviceAccountName") == 0)
		return js_xstrdup(sa ? sa : "default");
	*ret_ok = false;
	return NULL;
}

static void push(char ***v, size_t *n, char *s)
{
	*v = js_xrealloc(*v, (*n + 2) * sizeof(char *));
	(*v)[(*n)++] = s;
	(*v)[*n] = NULL;
}

static void free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/** Check (pod == NULL) or build one container from its JSON. */
static int build_ctr(const json_t *c, bool init, const json_t *meta, const char *sa, struct js_pod *pod,
		     const struct js_pod_host *host, struct ctr *ret, char **ret_err)
{
	const char *name = js_json_str(c, "name");
	name = name ? name : "";
	const json_t *cmd = json_object_get(c, "command");
	if (!json_is_array(cmd) || json_array_size(cmd) == 0) {
		*ret_err = js_buf_format("container '%s' has no command: the local runtime runs command+args directly "
			       "and does not read the image's entrypoint",
			       name);
		return JS_EINVALID;
	}
	char **env = NULL;
	size_t n_env = 0;
	if (host) {
		push(&env, &n_env, js_buf_format("PATH=%s", host->path_env ? host->path_env : "/usr/bin:/bin"));
		if (host->home_env)
			push(&env, &n_env, js_buf_format("HOME=%s", host->home_env));
		push(&env, &n_env, js_buf_format("HOSTNAME=%s", pod->hostname));
	}
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(c, "env"), i, e)
	{
		const char *en = js_json_str(e, "name");
		const json_t *from = json_object_get(e, "valueFrom");
		char *val = NULL;
		if (from) {
			const char *fp = js_json_str(json_object_get(from, "fieldRef"), "fieldPath");
			bool ok = false;
			if (fp)
				val = field_ref(meta, pod, host, sa, fp, &ok);
			if (!ok) {
				*ret_err = fp ? js_buf_format("container '%s': env '%s': fieldPath '%s' is not supported locally",
						    name, en ? en : "", fp)
					      : js_buf_format("container '%s': env '%s': only valueFrom.fieldRef is supported "
						    "locally (no Secrets, ConfigMaps or resource fields)",
						    name, en ? en : "");
				free_strv(env);
				return JS_EINVALID;
			}
		} else {
			const char *v = js_json_str(e, "value");
			val = env ? expand(v ? v : "", env, n_env) : js_xstrdup("");
		}
		if (env)
			push(&env, &n_env, js_buf_format("%s=%s", en ? en : "", val));
		free(val);
	}
	if (!host) {
		free_strv(env);
		return 0;
	}
	if (pod->index >= 0 && !env_get(env, n_env, "JOB_COMPLETION_INDEX"))
		push(&env, &n_env, js_buf_format("JOB_COMPLETION_INDEX=%d", pod->index));
	memset(ret, 0, sizeof(*ret));
	ret->name = js_xstrdup(name);
	ret->init = init;
	const char *rp = js_json_str(c, "restartPolicy");
	ret->sidecar = init && rp && strcmp(rp, "Always") == 0;
	ret->envp = env;
	size_t n_argv = 0;
	json_t *a;
	json_array_foreach(cmd, i, a)
		push(&ret->argv, &n_argv, expand(json_string_value(a) ? json_string_value(a) : "", env, n_env));
	json_array_foreach(json_object_get(c, "args"), i, a)
		push(&ret->argv, &n_argv, expand(json_string_value(a) ? json_string_value(a) : "", env, n_env));
	const char *wd = js_json_str(c, "workingDir");
	ret->cwd = wd ? js_xstrdup(wd) : NULL;
	ret->pid = -1;
	ret->out_fd = -1;
	ret->log_fd = -1;
	ret->restart_at_ms = -1;
	return 0;
}

/** Resolve the executable as a container runtime would: names with a slash
 * as given, others through $PATH. NULL when not found. Caller frees. */
static char *resolve(const char *arg0, const char *path_env)
{
	if (strchr(arg0, '/'))
		return js_xstrdup(arg0);
	const char *p = path_env ? path_env : "/usr/bin:/bin";
	while (*p) {
		size_t n = strcspn(p, ":");
		char *cand = js_buf_format("%.*s/%s", (int)n, p, arg0);
		if (n && access(cand, X_OK) == 0)
			return cand;
		free(cand);
		p += n;
		if (*p == ':')
			p++;
	}
	return NULL;
}

static int walk_ctrs(const json_t *tmpl, const json_t *meta, struct js_pod *pod, const struct js_pod_host *host,
		     char **ret_err)
{
	const json_t *spec = json_object_get(tmpl, "spec");
	const char *sa = js_json_str(spec, "serviceAccountName");
	static const char *const lists[] = {"initContainers", "containers"};
	for (size_t l = 0; l < 2; l++) {
		size_t i;
		json_t *c;
		json_array_foreach(json_object_get(spec, lists[l]), i, c)
		{
			struct ctr tmp;
			if (build_ctr(c, l == 0, meta, sa, pod, host, &tmp, ret_err) < 0)
				return JS_EINVALID;
			if (!pod)
				continue;
			pod->ctrs = js_xrealloc(pod->ctrs, (pod->n_ctrs + 1) * sizeof(struct ctr));
			pod->ctrs[pod->n_ctrs++] = tmp;
			pod->n_init += l == 0;
		}
	}
	if (json_array_size(json_object_get(spec, "containers")) == 0) {
		*ret_err = js_xstrdup("the pod template has no containers");
		return JS_EINVALID;
	}
	return 0;
}

int js_pod_check_template(const json_t *tmpl, char **ret_err)
{
	return walk_ctrs(tmpl, json_object_get(tmpl, "metadata"), NULL, NULL, ret_err);
}

int js_pod_new(const struct js_pod_init *init, const struct js_pod_host *host, struct js_pod **ret_pod,
	       char **ret_err)
{
	struct js_pod *pod = js_xcalloc(1, sizeof(*pod));
	pod->net = init->net;
	pod->id = init->id;
	pod->name = js_xstrdup(init->name);
	pod->namespace_ = js_xstrdup(init->namespace_);
	pod->uid = init->uid ? js_xstrdup(init->uid) : NULL;
	pod->job_name = js_xstrdup(init->job_name);
	pod->hostname = js_xstrdup(init->hostname);
	pod->ip = js_xstrdup(init->ip);
	pod->hosts_file = init->hosts_file ? js_xstrdup(init->hosts_file) : NULL;
	pod->index = init->index;
	pod->kill_at_ms = -1;
	const json_t *spec = json_object_get(init->tmpl, "spec");
	const char *rp = js_json_str(spec, "restartPolicy");
	pod->on_failure = rp && strcmp(rp, "OnFailure") == 0;
	json_t *g = json_object_get(spec, "terminationGracePeriodSeconds");
	pod->grace_ms = (json_is_integer(g) && json_integer_value(g) >= 0 ? json_integer_value(g)
									   : POD_DEFAULT_GRACE_S) *
			1000;
	pod->phase = JS_JOBCTL_PENDING;
	if (walk_ctrs(init->tmpl, json_object_get(init->tmpl, "metadata"), pod, host, ret_err) < 0) {
		js_pod_free(pod);
		return JS_EINVALID;
	}
	*ret_pod = pod;
	return 0;
}

struct js_pod *js_pod_free(struct js_pod *pod)
{
	if (!pod)
		return NULL;
	for (size_t i = 0; i < pod->n_ctrs; i++) {
		struct ctr *c = &pod->ctrs[i];
		free(c->name);
		free(c->path);
		free_strv(c->argv);
		free_strv(c->envp);
		free(c->cwd);
		free(c->partial);
		if (c->out_fd >= 0)
			close(c->out_fd);
		if (c->log_fd >= 0)
			close(c->log_fd);
	}
	free(pod->ctrs);
	free(pod->name);
	free(pod->namespace_);
	free(pod->uid);
	free(pod->job_name);
	free(pod->hostname);
	free(pod->ip);
	free(pod->hosts_file);
	free(pod->start_error);
	js_net_pod_free(pod->net);
	free(pod);
	return NULL;
}

/* ---- processes ---- */

static void flush_line(struct js_pod *pod, struct ctr *c, const struct js_pod_host *host)
{
	if (c->n_partial && host->on_line)
		host->on_line(host->line_ctx, pod, c->name, c->partial, c->n_partial);
	c->n_partial = 0;
}

static void close_output(struct js_pod *pod, struct ctr *c, const struct js_pod_host *host)
{
	if (c->out_fd >= 0) {
		/* Drain what the process wrote before it exited. */
		(void)js_pod_pump(pod, host, c->out_fd);
		if (c->out_fd >= 0)
			close(c->out_fd);
		c->out_fd = -1;
	}
	flush_line(pod, c, host);
	if (c->log_fd >= 0)
		close(c->log_fd);
	c->log_fd = -1;
}

static int64_t restart_delay(const struct js_pod_host *host, int32_t restarts)
{
	int64_t d = host->restart_base_ms;
	for (int32_t i = 0; i < restarts && d < host->restart_max_ms; i++)
		d *= 2;
	return d < host->restart_max_ms ? d : host->restart_max_ms;
}

/** A container that terminated: decide on a restart. */
static void maybe_restart(struct js_pod *pod, struct ctr *c, const struct js_pod_host *host, int64_t now_ms)
{
	if (pod->stopping || c->state != JS_POD_CTR_TERMINATED || c->restart_at_ms >= 0)
		return;
	bool again = c->sidecar ? pod->phase <= JS_JOBCTL_RUNNING : (pod->on_failure && c->exit_code != 0);
	if (again)
		c->restart_at_ms = now_ms + restart_delay(host, c->restarts);
}

/** A container that could not be started terminates at once with the
 * runtime's start-error exit code (128, reason StartError on containerd), so
 * the pod fails (restartPolicy Never) or the container is restarted after
 * the usual delay (OnFailure, counting toward the Job's backoffLimit), as on
 * a cluster. `msg` is taken. */
static void start_failed(struct js_pod *pod, struct ctr *c, const struct js_pod_host *host, int64_t now_ms,
			 char *msg)
{
	c->state = JS_POD_CTR_TERMINATED;
	c->exit_code = POD_START_ERROR_CODE;
	c->pid = -1;
	if (c->log_fd >= 0) {
		/* The start error is the container's only output. */
		if (write(c->log_fd, msg, strlen(msg)) < 0 || write(c->log_fd, "\n", 1) < 0) {
			/* log write failures are not fatal */
		}
	}
	if (!pod->start_error)
		pod->start_error = msg;
	else
		free(msg);
	/* Decide on a restart now: the caller may look at the pod's phase before
	 * the next step, and nothing else (no exit, no output) will follow. */
	maybe_restart(pod, c, host, now_ms);
}

static void start_ctr(struct js_pod *pod, struct ctr *c, const struct js_pod_host *host, int64_t now_ms)
{
	c->restart_at_ms = -1;
	c->killed = false;
	if (c->log_fd < 0) {
		char *dir = js_buf_format("%s/%s", host->log_dir, pod->name);
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			/* the open below reports it */
		}
		char *file = js_buf_format("%s/%s.log", dir, c->name);
		c->log_fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		free(file);
		free(dir);
	}
	if (!c->path)
		c->path = resolve(c->argv[0], host->path_env);
	if (!c->path) {
		/* The message runc gives for the same mistake. */
		start_failed(pod, c, host, now_ms,
			     js_buf_format("container '%s': exec: \"%s\": executable file not found in $PATH", c->name,
				 c->argv[0]));
		return;
	}
	int netns_fd = -1;
	int nr = pod->net ? js_net_pod_netns(pod->net, &netns_fd) : 0;
	if (nr < 0) {
		start_failed(pod, c, host, now_ms, js_buf_format("container '%s': network: %s", c->name, js_strerror(nr)));
		return;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		start_failed(pod, c, host, now_ms, js_buf_format("container '%s': pipe: %s", c->name, js_strerror(-errno)));
		return;
	}
	struct js_sandbox_spec s = {
		.path = c->path, .argv = c->argv, .envp = c->envp, .cwd = c->cwd, .hostname = pod->hostname,
		.hosts_file = pod->hosts_file, .netns_fd = netns_fd, .out_fd = p[1],
		.death_fd = host->death_fd, .mode = host->mode,
	};
	pid_t pid;
	const char *stage = "spawn";
	int r = js_sandbox_spawn(&s, &pid, &stage);
	close(p[1]);
	if (r < 0) {
		close(p[0]);
		start_failed(pod, c, host, now_ms,
			     strcmp(stage, "exec") == 0
				     ? js_buf_format("container '%s': exec: \"%s\": %s", c->name, c->path, js_strerror(r))
				     : js_buf_format("container '%s': %s: %s", c->name, stage, js_strerror(r)));
		return;
	}
	(void)fcntl(p[0], F_SETFL, O_NONBLOCK);
	c->out_fd = p[0];
	c->pid = pid;
	c->state = JS_POD_CTR_RUNNING;
}

static void signal_ctr(struct ctr *c, const struct js_pod_host *host, int sig)
{
	if (c->state == JS_POD_CTR_RUNNING && c->pid > 0)
		(void)js_sandbox_kill(c->pid, host->mode, sig);
}

bool js_pod_reap(struct js_pod *pod, const struct js_pod_host *host, pid_t pid, int status, int64_t now_ms)
{
	for (size_t i = 0; i < pod->n_ctrs; i++) {
		struct ctr *c = &pod->ctrs[i];
		if (c->pid != pid || c->state != JS_POD_CTR_RUNNING)
			continue;
		c->state = JS_POD_CTR_TERMINATED;
		c->pid = -1;
		c->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		close_output(pod, c, host);
		(void)now_ms;
		return true;
	}
	return false;
}

static bool all_main_done(const struct js_pod *pod, bool *ret_ok)
{
	*ret_ok = true;
	for (size_t i = pod->n_init; i < pod->n_ctrs; i++) {
		const struct ctr *c = &pod->ctrs[i];
		if (c->state != JS_POD_CTR_TERMINATED || c->restart_at_ms >= 0)
			return false;
		if (c->exit_code != 0)
			*ret_ok = false;
	}
	return true;
}

static bool step_init(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms)
{
	bool changed = false;
	while (pod->next_init < pod->n_init) {
		struct ctr *c = &pod->ctrs[pod->next_init];
		if (c->state == JS_POD_CTR_WAITING) {
			start_ctr(pod, c, host, now_ms);
			changed = true;
			continue; /* re-examine: it may have failed to start */
		}
		if (c->state == JS_POD_CTR_RUNNING) {
			if (!c->sidecar)
				return changed;
			pod->next_init++; /* a started sidecar lets the next one go */
			continue;
		}
		if (c->sidecar || c->exit_code == 0) {
			pod->next_init++;
			continue;
		}
		if (!pod->on_failure) {
			pod->phase = JS_JOBCTL_FAILED;
			pod->finished_ms = now_ms;
			return true;
		}
		if (c->restart_at_ms < 0)
			maybe_restart(pod, c, host, now_ms);
		return changed;
	}
	for (size_t i = pod->n_init; i < pod->n_ctrs; i++)
		start_ctr(pod, &pod->ctrs[i], host, now_ms);
	pod->phase = JS_JOBCTL_RUNNING;
	return true;
}

static bool step(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms)
{
	bool changed = false;
	if (pod->stopping) {
		if (pod->kill_at_ms >= 0 && now_ms >= pod->kill_at_ms) {
			for (size_t i = 0; i < pod->n_ctrs; i++) {
				if (pod->ctrs[i].state == JS_POD_CTR_RUNNING && !pod->ctrs[i].killed) {
					signal_ctr(&pod->ctrs[i], host, SIGKILL);
					pod->ctrs[i].killed = true;
				}
			}
		}
		if (pod->phase <= JS_JOBCTL_RUNNING && js_pod_gone(pod)) {
			bool ok;
			pod->phase = all_main_done(pod, &ok) && ok ? JS_JOBCTL_SUCCEEDED : JS_JOBCTL_FAILED;
			pod->finished_ms = now_ms;
			changed = true;
		}
		return changed;
	}
	/* Restarts that are due. */
	for (size_t i = 0; i < pod->n_ctrs; i++) {
		struct ctr *c = &pod->ctrs[i];
		maybe_restart(pod, c, host, now_ms);
		if (c->state == JS_POD_CTR_TERMINATED && c->restart_at_ms >= 0 && now_ms >= c->restart_at_ms &&
		    pod->phase <= JS_JOBCTL_RUNNING) {
			c->restarts++;
			c->state = JS_POD_CTR_WAITING;
			c->restart_at_ms = -1;
			if (!c->init || c->sidecar || pod->phase == JS_JOBCTL_PENDING)
				start_ctr(pod, c, host, now_ms);
			changed = true;
		}
	}
	if (pod->phase == JS_JOBCTL_PENDING)
		changed |= step_init(pod, host, now_ms);
	if (pod->phase == JS_JOBCTL_RUNNING) {
		bool ok;
		if (all_main_done(pod, &ok)) {
			pod->phase = ok ? JS_JOBCTL_SUCCEEDED : JS_JOBCTL_FAILED;
			pod->finished_ms = now_ms;
			changed = true;
		}
	}
	if (pod->phase >= JS_JOBCTL_SUCCEEDED && !js_pod_gone(pod)) {
		/* Main containers are done: sidecars go, with the grace period. */
		for (size_t i = 0; i < pod->n_ctrs; i++)
			signal_ctr(&pod->ctrs[i], host, SIGTERM);
		pod->stopping = true;
		pod->kill_at_ms = now_ms + pod->grace_ms;
		changed = true;
	}
	return changed;
}

bool js_pod_step(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms)
{
	bool changed = step(pod, host, now_ms);
	/* A terminal pod with no process left has no use for its network; its
	 * address may be wanted by the pod that replaces it. */
	if (pod->phase >= JS_JOBCTL_SUCCEEDED && js_pod_gone(pod))
		js_net_pod_release(pod->net);
	return changed;
}

void js_pod_delete_within(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms, int64_t grace_ms)
{
	int64_t at = now_ms + (grace_ms < pod->grace_ms ? grace_ms : pod->grace_ms);
	if (pod->stopping) {
		if (pod->kill_at_ms < 0 || at < pod->kill_at_ms)
			pod->kill_at_ms = at;
		return;
	}
	pod->stopping = true;
	pod->kill_at_ms = at;
	for (size_t i = 0; i < pod->n_ctrs; i++) {
		pod->ctrs[i].restart_at_ms = -1;
		signal_ctr(&pod->ctrs[i], host, pod->grace_ms == 0 ? SIGKILL : SIGTERM);
	}
}

void js_pod_delete(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms, bool by_controller)
{
	if (!pod->stopping && pod->phase <= JS_JOBCTL_RUNNING)
		pod->deleted_by_controller = by_controller;
	js_pod_delete_within(pod, host, now_ms, pod->grace_ms);
}

bool js_pod_gone(const struct js_pod *pod)
{
	for (size_t i = 0; i < pod->n_ctrs; i++) {
		if (pod->ctrs[i].state == JS_POD_CTR_RUNNING)
			return false;
	}
	return true;
}

int64_t js_pod_wake(const struct js_pod *pod)
{
	int64_t w = -1;
	/* The kill deadline matters until SIGKILL is sent; after that only the
	 * exits are awaited (SIGCHLD), and a past deadline would spin the loop. */
	for (size_t i = 0; pod->stopping && pod->kill_at_ms >= 0 && i < pod->n_ctrs; i++) {
		if (pod->ctrs[i].state == JS_POD_CTR_RUNNING && !pod->ctrs[i].killed)
			w = pod->kill_at_ms;
	}
	for (size_t i = 0; i < pod->n_ctrs; i++) {
		int64_t r = pod->ctrs[i].restart_at_ms;
		if (r >= 0 && !pod->stopping && (w < 0 || r < w))
			w = r;
	}
	return w;
}

size_t js_pod_n_fds(const struct js_pod *pod)
{
	size_t n = 0;
	for (size_t i = 0; i < pod->n_ctrs; i++)
		n += pod->ctrs[i].out_fd >= 0;
	return n;
}

size_t js_pod_fill_pollfds(const struct js_pod *pod, struct pollfd *fds)
{
	size_t n = 0;
	for (size_t i = 0; i < pod->n_ctrs; i++) {
		if (pod->ctrs[i].out_fd >= 0)
			fds[n++] = (struct pollfd){.fd = pod->ctrs[i].out_fd, .events = POLLIN};
	}
	return n;
}

static void emit(struct js_pod *pod, struct ctr *c, const struct js_pod_host *host, const char *data, size_t n)
{
	if (!host->on_line)
		return;
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data) : n;
		if (c->n_partial + take > POD_LINE_MAX)
			take = POD_LINE_MAX - c->n_partial;
		c->partial = js_xrealloc(c->partial, c->n_partial + take + 1);
		memcpy(c->partial + c->n_partial, data, take);
		c->n_partial += take;
		data += take;
		n -= take;
		if (nl && n > 0 && *data == '\n') {
			data++;
			n--;
			flush_line(pod, c, host);
		} else if (c->n_partial >= POD_LINE_MAX) {
			flush_line(pod, c, host);
		}
	}
}

bool js_pod_pump(struct js_pod *pod, const struct js_pod_host *host, int fd)
{
	for (size_t i = 0; i < pod->n_ctrs; i++) {
		struct ctr *c = &pod->ctrs[i];
		if (c->out_fd != fd)
			continue;
		char buf[16384];
		for (;;) {
			ssize_t n = read(fd, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				break;
			if (n <= 0) {
				close(c->out_fd);
				c->out_fd = -1;
				break;
			}
			if (c->log_fd >= 0 && write(c->log_fd, buf, (size_t)n) < 0) {
				/* a full disk loses log lines, not the run */
			}
			emit(pod, c, host, buf, (size_t)n);
		}
		return true;
	}
	return false;
}

void js_pod_observe(const struct js_pod *pod, struct js_jobctl_exit *exits, struct js_jobctl_pod *ret)
{
	size_t n = 0;
	/* Regular containers first, then init containers, as the Job
	 * controller scans them. */
	for (size_t pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < pod->n_ctrs; i++) {
			const struct ctr *c = &pod->ctrs[i];
			if ((pass == 0) == c->init || c->state != JS_POD_CTR_TERMINATED)
				continue;
			exits[n++] = (struct js_jobctl_exit){c->name, c->exit_code};
		}
	}
	*ret = (struct js_jobctl_pod){
		.id = pod->id, .name = pod->name, .index = pod->index, .phase = pod->phase,
		.ready = js_pod_ready(pod), .terminating = pod->stopping && pod->phase <= JS_JOBCTL_RUNNING,
		.deleted_by_controller = pod->deleted_by_controller, .restarts = js_pod_restarts(pod),
		.finished_ms = pod->finished_ms, .exits = exits, .n_exits = n,
	};
}

size_t js_pod_n_containers(const struct js_pod *pod)
{
	return pod->n_ctrs;
}

const char *js_pod_name(const struct js_pod *pod)
{
	return pod->name;
}

const char *js_pod_job_name(const struct js_pod *pod)
{
	return pod->job_name;
}

uint64_t js_pod_id(const struct js_pod *pod)
{
	return pod->id;
}

int32_t js_pod_index(const struct js_pod *pod)
{
	return pod->index;
}

enum js_jobctl_phase js_pod_phase(const struct js_pod *pod)
{
	return pod->phase;
}

int32_t js_pod_restarts(const struct js_pod *pod)
{
	int32_t r = 0;
	for (size_t i = 0; i < pod->n_ctrs; i++)
		r += pod->ctrs[i].restarts;
	return r;
}

int32_t js_pod_max_restarts(const struct js_pod *pod)
{
	int32_t m = 0;
	for (size_t i = 0; i < pod->n_ctrs; i++) {
		if (pod->ctrs[i].restarts > m)
			m = pod->ctrs[i].restarts;
	}
	return m;
}

bool js_pod_ready(const struct js_pod *pod)
{
	if (pod->phase != JS_JOBCTL_RUNNING || pod->stopping)
		return false;
	for (size_t i = 0; i < pod->n_ctrs; i++) {
		const struct ctr *c = &pod->ctrs[i];
		if ((!c->init || c->sidecar) && c->state != JS_POD_CTR_RUNNING)
			return false;
	}
	return true;
}

const char *js_pod_start_error(const struct js_pod *pod)
{
	return pod->start_error;
}

const char *js_pod_ctr_name(const struct js_pod *pod, size_t i)
{
	return pod->ctrs[i].name;
}

char *const *js_pod_ctr_argv(const struct js_pod *pod, size_t i)
{
	return pod->ctrs[i].argv;
}

char *const *js_pod_ctr_envp(const struct js_pod *pod, size_t i)
{
	return pod->ctrs[i].envp;
}
