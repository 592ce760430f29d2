/*
 * file.c - bounded whole-file reads, atomic whole-file writes.
 */
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"

int js_file_read_fd(int fd, size_t max, char **ret, size_t *ret_len)
{
	struct js_buf b;
	js_buf_init(&b, max);
	char chunk[65536];
	int r = 0;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		if (js_buf_add(&b, chunk, (size_t)n) < 0) {
			r = JS_ETOOLARGE;
			break;
		}
	}
	if (r < 0) {
		js_buf_done(&b);
		return r;
	}
	*ret_len = b.len;
	*ret = js_buf_take(&b);
	return 0;
}

int js_file_read(const char *path, size_t max, char **ret, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = js_file_read_fd(fd, max, ret, ret_len);
	close(fd);
	return r;
}

int js_file_write_atomic_mode(const char *path, const void *data, size_t n, unsigned mode, bool sync)
{
	/* A name of our own next to the target, so rename(2) stays within one
	 * file system and two writers never share a temporary file. One left
	 * by a crashed writer (or planted) is removed, and O_EXCL|O_NOFOLLOW
	 * make sure the file written is one this call created. */
	char *tmp = js_buf_format("%s.tmp.%ld", path, (long)getpid());
	(void)unlink(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
	if (fd < 0) {
		int err = -errno;
		free(tmp);
		return err;
	}
	/* The mode asked for, whatever the umask took from it. */
	int r = fchmod(fd, (mode_t)mode) < 0 ? -errno : 0;
	const char *p = data;
	while (r == 0 && n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			r = -errno;
			break;
		}
		p += w;
		n -= (size_t)w;
	}
	if (r == 0 && sync && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r)
		(void)unlink(tmp);
	free(tmp);
	return r;
}

int js_file_write_atomic(const char *path, const void *data, size_t n)
{
	return js_file_write_atomic_mode(path, data, n, 0644, false);
}

int js_file_mkdir_p(const char *path, unsigned parent_mode, unsigned leaf_mode)
{
	if (!path[0])
		return -ENOENT; /* what mkdir("") says */
	char *p = js_xstrdup(path);
	int r = 0;
	for (char *c = p + 1; r == 0; c++) {
		if (*c != '/' && *c != '\0')
			continue;
		char keep = *c;
		*c = '\0';
		mode_t mode = (mode_t)(keep ? parent_mode : leaf_mode);
		if (mkdir(p, mode) == 0) {
			/* Ours: exactly the mode asked for, not what the umask left. */
			if (chmod(p, mode) < 0)
				r = -errno;
		} else if (errno != EEXIST) {
			r = -errno;
		}
		*c = keep;
		if (!keep)
			break;
	}
	free(p);
	return r;
}
