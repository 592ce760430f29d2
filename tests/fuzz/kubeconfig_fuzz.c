/*
 * kubeconfig_fuzz.c - libFuzzer target for the kubeconfig parser
 * (kube/kubeconfig.h): any bytes as a kubeconfig document (YAML or JSON),
 * resolved for its current-context and for the context named "c". Nothing
 * may crash, leak or trip a sanitizer; a bad file only gets a diagnostic.
 *
 * Relative certificate and token paths resolve against a directory that
 * does not exist, so they fail to read the same way on every run; an
 * absolute path is read as the parser would read it (bounded by
 * JS__KUBE_MAX_FILE). No state survives between inputs.
 */
#include <stdint.h>
#include <stdlib.h>

#include "base/diag.h"
#include "kube/kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const contexts[] = {NULL, "c"};
	for (size_t i = 0; i < sizeof(contexts) / sizeof(contexts[0]); i++) {
		struct js_diag d;
		js_diag_init(&d);
		struct js_kubeconfig kc = {0};
		int r = js_kubeconfig_parse("fuzz", (const char *)data, size, "/nonexistent-js-fuzz", contexts[i], &d, &kc);
		if (r == 0) {
			/* A resolved configuration always names its server. */
			if (!kc.server || !kc.context)
				abort();
			js_kubeconfig_done(&kc);
		} else if (d.n == 0) {
			abort(); /* an error must say why */
		}
		js_diag_done(&d);
	}
	return 0;
}
