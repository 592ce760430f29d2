/*
 * volumes.c - a pod's volumes on this machine (see volumes.h).
 */
#include "local/volumes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/render.h"
#include "base/buf.h"
#include "base/json.h"

/* Default mode of configMap and secret volume files (core/v1 defaultMode). */
#define VOLUMES_DEFAULT_MODE 0644

enum vkind { V_EMPTYDIR, V_HOSTPATH, V_PVC, V_CONFIGMAP, V_SECRET, V__COUNT };

/* The field of a Volume that names its kind, per kind. */
static const char *const vkind_field[V__COUNT] = {"emptyDir", "hostPath", "persistentVolumeClaim", "configMap",
						  "secret"};

struct vol {
	char *name;
	enum vkind kind;
	char *path;      /* on the machine */
	bool read_only;  /* every mount of it is read-only */
	bool dir;        /* a directory (else a file: hostPath only) */
};

struct js_volumes_pod {
	char *pod_dir;   /* <run-dir>/pods/<pod>: the pod's own files */
	size_t n;
	struct vol *vols;
	bool released;
};

/* ---- checks ---- */

static int vol_kind(const json_t *v)
{
	for (int k = 0; k < V__COUNT; k++) {
		if (json_object_get(v, vkind_field[k]))
			return k;
	}
	return -1;
}

/** A relative path without `..` components (items[].path, subPath). */
static bool relative_ok(const char *p)
{
	if (!p || !p[0] || p[0] == '/')
		return false;
	for (const char *s = p; *s;) {
		size_t n = strcspn(s, "/");
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return false;
		s += n;
		while (*s == '/')
			s++;
	}
	return true;
}

/** Check a configMap or secret volume source against the objects. */
static int check_object_volume(const json_t *src, enum js_objects_kind kind, const struct js_objects *o,
			       const char *vname, char **ret_err)
{
	const char *oname = js_json_str(src, kind == JS_OBJECTS_SECRET ? "secretName" : "name");
	bool optional = json_is_true(json_object_get(src, "optional"));
	const struct js_objects_data *d = js_objects_find(o, kind, oname);
	if (!oname) {
		*ret_err = js_buf_format("volume '%s': %s.%s is required", vname, kind == JS_OBJECTS_SECRET ? "secret" : "configMap",
					 kind == JS_OBJECTS_SECRET ? "secretName" : "name");
		return JS_EINVALID;
	}
	if (!d && !optional) {
		*ret_err = js_buf_format("volume '%s': %s '%s' is not in the manifest (add it as another document, or "
					 "mark the volume optional)",
					 vname, js_objects_kind_name(kind), oname);
		return JS_EINVALID;
	}
	size_t i;
	json_t *it;
	json_array_foreach(json_object_get(src, "items"), i, it)
	{
		const char *key = js_json_str(it, "key");
		const char *path = js_json_str(it, "path");
		if (!key || !relative_ok(path)) {
			*ret_err = js_buf_format("volume '%s': items[%zu] needs a key and a relative path without '..'",
						 vname, i);
			return JS_EINVALID;
		}
		if (d && !js_objects_key(d, key) && !optional) {
			*ret_err = js_buf_format("volume '%s': %s '%s' has no key '%s'", vname, js_objects_kind_name(kind),
						 oname, key);
			return JS_EINVALID;
		}
	}
	return 0;
}

static int check_volumes(const json_t *spec, const struct js_objects *o, char **ret_err)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(spec, "volumes"), i, v)
	{
		const char *name = js_json_str(v, "name");
		if (!name || !name[0]) {
			*ret_err = js_buf_format("volumes[%zu]: a volume needs a name", i);
			return JS_EINVALID;
		}
		for (size_t k = 0; k < i; k++) {
			if (strcmp(name, js_json_str(json_array_get(json_object_get(spec, "volumes"), k), "name")) == 0) {
				*ret_err = js_buf_format("volume '%s' is defined twice", name);
				return JS_EINVALID;
			}
		}
		int kind = vol_kind(v);
		if (kind < 0) {
			const char *what = "no source";
			const char *key;
			json_t *val;
			json_object_foreach(v, key, val)
			{
				if (strcmp(key, "name") != 0)
					what = key;
			}
			*ret_err = js_buf_format("volume '%s': %s volumes are not supported locally (emptyDir, hostPath, "
						 "persistentVolumeClaim, configMap and secret are)",
						 name, what);
			return JS_EINVALID;
		}
		const json_t *src = json_object_get(v, vkind_field[kind]);
		int r = 0;
		if (kind == V_HOSTPATH && (!js_json_str(src, "path") || js_json_str(src, "path")[0] != '/')) {
			*ret_err = js_buf_format("volume '%s': hostPath.path must be an absolute path", name);
			r = JS_EINVALID;
		} else if (kind == V_PVC) {
			const char *claim = js_json_str(src, "claimName");
			if (!claim || !claim[0] || strchr(claim, '/') || claim[0] == '.') {
				*ret_err = js_buf_format("volume '%s': persistentVolumeClaim.claimName must be a claim name", name);
				r = JS_EINVALID;
			}
		} else if (kind == V_CONFIGMAP || kind == V_SECRET) {
			r = check_object_volume(src, kind == V_SECRET ? JS_OBJECTS_SECRET : JS_OBJECTS_CONFIGMAP, o, name,
						ret_err);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static const json_t *find_volume(const json_t *spec, const char *name)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(spec, "volumes"), i, v)
	{
		const char *n = js_json_str(v, "name");
		if (n && name && strcmp(n, name) == 0)
			return v;
	}
	return NULL;
}

static int check_ctr(const json_t *spec, const json_t *c, const struct js_objects *o, char **ret_err)
{
	const char *cname = js_json_str(c, "name");
	cname = cname ? cname : "";
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(c, "volumeMounts"), i, m)
	{
		const char *name = js_json_str(m, "name");
		const char *path = js_json_str(m, "mountPath");
		const char *sub = js_json_str(m, "subPath");
		if (!find_volume(spec, name)) {
			*ret_err = js_buf_format("container '%s': volumeMounts[%zu] names volume '%s', which the pod does "
						 "not define",
						 cname, i, name ? name : "");
			return JS_EINVALID;
		}
		if (!path || path[0] != '/' || strstr(path, "..") || strcmp(path, "/") == 0) {
			*ret_err = js_buf_format("container '%s': volumeMounts[%zu].mountPath '%s' must be an absolute path "
						 "other than / without '..'",
						 cname, i, path ? path : "");
			return JS_EINVALID;
		}
		for (size_t k = 0; k < i; k++) {
			const char *other = js_json_str(json_array_get(json_object_get(c, "volumeMounts"), k), "mountPath");
			if (other && strcmp(other, path) == 0) {
				*ret_err = js_buf_format("container '%s': mountPath '%s' is used twice", cname, path);
				return JS_EINVALID;
			}
		}
		if (sub && sub[0] && !relative_ok(sub)) {
			*ret_err = js_buf_format("container '%s': volumeMounts[%zu].subPath '%s' must be a relative path "
						 "without '..'",
						 cname, i, sub);
			return JS_EINVALID;
		}
		if (json_object_get(m, "subPathExpr")) {
			*ret_err = js_buf_format("container '%s': volumeMounts[%zu].subPathExpr is not supported locally",
						 cname, i);
			return JS_EINVALID;
		}
	}
	char *err = NULL;
	json_t *e;
	json_array_foreach(json_object_get(c, "env"), i, e)
	{
		const json_t *from = json_object_get(e, "valueFrom");
		if (!json_object_get(from, "configMapKeyRef") && !json_object_get(from, "secretKeyRef"))
			continue;
		char *val = NULL;
		if (js_objects_env_value(o, from, &val, &err) < 0) {
			*ret_err = js_buf_format("container '%s': env '%s': %s", cname, js_json_str(e, "name") ? js_json_str(e, "name") : "", err);
			free(err);
			return JS_EINVALID;
		}
		free(val);
	}
	if (js_objects_env_from(o, json_object_get(c, "envFrom"), NULL, NULL, &err) < 0) {
		*ret_err = js_buf_format("container '%s': %s", cname, err);
		free(err);
		return JS_EINVALID;
	}
	return 0;
}

int js_volumes_check(const json_t *tmpl, const struct js_objects *objects, char **ret_err)
{
	const json_t *spec = json_object_get(tmpl, "spec");
	int r = check_volumes(spec, objects, ret_err);
	static const char *const lists[] = {"initContainers", "containers"};
	for (size_t l = 0; l < 2 && r == 0; l++) {
		size_t i;
		json_t *c;
		json_array_foreach(json_object_get(spec, lists[l]), i, c)
		{
			r = check_ctr(spec, c, objects, ret_err);
			if (r < 0)
				break;
		}
	}
	return r;
}

/* ---- files ---- */

static int write_file(const char *path, const char *data, size_t n, mode_t mode)
{
	char *parent = js_xstrdup(path);
	*strrchr(parent, '/') = '\0';
	int r = js_mounts_mkdir_p(parent, 0755);
	free(parent);
	if (r < 0)
		return r;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -errno;
	size_t off = 0;
	while (off < n && r == 0) {
		ssize_t w = write(fd, data + off, n - off);
		if (w < 0 && errno != EINTR)
			r = -errno;
		else if (w > 0)
			off += (size_t)w;
	}
	/* The mode asked for, whatever the umask left of it. */
	if (r == 0 && fchmod(fd, mode) < 0)
		r = -errno;
	close(fd);
	return r;
}

static mode_t mode_of(const json_t *v, mode_t dflt)
{
	json_t *m = json_object_get(v, "mode");
	if (!json_is_integer(m))
		m = json_object_get(v, "defaultMode");
	return json_is_integer(m) && json_integer_value(m) >= 0 && json_integer_value(m) <= 0777
		       ? (mode_t)json_integer_value(m)
		       : dflt;
}

/** Write a configMap or secret volume's files into `dir`. */
static int write_object_volume(const json_t *src, enum js_objects_kind kind, const struct js_objects *o,
			       const char *dir, char **ret_err)
{
	const char *oname = js_json_str(src, kind == JS_OBJECTS_SECRET ? "secretName" : "name");
	const struct js_objects_data *d = js_objects_find(o, kind, oname);
	mode_t dflt = mode_of(src, VOLUMES_DEFAULT_MODE);
	int r = js_mounts_mkdir_p(dir, 0755);
	const json_t *items = json_object_get(src, "items");
	for (size_t i = 0; d && r == 0 && i < (items ? json_array_size(items) : d->n); i++) {
		const json_t *it = items ? json_array_get(items, i) : NULL;
		const struct js_objects_entry *e = it ? js_objects_key(d, js_json_str(it, "key")) : &d->entries[i];
		if (!e)
			continue; /* optional: a missing key is no file */
		char *path = js_buf_format("%s/%s", dir, it ? js_json_str(it, "path") : e->key);
		r = write_file(path, e->value, e->len, it ? mode_of(it, dflt) : dflt);
		if (r < 0)
			*ret_err = js_buf_format("cannot write %s: %s", path, js_strerror(r));
		free(path);
	}
	if (r < 0 && !*ret_err)
		*ret_err = js_buf_format("cannot create %s: %s", dir, js_strerror(r));
	return r < 0 ? JS_EINVALID : 0;
}

/** Check (and for the *OrCreate types make) a hostPath. */
static int prepare_host_path(const json_t *src, bool *ret_dir, char **ret_err)
{
	const char *path = js_json_str(src, "path");
	const char *type = js_json_str(src, "type");
	type = type ? type : "";
	struct stat st;
	int have = stat(path, &st) == 0 ? 0 : -errno;
	if (have < 0 && strcmp(type, "DirectoryOrCreate") == 0) {
		have = js_mounts_mkdir_p(path, 0755);
		if (have == 0)
			have = stat(path, &st) == 0 ? 0 : -errno;
	} else if (have < 0 && strcmp(type, "FileOrCreate") == 0) {
		int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		have = fd < 0 ? -errno : 0;
		if (fd >= 0)
			close(fd);
		if (have == 0)
			have = stat(path, &st) == 0 ? 0 : -errno;
	}
	if (have < 0) {
		*ret_err = js_buf_format("hostPath %s: %s", path, js_strerror(have));
		return JS_EINVALID;
	}
	static const struct {
		const char *type;
		mode_t fmt;
	} want[] = {
		{"Directory", S_IFDIR}, {"DirectoryOrCreate", S_IFDIR}, {"File", S_IFREG},        {"FileOrCreate", S_IFREG},
		{"Socket", S_IFSOCK},   {"CharDevice", S_IFCHR},        {"BlockDevice", S_IFBLK},
	};
	for (size_t i = 0; i < JS_ARRAY_SIZE(want); i++) {
		if (strcmp(type, want[i].type) == 0 && (st.st_mode & S_IFMT) != want[i].fmt) {
			*ret_err = js_buf_format("hostPath %s is not of type %s", path, type);
			return JS_EINVALID;
		}
	}
	*ret_dir = S_ISDIR(st.st_mode);
	return 0;
}

static int prepare(struct js_volumes_pod *p, const json_t *v, const char *run_dir, const struct js_objects *o,
		   struct vol *ret, char **ret_err)
{
	const char *name = js_json_str(v, "name");
	int kind = vol_kind(v);
	const json_t *src = json_object_get(v, kind >= 0 ? vkind_field[kind] : "");
	*ret = (struct vol){.name = js_xstrdup(name ? name : ""), .kind = (enum vkind)kind, .dir = true};
	char *err = NULL;
	int r = 0;
	switch (kind) {
	case V_EMPTYDIR:
		ret->path = js_buf_format("%s/%s", p->pod_dir, name);
		r = js_mounts_mkdir_p(ret->path, 0777) < 0 ? JS_EINVALID : 0;
		/* emptyDir is world-writable on a node (containers may run as any user). */
		if (r == 0 && chmod(ret->path, 0777) < 0)
			r = JS_EINVALID;
		if (r < 0)
			err = js_buf_format("cannot create %s: %s", ret->path, js_strerror(-errno));
		break;
	case V_HOSTPATH:
		ret->path = js_xstrdup(js_json_str(src, "path"));
		r = prepare_host_path(src, &ret->dir, &err);
		break;
	case V_PVC:
		ret->path = js_buf_format("%s/volumes/%s", run_dir, js_json_str(src, "claimName"));
		ret->read_only = json_is_true(json_object_get(src, "readOnly"));
		r = js_mounts_mkdir_p(ret->path, 0755) < 0 ? JS_EINVALID : 0;
		if (r < 0)
			err = js_buf_format("cannot create %s: %s", ret->path, js_strerror(-errno));
		break;
	case V_CONFIGMAP:
	case V_SECRET:
		ret->path = js_buf_format("%s/%s", p->pod_dir, name);
		ret->read_only = true;
		r = write_object_volume(src, kind == V_SECRET ? JS_OBJECTS_SECRET : JS_OBJECTS_CONFIGMAP, o, ret->path,
					&err);
		break;
	default:
		err = js_xstrdup("not a supported kind of volume");
		r = JS_EINVALID;
	}
	if (r < 0) {
		*ret_err = js_buf_format("volume '%s': %s", name ? name : "", err ? err : "cannot be prepared");
		free(err);
		return JS_EINVALID;
	}
	return 0;
}

int js_volumes_pod_new(const json_t *pod_spec, const char *run_dir, const char *pod_name,
		       const struct js_objects *objects, struct js_volumes_pod **ret, char **ret_err)
{
	struct js_volumes_pod *p = js_xcalloc(1, sizeof(*p));
	p->pod_dir = js_buf_format("%s/pods/%s", run_dir, pod_name);
	const json_t *vols = json_object_get(pod_spec, "volumes");
	p->vols = js_xcalloc(json_array_size(vols) + 1, sizeof(*p->vols));
	size_t i;
	json_t *v;
	json_array_foreach(vols, i, v)
	{
		if (prepare(p, v, run_dir, objects, &p->vols[p->n], ret_err) < 0) {
			p->n++;
			js_volumes_pod_release(p);
			js_volumes_pod_free(p);
			return JS_EINVALID;
		}
		p->n++;
	}
	*ret = p;
	return 0;
}

void js_volumes_pod_release(struct js_volumes_pod *v)
{
	if (!v || v->released)
		return;
	v->released = true;
	(void)js_volumes_rmtree(v->pod_dir);
}

struct js_volumes_pod *js_volumes_pod_free(struct js_volumes_pod *v)
{
	if (!v)
		return NULL;
	for (size_t i = 0; i < v->n; i++) {
		free(v->vols[i].name);
		free(v->vols[i].path);
	}
	free(v->vols);
	free(v->pod_dir);
	free(v);
	return NULL;
}

bool js_volumes_ctr_has_mounts(const json_t *ctr)
{
	return json_array_size(json_object_get(ctr, "volumeMounts")) > 0;
}

void js_volumes_binds_done(struct js_volumes_binds *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->sources[i]);
	free(b->sources);
	free(b->specs);
	*b = (struct js_volumes_binds){0};
}

int js_volumes_ctr_binds(const struct js_volumes_pod *v, const json_t *ctr, struct js_volumes_binds *ret,
			 char **ret_err)
{
	const json_t *mounts = json_object_get(ctr, "volumeMounts");
	size_t n = json_array_size(mounts);
	struct js_volumes_binds b = {.specs = js_xcalloc(n + 1, sizeof(*b.specs)),
				     .sources = js_xcalloc(n + 1, sizeof(*b.sources))};
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		const json_t *m = json_array_get(mounts, i);
		const char *name = js_json_str(m, "name");
		const struct vol *vol = NULL;
		for (size_t k = 0; v && k < v->n; k++) {
			if (name && strcmp(v->vols[k].name, name) == 0)
				vol = &v->vols[k];
		}
		if (!vol) {
			*ret_err = js_buf_format("volumeMounts[%zu]: no volume '%s'", i, name ? name : "");
			r = JS_EINVALID;
			break;
		}
		const char *sub = js_json_str(m, "subPath");
		char *src;
		if (sub && sub[0]) {
			if (!vol->dir) {
				*ret_err = js_buf_format("volumeMounts[%zu]: subPath of volume '%s', which is a file", i, name);
				r = JS_EINVALID;
				break;
			}
			src = js_buf_format("%s/%s", vol->path, sub);
			struct stat st;
			/* The kubelet makes a missing subPath as a directory. */
			if (stat(src, &st) < 0 && js_mounts_mkdir_p(src, 0755) < 0) {
				*ret_err = js_buf_format("volumeMounts[%zu]: cannot create subPath %s: %s", i, src,
							 js_strerror(-errno));
				free(src);
				r = JS_EINVALID;
				break;
			}
		} else {
			src = js_xstrdup(vol->path);
		}
		b.sources[b.n] = src;
		b.specs[b.n++] = (struct js_mounts_spec){
			.source = src, .target = js_json_str(m, "mountPath"),
			.read_only = vol->read_only || json_is_true(json_object_get(m, "readOnly"))};
	}
	if (r < 0) {
		js_volumes_binds_done(&b);
		return r;
	}
	*ret = b;
	return 0;
}

int js_volumes_ctr_mounts(const struct js_volumes_pod *v, const json_t *ctr, const char *scratch,
			  struct js_mounts **ret, char **ret_err)
{
	struct js_volumes_binds b;
	int r = js_volumes_ctr_binds(v, ctr, &b, ret_err);
	if (r < 0)
		return r;
	struct js_mounts *plan = NULL;
	r = js_mounts_plan(b.specs, b.n, scratch, &plan, ret_err);
	js_volumes_binds_done(&b);
	if (r < 0)
		return r;
	*ret = plan;
	return 0;
}

/* ---- claims at the end of a run ---- */

size_t js_volumes_retain(const struct js_jobset *js, const char *run_dir, const char *const *made, size_t n_made,
			 char **ret_err)
{
	size_t removed = 0;
	/* The claims the JobSet owns are the ones rendered with its owner
	 * reference: retentionPolicy.whenDeleted Delete (SPEC §8). */
	json_t *pvcs = js_render_pvcs(js);
	size_t i;
	json_t *pvc;
	json_array_foreach(pvcs, i, pvc)
	{
		const json_t *meta = json_object_get(pvc, "metadata");
		const char *claim = js_json_str(meta, "name");
		bool ours = false;
		for (size_t k = 0; claim && k < n_made; k++)
			ours |= strcmp(made[k], claim) == 0;
		if (!ours || json_array_size(json_object_get(meta, "ownerReferences")) == 0)
			continue;
		char *dir = js_buf_format("%s/volumes/%s", run_dir, claim);
		int r = js_volumes_rmtree(dir);
		if (r < 0 && ret_err && !*ret_err)
			*ret_err = js_buf_format("%s: %s", dir, js_strerror(r));
		removed += r == 0;
		free(dir);
	}
	json_decref(pvcs);
	return removed;
}

/* Directory depth rmtree descends to; deeper trees are left in place
 * (each level costs a stack frame and a descriptor of the runner). */
#define VOLUMES_RM_DEPTH 128

static int rm_at(int dfd, const char *name, dev_t dev, int depth)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	if (st.st_dev != dev)
		return -EXDEV; /* a mount point: never reach into another file system */
	if (depth >= VOLUMES_RM_DEPTH)
		return -ELOOP;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	int r = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		int k = rm_at(dirfd(d), e->d_name, dev, depth + 1);
		r = r < 0 ? r : k;
	}
	closedir(d);
	if (r == 0 && unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		r = -errno;
	return r;
}

int js_volumes_rmtree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	return rm_at(AT_FDCWD, path, st.st_dev, 0);
}
