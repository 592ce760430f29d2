/*
 * admission_fuzz.c - libFuzzer target: arbitrary bytes as an AdmissionReview
 * body on one of the four admission paths, through js_webhook_review(), the
 * function the server calls for every POST. Byte 0 picks the path (its low
 * two bits: mutate JobSet, validate JobSet, mutate Pod, validate Pod; the
 * seeds use '0'..'3'), the rest is the body. Nothing may crash, leak or trip
 * a sanitizer; every answer must be a JSON object, and 0 goes with HTTP 200.
 * The lookups answer from constants: no state survives between inputs. Built
 * with -DJS_FUZZ=ON (tests/tests.cmake); seeds in tests/fuzz/corpus/admission/.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "webhook/webhook.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static enum js_pvc_lookup no_pvc(void *ctx, const char *ns, const char *name, json_t **ret_spec, char **ret_err)
{
	(void)ctx;
	(void)ns;
	(void)name;
	(void)ret_spec;
	(void)ret_err;
	return JS_PVC_NOT_FOUND;
}

static int one_leader(void *ctx, const char *ns, const json_t *match, json_t **ret_pods, char **ret_err)
{
	(void)ctx;
	(void)ns;
	(void)match;
	(void)ret_err;
	*ret_pods = json_loads("[{\"metadata\":{\"name\":\"a-b-0-0-xyz\",\"annotations\":{\"alpha.jobset.sigs.k8s.io/"
			       "exclusive-topology\":\"z\"},\"ownerReferences\":[{\"uid\":\"u\",\"controller\":true}]},"
			       "\"spec\":{\"nodeName\":\"n\"}}]",
			       0, NULL);
	return 0;
}

static int a_node(void *ctx, const char *name, json_t **ret_node, int *ret_code, char **ret_err)
{
	(void)ctx;
	(void)name;
	(void)ret_code;
	(void)ret_err;
	*ret_node = json_loads("{\"metadata\":{\"labels\":{\"z\":\"zone\"}}}", 0, NULL);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const paths[] = {JS_WEBHOOK_PATH_MUTATE_JOBSET, JS_WEBHOOK_PATH_VALIDATE_JOBSET,
					    JS_WEBHOOK_PATH_MUTATE_POD, JS_WEBHOOK_PATH_VALIDATE_POD};
	struct js_webhook_admit_cfg cfg = {
		.strict = true,
		.gates = {.restart_job = true, .in_place_restart = true, .elastic_jobset = true},
		.lookups = {NULL, no_pvc, one_leader, a_node},
	};
	if (size == 0)
		return 0;
	json_t *out = NULL;
	int http = 0;
	int r = js_webhook_review(&cfg, paths[data[0] & 3u], (const char *)data + 1, size - 1, &out, &http);
	if (!json_is_object(out) || (r == 0) != (http == 200))
		abort();
	json_decref(out);
	return 0;
}
