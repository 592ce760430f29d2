/*
 * objects_test.c - ConfigMaps, Secrets and PVCs of a manifest stream
 * (local/objects.h): what is taken, what is refused and why, decoded
 * values, and env from them. Table-driven; each case names itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "local/objects.h"
#include "support/testutil.h"

static const struct add_case {
	const char *name;
	const char *yaml;
	int want;          /* 1 taken, 0 other kind, JS_EINVALID */
	const char *err;   /* substring of the error */
} add_cases[] = {
	{"configmap", "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {k: v}}", 1, NULL},
	{"empty configmap", "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}", 1, NULL},
	{"secret", "{apiVersion: v1, kind: Secret, metadata: {name: a}, data: {k: dg==}}", 1, NULL},
	{"pvc", "{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: a}}", 1, NULL},
	{"deployment", "{apiVersion: apps/v1, kind: Deployment, metadata: {name: a}}", 0, NULL},
	{"other group's ConfigMap", "{apiVersion: x/v1, kind: ConfigMap, metadata: {name: a}}", 0, NULL},
	{"no name", "{apiVersion: v1, kind: ConfigMap, metadata: {}}", JS_EINVALID, "ConfigMap/?: metadata.name"},
	{"bad key", "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {'a b': v}}", JS_EINVALID,
	 "data['a b']: a key must consist"},
	{"dot-dot key", "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {'..': v}}", JS_EINVALID,
	 "data['..']"},
	{"number value", "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {k: 1}}", JS_EINVALID,
	 "data['k'] must be a string"},
	{"data not a map", "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: [x]}", JS_EINVALID,
	 "data must be a map"},
	{"bad base64", "{apiVersion: v1, kind: Secret, metadata: {name: a}, data: {k: '!!'}}", JS_EINVALID,
	 "Secret/a: data['k'] is not valid base64"},
	{"key twice", "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {k: v}, binaryData: {k: dg==}}",
	 JS_EINVALID, "given twice"},
};

static void test_add(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(add_cases) / sizeof(add_cases[0]); i++) {
		const struct add_case *c = &add_cases[i];
		struct js_objects *o = js_objects_new();
		json_t *j = tu_yaml(c->yaml);
		char *err = NULL;
		int r = js_objects_add(o, j, &err);
		if (r != c->want)
			fail_msg("case '%s': got %d (%s), want %d", c->name, r, err ? err : "", c->want);
		if (c->err && (!err || !strstr(err, c->err)))
			fail_msg("case '%s': error '%s' lacks '%s'", c->name, err ? err : "(none)", c->err);
		free(err);
		json_decref(j);
		js_objects_free(o);
	}
}

static struct js_objects *sample(void)
{
	static const char *const docs[] = {
		"{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg}, data: {z: last, a: first}, binaryData: {b: AAEC}}",
		"{apiVersion: v1, kind: Secret, metadata: {name: sec}, data: {pw: czNjcjN0, u: b2xk}, stringData: {u: new}}",
		"{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: claim}}",
	};
	struct js_objects *o = js_objects_new();
	for (size_t i = 0; i < 3; i++) {
		json_t *j = tu_yaml(docs[i]);
		char *err = NULL;
		assert_int_equal(js_objects_add(o, j, &err), 1);
		json_decref(j);
	}
	return o;
}

static void test_values_and_duplicates(void **state)
{
	(void)state;
	struct js_objects *o = sample();
	const struct js_objects_data *cm = js_objects_find(o, JS_OBJECTS_CONFIGMAP, "cfg");
	assert_non_null(cm);
	assert_int_equal(cm->n, 3);
	/* Sorted keys; binary values decoded. */
	assert_string_equal(cm->entries[0].key, "a");
	assert_string_equal(cm->entries[1].key, "b");
	assert_int_equal(cm->entries[1].len, 3);
	assert_memory_equal(cm->entries[1].value, "\x00\x01\x02", 3);
	const struct js_objects_data *s = js_objects_find(o, JS_OBJECTS_SECRET, "sec");
	assert_string_equal(js_objects_key(s, "pw")->value, "s3cr3t");
	assert_string_equal(js_objects_key(s, "u")->value, "new"); /* stringData wins */
	assert_null(js_objects_key(s, "none"));
	assert_null(js_objects_find(o, JS_OBJECTS_SECRET, "cfg")); /* kinds are apart */
	assert_int_equal(js_objects_n_claims(o), 1);
	assert_string_equal(js_objects_claim(o, 0), "claim");
	json_t *again = tu_yaml("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg}}");
	char *err = NULL;
	assert_int_equal(js_objects_add(o, again, &err), JS_EINVALID);
	assert_non_null(strstr(err, "a second object"));
	free(err);
	json_decref(again);
	js_objects_free(o);
}

static const struct env_case {
	const char *name;
	const char *value_from;
	int want;
	const char *value; /* NULL: unset */
} env_cases[] = {
	{"configmap key", "{configMapKeyRef: {name: cfg, key: z}}", 0, "last"},
	{"secret key", "{secretKeyRef: {name: sec, key: pw}}", 0, "s3cr3t"},
	{"optional object", "{configMapKeyRef: {name: nope, key: z, optional: true}}", 0, NULL},
	{"optional key", "{secretKeyRef: {name: sec, key: nope, optional: true}}", 0, NULL},
	{"missing object", "{configMapKeyRef: {name: nope, key: z}}", JS_EINVALID, NULL},
	{"missing key", "{secretKeyRef: {name: sec, key: nope}}", JS_EINVALID, NULL},
	{"fieldRef is not ours", "{fieldRef: {fieldPath: metadata.name}}", JS_ENOTFOUND, NULL},
};

static void test_env_value(void **state)
{
	(void)state;
	struct js_objects *o = sample();
	for (size_t i = 0; i < sizeof(env_cases) / sizeof(env_cases[0]); i++) {
		const struct env_case *c = &env_cases[i];
		json_t *j = tu_yaml(c->value_from);
		char *val = (char *)"untouched", *err = NULL;
		int r = js_objects_env_value(o, j, &val, &err);
		if (r != c->want)
			fail_msg("case '%s': got %d, want %d", c->name, r, c->want);
		if (r == 0 && (c->value ? !val || strcmp(val, c->value) != 0 : val != NULL))
			fail_msg("case '%s': value '%s', want '%s'", c->name, val ? val : "(unset)",
				 c->value ? c->value : "(unset)");
		if (r == 0)
			free(val);
		free(err);
		json_decref(j);
	}
	js_objects_free(o);
}

static void collect(void *ctx, const char *name, const char *value)
{
	char *s = ctx;
	strcat(s, name);
	strcat(s, "=");
	strcat(s, value);
	strcat(s, ";");
}

static void test_env_from(void **state)
{
	(void)state;
	struct js_objects *o = sample();
	json_t *j = tu_yaml("[{prefix: C_, configMapRef: {name: cfg}}, {secretRef: {name: sec}},"
			    " {configMapRef: {name: nope, optional: true}}]");
	char got[256] = "";
	char *err = NULL;
	assert_int_equal(js_objects_env_from(o, j, collect, got, &err), 0);
	assert_string_equal(got, "C_a=first;C_b=;C_z=last;pw=s3cr3t;u=new;"); /* env ends at a NUL */
	json_decref(j);
	j = tu_yaml("[{secretRef: {name: nope}}]");
	assert_int_equal(js_objects_env_from(o, j, NULL, NULL, &err), JS_EINVALID);
	assert_non_null(strstr(err, "envFrom[0]: Secret 'nope' is not in the manifest"));
	free(err);
	json_decref(j);
	j = tu_yaml("[{prefix: X}]");
	assert_int_equal(js_objects_env_from(o, j, NULL, NULL, &err), JS_EINVALID);
	free(err);
	json_decref(j);
	js_objects_free(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add),
		cmocka_unit_test(test_values_and_duplicates),
		cmocka_unit_test(test_env_value),
		cmocka_unit_test(test_env_from),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
