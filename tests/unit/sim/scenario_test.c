/*
 * scenario_test.c - runs every tests/cases/core/<name>.scn through the
 * simulated world (sim/sim.h).
 *
 * A scenario file: directives, then `%%`, then a script.
 *   @fixture FILE       the JobSet, a YAML file beside the scenario
 *   @patch JSON         a JSON merge patch on it (repeatable)
 *   @gates A,B          feature gates turned on, by name (api/gates.h)
 *   @now SECONDS        the start time (default 1700000000)
 * Other lines before `%%` are inline YAML for the JobSet. Script lines are
 * sim.h commands and `expect` lines; the first failure names file:line.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/gates.h"
#include "sim/sim.h"
#include "support/testutil.h"

#define DEFAULT_NOW 1700000000

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "A,B" turns gates A and B on (names as api/gates.h knows them). */
static struct js_gates parse_gates(const char *s)
{
	struct js_gates g = {0};
	for (const char *p = s; *p;) {
		size_t n = strcspn(p, ",");
		while (n > 0 && p[n - 1] == ' ')
			n--;
		const struct js_gate_setting one = {p, n, true};
		if (js_gates_set_all(&g, &one, 1, NULL, NULL) < 0)
			fail_msg("unknown gate in @gates %s", s);
		p += strcspn(p, ",");
		p += *p == ',';
		p += strspn(p, " ");
	}
	return g;
}

/* Run one scenario; returns the number of failures (0 or 1). */
static int run_file(const char *dir, const char *file)
{
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		fail_msg("path too long: %s/%s", dir, file);
	size_t len;
	char *text = tu_read_file(path, &len);
	if (!text) {
		fprintf(stderr, "%s: cannot read\n", path);
		return 1;
	}
	char *yaml = calloc(1, len + 1), *save = NULL;
	json_t *patches = json_array();
	struct js_gates gates = {0};
	long long now = DEFAULT_NOW;
	char *fixture = NULL;
	int lineno = 0, failed = 0;
	char *line = strtok_r(text, "\n", &save);
	for (; line; line = strtok_r(NULL, "\n", &save)) {
		lineno++;
		if (strcmp(line, "%%") == 0)
			break;
		if (strncmp(line, "@fixture ", 9) == 0)
			fixture = line + 9;
		else if (strncmp(line, "@patch ", 7) == 0)
			json_array_append_new(patches, json_string(line + 7));
		else if (strncmp(line, "@gates ", 7) == 0)
			gates = parse_gates(line + 7);
		else if (strncmp(line, "@now ", 5) == 0)
			now = atoll(line + 5);
		else {
			strcat(yaml, line);
			strcat(yaml, "\n");
		}
	}
	json_t *doc;
	if (fixture) {
		char fp[4096];
		if (snprintf(fp, sizeof(fp), "%s/%s", dir, fixture) >= (int)sizeof(fp))
			fail_msg("path too long: %s/%s", dir, fixture);
		char *ft = tu_read_file(fp, NULL);
		assert_non_null(ft);
		doc = tu_yaml(ft);
		free(ft);
	} else {
		doc = tu_yaml(yaml);
	}
	size_t i;
	json_t *p;
	json_array_foreach(patches, i, p) tu_merge_patch(doc, json_string_value(p));
	struct js_jobset *js = tu_decode(doc);
	struct js_sim *sim = js_sim_new(js, gates, now);
	struct js_buf out;
	js_buf_init(&out, 0);
	for (line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *err = NULL;
		lineno++;
		if (js_sim_exec(sim, line, &out, &err) < 0) {
			fprintf(stderr, "%s:%d: %s\n  %s\n--- trace ---\n%s", path, lineno, line, err ? err : "?",
				js_buf_str(&out));
			free(err);
			failed = 1;
			break;
		}
	}
	js_buf_done(&out);
	js_sim_free(sim);
	js_jobset_free(js);
	json_decref(doc);
	json_decref(patches);
	free(yaml);
	free(text);
	return failed;
}

static void test_scenarios(void **state)
{
	(void)state;
	const char *dir = tu_src_path("tests/cases/core");
	char dirbuf[1024];
	(void)snprintf(dirbuf, sizeof(dirbuf), "%s", dir);
	DIR *d = opendir(dirbuf);
	assert_non_null(d);
	char *names[1024];
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < 1024) {
		size_t l = strlen(e->d_name);
		if (l > 4 && strcmp(e->d_name + l - 4, ".scn") == 0)
			names[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), by_str);
	int failures = 0;
	for (size_t i = 0; i < n; i++) {
		failures += run_file(dirbuf, names[i]);
		free(names[i]);
	}
	printf("scenarios: %zu run, %d failed\n", n, failures);
	assert_true(n > 0);
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scenarios),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
