/*
 * load_fuzz.c - libFuzzer target for the manifest path: load (YAML/JSON),
 * decode, default, validate, render and emit. Any crash, leak, hang or
 * sanitizer report is a bug; invalid input must only produce diagnostics.
 */
#include <stddef.h>
#include <stdint.h>

#include "api/codec.h"
#include "api/defaults.h"
#include "api/render.h"
#include "api/validate.h"
#include "base/emit.h"
#include "base/load.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct js_diag d;
	js_diag_init(&d);
	struct js_docs *docs = NULL;
	if (js_docs_load("fuzz", (const char *)data, size, &d, &docs) == 0) {
		for (size_t i = 0; i < js_docs_count(docs); i++) {
			struct js_jobset *js = NULL;
			if (js_codec_decode_jobset(js_docs_root(docs, i), JS_CODEC_STRICT, &d, &js) < 0)
				continue;
			js_default_jobset(js);
			struct js_validate_opts o = {.strict = true};
			if (js_validate_create(js, &o, &d) == 0 && js->spec.n_replicated_jobs > 0) {
				struct js_render_opts ro = {0};
				json_t *job = js_render_job(js, 0, 0, &ro);
				struct js_buf b;
				js_buf_init(&b, 1u << 20);
				int r = js_emit_yaml(job, 1, &b);
				(void)r;
				js_buf_done(&b);
				json_decref(job);
			}
			js_jobset_free(js);
		}
		js_docs_locate(docs, 0, &d, 0);
		js_docs_free(docs);
	}
	js_diag_done(&d);
	return 0;
}
