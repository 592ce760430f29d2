/*
 * rundir.c - run directories, the runner lock and the control FIFO (see
 * rundir.h).
 */
#include "local/rundir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "base/buf.h"

/* What a previous run leaves that a reused directory must not mix with the
 * next one; work/ and volumes/ (the pods' own files) are kept. */
static const char *const run_files[] = {"events.log", "jobset.json", "jobs.json", "report.html", "state.json",
					"hosts", "runner.log", "control"};
static const char *const run_dirs[] = {"logs", "hosts.d", "containers"};

/* mkdir -p: parents 0755, the directory itself `mode`. */
static int mkdir_p(const char *path, mode_t mode)
{
	return js_file_mkdir_p(path, 0755, mode);
}

int js_rundir_root(char **ret_root, char **ret_err)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	const char *tmp = getenv("TMPDIR");
	char *root = xdg && xdg[0] == '/' ? js_buf_format("%s/jobset", xdg)
					  : js_buf_format("%s/jobset-run-%u", tmp && tmp[0] ? tmp : "/tmp",
							  (unsigned)getuid());
	int r = mkdir_p(root, 0700);
	struct stat st;
	if (!r && lstat(root, &st) < 0)
		r = -errno;
	if (r < 0) {
		*ret_err = js_buf_format("cannot create the run root '%s': %s", root, js_strerror(r));
		free(root);
		return r;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 0022)) {
		*ret_err = js_buf_format("the run root '%s' is not a directory of yours that only you can write to; "
					 "remove it, or pass --run-dir",
					 root);
		free(root);
		return -EPERM;
	}
	*ret_root = root;
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return (type == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -1 : 0;
}

/** Whether `dir` holds anything; -errno when it cannot be read. */
static int has_entries(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int n = 0;
	struct dirent *e;
	while (!n && (e = readdir(d)))
		n = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

int js_rundir_prepare(const char *dir, enum js_rundir_mode mode, char **ret_err)
{
	struct stat st;
	if (stat(dir, &st) < 0) {
		/* 0700: the run's logs, state and the pods' files are this user's alone. */
		int r = errno == ENOENT ? mkdir_p(dir, 0700) : -errno;
		if (r < 0)
			*ret_err = js_buf_format("cannot create run directory '%s': %s", dir, js_strerror(r));
		return r;
	}
	if (!S_ISDIR(st.st_mode)) {
		*ret_err = js_buf_format("run directory '%s' exists and is not a directory", dir);
		return -ENOTDIR;
	}
	if (js_rundir_live(dir)) {
		*ret_err = js_buf_format("a runner is live in '%s' (see jobset ps --run-dir %s; stop it with jobset "
					 "down)",
					 dir, dir);
		return -EBUSY;
	}
	int n = has_entries(dir);
	if (n < 0) {
		*ret_err = js_buf_format("cannot read run directory '%s': %s", dir, js_strerror(n));
		return n;
	}
	if (n == 0)
		return 0;
	if (mode == JS_RUNDIR_FRESH) {
		*ret_err = js_buf_format("run directory '%s' is not empty (a previous run?); name another one, or pass "
					 "--reuse-run-dir to clear its logs and results (work/ and volumes/ are kept)",
					 dir);
		return JS_EEXISTS;
	}
	for (size_t i = 0; i < JS_ARRAY_SIZE(run_files); i++) {
		char *p = js_buf_format("%s/%s", dir, run_files[i]);
		int r = unlink(p) < 0 && errno != ENOENT ? -errno : 0;
		if (r < 0)
			*ret_err = js_buf_format("cannot remove '%s': %s", p, js_strerror(r));
		free(p);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < JS_ARRAY_SIZE(run_dirs); i++) {
		char *p = js_buf_format("%s/%s", dir, run_dirs[i]);
		int r = nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT ? -errno : 0;
		if (r < 0)
			*ret_err = js_buf_format("cannot remove '%s': %s", p, js_strerror(r));
		free(p);
		if (r < 0)
			return r;
	}
	return 0;
}

int js_rundir_lock(const char *dir, int *ret_fd)
{
	char *p = js_buf_format("%s/runner.lock", dir);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	free(p);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		close(fd);
		return err;
	}
	*ret_fd = fd;
	return 0;
}

bool js_rundir_live(const char *dir)
{
	char *p = js_buf_format("%s/runner.lock", dir);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	free(p);
	if (fd < 0)
		return false;
	/* A shared lock is refused only while the runner holds its exclusive
	 * one; taking it for a moment disturbs nobody. */
	bool live = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return live;
}

int js_rundir_set_latest(const char *root, const char *dir)
{
	char *tmp = js_buf_format("%s/latest.%ld", root, (long)getpid());
	char *link = js_buf_format("%s/latest", root);
	char *abs = dir[0] == '/' ? js_xstrdup(dir) : NULL;
	if (!abs) {
		char cwd[PATH_MAX];
		abs = getcwd(cwd, sizeof(cwd)) ? js_buf_format("%s/%s", cwd, dir) : js_xstrdup(dir);
	}
	(void)unlink(tmp);
	int r = symlink(abs, tmp) < 0 || rename(tmp, link) < 0 ? -errno : 0;
	if (r < 0)
		(void)unlink(tmp);
	free(abs);
	free(link);
	free(tmp);
	return r;
}

int js_rundir_latest(char **ret_dir, char **ret_err)
{
	char *root = NULL;
	int r = js_rundir_root(&root, ret_err);
	if (r < 0)
		return r;
	char *link = js_buf_format("%s/latest", root);
	char *dir = realpath(link, NULL);
	if (!dir) {
		r = -errno;
		*ret_err = js_buf_format("no run found under %s (%s); pass --run-dir", root, js_strerror(r));
	}
	free(link);
	free(root);
	if (dir)
		*ret_dir = dir;
	return dir ? 0 : r;
}

int js_rundir_control_open(const char *dir, int *ret_rd_fd, int *ret_wr_fd)
{
	char *p = js_buf_format("%s/control", dir);
	int r = 0;
	if (mkfifo(p, 0600) < 0 && errno != EEXIST)
		r = -errno;
	int rd = r ? -1 : open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (!r && rd < 0)
		r = -errno;
	int wr = r ? -1 : open(p, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (!r && wr < 0) {
		r = -errno;
		close(rd);
	}
	free(p);
	if (r < 0)
		return r;
	*ret_rd_fd = rd;
	*ret_wr_fd = wr;
	return 0;
}

int js_rundir_control_send(const char *dir, const char *line)
{
	size_t n = strlen(line);
	if (n + 1 > JS_RUNDIR_CONTROL_MAX)
		return -E2BIG;
	if (!js_rundir_live(dir))
		return -ESRCH;
	char *p = js_buf_format("%s/control", dir);
	/* Non-blocking: with no reader the open fails (ENXIO) instead of
	 * waiting for one that will never come. */
	int fd = open(p, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	free(p);
	if (fd < 0)
		return errno == ENXIO || errno == ENOENT ? -ESRCH : -errno;
	char buf[JS_RUNDIR_CONTROL_MAX];
	memcpy(buf, line, n);
	buf[n] = '\n';
	ssize_t w = write(fd, buf, n + 1);
	int r = w == (ssize_t)(n + 1) ? 0 : w < 0 ? -errno : -EIO;
	close(fd);
	return r;
}
