/*
 * names.c - name predicates of the Kubernetes validation library (SPEC §5.1),
 * written as small scanners instead of regular expressions.
 */
#include <ctype.h>
#include <string.h>

#include "api/validate.h"
#include "base/limits.h"

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum(char c)
{
	return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..n) */
static bool dns1123_label_n(const char *s, size_t n)
{
	if (n == 0 || n > JS_LIMIT_LABEL_LEN)
		return false;
	if (!lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

bool js_is_dns1123_label(const char *s)
{
	return dns1123_label_n(s, strlen(s));
}

bool js_is_dns1035_label(const char *s)
{
	size_t n = strlen(s);
	return dns1123_label_n(s, n) && s[0] >= 'a' && s[0] <= 'z';
}

bool js_is_dns1123_subdomain(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > JS_LIMIT_SUBDOMAIN_LEN)
		return false;
	const char *p = s;
	for (;;) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);
		/* Each dot-separated part follows the label shape; the overall
		 * length bound, not the per-label one, applies. */
		if (len == 0 || !lower_alnum(p[0]) || !lower_alnum(p[len - 1]))
			return false;
		for (size_t i = 0; i < len; i++)
			if (!lower_alnum(p[i]) && p[i] != '-')
				return false;
		if (!dot)
			return true;
		p = dot + 1;
	}
}

bool js_is_label_value(const char *s)
{
	size_t n = strlen(s);
	if (n == 0)
		return true;
	if (n > JS_LIMIT_LABEL_LEN || !alnum(s[0]) || !alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

bool js_is_qualified_name(const char *s)
{
	const char *slash = strchr(s, '/');
	const char *name = s;
	if (slash) {
		char prefix[JS_LIMIT_SUBDOMAIN_LEN + 1];
		size_t n = (size_t)(slash - s);
		if (n == 0 || n > JS_LIMIT_SUBDOMAIN_LEN)
			return false;
		memcpy(prefix, s, n);
		prefix[n] = '\0';
		if (!js_is_dns1123_subdomain(prefix))
			return false;
		name = slash + 1;
	}
	size_t n = strlen(name);
	return n > 0 && js_is_label_value(name);
}
