/*
 * oldpods.c - restart cleanup "direct" (core/reconcile.h): the pods of older
 * restart attempts that are not Succeeded or Failed, by one label- and
 * field-selected LIST, read while the JobSet is restarting. Pods are not
 * cached (memory: issue 9). A failed LIST fails the pass, which is retried:
 * never create blind.
 */
#include "base/arena.h"
#include "base/buf.h"
#include "base/json.h"
#include "ctrl/sync_int.h"

int js__oldpods_list(struct js_controller *c, struct js_arena *a, const struct js__observed *o,
		     struct js_oldpod **ret, size_t *ret_n)
{
	struct js_buf sel;
	js_buf_init(&sel, 256);
	int r = js_reconcile_old_pods_selector(o->rec->js, &sel);
	struct js_list_opts lo = {.label_selector = js_buf_str(&sel),
				  .field_selector = "status.phase!=Succeeded,status.phase!=Failed"};
	json_t *list = NULL;
	struct js_apierr err = {0};
	if (r == 0)
		r = js_client_list(c->client, &js_client_res_pods, o->ns, &lo, &list, &err);
	js__count(c, "GET", r, &err, 200); /* a LIST is a GET on the wire */
	if (r < 0 && !js__aborted(c))
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': listing the pods of older attempts: %s", o->ns,
			      o->name, js__why(&err, r));
	js_apierr_done(&err);
	js_buf_done(&sel);
	const json_t *items = json_object_get(list, "items");
	size_t n = 0, i;
	json_t *p;
	*ret = js_arena_calloc(a, json_array_size(items) + 1, sizeof(**ret));
	json_array_foreach(items, i, p) {
		const json_t *md = json_object_get(p, "metadata");
		const json_t *lb = json_object_get(md, "labels");
		const char *name = js_json_str(md, "name");
		const char *job = js_json_str(lb, "batch.kubernetes.io/job-name");
		if (!job)
			job = js_json_str(lb, "job-name");
		if (!name)
			continue;
		(*ret)[n++] = (struct js_oldpod){.name = js_arena_strdup(a, name),
						 .job_name = job ? js_arena_strdup(a, job) : NULL,
						 .deleting = js_json_str(md, "deletionTimestamp") != NULL};
	}
	*ret_n = n;
	json_decref(list);
	return r;
}
