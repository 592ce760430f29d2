/*
 * pod_fuzz.c - libFuzzer target for what the local runtime makes of a pod
 * template (local/pod.h): the container list, command and args, env with
 * $(VAR) expansion and fieldRef/configMapKeyRef/secretKeyRef/envFrom, the
 * GPU share of each container, the volume checks, and the Pod JSON it
 * reports - everything between a PodTemplateSpec and the argv/envp that
 * would be exec'd. Nothing is started.
 *
 * Input: a YAML or JSON stream; document 0 is the PodTemplateSpec
 * (metadata, spec), the others are the manifest's ConfigMaps, Secrets and
 * PVCs (local/objects.h), as `jobset run` reads them. The pod is built as
 * the runner builds it (js_pod_new, process mode, no run directory), once
 * as pod 0 of an Indexed Job with 4 GPUs and once NonIndexed without.
 *
 * Nothing may crash, leak or trip a sanitizer; a template the checks
 * accept must build, and every argv/envp must be NULL-terminated. No state
 * survives between inputs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/load.h"
#include "local/gpu.h"
#include "local/objects.h"
#include "local/pod.h"
#include "local/podjson.h"
#include "local/volumes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t walk(const struct js_pod *pod)
{
	size_t total = 0;
	for (size_t i = 0; i < js_pod_n_containers(pod); i++) {
		char *const *argv = js_pod_ctr_argv(pod, i);
		char *const *envp = js_pod_ctr_envp(pod, i);
		for (size_t k = 0; argv && argv[k]; k++)
			total += strlen(argv[k]);
		for (size_t k = 0; envp && envp[k]; k++)
			total += strlen(envp[k]);
		total += strlen(js_pod_ctr_name(pod, i));
	}
	return total;
}

static void build(const json_t *tmpl, const struct js_objects *objects, int32_t index, const char *const *gpus)
{
	struct js_pod_host host = {
		.mode = JS_SANDBOX_NONE, .death_fd = -1, .log_dir = "/nonexistent-js-fuzz/logs", .node_name = "node-0",
		.path_env = "/usr/bin:/bin", .home_env = "/home/u", .hosts_env = "/nonexistent-js-fuzz/hosts",
		.objects = objects,
	};
	struct js_pod_init init = {
		.id = 1, .name = "js-rj-0-0-abcde", .namespace_ = "default", .uid = "uid-1", .job_name = "js-rj-0",
		.index = index, .hostname = "js-rj-0-0", .subdomain = "js", .ip = "10.0.0.2", .job_uid = "job-uid",
		.workdir = "/nonexistent-js-fuzz/work", .tmpl = tmpl, .gpus = gpus,
	};
	struct js_pod *pod = NULL;
	char *err = NULL;
	if (js_pod_new(&init, &host, &pod, &err) < 0)
		abort(); /* the checks accepted it: the runner must be able to build it */
	(void)walk(pod);
	json_t *j = js_podjson_pod(pod, true);
	if (!json_is_object(j))
		abort();
	json_decref(j);
	js_pod_free(pod);
}

static void one(const json_t *tmpl, const struct js_objects *objects)
{
	static const char *const gpus[] = {"0", "1", "2", "3", NULL};
	char *err = NULL;
	int r = js_pod_check_template(tmpl, &err);
	free(err);
	err = NULL;
	int ri = js_pod_check_template_images(tmpl, &err);
	free(err);
	err = NULL;
	if (ri == 0 && js_volumes_check(tmpl, objects, &err) < 0)
		ri = -1;
	free(err);
	err = NULL;
	int64_t n_gpus = 0;
	if (js_gpu_pod_count(json_object_get(tmpl, "spec"), &n_gpus, &err) < 0)
		ri = -1;
	free(err);
	if (r == 0 && ri == 0) {
		build(tmpl, objects, 0, n_gpus > 0 && n_gpus <= 4 ? gpus : NULL);
		build(tmpl, objects, -1, NULL);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct js_diag d;
	js_diag_init(&d);
	struct js_docs *docs = NULL;
	if (js_docs_load("fuzz", (const char *)data, size, &d, &docs) == 0) {
		struct js_objects *objects = js_objects_new();
		bool ok = js_docs_count(docs) > 0;
		for (size_t i = 1; ok && i < js_docs_count(docs); i++) {
			char *err = NULL;
			ok = js_objects_add(objects, js_docs_root(docs, i), &err) >= 0;
			free(err);
		}
		if (ok)
			one(js_docs_root(docs, 0), objects);
		js_objects_free(objects);
		js_docs_free(docs);
	}
	js_diag_done(&d);
	return 0;
}
