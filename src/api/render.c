/*
 * render.c - child Jobs, headless Service and PVCs of a JobSet (SPEC §6-§8).
 */
#include "api/render.h"
#include "api/sched.h"
#include "api/quarantine.h"
#include "api/heartbeat.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "api/template.h"
#include "base/buf.h"
#include "base/common.h"
#include "base/hash.h"
#include "base/json.h"

const char *js_jobset_name(const struct js_jobset *js)
{
	return js->meta.name ? js->meta.name : "";
}

const char *js_jobset_namespace(const struct js_jobset *js)
{
	return js->meta.namespace_ && js->meta.namespace_[0] ? js->meta.namespace_ : "default";
}

const char *js_jobset_subdomain(const struct js_jobset *js)
{
	const struct js_network *n = js->spec.network;
	if (n && n->subdomain && n->subdomain[0])
		return n->subdomain;
	return js_jobset_name(js);
}

bool js_jobset_dns_hostnames(const struct js_jobset *js)
{
	const struct js_network *n = js->spec.network;
	return n && n->has_enable_dns_hostnames && n->enable_dns_hostnames;
}

int js_render_job_name_to(struct js_buf *out, const struct js_jobset *js, const struct js_rjob *rjob,
			  int32_t job_index)
{
	return js_buf_printf(out, "%s-%s-%" PRId32, js_jobset_name(js), rjob->name ? rjob->name : "", job_index);
}

char *js_render_job_name(const struct js_jobset *js, const struct js_rjob *rjob, int32_t job_index)
{
	struct js_buf b;
	js_buf_init(&b, 0);
	if (js_render_job_name_to(&b, js, rjob, job_index) < 0)
		js_buf_clear(&b);
	return js_buf_take(&b);
}

char *js_render_coordinator(const struct js_jobset *js)
{
	const struct js_coordinator *c = js->spec.coordinator;
	if (!c)
		return NULL;
	struct js_buf b;
	js_buf_init(&b, 0);
	if (js_buf_printf(&b, "%s-%s-%" PRId32 "-%" PRId32 ".%s", js_jobset_name(js),
			  c->replicated_job ? c->replicated_job : "", c->has_job_index ? c->job_index : 0,
			  c->has_pod_index ? c->pod_index : 0, js_jobset_subdomain(js)) < 0)
		js_buf_clear(&b);
	return js_buf_take(&b);
}

void js_render_job_key(const char *namespace_, const char *job_name, char out[41])
{
	struct js_buf b;
	js_buf_init(&b, 0);
	if (js_buf_printf(&b, "%s/%s", namespace_, job_name) < 0)
		js_buf_clear(&b);
	js_hash_sha1_hex(js_buf_str(&b), b.len, out);
	js_buf_done(&b);
}

json_t *js_render_owner_ref(const struct js_jobset *js)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "apiVersion", JS_API_VERSION, "kind", JS_KIND, "name",
			 js_jobset_name(js), "uid", js->meta.uid ? js->meta.uid : "", "controller", 1,
			 "blockOwnerDeletion", 1);
}

const json_t *js_render_jobset_owner(const json_t *obj)
{
	const json_t *refs = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
	size_t i;
	const json_t *ref;
	json_array_foreach(refs, i, ref)
	{
		if (!json_is_true(json_object_get(ref, "controller")))
			continue;
		const char *kind = js_json_str(ref, "kind"), *av = js_json_str(ref, "apiVersion");
		if (kind && av && strcmp(kind, JS_KIND) == 0 && strcmp(av, JS_API_VERSION) == 0)
			return ref;
	}
	return NULL;
}

static void set_i64(json_t *obj, const char *key, int64_t v)
{
	char s[32];
	snprintf(s, sizeof(s), "%" PRId64, v);
	json_object_set_new(obj, key, json_string(s));
}

/* Values shared by the Job's metadata and its pod template's (SPEC §6.3). */
struct keys {
	const char *name, *uid, *rjob, *group;
	int64_t replicas, global_replicas, job_index, global_index, group_replicas, group_index;
	int64_t attempt, job_attempt;
	bool with_job_attempt;
	bool with_exec_attempt; /* KEP-1282 */
	int64_t exec_attempt;
	char job_key[41];
	char *coordinator;
	const char *excl, *node_sel; /* exclusive-placement annotation values or NULL */
};

static void label_and_annotate(json_t *meta, const struct keys *k)
{
	json_t *maps[2] = {js_json_path_make(meta, "labels"), js_json_path_make(meta, "annotations")};
	for (int i = 0; i < 2; i++) {
		json_t *m = maps[i];
		json_object_set_new(m, JS_LABEL_JOBSET_NAME, json_string(k->name));
		json_object_set_new(m, JS_LABEL_JOBSET_UID, json_string(k->uid));
		json_object_set_new(m, JS_LABEL_RJOB_NAME, json_string(k->rjob));
		set_i64(m, JS_LABEL_RJOB_REPLICAS, k->replicas);
		set_i64(m, JS_LABEL_GLOBAL_REPLICAS, k->global_replicas);
		set_i64(m, JS_LABEL_JOB_INDEX, k->job_index);
		set_i64(m, JS_LABEL_JOB_GLOBAL_INDEX, k->global_index);
		json_object_set_new(m, JS_LABEL_JOB_KEY, json_string(k->job_key));
		json_object_set_new(m, JS_LABEL_GROUP_NAME, json_string(k->group));
		set_i64(m, JS_LABEL_GROUP_REPLICAS, k->group_replicas);
		set_i64(m, JS_LABEL_JOB_GROUP_INDEX, k->group_index);
		set_i64(m, JS_LABEL_RESTART_ATTEMPT, k->attempt);
		if (k->with_job_attempt)
			set_i64(m, JS_LABEL_JOB_RESTART_ATTEMPT, k->job_attempt);
		if (k->coordinator)
			json_object_set_new(m, JS_LABEL_COORDINATOR, json_string(k->coordinator));
	}
	/* KEP-1282 "Data Propagation": the execution attempt, an annotation
	 * only, on the Job and on its pod template. */
	if (k->with_exec_attempt)
		set_i64(maps[1], JS_ANN_EXECUTION_ATTEMPT, k->exec_attempt);
	/* Exclusive-placement keys go to annotations only (SPEC §6.3 steps 3-5). */
	if (k->excl)
		json_object_set_new(maps[1], JS_ANN_EXCLUSIVE_TOPOLOGY, json_string(k->excl));
	if (k->excl && k->node_sel)
		json_object_set_new(maps[1], JS_ANN_NODE_SELECTOR, json_string(k->node_sel));
}

static const char *ann(const json_t *annotations, const char *key)
{
	return json_string_value(json_object_get(annotations, key));
}

static void fill_keys(const struct js_jobset *js, size_t ri, int32_t job_index, const struct js_render_opts *opts,
		      const char *job_name, struct keys *k)
{
	const struct js_spec *s = &js->spec;
	const struct js_rjob *r = &s->replicated_jobs[ri];
	memset(k, 0, sizeof(*k));
	k->name = js_jobset_name(js);
	k->uid = js->meta.uid ? js->meta.uid : "";
	k->rjob = r->name ? r->name : "";
	k->group = r->group_name ? r->group_name : "default";
	k->replicas = r->has_replicas ? r->replicas : 1;
	k->job_index = job_index;
	int64_t before = 0, group_before = 0;
	for (size_t i = 0; i < s->n_replicated_jobs; i++) {
		const struct js_rjob *o = &s->replicated_jobs[i];
		int64_t n = o->has_replicas ? o->replicas : 1;
		const char *og = o->group_name ? o->group_name : "default";
		bool same_group = strcmp(og, k->group) == 0;
		k->global_replicas += n;
		if (same_group)
			k->group_replicas += n;
		if (i < ri) {
			before += n;
			if (same_group)
				group_before += n;
		}
	}
	k->global_index = before + job_index;
	k->group_index = group_before + job_index;
	k->attempt = opts && opts->has_attempt ? opts->attempt : js->status.restarts;
	k->with_job_attempt = opts && opts->gates.restart_job;
	k->with_exec_attempt = opts && opts->gates.execution_attempts;
	k->exec_attempt = js->status.has_execution_attempts ? js->status.execution_attempts : 0;
	if (k->with_job_attempt) {
		int si = js_jobset_find_rjob_status(js, r->name);
		if (si >= 0) {
			const struct js_i32list *l = &js->status.replicated_jobs_status[si].job_restarts;
			if (job_index >= 0 && (size_t)job_index < l->n)
				k->job_attempt = l->items[job_index];
		}
	}
	js_render_job_key(js_jobset_namespace(js), job_name, k->job_key);
	k->coordinator = js_render_coordinator(js);
	/* The ReplicatedJob's own exclusive key wins over the JobSet's. */
	const json_t *tann = js_json_path(r->template_, "metadata.annotations");
	if (ann(tann, JS_ANN_EXCLUSIVE_TOPOLOGY)) {
		k->excl = ann(tann, JS_ANN_EXCLUSIVE_TOPOLOGY);
		k->node_sel = ann(tann, JS_ANN_NODE_SELECTOR);
	} else if (ann(js->meta.annotations, JS_ANN_EXCLUSIVE_TOPOLOGY)) {
		k->excl = ann(js->meta.annotations, JS_ANN_EXCLUSIVE_TOPOLOGY);
		k->node_sel = ann(js->meta.annotations, JS_ANN_NODE_SELECTOR);
	}
}

static void add_pvc_volumes(const struct js_jobset *js, json_t *pod_spec)
{
	for (size_t p = 0; p < js->spec.n_volume_claim_policies; p++) {
		size_t i;
		json_t *t;
		json_array_foreach(js->spec.volume_claim_policies[p].templates, i, t) {
			const char *name = json_string_value(js_json_path(t, "metadata.name"));
			if (!name || !js_tmpl_pod_mounts(pod_spec, name))
				continue;
			struct js_buf claim;
			js_buf_init(&claim, 0);
			if (js_buf_printf(&claim, "%s-%s", name, js_jobset_name(js)) < 0)
				js_buf_clear(&claim);
			json_t *vols = json_object_get(pod_spec, "volumes");
			if (!json_is_array(vols)) {
				vols = json_array();
				json_object_set_new(pod_spec, "volumes", vols);
			}
			json_array_append_new(vols, json_pack("{s:s, s:{s:s}}", "name", name, "persistentVolumeClaim",
							      "claimName", js_buf_str(&claim)));
			js_buf_done(&claim);
		}
	}
}

/* KEP-969: the Job names its group template (an annotation, as the KEP
 * says), and its pods the PodGroup the scheduler gangs them in (1.36's pod
 * spec.schedulingGroup). A scheduling field that does not check out adds
 * nothing: validation refuses it before a Job is ever rendered. */
static void add_sched_group(const struct js_jobset *js, size_t ri, json_t *meta, json_t *pod_spec)
{
	struct js_sched_groups *g = NULL;
	if (js_sched_groups(js, NULL, &g) < 0)
		return;
	const struct js_sched_group *x = js_sched_group_of(g, ri);
	if (x) {
		json_object_set_new(js_json_path_make(meta, "annotations"), JS_ANN_SCHED_GROUP_TEMPLATE,
				    json_string(x->template_name));
		json_object_set_new(pod_spec, "schedulingGroup", json_pack("{s:s}", "podGroupName", x->name));
	}
	js_sched_groups_free(g);
}

/* Hang detection (api/heartbeat.h): the settings in effect for the
 * ReplicatedJob go on its pods, as `jobset run` puts them, because the pod
 * webhook sees only the pod when it gives it a watcher. A value the user
 * wrote on the pod template is replaced: the pod carries what the JobSet
 * says, or nothing (the controller checks reports against the JobSet
 * anyway, ctrl/hangs.c). */
static void add_progress(const struct js_jobset *js, size_t ri, json_t *pod_meta)
{
	struct js_heartbeat h;
	json_t *ann = js_json_path_make(pod_meta, "annotations");
	if (js_heartbeat_of(js, ri, &h) < 0 || !h.on) {
		json_object_del(ann, JS_ANN_PROGRESS_DEADLINE);
		json_object_del(ann, JS_ANN_PROGRESS_STARTUP);
		return;
	}
	char buf[16];
	snprintf(buf, sizeof(buf), "%d", (int)h.deadline_s);
	json_object_set_new(ann, JS_ANN_PROGRESS_DEADLINE, json_string(buf));
	snprintf(buf, sizeof(buf), "%d", (int)h.startup_s);
	json_object_set_new(ann, JS_ANN_PROGRESS_STARTUP, json_string(buf));
}

static json_t *copy_or_new(const json_t *v)
{
	return json_is_object(v) ? json_deep_copy(v) : json_object();
}

json_t *js_render_job(const struct js_jobset *js, size_t rjob_index, int32_t job_index,
		      const struct js_render_opts *opts)
{
	const struct js_rjob *r = &js->spec.replicated_jobs[rjob_index];
	char *name = js_render_job_name(js, r, job_index);
	struct keys k;
	fill_keys(js, rjob_index, job_index, opts, name, &k);

	json_t *job = json_object();
	json_object_set_new(job, "apiVersion", json_string("batch/v1"));
	json_object_set_new(job, "kind", json_string("Job"));
	json_t *meta = json_object();
	json_object_set_new(job, "metadata", meta);
	json_object_set_new(meta, "name", json_string(name));
	json_object_set_new(meta, "namespace", json_string(js_jobset_namespace(js)));
	json_object_set_new(meta, "labels", copy_or_new(js_json_path(r->template_, "metadata.labels")));
	json_object_set_new(meta, "annotations", copy_or_new(js_json_path(r->template_, "metadata.annotations")));
	json_t *owners = json_array();
	json_array_append_new(owners, js_render_owner_ref(js));
	json_object_set_new(meta, "ownerReferences", owners);

	json_t *spec = copy_or_new(js_tmpl_job_spec(r));
	json_object_set_new(job, "spec", spec);
	label_and_annotate(meta, &k);
	json_t *pod_meta = js_json_path_make(spec, "template.metadata");
	label_and_annotate(pod_meta, &k);

	json_t *pod_spec = js_json_path_make(spec, "template.spec");
	if (js_jobset_dns_hostnames(js))
		json_object_set_new(pod_spec, "subdomain", json_string(js_jobset_subdomain(js)));

	json_t *job_ann = json_object_get(meta, "annotations");
	if (ann(job_ann, JS_ANN_EXCLUSIVE_TOPOLOGY) && ann(job_ann, JS_ANN_NODE_SELECTOR)) {
		struct js_buf v;
		js_buf_init(&v, 0);
		if (js_buf_printf(&v, "%s_%s", js_jobset_namespace(js), name) < 0)
			js_buf_clear(&v);
		json_t *ns = js_json_path_make(pod_spec, "nodeSelector");
		json_object_set_new(ns, JS_NODE_SELECTOR_NAMESPACED_JOB, json_string(js_buf_str(&v)));
		js_buf_done(&v);
		json_t *tols = json_object_get(pod_spec, "tolerations");
		if (!json_is_array(tols)) {
			tols = json_array();
			json_object_set_new(pod_spec, "tolerations", tols);
		}
		json_array_append_new(tols, json_pack("{s:s, s:s, s:s}", "key", JS_TOLERATION_NO_SCHEDULE, "operator",
						      "Exists", "effect", "NoSchedule"));
	}
	json_object_set_new(spec, "suspend", json_boolean(js->spec.has_suspend && js->spec.suspend));
	if (js->spec.n_volume_claim_policies)
		add_pvc_volumes(js, pod_spec);
	if (opts && opts->gates.workload_aware_scheduling && js->spec.scheduling)
		add_sched_group(js, rjob_index, meta, pod_spec);
	if (opts && opts->gates.node_quarantine)
		js_quarantine_apply(job, opts->quarantine);
	if (opts && opts->gates.progress_deadline)
		add_progress(js, rjob_index, pod_meta);

	free(k.coordinator);
	free(name);
	return job;
}

json_t *js_render_service(const struct js_jobset *js)
{
	const struct js_network *n = js->spec.network;
	bool pnra = !n || !n->has_publish_not_ready_addresses || n->publish_not_ready_addresses;
	json_t *owners = json_array();
	json_array_append_new(owners, js_render_owner_ref(js));
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:{s:s, s:{s:s}, s:b}}", "apiVersion", "v1", "kind",
			 "Service", "metadata", "name", js_jobset_subdomain(js), "namespace",
			 js_jobset_namespace(js), "ownerReferences", owners, "spec", "clusterIP", "None", "selector",
			 JS_LABEL_JOBSET_NAME, js_jobset_name(js), "publishNotReadyAddresses", pnra);
}

json_t *js_render_pvcs(const struct js_jobset *js)
{
	json_t *out = json_array();
	for (size_t p = 0; p < js->spec.n_volume_claim_policies; p++) {
		const struct js_vcp *v = &js->spec.volume_claim_policies[p];
		bool owned = v->retention_policy && v->retention_policy->has_when_deleted &&
			     v->retention_policy->when_deleted == JS_WHEN_DELETED_DELETE;
		size_t i;
		json_t *t;
		json_array_foreach(v->templates, i, t) {
			const char *tname = json_string_value(js_json_path(t, "metadata.name"));
			struct js_buf name;
			js_buf_init(&name, 0);
			if (js_buf_printf(&name, "%s-%s", tname ? tname : "", js_jobset_name(js)) < 0)
				js_buf_clear(&name);
			json_t *meta = json_object();
			json_object_set_new(meta, "name", json_string(js_buf_str(&name)));
			json_object_set_new(meta, "namespace", json_string(js_jobset_namespace(js)));
			json_t *labels = copy_or_new(js_json_path(t, "metadata.labels"));
			json_object_set_new(labels, JS_LABEL_JOBSET_NAME, json_string(js_jobset_name(js)));
			json_object_set_new(meta, "labels", labels);
			const json_t *anns = js_json_path(t, "metadata.annotations");
			if (json_is_object(anns))
				json_object_set_new(meta, "annotations", json_deep_copy(anns));
			if (owned) {
				json_t *owners = json_array();
				json_array_append_new(owners, js_render_owner_ref(js));
				json_object_set_new(meta, "ownerReferences", owners);
			}
			json_t *pvc = json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "PersistentVolumeClaim",
						"metadata", meta);
			json_object_set_new(pvc, "spec", copy_or_new(json_object_get(t, "spec")));
			json_array_append_new(out, pvc);
			js_buf_done(&name);
		}
	}
	return out;
}
