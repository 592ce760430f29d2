/*
 * describe.c - policies in words and the attempt tree (api/describe.h).
 */
#include "api/describe.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jobset.h"
#include "api/quarantine.h"
#include "base/json.h"
#include "base/time.h"

#define LABEL_JOB_NAME "batch.kubernetes.io/job-name"
#define LABEL_JOB_NAME_OLD "job-name"

/* Output with the first error kept, so each line needs no check. */
struct out {
	struct js_buf *b;
	int err;
};

JS_PRINTF(2, 3) static void put(struct out *o, const char *fmt, ...)
{
	if (o->err)
		return;
	va_list ap;
	va_start(ap, fmt);
	o->err = js_buf_vprintf(o->b, fmt, ap);
	va_end(ap);
}

/* A JSON array of strings as "a, b, c"; `none` when empty or absent. */
static void put_list(struct out *o, const json_t *a, const char *none)
{
	size_t n = json_array_size(a);
	if (n == 0) {
		put(o, "%s", none);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const char *s = json_string_value(json_array_get(a, i));
		put(o, "%s%s", i ? ", " : "", s ? s : "?");
	}
}

static long long num(const json_t *o, const char *path)
{
	json_t *v = js_json_path(o, path);
	return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

static const char *str(const json_t *o, const char *path)
{
	return json_string_value(js_json_path(o, path));
}

/* ---- policies ---- */

static const char *action_words(const char *a)
{
	static const struct {
		const char *action, *words;
	} t[] = {
		{"FailJobSet", "fail the JobSet"},
		{"RestartJobSet", "restart the whole JobSet (counts toward maxRestarts)"},
		{"RestartJobSetAndIgnoreMaxRestarts", "restart the whole JobSet (not counted toward maxRestarts)"},
		{"RestartJob", "recreate only the failed Job (counts toward maxRestarts)"},
		{"RestartJobAndIgnoreMaxRestarts", "recreate only the failed Job (not counted toward maxRestarts)"},
	};
	for (size_t i = 0; a && i < JS_ARRAY_SIZE(t); i++)
		if (strcmp(a, t[i].action) == 0)
			return t[i].words;
	return NULL;
}

static void success_words(struct out *o, const json_t *spec)
{
	const json_t *sp = json_object_get(spec, "successPolicy");
	const char *op = str(sp, "operator");
	const json_t *targets = json_object_get(sp, "targetReplicatedJobs");
	bool any = op && strcmp(op, "Any") == 0;
	put(o, "  Success:  Completed once %s of ", any ? "any Job" : "every Job");
	put_list(o, targets, "every ReplicatedJob");
	put(o, " has succeeded (operator %s)\n", any ? "Any" : "All");
}

static void failure_words(struct out *o, const json_t *js, const json_t *spec)
{
	const json_t *fp = json_object_get(spec, "failurePolicy");
	if (!fp) {
		put(o, "  Failure:  the first failed Job fails the JobSet (no failurePolicy)\n");
		return;
	}
	const char *strategy = str(fp, "restartStrategy");
	const char *how = "recreating every Job";
	if (strategy && strcmp(strategy, "BlockingRecreate") == 0)
		how = "deleting every Job first, then creating the new attempt";
	else if (strategy && strcmp(strategy, "InPlaceRestart") == 0)
		how = "restarting the pods in place";
	long long max = num(fp, "maxRestarts"), used = num(js, "status.restartsCountTowardsMax");
	put(o, "  Failure:  a failed Job restarts the whole JobSet (%s), at most %lld time%s (%lld used); then the "
	       "JobSet fails\n",
	    how, max, max == 1 ? "" : "s", used);
	const json_t *rules = json_object_get(fp, "rules");
	for (size_t i = 0; i < json_array_size(rules); i++) {
		const json_t *r = json_array_get(rules, i);
		const char *act = str(r, "action");
		const char *words = action_words(act);
		put(o, "            rule %s: a failed Job of ", str(r, "name") ? str(r, "name") : "?");
		put_list(o, json_object_get(r, "targetReplicatedJobs"), "any ReplicatedJob");
		if (json_array_size(json_object_get(r, "onJobFailureReasons"))) {
			put(o, " with reason ");
			put_list(o, json_object_get(r, "onJobFailureReasons"), "");
		}
		if (json_array_size(json_object_get(r, "onJobFailureMessagePatterns"))) {
			put(o, " with a message matching ");
			put_list(o, json_object_get(r, "onJobFailureMessagePatterns"), "");
		}
		if (words)
			put(o, " -> %s\n", words);
		else
			put(o, " -> action %s\n", act ? act : "RestartJobSet (default)");
	}
	if (json_array_size(rules))
		put(o, "            (the first matching rule applies; no match restarts the whole JobSet)\n");
}

static void startup_words(struct out *o, const json_t *spec)
{
	const char *order = str(spec, "startupPolicy.startupPolicyOrder");
	if (order && strcmp(order, "InOrder") == 0)
		put(o, "  Startup:  InOrder: each ReplicatedJob starts once the one before it is ready\n");
	else
		put(o, "  Startup:  AnyOrder: every ReplicatedJob starts at once\n");
	const json_t *rjobs = json_object_get(spec, "replicatedJobs");
	for (size_t i = 0; i < json_array_size(rjobs); i++) {
		const json_t *r = json_array_get(rjobs, i);
		const json_t *deps = json_object_get(r, "dependsOn");
		for (size_t k = 0; k < json_array_size(deps); k++) {
			const json_t *d = json_array_get(deps, k);
			put(o, "            %s starts once %s is %s\n", str(r, "name") ? str(r, "name") : "?",
			    str(d, "name") ? str(d, "name") : "?", str(d, "status") ? str(d, "status") : "?");
		}
	}
}

/* Node quarantine (ours, docs/node-quarantine.md): the rules, then the
 * nodes the current attempt keeps off, from the NodesQuarantined
 * condition the controller keeps in step with the attempt's Jobs. */
static void quarantine_words(struct out *o, const json_t *jobset)
{
	const json_t *ann = js_json_path(jobset, "metadata.annotations");
	if (!js_quarantine_rules_present(ann))
		return;
	const char *codes = json_string_value(json_object_get(ann, JS_ANN_NQ_EXIT_CODES));
	const char *conds = json_string_value(json_object_get(ann, JS_ANN_NQ_POD_CONDITIONS));
	const char *lost = json_string_value(json_object_get(ann, JS_ANN_NQ_NODE_LOST));
	const char *attempts = json_string_value(json_object_get(ann, JS_ANN_NQ_ATTEMPTS));
	/* Values as written, cut: describe shows what is there, valid or not. */
	put(o, "  Quarantine: a node is kept off the next %.10s attempt(s) when a pod failed there with", attempts ? attempts : "1");
	const char *sep = " ";
	if (codes) {
		put(o, "%sexit code %.200s", sep, codes);
		sep = "; ";
	}
	if (conds) {
		put(o, "%spod condition %.400s", sep, conds);
		sep = "; ";
	}
	if (lost && strcmp(lost, "true") == 0)
		put(o, "%sits node lost", sep);
	put(o, "\n");
	const char *msg = NULL;
	const json_t *c;
	size_t i;
	json_array_foreach(js_json_path(jobset, "status.conditions"), i, c) {
		const char *t = str(c, "type"), *st = str(c, "status");
		if (t && st && strcmp(t, JS_COND_NODES_QUARANTINED) == 0 && strcmp(st, "True") == 0)
			msg = str(c, "message");
	}
	const char *at = msg ? strstr(msg, JS_QUARANTINE_MARKER) : NULL;
	struct js_quarantine_list *l = js_xmalloc(sizeof(*l));
	if (!at || js_quarantine_list_parse(at + strlen(JS_QUARANTINE_MARKER), l) < 0)
		l->n = 0;
	if (l->n == 0)
		put(o, "              no node is kept off the current attempt\n");
	for (size_t k = 0; k < l->n; k++) {
		struct js_buf why;
		js_buf_init(&why, 0);
		if (js_quarantine_why_text(&l->items[k], &why) < 0)
			js_buf_clear(&why);
		put(o, "              %s: %s, kept off through attempt %d\n", l->items[k].node, js_buf_str(&why),
		    (int)l->items[k].until);
		js_buf_done(&why);
	}
	free(l);
}

int js_describe_policies(const json_t *jobset, struct js_buf *out)
{
	struct out o = {out, 0};
	const json_t *spec = json_object_get(jobset, "spec");
	put(&o, "Policies:\n");
	success_words(&o, spec);
	failure_words(&o, jobset, spec);
	startup_words(&o, spec);
	quarantine_words(&o, jobset);
	const json_t *ann = js_json_path(jobset, "metadata.annotations");
	const char *want = json_string_value(json_object_get(ann, JS_ANN_RESTART_REQUEST));
	if (want) {
		char now[24];
		(void)snprintf(now, sizeof(now), "%lld", num(jobset, "status.restarts"));
		put(&o, "  Restart:  %s=%s %s\n", JS_ANN_RESTART_REQUEST, want,
		    strcmp(want, now) == 0 ? "(pending: attempt ends at the next reconcile)" : "(spent)");
	}
	return o.err;
}

/* ---- the tree ---- */

static const char *label(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(js_json_path(obj, "metadata.labels"), key));
}

static const char *attempt_of(const json_t *obj)
{
	const char *a = label(obj, JS_LABEL_RESTART_ATTEMPT);
	return a ? a : "?";
}

static const char *job_of_pod(const json_t *pod)
{
	const char *j = label(pod, LABEL_JOB_NAME);
	return j ? j : label(pod, LABEL_JOB_NAME_OLD);
}

static bool deleting(const json_t *obj)
{
	return js_json_path(obj, "metadata.deletionTimestamp") != NULL;
}

/* Attempts sort newest first as numbers; "?" (no label) last. */
static int cmp_attempt(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	bool xn = x[0] >= '0' && x[0] <= '9', yn = y[0] >= '0' && y[0] <= '9';
	if (xn != yn)
		return xn ? -1 : 1;
	long long p = strtoll(x, NULL, 10), q = strtoll(y, NULL, 10);
	return p < q ? 1 : p > q ? -1 : strcmp(x, y);
}

/* Names sort with their numeric tails as numbers: w-2 before w-10. */
static int cmp_name(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	size_t lx = strlen(x), ly = strlen(y);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x, y);
}

/* A set of distinct strings (borrowed), small: linear lookups. */
struct strset {
	const char **v;
	size_t n, cap;
};

static void set_add(struct strset *s, const char *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], x) == 0)
			return;
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 8;
		s->v = js_xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	s->v[s->n++] = x;
}

static bool is_in(const json_t *obj, const char *rjob, const char *attempt)
{
	const char *r = label(obj, JS_LABEL_RJOB_NAME);
	return r && strcmp(r, rjob) == 0 && strcmp(attempt_of(obj), attempt) == 0;
}

static const char *job_state(const json_t *job)
{
	if (deleting(job))
		return "Terminating";
	const json_t *conds = js_json_path(job, "status.conditions");
	for (size_t i = 0; i < json_array_size(conds); i++) {
		const json_t *c = json_array_get(conds, i);
		const char *t = str(c, "type"), *s = str(c, "status");
		if (t && s && strcmp(s, "True") == 0 && (strcmp(t, "Complete") == 0 || strcmp(t, "Failed") == 0))
			return strcmp(t, "Complete") == 0 ? "Complete" : "Failed";
	}
	if (json_is_true(js_json_path(job, "spec.suspend")))
		return "Suspended";
	return "Active";
}

static void put_pod(struct out *o, const json_t *pod)
{
	long long restarts = 0;
	const json_t *cs = js_json_path(pod, "status.containerStatuses");
	for (size_t i = 0; i < json_array_size(cs); i++)
		restarts += num(json_array_get(cs, i), "restartCount");
	const char *phase = str(pod, "status.phase");
	const char *node = str(pod, "spec.nodeName");
	put(o, "        Pod %s  %s  node %s  restarts %lld\n", str(pod, "metadata.name") ? str(pod, "metadata.name") : "?",
	    deleting(pod) ? "Terminating" : phase ? phase : "Pending", node ? node : "<none>", restarts);
}

static void put_job(struct out *o, const char *name, const char *rjob, const char *attempt, const json_t *jobs,
		    const json_t *pods)
{
	const json_t *job = NULL;
	for (size_t i = 0; i < json_array_size(jobs) && !job; i++) {
		const json_t *j = json_array_get(jobs, i);
		const char *n = str(j, "metadata.name");
		if (n && strcmp(n, name) == 0 && is_in(j, rjob, attempt))
			job = j;
	}
	if (job)
		put(o, "      Job %s  %s  active %lld  succeeded %lld  failed %lld\n", name, job_state(job),
		    num(job, "status.active"), num(job, "status.succeeded"), num(job, "status.failed"));
	else
		put(o, "      Job %s (deleted)\n", name);
	struct strset names = {0};
	for (size_t i = 0; i < json_array_size(pods); i++) {
		const json_t *p = json_array_get(pods, i);
		const char *jn = job_of_pod(p);
		if (jn && strcmp(jn, name) == 0 && is_in(p, rjob, attempt))
			set_add(&names, str(p, "metadata.name"));
	}
	if (names.n > 1)
		qsort(names.v, names.n, sizeof(*names.v), cmp_name);
	for (size_t k = 0; k < names.n; k++)
		for (size_t i = 0; i < json_array_size(pods); i++) {
			const json_t *p = json_array_get(pods, i);
			const char *pn = str(p, "metadata.name");
			if (pn && strcmp(pn, names.v[k]) == 0 && is_in(p, rjob, attempt)) {
				put_pod(o, p);
				break;
			}
		}
	free(names.v);
}

static void put_rjob(struct out *o, const json_t *js, const json_t *rj, const json_t *jobs, const json_t *pods)
{
	const char *name = str(rj, "name");
	if (!name)
		return;
	const json_t *st = NULL, *all = js_json_path(js, "status.replicatedJobsStatus");
	for (size_t i = 0; i < json_array_size(all); i++) {
		const char *n = str(json_array_get(all, i), "name");
		if (n && strcmp(n, name) == 0)
			st = json_array_get(all, i);
	}
	json_t *rep = json_object_get(rj, "replicas");
	put(o, "  %s  replicas %lld  ready %lld  succeeded %lld  failed %lld  active %lld  suspended %lld\n", name,
	    json_is_integer(rep) ? (long long)json_integer_value(rep) : 1LL, num(st, "ready"), num(st, "succeeded"),
	    num(st, "failed"), num(st, "active"), num(st, "suspended"));

	struct strset attempts = {0};
	const json_t *lists[2] = {jobs, pods};
	for (size_t l = 0; l < 2; l++)
		for (size_t i = 0; i < json_array_size(lists[l]); i++) {
			const json_t *x = json_array_get(lists[l], i);
			const char *r = label(x, JS_LABEL_RJOB_NAME);
			if (r && strcmp(r, name) == 0)
				set_add(&attempts, attempt_of(x));
		}
	if (attempts.n > 1)
		qsort(attempts.v, attempts.n, sizeof(*attempts.v), cmp_attempt);
	char cur[24];
	(void)snprintf(cur, sizeof(cur), "%lld", num(js, "status.restarts"));
	if (attempts.n == 0)
		put(o, "    (no Jobs)\n");
	for (size_t a = 0; a < attempts.n; a++) {
		const char *at = attempts.v[a];
		bool now = strcmp(at, cur) == 0;
		bool older = !now && at[0] != '?' && cmp_attempt(&at, &(const char *){cur}) > 0;
		put(o, "    Attempt %s%s\n", at, now ? " (current)" : older ? " (previous)" : "");
		struct strset names = {0};
		for (size_t l = 0; l < 2; l++)
			for (size_t i = 0; i < json_array_size(lists[l]); i++) {
				const json_t *x = json_array_get(lists[l], i);
				if (is_in(x, name, at))
					set_add(&names, l == 0 ? str(x, "metadata.name") : job_of_pod(x));
			}
		if (names.n > 1)
			qsort(names.v, names.n, sizeof(*names.v), cmp_name);
		for (size_t k = 0; k < names.n; k++)
			put_job(o, names.v[k], name, at, jobs, pods);
		free(names.v);
	}
	free(attempts.v);
}

int js_describe_tree(const json_t *jobset, const json_t *jobs, const json_t *pods, struct js_buf *out)
{
	struct out o = {out, 0};
	const json_t *rjobs = js_json_path(jobset, "spec.replicatedJobs");
	put(&o, "Replicated Jobs:\n");
	for (size_t i = 0; i < json_array_size(rjobs); i++)
		put_rjob(&o, jobset, json_array_get(rjobs, i), jobs, pods);
	return o.err;
}

/* ---- events ---- */

static const char *meta_name(const json_t *o)
{
	return js_json_str(js_json_path(o, "metadata"), "name");
}

static bool named_in(const json_t *list, const char *name)
{
	for (size_t i = 0; i < json_array_size(list); i++) {
		const char *n = meta_name(json_array_get(list, i));
		if (n && strcmp(n, name) == 0)
			return true;
	}
	return false;
}

/** Skip "-<digits>" at *p; false when there is none. */
static bool skip_index(const char **p)
{
	if (**p != '-' || !isdigit((unsigned char)(*p)[1]))
		return false;
	for (++*p; isdigit((unsigned char)**p); ++*p) {
	}
	return true;
}

/** Whether `name` is one the JobSet's Jobs have or had (<js>-<rjob>-<i>),
 * or, with `pod`, a pod of one of them (<job>-<index>-<suffix>): events of
 * an older attempt's Jobs and pods, already deleted mid-restart, are still
 * the JobSet's, and say why it restarts. */
static bool of_jobset(const json_t *js, const char *name, bool pod)
{
	const char *jsname = meta_name(js);
	size_t n = jsname ? strlen(jsname) : 0;
	if (!n || strncmp(name, jsname, n) != 0 || name[n] != '-')
		return false;
	const json_t *rjobs = js_json_path(js, "spec.replicatedJobs");
	for (size_t i = 0; i < json_array_size(rjobs); i++) {
		const char *rj = js_json_str(json_array_get(rjobs, i), "name");
		size_t m = rj ? strlen(rj) : 0;
		const char *p = name + n + 1;
		if (!m || strncmp(p, rj, m) != 0)
			continue;
		p += m;
		if (!skip_index(&p))
			continue;
		if (!pod && !*p)
			return true;
		if (pod && skip_index(&p) && *p == '-')
			return true;
	}
	return false;
}

bool js_describe_event_regards(const json_t *jobset, const json_t *jobs, const json_t *pods, const json_t *event)
{
	const json_t *reg = json_object_get(event, "regarding");
	const char *kind = js_json_str(reg, "kind"), *name = js_json_str(reg, "name");
	const char *jsname = meta_name(jobset);
	if (!kind || !name || !jsname)
		return false;
	if (strcmp(kind, "JobSet") == 0)
		return strcmp(name, jsname) == 0;
	if (strcmp(kind, "Job") == 0)
		return named_in(jobs, name) || of_jobset(jobset, name, false);
	if (strcmp(kind, "Pod") == 0)
		return named_in(pods, name) || of_jobset(jobset, name, true);
	return false;
}

int js_describe_time_ms(const char *s, int64_t *ret)
{
	int64_t sec;
	if (!s || js_time_parse_rfc3339(s, &sec) != 0)
		return JS_EINVALID;
	/* The parser drops fractions; events carry microseconds, and a
	 * picture of a run of a few seconds needs at least milliseconds. */
	int64_t ms = 0;
	const char *dot = strchr(s, '.');
	if (dot && dot - s == 19) {
		int k = 0;
		for (const char *p = dot + 1; isdigit((unsigned char)*p); p++, k++) {
			if (k < 3)
				ms = ms * 10 + (*p - '0');
		}
		for (; k < 3; k++)
			ms *= 10;
	}
	*ret = js_sat_add(js_sat_mul(sec, 1000), ms);
	return 0;
}

/* The first of `paths` in `e` that parses as a time, in ms; 0 if none. */
static int64_t first_time(const json_t *e, const char *const *paths, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int64_t t;
		if (js_describe_time_ms(json_string_value(js_json_path(e, paths[i])), &t) == 0)
			return t;
	}
	return 0;
}

int64_t js_describe_event_time_ms(const json_t *e)
{
	static const char *const paths[] = {"series.lastObservedTime", "deprecatedLastTimestamp", "eventTime",
					    "metadata.creationTimestamp"};
	return first_time(e, paths, JS_ARRAY_SIZE(paths));
}

int64_t js_describe_event_first_ms(const json_t *e)
{
	static const char *const paths[] = {"eventTime", "deprecatedFirstTimestamp", "metadata.creationTimestamp"};
	return first_time(e, paths, JS_ARRAY_SIZE(paths));
}
