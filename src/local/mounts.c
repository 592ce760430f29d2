/*
 * mounts.c - a container's volume mounts in process mode (see mounts.h).
 *
 * The plan is a list of steps with every path spelled out, so the child
 * only makes system calls. While planning, a small model of the
 * container's view answers "what is at path P?": the volumes mounted so
 * far (their targets and sources), the replicas made so far (directories
 * now on a tmpfs, whose entries that existed on the machine are still the
 * machine's through bind mounts) and the directories made inside replicas.
 */
#include "local/mounts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/file.h"
#include "base/buf.h"

enum op_kind {
	OP_TMPFS,   /* a: scratch, b: tmpfs options; made unbindable */
	OP_MKDIR,   /* a: directory (EEXIST is fine) */
	OP_FILE,    /* a: empty file to bind a file onto */
	OP_SYMLINK, /* a: link text, b: path */
	OP_BIND,    /* a: source, b: target, read_only */
	OP_MOVE,    /* a: scratch, b: where the replica goes */
	OP_NEWROOT, /* a: scratch; the replica becomes `/` */
	OP_CHDIR,   /* a: directory */
};

static const char *const op_names[] = {"tmpfs", "mkdir", "file", "symlink", "bind", "move", "newroot", "chdir"};

struct op {
	enum op_kind kind;
	char *a, *b;
	bool read_only;
};

struct js_mounts {
	size_t n_ops;
	struct op *ops;
	bool new_root;
};

/* ---- the child side ---- */

/* statfs flags that a read-only remount must keep: in a user namespace the
 * kernel refuses to clear them on a mount it locked. The ST_ values equal
 * the MS_ ones. */
static unsigned long kept_flags(const char *path)
{
	struct statfs sf;
	if (statfs(path, &sf) < 0)
		return 0;
	unsigned long keep = ST_NOSUID | ST_NODEV | ST_NOEXEC | ST_NOATIME | ST_NODIRATIME | ST_RELATIME;
	return (unsigned long)sf.f_flags & keep;
}

static int apply_op(const struct op *o)
{
	switch (o->kind) {
	case OP_TMPFS:
		if (mount("tmpfs", o->a, "tmpfs", MS_NOSUID | MS_NODEV, o->b) < 0)
			return -errno;
		/* Pruned from the recursive copies of its own parents. */
		return mount(NULL, o->a, NULL, MS_UNBINDABLE, NULL) < 0 ? -errno : 0;
	case OP_MKDIR:
		return mkdir(o->a, 0755) < 0 && errno != EEXIST ? -errno : 0;
	case OP_FILE: {
		int fd = open(o->a, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0)
			return -errno;
		close(fd);
		return 0;
	}
	case OP_SYMLINK:
		return symlink(o->a, o->b) < 0 ? -errno : 0;
	case OP_BIND:
		if (mount(o->a, o->b, NULL, MS_BIND | MS_REC, NULL) < 0)
			return -errno;
		if (o->read_only &&
		    mount(NULL, o->b, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | kept_flags(o->b), NULL) < 0)
			return -errno;
		return 0;
	case OP_MOVE:
		if (mount(o->a, o->b, NULL, MS_MOVE, NULL) < 0)
			return -errno;
		return mount(NULL, o->b, NULL, MS_PRIVATE, NULL) < 0 ? -errno : 0;
	case OP_NEWROOT:
		/* As switch_root does: the mount moved over `/` becomes the root
		 * only through chroot from inside it. */
		if (chdir(o->a) < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 || chdir("/") < 0)
			return -errno;
		return mount(NULL, "/", NULL, MS_PRIVATE, NULL) < 0 ? -errno : 0;
	case OP_CHDIR:
		return chdir(o->a) < 0 ? -errno : 0;
	}
	return -EINVAL;
}

int js_mounts_apply(const struct js_mounts *p)
{
	for (size_t i = 0; p && i < p->n_ops; i++) {
		int r = apply_op(&p->ops[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

bool js_mounts_new_root(const struct js_mounts *p)
{
	return p && p->new_root;
}

/* ---- planning ---- */

struct vol {
	const char *target, *source;
};

struct plan {
	struct js_mounts *m;
	const char *scratch;
	struct vol *vols;
	size_t n_vols;
	char **made; /* directories on a tmpfs: replicas and what was made in them */
	bool *is_replica;
	size_t n_made;
};

static void add_op(struct plan *p, enum op_kind k, char *a, char *b, bool ro)
{
	struct js_mounts *m = p->m;
	m->ops = js_xrealloc(m->ops, (m->n_ops + 1) * sizeof(*m->ops));
	m->ops[m->n_ops++] = (struct op){.kind = k, .a = a, .b = b, .read_only = ro};
}

static void add_made(struct plan *p, const char *dir, bool replica)
{
	p->made = js_xrealloc(p->made, (p->n_made + 1) * sizeof(*p->made));
	p->is_replica = js_xrealloc(p->is_replica, (p->n_made + 1) * sizeof(*p->is_replica));
	p->made[p->n_made] = js_xstrdup(dir);
	p->is_replica[p->n_made++] = replica;
}

/** `target` in canonical form ("/a/b": no empty or "." components), or
 * NULL when it is not absolute, has "..", or is `/`. Caller frees. */
static char *canonical(const char *target)
{
	if (!target || target[0] != '/')
		return NULL;
	struct js_buf b;
	js_buf_init(&b, 0);
	bool ok = true;
	for (const char *s = target; *s && ok;) {
		while (*s == '/')
			s++;
		size_t n = strcspn(s, "/");
		if (n == 0)
			break;
		if (n == 2 && s[0] == '.' && s[1] == '.')
			ok = false;
		else if (!(n == 1 && s[0] == '.'))
			ok = js_buf_add(&b, "/", 1) == 0 && js_buf_add(&b, s, n) == 0;
		s += n;
	}
	char *r = js_buf_take(&b);
	if (!ok || !r || !r[0]) {
		free(r);
		return NULL;
	}
	return r;
}

/** Component-wise prefix: "/a" is under "/" and "/a", not under "/ab". */
static bool under(const char *path, const char *dir)
{
	if (strcmp(dir, "/") == 0)
		return true;
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static size_t depth(const char *path)
{
	size_t d = 0;
	for (const char *s = path; *s; s++)
		d += *s == '/';
	return strcmp(path, "/") == 0 ? 0 : d;
}

static char *join(const char *dir, const char *name)
{
	return js_buf_format("%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name);
}

enum where {
	W_MACHINE, /* the machine's own path (through binds of a replica or not) */
	W_VOLUME,  /* inside a volume: *ret_host is the path in its source */
	W_MADE,    /* a directory on a tmpfs */
	W_MISSING, /* does not exist; the nearest existing parent is on a tmpfs */
};

/** What is at `path` in the container's view so far. For W_MACHINE and
 * W_VOLUME, *ret_host (caller frees) is where to look on the machine. */
static enum where where(const struct plan *p, const char *path, char **ret_host)
{
	const struct vol *v = NULL;
	for (size_t i = 0; i < p->n_vols; i++) {
		if (under(path, p->vols[i].target) && (!v || depth(p->vols[i].target) >= depth(v->target)))
			v = &p->vols[i];
	}
	size_t c = SIZE_MAX;
	for (size_t i = 0; i < p->n_made; i++) {
		if (under(path, p->made[i]) && (c == SIZE_MAX || depth(p->made[i]) >= depth(p->made[c])))
			c = i;
	}
	if (v && (c == SIZE_MAX || depth(v->target) >= depth(p->made[c]))) {
		*ret_host = js_buf_format("%s%s", v->source, path + (strcmp(v->target, "/") == 0 ? 0 : strlen(v->target)));
		return W_VOLUME;
	}
	if (c == SIZE_MAX) {
		*ret_host = js_xstrdup(path);
		return W_MACHINE;
	}
	if (strcmp(p->made[c], path) == 0)
		return W_MADE;
	/* Below a replica, what existed on the machine is the machine's. */
	if (p->is_replica[c]) {
		bool root = strcmp(p->made[c], "/") == 0;
		const char *rest = path + (root ? 1 : strlen(p->made[c]) + 1);
		char *child = js_buf_format("%s/%.*s", root ? "" : p->made[c], (int)strcspn(rest, "/"), rest);
		struct stat st;
		bool there = lstat(child, &st) == 0;
		free(child);
		if (there) {
			*ret_host = js_xstrdup(path);
			return W_MACHINE;
		}
	}
	return W_MISSING;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/** Replace directory `dir` (the machine's) by a replica on a tmpfs. */
static int replicate(struct plan *p, const char *dir, char **ret_err)
{
	struct stat st;
	DIR *d = opendir(dir);
	if (!d || fstat(dirfd(d), &st) < 0) {
		*ret_err = js_buf_format("cannot read directory %s: %s", dir, js_strerror(-errno));
		if (d)
			closedir(d);
		return JS_EINVALID;
	}
	/* The replica's root looks like the original. Owners only as root: in
	 * a user namespace the original's owner is usually unmapped, and
	 * tmpfs refuses an unmapped uid. */
	add_op(p, OP_TMPFS, js_xstrdup(p->scratch),
	       geteuid() == 0 ? js_buf_format("mode=%o,uid=%u,gid=%u", (unsigned)(st.st_mode & 07777),
					      (unsigned)st.st_uid, (unsigned)st.st_gid)
			      : js_buf_format("mode=%o", (unsigned)(st.st_mode & 07777)),
	       false);
	/* Entries in name order: the same directory gives the same plan. */
	char **names = NULL;
	size_t n = 0;
	struct dirent *e;
	int r = 0;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (n == JS_MOUNTS_MAX_ENTRIES) {
			*ret_err = js_buf_format("%s has more than %d entries to copy into the container's view; create "
						 "the mount target on the machine instead",
						 dir, JS_MOUNTS_MAX_ENTRIES);
			r = JS_EINVALID;
			break;
		}
		names = js_xrealloc(names, (n + 1) * sizeof(*names));
		names[n++] = js_xstrdup(e->d_name);
	}
	closedir(d);
	if (r == 0 && n > 1)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n && r == 0; i++) {
		char *src = join(dir, names[i]);
		char *dst = join(p->scratch, names[i]);
		struct stat es;
		if (lstat(src, &es) < 0) {
			/* gone since readdir: nothing to copy */
			free(src);
			free(dst);
			continue;
		}
		if (S_ISLNK(es.st_mode)) {
			char link[4096];
			ssize_t k = readlink(src, link, sizeof(link) - 1);
			free(src);
			if (k < 0) {
				free(dst);
				continue;
			}
			link[k] = '\0';
			add_op(p, OP_SYMLINK, js_xstrdup(link), dst, false);
			continue;
		}
		add_op(p, S_ISDIR(es.st_mode) ? OP_MKDIR : OP_FILE, js_xstrdup(dst), NULL, false);
		add_op(p, OP_BIND, src, dst, false);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (r < 0)
		return r;
	if (strcmp(dir, "/") == 0) {
		add_op(p, OP_NEWROOT, js_xstrdup(p->scratch), NULL, false);
		p->m->new_root = true;
	} else {
		add_op(p, OP_MOVE, js_xstrdup(p->scratch), js_xstrdup(dir), false);
	}
	add_made(p, dir, true);
	return 0;
}

int js_mounts_mkdir_p(const char *path, unsigned mode)
{
	return js_file_mkdir_p(path, mode, mode);
}

/** Make `target` exist in the view, as a directory or (`dir` false) a file. */
static int make_target(struct plan *p, const char *target, bool dir, char **ret_err)
{
	/* The deepest parent that exists in the view. */
	char *a = js_xstrdup(target);
	char *host = NULL;
	enum where w;
	for (;;) {
		char *slash = strrchr(a, '/');
		if (slash == a)
			slash[1] = '\0';
		else
			*slash = '\0';
		free(host);
		host = NULL;
		w = where(p, a, &host);
		struct stat st;
		if (w == W_MADE || ((w == W_MACHINE || w == W_VOLUME) && stat(host, &st) == 0)) {
			if (w != W_MADE && !S_ISDIR(st.st_mode)) {
				*ret_err = js_buf_format("%s is not a directory", a);
				free(host);
				free(a);
				return JS_EINVALID;
			}
			break;
		}
	}
	int r = 0;
	if (w == W_VOLUME) {
		/* Inside another volume: made in its source, as runc would. */
		char *h = js_buf_format("%s%s", host, target + (strcmp(a, "/") == 0 ? 0 : strlen(a)));
		char *parent = js_xstrdup(h);
		*strrchr(parent, '/') = '\0';
		r = js_mounts_mkdir_p(dir ? h : parent, 0755);
		if (r == 0 && !dir) {
			int fd = open(h, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
			r = fd < 0 ? -errno : 0;
			if (fd >= 0)
				close(fd);
		}
		if (r < 0)
			*ret_err = js_buf_format("cannot create %s: %s", h, js_strerror(r));
		free(parent);
		free(h);
		r = r < 0 ? JS_EINVALID : 0;
	} else {
		if (w == W_MACHINE)
			r = replicate(p, a, ret_err);
		/* Each missing component below `a`, on the tmpfs. */
		for (const char *c = target + (strcmp(a, "/") == 0 ? 1 : strlen(a) + 1); r == 0;) {
			size_t n = strcspn(c, "/");
			char *path = js_xstrndup(target, (size_t)(c - target) + n);
			bool last = c[n] == '\0';
			add_op(p, last && !dir ? OP_FILE : OP_MKDIR, path, NULL, false);
			if (!last || dir)
				add_made(p, path, false);
			if (last)
				break;
			c += n + 1;
		}
	}
	free(host);
	free(a);
	return r;
}

static int plan_one(struct plan *p, const struct js_mounts_spec *s, const char *target, char **ret_err)
{
	struct stat ss, ts;
	if (stat(s->source, &ss) < 0) {
		*ret_err = js_buf_format("%s: source %s: %s", target, s->source, js_strerror(-errno));
		return JS_EINVALID;
	}
	bool dir = S_ISDIR(ss.st_mode);
	char *host = NULL;
	enum where w = where(p, target, &host);
	bool exists = w == W_MADE || ((w == W_MACHINE || w == W_VOLUME) && stat(host, &ts) == 0);
	bool target_dir = w == W_MADE || (exists && S_ISDIR(ts.st_mode));
	free(host);
	int r = 0;
	if (exists && target_dir != dir) {
		*ret_err = js_buf_format("%s: cannot mount a %s over a %s", target, dir ? "directory" : "file",
					 target_dir ? "directory" : "file");
		return JS_EINVALID;
	}
	if (!exists) {
		char *err = NULL;
		r = make_target(p, target, dir, &err);
		if (r < 0) {
			*ret_err = js_buf_format("%s: %s", target, err);
			free(err);
			return r;
		}
	}
	add_op(p, OP_BIND, js_xstrdup(s->source), js_xstrdup(target), s->read_only);
	p->vols = js_xrealloc(p->vols, (p->n_vols + 1) * sizeof(*p->vols));
	p->vols[p->n_vols++] = (struct vol){.target = target, .source = s->source};
	return 0;
}

struct sorted {
	const struct js_mounts_spec *spec;
	char *target;
	size_t order;
};

static int by_depth(const void *x, const void *y)
{
	const struct sorted *a = x, *b = y;
	size_t da = depth(a->target), db = depth(b->target);
	if (da != db)
		return da < db ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

int js_mounts_plan(const struct js_mounts_spec *m, size_t n, const char *scratch, struct js_mounts **ret,
		   char **ret_err)
{
	if (n == 0) {
		*ret = NULL;
		return 0;
	}
	struct sorted *s = js_xcalloc(n, sizeof(*s));
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		s[i] = (struct sorted){.spec = &m[i], .target = canonical(m[i].target), .order = i};
		if (!s[i].target) {
			*ret_err = js_buf_format("mountPath '%s' must be an absolute path other than / without '..'",
						 m[i].target ? m[i].target : "");
			r = JS_EINVALID;
		}
		for (size_t k = 0; k < i && r == 0; k++) {
			if (strcmp(s[k].target, s[i].target) == 0) {
				*ret_err = js_buf_format("mountPath '%s' is used twice", s[i].target);
				r = JS_EINVALID;
			}
		}
	}
	struct plan p = {.m = js_xcalloc(1, sizeof(*p.m)), .scratch = scratch};
	if (r == 0)
		qsort(s, n, sizeof(*s), by_depth);
	for (size_t i = 0; i < n && r == 0; i++)
		r = plan_one(&p, s[i].spec, s[i].target, ret_err);
	if (r == 0 && p.m->new_root) {
		/* chroot left the working directory outside the new root. */
		char cwd[4096];
		add_op(&p, OP_CHDIR, js_xstrdup(getcwd(cwd, sizeof(cwd)) ? cwd : "/"), NULL, false);
	}
	for (size_t i = 0; i < n; i++)
		free(s[i].target);
	free(s);
	for (size_t i = 0; i < p.n_made; i++)
		free(p.made[i]);
	free(p.made);
	free(p.is_replica);
	free(p.vols);
	if (r < 0) {
		js_mounts_free(p.m);
		return r;
	}
	*ret = p.m;
	return 0;
}

struct js_mounts *js_mounts_free(struct js_mounts *p)
{
	if (!p)
		return NULL;
	for (size_t i = 0; i < p->n_ops; i++) {
		free(p->ops[i].a);
		free(p->ops[i].b);
	}
	free(p->ops);
	free(p);
	return NULL;
}

char *js_mounts_dump(const struct js_mounts *p)
{
	struct js_buf b;
	js_buf_init(&b, 0);
	for (size_t i = 0; p && i < p->n_ops; i++) {
		const struct op *o = &p->ops[i];
		if (js_buf_printf(&b, "%s %s%s%s%s\n", op_names[o->kind], o->a, o->b ? " " : "", o->b ? o->b : "",
				  o->read_only ? " ro" : "") < 0)
			break;
	}
	char *s = js_buf_take(&b);
	return s ? s : js_xstrdup("");
}
