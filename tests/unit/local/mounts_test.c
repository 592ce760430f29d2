/*
 * mounts_test.c - mount plans (local/mounts.h) over a scratch directory
 * tree: which targets are bound over, which parents are replicated and how,
 * what is made inside other volumes, and what is refused. Plans are
 * compared as text with the scratch prefix written as '@'. Carrying a plan
 * out needs a mount namespace; the e2e tests (test_volumes.py) do that.
 * Table-driven; each case names itself.
 */
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buf.h"
#include "local/mounts.h"

/* The tree every case starts from, under the scratch root '@':
 *   @/src/ (a volume source), @/src/in/, @/file (a file source),
 *   @/base/ with a, b/, c -> a, and @/tmpfs-scratch/ (the build spot). */
static void make_tree(const char *root)
{
	static const char *const dirs[] = {"src", "src/in", "base", "base/b", "scratch"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char *p = js_buf_format("%s/%s", root, dirs[i]);
		assert_int_equal(mkdir(p, 0755), 0);
		free(p);
	}
	static const char *const files[] = {"file", "base/a", false};
	for (size_t i = 0; i < 2; i++) {
		char *p = js_buf_format("%s/%s", root, files[i]);
		int fd = open(p, O_WRONLY | O_CREAT, 0644);
		assert_true(fd >= 0);
		close(fd);
		free(p);
	}
	char *l = js_buf_format("%s/base/c", root);
	assert_int_equal(symlink("a", l), 0);
	free(l);
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

/* `s` with every '@' replaced by `root`. Caller frees. */
static char *at(const char *s, const char *root)
{
	struct js_buf b;
	js_buf_init(&b, 0);
	for (; s && *s; s++)
		assert_int_equal(*s == '@' ? js_buf_puts(&b, root) : js_buf_add(&b, s, 1), 0);
	return js_buf_take(&b);
}

/* `s` with `from` replaced by `to` once. Caller frees. */
static char *replace(const char *s, const char *from, const char *to)
{
	const char *f = strstr(s, from);
	if (!f)
		return js_xstrdup(s);
	return js_buf_format("%.*s%s%s", (int)(f - s), s, to, f + strlen(from));
}

struct m {
	const char *source, *target;
	bool ro;
};

static const struct plan_case {
	const char *name;
	struct m mounts[3];
	const char *want;     /* the plan, or NULL when refused */
	const char *err;      /* substring of the error when refused */
	const char *made;     /* a path the plan made on the machine, or NULL */
} cases[] = {
	{"existing target: bound over", {{"@/src", "@/base/b", false}}, "bind @/src @/base/b\n", NULL, NULL},
	{"read-only", {{"@/src", "@/base/b", true}}, "bind @/src @/base/b ro\n", NULL, NULL},
	{"missing target: its parent replicated, the target made on the tmpfs",
	 {{"@/src", "@/base/new/deep", false}},
	 "tmpfs @/scratch mode=755,uid=0,gid=0\n"
	 "file @/scratch/a\nbind @/base/a @/scratch/a\n"
	 "mkdir @/scratch/b\nbind @/base/b @/scratch/b\n"
	 "symlink a @/scratch/c\n"
	 "move @/scratch @/base\n"
	 "mkdir @/base/new\nmkdir @/base/new/deep\n"
	 "bind @/src @/base/new/deep\n",
	 NULL, NULL},
	{"two missing targets: one replica",
	 {{"@/src", "@/base/x", false}, {"@/file", "@/base/y/f", false}},
	 "tmpfs @/scratch mode=755,uid=0,gid=0\n"
	 "file @/scratch/a\nbind @/base/a @/scratch/a\n"
	 "mkdir @/scratch/b\nbind @/base/b @/scratch/b\n"
	 "symlink a @/scratch/c\n"
	 "move @/scratch @/base\n"
	 "mkdir @/base/x\nbind @/src @/base/x\n"
	 "mkdir @/base/y\nfile @/base/y/f\nbind @/file @/base/y/f\n",
	 NULL, NULL},
	{"nested target inside a volume: made in its source, parents first",
	 {{"@/file", "@/base/b/v/f", false}, {"@/src", "@/base/b/v", false}},
	 "tmpfs @/scratch mode=755,uid=0,gid=0\n"
	 "move @/scratch @/base/b\n"
	 "mkdir @/base/b/v\nbind @/src @/base/b/v\n"
	 "bind @/file @/base/b/v/f\n",
	 NULL, "@/src/f"},
	{"existing entry below a replica is the machine's",
	 {{"@/src", "@/base/new", false}, {"@/file", "@/base/a", false}},
	 "tmpfs @/scratch mode=755,uid=0,gid=0\n"
	 "file @/scratch/a\nbind @/base/a @/scratch/a\n"
	 "mkdir @/scratch/b\nbind @/base/b @/scratch/b\n"
	 "symlink a @/scratch/c\n"
	 "move @/scratch @/base\n"
	 "mkdir @/base/new\nbind @/src @/base/new\n"
	 "bind @/file @/base/a\n",
	 NULL, NULL},
	{"canonical targets", {{"@/src", "@//base/./b/", false}}, "bind @/src @/base/b\n", NULL, NULL},
	{"relative target", {{"@/src", "rel", false}}, NULL, "must be an absolute path", NULL},
	{"dot-dot", {{"@/src", "@/base/../x", false}}, NULL, "without '..'", NULL},
	{"root", {{"@/src", "/", false}}, NULL, "other than /", NULL},
	{"twice", {{"@/src", "@/base/b", false}, {"@/file", "@/base//b", false}}, NULL, "used twice", NULL},
	{"directory over a file", {{"@/src", "@/base/a", false}}, NULL, "cannot mount a directory over a file", NULL},
	{"file over a directory", {{"@/file", "@/base/b", false}}, NULL, "cannot mount a file over a directory", NULL},
	{"missing source", {{"@/nope", "@/base/b", false}}, NULL, "source", NULL},
	{"a file in the way", {{"@/src", "@/base/a/x", false}}, NULL, "is not a directory", NULL},
};

static void test_plans(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct plan_case *c = &cases[i];
		char root[] = "/tmp/js-mounts-test-XXXXXX";
		assert_non_null(mkdtemp(root));
		make_tree(root);
		struct js_mounts_spec specs[3];
		char *strs[6] = {0};
		size_t n = 0;
		for (; n < 3 && c->mounts[n].source; n++) {
			strs[2 * n] = at(c->mounts[n].source, root);
			strs[2 * n + 1] = at(c->mounts[n].target, root);
			specs[n] = (struct js_mounts_spec){strs[2 * n], strs[2 * n + 1], c->mounts[n].ro};
		}
		char *scratch = at("@/scratch", root);
		struct js_mounts *p = NULL;
		char *err = NULL;
		int r = js_mounts_plan(specs, n, scratch, &p, &err);
		char *want = c->want ? at(c->want, root) : NULL;
		/* The replica's owner is whoever runs the test, written as 0; as
		 * anyone but root the plan names no owner (mounts.c). */
		char uidgid[64];
		snprintf(uidgid, sizeof(uidgid), "uid=%u,gid=%u", (unsigned)getuid(), (unsigned)getgid());
		char *got = js_mounts_dump(p);
		char *norm = geteuid() == 0 ? replace(got, uidgid, "uid=0,gid=0")
					    : replace(got, "mode=755\n", "mode=755,uid=0,gid=0\n");
		if (want && (r != 0 || strcmp(norm, want) != 0))
			fail_msg("case '%s': r=%d err=%s\ngot:\n%s\nwant:\n%s", c->name, r, err ? err : "", norm, want);
		if (!want && (r != JS_EINVALID || !err || !strstr(err, c->err)))
			fail_msg("case '%s': r=%d err='%s', want JS_EINVALID with '%s'", c->name, r, err ? err : "",
				 c->err);
		if (c->made) {
			char *m = at(c->made, root);
			struct stat st;
			if (stat(m, &st) != 0)
				fail_msg("case '%s': %s was not made", c->name, m);
			free(m);
		}
		assert_false(js_mounts_new_root(p));
		free(norm);
		free(got);
		free(want);
		free(err);
		js_mounts_free(p);
		free(scratch);
		for (size_t k = 0; k < 6; k++)
			free(strs[k]);
		assert_int_equal(nftw(root, rm_one, 8, FTW_DEPTH | FTW_PHYS), 0);
	}
}

/* A target whose nearest existing parent is `/` makes a new root: a
 * replica of `/` entered with chroot, then the runner's working directory. */
static void test_new_root(void **state)
{
	(void)state;
	char root[] = "/tmp/js-mounts-test-XXXXXX";
	assert_non_null(mkdtemp(root));
	make_tree(root);
	char *src = at("@/src", root), *scratch = at("@/scratch", root);
	struct js_mounts_spec s = {src, "/js-mounts-test-absent/x", false};
	struct js_mounts *p = NULL;
	char *err = NULL;
	assert_int_equal(js_mounts_plan(&s, 1, scratch, &p, &err), 0);
	assert_true(js_mounts_new_root(p));
	char *d = js_mounts_dump(p);
	char *newroot = js_buf_format("newroot %s\n", scratch);
	char cwd[4096];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	char *tail = js_buf_format("mkdir /js-mounts-test-absent\nmkdir /js-mounts-test-absent/x\nbind %s "
				   "/js-mounts-test-absent/x\nchdir %s\n",
				   src, cwd);
	assert_true(strncmp(d, "tmpfs ", 6) == 0);
	char *tmp = js_buf_format("mkdir %s/tmp\nbind /tmp %s/tmp\n", scratch, scratch);
	assert_non_null(strstr(d, tmp)); /* /tmp, like every entry of /, comes along */
	free(tmp);
	assert_non_null(strstr(d, newroot));
	assert_string_equal(d + strlen(d) - strlen(tail), tail);
	free(tail);
	free(newroot);
	free(d);
	js_mounts_free(p);
	/* No plan for no mounts. */
	assert_int_equal(js_mounts_plan(NULL, 0, scratch, &p, &err), 0);
	assert_null(p);
	assert_int_equal(js_mounts_apply(NULL), 0);
	free(src);
	free(scratch);
	assert_int_equal(nftw(root, rm_one, 8, FTW_DEPTH | FTW_PHYS), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plans),
		cmocka_unit_test(test_new_root),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
