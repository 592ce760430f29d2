/*
 * ipam.c - pod addresses of one run and the loopback block registry (see
 * ipam.h).
 */
#include "local/ipam.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/file.h"
#include "base/parse.h"

/* Slots: base+2 .. base+size-2 (network, gateway and broadcast excluded). */
#define IPAM_FIRST_SLOT 2u
#define IPAM_CAPACITY (JS_IPAM_BLOCK_SIZE - 3u)
/* A registry holds at most one line per block plus the cursor: a larger
 * file is not ours. */
#define IPAM_REGISTRY_MAX 16384
#define IPAM_N_BLOCKS (JS_IPAM_LOOPBACK_LAST - JS_IPAM_LOOPBACK_FIRST + 1)

struct js_ipam {
	uint32_t base;
	uint32_t n_fixed;             /* slots below belong to positions */
	uint32_t cursor;              /* next dynamic slot to try */
	uint8_t used[IPAM_CAPACITY / 8 + 1]; /* dynamic slots taken */
};

struct js_ipam *js_ipam_new(uint32_t base, uint64_t n_fixed)
{
	struct js_ipam *a = js_xcalloc(1, sizeof(*a));
	a->base = base & ~(JS_IPAM_BLOCK_SIZE - 1u);
	a->n_fixed = n_fixed > IPAM_CAPACITY ? IPAM_CAPACITY : (uint32_t)n_fixed;
	a->cursor = a->n_fixed;
	return a;
}

struct js_ipam *js_ipam_free(struct js_ipam *a)
{
	free(a);
	return NULL;
}

uint32_t js_ipam_capacity(void)
{
	return IPAM_CAPACITY;
}

uint32_t js_ipam_gateway(const struct js_ipam *a)
{
	return a->base + 1u;
}

uint32_t js_ipam_base(const struct js_ipam *a)
{
	return a->base;
}

int js_ipam_fixed(const struct js_ipam *a, uint64_t pos, uint32_t *ret_addr)
{
	if (pos >= IPAM_CAPACITY)
		return -ENOSPC;
	*ret_addr = a->base + IPAM_FIRST_SLOT + (uint32_t)pos;
	return 0;
}

static bool slot_used(const struct js_ipam *a, uint32_t s)
{
	return a->used[s / 8] & (1u << (s % 8));
}

int js_ipam_take(struct js_ipam *a, uint32_t *ret_addr)
{
	uint32_t n = IPAM_CAPACITY - a->n_fixed;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t s = a->n_fixed + (a->cursor - a->n_fixed + i) % n;
		if (slot_used(a, s))
			continue;
		a->used[s / 8] |= (uint8_t)(1u << (s % 8));
		a->cursor = s + 1 < IPAM_CAPACITY ? s + 1 : a->n_fixed;
		*ret_addr = a->base + IPAM_FIRST_SLOT + s;
		return 0;
	}
	return -ENOSPC;
}

void js_ipam_put(struct js_ipam *a, uint32_t addr)
{
	uint32_t off = addr - a->base;
	if (addr < a->base || off < IPAM_FIRST_SLOT || off - IPAM_FIRST_SLOT >= IPAM_CAPACITY)
		return;
	uint32_t s = off - IPAM_FIRST_SLOT;
	if (s >= a->n_fixed)
		a->used[s / 8] &= (uint8_t) ~(1u << (s % 8));
}

void js_ipam_format(uint32_t addr, char out[16])
{
	snprintf(out, 16, "%u.%u.%u.%u", addr >> 24, (addr >> 16) & 255u, (addr >> 8) & 255u, addr & 255u);
}

/* ---- the loopback block registry ---- */

struct registry {
	int next;                     /* cursor: block to try first */
	pid_t holder[IPAM_N_BLOCKS];  /* 0 = free */
};

static bool alive(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

/** Parse the registry text; entries of dead processes are dropped. */
static int parse_registry(const char *text, struct registry *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->next = JS_IPAM_LOOPBACK_FIRST;
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");
		const char *sp = memchr(p, ' ', n);
		if (n && p[0] != '#') {
			int64_t a, b;
			if (!sp)
				return -EBADMSG;
			bool is_next = (size_t)(sp - p) == 4 && memcmp(p, "next", 4) == 0;
			if (!is_next && js_parse_i64_in(p, (size_t)(sp - p), JS_IPAM_LOOPBACK_FIRST,
							JS_IPAM_LOOPBACK_LAST, &a) < 0)
				return -EBADMSG;
			if (js_parse_i64_in(sp + 1, n - (size_t)(sp + 1 - p), 1, is_next ? JS_IPAM_LOOPBACK_LAST : INT32_MAX,
					    &b) < 0)
				return -EBADMSG;
			if (is_next)
				ret->next = b < JS_IPAM_LOOPBACK_FIRST ? JS_IPAM_LOOPBACK_FIRST : (int)b;
			else if (alive((pid_t)b))
				ret->holder[a - JS_IPAM_LOOPBACK_FIRST] = (pid_t)b;
		}
		p += n + (p[n] == '\n');
	}
	return 0;
}

static int write_registry(int fd, const struct registry *r)
{
	struct js_buf b;
	js_buf_init(&b, IPAM_REGISTRY_MAX);
	int err = js_buf_printf(&b, "# jobset run: loopback blocks 127.B.0.0/16 of running runs (B pid)\nnext %d\n",
				r->next);
	for (int i = 0; i < IPAM_N_BLOCKS && !err; i++) {
		if (r->holder[i])
			err = js_buf_printf(&b, "%d %d\n", JS_IPAM_LOOPBACK_FIRST + i, (int)r->holder[i]);
	}
	if (!err && ftruncate(fd, 0) < 0)
		err = -errno;
	if (!err && pwrite(fd, js_buf_str(&b), b.len, 0) != (ssize_t)b.len)
		err = -EIO;
	js_buf_done(&b);
	return err;
}

/** Open and lock the registry, then parse it. Returns the fd (>= 0) or
 * -errno; the lock goes with close(). */
static int open_registry(const char *path, int flags, struct registry *ret)
{
	int fd = open(path, flags | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	int r;
	while ((r = flock(fd, LOCK_EX)) < 0 && errno == EINTR) {
	}
	char *text = NULL;
	size_t len;
	if (r < 0)
		r = -errno;
	else
		r = js_file_read_fd(fd, IPAM_REGISTRY_MAX, &text, &len);
	if (r == 0)
		r = parse_registry(text, ret);
	free(text);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int js_ipam_claim_block(const char *path, int *ret_block)
{
	struct registry reg;
	int fd = open_registry(path, O_CREAT, &reg);
	if (fd < 0)
		return fd;
	int found = -1;
	for (int i = 0; i < IPAM_N_BLOCKS && found < 0; i++) {
		int b = JS_IPAM_LOOPBACK_FIRST + (reg.next - JS_IPAM_LOOPBACK_FIRST + i) % IPAM_N_BLOCKS;
		if (!reg.holder[b - JS_IPAM_LOOPBACK_FIRST])
			found = b;
	}
	int r = -ENOSPC;
	if (found >= 0) {
		reg.holder[found - JS_IPAM_LOOPBACK_FIRST] = getpid();
		reg.next = found < JS_IPAM_LOOPBACK_LAST ? found + 1 : JS_IPAM_LOOPBACK_FIRST;
		r = write_registry(fd, &reg);
	}
	close(fd);
	if (r == 0)
		*ret_block = found;
	return r;
}

int js_ipam_release_block(const char *path, int block)
{
	struct registry reg;
	int fd = open_registry(path, 0, &reg);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	int r = 0;
	if (block >= JS_IPAM_LOOPBACK_FIRST && block <= JS_IPAM_LOOPBACK_LAST &&
	    reg.holder[block - JS_IPAM_LOOPBACK_FIRST] == getpid()) {
		reg.holder[block - JS_IPAM_LOOPBACK_FIRST] = 0;
		r = write_registry(fd, &reg);
	}
	close(fd);
	return r;
}

int js_ipam_default_registry(char **ret_path)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	if (xdg && xdg[0] == '/' && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid()) {
		*ret_path = js_buf_format("%s/jobset-loopback-blocks", xdg);
		return 0;
	}
	char *dir = js_buf_format("/tmp/jobset-%u", (unsigned)geteuid());
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		int err = -errno;
		free(dir);
		return err;
	}
	/* /tmp is shared: a directory someone else made for us is a trap. */
	int err = lstat(dir, &st) < 0 ? -errno : 0;
	if (!err && (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 0022)))
		err = -EPERM;
	if (err) {
		free(dir);
		return err;
	}
	*ret_path = js_buf_format("%s/loopback-blocks", dir);
	free(dir);
	return 0;
}
