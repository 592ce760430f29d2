/*
 * kdescribe.c - `kubectl jobset describe NAME` (docs/kubectl-jobset.md):
 * the JobSet's header and conditions, its policies in words and the tree
 * ReplicatedJobs -> restart attempts -> Jobs -> pods (api/describe.h), and
 * the recent events of the JobSet, its Jobs and its pods.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/describe.h"
#include "api/jobset.h"
#include "base/json.h"
#include "cli/cli.h"
#include "cli/kubectl.h"
#include "kube/kprint.h"

/* Events shown: the newest, as kubectl describe's tail. */
#define MAX_EVENTS 30

/* The output is printed whole at the end; a buffer that hit its ceiling
 * prints what it holds (js_buf_init(.., 0) has none but memory). */
JS_PRINTF(2, 3) static void bput(struct js_buf *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = js_buf_vprintf(out, fmt, ap);
	va_end(ap);
	(void)r;
}

static void tput(const struct js_ktable *t, const char *indent, struct js_buf *out)
{
	int r = js_ktable_print(t, indent, out);
	(void)r;
}

static const char *meta(const json_t *o, const char *key)
{
	return js_json_str(js_json_path(o, "metadata"), key);
}

static void put_map(struct js_buf *out, const char *title, const json_t *m)
{
	bput(out, "%-13s", title);
	if (json_object_size(m) == 0 ||
	    (json_object_size(m) == 1 && json_object_get(m, "kubectl.kubernetes.io/last-applied-configuration"))) {
		bput(out, "<none>\n");
		return;
	}
	const char *key;
	json_t *v;
	bool first = true;
	json_object_foreach(js_json_unconst(m), key, v) {
		if (strcmp(key, "kubectl.kubernetes.io/last-applied-configuration") == 0)
			continue; /* as kubectl describe: it repeats the object */
		bput(out, "%s%s=%s\n", first ? "" : "             ", key,
				    json_is_string(v) ? json_string_value(v) : "");
		first = false;
	}
}

static const char *state(const json_t *js)
{
	const char *t = js_json_str(js_json_path(js, "status"), "terminalState");
	if (t)
		return t;
	if (json_is_true(js_json_path(js, "spec.suspend")))
		return "Suspended";
	const json_t *conds = js_json_path(js, "status.conditions");
	for (size_t i = 0; i < json_array_size(conds); i++) {
		const json_t *c = json_array_get(conds, i);
		const char *ty = js_json_str(c, "type"), *s = js_json_str(c, "status");
		if (ty && s && strcmp(ty, "RestartingJobSet") == 0 && strcmp(s, "True") == 0)
			return "Restarting";
	}
	return "Running";
}

/* When an event last happened, as Unix seconds (0 when unknown). */
static int64_t event_time(const json_t *e)
{
	return js_describe_event_time_ms(e) / 1000;
}

static int by_time(const void *a, const void *b)
{
	int64_t x = event_time(*(json_t *const *)a), y = event_time(*(json_t *const *)b);
	return x < y ? -1 : x > y;
}

/* The events whose `regarding` is the JobSet, one of its Jobs or pods
 * (those of an older attempt too, by name, once deleted). */
static void put_events(struct kctx *k, const json_t *js, const json_t *jobs, const json_t *pods, struct js_buf *out)
{
	json_t *evs = NULL;
	bput(out, "Events:\n");
	if (kjs_list_all(k, &js_client_res_events, k->ns, NULL, &evs) != 0) {
		bput(out, "  <unavailable>\n");
		return;
	}
	json_t **mine = js_xcalloc(json_array_size(evs) + 1, sizeof(*mine));
	size_t n = 0;
	for (size_t i = 0; i < json_array_size(evs); i++) {
		json_t *e = json_array_get(evs, i);
		if (js_describe_event_regards(js, jobs, pods, e))
			mine[n++] = e;
	}
	qsort(mine, n, sizeof(*mine), by_time);
	if (n == 0) {
		bput(out, "  <none>\n");
	} else {
		struct js_ktable *t = js_ktable_new(6);
		js_ktable_add(t, (const char *const[]){"Type", "Reason", "Age", "From", "Object", "Message"});
		for (size_t i = n > MAX_EVENTS ? n - MAX_EVENTS : 0; i < n; i++) {
			const json_t *e = mine[i];
			char age[JS_KPRINT_AGE_LEN], obj[512];
			const char *from = js_json_str(e, "reportingController");
			if (!from || !*from)
				from = js_json_str(js_json_path(e, "deprecatedSource"), "component");
			(void)snprintf(obj, sizeof(obj), "%s/%s",
				       js_json_str(json_object_get(e, "regarding"), "kind"),
				       js_json_str(json_object_get(e, "regarding"), "name"));
			for (char *p = obj; *p && *p != '/'; p++)
				*p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
			int64_t when = event_time(e);
			if (when)
				js_kprint_duration(k->now - when, age);
			else
				(void)snprintf(age, sizeof(age), "<unknown>");
			js_ktable_add(t, (const char *const[]){js_json_str(e, "type"), js_json_str(e, "reason"), age, from,
							       obj, js_json_str(e, "note")});
		}
		tput(t, "  ", out);
		js_ktable_free(t);
	}
	free(mine);
	json_decref(evs);
}

int kjs_describe(struct kctx *k)
{
	if (k->npos != 1)
		return kjs_usage(k, "describe takes the JobSet's NAME");
	int rc = kjs_connect(k);
	if (rc)
		return rc;
	const char *name = k->pos[0];
	json_t *js = NULL, *jobs = NULL, *pods = NULL;
	if ((rc = kjs_get_jobset(k, name, &js)) != 0)
		return rc;
	char sel[512];
	(void)snprintf(sel, sizeof(sel), "%s=%s", JS_LABEL_JOBSET_NAME, name);
	if ((rc = kjs_list_all(k, &js_client_res_jobs, k->ns, sel, &jobs)) != 0 ||
	    (rc = kjs_list_all(k, &js_client_res_pods, k->ns, sel, &pods)) != 0) {
		json_decref(js);
		json_decref(jobs);
		return rc;
	}
	struct js_buf out;
	js_buf_init(&out, 0);
	char age[JS_KPRINT_AGE_LEN];
	const json_t *st = json_object_get(js, "status");
	bput(&out, "Name:        %s\nNamespace:   %s\n", name, k->ns);
	put_map(&out, "Labels:", js_json_path(js, "metadata.labels"));
	put_map(&out, "Annotations:", js_json_path(js, "metadata.annotations"));
	bput(&out, "Created:     %s (%s ago)\n", meta(js, "creationTimestamp") ? meta(js, "creationTimestamp") : "?",
			    js_kprint_age(meta(js, "creationTimestamp"), k->now, age));
	if (js_json_str(st, "startTime"))
		bput(&out, "Start Time:  %s\n", js_json_str(st, "startTime"));
	bput(&out, "State:       %s\n", state(js));
	bput(&out, "Restarts:    %lld (%lld counted toward maxRestarts)\n",
			    (long long)json_integer_value(json_object_get(st, "restarts")),
			    (long long)json_integer_value(json_object_get(st, "restartsCountTowardsMax")));
	if (json_object_get(st, "executionAttempts"))
		bput(&out, "Execution Attempts: %lld\n",
				    (long long)json_integer_value(json_object_get(st, "executionAttempts")));
	bput(&out, "Conditions:\n");
	const json_t *conds = json_object_get(st, "conditions");
	if (json_array_size(conds) == 0) {
		bput(&out, "  <none>\n");
	} else {
		struct js_ktable *t = js_ktable_new(4);
		js_ktable_add(t, (const char *const[]){"Type", "Status", "Reason", "Message"});
		for (size_t i = 0; i < json_array_size(conds); i++) {
			const json_t *c = json_array_get(conds, i);
			js_ktable_add(t, (const char *const[]){js_json_str(c, "type"), js_json_str(c, "status"),
							       js_json_str(c, "reason"), js_json_str(c, "message")});
		}
		tput(t, "  ", &out);
		js_ktable_free(t);
	}
	if (js_describe_policies(js, &out) == 0 && js_describe_tree(js, jobs, pods, &out) == 0)
		put_events(k, js, jobs, pods, &out);
	fputs(js_buf_str(&out), stdout);
	js_buf_done(&out);
	json_decref(js);
	json_decref(jobs);
	json_decref(pods);
	return JS_EXIT_OK;
}
