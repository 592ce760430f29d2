/*
 * render_test.c - child Job and Service construction (SPEC §6, §7):
 * golden files under tests/golden/render/ for each manifest under
 * tests/cases/render/ (regenerate with JS_UPDATE_GOLDEN=1), plus the exact
 * values of SPEC §2.1 and §6.4a.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/codec.h"
#include "api/defaults.h"
#include "api/render.h"
#include "base/emit.h"
#include "base/json.h"
#include "base/load.h"
#include "base/str.h"
#include "support/testutil.h"

static void test_job_key(void **state)
{
	(void)state;
	char k[41];
	js_render_job_key("default", "pytorch-workers-1", k);
	assert_string_equal(k, "70fae4b2573c53fa774ca449a24aa5ec82e89ab0");
	js_render_job_key("ns1", "demo-workers-1", k);
	assert_string_equal(k, "0bdf0737725a7b7bbfee2093e0d6b3c885612dae");
	js_render_job_key("default", "test-jobset-replicated-job-0", k);
	assert_string_equal(k, "027791c2c0a79daacbc05ab1512c28988581229f");
}

/* SPEC §6.4a, worked example. */
static void test_worked_example(void **state)
{
	(void)state;
	json_t *j = tu_yaml(
		"apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: demo\n  namespace: ns1\n  uid: u-1\n"
		"  annotations: {alpha.jobset.sigs.k8s.io/exclusive-topology: rack}\nspec:\n  coordinator: {replicatedJob: leader}\n"
		"  replicatedJobs:\n  - name: leader\n    replicas: 1\n    template:\n      spec:\n        parallelism: 1\n"
		"        completions: 1\n        template:\n          spec:\n            containers: [{name: c, image: i}]\n"
		"  - name: workers\n    replicas: 2\n    template:\n      spec:\n        parallelism: 4\n        completions: 4\n"
		"        template:\n          metadata: {labels: {app: w}}\n          spec:\n            containers: [{name: c, image: i}]\n");
	struct js_jobset *js = tu_decode(j);
	js_default_jobset(js);
	struct js_render_opts o = {0};
	json_t *job = js_render_job(js, 1, 1, &o);
	json_t *labels = js_json_path(job, "metadata.labels");
	static const char *const want[][2] = {
		{"jobset.sigs.k8s.io/jobset-name", "demo"},         {"jobset.sigs.k8s.io/jobset-uid", "u-1"},
		{"jobset.sigs.k8s.io/replicatedjob-name", "workers"}, {"jobset.sigs.k8s.io/replicatedjob-replicas", "2"},
		{"jobset.sigs.k8s.io/global-replicas", "3"},       {"jobset.sigs.k8s.io/job-index", "1"},
		{"jobset.sigs.k8s.io/job-global-index", "2"},      {"jobset.sigs.k8s.io/job-key", "0bdf0737725a7b7bbfee2093e0d6b3c885612dae"},
		{"jobset.sigs.k8s.io/group-name", "default"},      {"jobset.sigs.k8s.io/group-replicas", "3"},
		{"jobset.sigs.k8s.io/job-group-index", "2"},       {"jobset.sigs.k8s.io/restart-attempt", "0"},
		{"jobset.sigs.k8s.io/coordinator", "demo-leader-0-0.demo"},
	};
	json_t *pod_labels = js_json_path(job, "spec.template.metadata.labels");
	json_t *anns = js_json_path(job, "metadata.annotations");
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_string_equal(js_json_str(labels, want[i][0]), want[i][1]);
		assert_string_equal(js_json_str(pod_labels, want[i][0]), want[i][1]);
		assert_string_equal(js_json_str(anns, want[i][0]), want[i][1]);
	}
	assert_string_equal(js_json_str(pod_labels, "app"), "w");
	assert_string_equal(js_json_str(anns, "alpha.jobset.sigs.k8s.io/exclusive-topology"), "rack");
	assert_null(json_object_get(labels, "alpha.jobset.sigs.k8s.io/exclusive-topology"));
	assert_string_equal(json_string_value(js_json_path(job, "spec.template.spec.subdomain")), "demo");
	assert_string_equal(json_string_value(js_json_path(job, "spec.template.spec.restartPolicy")), "OnFailure");
	assert_true(json_is_false(js_json_path(job, "spec.suspend")));
	assert_string_equal(js_json_str(json_array_get(js_json_path(job, "metadata.ownerReferences"), 0), "uid"), "u-1");
	json_t *svc = js_render_service(js);
	assert_string_equal(json_string_value(js_json_path(svc, "spec.clusterIP")), "None");
	assert_true(json_is_true(js_json_path(svc, "spec.publishNotReadyAddresses")));
	assert_string_equal(js_json_str(js_json_path(svc, "spec.selector"), "jobset.sigs.k8s.io/jobset-name"), "demo");
	json_decref(svc);
	json_decref(job);
	json_decref(j);
	js_jobset_free(js);
}

/* Hang detection: with the gate on, each ReplicatedJob's pods carry the
 * settings in effect for it (the pod webhook sees only the pod), and a
 * value written on the pod template itself is replaced or removed; with
 * the gate off the template is rendered as written. */
static void test_progress_settings(void **state)
{
	(void)state;
	json_t *j = tu_yaml(
		"apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: p\n  namespace: ns\n"
		"  annotations: {jobset.sigs.k8s.io/progress-deadline-seconds: '60'}\nspec:\n  replicatedJobs:\n"
		"  - name: a\n    template:\n      metadata:\n        annotations: {jobset.sigs.k8s.io/progress-startup-seconds: '90'}\n"
		"      spec:\n        template:\n          metadata:\n            annotations: "
		"{jobset.sigs.k8s.io/progress-deadline-seconds: '5'}\n          spec: {containers: [{name: c, image: i}]}\n");
	struct js_jobset *js = tu_decode(j);
	js_default_jobset(js);
	static const struct {
		bool gate;
		const char *deadline, *startup; /* on the pod template; NULL absent */
	} rows[] = {{true, "60", "90"}, {false, "5", NULL}};
	for (size_t i = 0; i < JS_ARRAY_SIZE(rows); i++) {
		struct js_render_opts o = {.gates = {.progress_deadline = rows[i].gate}};
		json_t *job = js_render_job(js, 0, 0, &o);
		json_t *anns = js_json_path(job, "spec.template.metadata.annotations");
		const char *d = js_json_str(anns, "jobset.sigs.k8s.io/progress-deadline-seconds");
		const char *s = js_json_str(anns, "jobset.sigs.k8s.io/progress-startup-seconds");
		if (!js_str_same(d, rows[i].deadline) || !js_str_same(s, rows[i].startup))
			fail_msg("gate %d: deadline %s startup %s, want %s %s", rows[i].gate, d ? d : "-", s ? s : "-",
				 rows[i].deadline ? rows[i].deadline : "-", rows[i].startup ? rows[i].startup : "-");
		json_decref(job);
	}
	/* No deadline in effect: the template's own value goes. */
	json_object_del(json_object_get(json_object_get(j, "metadata"), "annotations"),
			"jobset.sigs.k8s.io/progress-deadline-seconds");
	struct js_jobset *none = tu_decode(j);
	js_default_jobset(none);
	struct js_render_opts o = {.gates = {.progress_deadline = true}};
	json_t *job = js_render_job(none, 0, 0, &o);
	assert_null(json_object_get(js_json_path(job, "spec.template.metadata.annotations"),
				    "jobset.sigs.k8s.io/progress-deadline-seconds"));
	json_decref(job);
	js_jobset_free(none);
	js_jobset_free(js);
	json_decref(j);
}

static void render_all(const struct js_jobset *js, struct js_buf *out)
{
	struct js_render_opts o = {0};
	json_t *items = json_array();
	if (js_jobset_dns_hostnames(js))
		json_array_append_new(items, js_render_service(js));
	json_t *pvcs = js_render_pvcs(js);
	json_array_extend(items, pvcs);
	json_decref(pvcs);
	for (size_t r = 0; r < js->spec.n_replicated_jobs; r++)
		for (int32_t i = 0; i < js->spec.replicated_jobs[r].replicas; i++)
			json_array_append_new(items, js_render_job(js, r, i, &o));
	for (size_t i = 0; i < json_array_size(items); i++)
		assert_int_equal(js_emit_yaml(json_array_get(items, i), 1, out), 0);
	json_decref(items);
}

static void test_golden(void **state)
{
	(void)state;
	const char *dir = tu_src_path("tests/cases/render");
	char dirbuf[4096];
	snprintf(dirbuf, sizeof(dirbuf), "%s", dir);
	DIR *d = opendir(dirbuf);
	assert_non_null(d);
	struct dirent *e;
	int n = 0, failures = 0;
	bool update = getenv("JS_UPDATE_GOLDEN") != NULL;
	while ((e = readdir(d))) {
		if (!strstr(e->d_name, ".yaml"))
			continue;
		char in[8192], gold[8192];
		snprintf(in, sizeof(in), "%s/%s", dirbuf, e->d_name);
		snprintf(gold, sizeof(gold), "%s", tu_src_path("tests/golden/render/"));
		strncat(gold, e->d_name, sizeof(gold) - strlen(gold) - 1);
		size_t len;
		char *text = tu_read_file(in, &len);
		json_t *j = tu_yaml(text);
		struct js_jobset *orig = tu_decode(j);
		/* Rendered from a copy, defaulted: a copy encodes as its source
		 * does, and defaulting it leaves the source as it was. */
		struct js_jobset *js = js_jobset_copy(orig);
		json_t *e0 = js_codec_encode_jobset(orig), *e1 = js_codec_encode_jobset(js);
		assert_true(json_equal(e0, e1));
		js_default_jobset(js);
		json_decref(e1);
		e1 = js_codec_encode_jobset(orig);
		assert_true(json_equal(e0, e1));
		json_decref(e0);
		json_decref(e1);
		js_jobset_free(orig);
		struct js_buf out;
		js_buf_init(&out, 0);
		render_all(js, &out);
		if (update) {
			FILE *f = fopen(gold, "w");
			assert_non_null(f);
			fputs(js_buf_str(&out), f);
			fclose(f);
		} else {
			char *want = tu_read_file(gold, NULL);
			if (!want || strcmp(want, js_buf_str(&out)) != 0) {
				fprintf(stderr, "golden mismatch for %s (run with JS_UPDATE_GOLDEN=1 to accept)\n", e->d_name);
				failures++;
			}
			free(want);
		}
		js_buf_done(&out);
		js_jobset_free(js);
		json_decref(j);
		free(text);
		n++;
	}
	closedir(d);
	assert_true(n > 0);
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_key),
		cmocka_unit_test(test_worked_example),
		cmocka_unit_test(test_progress_settings),
		cmocka_unit_test(test_golden),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
