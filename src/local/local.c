/*
 * local.c - the local runtime's lifecycle (see local.h): a run is made
 * (js_local_new: the run directory, its lock and control FIFO, the JobSet's
 * identity), run (js_local_run hands it to the loop, loop.c) and freed; what
 * it ended with is read back (results, JobSet, phases). Also the helpers
 * every file of the run shares: its clocks, uids, directories.
 *
 * The other files of the run (local_int.h): loop.c (the event loop: poll,
 * signals, control commands, teardown), jobs.c (the Jobs and their pods,
 * through the Job controller of local/jobctl.h), exec.c (this runtime as a
 * body of core/exec.h: the core's plan applied), agents.c (the in-place
 * restart agents), report.c (what a run tells).
 */
#include "local/local.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "api/render.h"
#include "base/buf.h"
#include "base/file.h"
#include "base/json.h"
#include "base/time.h"
#include "local/gpu.h"
#include "local/hosts.h"
#include "local/local_int.h"
#include "local/rundir.h"
#include "local/volumes.h"

/* Two clocks (issue 10): every deadline, delay and duration is measured on
 * CLOCK_MONOTONIC, which a clock step cannot move; wall time is only for
 * what users and the status see (timestamps, the core's `now`). */
static int64_t clock_ms(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t js__local_now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

int64_t js__local_wall_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

/* Wall-clock RFC 3339 timestamp of now. */
void js__local_wall_stamp(char out[21])
{
	js_time_format_rfc3339(js__local_wall_ms() / 1000, out);
}

uint64_t js__local_rnd(struct js_local *l)
{
	/* xorshift64*: pod name suffixes and uids need variety, not secrecy. */
	l->rng ^= l->rng >> 12;
	l->rng ^= l->rng << 25;
	l->rng ^= l->rng >> 27;
	return l->rng * 2685821657736338717ULL;
}

char *js__local_new_uid(struct js_local *l)
{
	uint64_t a = js__local_rnd(l), b = js__local_rnd(l);
	return js_buf_format("%08x-%04x-4%03x-%04x-%012llx", (unsigned)(a >> 32), (unsigned)(a >> 16) & 0xffff,
		   (unsigned)a & 0xfff, (unsigned)((b >> 48) & 0x3fff) | 0x8000,
		   (unsigned long long)(b & 0xffffffffffffULL));
}

/* mkdir -p, every component 0755. */
int js__local_mkdir_p(const char *path)
{
	return js_file_mkdir_p(path, 0755, 0755);
}

int js_local_new(const struct js_jobset *js, const struct js_local_opts *opts, struct js_local **ret_local)
{
	struct js_local *l = js_xcalloc(1, sizeof(*l));
	l->opts = *opts;
	l->js = js_jobset_copy(js);
	/* Absolute: paths under it are handed to containers and runtimes. */
	char cwd[4096];
	l->run_dir = opts->run_dir[0] == '/' || !getcwd(cwd, sizeof(cwd)) ? js_xstrdup(opts->run_dir)
								       : js_buf_format("%s/%s", cwd, opts->run_dir);
	l->log_dir = js_buf_format("%s/logs", l->run_dir);
	l->hosts_path = js_buf_format("%s/hosts", l->run_dir);
	l->death_rd = l->death_wr = l->sig_fd = l->events_fd = -1;
	l->lock_fd = l->ctl_rd = l->ctl_wr = -1;
	l->requeue_ms = -1;
	l->watch_due_ms = -1;
	l->state_ms = -1;
	l->history = json_array();
	l->pod_history = json_array();
	l->state_path = js_buf_format("%s/state.json", opts->run_dir);
	js_buf_init(&l->ev_reasons, 4096);
	js_buf_init(&l->ctl_line, JS_RUNDIR_CONTROL_MAX);
	if (getrandom(&l->rng, sizeof(l->rng), 0) != sizeof(l->rng) || !l->rng)
		l->rng = (uint64_t)js__local_now_ms() | 1;
	/* The lock and the control FIFO first: from here on `jobset down` and
	 * `jobset ps` see this run (commands wait in the FIFO until the loop
	 * reads them). */
	int r = js_rundir_lock(opts->run_dir, &l->lock_fd);
	if (r >= 0)
		r = js_rundir_control_open(opts->run_dir, &l->ctl_rd, &l->ctl_wr);
	if (r >= 0)
		r = js__local_mkdir_p(l->log_dir);
	if (r >= 0 && opts->workdir != JS_LOCAL_WORKDIR_CWD) {
		char *w = js_buf_format("%s/work", opts->run_dir);
		r = js__local_mkdir_p(w);
		if (opts->workdir == JS_LOCAL_WORKDIR_RUN)
			l->workdir = w;
		else
			free(w);
	}
	if (r < 0) {
		(void)js_local_free(l);
		return r;
	}
	char *ev = js_buf_format("%s/events.log", l->run_dir);
	l->events_fd = open(ev, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	free(ev);
	if (!l->js->meta.uid)
		l->js->meta.uid = js__local_new_uid(l);
	if (!l->js->meta.namespace_)
		l->js->meta.namespace_ = js_xstrdup("default");
	l->start_ms = js__local_now_ms();
	l->start_wall_ms = js__local_wall_ms();
	if (!l->js->meta.creation_timestamp) {
		char ts[21];
		js__local_wall_stamp(ts);
		l->js->meta.creation_timestamp = js_xstrdup(ts);
	}
	/* The run creates the JobSet now: the accounting starts here, on the
	 * monotonic clock (so the status's wall-clock times are not used). */
	struct js_phase_obs obs;
	js_phase_observe(l->js, &obs);
	obs.since_ms = obs.wait_since_ms = -1;
	js_phase_acct_init(&l->phases, &obs, l->start_ms);
	l->end_ms = -1;
	l->timeline = js_timeline_new(l->js, l->start_wall_ms);
	const char *path = getenv("PATH");
	l->path_env = js_xstrdup(path ? path : "/usr/local/bin:/usr/bin:/bin");
	l->home_env = getenv("HOME") ? js_xstrdup(getenv("HOME")) : NULL;
	char hn[256] = "localhost";
	if (gethostname(hn, sizeof(hn) - 1) < 0)
		snprintf(hn, sizeof(hn), "localhost");
	l->node_name = js_xstrdup(hn);
	l->state_dirty = true;
	js__report_state(l, js__local_now_ms(), NULL);
	*ret_local = l;
	return 0;
}

void js__job_free_pods(struct js_local *l, struct ljob *j)
{
	for (size_t i = 0; i < j->n_pods; i++) {
		js_gpu_put(l->opts.gpus, js_pod_id(j->pods[i]));
		js_pod_free(j->pods[i]);
	}
	free(j->pods);
	j->pods = NULL;
	j->n_pods = 0;
}

int js_local_run(struct js_local *l, enum js_local_result *ret_result)
{
	/* Lifecycle contract (issue 10): a callback of this run (on_event,
	 * on_view, on_line) must not start it again or free it. */
	if (l->running)
		return -EBUSY;
	l->running = true;
	int r = js__loop_run(l, ret_result);
	l->running = false;
	return r;
}

int js_local_free(struct js_local *l)
{
	if (!l)
		return 0;
	if (l->running)
		return -EBUSY; /* inside js_local_run: its loop still uses all of it */
	for (size_t i = 0; i < l->n_jobs; i++) {
		js__job_free_pods(l, &l->jobs[i]);
		js_job_unref(l->jobs[i].rec);
		json_decref(l->jobs[i].obj);
		free(l->jobs[i].name);
	}
	free(l->jobs);
	for (size_t i = 0; i < l->n_pvcs; i++)
		free(l->pvcs[i]);
	free(l->pvcs);
	free(l->scratch_dir);
	l->ctrt = js_container_free(l->ctrt); /* after the pods: removes what is left */
	l->net = js_net_free(l->net); /* after the pods: they hold its namespaces */
	json_decref(l->history);
	json_decref(l->pod_history);
	json_decref(l->results);
	free(l->workdir);
	free(l->state_path);
	free(l->ev_message);
	js_buf_done(&l->ev_reasons);
	js_buf_done(&l->ctl_line);
	if (l->ctl_rd >= 0)
		close(l->ctl_rd);
	if (l->ctl_wr >= 0)
		close(l->ctl_wr);
	if (l->lock_fd >= 0)
		close(l->lock_fd);
	js_jobset_free(l->js);
	js_timeline_free(l->timeline);
	free(l->run_dir);
	free(l->log_dir);
	free(l->hosts_path);
	free(l->path_env);
	free(l->home_env);
	free(l->node_name);
	if (l->events_fd >= 0)
		close(l->events_fd);
	free(l);
	return 0;
}

const json_t *js_local_results(const struct js_local *l)
{
	return l->results;
}

const struct js_jobset *js_local_jobset(const struct js_local *l)
{
	return l->js;
}

enum js_sandbox_mode js_local_sandbox(const struct js_local *l, const char **ret_why)
{
	if (ret_why)
		*ret_why = l->sandbox_why;
	return l->host.mode;
}

int64_t js_local_elapsed_ms(const struct js_local *l)
{
	return js__local_now_ms() - l->start_ms;
}

void js_local_phases(const struct js_local *l, struct js_local_phases *out)
{
	*out = (struct js_local_phases){0};
	js_phase_acct_summary(&l->phases, l->end_ms >= 0 ? l->end_ms : js__local_now_ms(), &out->sum);
	out->n_readies = l->n_readies;
	size_t n = l->n_readies < JS_LOCAL_MAX_READIES ? l->n_readies : JS_LOCAL_MAX_READIES;
	memcpy(out->readies, l->readies, n * sizeof(*out->readies));
}

int js_local_preflight(const struct js_jobset *js, const struct js_local_opts *opts, char **ret_err)
{
	for (size_t i = 0; i < js->spec.n_replicated_jobs; i++) {
		const struct js_rjob *r = &js->spec.replicated_jobs[i];
		const json_t *tmpl = js_json_path(r->template_, "spec.template");
		/* Volumes are checked on the pod template as rendered: claims of
		 * volumeClaimPolicies are volumes only there. */
		struct js_render_opts ro = {.gates = opts ? opts->gates : (struct js_gates){0}};
		json_t *job = js_render_job(js, i, 0, &ro);
		char *err = NULL;
		bool images = opts && opts->runtime != JS_CONTAINER_PROCESS;
		int cr = images ? js_pod_check_template_images(tmpl, &err) : js_pod_check_template(tmpl, &err);
		if (cr == 0)
			cr = js_volumes_check(js_json_path(job, "spec.template"), opts ? opts->objects : NULL, &err);
		json_decref(job);
		if (cr < 0) {
			*ret_err = js_buf_format("spec.replicatedJobs[%zu] (%s): %s", i, r->name, err);
			free(err);
			return JS_EINVALID;
		}
	}
	if (js_hosts_check_capacity(js, js_ipam_capacity(), ret_err) < 0)
		return JS_EINVALID;
	/* More GPUs at once than the machine has would never all start. */
	return js_gpu_check(js, js_gpu_count(opts ? opts->gpus : NULL), ret_err);
}
