/*
 * rundir_test.c - run directories: fresh or reused (which files go, which
 * stay), the runner lock as liveness, the control FIFO, the per-user root
 * (created private, refused when others can write to it), `latest`; the
 * modes of what is created, under umask 0 (so they are ours, not the
 * umask's): the root and run directories 0700, the control FIFO 0600.
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
#include "local/rundir.h"

struct fixture {
	char dir[64];
};

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/js-rundir-test-XXXXXX");
	if (!f || !mkdtemp(f->dir))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	int r = nftw(f->dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	free(f);
	return r;
}

static void touch(const char *dir, const char *name)
{
	char *p = js_buf_format("%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	free(p);
}

static bool exists(const char *dir, const char *name)
{
	char *p = js_buf_format("%s/%s", dir, name);
	bool e = access(p, F_OK) == 0;
	free(p);
	return e;
}

static void test_fresh_and_reuse(void **state)
{
	struct fixture *f = *state;
	char *run = js_buf_format("%s/a/b/run", f->dir);
	char *err = NULL;
	/* New (parents too), then empty: both fine. */
	assert_int_equal(js_rundir_prepare(run, JS_RUNDIR_FRESH, &err), 0);
	assert_int_equal(js_rundir_prepare(run, JS_RUNDIR_FRESH, &err), 0);
	/* A previous run's files: refused fresh, cleared when reused. */
	static const char *const gone[] = {"events.log", "jobset.json", "jobs.json", "report.html", "state.json",
					   "hosts", "runner.log", "logs/p/c.log", "hosts.d/p"};
	static const char *const kept[] = {"work/ckpt", "volumes/claim/data", "runner.lock"};
	static const char *const dirs[] = {"logs", "logs/p", "hosts.d", "work", "volumes", "volumes/claim"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char *d = js_buf_format("%s/%s", run, dirs[i]);
		assert_int_equal(mkdir(d, 0755), 0);
		free(d);
	}
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
		touch(run, gone[i]);
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		touch(run, kept[i]);
	assert_int_equal(js_rundir_prepare(run, JS_RUNDIR_FRESH, &err), JS_EEXISTS);
	assert_non_null(strstr(err, "--reuse-run-dir"));
	free(err);
	assert_int_equal(js_rundir_prepare(run, JS_RUNDIR_REUSE, &err), 0);
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
		if (exists(run, gone[i]))
			fail_msg("reuse kept %s", gone[i]);
	}
	assert_false(exists(run, "logs"));
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		if (!exists(run, kept[i]))
			fail_msg("reuse removed %s", kept[i]);
	}
	/* A file where the directory should be. */
	char *file = js_buf_format("%s/plain", f->dir);
	touch(f->dir, "plain");
	assert_int_equal(js_rundir_prepare(file, JS_RUNDIR_REUSE, &err), -ENOTDIR);
	free(err);
	free(file);
	free(run);
}

static void test_lock_and_control(void **state)
{
	struct fixture *f = *state;
	char *err = NULL;
	assert_false(js_rundir_live(f->dir));
	assert_int_equal(js_rundir_control_send(f->dir, "down"), -ESRCH);
	int lock = -1, again = -1, rd = -1, wr = -1;
	assert_int_equal(js_rundir_lock(f->dir, &lock), 0);
	assert_true(js_rundir_live(f->dir));
	assert_int_equal(js_rundir_lock(f->dir, &again), -EBUSY);
	/* A live run is never reused. */
	assert_int_equal(js_rundir_prepare(f->dir, JS_RUNDIR_REUSE, &err), -EBUSY);
	free(err);
	assert_int_equal(js_rundir_control_open(f->dir, &rd, &wr), 0);
	assert_int_equal(js_rundir_control_send(f->dir, "evict p-0-0-abcde"), 0);
	assert_int_equal(js_rundir_control_send(f->dir, "down"), 0);
	char buf[128] = {0};
	assert_int_equal(read(rd, buf, sizeof(buf) - 1), (ssize_t)strlen("evict p-0-0-abcde\ndown\n"));
	assert_string_equal(buf, "evict p-0-0-abcde\ndown\n");
	char longer[JS_RUNDIR_CONTROL_MAX + 1];
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	assert_int_equal(js_rundir_control_send(f->dir, longer), -E2BIG);
	close(rd);
	close(wr);
	close(lock);
	assert_false(js_rundir_live(f->dir));
}

static void test_root_and_latest(void **state)
{
	struct fixture *f = *state;
	char *xdg = js_buf_format("%s/xdg", f->dir);
	assert_int_equal(mkdir(xdg, 0700), 0);
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	char *root = NULL, *err = NULL;
	assert_int_equal(js_rundir_root(&root, &err), 0);
	char *want = js_buf_format("%s/jobset", xdg);
	assert_string_equal(root, want);
	struct stat st;
	assert_int_equal(stat(root, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	/* latest: none yet, then the run we name. */
	char *dir = NULL;
	assert_int_equal(js_rundir_latest(&dir, &err), -ENOENT);
	free(err);
	char *run = js_buf_format("%s/r1", root);
	assert_int_equal(mkdir(run, 0755), 0);
	assert_int_equal(js_rundir_set_latest(root, run), 0);
	assert_int_equal(js_rundir_latest(&dir, &err), 0);
	assert_string_equal(dir, run);
	free(dir);
	/* Writable by others: refused. */
	assert_int_equal(chmod(root, 0777), 0);
	char *r2 = NULL;
	assert_int_equal(js_rundir_root(&r2, &err), -EPERM);
	assert_non_null(strstr(err, "only you can write to"));
	free(err);
	/* Without XDG_RUNTIME_DIR: under TMPDIR, per uid. */
	unsetenv("XDG_RUNTIME_DIR");
	setenv("TMPDIR", f->dir, 1);
	assert_int_equal(js_rundir_root(&r2, &err), 0);
	char *want2 = js_buf_format("%s/jobset-run-%u", f->dir, (unsigned)getuid());
	assert_string_equal(r2, want2);
	unsetenv("TMPDIR");
	free(want2);
	free(r2);
	free(run);
	free(want);
	free(root);
	free(xdg);
}

static mode_t mode_of(const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return st.st_mode & 07777;
}

static void test_modes(void **state)
{
	struct fixture *f = *state;
	mode_t old = umask(0);
	char *xdg = js_buf_format("%s/xdg", f->dir);
	assert_int_equal(mkdir(xdg, 0700), 0);
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	char *root = NULL, *err = NULL;
	assert_int_equal(js_rundir_root(&root, &err), 0);
	assert_int_equal(mode_of(root), 0700);
	char *run = js_buf_format("%s/new/run", f->dir);
	assert_int_equal(js_rundir_prepare(run, JS_RUNDIR_FRESH, &err), 0);
	assert_int_equal(mode_of(run), 0700);
	char *parent = js_buf_format("%s/new", f->dir);
	assert_int_equal(mode_of(parent), 0755);
	char *ctl = js_buf_format("%s/control", run);
	int rd = -1, wr = -1;
	assert_int_equal(js_rundir_control_open(run, &rd, &wr), 0);
	assert_int_equal(mode_of(ctl), 0600);
	close(rd);
	close(wr);
	/* An existing directory is the user's choice: left as it is. */
	char *mine = js_buf_format("%s/mine", f->dir);
	assert_int_equal(mkdir(mine, 0750), 0);
	assert_int_equal(js_rundir_prepare(mine, JS_RUNDIR_FRESH, &err), 0);
	assert_int_equal(mode_of(mine), 0750);
	unsetenv("XDG_RUNTIME_DIR");
	umask(old);
	free(mine);
	free(ctl);
	free(parent);
	free(run);
	free(root);
	free(xdg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fresh_and_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock_and_control, setup, teardown),
		cmocka_unit_test_setup_teardown(test_root_and_latest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_modes, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
