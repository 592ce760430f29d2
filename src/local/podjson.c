/*
 * podjson.c - a local pod as a core/v1 Pod (see podjson.h).
 */
#include "local/podjson.h"

#include <stdio.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/time.h"

const char *js_podjson_stop_name(enum js_pod_stop stop)
{
	static const char *const names[] = {
		[JS_POD_STOP_NONE] = NULL,          [JS_POD_STOP_JOB_CONTROLLER] = "JobController",
		[JS_POD_STOP_JOB_DELETED] = "JobDeleted", [JS_POD_STOP_RUNNER] = "Runner",
		[JS_POD_STOP_EVICTED] = "Evicted",        [JS_POD_STOP_JOB_FAILED] = "JobFailed",
		[JS_POD_STOP_PROGRESS] = "ProgressDeadlineExceeded",
	};
	return (size_t)stop < JS_ARRAY_SIZE(names) ? names[stop] : NULL;
}

const char *js_podjson_phase_name(enum js_jobctl_phase phase)
{
	static const char *const names[] = {
		[JS_JOBCTL_PENDING] = "Pending", [JS_JOBCTL_RUNNING] = "Running",
		[JS_JOBCTL_SUCCEEDED] = "Succeeded", [JS_JOBCTL_FAILED] = "Failed",
	};
	return (size_t)phase < JS_ARRAY_SIZE(names) ? names[phase] : "Unknown";
}

json_t *js_podjson_statuses(const json_t *pod)
{
	const json_t *st = json_object_get(pod, "status");
	json_t *all = json_array();
	json_array_extend(all, js_json_unconst(json_object_get(st, "initContainerStatuses")));
	json_array_extend(all, js_json_unconst(json_object_get(st, "containerStatuses")));
	return all;
}

/** Set `key` to the RFC 3339 time of wall ms `ms`, when known. */
static void set_time(json_t *o, const char *key, int64_t ms)
{
	if (ms <= 0)
		return;
	char ts[21];
	js_time_format_rfc3339(ms / 1000, ts);
	json_object_set_new(o, key, json_string(ts));
}

static json_t *terminated(const struct js_pod_ctr_term *t)
{
	json_t *o = json_pack("{s:i, s:s}", "exitCode", (json_int_t)t->exit_code, "reason", t->reason);
	if (t->signal)
		json_object_set_new(o, "signal", json_integer(t->signal));
	if (t->message)
		json_object_set_new(o, "message", json_string(t->message));
	set_time(o, "startedAt", t->started_ms);
	set_time(o, "finishedAt", t->finished_ms);
	return json_pack("{s:o}", "terminated", o);
}

static json_t *ctr_status(const struct js_pod *pod, size_t i, bool initialized)
{
	struct js_pod_ctr_info c;
	js_pod_ctr_info(pod, i, &c);
	bool running = c.state == JS_POD_CTR_RUNNING;
	json_t *o = json_pack("{s:s, s:s, s:s, s:b, s:b, s:i}", "name", c.name, "image", c.image, "imageID", "",
			      "ready", running && (!c.init || c.sidecar) && js_pod_ready(pod), "started", running,
			      "restartCount", (json_int_t)c.restarts);
	json_t *state;
	if (running) {
		char id[32];
		snprintf(id, sizeof(id), "local://%d", (int)c.pid);
		json_object_set_new(o, "containerID", json_string(id));
		json_t *r = json_object();
		set_time(r, "startedAt", c.started_ms);
		state = json_pack("{s:o}", "running", r);
	} else if (c.restart_pending) {
		/* As the kubelet shows a container between a failure and its
		 * restart: waiting, with the failure as lastState. */
		char msg[160];
		snprintf(msg, sizeof(msg), "back-off restarting failed container %s in pod %s", c.name,
			 js_pod_name(pod));
		state = json_pack("{s:{s:s, s:s}}", "waiting", "reason", "CrashLoopBackOff", "message", msg);
		json_object_set_new(o, "lastState", terminated(&c.term));
	} else if (c.has_term) {
		state = terminated(&c.term);
	} else {
		state = json_pack("{s:{s:s}}", "waiting", "reason",
				  c.init || initialized ? "ContainerCreating" : "PodInitializing");
	}
	json_object_set_new(o, "state", state);
	if (c.has_last && !json_object_get(o, "lastState"))
		json_object_set_new(o, "lastState", terminated(&c.last));
	return o;
}

static json_t *condition(const char *type, bool status)
{
	return json_pack("{s:s, s:s}", "type", type, "status", status ? "True" : "False");
}

static json_t *metadata(const struct js_pod_info *in)
{
	const json_t *tm = json_object_get(in->tmpl, "metadata");
	json_t *labels = json_deep_copy(json_object_get(tm, "labels"));
	json_t *ann = json_deep_copy(json_object_get(tm, "annotations"));
	json_t *m = json_pack("{s:s, s:s, s:s}", "name", in->name, "namespace", in->namespace_, "uid",
			      in->uid ? in->uid : "");
	json_object_set_new(m, "labels", labels ? labels : json_object());
	if (!ann)
		ann = json_object();
	const char *stop = js_podjson_stop_name(in->stop);
	if (stop)
		json_object_set_new(ann, JS_PODJSON_ANN_STOP, json_string(stop));
	json_object_set_new(m, "annotations", ann);
	if (in->job_uid)
		json_object_set_new(m, "ownerReferences",
				    json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion", "batch/v1", "kind", "Job",
					      "name", in->job_name, "uid", in->job_uid, "controller", 1,
					      "blockOwnerDeletion", 1));
	set_time(m, "creationTimestamp", in->created_ms);
	set_time(m, "deletionTimestamp", in->deleted_ms);
	return m;
}

json_t *js_podjson_pod(const struct js_pod *pod, bool with_spec)
{
	struct js_pod_info in;
	js_pod_info(pod, &in);
	json_t *o = json_pack("{s:s, s:s}", "apiVersion", "v1", "kind", "Pod");
	json_object_set_new(o, "metadata", metadata(&in));
	if (with_spec) {
		json_t *spec = json_deep_copy(json_object_get(in.tmpl, "spec"));
		if (!spec)
			spec = json_object();
		if (in.index >= 0)
			json_object_set_new(spec, "hostname", json_string(in.hostname));
		json_object_set_new(o, "spec", spec);
	}
	json_t *st = json_pack("{s:s}", "phase", js_podjson_phase_name(js_pod_phase(pod)));
	bool ready = js_pod_ready(pod);
	json_t *conds = json_array();
	json_array_append_new(conds, condition("PodScheduled", true));
	/* False while the pod's network is being made (its containers wait,
	 * ContainerCreating) and once it is gone, as the kubelet says of a
	 * pod sandbox. */
	json_array_append_new(conds, condition("PodReadyToStartContainers", in.sandbox_ready));
	json_array_append_new(conds, condition("Initialized", in.initialized));
	json_array_append_new(conds, condition("ContainersReady", ready));
	json_array_append_new(conds, condition("Ready", ready));
	if (in.condition_type) {
		json_t *d = condition(in.condition_type, true);
		json_object_set_new(d, "reason", json_string(in.condition_reason));
		json_object_set_new(d, "message", json_string(in.condition_message ? in.condition_message : ""));
		set_time(d, "lastTransitionTime", in.condition_ms);
		json_array_append_new(conds, d);
	}
	json_object_set_new(st, "conditions", conds);
	if (in.ip && in.ip[0]) {
		json_object_set_new(st, "podIP", json_string(in.ip));
		json_object_set_new(st, "podIPs", json_pack("[{s:s}]", "ip", in.ip));
	}
	set_time(st, "startTime", in.started_ms);
	json_t *init = json_array(), *main = json_array();
	for (size_t i = 0; i < js_pod_n_containers(pod); i++) {
		struct js_pod_ctr_info c;
		js_pod_ctr_info(pod, i, &c);
		json_array_append_new(c.init ? init : main, ctr_status(pod, i, in.initialized));
	}
	if (json_array_size(init))
		json_object_set_new(st, "initContainerStatuses", init);
	else
		json_decref(init);
	json_object_set_new(st, "containerStatuses", main);
	json_object_set_new(o, "status", st);
	return o;
}
