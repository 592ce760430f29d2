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
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/time.h"
#include "local/container.h"
#include "local/gpu.h"
#include "local/volumes.h"
#include "local/podlog.h"

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
	json_t *json;    /* the container's template (volumeMounts) */
	size_t n_cmd;    /* argv[0..n_cmd) is `command`, the rest `args` */
	char **gpus;     /* its GPU ids (NULL-terminated), or NULL */
	char *runtime_name; /* container mode: its name for the runtime */
	char *pidfile;   /* ... podman: where it writes the container's pid once
			    the container runs, or NULL */
	int32_t create_failures;   /* ... runs the runtime failed to create */
	int64_t create_retry_at_ms; /* ... the next try after one, or -1 */
	struct js_mounts *mounts; /* its volume mounts, planned at each start */
	enum js_pod_ctr_state state;
	pid_t pid;
	int out_fd;      /* read end of the output pipe, -1 when closed */
	int exec_fd;     /* report pipe until the start is known, else -1 */
	int exec_err;    /* a step before the exec failed: -errno ... */
	const char *exec_stage; /* ... at this step (static) */
	struct js_podlog *log; /* NULL when closed */
	char *partial;   /* incomplete last line */
	size_t n_partial;
	int32_t exit_code;
	int sig;         /* signal that ended it, 0 for an exit */
	char *image;
	char *message;   /* start error of the current run, or NULL */
	int64_t started_wall_ms, finished_wall_ms;
	bool has_last;   /* the run before the last restart: */
	struct js_pod_ctr_term last;
	char *last_message;
	int32_t restarts;
	bool killed;     /* SIGKILL already sent */
	int64_t restart_at_ms; /* -1 = no restart pending */
};

struct js_pod {
	uint64_t id;
	char *job_uid, *subdomain, *workdir, *dis_reason, *dis_message;
	const char *dis_type;    /* the condition a stop set (static), with
				    dis_reason: DisruptionTarget or
				    ProgressDeadlineExceeded */
	json_t *tmpl;
	int64_t created_wall_ms, started_wall_ms, finished_wall_ms, deleted_wall_ms, dis_wall_ms;
	bool initialized;
	char *name, *namespace_, *uid, *job_name, *hostname, *ip, *hosts_file;
	int32_t index;
	bool on_failure;
	int64_t grace_ms;
	size_t n_ctrs, n_init, next_init;
	struct ctr *ctrs;
	enum js_jobctl_phase phase;
	bool stopping;
	enum js_pod_stop stop;
	int64_t kill_at_ms, finished_ms;
	int64_t deleted_ms;      /* monotonic: when a stop of it running began */
	char *start_error;
	struct js_net_pod *net;
	struct js_volumes_pod *vols;
	const char *const *gpus; /* borrowed from js_pod_init during js_pod_new */
	bool runtime_pod;        /* container mode: the runtime's pod exists */
	bool sandbox_asked;      /* ... or is being made */
	bool ctr_mode;           /* container mode: it has a runtime's pod */
	int32_t sandbox_failures;   /* ... attempts to make it that failed */
	int64_t sandbox_retry_at_ms; /* ... the next attempt after one, or -1 */
	bool in_place;           /* in-place restart (pod.h) */
	bool restarting;         /* ... containers being killed for it */
	bool held;               /* ... waiting at the barrier */
	struct js_inplace_agent agent;
	size_t gpu_cursor;       /* the next GPU of gpus for a regular container */
};

static void stop(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms, int64_t grace_ms,
		 enum js_pod_stop why);

/* Wall clock, Unix ms: only for the timestamps of the pod's status. */
static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *js_pod_exit_reason(int32_t exit_code, bool start_error)
{
	return start_error ? "StartError" : exit_code == 0 ? "Completed" : "Error";
}

/* "exit code 3 (Error)", "killed by SIGKILL (exit code 137)". */
static void exit_text(int32_t code, int sig, bool start_error, char *buf, size_t n)
{
	const char *abbrev = sig ? sigabbrev_np(sig) : NULL;
	if (abbrev)
		snprintf(buf, n, "killed by SIG%s (exit code %d)", abbrev, code);
	else
		snprintf(buf, n, "exit code %d (%s)", code, js_pod_exit_reason(code, start_error));
}

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

/* envFrom's variables go into the environment being built. */
struct env_acc {
	char ***env;
	size_t *n;
};

static void add_env(void *ctx, const char *name, const char *value)
{
	struct env_acc *a = ctx;
	push(a->env, a->n, js_buf_format("%s=%s", name, value));
}

/** Check (pod == NULL) or build one container from its JSON. */
static int build_ctr(const json_t *c, bool init, const json_t *meta, const char *sa, struct js_pod *pod,
		     const struct js_pod_host *host, bool images, struct ctr *ret, char **ret_err)
{
	const char *name = js_json_str(c, "name");
	name = name ? name : "";
	const json_t *cmd = json_object_get(c, "command");
	/* Container mode runs the image's ENTRYPOINT when there is no command. */
	if (!images && (!json_is_array(cmd) || json_array_size(cmd) == 0)) {
		*ret_err = js_buf_format("container '%s' has no command: the local runtime runs command+args directly "
			       "and does not read the image's entrypoint",
			       name);
		return JS_EINVALID;
	}
	char **env = NULL, **gpus = NULL;
	size_t n_env = 0, n_gpus = 0;
	if (host) {
		/* An image has its own PATH and HOME. */
		if (!images)
			push(&env, &n_env, js_buf_format("PATH=%s", host->path_env ? host->path_env : "/usr/bin:/bin"));
		if (host->home_env && !images)
			push(&env, &n_env, js_buf_format("HOME=%s", host->home_env));
		push(&env, &n_env, js_buf_format("HOSTNAME=%s", pod->hostname));
		if (host->hosts_env)
			push(&env, &n_env, js_buf_format("JOBSET_HOSTS_FILE=%s", host->hosts_env));
		const char **mine = js_gpu_ctr_devices(c, init, pod->gpus, &pod->gpu_cursor);
		if (mine && !images) {
			/* The device plugin's variable, and CUDA's for processes;
			 * containers get CDI devices instead (start_container). */
			char *list = js_gpu_join(mine);
			push(&env, &n_env, js_buf_format("CUDA_VISIBLE_DEVICES=%s", list));
			push(&env, &n_env, js_buf_format("NVIDIA_VISIBLE_DEVICES=%s", list));
			free(list);
		}
		for (size_t k = 0; mine && mine[k]; k++)
			push(&gpus, &n_gpus, js_xstrdup(mine[k]));
		free(mine);
		struct env_acc acc = {&env, &n_env};
		char *err = NULL;
		if (js_objects_env_from(host->objects, json_object_get(c, "envFrom"), add_env, &acc, &err) < 0) {
			*ret_err = js_buf_format("container '%s': %s", name, err);
			free(err);
			free_strv(env);
			return JS_EINVALID;
		}
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
			char *oerr = NULL;
			int orr = fp ? JS_ENOTFOUND : !host ? 0 : js_objects_env_value(host->objects, from, &val, &oerr);
			if (orr == JS_EINVALID) {
				*ret_err = js_buf_format("container '%s': env '%s': %s", name, en ? en : "", oerr);
				free(oerr);
				free_strv(env);
				return JS_EINVALID;
			}
			ok |= orr == 0 && (json_object_get(from, "configMapKeyRef") || json_object_get(from, "secretKeyRef"));
			if (ok && !val && env)
				continue; /* an optional reference to nothing: not set */
			if (!ok) {
				*ret_err = fp ? js_buf_format("container '%s': env '%s': fieldPath '%s' is not supported locally",
						    name, en ? en : "", fp)
					      : js_buf_format("container '%s': env '%s': only valueFrom.fieldRef, "
						    "configMapKeyRef and secretKeyRef are supported locally (no resource fields)",
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
		free_strv(gpus);
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
	/* A relative workingDir is taken from the pod's working directory, as
	 * the one place the pod's files go (docs/local.md); an image has its
	 * own file system and WORKDIR. */
	if (images)
		ret->cwd = wd ? js_xstrdup(wd) : NULL;
	else if (wd && wd[0] != '/' && pod->workdir)
		ret->cwd = js_buf_format("%s/%s", pod->workdir, wd);
	else
		ret->cwd = wd ? js_xstrdup(wd) : pod->workdir ? js_xstrdup(pod->workdir) : NULL;
	const char *image = js_json_str(c, "image");
	ret->image = js_xstrdup(image ? image : "");
	ret->json = json_incref(js_json_unconst(c));
	ret->n_cmd = json_array_size(cmd);
	ret->gpus = gpus;
	ret->pid = -1;
	ret->out_fd = -1;
	ret->exec_fd = -1;
	ret->restart_at_ms = -1;
	ret->create_retry_at_ms = -1;
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

static int walk_ctrs(const json_t *tmpl, const json_t *meta, struct js_pod *pod, const struct js_pod_host *host, bool images,
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
			if (build_ctr(c, l == 0, meta, sa, pod, host, images, &tmp, ret_err) < 0)
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
	return walk_ctrs(tmpl, json_object_get(tmpl, "metadata"), NULL, NULL, false, ret_err);
}

int js_pod_check_template_images(const json_t *tmpl, char **ret_err)
{
	return walk_ctrs(tmpl, json_object_get(tmpl, "metadata"), NULL, NULL, true, ret_err);
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
	pod->job_uid = init->job_uid ? js_xstrdup(init->job_uid) : NULL;
	pod->subdomain = init->subdomain ? js_xstrdup(init->subdomain) : NULL;
	pod->workdir = init->workdir ? js_xstrdup(init->workdir) : NULL;
	pod->tmpl = json_incref(js_json_unconst(init->tmpl));
	pod->created_wall_ms = wall_ms();
	pod->kill_at_ms = -1;
	pod->sandbox_retry_at_ms = -1;
	pod->ctr_mode = host->ctrt != NULL;
	const json_t *spec = json_object_get(init->tmpl, "spec");
	const char *rp = js_json_str(spec, "restartPolicy");
	pod->on_failure = rp && strcmp(rp, "OnFailure") == 0;
	json_t *g = json_object_get(spec, "terminationGracePeriodSeconds");
	/* Any int64 (the schema's range), saturated: INT64_MAX seconds is a
	 * grace period that never ends (issue 22: it once wrapped negative,
	 * which read as "never kill" even after a second interrupt). Negative
	 * is 1 s, as the API server sets it (Kubernetes 1.27, #115606);
	 * absent or not an integer, the default. */
	json_int_t gs = json_is_integer(g) ? json_integer_value(g) : POD_DEFAULT_GRACE_S;
	pod->grace_ms = js_sat_s_to_ms(gs < 0 ? 1 : gs);
	pod->phase = JS_JOBCTL_PENDING;
	pod->in_place = pod->held = init->in_place;
	pod->agent = (struct js_inplace_agent){.barrier_active = true};
	pod->gpus = init->gpus;
	int r = walk_ctrs(init->tmpl, json_object_get(init->tmpl, "metadata"), pod, host, host->ctrt != NULL, ret_err);
	pod->gpus = NULL;
	if (r == 0 && host->run_dir)
		r = js_volumes_pod_new(spec, host->run_dir, pod->name, host->objects, &pod->vols, ret_err);
	if (r < 0) {
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
		json_decref(c->json);
		js_mounts_free(c->mounts);
		free_strv(c->gpus);
		free(c->runtime_name);
		free(c->pidfile);
		free(c->partial);
		free(c->image);
		free(c->message);
		free(c->last_message);
		if (c->out_fd >= 0)
			close(c->out_fd);
		if (c->exec_fd >= 0)
			close(c->exec_fd);
		js_podlog_free(c->log);
	}
	free(pod->ctrs);
	free(pod->job_uid);
	free(pod->subdomain);
	free(pod->workdir);
	free(pod->dis_reason);
	free(pod->dis_message);
	json_decref(pod->tmpl);
	free(pod->name);
	free(pod->namespace_);
	free(pod->uid);
	free(pod->job_name);
	free(pod->hostname);
	free(pod->ip);
	free(pod->hosts_file);
	free(pod->start_error);
	js_net_pod_free(pod->net);
	js_volumes_pod_free(pod->vols);
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
	c->log = js_podlog_free(c->log);
}

static int64_t restart_delay(const struct js_pod_host *host, int32_t restarts)
{
	int64_t d = host->restart_base_ms;
	for (int32_t i = 0; i < restarts && d < host->restart_max_ms; i++)
		d = js_sat_mul(d, 2);
	return d < host->restart_max_ms ? d : host->restart_max_ms;
}

/** Append to the container's log, opening it (and its pod's log directory)
 * at the first bytes: a silent container costs no files, and starting many
 * pods touches no file system for their logs (docs/local.md). */
static void log_write(const struct js_pod *pod, struct ctr *c, const struct js_pod_host *host, const void *data,
		      size_t n)
{
	if (!c->log) {
		char *dir = js_buf_format("%s/%s", host->log_dir, pod->name);
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			/* the open below reports it */
		}
		char *file = js_buf_format("%s/%s.log", dir, c->name);
		if (js_podlog_open(file, host->log_max_bytes ? host->log_max_bytes : JS_PODLOG_DEFAULT_MAX_BYTES,
				   host->log_max_files ? host->log_max_files : JS_PODLOG_DEFAULT_MAX_FILES, &c->log) < 0)
			c->log = NULL; /* the output is still read, and dropped */
		free(file);
		free(dir);
	}
	if (c->log)
		js_podlog_write(c->log, data, n);
}

/** A container that terminated: decide on a restart. */
static void maybe_restart(struct js_pod *pod, struct ctr *c, const struct js_pod_host *host, int64_t now_ms)
{
	if (pod->stopping || c->state != JS_POD_CTR_TERMINATED || c->restart_at_ms >= 0)
		return;
	bool again = c->sidecar ? pod->phase <= JS_JOBCTL_RUNNING : (pod->on_failure && c->exit_code != 0);
	if (!again)
		return;
	int64_t delay = restart_delay(host, c->restarts);
	c->restart_at_ms = js_sat_add(now_ms, delay);
	if (host->on_note) {
		char how[64];
		exit_text(c->exit_code, c->sig, c->message != NULL, how, sizeof(how));
		char *msg = js_buf_format("back-off %lld ms restarting %s container %s (restart %d): %s",
					  (long long)delay, c->sidecar ? "sidecar" : "failed", c->name, c->restarts + 1,
					  how);
		host->on_note(host->note_ctx, pod, "Warning", "BackOff", msg);
		free(msg);
	}
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
	c->sig = 0;
	c->pid = -1;
	c->started_wall_ms = c->finished_wall_ms = wall_ms();
	free(c->message);
	c->message = js_xstrdup(msg);
	/* The start error is the container's only output. */
	log_write(pod, c, host, msg, strlen(msg));
	log_write(pod, c, host, "\n", 1);
	if (!pod->start_error)
		pod->start_error = msg;
	else
		free(msg);
	/* Decide on a restart now: the caller may look at the pod's phase before
	 * the next step, and nothing else (no exit, no output) will follow. */
	maybe_restart(pod, c, host, now_ms);
}

/** The message for a container that could not start at `stage`. */
static char *start_error_text(const struct ctr *c, const char *stage, int err)
{
	return strcmp(stage, "exec") == 0 ? js_buf_format("container '%s': exec: \"%s\": %s", c->name, c->path,
							  js_strerror(err))
					  : js_buf_format("container '%s': %s: %s", c->name, stage, js_strerror(err));
}

/** Read the report pipe of a started container, if it has news: an exec
 * closes it; a failed step is kept for js_pod_reap (the process exits
 * right after reporting it). */
static void exec_news(struct ctr *c)
{
	const char *stage = "report";
	int r = js_sandbox_started(c->exec_fd, &stage);
	if (r == -EAGAIN)
		return;
	close(c->exec_fd);
	c->exec_fd = -1;
	c->exec_err = r;
	c->exec_stage = stage;
}

/** Start container `c` as `s` says, its output into a new pipe. No
 * waiting for the exec: the next container starts while this one sets up;
 * its report pipe says later how the start went. */
static void spawn_ctr(struct js_pod *pod, struct ctr *c, const struct js_pod_host *host, int64_t now_ms,
		      struct js_sandbox_spec *s)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		start_failed(pod, c, host, now_ms, js_buf_format("container '%s': pipe: %s", c->name, js_strerror(-errno)));
		return;
	}
	s->out_fd = p[1];
	pid_t pid;
	const char *stage = "spawn";
	int report_fd = -1;
	int r = js_sandbox_start(s, &pid, &report_fd, &stage);
	close(p[1]);
	if (r < 0) {
		close(p[0]);
		start_failed(pod, c, host, now_ms, start_error_text(c, stage, r));
		return;
	}
	(void)fcntl(p[0], F_SETFL, O_NONBLOCK);
	c->exec_fd = report_fd;
	c->out_fd = p[0];
	c->pid = pid;
	c->state = JS_POD_CTR_RUNNING;
	c->started_wall_ms = wall_ms();
	c->finished_wall_ms = 0;
	c->sig = 0;
	free(c->message);
	c->message = NULL;
}

/** Container mode (local/container.h): the container is the runtime's
 * client in the foreground, in no namespace of ours (the runtime makes
 * them); the pod was made before its first container (make_sandbox). */
static void start_container(struct js_pod *pod, struct ctr *c, const struct js_pod_host *host, int64_t now_ms)
{
	char *err = NULL;
	struct js_volumes_binds b;
	if (js_volumes_ctr_binds(pod->vols, c->json, &b, &err) < 0) {
		start_failed(pod, c, host, now_ms, js_buf_format("container '%s': mount: %s", c->name, err));
		free(err);
		return;
	}
	if (!c->path)
		c->path = resolve(js_container_path(host->ctrt), host->path_env);
	free(c->runtime_name);
	/* A new name for each try after the runtime failed to create one: a
	 * half-made container may still hold the previous name. */
	c->runtime_name = c->create_failures ? js_buf_format("%s-%s-%d-%d", pod->name, c->name, c->restarts, c->create_failures)
					     : js_buf_format("%s-%s-%d", pod->name, c->name, c->restarts);
	free(c->pidfile);
	c->pidfile = NULL;
	if (host->run_dir && js_container_kind(host->ctrt) == JS_CONTAINER_PODMAN) {
		char *dir = js_buf_format("%s/containers", host->run_dir);
		if (mkdir(dir, 0755) == 0 || errno == EEXIST) {
			c->pidfile = js_buf_format("%s/%s.pid", dir, c->runtime_name);
			(void)unlink(c->pidfile); /* an earlier try's */
		}
		free(dir);
	}
	c->create_retry_at_ms = -1;
	size_t n_argv = 0;
	while (c->argv && c->argv[n_argv])
		n_argv++;
	/* The first regular container carries the pod's address (docker). */
	bool own_ip = c->init || c == &pod->ctrs[pod->n_init];
	struct js_container_run r = {
		.name = c->runtime_name, .pod = pod->name, .ip = pod->ip, .own_ip = own_ip, .hostname = pod->hostname,
		.hosts_file = pod->hosts_file, .image = c->image ? c->image : "", .command = c->n_cmd ? c->argv : NULL,
		.n_command = c->n_cmd, .args = c->argv ? c->argv + c->n_cmd : NULL, .n_args = n_argv - c->n_cmd,
		.env = c->envp, .working_dir = c->cwd, .mounts = b.specs, .n_mounts = b.n,
		.gpus = (const char *const *)c->gpus, .pidfile = c->pidfile,
	};
	char **argv = js_container_argv(js_container_kind(host->ctrt), js_container_network(host->ctrt),
					js_container_network(host->ctrt), &r);
	extern char **environ;
	struct js_sandbox_spec s = {
		.path = c->path ? c->path : js_container_path(host->ctrt), .argv = argv, .envp = environ,
		.netns_fd = -1, .death_fd = host->death_fd, .mode = JS_SANDBOX_NONE,
	};
	spawn_ctr(pod, c, host, now_ms, &s);
	js_container_argv_free(argv);
	js_volumes_binds_done(&b);
}

static void start_ctr(struct js_pod *pod, struct ctr *c, const struct js_pod_host *host, int64_t now_ms)
{
	c->restart_at_ms = -1;
	c->killed = false;
	if (!pod->started_wall_ms)
		pod->started_wall_ms = wall_ms();
	if (host->ctrt) {
		start_container(pod, c, host, now_ms);
		return;
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
	c->mounts = js_mounts_free(c->mounts);
	if (js_volumes_ctr_has_mounts(c->json)) {
		char *merr = NULL;
		if (host->mode == JS_SANDBOX_NONE)
			merr = js_xstrdup("volume mounts need a mount namespace, and namespaces are not available "
					  "(degraded mode)");
		else if (js_volumes_ctr_mounts(pod->vols, c->json, host->scratch_dir, &c->mounts, &merr) == 0)
			merr = NULL;
		if (merr) {
			start_failed(pod, c, host, now_ms, js_buf_format("container '%s': mount: %s", c->name, merr));
			free(merr);
			return;
		}
	}
	int netns_fd = -1;
	int nr = pod->net ? js_net_pod_netns(pod->net, &netns_fd) : 0;
	if (nr < 0) {
		start_failed(pod, c, host, now_ms, js_buf_format("container '%s': network: %s", c->name, js_strerror(nr)));
		return;
	}
	struct js_sandbox_spec s = {
		.path = c->path, .argv = c->argv, .envp = c->envp, .cwd = c->cwd, .hostname = pod->hostname,
		.hosts_file = pod->hosts_file, .mounts = c->mounts, .netns_fd = netns_fd,
		.death_fd = host->death_fd, .mode = host->mode,
	};
	spawn_ctr(pod, c, host, now_ms, &s);
}

static void signal_ctr(struct ctr *c, const struct js_pod_host *host, int sig)
{
	if (c->state != JS_POD_CTR_RUNNING || c->pid <= 0)
		return;
	/* A container's client forwards SIGTERM; killing the client would
	 * leave the container running, so SIGKILL goes through the runtime. */
	if (host->ctrt && sig == SIGKILL && c->runtime_name)
		js_container_kill(host->ctrt, c->runtime_name);
	else
		(void)js_sandbox_kill(c->pid, host->ctrt ? JS_SANDBOX_NONE : host->mode, sig);
}

/* podman's exit status for its own errors (podman-run(1)). */
#define POD_RUNTIME_ERROR_CODE 125

/** Whether a container's client exited with the runtime's own error before
 * the container ran: podman writes the pidfile once the container's process
 * exists, so 125 without it is podman's failure (creating the container,
 * the OCI runtime), and 125 with it the workload's own exit code. */
static bool never_ran(const struct js_pod *pod, const struct ctr *c)
{
	return c->pidfile && !pod->stopping && !c->killed && c->sig == 0 && c->exit_code == POD_RUNTIME_ERROR_CODE &&
	       access(c->pidfile, F_OK) != 0 && errno == ENOENT;
}

/** The runtime failed to create container `c`: the runtime's error, not
 * the workload's, so it counts for nothing (no restart, no failure); the
 * container waits and is started again after the back-off, as the kubelet
 * retries a container it could not create (CreateContainerError). */
static void create_failed(struct js_pod *pod, struct ctr *c, const struct js_pod_host *host, int64_t now_ms)
{
	int64_t delay = restart_delay(host, c->create_failures++);
	c->state = JS_POD_CTR_WAITING;
	c->exit_code = 0;
	c->create_retry_at_ms = js_sat_add(now_ms, delay);
	if (host->on_note) {
		char *msg = js_buf_format("container %s: %s could not create it (exit code %d before the container "
					  "ran; its message is in the container's log); attempt %d, retrying in %lld ms",
					  c->name, js_container_path(host->ctrt), POD_RUNTIME_ERROR_CODE,
					  c->create_failures, (long long)delay);
		host->on_note(host->note_ctx, pod, "Warning", "CreateContainerError", msg);
		free(msg);
	}
}

bool js_pod_reap(struct js_pod *pod, const struct js_pod_host *host, pid_t pid, int status, int64_t now_ms)
{
	for (size_t i = 0; i < pod->n_ctrs; i++) {
		struct ctr *c = &pod->ctrs[i];
		if (c->pid != pid || c->state != JS_POD_CTR_RUNNING)
			continue;
		if (c->exec_fd >= 0)
			exec_news(c); /* written before it exited: final now */
		if (c->exec_err) {
			/* It never ran: a start error, as if found at spawn. */
			int err = c->exec_err;
			c->exec_err = 0;
			start_failed(pod, c, host, now_ms, start_error_text(c, c->exec_stage, err));
			close_output(pod, c, host);
			return true;
		}
		c->state = JS_POD_CTR_TERMINATED;
		c->pid = -1;
		c->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		c->sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
		c->finished_wall_ms = wall_ms();
		close_output(pod, c, host);
		if (never_ran(pod, c))
			create_failed(pod, c, host, now_ms);
		return true;
	}
	return false;
}

/** A restart is due: the run that ended becomes lastState. */
static void keep_last(struct ctr *c)
{
	c->has_last = true;
	c->last = (struct js_pod_ctr_term){
		.exit_code = c->exit_code, .signal = c->sig, .started_ms = c->started_wall_ms,
		.finished_ms = c->finished_wall_ms,
	};
	free(c->last_message);
	c->last_message = c->message;
	c->message = NULL;
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
		if (c->state == JS_POD_CTR_WAITING && c->create_retry_at_ms > now_ms)
			return changed; /* js_pod_wake has the deadline */
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
			pod->finished_wall_ms = wall_ms();
			return true;
		}
		if (c->restart_at_ms < 0)
			maybe_restart(pod, c, host, now_ms);
		return changed;
	}
	pod->initialized = true;
	for (size_t i = pod->n_init; i < pod->n_ctrs; i++)
		start_ctr(pod, &pod->ctrs[i], host, now_ms);
	pod->phase = JS_JOBCTL_RUNNING;
	return true;
}

static bool step_in_place(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms, bool *changed);

/**
 * Container mode: make the runtime's pod (its sandbox) before any of its
 * containers starts, as the kubelet does. The runtime makes it in child
 * processes the runner's loop reaps (local/container.h), so the loop goes
 * on with signals, output and other pods meanwhile, and the pod stays
 * pending (ContainerCreating) until it is made. Not before its address is
 * free: an older pod at the same position may still hold it, being stopped
 * or removed (the runtime's IPAM would refuse it), and the pod waits,
 * pending, until that removal is reaped. A sandbox the runtime fails to
 * make is the runtime's failure, not the workload's: the pod stays pending
 * and the attempt is repeated after the usual back-off (Warning
 * FailedCreatePodSandBox, as the kubelet reports it), never counted as a
 * container's failure. Returns true when the pod's containers may start.
 */
static bool make_sandbox(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms)
{
	if (pod->runtime_pod)
		return true;
	if (pod->sandbox_retry_at_ms >= 0 && now_ms < pod->sandbox_retry_at_ms)
		return false; /* js_pod_wake has the deadline */
	char *err = NULL;
	enum js_container_pod st = js_container_pod_make(host->ctrt, pod->name, pod->hostname, pod->ip, &err);
	pod->sandbox_asked = st == JS_CONTAINER_POD_WAITING;
	if (st == JS_CONTAINER_POD_WAITING)
		return false; /* woken when a command of the runtime's ends */
	if (st == JS_CONTAINER_POD_READY) {
		pod->runtime_pod = true;
		pod->sandbox_retry_at_ms = -1;
		return true;
	}
	int64_t delay = restart_delay(host, pod->sandbox_failures++);
	pod->sandbox_retry_at_ms = js_sat_add(now_ms, delay);
	if (host->on_note) {
		char *msg = js_buf_format("failed to create the pod sandbox (attempt %d, retrying in %lld ms): %s",
					  pod->sandbox_failures, (long long)delay, err);
		host->on_note(host->note_ctx, pod, "Warning", "FailedCreatePodSandBox", msg);
		free(msg);
	}
	free(err);
	return false;
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
			/* A pod stopped for missing its progress deadline failed,
			 * even if its workload exits 0 on SIGTERM. */
			pod->phase = all_main_done(pod, &ok) && ok && pod->stop != JS_POD_STOP_PROGRESS ? JS_JOBCTL_SUCCEEDED
															: JS_JOBCTL_FAILED;
			pod->finished_ms = now_ms;
			pod->finished_wall_ms = wall_ms();
			changed = true;
		}
		return changed;
	}
	/* Its network is still being made (ContainerCreating, as a pod whose
	 * sandbox is not ready): nothing can start. The runner goes on with
	 * other pods and is woken when it is ready (local/net.h). */
	if (pod->phase == JS_JOBCTL_PENDING && pod->net && js_net_pod_pending(pod->net))
		return false;
	if (pod->phase == JS_JOBCTL_PENDING && host->ctrt && !make_sandbox(pod, host, now_ms))
		return false;
	if (pod->in_place && step_in_place(pod, host, now_ms, &changed))
		return changed;
	/* Containers the runtime failed to create, due again (init containers:
	 * step_init). */
	for (size_t i = pod->n_init; pod->initialized && i < pod->n_ctrs; i++) {
		struct ctr *c = &pod->ctrs[i];
		if (c->state == JS_POD_CTR_WAITING && c->create_retry_at_ms >= 0 && now_ms >= c->create_retry_at_ms) {
			start_ctr(pod, c, host, now_ms);
			changed = true;
		}
	}
	/* Restarts that are due. */
	for (size_t i = 0; i < pod->n_ctrs; i++) {
		struct ctr *c = &pod->ctrs[i];
		maybe_restart(pod, c, host, now_ms);
		if (c->state == JS_POD_CTR_TERMINATED && c->restart_at_ms >= 0 && now_ms >= c->restart_at_ms &&
		    pod->phase <= JS_JOBCTL_RUNNING) {
			keep_last(c);
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
			pod->finished_wall_ms = wall_ms();
			changed = true;
		}
	}
	if (pod->phase >= JS_JOBCTL_SUCCEEDED && !js_pod_gone(pod)) {
		/* Main containers are done: sidecars go, with the grace period. */
		for (size_t i = 0; i < pod->n_ctrs; i++)
			signal_ctr(&pod->ctrs[i], host, SIGTERM);
		pod->stopping = true;
		pod->kill_at_ms = js_sat_add(now_ms, pod->grace_ms);
		changed = true;
	}
	return changed;
}


/* ---- in-place restart (pod.h) ---- */

void js_pod_restart_in_place(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms)
{
	(void)now_ms;
	if (!pod->in_place || pod->stopping || pod->restarting)
		return;
	pod->restarting = true;
	for (size_t i = 0; i < pod->n_ctrs; i++) {
		struct ctr *c = &pod->ctrs[i];
		if (c->state == JS_POD_CTR_RUNNING && !c->killed) {
			signal_ctr(c, host, SIGKILL);
			c->killed = true;
		}
	}
}

/* The in-place part of a step. Returns true when the step ends here. */
static bool step_in_place(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms, bool *changed)
{
	if (!pod->restarting && !pod->held) {
		/* The worker's rule: a failed container restarts the pod in place. */
		for (size_t i = 0; i < pod->n_ctrs; i++) {
			const struct ctr *c = &pod->ctrs[i];
			if (!c->sidecar && c->state == JS_POD_CTR_TERMINATED && c->exit_code != 0)
				js_pod_restart_in_place(pod, host, now_ms);
		}
	}
	if (pod->restarting) {
		if (!js_pod_gone(pod))
			return true; /* woken by the exits */
		for (size_t i = 0; i < pod->n_ctrs; i++) {
			struct ctr *c = &pod->ctrs[i];
			if (c->state == JS_POD_CTR_TERMINATED) {
				keep_last(c);
				c->restarts++;
			}
			c->state = JS_POD_CTR_WAITING;
			c->restart_at_ms = -1;
			c->killed = false;
		}
		pod->next_init = 0;
		pod->initialized = false;
		pod->phase = JS_JOBCTL_PENDING;
		pod->restarting = false;
		pod->held = true;
		pod->agent = (struct js_inplace_agent){.barrier_active = true}; /* a new agent process */
		*changed = true;
	}
	return pod->held;
}

const char *js_pod_annotation(const struct js_pod *pod, const char *key)
{
	return js_json_str(js_json_path(pod->tmpl, "metadata.annotations"), key);
}

bool js_pod_held(const struct js_pod *pod)
{
	return pod->in_place && (pod->held || pod->restarting);
}

bool js_pod_restarting(const struct js_pod *pod)
{
	return pod->restarting;
}

void js_pod_release(struct js_pod *pod)
{
	if (!pod->restarting)
		pod->held = false;
}

struct js_inplace_agent *js_pod_agent(struct js_pod *pod)
{
	return pod->in_place ? &pod->agent : NULL;
}

void js_pod_set_annotation(struct js_pod *pod, const char *key, const char *value)
{
	json_t *ann = js_json_path_make(pod->tmpl, "metadata.annotations");
	json_object_set_new(ann, key, json_string(value));
	for (size_t i = 0; i < pod->n_ctrs; i++) {
		struct ctr *c = &pod->ctrs[i];
		size_t k;
		json_t *e;
		json_array_foreach(json_object_get(c->json, "env"), k, e)
		{
			const char *fp = js_json_str(json_object_get(json_object_get(e, "valueFrom"), "fieldRef"), "fieldPath");
			char *ref = NULL;
			const char *name = js_json_str(e, "name");
			if (!fp || !name || !parse_map_ref(fp, "metadata.annotations", &ref))
				continue;
			bool same = strcmp(ref, key) == 0;
			free(ref);
			size_t nl = strlen(name);
			for (size_t v = 0; same && c->envp && c->envp[v]; v++) {
				if (strncmp(c->envp[v], name, nl) == 0 && c->envp[v][nl] == '=') {
					free(c->envp[v]);
					c->envp[v] = js_buf_format("%s=%s", name, value);
				}
			}
		}
	}
}

bool js_pod_step(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms)
{
	bool changed = step(pod, host, now_ms);
	/* A terminal pod with no process left has no use for its network; its
	 * address may be wanted by the pod that replaces it. */
	if (pod->phase >= JS_JOBCTL_SUCCEEDED && js_pod_gone(pod)) {
		js_net_pod_release(pod->net);
		js_volumes_pod_release(pod->vols); /* emptyDir goes with its pod */
		if (pod->runtime_pod || pod->sandbox_asked)
			js_container_pod_release(host->ctrt, pod->name);
		pod->runtime_pod = pod->sandbox_asked = false;
	}
	return changed;
}

void js_pod_delete_within(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms, int64_t grace_ms)
{
	stop(pod, host, now_ms, grace_ms, JS_POD_STOP_RUNNER);
}

static void stop(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms, int64_t grace_ms,
		 enum js_pod_stop why)
{
	int64_t at = js_sat_add(now_ms, grace_ms < pod->grace_ms ? grace_ms : pod->grace_ms);
	if (!pod->stopping && pod->phase <= JS_JOBCTL_RUNNING) {
		pod->stop = why;
		pod->deleted_wall_ms = wall_ms();
		pod->deleted_ms = now_ms;
	}
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

void js_pod_delete(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms, enum js_pod_stop why)
{
	stop(pod, host, now_ms, pod->grace_ms, why);
}

int js_pod_stop_failed(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms, int64_t wall_now_ms,
		       enum js_pod_stop why, const char *type, const char *reason, const char *message)
{
	if (pod->stopping || pod->phase > JS_JOBCTL_RUNNING ||
	    (why != JS_POD_STOP_EVICTED && why != JS_POD_STOP_PROGRESS))
		return JS_EINVALID;
	free(pod->dis_reason);
	free(pod->dis_message);
	pod->dis_type = type;
	pod->dis_reason = js_xstrdup(reason);
	pod->dis_message = js_xstrdup(message);
	pod->dis_wall_ms = wall_now_ms;
	stop(pod, host, now_ms, pod->grace_ms, why);
	return 0;
}

int js_pod_evict(struct js_pod *pod, const struct js_pod_host *host, int64_t now_ms, int64_t wall_now_ms,
		 const char *reason, const char *message)
{
	return js_pod_stop_failed(pod, host, now_ms, wall_now_ms, JS_POD_STOP_EVICTED, "DisruptionTarget", reason,
				  message);
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
	for (size_t i = 0; !pod->stopping && i < pod->n_ctrs; i++) {
		int64_t r = pod->ctrs[i].create_retry_at_ms;
		if (r >= 0 && pod->ctrs[i].state == JS_POD_CTR_WAITING && (w < 0 || r < w))
			w = r;
	}
	int64_t s = pod->sandbox_retry_at_ms;
	if (s >= 0 && !pod->stopping && !pod->runtime_pod && (w < 0 || s < w))
		w = s;
	return w;
}

size_t js_pod_n_fds(const struct js_pod *pod)
{
	size_t n = 0;
	for (size_t i = 0; i < pod->n_ctrs; i++)
		n += (pod->ctrs[i].out_fd >= 0) + (pod->ctrs[i].exec_fd >= 0);
	return n;
}

size_t js_pod_fill_pollfds(const struct js_pod *pod, struct pollfd *fds)
{
	size_t n = 0;
	for (size_t i = 0; i < pod->n_ctrs; i++) {
		if (pod->ctrs[i].out_fd >= 0)
			fds[n++] = (struct pollfd){.fd = pod->ctrs[i].out_fd, .events = POLLIN};
		if (pod->ctrs[i].exec_fd >= 0)
			fds[n++] = (struct pollfd){.fd = pod->ctrs[i].exec_fd, .events = POLLIN};
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
		if (c->exec_fd >= 0 && c->exec_fd == fd) {
			exec_news(c);
			return true;
		}
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
			log_write(pod, c, host, buf, (size_t)n); /* capped, rotated */
			emit(pod, c, host, buf, (size_t)n);
		}
		return true;
	}
	return false;
}

void js_pod_observe(const struct js_pod *pod, struct js_jobctl_exit *exits, struct js_jobctl_pod *ret)
{
	/* The only pod conditions a podFailurePolicy rule can meet here: the
	 * one a stop set (DisruptionTarget, ProgressDeadlineExceeded). */
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
		.deleted_by_controller = pod->stop == JS_POD_STOP_JOB_CONTROLLER || pod->stop == JS_POD_STOP_JOB_FAILED ||
					 pod->stop == JS_POD_STOP_RUNNER,
		.restarts = js_pod_restarts(pod), .exits = exits, .n_exits = n,
		/* A pod being deleted counts as failed from the deletion's start
		 * (upstream: deletionTimestamp minus the grace period). */
		.finished_ms = pod->stopping && pod->phase <= JS_JOBCTL_RUNNING ? pod->deleted_ms : pod->finished_ms,
		.conditions = pod->dis_reason ? &pod->dis_type : NULL, .n_conditions = pod->dis_reason ? 1 : 0,
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

void js_pod_info(const struct js_pod *pod, struct js_pod_info *ret)
{
	*ret = (struct js_pod_info){
		.name = pod->name, .namespace_ = pod->namespace_, .uid = pod->uid, .job_name = pod->job_name,
		.job_uid = pod->job_uid, .hostname = pod->hostname, .subdomain = pod->subdomain, .ip = pod->ip,
		.workdir = pod->workdir, .index = pod->index, .tmpl = pod->tmpl, .created_ms = pod->created_wall_ms,
		.started_ms = pod->started_wall_ms, .finished_ms = pod->finished_wall_ms,
		.deleted_ms = pod->deleted_wall_ms, .stop = pod->stop, .stopping = pod->stopping,
		.initialized = pod->initialized, .condition_type = pod->dis_reason ? pod->dis_type : NULL,
		.condition_reason = pod->dis_reason, .condition_message = pod->dis_message,
		.condition_ms = pod->dis_wall_ms,
	};
	int fd;
	ret->sandbox_ready = !pod->net || js_net_pod_netns(pod->net, &fd) == 0;
	/* Container mode: the runtime's pod is the sandbox. A terminal pod's
	 * is released, as a finished pod's sandbox is on a node, so only
	 * one never made reads not ready. */
	if (pod->ctr_mode && pod->phase == JS_JOBCTL_PENDING && !pod->runtime_pod)
		ret->sandbox_ready = false;
}

void js_pod_ctr_info(const struct js_pod *pod, size_t i, struct js_pod_ctr_info *ret)
{
	const struct ctr *c = &pod->ctrs[i];
	*ret = (struct js_pod_ctr_info){
		.name = c->name, .image = c->image, .init = c->init, .sidecar = c->sidecar, .state = c->state,
		.restart_pending = c->state == JS_POD_CTR_TERMINATED && c->restart_at_ms >= 0, .restarts = c->restarts,
		.pid = c->state == JS_POD_CTR_RUNNING ? c->pid : -1, .started_ms = c->started_wall_ms,
		.has_term = c->state == JS_POD_CTR_TERMINATED, .has_last = c->has_last, .last = c->last,
	};
	if (ret->has_term)
		ret->term = (struct js_pod_ctr_term){
			.exit_code = c->exit_code, .signal = c->sig,
			.reason = js_pod_exit_reason(c->exit_code, c->message != NULL), .message = c->message,
			.started_ms = c->started_wall_ms, .finished_ms = c->finished_wall_ms,
		};
	if (ret->has_last) {
		ret->last.reason = js_pod_exit_reason(c->last.exit_code, c->last_message != NULL);
		ret->last.message = c->last_message;
	}
}
