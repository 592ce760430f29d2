/*
 * kreport.c - `kubectl jobset report NAME [-o html|json]`
 * (docs/kubectl-jobset.md): the picture of a JobSet on a cluster, the same
 * page `jobset run` writes as report.html. Reads the JobSet, its Jobs and
 * pods (by label) and the namespace's events; picture/fromapi.h rebuilds
 * the timeline from them, picture/html.h draws it. Prints the page (or the
 * timeline as JSON) to stdout, so `> run.html` keeps it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/jobset.h"
#include "base/buf.h"
#include "base/emit.h"
#include "cli/cli.h"
#include "cli/kubectl.h"
#include "picture/fromapi.h"
#include "picture/html.h"

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int kjs_report(struct kctx *k)
{
	const char *o = k->output ? k->output : "html";
	if (strcmp(o, "html") != 0 && strcmp(o, "json") != 0)
		return kjs_usage(k, "unknown output format \"%s\" for report: html or json", o);
	if (k->npos != 1)
		return kjs_usage(k, "report takes the JobSet's NAME");
	int rc = kjs_connect(k);
	if (rc)
		return rc;
	const char *name = k->pos[0];
	json_t *js = NULL, *jobs = NULL, *pods = NULL, *evs = NULL;
	char *ev_err = NULL;
	if ((rc = kjs_get_jobset_in(k, name, &js)) != 0)
		return rc;
	char sel[512];
	(void)snprintf(sel, sizeof(sel), "%s=%s", JS_LABEL_JOBSET_NAME, name);
	/* The server's Forbidden names the verb, resource and namespace. */
	if ((rc = kjs_list_all(k, &js_client_res_jobs, k->ns, sel, &jobs)) != 0 ||
	    (rc = kjs_list_all(k, &js_client_res_pods, k->ns, sel, &pods)) != 0)
		goto out;
	/* Without events the page still draws what the objects hold, and says
	 * what is missing: a reader may lack only that permission. */
	struct js_apierr e = {0};
	int r = kjs_list_quiet(k, &js_client_res_events, k->ns, NULL, &evs, &e);
	if (r < 0) {
		ev_err = js_buf_format("%s: %s", e.reason ? e.reason : js_apierr_strerror(r),
				       e.message ? e.message : js_apierr_strerror(r));
		fprintf(stderr, "warning: the events of namespace \"%s\" cannot be read (%s): the report leaves out the "
				"pods already deleted, ignoring\n", k->ns, ev_err);
	}
	js_apierr_done(&e);
	struct js_fromapi_input in = {.jobset = js, .jobs = jobs, .pods = pods, .events = evs, .events_error = ev_err,
				      .now_ms = wall_ms()};
	struct js_timeline *t = NULL;
	if (js_fromapi_timeline(&in, &t) != 0) {
		fprintf(stderr, "error: jobset %s in namespace \"%s\": the server's object has no metadata.name\n", name,
			k->ns);
		rc = JS_EXIT_INVALID;
		goto out;
	}
	struct js_buf b;
	js_buf_init(&b, 0);
	if (o[0] == 'h') {
		r = js_html_report(t, &b);
	} else {
		json_t *v = js_timeline_to_json(t);
		r = v ? js_emit_json(v, &b) : -ENOMEM;
		json_decref(v);
	}
	if (r == 0)
		fputs(js_buf_str(&b), stdout);
	else
		rc = (fprintf(stderr, "error: the report does not fit in memory: %s\n", js_strerror(r)), JS_EXIT_USAGE);
	js_buf_done(&b);
	js_timeline_free(t);
out:
	free(ev_err);
	json_decref(js);
	json_decref(jobs);
	json_decref(pods);
	json_decref(evs);
	return rc;
}
