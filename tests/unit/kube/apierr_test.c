/*
 * apierr_test.c - decoding Status answers into error codes (kube/apierr.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "kube/apierr.h"

static const struct acase {
	const char *name;
	long code;
	const char *body;
	long retry_header;
	int err;
	const char *reason;
	long retry_after;
	size_t ncauses;
	const char *cause_field;
} cases[] = {
	{"not found", 404, "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"code\":404,\"message\":\"x not found\"}", 0,
	 JS_ENOTFOUND, "NotFound", 0, 0, NULL},
	{"409 already exists", 409, "{\"kind\":\"Status\",\"reason\":\"AlreadyExists\",\"code\":409}", 0, JS_EEXISTS,
	 "AlreadyExists", 0, 0, NULL},
	{"409 conflict", 409, "{\"kind\":\"Status\",\"reason\":\"Conflict\",\"code\":409}", 0, JS_ECONFLICT, "Conflict",
	 0, 0, NULL},
	{"409 without body is a conflict", 409, NULL, 0, JS_ECONFLICT, NULL, 0, 0, NULL},
	{"410 expired", 410, "{\"kind\":\"Status\",\"reason\":\"Expired\",\"code\":410}", 0, JS_EGONE, "Expired", 0, 0,
	 NULL},
	{"410 gone", 410, "{\"kind\":\"Status\",\"reason\":\"Gone\"}", 0, JS_EGONE, "Gone", 0, 0, NULL},
	{"422 invalid with causes", 422,
	 "{\"kind\":\"Status\",\"reason\":\"Invalid\",\"details\":{\"name\":\"Bad\",\"kind\":\"configmaps\","
	 "\"causes\":[{\"reason\":\"FieldValueInvalid\",\"message\":\"bad\",\"field\":\"metadata.name\"},"
	 "{\"reason\":\"FieldValueRequired\",\"field\":\"data\"}]}}",
	 0, JS_EINVALID, "Invalid", 0, 2, "metadata.name"},
	{"429 header", 429, "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\"}", 7, JS_APIERR_ETOOMANY,
	 "TooManyRequests", 7, 0, NULL},
	{"429 details.retryAfterSeconds", 429,
	 "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\",\"details\":{\"retryAfterSeconds\":3}}", 0,
	 JS_APIERR_ETOOMANY, "TooManyRequests", 3, 0, NULL},
	{"header wins over details", 429,
	 "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\",\"details\":{\"retryAfterSeconds\":3}}", 9,
	 JS_APIERR_ETOOMANY, "TooManyRequests", 9, 0, NULL},
	{"403", 403, "{\"kind\":\"Status\",\"reason\":\"Forbidden\"}", 0, JS_APIERR_EFORBIDDEN, "Forbidden", 0, 0, NULL},
	{"401 plain text", 401, "Unauthorized", 0, JS_APIERR_EUNAUTHORIZED, NULL, 0, 0, NULL},
	{"500 html", 500, "<html>oops</html>", 0, JS_APIERR_ESERVER, NULL, 0, 0, NULL},
	{"503 with retry", 503, "", 1, JS_APIERR_ESERVER, NULL, 1, 0, NULL},
	{"504", 504, NULL, 0, JS_APIERR_ETIMEOUT, NULL, 0, 0, NULL},
	{"reason beats code", 500, "{\"kind\":\"Status\",\"reason\":\"NotFound\"}", 0, JS_ENOTFOUND, "NotFound", 0, 0,
	 NULL},
	{"non-Status JSON maps by code", 404, "{\"kind\":\"Pod\",\"reason\":\"Conflict\"}", 0, JS_ENOTFOUND, NULL, 0, 0,
	 NULL},
	{"JSON array body", 400, "[1,2]", 0, JS_APIERR_EBADREQUEST, NULL, 0, 0, NULL},
	{"unknown 418", 418, NULL, 0, JS_APIERR_EOTHER, NULL, 0, 0, NULL},
	{"413", 413, NULL, 0, JS_ETOOLARGE, NULL, 0, 0, NULL},
	{"causes not an array", 422, "{\"kind\":\"Status\",\"reason\":\"Invalid\",\"details\":{\"causes\":{}}}", 0,
	 JS_EINVALID, "Invalid", 0, 0, NULL},
};

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct acase *c = &cases[i];
		struct js_apierr e = {0};
		int r = js_apierr_decode(c->code, c->body, c->body ? strlen(c->body) : 0, c->retry_header, &e);
		if (r != c->err || e.err != c->err)
			fail_msg("case '%s': err %d (%s), expected %d", c->name, r, js_apierr_strerror(r), c->err);
		if ((c->reason == NULL) != (e.reason == NULL) || (c->reason && strcmp(c->reason, e.reason) != 0))
			fail_msg("case '%s': reason %s, expected %s", c->name, e.reason ? e.reason : "(null)",
				 c->reason ? c->reason : "(null)");
		if (e.retry_after_s != c->retry_after)
			fail_msg("case '%s': retry_after %ld, expected %ld", c->name, e.retry_after_s, c->retry_after);
		if (e.ncauses != c->ncauses)
			fail_msg("case '%s': %zu causes, expected %zu", c->name, e.ncauses, c->ncauses);
		if (c->cause_field)
			assert_string_equal(e.causes[0].field, c->cause_field);
		assert_int_equal(e.http_code, c->code);
		/* decoding without a details struct gives the same code */
		assert_int_equal(js_apierr_decode(c->code, c->body, c->body ? strlen(c->body) : 0, c->retry_header, NULL),
				 c->err);
		js_apierr_done(&e);
	}
}

static void test_reuse_and_transport(void **state)
{
	(void)state;
	struct js_apierr e = {0};
	const char *b = "{\"kind\":\"Status\",\"reason\":\"Invalid\",\"message\":\"m\",\"details\":{\"causes\":[{}]}}";
	assert_int_equal(js_apierr_decode(422, b, strlen(b), 0, &e), JS_EINVALID);
	assert_string_equal(e.message, "m");
	/* a second decode into the same struct releases the first */
	assert_int_equal(js_apierr_decode(404, NULL, 0, 0, &e), JS_ENOTFOUND);
	assert_null(e.message);
	assert_int_equal(e.ncauses, 0);
	js_apierr_set_transport(&e, -111, "connection refused");
	assert_int_equal(e.http_code, 0);
	assert_string_equal(e.message, "connection refused");
	js_apierr_done(&e);
	js_apierr_done(NULL);
	assert_string_equal(js_apierr_strerror(JS_APIERR_ETOOMANY), "too many requests");
	assert_string_equal(js_apierr_strerror(JS_ECONFLICT), "conflict");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_reuse_and_transport),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
