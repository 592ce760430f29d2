/*
 * execcred_fuzz.c - libFuzzer target for the ExecCredential parser
 * (kube/execcred.h): any bytes as a credential plugin's output, checked
 * against each apiVersion a kubeconfig may ask for. Nothing may crash, leak
 * or trip a sanitizer; a refused output must say why. No state survives
 * between inputs.
 */
#include <stdint.h>
#include <stdlib.h>

#include "kube/execcred.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const versions[] = {"client.authentication.k8s.io/v1",
					       "client.authentication.k8s.io/v1beta1", NULL};
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		struct js_execcred c = {0};
		char why[256] = "";
		int r = js_execcred_parse((const char *)data, size, versions[i], &c, why, sizeof why);
		if (r == 0) {
			if (!c.token && !(c.cert && c.key))
				abort(); /* accepted without a credential */
			js_execcred_done(&c);
		} else if (!why[0]) {
			abort();
		}
	}
	return 0;
}
