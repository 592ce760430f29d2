/*
 * watcher.c - hang detection's part of mpod.kb.io (gate ProgressDeadline;
 * docs/progress-deadline.md "On a cluster"): a pod whose ReplicatedJob has
 * a progress deadline (the controller's render put the settings in effect
 * on its pods, api/render.c) gets
 *
 *  - an emptyDir volume JS_HEARTBEAT_VOLUME (1 MiB: the heartbeat file is
 *    empty; only its mtime is read), mounted at JS_HEARTBEAT_MOUNT in every
 *    container, and JOBSET_PROGRESS_FILE first in every container's env,
 *    so that `$(JOBSET_PROGRESS_FILE)` works in the workload's own env,
 *    command and args, as in `jobset run`;
 *  - the watcher: a native sidecar (an init container with restartPolicy
 *    Always, last of the init containers, so that it starts right before
 *    the workload) running `in-place-restart-agent --watch-progress` with
 *    the settings in its env (src/agent/watch.c);
 *  - the label JS_LABEL_PROGRESS, which the controller's cache of watched
 *    pods selects on (ctrl/hangs.c): no cluster-wide pod cache.
 *
 * The watcher has no API credentials and needs none: it reports through
 * its termination message. It runs as an unprivileged user with a
 * read-only root and mount, and requests what it uses (it sleeps until the
 * next instant a pod could be late), with limits equal to the requests so
 * that a Guaranteed pod stays Guaranteed.
 */
#include <stdio.h>
#include <string.h>

#include "api/heartbeat.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/str.h"
#include "webhook/webhook_int.h"

/* What the watcher asks for and may use (BENCHMARKS.md "Hang detection":
 * its resident set is far below the memory figure). */
#define WATCHER_CPU "10m"
#define WATCHER_MEMORY "32Mi"
/* A non-root user of no image in particular: the watcher reads one mtime
 * in a 0777 emptyDir and writes its termination message, which the
 * kubelet makes writable by any user. */
#define WATCHER_UID 65532

static json_t *array_of(json_t *parent, const char *key)
{
	json_t *v = json_object_get(parent, key);
	if (!json_is_array(v)) {
		v = json_array();
		json_object_set_new(parent, key, v);
	}
	return v;
}

static bool named(const json_t *list, const char *name)
{
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e)
	{
		if (js_str_match(js_json_str(e, "name"), name))
			return true;
	}
	return false;
}

/* A container already mounting something at JS_HEARTBEAT_MOUNT, or NULL. */
static const char *mount_clash(const json_t *spec)
{
	static const char *const lists[] = {"initContainers", "containers"};
	for (size_t k = 0; k < JS_ARRAY_SIZE(lists); k++) {
		size_t i, j;
		json_t *c, *m;
		json_array_foreach(json_object_get(spec, lists[k]), i, c)
		{
			json_array_foreach(json_object_get(c, "volumeMounts"), j, m)
			{
				if (js_str_match(js_json_str(m, "mountPath"), JS_HEARTBEAT_MOUNT))
					return js_json_str(c, "name") ? js_json_str(c, "name") : "";
			}
		}
	}
	return NULL;
}

/* The pod's first reserved name in use, as a message, or NULL. */
static char *clash(const json_t *spec)
{
	if (named(json_object_get(spec, "volumes"), JS_HEARTBEAT_VOLUME))
		return js_buf_format("spec.volumes: the volume name '%s' is reserved for hang detection (the "
				     "heartbeat directory of " JS_ANN_PROGRESS_DEADLINE "): rename the pod's volume",
				     JS_HEARTBEAT_VOLUME);
	if (named(json_object_get(spec, "initContainers"), JS_HEARTBEAT_WATCHER) ||
	    named(json_object_get(spec, "containers"), JS_HEARTBEAT_WATCHER))
		return js_buf_format("spec: the container name '%s' is reserved for hang detection (the watcher of "
				     JS_ANN_PROGRESS_DEADLINE "): rename the pod's container",
				     JS_HEARTBEAT_WATCHER);
	const char *c = mount_clash(spec);
	if (c)
		return js_buf_format("spec: container '%s' mounts a volume at %s, where hang detection mounts the "
				     "heartbeat directory (" JS_ANN_PROGRESS_DEADLINE "): move that mount",
				     c, JS_HEARTBEAT_MOUNT);
	return NULL;
}

static json_t *env(const char *name, const char *value)
{
	return json_pack("{s:s,s:s}", "name", name, "value", value);
}

static json_t *mount(bool ro)
{
	json_t *m = json_pack("{s:s,s:s}", "name", JS_HEARTBEAT_VOLUME, "mountPath", JS_HEARTBEAT_MOUNT);
	if (ro)
		json_object_set_new(m, "readOnly", json_true());
	return m;
}

static json_t *watcher(const struct js_webhook_admit_cfg *cfg, int32_t deadline, int32_t startup)
{
	char d[16], s[16];
	snprintf(d, sizeof(d), "%d", (int)deadline);
	snprintf(s, sizeof(s), "%d", (int)startup);
	const char *image = cfg->watcher_image && *cfg->watcher_image ? cfg->watcher_image : JS_WEBHOOK_WATCHER_IMAGE;
	json_t *res = json_pack("{s:s,s:s}", "cpu", WATCHER_CPU, "memory", WATCHER_MEMORY);
	json_t *c = json_pack("{s:s,s:s,s:[s,s],s:s,s:[o,o,o],s:[o],s:{s:O,s:o},s:s,s:s}", "name", JS_HEARTBEAT_WATCHER,
			      "image", image, "command", JS_WEBHOOK_WATCHER_COMMAND, "--watch-progress", "restartPolicy",
			      "Always", "env", env(JS_HEARTBEAT_ENV, JS_HEARTBEAT_MOUNT "/" JS_HEARTBEAT_FILE),
			      env(JS_HEARTBEAT_ENV_DEADLINE, d), env(JS_HEARTBEAT_ENV_STARTUP, s), "volumeMounts",
			      mount(true), "resources", "requests", res, "limits", res, "terminationMessagePath",
			      "/dev/termination-log", "terminationMessagePolicy", "File");
	json_object_set_new(c, "securityContext",
			    json_pack("{s:b,s:i,s:b,s:b,s:{s:[s]}}", "runAsNonRoot", 1, "runAsUser", WATCHER_UID,
				      "allowPrivilegeEscalation", 0, "readOnlyRootFilesystem", 1, "capabilities",
				      "drop", "ALL"));
	return c;
}

int js__watcher_inject(const struct js_webhook_admit_cfg *cfg, json_t *pod, char **ret_err)
{
	if (!cfg->gates.progress_deadline)
		return 0;
	json_t *meta = json_object_get(pod, "metadata");
	const json_t *ann = json_object_get(meta, "annotations");
	int32_t deadline, startup;
	if (js_heartbeat_parse(js_json_str(ann, JS_ANN_PROGRESS_DEADLINE), &deadline) < 0)
		return 0; /* none, or not the controller's: validation refused any other */
	if (js_heartbeat_parse(js_json_str(ann, JS_ANN_PROGRESS_STARTUP), &startup) < 0)
		startup = deadline;
	json_t *labels = json_object_get(meta, "labels");
	if (js_str_match(js_json_str(labels, JS_LABEL_PROGRESS), JS_LABEL_PROGRESS_VALUE))
		return 0; /* given already (a reinvocation): once is enough */
	json_t *spec = json_object_get(pod, "spec");
	if (!json_is_object(spec))
		return 0;
	char *why = clash(spec);
	if (why) {
		*ret_err = why;
		return JS_EINVALID;
	}
	static const char *const lists[] = {"initContainers", "containers"};
	for (size_t k = 0; k < JS_ARRAY_SIZE(lists); k++) {
		size_t i;
		json_t *c;
		json_array_foreach(json_object_get(spec, lists[k]), i, c)
		{
			json_array_insert_new(array_of(c, "env"), 0,
					      env(JS_HEARTBEAT_ENV, JS_HEARTBEAT_MOUNT "/" JS_HEARTBEAT_FILE));
			json_array_append_new(array_of(c, "volumeMounts"), mount(false));
		}
	}
	json_array_append_new(array_of(spec, "volumes"),
			      json_pack("{s:s,s:{s:s}}", "name", JS_HEARTBEAT_VOLUME, "emptyDir", "sizeLimit", "1Mi"));
	json_array_append_new(array_of(spec, "initContainers"), watcher(cfg, deadline, startup));
	if (!json_is_object(labels)) {
		labels = json_object();
		json_object_set_new(meta, "labels", labels);
	}
	json_object_set_new(labels, JS_LABEL_PROGRESS, json_string(JS_LABEL_PROGRESS_VALUE));
	return 0;
}
