/*
 * gpu.c - NVIDIA GPUs of a local run (see gpu.h).
 */
#include "local/gpu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/template.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/parse.h"

/* Output of `nvidia-smi -L` read at most: a line per GPU. */
#define GPU_SMI_MAX_BYTES (64u * 1024u)

struct js_gpu {
	size_t n;
	char **ids;
	uint64_t *holder;   /* pod id holding device i, 0 when free */
	uint64_t *last;     /* pod id that held device i last (kept after it
			       is given back: node quarantine asks which
			       devices a failed pod had), 0 never held */
	struct held {
		uint64_t pod;
		const char **devs;
	} *held;
	size_t n_held;
};

static struct js_gpu *gpu_new(void)
{
	return js_xcalloc(1, sizeof(struct js_gpu));
}

static bool add_id(struct js_gpu *g, const char *id, size_t n)
{
	for (size_t i = 0; i < g->n; i++) {
		if (strlen(g->ids[i]) == n && strncmp(g->ids[i], id, n) == 0)
			return false;
	}
	g->ids = js_xrealloc(g->ids, (g->n + 1) * sizeof(*g->ids));
	g->holder = js_xrealloc(g->holder, (g->n + 1) * sizeof(*g->holder));
	g->last = js_xrealloc(g->last, (g->n + 1) * sizeof(*g->last));
	g->ids[g->n] = js_xstrndup(id, n);
	g->last[g->n] = 0;
	g->holder[g->n++] = 0;
	return true;
}

int js_gpu_parse(const char *arg, struct js_gpu **ret, char **ret_err)
{
	struct js_gpu *g = gpu_new();
	if (strcmp(arg, "none") == 0) {
		*ret = g;
		return 0;
	}
	for (const char *p = arg; *p;) {
		size_t n = strcspn(p, ",");
		bool ok = n > 0;
		for (size_t i = 0; i < n && ok; i++) {
			char c = p[i];
			ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
		}
		if (!ok || g->n == JS_GPU_MAX || !add_id(g, p, n)) {
			*ret_err = js_buf_format("--gpus takes device ids (letters, digits, '-', '_') separated by commas, "
						 "each once, at most %d; not '%s'",
						 JS_GPU_MAX, arg);
			js_gpu_free(g);
			return JS_EINVALID;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	*ret = g;
	return 0;
}

/* Decimal ids in numeric order: shorter first, then by digits. */
static int cmp_num(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t nx = strlen(x), ny = strlen(y);
	return nx != ny ? (nx > ny) - (nx < ny) : strcmp(x, y);
}

/* `nvidia-smi -L`: "GPU 0: NVIDIA A100 (UUID: GPU-...)" per line. */
static void from_smi(struct js_gpu *g)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	char *argv[] = {(char *)"nvidia-smi", (char *)"-L", NULL};
	extern char **environ;
	pid_t pid;
	int r = posix_spawnp(&pid, "nvidia-smi", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (r != 0) {
		close(p[0]);
		return;
	}
	struct js_buf b;
	js_buf_init(&b, GPU_SMI_MAX_BYTES);
	char chunk[4096];
	ssize_t n;
	while ((n = read(p[0], chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR)) {
		if (n > 0 && js_buf_add(&b, chunk, (size_t)n) < 0)
			break;
	}
	close(p[0]);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
	}
	for (const char *s = js_buf_str(&b); *s;) {
		size_t len = strcspn(s, "\n");
		if (strncmp(s, "GPU ", 4) == 0) {
			size_t k = strspn(s + 4, "0123456789");
			if (k > 0 && s[4 + k] == ':' && g->n < JS_GPU_MAX)
				(void)add_id(g, s + 4, k);
		}
		s += len;
		if (*s == '\n')
			s++;
	}
	js_buf_done(&b);
}

struct js_gpu *js_gpu_discover(const char *dev_dir)
{
	struct js_gpu *g = gpu_new();
	DIR *d = opendir(dev_dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		/* /dev/nvidia0, /dev/nvidia1, ... (not nvidiactl, nvidia-uvm). */
		const char *num = e->d_name + 6;
		if (strncmp(e->d_name, "nvidia", 6) == 0 && *num && strspn(num, "0123456789") == strlen(num) &&
		    g->n < JS_GPU_MAX)
			(void)add_id(g, num, strlen(num));
	}
	if (d)
		closedir(d);
	if (g->n > 1)
		qsort(g->ids, g->n, sizeof(*g->ids), cmp_num);
	if (g->n == 0)
		from_smi(g);
	return g;
}

struct js_gpu *js_gpu_free(struct js_gpu *g)
{
	if (!g)
		return NULL;
	for (size_t i = 0; i < g->n; i++)
		free(g->ids[i]);
	for (size_t i = 0; i < g->n_held; i++)
		free(g->held[i].devs);
	free(g->held);
	free(g->ids);
	free(g->holder);
	free(g->last);
	free(g);
	return NULL;
}

size_t js_gpu_count(const struct js_gpu *g)
{
	return g ? g->n : 0;
}

const char *js_gpu_id(const struct js_gpu *g, size_t i)
{
	return g->ids[i];
}

/* ---- what pods ask for ---- */

static int quantity(const json_t *v, int64_t *ret)
{
	if (!v) {
		*ret = 0;
		return 0;
	}
	if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= JS_GPU_MAX) {
		*ret = json_integer_value(v);
		return 0;
	}
	const char *s = json_string_value(v);
	return s && js_parse_i64_in(s, strlen(s), 0, JS_GPU_MAX, ret) == 0 ? 0 : JS_EINVALID;
}

int js_gpu_ctr_count(const json_t *ctr, int64_t *ret, char **ret_err)
{
	const json_t *res = json_object_get(ctr, "resources");
	int64_t lim = 0, req = 0;
	const json_t *l = json_object_get(json_object_get(res, "limits"), JS_GPU_RESOURCE);
	const json_t *r = json_object_get(json_object_get(res, "requests"), JS_GPU_RESOURCE);
	const char *name = js_json_str(ctr, "name");
	if (quantity(l, &lim) < 0 || quantity(r, &req) < 0 || (r && !l) || (r && req != lim)) {
		*ret_err = js_buf_format("container '%s': resources %s must be a whole number in limits (at most %d), "
					 "and requests, if given, the same",
					 name ? name : "", JS_GPU_RESOURCE, JS_GPU_MAX);
		return JS_EINVALID;
	}
	*ret = lim;
	return 0;
}

int js_gpu_pod_count(const json_t *pod_spec, int64_t *ret, char **ret_err)
{
	int64_t sum = 0, init_max = 0, n;
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(pod_spec, "containers"), i, c)
	{
		if (js_gpu_ctr_count(c, &n, ret_err) < 0)
			return JS_EINVALID;
		sum += n;
	}
	json_array_foreach(json_object_get(pod_spec, "initContainers"), i, c)
	{
		if (js_gpu_ctr_count(c, &n, ret_err) < 0)
			return JS_EINVALID;
		init_max = n > init_max ? n : init_max;
	}
	*ret = sum > init_max ? sum : init_max;
	return 0;
}

/** True when rjob `a` must be Complete before rjob `b` starts. */
static bool before(const struct js_jobset *js, size_t a, size_t b, int depth)
{
	const struct js_rjob *rb = &js->spec.replicated_jobs[b];
	for (size_t k = 0; k < rb->n_depends_on && depth < 64; k++) {
		const struct js_depends_on *d = &rb->depends_on[k];
		int di = js_jobset_find_rjob(js, d->name);
		if (di < 0)
			continue;
		if (d->status == JS_DEPENDS_STATUS_COMPLETE && (size_t)di == a)
			return true;
		/* Ready only orders starts: b may run beside its dependency. */
		if (d->status == JS_DEPENDS_STATUS_COMPLETE && before(js, a, (size_t)di, depth + 1))
			return true;
	}
	return false;
}

int js_gpu_check(const struct js_jobset *js, size_t available, char **ret_err)
{
	size_t nr = js->spec.n_replicated_jobs;
	int64_t *w = js_xcalloc(nr + 1, sizeof(*w));
	struct js_buf who;
	js_buf_init(&who, 4096);
	int r = 0;
	for (size_t i = 0; i < nr && r == 0; i++) {
		const struct js_rjob *rj = &js->spec.replicated_jobs[i];
		int64_t per_pod = 0;
		char *err = NULL;
		if (js_gpu_pod_count(js_tmpl_pod_spec(rj), &per_pod, &err) < 0) {
			*ret_err = js_buf_format("spec.replicatedJobs[%zu] (%s): %s", i, rj->name, err);
			free(err);
			r = JS_EINVALID;
			break;
		}
		if (per_pod == 0)
			continue;
		int32_t par = 1, comp = 0;
		(void)js_tmpl_i32(rj, "parallelism", &par);
		if (js_tmpl_i32(rj, "completions", &comp) && comp < par)
			par = comp;
		int64_t pods = (int64_t)(rj->has_replicas ? rj->replicas : 1) * (par > 0 ? par : 0);
		w[i] = pods * per_pod;
		if ((size_t)per_pod > available) {
			*ret_err = js_buf_format("every pod of ReplicatedJob '%s' needs %lld GPUs (%s), but this machine has %zu",
						 rj->name, (long long)per_pod, JS_GPU_RESOURCE, available);
			r = JS_EINVALID;
		}
		if (pods > 0 && js_buf_printf(&who, "%s%s: %lld pods x %lld = %lld", who.len ? ", " : "", rj->name,
					      (long long)pods, (long long)per_pod, (long long)w[i]) < 0) {
			/* the list is bounded; the count is what matters */
		}
	}
	/* The most that can run at once: a ReplicatedJob and everything not
	 * ordered before or after it by dependsOn Complete. Exact for chains and
	 * for independent ReplicatedJobs, an overestimate for some DAGs. */
	int64_t peak = 0;
	for (size_t i = 0; i < nr && r == 0; i++) {
		int64_t at_once = w[i];
		for (size_t k = 0; k < nr; k++) {
			if (k != i && !before(js, i, k, 0) && !before(js, k, i, 0))
				at_once += w[k];
		}
		peak = at_once > peak ? at_once : peak;
	}
	if (r == 0 && (size_t)peak > available) {
		*ret_err = js_buf_format("the JobSet needs %lld GPUs (%s) at once (%s), but this machine has %zu; give "
					 "the ids with --gpus if some were not found",
					 (long long)peak, JS_GPU_RESOURCE, js_buf_str(&who), available);
		r = JS_EINVALID;
	}
	js_buf_done(&who);
	free(w);
	return r;
}

/* ---- who holds what ---- */

static bool skipped(const struct js_gpu *g, size_t i, const struct js_gpu_skip *skip)
{
	return skip && skip->fn && skip->fn(g->ids[i], skip->ctx);
}

size_t js_gpu_count_except(const struct js_gpu *g, const struct js_gpu_skip *skip, bool free_only)
{
	size_t n = 0;
	for (size_t i = 0; g && i < g->n; i++)
		n += (!free_only || g->holder[i] == 0) && !skipped(g, i, skip);
	return n;
}

int js_gpu_take(struct js_gpu *g, uint64_t pod_id, int64_t n, const char *const **ret_devs)
{
	return js_gpu_take_except(g, pod_id, n, NULL, ret_devs);
}

int js_gpu_take_except(struct js_gpu *g, uint64_t pod_id, int64_t n, const struct js_gpu_skip *skip,
		       const char *const **ret_devs)
{
	if (n <= 0) {
		*ret_devs = NULL;
		return 0;
	}
	if ((int64_t)js_gpu_count_except(g, skip, true) < n)
		return -EBUSY;
	const char **devs = js_xcalloc((size_t)n + 1, sizeof(*devs));
	int64_t k = 0;
	for (size_t i = 0; i < g->n && k < n; i++) {
		if (g->holder[i] == 0 && !skipped(g, i, skip)) {
			g->holder[i] = pod_id;
			g->last[i] = pod_id;
			devs[k++] = g->ids[i];
		}
	}
	g->held = js_xrealloc(g->held, (g->n_held + 1) * sizeof(*g->held));
	g->held[g->n_held++] = (struct held){pod_id, devs};
	*ret_devs = devs;
	return 0;
}

bool js_gpu_put(struct js_gpu *g, uint64_t pod_id)
{
	bool any = false;
	for (size_t i = 0; g && i < g->n; i++) {
		if (g->holder[i] == pod_id) {
			g->holder[i] = 0;
			any = true;
		}
	}
	for (size_t i = 0; g && i < g->n_held; i++) {
		if (g->held[i].pod == pod_id) {
			free(g->held[i].devs);
			g->held[i] = g->held[--g->n_held];
			break;
		}
	}
	return any;
}

size_t js_gpu_last_held(const struct js_gpu *g, uint64_t pod_id, const char **ret, size_t max)
{
	size_t k = 0;
	for (size_t i = 0; g && pod_id && i < g->n && k < max; i++)
		if (g->last[i] == pod_id)
			ret[k++] = g->ids[i];
	return k;
}

int js_gpu_node_name(const char *id, struct js_buf *out)
{
	int r = js_buf_puts(out, "gpu-");
	for (const char *p = id; *p && r == 0; p++) {
		char c = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p == '_' ? '-' : *p;
		r = js_buf_add(out, &c, 1);
	}
	return r;
}

size_t js_gpu_free_count(const struct js_gpu *g)
{
	size_t n = 0;
	for (size_t i = 0; g && i < g->n; i++)
		n += g->holder[i] == 0;
	return n;
}

const char **js_gpu_ctr_devices(const json_t *ctr, bool init, const char *const *devs, size_t *cursor)
{
	int64_t want = 0;
	char *err = NULL;
	if (js_gpu_ctr_count(ctr, &want, &err) < 0 || want == 0 || !devs) {
		free(err);
		return NULL;
	}
	size_t have = 0;
	while (devs[have])
		have++;
	size_t from = init ? 0 : *cursor;
	const char **out = js_xcalloc((size_t)want + 1, sizeof(*out));
	for (int64_t k = 0; k < want && from + (size_t)k < have; k++)
		out[k] = devs[from + (size_t)k];
	if (!init)
		*cursor += (size_t)want;
	return out;
}

char *js_gpu_join(const char *const *ids)
{
	struct js_buf b;
	js_buf_init(&b, 0);
	for (size_t i = 0; ids && ids[i]; i++) {
		if (js_buf_printf(&b, "%s%s", i ? "," : "", ids[i]) < 0)
			break;
	}
	return js_buf_take(&b);
}
