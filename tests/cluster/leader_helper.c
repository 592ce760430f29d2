/*
 * leader_helper.c - a leader-election candidate process for
 * leader_ctest.c: `kube_leader_helper NS LEASE IDENTITY LEASE_MS RENEW_MS
 * RETRY_MS`. Prints "LEADING <id>" when it becomes leader and "STOPPED <id>"
 * when it stops; on SIGTERM it stops campaigning (releasing the lease) and
 * exits 0. Uses $KUBECONFIG.
 */
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kube/leader.h"

static void on_started(void *user)
{
	printf("LEADING %s\n", (const char *)user);
	fflush(stdout);
}

static void on_stopped(void *user)
{
	printf("STOPPED %s\n", (const char *)user);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: %s NS LEASE IDENTITY LEASE_MS RENEW_MS RETRY_MS\n", argv[0]);
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	signal(SIGPIPE, SIG_IGN);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* threads inherit the mask */

	struct js_kubeconfig kc = {0};
	struct js_diag d = {0};
	if (js_kubeconfig_load(NULL, NULL, &d, &kc) < 0) {
		fprintf(stderr, "kubeconfig: %s\n", d.n ? d.items[0].message : "?");
		return 1;
	}
	struct js_client *c = NULL;
	struct js_client_opts co = {.qps = 50, .burst = 100};
	if (js_client_new(&kc, &co, &c) < 0)
		return 1;
	struct js_leader_opts lo = {.namespace = argv[1], .name = argv[2], .identity = argv[3],
				    .lease_duration_ms = atoi(argv[4]), .renew_deadline_ms = atoi(argv[5]),
				    .retry_period_ms = atoi(argv[6]), .on_started = on_started,
				    .on_stopped = on_stopped, .user = argv[3]};
	struct js_leader *le = NULL;
	if (js_leader_new(c, &lo, &le) < 0 || js_leader_start(le) < 0) {
		fprintf(stderr, "leader: bad options\n");
		return 1;
	}
	int sig = 0;
	sigwait(&set, &sig);
	(void)js_leader_stop(le);
	if (js_leader_free(le) < 0)
		return 1;
	js_client_free(c);
	js_kubeconfig_done(&kc);
	js_diag_done(&d);
	curl_global_cleanup();
	return 0;
}
