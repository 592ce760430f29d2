/*
 * podcond.c - a condition the controller sets on a pod before it deletes
 * it, so that the Job's podFailurePolicy can tell why the pod failed:
 * DisruptionTarget for exclusive placement (placement.c), and
 * ProgressDeadlineExceeded for hang detection (hangs.c).
 */
#include <time.h>

#include "base/json.h"
#include "base/str.h"
#include "base/time.h"
#include "ctrl/ctrl_int.h"

static void count(struct js_controller *c, const char *method, int r, const struct js_apierr *e)
{
	js__ctrl_count_request(c, method, r == 0 ? 200 : e->http_code);
}

int js__podcond_ensure(struct js_controller *c, const struct js__podcond *pc)
{
	struct js_apierr e = {0};
	json_t *pod = NULL;
	int r = js_client_get(c->client, &js_client_res_pods, pc->ns, pc->name, NULL, &pod, &e);
	count(c, "GET", r, &e);
	js_apierr_done(&e);
	if (r < 0)
		return r;
	if (!js_str_match(js_json_str(json_object_get(pod, "metadata"), "uid"), pc->uid)) {
		json_decref(pod);
		return JS_ENOTFOUND; /* another incarnation: not the pod meant */
	}
	json_t *status = json_object_get(pod, "status");
	if (!json_is_object(status)) {
		status = json_object();
		json_object_set_new(pod, "status", status);
	}
	json_t *conds = json_object_get(status, "conditions");
	if (!json_is_array(conds)) {
		conds = json_array();
		json_object_set_new(status, "conditions", conds);
	}
	size_t i;
	json_t *cond;
	long at = -1;
	json_array_foreach(conds, i, cond)
	{
		if (js_str_match(js_json_str(cond, "type"), pc->type))
			at = (long)i;
	}
	if (at >= 0 && js_str_match(js_json_str(json_array_get(conds, (size_t)at), "status"), "True")) {
		json_decref(pod);
		return 0;
	}
	char now[21];
	js_time_format_rfc3339((int64_t)time(NULL), now);
	json_t *want = json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", pc->type, "status", "True", "reason", pc->reason,
				 "message", pc->message, "lastTransitionTime", now);
	if (at >= 0)
		json_array_set_new(conds, (size_t)at, want);
	else
		json_array_append_new(conds, want);
	/* An update, not a patch: the resourceVersion read makes it apply to
	 * the pod as read; a conflict is retried with the queue's backoff. */
	struct js_write_opts wo = {.subresource = "status"};
	r = js_client_update(c->client, &js_client_res_pods, pc->ns, pod, &wo, NULL, &e);
	count(c, "PUT", r, &e);
	js_apierr_done(&e);
	json_decref(pod);
	return r;
}
