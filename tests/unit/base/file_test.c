/*
 * file_test.c - base/file.h: bounded reads, atomic writes with an exact mode
 * (under umask 0 and 077, over a stale or planted temporary file), and
 * mkdir -p with exact modes for what it creates and none for what exists.
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

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

static int setup(void **state)
{
	char *dir = strdup("/tmp/js-file-test-XXXXXX");
	if (!dir || !mkdtemp(dir))
		return -1;
	*state = dir;
	return 0;
}

static int teardown(void **state)
{
	int r = nftw(*state, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	free(*state);
	return r;
}

static mode_t mode_of(const char *path)
{
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	return st.st_mode & 07777;
}

static void assert_content(const char *path, const char *want)
{
	char *got = NULL;
	size_t n = 0;
	assert_int_equal(js_file_read(path, 1024, &got, &n), 0);
	assert_int_equal(n, strlen(want));
	assert_string_equal(got, want);
	free(got);
}

static void test_write_modes(void **state)
{
	const char *dir = *state;
	static const struct {
		mode_t umask;
		unsigned mode;
		bool sync;
	} rows[] = {
		{0, 0600, true}, {0, 0644, false}, {077, 0600, false}, {077, 0644, true}, {0777, 0600, false},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		mode_t old = umask(rows[i].umask);
		char *p = js_buf_format("%s/f%zu", dir, i);
		assert_int_equal(js_file_write_atomic_mode(p, "one", 3, rows[i].mode, rows[i].sync), 0);
		umask(old);
		if (mode_of(p) != rows[i].mode)
			fail_msg("row %zu: mode %o, want %o", i, mode_of(p), rows[i].mode);
		assert_content(p, "one");
		free(p);
	}
	/* js_file_write_atomic: 0644 whatever the umask. */
	mode_t old = umask(0);
	char *p = js_buf_format("%s/plain", dir);
	assert_int_equal(js_file_write_atomic(p, "x", 1), 0);
	assert_int_equal(mode_of(p), 0644);
	umask(old);
	free(p);
}

static void test_stale_temporary(void **state)
{
	const char *dir = *state;
	mode_t old = umask(0);
	char *p = js_buf_format("%s/key", dir);
	char *tmp = js_buf_format("%s.tmp.%ld", p, (long)getpid());
	/* A world-writable temporary file left behind (or planted) with other
	 * contents: never reused, so neither its mode nor its bytes survive. */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "planted-and-longer", 18), 18);
	close(fd);
	assert_int_equal(js_file_write_atomic_mode(p, "secret", 6, 0600, true), 0);
	assert_int_equal(mode_of(p), 0600);
	assert_content(p, "secret");
	assert_int_equal(access(tmp, F_OK), -1);
	/* A symlink there: not followed (the target stays untouched). */
	char *target = js_buf_format("%s/target", dir);
	fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlink(target, tmp), 0);
	assert_int_equal(js_file_write_atomic_mode(p, "again", 5, 0600, false), 0);
	assert_content(p, "again");
	assert_content(target, "");
	assert_int_equal(mode_of(target), 0644);
	/* A missing directory: the error, nothing left behind. */
	char *nodir = js_buf_format("%s/none/key", dir);
	assert_int_equal(js_file_write_atomic_mode(nodir, "x", 1, 0600, false), -ENOENT);
	umask(old);
	free(nodir);
	free(target);
	free(tmp);
	free(p);
}

static void test_mkdir_modes(void **state)
{
	const char *dir = *state;
	static const struct {
		mode_t umask;
		unsigned parent, leaf;
	} rows[] = {{0, 0755, 0700}, {077, 0755, 0700}, {0, 0700, 0700}, {022, 0711, 0750}};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *parent = js_buf_format("%s/p%zu", dir, i);
		char *leaf = js_buf_format("%s/q", parent);
		mode_t old = umask(rows[i].umask);
		assert_int_equal(js_file_mkdir_p(leaf, rows[i].parent, rows[i].leaf), 0);
		umask(old);
		if (mode_of(parent) != rows[i].parent || mode_of(leaf) != rows[i].leaf)
			fail_msg("row %zu: %o/%o, want %o/%o", i, mode_of(parent), mode_of(leaf), rows[i].parent,
				 rows[i].leaf);
		free(leaf);
		free(parent);
	}
	/* What exists is left as it is. */
	char *mine = js_buf_format("%s/mine", dir);
	assert_int_equal(mkdir(mine, 0750), 0);
	assert_int_equal(chmod(mine, 0750), 0);
	assert_int_equal(js_file_mkdir_p(mine, 0700, 0700), 0);
	assert_int_equal(mode_of(mine), 0750);
	/* A file in the way. */
	char *sub = js_buf_format("%s/f/x", dir);
	char *f = js_buf_format("%s/f", dir);
	int fd = open(f, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(js_file_mkdir_p(sub, 0700, 0700), -ENOTDIR);
	free(f);
	free(sub);
	free(mine);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_write_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_temporary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mkdir_modes, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
