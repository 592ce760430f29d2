/*
 * status.c - the status write of a reconcile (ctrl/sync_int.h): a merge
 * patch of the status subresource carrying only the members that changed,
 * with the resourceVersion the JobSet was read at as a precondition (a
 * conflict retries the key), sent once and read back when its answer was
 * lost.
 */
#include <string.h>

#include "api/codec.h"
#include "base/json.h"
#include "base/arena.h"
#include "ctrl/sync_int.h"

/* Did the status write land although no answer said so? The write is sent
 * once (js_write_opts.once): a reset connection or a lost answer leaves its
 * outcome unknown - repeating it would meet its own resourceVersion change
 * as a conflict, and the restart it carries would then never be counted or
 * announced (issue 13). So the JobSet is read back: it landed when this
 * incarnation moved past the resourceVersion we wrote at and its status
 * already says all we wrote. Returns the object read (caller frees) when it
 * landed, else NULL. */
static json_t *status_landed(struct js_controller *c, const struct js__observed *o, const json_t *want)
{
	json_t *cur = NULL;
	struct js_apierr err = {0};
	int r = js_client_get(c->client, &js_client_res_jobsets, o->ns, o->name, NULL, &cur, &err);
	js__count(c, "GET", r, &err, 200);
	js_apierr_done(&err);
	if (r < 0)
		return NULL;
	const json_t *md = json_object_get(cur, "metadata");
	const char *uid = js_json_str(md, "uid"), *rv = js_json_str(md, "resourceVersion");
	bool landed = uid && o->rec->uid && strcmp(uid, o->rec->uid) == 0 && rv && strcmp(rv, o->rec->rv) != 0;
	json_t *diff = landed ? js_json_merge_diff(json_object_get(cur, "status"), want) : NULL;
	if (!landed || diff) {
		json_decref(diff);
		json_decref(cur);
		return NULL;
	}
	return cur;
}

/* Merge patch of the status subresource: only what changed, at the
 * resourceVersion the JobSet was read at. */
int js__status_write(struct js__body *b, const struct js_plan *plan)
{
	struct js_controller *c = b->c;
	struct js__observed *o = b->o;
	json_t *want = js_codec_encode_status(plan->status);
	json_t *diff = js_json_merge_diff(o->rec->status, want);
	if (!diff) {
		json_decref(want);
		return 0; /* the stored status already says so */
	}
	/* Before the write: its watch event may come before its answer. */
	js__ctrl_note_written(c, o->rec->key, NULL, want);
	json_t *body = json_pack("{s:{s:s}, s:o}", "metadata", "resourceVersion", o->rec->rv, "status", diff);
	struct js_write_opts wo = {.subresource = "status", .once = true};
	struct js_apierr err = {0};
	json_t *got = NULL;
	int r = js_client_patch(c->client, &js_client_res_jobsets, o->ns, o->name, JS_PATCH_MERGE, body, &wo, &got,
				&err);
	js__count(c, "PATCH", r, &err, 200);
	json_decref(body);
	if (r < 0 && err.http_code == 0 && !js__aborted(c)) {
		got = status_landed(c, o, want);
		if (got) {
			js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO,
				      "jobset '%s/%s': status write: %s, but it landed (read back)", o->ns, o->name,
				      js__why(&err, r));
			r = 0;
		}
	}
	if (r == JS_ECONFLICT) {
		b->conflict = true;
		(void)js_metrics_add(c->metrics, JS__M_STATUS_CONFLICTS, NULL, 1);
	} else if (r < 0) {
		if (!js__aborted(c))
			js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': status write: %s", o->ns, o->name,
				      js__why(&err, r));
	} else {
		const char *rv = js_json_str(json_object_get(got, "metadata"), "resourceVersion");
		js__ctrl_note_written(c, o->rec->key, rv, want);
		/* The next pass of the key waits until the JobSet cache shows
		 * this write (rw.c): a pass on the status before it would
		 * decide again what this one did. */
		if (rv)
			js__rw_note(b, JS_EXPECT_STATUS, o->name, NULL, js_arena_strdup(b->a, rv));
	}
	json_decref(want);
	json_decref(got);
	js_apierr_done(&err);
	return r;
}
