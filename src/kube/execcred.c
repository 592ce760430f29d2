/*
 * execcred.c - run exec credential plugins (execcred.h).
 */
#include "kube/execcred.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/time.h"
#include "base/json.h"
#include "kube/kube_int.h"

extern char **environ;

void js_execcred_done(struct js_execcred *c)
{
	if (!c)
		return;
	free(c->token);
	free(c->cert);
	free(c->key);
	memset(c, 0, sizeof *c);
}

static void say(char *why, size_t why_len, const char *msg)
{
	if (why && why_len)
		snprintf(why, why_len, "%s", msg);
}

int js_execcred_parse(const char *out, size_t len, const char *api_version, struct js_execcred *ret, char *why,
		      size_t why_len)
{
	json_t *j = json_loadb(out, len, 0, NULL);
	int r = JS_EINVALID;
	struct js_execcred c = {0};
	if (!json_is_object(j)) {
		say(why, why_len, "plugin output is not a JSON object");
		goto out;
	}
	const char *kind = js_json_str(j, "kind"), *av = js_json_str(j, "apiVersion");
	if (!kind || strcmp(kind, "ExecCredential") != 0) {
		say(why, why_len, "plugin output is not an ExecCredential");
		goto out;
	}
	if (!av || (api_version && strcmp(av, api_version) != 0)) {
		say(why, why_len, "plugin answered with another apiVersion than the kubeconfig asks for");
		goto out;
	}
	json_t *st = json_object_get(j, "status");
	const char *tok = js_json_str(st, "token");
	const char *cert = js_json_str(st, "clientCertificateData");
	const char *key = js_json_str(st, "clientKeyData");
	const char *exp = js_json_str(st, "expirationTimestamp");
	if (!!cert != !!key) {
		say(why, why_len, "plugin gave a client certificate without a key or the reverse");
		goto out;
	}
	if (!(tok && *tok) && !cert) {
		say(why, why_len, "plugin gave neither a token nor a client certificate");
		goto out;
	}
	if (exp && js_time_parse_rfc3339(exp, &c.expires_s) < 0) {
		say(why, why_len, "plugin expirationTimestamp is not RFC 3339");
		goto out;
	}
	if (tok && *tok)
		c.token = js_xstrdup(tok);
	if (cert) {
		c.cert = js_xstrdup(cert);
		c.cert_len = strlen(cert);
		c.key = js_xstrdup(key);
		c.key_len = strlen(key);
	}
	*ret = c;
	r = 0;
out:
	json_decref(j);
	return r;
}

static char *exec_info(const struct js_kubeconfig *kc)
{
	json_t *spec = json_pack("{s:b}", "interactive", kc->exec->interactive);
	if (kc->exec->provide_cluster_info) {
		json_t *cl = json_pack("{s:s,s:b}", "server", kc->server, "insecure-skip-tls-verify", kc->insecure);
		if (kc->tls_server_name)
			json_object_set_new(cl, "tls-server-name", json_string(kc->tls_server_name));
		if (kc->ca) {
			/* certificate-authority-data is base64 of the PEM bytes. */
			static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
			struct js_buf b;
			js_buf_init(&b, 0);
			const unsigned char *s = (const unsigned char *)kc->ca;
			for (size_t i = 0; i < kc->ca_len; i += 3) {
				uint32_t v = (uint32_t)s[i] << 16;
				if (i + 1 < kc->ca_len)
					v |= (uint32_t)s[i + 1] << 8;
				if (i + 2 < kc->ca_len)
					v |= s[i + 2];
				char q[4] = {tbl[(v >> 18) & 63], tbl[(v >> 12) & 63],
					     i + 1 < kc->ca_len ? tbl[(v >> 6) & 63] : '=',
					     i + 2 < kc->ca_len ? tbl[v & 63] : '='};
				if (js_buf_add(&b, q, 4) < 0)
					break;
			}
			json_object_set_new(cl, "certificate-authority-data", json_string(js_buf_str(&b)));
			js_buf_done(&b);
		}
		json_object_set_new(spec, "cluster", cl);
	}
	json_t *req = json_pack("{s:s,s:s,s:o}", "apiVersion", kc->exec->api_version, "kind", "ExecCredential",
				"spec", spec);
	char *s = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	return s;
}

int js_execcred_run(const struct js_kubeconfig *kc, int timeout_ms, struct js_execcred *ret, char *why,
		    size_t why_len)
{
	const struct js_kubeconfig_exec *x = kc->exec;
	if (!x)
		return JS_EINVALID;
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;

	/* argv and envp for the child only: our own environment is untouched. */
	char **argv = js_xcalloc(x->nargs + 2, sizeof *argv);
	argv[0] = x->command;
	for (size_t i = 0; i < x->nargs; i++)
		argv[i + 1] = x->args[i];
	size_t nenv = 0;
	while (environ[nenv])
		nenv++;
	char **envp = js_xcalloc(nenv + x->nenv + 2, sizeof *envp);
	size_t k = 0;
	for (size_t i = 0; i < nenv; i++)
		if (strncmp(environ[i], "KUBERNETES_EXEC_INFO=", 21) != 0)
			envp[k++] = environ[i];
	for (size_t i = 0; i < x->nenv; i++)
		envp[k++] = x->env[i];
	char *info = exec_info(kc);
	struct js_buf ib;
	js_buf_init(&ib, 0);
	int r = js_buf_printf(&ib, "KUBERNETES_EXEC_INFO=%s", info ? info : "{}");
	free(info);
	envp[k++] = ib.p;
	envp[k] = NULL;

	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (!x->interactive)
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	/* Its own process group, so a timeout kills the plugin's children too
	 * (they would otherwise hold our stdio open). */
	posix_spawnattr_t at;
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&at, 0);
	pid_t pid = -1;
	if (r == 0)
		r = -posix_spawnp(&pid, x->command, &fa, x->interactive ? NULL : &at, argv, envp);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	free(argv);
	free(envp);
	js_buf_done(&ib);
	if (r < 0) {
		close(pfd[0]);
		say(why, why_len, "cannot start the credential plugin");
		return r;
	}

	struct js_buf out;
	js_buf_init(&out, JS__KUBE_MAX_EXEC_OUT);
	uint64_t deadline = js_clock_after_ns(timeout_ms);
	for (;;) {
		uint64_t now = js_clock_now_ns();
		if (now >= deadline) {
			r = -ETIMEDOUT;
			break;
		}
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		int n = poll(&p, 1, (int)((deadline - now) / 1000000u) + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			continue;
		char chunk[4096];
		ssize_t got = read(pfd[0], chunk, sizeof chunk);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		if (js_buf_add(&out, chunk, (size_t)got) < 0) {
			r = JS_ETOOLARGE;
			break;
		}
	}
	close(pfd[0]);
	if (r < 0)
		kill(x->interactive ? pid : -pid, SIGKILL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		say(why, why_len, "credential plugin failed (non-zero exit)");
		r = JS_EINVALID;
	}
	if (r == 0)
		r = js_execcred_parse(js_buf_str(&out), out.len, x->api_version, ret, why, why_len);
	else if (r == -ETIMEDOUT)
		say(why, why_len, "credential plugin timed out");
	js_buf_done(&out);
	return r;
}
