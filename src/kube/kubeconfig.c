/*
 * kubeconfig.c - kubeconfig and in-cluster configuration (kubeconfig.h).
 */
#include "kube/kubeconfig.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/file.h"
#include "base/json.h"
#include "base/load.h"
#include "kube/kube_int.h"

static void exec_free(struct js_kubeconfig_exec *x)
{
	if (!x)
		return;
	free(x->command);
	for (size_t i = 0; i < x->nargs; i++)
		free(x->args[i]);
	free(x->args);
	for (size_t i = 0; i < x->nenv; i++)
		free(x->env[i]);
	free(x->env);
	free(x->api_version);
	free(x);
}

void js_kubeconfig_done(struct js_kubeconfig *kc)
{
	if (!kc)
		return;
	free(kc->context);
	free(kc->server);
	free(kc->tls_server_name);
	free(kc->proxy_url);
	free(kc->ca);
	free(kc->cert);
	free(kc->key);
	free(kc->token);
	free(kc->token_file);
	free(kc->username);
	free(kc->password);
	free(kc->namespace);
	exec_free(kc->exec);
	memset(kc, 0, sizeof *kc);
}

/* The merged view: for each of clusters/users/contexts an object
 * name -> {"v": entry body, "dir": directory of the file that defined it}. */
struct merged {
	json_t *maps[3];
	char *current;
};

static const char *const map_names[3] = {"clusters", "users", "contexts"};
static const char *const body_names[3] = {"cluster", "user", "context"};

static int merge_doc(struct merged *m, const json_t *root, const char *file, const char *dir, struct js_diag *diag)
{
	if (!json_is_object(root)) {
		js_diag_add(diag, JS_DIAG_TYPE, "", NULL, "%s: a kubeconfig must be a mapping", file);
		return JS_EINVALID;
	}
	for (int k = 0; k < 3; k++) {
		json_t *list = json_object_get(root, map_names[k]);
		if (!list || json_is_null(list))
			continue;
		if (!json_is_array(list)) {
			js_diag_add(diag, JS_DIAG_TYPE, map_names[k], NULL, "%s: must be a list", file);
			return JS_EINVALID;
		}
		size_t i;
		json_t *e;
		json_array_foreach(list, i, e) {
			const char *name = js_json_str(e, "name");
			json_t *body = json_object_get(e, body_names[k]);
			if (!name || !json_is_object(body)) {
				js_diag_add(diag, JS_DIAG_REQUIRED, map_names[k], NULL,
					    "%s: entry %zu needs a name and a %s mapping", file, i, body_names[k]);
				return JS_EINVALID;
			}
			if (json_object_get(m->maps[k], name))
				continue; /* first file wins */
			json_object_set_new(m->maps[k], name,
					    json_pack("{s:O,s:s}", "v", body, "dir", dir ? dir : ""));
		}
	}
	const char *cur = js_json_str(root, "current-context");
	if (!m->current && cur && *cur)
		m->current = js_xstrdup(cur);
	return 0;
}

static char *join_path(const char *dir, const char *path)
{
	if (path[0] == '/' || !dir || !*dir)
		return js_xstrdup(path);
	struct js_buf b;
	js_buf_init(&b, 0);
	if (js_buf_printf(&b, "%s/%s", dir, path) < 0) {
		js_buf_done(&b);
		return js_xstrdup(path);
	}
	return js_buf_take(&b);
}

/* Load `data_key` (base64) or else `file_key` (a path) of `body` into *ret. */
static int load_blob(const json_t *body, const char *dir, const char *data_key, const char *file_key, const char *what,
		     struct js_diag *diag, char **ret, size_t *ret_len)
{
	const char *data = js_json_str(body, data_key);
	const char *file = js_json_str(body, file_key);
	if (data && *data) {
		if (js__kutil_b64_decode(data, strlen(data), ret, ret_len) < 0) {
			js_diag_add(diag, JS_DIAG_INVALID, data_key, NULL, "%s: not valid base64", what);
			return JS_EINVALID;
		}
		return 0;
	}
	if (file && *file) {
		char *p = join_path(dir, file);
		int r = js_file_read(p, JS__KUBE_MAX_FILE, ret, ret_len);
		if (r < 0)
			js_diag_add(diag, JS_DIAG_INVALID, file_key, p, "%s: cannot read '%s': %s", what, p, js_strerror(r));
		free(p);
		return r;
	}
	return 0;
}

static char *opt_str(const json_t *o, const char *key)
{
	const char *s = js_json_str(o, key);
	return s && *s ? js_xstrdup(s) : NULL;
}

static int parse_exec(const json_t *x, struct js_diag *diag, struct js_kubeconfig_exec **ret)
{
	const char *cmd = js_json_str(x, "command");
	if (!cmd || !*cmd) {
		js_diag_add(diag, JS_DIAG_REQUIRED, "user.exec.command", NULL, "exec plugin needs a command");
		return JS_EINVALID;
	}
	struct js_kubeconfig_exec *e = js_xcalloc(1, sizeof *e);
	e->command = js_xstrdup(cmd);
	e->api_version = opt_str(x, "apiVersion");
	if (!e->api_version)
		e->api_version = js_xstrdup("client.authentication.k8s.io/v1");
	json_t *args = json_object_get(x, "args");
	if (json_is_array(args)) {
		e->args = js_xcalloc(json_array_size(args) + 1, sizeof *e->args);
		size_t i;
		json_t *a;
		json_array_foreach(args, i, a) {
			if (json_is_string(a))
				e->args[e->nargs++] = js_xstrdup(json_string_value(a));
		}
	}
	json_t *env = json_object_get(x, "env");
	if (json_is_array(env)) {
		e->env = js_xcalloc(json_array_size(env) + 1, sizeof *e->env);
		size_t i;
		json_t *a;
		json_array_foreach(env, i, a) {
			const char *n = js_json_str(a, "name"), *v = js_json_str(a, "value");
			if (!n)
				continue;
			struct js_buf b;
			js_buf_init(&b, 0);
			if (js_buf_printf(&b, "%s=%s", n, v ? v : "") < 0) {
				js_buf_done(&b);
				continue;
			}
			e->env[e->nenv++] = js_buf_take(&b);
		}
	}
	e->provide_cluster_info = json_is_true(json_object_get(x, "provideClusterInfo"));
	const char *mode = js_json_str(x, "interactiveMode");
	e->interactive = mode && strcmp(mode, "Always") == 0;
	*ret = e;
	return 0;
}

static int resolve(const struct merged *m, const char *context, struct js_diag *diag, struct js_kubeconfig *ret)
{
	struct js_kubeconfig kc = {0};
	const char *ctxname = context ? context : m->current;
	int r = JS_EINVALID;

	if (!ctxname) {
		js_diag_add(diag, JS_DIAG_REQUIRED, "current-context", NULL, "no context given and no current-context set");
		return JS_EINVALID;
	}
	json_t *ctx = json_object_get(json_object_get(m->maps[2], ctxname), "v");
	if (!ctx) {
		js_diag_add(diag, JS_DIAG_INVALID, "contexts", ctxname, "context '%s' not found", ctxname);
		return JS_EINVALID;
	}
	const char *cname = js_json_str(ctx, "cluster"), *uname = js_json_str(ctx, "user");
	json_t *centry = cname ? json_object_get(m->maps[0], cname) : NULL;
	if (!centry) {
		js_diag_add(diag, JS_DIAG_INVALID, "contexts.cluster", cname, "cluster '%s' of context '%s' not found",
			    cname ? cname : "", ctxname);
		return JS_EINVALID;
	}
	json_t *cl = json_object_get(centry, "v");
	const char *cdir = js_json_str(centry, "dir");
	kc.context = js_xstrdup(ctxname);
	kc.namespace = opt_str(ctx, "namespace");
	kc.server = opt_str(cl, "server");
	if (!kc.server) {
		js_diag_add(diag, JS_DIAG_REQUIRED, "cluster.server", NULL, "cluster '%s' has no server", cname);
		goto fail;
	}
	size_t sl = strlen(kc.server);
	while (sl > 1 && kc.server[sl - 1] == '/')
		kc.server[--sl] = '\0';
	kc.tls_server_name = opt_str(cl, "tls-server-name");
	kc.proxy_url = opt_str(cl, "proxy-url");
	kc.insecure = json_is_true(json_object_get(cl, "insecure-skip-tls-verify"));
	r = load_blob(cl, cdir, "certificate-authority-data", "certificate-authority", "cluster CA", diag, &kc.ca,
		      &kc.ca_len);
	if (r < 0)
		goto fail;
	if (kc.insecure && kc.ca) {
		js_diag_add(diag, JS_DIAG_INVALID, "cluster.insecure-skip-tls-verify", "true",
			    "insecure-skip-tls-verify cannot be combined with a certificate authority");
		r = JS_EINVALID;
		goto fail;
	}
	if (uname) {
		json_t *uentry = json_object_get(m->maps[1], uname);
		if (!uentry) {
			js_diag_add(diag, JS_DIAG_INVALID, "contexts.user", uname, "user '%s' of context '%s' not found",
				    uname, ctxname);
			r = JS_EINVALID;
			goto fail;
		}
		json_t *u = json_object_get(uentry, "v");
		const char *udir = js_json_str(uentry, "dir");
		r = load_blob(u, udir, "client-certificate-data", "client-certificate", "client certificate", diag,
			      &kc.cert, &kc.cert_len);
		if (r < 0)
			goto fail;
		r = load_blob(u, udir, "client-key-data", "client-key", "client key", diag, &kc.key, &kc.key_len);
		if (r < 0)
			goto fail;
		if (!kc.cert != !kc.key) {
			js_diag_add(diag, JS_DIAG_REQUIRED, "user", uname,
				    "client certificate and key must be given together");
			r = JS_EINVALID;
			goto fail;
		}
		kc.token = opt_str(u, "token");
		const char *tf = js_json_str(u, "tokenFile");
		if (tf && *tf && !kc.token)
			kc.token_file = join_path(udir, tf);
		kc.username = opt_str(u, "username");
		kc.password = opt_str(u, "password");
		json_t *x = json_object_get(u, "exec");
		if (json_is_object(x)) {
			r = parse_exec(x, diag, &kc.exec);
			if (r < 0)
				goto fail;
		}
		if (json_object_get(u, "auth-provider")) {
			js_diag_add(diag, JS_DIAG_NOT_SUPPORTED, "user.auth-provider", NULL,
				    "auth-provider plugins are not supported; use an exec plugin");
			r = JS_EINVALID;
			goto fail;
		}
	}
	*ret = kc;
	return 0;
fail:
	js_kubeconfig_done(&kc);
	return r;
}

static void merged_init(struct merged *m)
{
	for (int k = 0; k < 3; k++)
		m->maps[k] = json_object();
	m->current = NULL;
}

static void merged_done(struct merged *m)
{
	for (int k = 0; k < 3; k++)
		json_decref(m->maps[k]);
	free(m->current);
}

static int merge_data(struct merged *m, const char *file, const char *data, size_t len, const char *dir,
		      struct js_diag *diag)
{
	struct js_docs *docs = NULL;
	int r = js_docs_load(file, data, len, diag, &docs);
	if (r < 0)
		return r;
	if (js_docs_count(docs) == 0) {
		js_docs_free(docs);
		return 0; /* an empty file contributes nothing, as in client-go */
	}
	r = merge_doc(m, js_docs_root(docs, 0), file, dir, diag);
	js_docs_free(docs);
	return r;
}

int js_kubeconfig_parse(const char *file, const char *data, size_t len, const char *dir, const char *context,
			struct js_diag *diag, struct js_kubeconfig *ret)
{
	struct merged m;
	merged_init(&m);
	int r = merge_data(&m, file ? file : "<kubeconfig>", data, len, dir, diag);
	if (r == 0)
		r = resolve(&m, context, diag, ret);
	merged_done(&m);
	return r;
}

int js_kubeconfig_load(const char *paths, const char *context, struct js_diag *diag, struct js_kubeconfig *ret)
{
	char *home_cfg = NULL;
	if (!paths || !*paths)
		paths = getenv("KUBECONFIG");
	if (!paths || !*paths) {
		const char *home = getenv("HOME");
		home_cfg = join_path(home ? home : "/", ".kube/config");
		paths = home_cfg;
	}
	struct merged m;
	merged_init(&m);
	int r = 0, found = 0;
	char *list = js_xstrdup(paths);
	char *next = list;
	while (next && r == 0) {
		char *p = next;
		char *colon = strchr(p, ':');
		next = colon ? colon + 1 : NULL;
		if (colon)
			*colon = '\0';
		if (!*p)
			continue;
		char *data = NULL;
		size_t len = 0;
		int rr = js_file_read(p, JS__KUBE_MAX_FILE, &data, &len);
		if (rr == -ENOENT)
			continue;
		if (rr < 0) {
			js_diag_add(diag, JS_DIAG_INVALID, "", p, "cannot read kubeconfig '%s': %s", p, js_strerror(rr));
			r = rr;
			break;
		}
		found++;
		char *dir = js_xstrdup(p);
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		else
			dir[0] = '\0';
		r = merge_data(&m, p, data, len, slash ? (dir[0] ? dir : "/") : NULL, diag);
		free(dir);
		free(data);
	}
	free(list);
	if (r == 0 && !found) {
		js_diag_add(diag, JS_DIAG_REQUIRED, "", paths, "no kubeconfig file found in '%s'", paths);
		r = -ENOENT;
	}
	if (r == 0)
		r = resolve(&m, context, diag, ret);
	merged_done(&m);
	free(home_cfg);
	return r;
}

int js_kubeconfig_in_cluster(const char *sa_dir, struct js_kubeconfig *ret)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	if (!host || !*host || !port || !*port)
		return JS_ENOTFOUND;
	if (!sa_dir)
		sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
	struct js_kubeconfig kc = {0};
	struct js_buf b;
	int r;
	js_buf_init(&b, 0);
	bool v6 = strchr(host, ':') != NULL;
	if (js_buf_printf(&b, "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port) < 0) {
		js_buf_done(&b);
		return JS_ETOOLARGE;
	}
	kc.server = js_buf_take(&b);
	kc.context = js_xstrdup("");
	kc.token_file = join_path(sa_dir, "token");
	/* Read once now so a missing token is reported here, not on first use. */
	char *tok = NULL;
	size_t tlen = 0;
	r = js_file_read(kc.token_file, JS__KUBE_MAX_FILE, &tok, &tlen);
	if (r < 0)
		goto fail;
	free(tok);
	char *ca = join_path(sa_dir, "ca.crt");
	r = js_file_read(ca, JS__KUBE_MAX_FILE, &kc.ca, &kc.ca_len);
	free(ca);
	if (r < 0)
		goto fail;
	char *nsf = join_path(sa_dir, "namespace");
	char *ns = NULL;
	size_t nslen = 0;
	if (js_file_read(nsf, 4096, &ns, &nslen) == 0) {
		while (nslen && (ns[nslen - 1] == '\n' || ns[nslen - 1] == ' '))
			ns[--nslen] = '\0';
		if (nslen)
			kc.namespace = ns;
		else
			free(ns);
	}
	free(nsf);
	*ret = kc;
	return 0;
fail:
	js_kubeconfig_done(&kc);
	return r;
}
