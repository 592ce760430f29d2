/*
 * base64.c - base64 decoding (see base64.h).
 */
#include "base/base64.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

static int b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int js_base64_decode(const char *in, size_t n, char **ret, size_t *ret_len)
{
	char *out = js_xmalloc(n / 4 * 3 + 4);
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	bool pad = false;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (c == '=') {
			pad = true;
			continue;
		}
		int v = b64val(c);
		if (v < 0 || pad) {
			free(out);
			return JS_EINVALID;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	/* Leftover bits must be zero padding of the last group (< 8 bits). */
	out[o] = '\0';
	*ret = out;
	*ret_len = o;
	return 0;
}
