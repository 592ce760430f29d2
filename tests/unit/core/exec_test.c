/*
 * exec_test.c - the plan executor's rules (core/exec.h), table-driven over a
 * fake body that records every call and fails at a chosen one.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/exec.h"
#include "support/testutil.h"

/* The fake body: a log of calls, and which call (0-based) fails. */
struct fake {
	char log[2048];
	int calls;
	int fail_call; /* -1: none */
	int fail_err;
	int rendered;  /* CreateJob bodies seen with the right name */
};

static void logf_(struct fake *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct fake *f, const char *fmt, ...)
{
	size_t len = strlen(f->log);
	va_list ap;
	va_start(ap, fmt);
	(void)vsnprintf(f->log + len, sizeof(f->log) - len, fmt, ap);
	va_end(ap);
}

/* One op call: its result. */
static int call(struct fake *f)
{
	return f->calls++ == f->fail_call ? f->fail_err : 0;
}

static int f_create(void *self, const struct js_action *acts, size_t n, const struct js_exec_run *run)
{
	struct fake *f = self;
	for (size_t i = 0; i < n; i++) {
		json_t *body = js_exec_render(run, i);
		const char *name = json_string_value(json_object_get(json_object_get(body, "metadata"), "name"));
		f->rendered += name && strcmp(name, acts[i].name) == 0;
		json_decref(body);
		logf_(f, "%s%s", i ? "," : " create(", acts[i].name);
	}
	logf_(f, ")");
	return call(f);
}

static int f_delete(void *self, const struct js_action *acts, size_t n)
{
	struct fake *f = self;
	for (size_t i = 0; i < n; i++)
		logf_(f, "%s%s", i ? "," : " delete(", acts[i].name);
	logf_(f, ")");
	return call(f);
}

static int f_patch(void *self, const struct js_action *a)
{
	logf_(self, " %s(%s)", a->kind == JS_ACTION_PATCH_JOB ? "patch" : "patchstatus", a->name);
	return call(self);
}

static int f_patches(void *self, const struct js_action *acts, size_t n)
{
	struct fake *f = self;
	for (size_t i = 0; i < n; i++)
		logf_(f, "%s%s", i ? "," : " patches(", acts[i].name);
	logf_(f, ")");
	return call(f);
}

static int f_delete_pods(void *self, const struct js_action *acts, size_t n)
{
	struct fake *f = self;
	for (size_t i = 0; i < n; i++)
		logf_(f, "%s%s", i ? "," : " delpods(", acts[i].name);
	logf_(f, ")");
	return call(f);
}

static int f_other(void *self, const struct js_action *a)
{
	logf_(self, " other(%s)", a->name);
	return call(self);
}

static int f_status(void *self, const struct js_plan *plan)
{
	(void)plan;
	logf_(self, " status");
	return call(self);
}

static void f_event(void *self, const struct js_event *e)
{
	logf_(self, " event(%s)", e->reason);
}

static void f_metrics(void *self, const struct js_plan *plan)
{
	(void)plan;
	logf_(self, " metrics");
}

static void f_requeue(void *self, int64_t seconds)
{
	logf_(self, " requeue(%lld)", (long long)seconds);
}

/* Actions by letter: C create, D delete, Q delete pod, P patch, S patch status,
 * V service, O PVC, J delete JobSet. Named by letter and position. */
static enum js_action_kind kind_of(char c)
{
	switch (c) {
	case 'C': return JS_ACTION_CREATE_JOB;
	case 'D': return JS_ACTION_DELETE_JOB;
	case 'P': return JS_ACTION_PATCH_JOB;
	case 'Q': return JS_ACTION_DELETE_POD;
	case 'S': return JS_ACTION_PATCH_JOB_STATUS;
	case 'V': return JS_ACTION_CREATE_SERVICE;
	case 'O': return JS_ACTION_CREATE_PVC;
	case 'J': return JS_ACTION_DELETE_JOBSET;
	default: return JS_ACTION__INVALID;
	}
}

/* JobSet `t` with one ReplicatedJob `w` of `replicas` Jobs. */
static struct js_jobset *jobset(int replicas)
{
	char yaml[512];
	(void)snprintf(yaml, sizeof(yaml),
		       "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: t, uid: u}\n"
		       "spec:\n  replicatedJobs:\n  - name: w\n    replicas: %d\n    template:\n      spec:\n"
		       "        template:\n          spec:\n            containers: [{name: c, image: i}]\n",
		       replicas);
	json_t *doc = tu_yaml(yaml);
	struct js_jobset *js = tu_decode(doc);
	json_decref(doc);
	return js;
}

static void test_apply(void **state)
{
	static const struct {
		const char *name;
		const char *actions;
		size_t max_run;
		bool status, requeue, no_ops, take;
		size_t n_events;
		int fail_call;
		const char *want_log;
		int want_r;
		size_t want_failed_at;
		bool patch_runs; /* the body has patch_jobs */
	} cases[] = {
		{"empty plan", "", 0, false, false, false, false, 0, -1, " metrics", 0, SIZE_MAX, false},
		{"order, runs, then status, events, metrics, requeue", "CCDPVSC", 0, true, true, false, false, 2, -1,
		 " create(t-w-0,t-w-1) delete(D2) patch(P3) other(V4) patchstatus(S5) create(t-w-2) status event(R0)"
		 " event(R1) metrics requeue(30)",
		 0, SIZE_MAX, false},
		{"runs cut at max_run", "CCCDDD", 2, false, false, false, false, 0, -1,
		 " create(t-w-0,t-w-1) create(t-w-2) delete(D3,D4) delete(D5) metrics", 0, SIZE_MAX, false},
		{"no status write when unchanged, events still go", "P", 0, false, false, false, false, 1, -1,
		 " patch(P0) event(R0) metrics", 0, SIZE_MAX, false},
		{"first failure stops everything", "CCPD", 0, true, true, false, false, 1, 1, " create(t-w-0,t-w-1) patch(P2)",
		 JS_ECONFLICT, 2, false},
		{"failed run reports its first action", "PDD", 0, true, false, false, false, 0, 1, " patch(P0) delete(D1,D2)",
		 JS_ECONFLICT, 1, false},
		{"failed status write: no events, no metrics, no requeue", "O", 0, true, true, false, false, 3, 1,
		 " other(O0) status", JS_ECONFLICT, 1, false},
		{"failed status write of an empty plan", "", 0, true, false, false, false, 0, 0, " status", JS_ECONFLICT, 0, false},
		{"missing op fails the pass", "PC", 0, true, false, true, false, 0, -1, " patch(P0)", JS_EUNSUPPORTED, 1, false},
		{"missing status op", "", 0, true, false, true, false, 0, -1, "", JS_EUNSUPPORTED, 0, false},
		{"missing delete op", "D", 0, false, false, true, false, 0, -1, "", JS_EUNSUPPORTED, 0, false},
		{"missing other op", "J", 0, false, false, true, false, 0, -1, "", JS_EUNSUPPORTED, 0, false},
		{"missing optional ops are skipped", "", 0, false, true, true, false, 2, -1, "", 0, SIZE_MAX, false},
		{"taken JobSet cannot render", "PCC", 0, false, false, false, true, 0, -1, " patch(P0)", JS_EINVALID, 1, false},
		{"invalid kind", "x", 0, false, false, false, false, 0, -1, "", JS_EINVALID, 0, false},
		{"patch runs go together, status patches alone", "PPSPP", 0, false, false, false, false, 0, -1,
		 " patches(P0,P1) patchstatus(S2) patches(P3,P4) metrics", 0, SIZE_MAX, true},
		{"a single patch is a run of one", "P", 0, false, false, false, false, 0, -1, " patches(P0) metrics", 0,
		 SIZE_MAX, true},
		{"patch runs cut at max_run", "PPP", 2, false, false, false, false, 0, -1, " patches(P0,P1) patches(P2) metrics",
		 0, SIZE_MAX, true},
		{"pod deletes go in runs", "DDQQQC", 2, false, false, false, false, 0, -1,
		 " delete(D0,D1) delpods(Q2,Q3) delpods(Q4) create(t-w-0) metrics", 0, SIZE_MAX, false},
		{"failed patch run stops the pass", "PPD", 0, true, false, false, false, 0, 0, " patches(P0,P1)", JS_ECONFLICT,
		 0, true},
	};
	(void)state;
	struct js_jobset *js = jobset(3);
	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
		struct js_action acts[16] = {{0}};
		char names[16][32];
		size_t n = strlen(cases[ci].actions);
		int32_t next_job = 0;
		for (size_t i = 0; i < n; i++) {
			char c = cases[ci].actions[i];
			acts[i].kind = kind_of(c);
			if (c == 'C') {
				acts[i].rjob = 0;
				acts[i].job_index = next_job;
				(void)snprintf(names[i], sizeof(names[i]), "t-w-%d", next_job++);
			} else {
				(void)snprintf(names[i], sizeof(names[i]), "%c%zu", c, i);
			}
			acts[i].name = names[i];
		}
		static const struct js_event events[] = {{"Normal", "R0", "m0"}, {"Warning", "R1", "m1"}, {"Normal", "R2", "m2"}};
		struct js_plan plan = {
			.n_actions = n,
			.actions = acts,
			.status_changed = cases[ci].status,
			.status = &js->status,
			.jobset = cases[ci].take ? NULL : js,
			.n_events = cases[ci].n_events,
			.events = events,
			.has_requeue_after = cases[ci].requeue,
			.requeue_after = 30,
		};
		struct js_exec_ops ops = {
			.max_run = cases[ci].max_run,
			.create_jobs = f_create,
			.delete_jobs = f_delete,
			.delete_pods = f_delete_pods,
			.patch_job = f_patch,
			.apply_other = f_other,
			.write_status = f_status,
			.emit_event = f_event,
			.count_metrics = f_metrics,
			.requeue_after = f_requeue,
		};
		if (cases[ci].patch_runs)
			ops.patch_jobs = f_patches;
		if (cases[ci].no_ops)
			ops = (struct js_exec_ops){.patch_job = f_patch};
		struct fake f = {.fail_call = cases[ci].fail_call, .fail_err = JS_ECONFLICT};
		size_t failed_at = 12345;
		int r = js_exec_apply(&ops, &f, &plan, &failed_at);
		if (r != cases[ci].want_r || failed_at != cases[ci].want_failed_at || strcmp(f.log, cases[ci].want_log) != 0)
			fail_msg("%s: r=%d (want %d) failed_at=%zu (want %zu)\n  log:  '%s'\n  want: '%s'", cases[ci].name, r,
				 cases[ci].want_r, failed_at, cases[ci].want_failed_at, f.log, cases[ci].want_log);
		/* Every body handed over was the rendered Job of its action. */
		size_t creates = 0;
		for (const char *p = f.log; (p = strstr(p, "t-w-")); p++)
			creates++;
		assert_int_equal(f.rendered, creates);
		/* The same again without *ret_failed_at. */
		f = (struct fake){.fail_call = cases[ci].fail_call, .fail_err = JS_ECONFLICT};
		assert_int_equal(js_exec_apply(&ops, &f, &plan, NULL), cases[ci].want_r);
	}
	js_jobset_free(js);
}

/* A real plan end to end: the first reconcile of a JobSet, applied. */
static void test_real_plan(void **state)
{
	(void)state;
	struct js_jobset *js = jobset(2);
	struct js_reconcile_input in = {.jobset = js, .now = 1700000000};
	struct js_plan *plan = NULL;
	assert_int_equal(js_reconcile_run(&in, &plan, NULL), 0);
	struct js_exec_ops ops = {.create_jobs = f_create, .apply_other = f_other, .write_status = f_status};
	struct fake f = {.fail_call = -1};
	assert_int_equal(js_exec_apply(&ops, &f, plan, NULL), 0);
	assert_string_equal(f.log, " other(t) create(t-w-0,t-w-1) status");
	assert_int_equal(f.rendered, 2);
	/* Rendering is for CreateJob actions only. */
	assert_null(js_plan_render_job(plan, &plan->actions[0]));
	struct js_jobset *taken = js_plan_take_jobset(plan);
	assert_non_null(taken);
	assert_null(js_plan_take_jobset(plan));
	assert_true(plan->status == &taken->status);
	assert_null(js_plan_render_job(plan, &plan->actions[1]));
	js_reconcile_plan_free(plan);
	js_jobset_free(taken);
	js_jobset_free(js);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_apply),
		cmocka_unit_test(test_real_plan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
