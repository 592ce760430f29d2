/*
 * podlog.c - capped, rotated container logs (see podlog.h).
 */
#include "local/podlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"

struct js_podlog {
	char *path;
	int fd;            /* -1 after a failed reopen: later writes are lost */
	int64_t size;      /* bytes in the current file */
	int64_t max_bytes;
	int max_files;
	int64_t rotations, errors;
};

static int open_log(const char *path)
{
	return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

int js_podlog_open(const char *path, int64_t max_bytes, int max_files, struct js_podlog **ret_log)
{
	if (max_bytes < JS_PODLOG_MIN_MAX_BYTES || max_files < 1 || max_files > JS_PODLOG_MAX_MAX_FILES)
		return -EINVAL;
	int fd = open_log(path);
	if (fd < 0)
		return -errno;
	struct stat st;
	struct js_podlog *log = js_xcalloc(1, sizeof(*log));
	log->path = js_xstrdup(path);
	log->fd = fd;
	log->size = fstat(fd, &st) == 0 ? (int64_t)st.st_size : 0;
	log->max_bytes = max_bytes;
	log->max_files = max_files;
	*ret_log = log;
	return 0;
}

/** Shift `<path>.k` to `<path>.k+1` (dropping the oldest), `<path>` to
 * `<path>.1`, and start an empty `<path>`. With one file, empty it. */
static void rotate(struct js_podlog *log)
{
	log->rotations++;
	if (log->max_files == 1) {
		if (log->fd >= 0 && ftruncate(log->fd, 0) < 0)
			log->errors++;
		log->size = 0;
		return;
	}
	for (int k = log->max_files - 1; k >= 1; k--) {
		char *from = k == 1 ? js_xstrdup(log->path) : js_buf_format("%s.%d", log->path, k - 1);
		char *to = js_buf_format("%s.%d", log->path, k);
		if (rename(from, to) < 0 && errno != ENOENT)
			log->errors++;
		free(from);
		free(to);
	}
	if (log->fd >= 0)
		close(log->fd);
	log->fd = open_log(log->path);
	if (log->fd < 0)
		log->errors++;
	log->size = 0;
}

void js_podlog_write(struct js_podlog *log, const void *data, size_t n)
{
	const char *p = data;
	while (n > 0) {
		if (log->size >= log->max_bytes)
			rotate(log);
		size_t room = (size_t)(log->max_bytes - log->size);
		size_t take = n < room ? n : room;
		if (log->fd < 0) {
			log->errors++;
			return;
		}
		ssize_t w = write(log->fd, p, take);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			/* A full disk: drop this write, keep running. */
			log->errors++;
			return;
		}
		log->size += w;
		p += w;
		n -= (size_t)w;
	}
}

int64_t js_podlog_size(const struct js_podlog *log)
{
	return log->size;
}

int64_t js_podlog_rotations(const struct js_podlog *log)
{
	return log->rotations;
}

int64_t js_podlog_errors(const struct js_podlog *log)
{
	return log->errors;
}

struct js_podlog *js_podlog_free(struct js_podlog *log)
{
	if (!log)
		return NULL;
	if (log->fd >= 0)
		close(log->fd);
	free(log->path);
	free(log);
	return NULL;
}
