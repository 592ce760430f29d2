// regex.cc - the minimal C++ shim over RE2 (the only C++ in the product).
#include "base/regex.h"

#include <cerrno>
#include <cstring>
#include <new>

#include <re2/re2.h>

struct js_regex {
	re2::RE2 re;
	explicit js_regex(const char *p) : re(p, re2::RE2::Quiet) {}
};

extern "C" int js_regex_compile(const char *pattern, struct js_regex **ret_re, char *err, size_t errlen)
{
	js_regex *r = new (std::nothrow) js_regex(pattern);
	if (!r)
		return -ENOMEM;
	if (!r->re.ok()) {
		if (err && errlen) {
			std::strncpy(err, r->re.error().c_str(), errlen - 1);
			err[errlen - 1] = '\0';
		}
		delete r;
		return -EINVAL;
	}
	*ret_re = r;
	return 0;
}

extern "C" bool js_regex_search(const struct js_regex *re, const char *text)
{
	return re2::RE2::PartialMatch(text, re->re);
}

extern "C" struct js_regex *js_regex_free(struct js_regex *re)
{
	delete re;
	return nullptr;
}
