/*
 * events.c - events about the JobSet a reconcile is about (ctrl/sync_int.h),
 * through the controller's recorder (kube/recorder.h), which queues it and
 * sends it from its own thread. An event is advice: one that cannot be
 * queued or written is logged or counted, never fails the pass.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/codec.h"
#include "base/buf.h"
#include "ctrl/sync_int.h"

/* The JobSet as an event's `regarding` (kube/recorder.h). */
static const json_t *regarding(struct js__observed *o)
{
	if (!o->regarding) {
		o->regarding = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "apiVersion", JS_API_VERSION, "kind", JS_KIND,
					 "metadata", "name", o->name, "namespace", o->ns, "resourceVersion",
					 o->rec->rv);
		if (o->rec->uid)
			json_object_set_new(json_object_get(o->regarding, "metadata"), "uid",
					    json_string(o->rec->uid));
	}
	return o->regarding;
}

void js__event(struct js_controller *c, struct js__observed *o, const char *type, const char *reason,
	       const char *msg)
{
	/* Queued, not sent: the recorder's thread writes it (a slow events
	 * endpoint never holds the reconcile). A full queue is counted by the
	 * recorder's on_error (controller.c), not logged here. */
	int r = js_recorder_eventf(c->rec, regarding(o), type, reason, "Reconciling", "%s", msg);
	if (r < 0 && r != -ENOBUFS && !js__aborted(c))
		js__ctrl_logf(c, JS_CONTROLLER_LOG_INFO, "jobset '%s/%s': event %s: %s, ignoring", o->ns, o->name,
			      reason, js_apierr_strerror(r));
}

void js__fail_event(struct js_controller *c, struct js__observed *o, const struct js_action *a, const char *err)
{
	/* "<message> <Job>: <the API server's error>. <hint>", as KEP-1150's
	 * FailedResourcePropagation reads; `err` starts with the Job's name.
	 * An API error can be longer than a note (an invalid Job's whole
	 * template): it is cut, at a character boundary and marked, so that
	 * the hint after it is never lost to the recorder's cut. */
	const char *head = a->fail_message ? a->fail_message : a->why;
	const char *hint = a->fail_hint ? a->fail_hint : "";
	size_t fixed = strlen(head) + 1 + (*hint ? 2 + strlen(hint) : 0) + 3;
	size_t room = fixed < JS_RECORDER_NOTE_MAX ? JS_RECORDER_NOTE_MAX - fixed : 0;
	size_t n = strlen(err);
	const char *cut = "";
	if (n > room) {
		n = room;
		while (n > 0 && ((unsigned char)err[n] & 0xC0) == 0x80)
			n--; /* not inside a UTF-8 sequence */
		cut = "...";
	}
	char *msg = js_buf_format("%s %.*s%s%s%s", head, (int)n, err, cut, *hint ? ". " : "", hint);
	js__event(c, o, "Warning", a->fail_reason, msg);
	free(msg);
}
