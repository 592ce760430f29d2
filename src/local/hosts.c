/*
 * hosts.c - pod addresses and hosts files (see hosts.h).
 */
#include "local/hosts.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/render.h"
#include "api/template.h"
#include "base/buf.h"

#define HOSTS_HEADER                                                                                  \
	"# Written by jobset run: the pod's own name and the JobSet's headless Service.\n"           \
	"127.0.0.1\tlocalhost\n"                                                                      \
	"::1\tlocalhost ip6-localhost ip6-loopback\n"

/** A pod's line: the names a cluster's DNS answers for it (with the search
 * path ns.svc.cluster.local, svc.cluster.local, cluster.local: host.sub and
 * longer), and its bare hostname only in its own file, as the kubelet
 * writes it: on a cluster another pod's bare hostname does not resolve. */
static int entry(struct js_buf *b, const char *ip, const char *host, const char *sub, const char *ns, bool own)
{
	if (!sub)
		return js_buf_printf(b, "%s\t%s\n", ip, host);
	return js_buf_printf(b, "%s\t%s.%s.%s.svc.cluster.local %s.%s.%s.svc %s.%s%s%s\n", ip, host, sub, ns, host,
			     sub, ns, host, sub, own ? " " : "", own ? host : "");
}

static int write_atomic(const char *path, const struct js_buf *b)
{
	size_t n = strlen(path) + 8;
	char *tmp = js_xmalloc(n);
	snprintf(tmp, n, "%s.tmp", path);
	FILE *f = fopen(tmp, "we");
	int r = 0;
	if (!f) {
		r = -errno;
		free(tmp);
		return r;
	}
	if (fwrite(js_buf_str(b), 1, b->len, f) != b->len)
		r = -EIO;
	if (fclose(f) != 0 && !r)
		r = -EIO;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r)
		unlink(tmp);
	free(tmp);
	return r;
}

int js_hosts_walk(const struct js_jobset *js, js_hosts_pod_fn fn, void *ctx)
{
	uint64_t pos = 0;
	int r = 0;
	for (size_t i = 0; i < js->spec.n_replicated_jobs && !r; i++) {
		const struct js_rjob *rj = &js->spec.replicated_jobs[i];
		int32_t comp = 1, reps = rj->has_replicas ? rj->replicas : 1;
		if (!js_tmpl_i32(rj, "completions", &comp) || comp < 1)
			comp = 1;
		if (!js_tmpl_indexed(rj)) {
			pos += (uint64_t)(reps > 0 ? reps : 0) * (uint64_t)comp;
			continue;
		}
		for (int32_t j = 0; j < reps && !r; j++) {
			char *job = js_render_job_name(js, rj, j);
			for (int32_t k = 0; k < comp && !r; k++, pos++) {
				char host[320];
				snprintf(host, sizeof(host), "%s-%d", job, k);
				r = fn(ctx, host, pos);
			}
			free(job);
		}
	}
	return r;
}

uint64_t js_hosts_n_positions(const struct js_jobset *js)
{
	uint64_t n = 0;
	for (size_t i = 0; i < js->spec.n_replicated_jobs; i++) {
		const struct js_rjob *rj = &js->spec.replicated_jobs[i];
		int32_t comp = 1, reps = rj->has_replicas ? rj->replicas : 1;
		if (!js_tmpl_i32(rj, "completions", &comp) || comp < 1)
			comp = 1;
		n += (uint64_t)(reps > 0 ? reps : 0) * (uint64_t)comp;
	}
	return n;
}

int js_hosts_check_capacity(const struct js_jobset *js, uint64_t capacity, char **ret_err)
{
	uint64_t at_once = 0, hostnames = 0;
	for (size_t i = 0; i < js->spec.n_replicated_jobs; i++) {
		const struct js_rjob *rj = &js->spec.replicated_jobs[i];
		int32_t reps = rj->has_replicas ? rj->replicas : 1, par = 1, comp = 0;
		bool has_comp = js_tmpl_i32(rj, "completions", &comp);
		(void)js_tmpl_i32(rj, "parallelism", &par);
		if (has_comp && comp < par)
			par = comp;
		uint64_t r = (uint64_t)(reps > 0 ? reps : 0);
		at_once += r * (uint64_t)(par > 0 ? par : 0);
		if (js_tmpl_indexed(rj))
			hostnames += r * (uint64_t)(comp > 0 ? comp : 1);
		const char *what = at_once > capacity ? "pods at once (replicas x parallelism, capped by completions)"
			       : hostnames > capacity ? "Indexed hostnames (replicas x completions)"
						      : NULL;
		if (what) {
			*ret_err = js_buf_format("spec.replicatedJobs[%zu] (%s): the run would hold %llu %s, counting the "
						 "ReplicatedJobs before it; the local runtime gives each its own address "
						 "and has %llu: run it on a cluster, or lower replicas, parallelism or "
						 "completions",
						 i, rj->name, (unsigned long long)(at_once > capacity ? at_once : hostnames),
						 what, (unsigned long long)capacity);
			return JS_EINVALID;
		}
	}
	return 0;
}

struct find {
	const char *host;
	uint64_t pos;
};

static int find_one(void *ctx, const char *host, uint64_t pos)
{
	struct find *f = ctx;
	if (strcmp(host, f->host) != 0)
		return 0;
	f->pos = pos;
	return 1;
}

int js_hosts_find(const struct js_jobset *js, const char *hostname, uint64_t *ret_pos)
{
	struct find f = {.host = hostname};
	if (js_hosts_walk(js, find_one, &f) != 1)
		return JS_ENOTFOUND;
	*ret_pos = f.pos;
	return 0;
}

struct service {
	struct js_buf *b;
	const struct js_ipam *ipam;
	const char *sub, *ns;
	bool bare;
};

static int service_entry(void *ctx, const char *host, uint64_t pos)
{
	struct service *s = ctx;
	uint32_t addr;
	if (js_ipam_fixed(s->ipam, pos, &addr) < 0)
		return 0;
	char ip[16];
	js_ipam_format(addr, ip);
	return entry(s->b, ip, host, s->sub, s->ns, s->bare);
}

int js_hosts_write_service(const char *path, const struct js_jobset *js, const struct js_ipam *ipam, bool bare)
{
	struct js_buf b;
	js_buf_init(&b, 0);
	int r = js_buf_puts(&b, HOSTS_HEADER);
	struct service s = {.b = &b, .ipam = ipam, .sub = js_jobset_subdomain(js), .ns = js_jobset_namespace(js),
			    .bare = bare};
	if (!r)
		r = js_hosts_walk(js, service_entry, &s);
	if (!r)
		r = write_atomic(path, &b);
	js_buf_done(&b);
	return r;
}

int js_hosts_write_own(const char *path, const char *ip, const char *hostname, const char *subdomain,
		       const char *namespace_, const char *shared)
{
	struct js_buf b;
	js_buf_init(&b, 0);
	int r = js_buf_puts(&b, HOSTS_HEADER);
	if (!r)
		r = entry(&b, ip, hostname, subdomain, namespace_, true);
	size_t n_ip = strlen(ip);
	if (!r && shared) {
		FILE *f = fopen(shared, "re");
		if (f) {
			char line[1024];
			while (!r && fgets(line, sizeof(line), f)) {
				/* Its own line is the one above. */
				bool mine = strncmp(line, ip, n_ip) == 0 && line[n_ip] == '\t';
				if (line[0] != '#' && strncmp(line, "127.0.0.1\t", 10) != 0 &&
				    strncmp(line, "::1\t", 4) != 0 && !mine)
					r = js_buf_puts(&b, line);
			}
			fclose(f);
		}
	}
	if (!r)
		r = write_atomic(path, &b);
	js_buf_done(&b);
	return r;
}
