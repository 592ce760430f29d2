/*
 * podlog_test.c - capped, rotated container logs: table-driven over caps,
 * file counts and write sizes; every case checks that no file exceeds the
 * cap, that the right files exist, and that the newest bytes are kept in
 * order across them.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/file.h"
#include "local/podlog.h"

struct lcase {
	const char *name;
	int64_t max_bytes;
	int max_files;
	size_t total;      /* bytes written in all */
	size_t chunk;      /* per write */
	int want_files;    /* files expected afterwards */
	int64_t rotations;
};

static const struct lcase cases[] = {
	{"under the cap: one file", 1024, 3, 1000, 100, 1, 0},
	{"exactly the cap: no rotation yet", 1024, 3, 1024, 256, 1, 0},
	{"one byte over: rotated once", 1024, 3, 1025, 1025, 2, 1},
	{"many rotations keep max_files", 1024, 3, 10000, 100, 3, 9},
	{"a write larger than several files", 1024, 4, 5000, 5000, 4, 4},
	{"one file: emptied when full", 1024, 1, 3000, 300, 1, 2},
};

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* Byte i of the stream: a position-dependent pattern, so order shows. */
static char byte_at(size_t i)
{
	return (char)('a' + (i * 7 + i / 26) % 26);
}

static void run_case(const struct lcase *c)
{
	char dir[] = "/tmp/js-podlog-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *path = js_buf_format("%s/c.log", dir);
	struct js_podlog *log = NULL;
	assert_int_equal(js_podlog_open(path, c->max_bytes, c->max_files, &log), 0);
	char *data = malloc(c->total);
	for (size_t i = 0; i < c->total; i++)
		data[i] = byte_at(i);
	for (size_t off = 0; off < c->total; off += c->chunk)
		js_podlog_write(log, data + off, c->total - off < c->chunk ? c->total - off : c->chunk);
	if (js_podlog_rotations(log) != c->rotations)
		fail_msg("%s: %lld rotations, expected %lld", c->name, (long long)js_podlog_rotations(log),
			 (long long)c->rotations);
	assert_int_equal(js_podlog_errors(log), 0);
	js_podlog_free(log);
	/* Files: c.log, c.log.1 ... c.log.<want-1>, each within the cap. */
	struct js_buf all;
	js_buf_init(&all, 0);
	int found = 0;
	for (int k = c->max_files + 1; k >= 0; k--) {
		char *f = k ? js_buf_format("%s.%d", path, k) : js_xstrdup(path);
		char *text = NULL;
		size_t n = 0;
		if (js_file_read(f, 1 << 20, &text, &n) == 0) {
			found++;
			if ((int64_t)n > c->max_bytes)
				fail_msg("%s: %s has %zu bytes, cap %lld", c->name, f, n, (long long)c->max_bytes);
			assert_int_equal(js_buf_add(&all, text, n), 0);
			free(text);
		}
		free(f);
	}
	if (found != c->want_files)
		fail_msg("%s: %d files, expected %d", c->name, found, c->want_files);
	/* What is kept is the end of the stream, in order. */
	assert_true(all.len <= c->total);
	for (size_t i = 0; i < all.len; i++) {
		if (all.p[i] != byte_at(c->total - all.len + i))
			fail_msg("%s: byte %zu of the kept %zu is out of order", c->name, i, all.len);
	}
	js_buf_done(&all);
	free(data);
	free(path);
	assert_int_equal(nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS), 0);
}

static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i]);
}

static void test_limits_and_append(void **state)
{
	(void)state;
	char dir[] = "/tmp/js-podlog-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *path = js_buf_format("%s/c.log", dir);
	struct js_podlog *log = NULL;
	assert_int_equal(js_podlog_open(path, JS_PODLOG_MIN_MAX_BYTES - 1, 2, &log), -EINVAL);
	assert_int_equal(js_podlog_open(path, 4096, 0, &log), -EINVAL);
	assert_int_equal(js_podlog_open(path, 4096, JS_PODLOG_MAX_MAX_FILES + 1, &log), -EINVAL);
	/* A restarted container appends: the size carries over, and the cap
	 * counts what is already there. */
	assert_int_equal(js_podlog_open(path, 1024, 2, &log), 0);
	js_podlog_write(log, "0123456789", 10);
	js_podlog_free(log);
	assert_int_equal(js_podlog_open(path, 1024, 2, &log), 0);
	assert_int_equal(js_podlog_size(log), 10);
	char big[1020];
	memset(big, 'x', sizeof(big));
	js_podlog_write(log, big, sizeof(big));
	assert_int_equal(js_podlog_rotations(log), 1);
	assert_int_equal(js_podlog_size(log), 10 + 1020 - 1024);
	js_podlog_free(log);
	assert_null(js_podlog_free(NULL));
	free(path);
	assert_int_equal(nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_limits_and_append),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
