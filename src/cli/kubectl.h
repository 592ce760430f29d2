/*
 * kubectl.h - `jobset kubectl COMMAND` and the `kubectl-jobset` plugin
 * (docs/kubectl-jobset.md): the JobSet commands against a cluster, through
 * kubeconfig and the C client of src/kube. Shared by kubectl.c (dispatch,
 * flags, get, restart), kdescribe.c, klogs.c, kdiff.c and kreport.c.
 */
#ifndef JS_CLI_KUBECTL_H
#define JS_CLI_KUBECTL_H
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/gates.h"
#include "kube/client.h"

/** A parsed command line, and the client once connected. */
struct kctx {
	const char *cmd;                 /* get, describe, logs, restart, diff, report */
	const char *kubeconfig, *context; /* --kubeconfig, --context */
	const char *ns_flag;             /* -n/--namespace, or NULL */
	bool all_ns;                     /* -A/--all-namespaces */
	const char *output;              /* -o/--output, or NULL */
	const char *rjob, *index, *attempt, *container; /* logs */
	bool follow, has_tail;
	long long tail;
	struct js_gates gates;           /* diff: --feature-gates */
	const char *pos[8];              /* positional arguments after the command */
	const char *early[16];           /* command flags given before the command
					    word, checked once it is known */
	int early_where[16];             /* ... and the commands each belongs to */
	size_t n_early;
	size_t npos;
	struct js_client *client;
	const char *ns;                  /* the namespace in effect, after connecting */
	int64_t now;                     /* Unix seconds, for ages */
};

/* The resource as kubectl names it in messages. */
#define KJS_RESOURCE "jobsets.jobset.x-k8s.io"

/** Load kubeconfig (--kubeconfig, --context), create the client and set
 * k->ns and k->now. Returns 0, or prints why and returns 2. */
int kjs_connect(struct kctx *k);

/** Print a failed call as kubectl does: "Error from server (Reason):
 * message" for API answers, "error: ..." for transport failures. Returns
 * JS_EXIT_INVALID (1). */
int kjs_api_error(const char *what, int r, const struct js_apierr *e);

/** GET the JobSet `name` in k->ns. Returns 0 with *ret, or prints the error
 * (kubectl's NotFound text for an unknown name) and returns 1. */
int kjs_get_jobset(struct kctx *k, const char *name, json_t **ret);

/** The same, but a NotFound names the namespace too ("... not found in
 * namespace \"team\""): for commands typed by hand, where the namespace
 * is the likelier mistake than the name. */
int kjs_get_jobset_in(struct kctx *k, const char *name, json_t **ret);

/** LIST every page (500 items each) of `res` in namespace `ns` (NULL: all)
 * with label `selector` (NULL: none). Returns 0 with *ret a new array (the
 * caller's reference), or prints the API error and returns 1. */
int kjs_list_all(struct kctx *k, const struct js_resource *res, const char *ns, const char *selector, json_t **ret);

/** The same without printing: 0 and *ret, or the client's negative error
 * with *reterr_e filled (the caller's to js_apierr_done either way). */
int kjs_list_quiet(struct kctx *k, const struct js_resource *res, const char *ns, const char *selector, json_t **ret,
		   struct js_apierr *reterr_e);

/** Usage error naming the command: prints "error: MSG" and a hint; returns 2. */
int kjs_usage(const struct kctx *k, const char *fmt, ...) JS_PRINTF(2, 3);

/* The commands; each takes the parsed line (k->pos, the flags), connects,
 * prints, and returns the exit status of docs/kubectl-jobset.md. */
int kjs_describe(struct kctx *k); /* kdescribe.c */
int kjs_logs(struct kctx *k);     /* klogs.c */
int kjs_diff(struct kctx *k);     /* kdiff.c: 0 no differences, 1 some, 2 error */
int kjs_report(struct kctx *k);   /* kreport.c */

#endif
