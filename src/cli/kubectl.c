/*
 * kubectl.c - `jobset kubectl COMMAND` and the `kubectl-jobset` plugin
 * (docs/kubectl-jobset.md): dispatch, kubectl's global flags, connecting
 * through kubeconfig, and the commands get and restart. describe, logs,
 * diff and report live in kdescribe.c, klogs.c, kdiff.c and kreport.c.
 *
 * Which mode: the binary run as `kubectl-jobset` (kubectl's plugin
 * discovery, `kubectl jobset ...`) or `jobset kubectl ...` talks to a
 * cluster; every other `jobset` command stays on this machine, so `jobset
 * describe POD` (a run directory) and `kubectl jobset describe NAME` (a
 * cluster) never shadow each other.
 */
#include "cli/kubectl.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/jobset.h"
#include "api/validate.h"
#include "base/emit.h"
#include "base/json.h"
#include "cli/cli.h"
#include "kube/kprint.h"

static const char usage[] =
	"usage: kubectl jobset COMMAND [ARGS] [FLAGS]     (installed as kubectl-jobset)\n"
	"       jobset kubectl COMMAND [ARGS] [FLAGS]\n"
	"\n"
	"JobSets on a cluster, through kubeconfig.\n"
	"\n"
	"Commands:\n"
	"  get [NAME]        list JobSets with the CRD's columns (-o json|yaml|wide|name, -A)\n"
	"  describe NAME     ReplicatedJobs -> attempts -> Jobs -> pods, policies, events\n"
	"  logs NAME         pod logs: [--rjob R] [--index I] [--attempt A] [-c C] [--tail N] [-f]\n"
	"  restart NAME      restart the whole JobSet (a new attempt; not counted toward maxRestarts)\n"
	"  diff FILE         what `jobset render FILE` creates against what exists (exit 1: differences)\n"
	"  report NAME       a picture of the run: -o html (default; > run.html) or -o json\n"
	"\n"
	"Flags (anywhere on the line):\n"
	"  -n, --namespace NS     namespace (default: the context's, else \"default\")\n"
	"  -A, --all-namespaces   get: every namespace\n"
	"  --context NAME         kubeconfig context\n"
	"  --kubeconfig FILE      kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)\n"
	"  -o, --output FORMAT    get: json, yaml, wide or name; report: html or json\n"
	"  --feature-gates LIST   diff: the controller's gates (RestartJob=true,...)\n"
	"\n"
	"Exit status: 0 ok (diff: no differences), 1 an API error such as NotFound (diff:\n"
	"differences), 2 usage or I/O error.\n";

/* ---- flags ---- */

enum { F_GLOBAL = 1, F_GET = 2, F_LOGS = 4, F_DIFF = 8, F_REPORT = 16 };

struct flag {
	const char *lng;
	char shrt;
	bool arg;
	int where;
};

static const struct flag flags[] = {
	{"namespace", 'n', true, F_GLOBAL},    {"context", 0, true, F_GLOBAL},
	{"kubeconfig", 0, true, F_GLOBAL},     {"all-namespaces", 'A', false, F_GET},
	{"output", 'o', true, F_GET | F_REPORT},          {"rjob", 0, true, F_LOGS},
	{"index", 0, true, F_LOGS},            {"attempt", 0, true, F_LOGS},
	{"follow", 'f', false, F_LOGS},        {"container", 'c', true, F_LOGS},
	{"tail", 0, true, F_LOGS},             {"feature-gates", 0, true, F_DIFF},
	{"help", 'h', false, F_GLOBAL},
};

static int where_of(const char *cmd)
{
	if (strcmp(cmd, "get") == 0)
		return F_GET;
	if (strcmp(cmd, "logs") == 0)
		return F_LOGS;
	if (strcmp(cmd, "diff") == 0)
		return F_DIFF;
	if (strcmp(cmd, "report") == 0)
		return F_REPORT;
	return 0;
}

int kjs_usage(const struct kctx *k, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("error: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nSee 'kubectl jobset --help' for usage%s%s.\n", k && k->cmd ? " of " : "",
		k && k->cmd ? k->cmd : "");
	return JS_EXIT_USAGE;
}

static int set_flag(struct kctx *k, const struct flag *f, const char *v)
{
	const char *n = f->lng;
	if (strcmp(n, "namespace") == 0)
		k->ns_flag = v;
	else if (strcmp(n, "context") == 0)
		k->context = v;
	else if (strcmp(n, "kubeconfig") == 0)
		k->kubeconfig = v;
	else if (strcmp(n, "all-namespaces") == 0)
		k->all_ns = true;
	else if (strcmp(n, "output") == 0)
		k->output = v;
	else if (strcmp(n, "rjob") == 0)
		k->rjob = v;
	else if (strcmp(n, "index") == 0)
		k->index = v;
	else if (strcmp(n, "attempt") == 0)
		k->attempt = v;
	else if (strcmp(n, "container") == 0)
		k->container = v;
	else if (strcmp(n, "follow") == 0)
		k->follow = true;
	else if (strcmp(n, "tail") == 0) {
		char *end = NULL;
		k->tail = strtoll(v, &end, 10);
		if (!*v || *end || k->tail < -1)
			return kjs_usage(k, "invalid argument \"%s\" for \"--tail\": a whole number of lines (-1: all)", v);
		k->has_tail = k->tail >= 0;
	} else if (strcmp(n, "feature-gates") == 0) {
		char *msg = NULL;
		if (js_gates_parse(v, &k->gates, &msg) < 0) {
			int rc = kjs_usage(k, "--feature-gates: %s", msg ? msg : "invalid");
			free(msg);
			return rc;
		}
	}
	return 0;
}

/* Parse argv (after the program/subcommand word) into k: flags anywhere,
 * as kubectl takes them; the first other word is the command. */
static int parse_args(int argc, char **argv, struct kctx *k, bool *help)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			for (i++; i < argc && k->npos < JS_ARRAY_SIZE(k->pos); i++)
				k->pos[k->npos++] = argv[i];
			break;
		}
		if (a[0] != '-' || a[1] == '\0') {
			if (!k->cmd)
				k->cmd = a;
			else if (k->npos < JS_ARRAY_SIZE(k->pos))
				k->pos[k->npos++] = a;
			else
				return kjs_usage(k, "too many arguments");
			continue;
		}
		const struct flag *f = NULL;
		const char *val = NULL;
		if (a[1] == '-') {
			const char *eq = strchr(a + 2, '=');
			size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
			for (size_t q = 0; q < JS_ARRAY_SIZE(flags) && !f; q++)
				if (strlen(flags[q].lng) == len && strncmp(flags[q].lng, a + 2, len) == 0)
					f = &flags[q];
			val = eq ? eq + 1 : NULL;
		} else {
			for (size_t q = 0; q < JS_ARRAY_SIZE(flags) && !f; q++)
				if (flags[q].shrt == a[1])
					f = &flags[q];
			val = f && a[2] ? a + 2 + (a[2] == '=') : NULL;
		}
		if (!f)
			return kjs_usage(k, "unknown flag: %s", a);
		if (strcmp(f->lng, "help") == 0) {
			*help = true;
			continue;
		}
		if (f->arg && !val) {
			if (i + 1 >= argc)
				return kjs_usage(k, "flag needs an argument: %s", a);
			val = argv[++i];
		} else if (!f->arg && val) {
			return kjs_usage(k, "flag %s takes no value", a);
		}
		if (f->where != F_GLOBAL && k->cmd && !(where_of(k->cmd) & f->where))
			return kjs_usage(k, "unknown flag for %s: %s", k->cmd, a);
		if (f->where != F_GLOBAL && !k->cmd) {
			if (k->n_early == JS_ARRAY_SIZE(k->early))
				return kjs_usage(k, "too many flags before the command");
			k->early[k->n_early] = a;
			k->early_where[k->n_early++] = f->where;
		}
		int rc = set_flag(k, f, val);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- the client ---- */

int kjs_connect(struct kctx *k)
{
	struct js_kubeconfig kc = {0};
	struct js_diag d = {0};
	int r = js_kubeconfig_load(k->kubeconfig, k->context, &d, &kc);
	if (r < 0) {
		fprintf(stderr, "error: kubeconfig%s%s: %s\n", k->context ? ", context " : "", k->context ? k->context : "",
			d.n ? d.items[0].message : js_strerror(r));
		js_diag_done(&d);
		return JS_EXIT_USAGE;
	}
	js_diag_done(&d);
	struct js_client_opts co = {.qps = 50, .burst = 100, .user_agent = "kubectl-jobset/" JS_VERSION};
	r = js_client_new(&kc, &co, &k->client);
	js_kubeconfig_done(&kc);
	if (r < 0) {
		fprintf(stderr, "error: cannot use the cluster of the kubeconfig: %s\n", js_strerror(r));
		return JS_EXIT_USAGE;
	}
	/* An empty --namespace= is no namespace flag, as for kubectl. Any other
	 * value goes into request paths, so it must be a name. */
	k->ns = k->ns_flag && *k->ns_flag ? k->ns_flag : js_client_namespace(k->client);
	if (!js_is_dns1123_label(k->ns)) {
		fprintf(stderr, "error: invalid namespace \"%s\": a namespace is a DNS-1123 label (at most 63 "
				"lower-case letters, digits or '-', starting and ending with a letter or digit)\n",
			k->ns);
		return JS_EXIT_USAGE;
	}
	k->now = (int64_t)time(NULL);
	return 0;
}

int kjs_api_error(const char *what, int r, const struct js_apierr *e)
{
	if (e && e->http_code == 404 && !e->reason)
		/* No Status: the route is unknown, not the object. */
		fprintf(stderr, "error: the server doesn't have the resource of %s (is the JobSet CRD installed? "
				"kubectl apply --server-side -k deploy/)\n", what);
	else if (e && e->http_code)
		fprintf(stderr, "Error from server (%s): %s\n", e->reason ? e->reason : js_apierr_strerror(r),
			e->message ? e->message : js_apierr_strerror(r));
	else
		fprintf(stderr, "error: %s: %s\n", what, e && e->message ? e->message : js_apierr_strerror(r));
	return JS_EXIT_INVALID;
}

/* GET the JobSet; `say_ns`: errors name the namespace too. */
static int get_jobset(struct kctx *k, const char *name, bool say_ns, json_t **ret)
{
	/* Names go into request paths: "a?dryRun=All" must not become a query. */
	if (!js_is_dns1123_subdomain(name)) {
		fprintf(stderr, "error: invalid resource name \"%s\": a JobSet's name is a DNS-1123 subdomain "
				"(lower-case letters, digits, '-' and '.')\n", name);
		return JS_EXIT_USAGE;
	}
	struct js_apierr e = {0};
	int r = js_client_get(k->client, &js_client_res_jobsets, k->ns, name, NULL, ret, &e);
	int rc = 0;
	if (r == JS_ENOTFOUND && e.reason && say_ns)
		rc = (fprintf(stderr, "Error from server (NotFound): %s \"%s\" not found in namespace \"%s\"\n",
			      KJS_RESOURCE, name, k->ns),
		      JS_EXIT_INVALID);
	else if (r == JS_ENOTFOUND && e.reason)
		/* kubectl's words, whatever the server's message. */
		rc = (fprintf(stderr, "Error from server (NotFound): %s \"%s\" not found\n", KJS_RESOURCE, name),
		      JS_EXIT_INVALID);
	else if (r < 0)
		rc = kjs_api_error(KJS_RESOURCE, r, &e);
	js_apierr_done(&e);
	return rc;
}

int kjs_get_jobset(struct kctx *k, const char *name, json_t **ret)
{
	return get_jobset(k, name, false, ret);
}

int kjs_get_jobset_in(struct kctx *k, const char *name, json_t **ret)
{
	return get_jobset(k, name, true, ret);
}

int kjs_list_quiet(struct kctx *k, const struct js_resource *res, const char *ns, const char *selector, json_t **ret,
		   struct js_apierr *reterr_e)
{
	json_t *all = json_array();
	char *cont = NULL;
	int rc = 0;
	do {
		struct js_list_opts lo = {.label_selector = selector, .continue_token = cont, .limit = 500};
		json_t *page = NULL;
		int r = js_client_list(k->client, res, ns, &lo, &page, reterr_e);
		free(cont);
		cont = NULL;
		if (r < 0) {
			rc = r;
			break;
		}
		json_array_extend(all, json_object_get(page, "items"));
		const char *c = json_string_value(js_json_path(page, "metadata.continue"));
		cont = c && *c ? js_xstrdup(c) : NULL;
		json_decref(page);
	} while (cont);
	free(cont);
	if (rc) {
		json_decref(all);
		return rc;
	}
	*ret = all;
	return 0;
}

int kjs_list_all(struct kctx *k, const struct js_resource *res, const char *ns, const char *selector, json_t **ret)
{
	struct js_apierr e = {0};
	int r = kjs_list_quiet(k, res, ns, selector, ret, &e);
	int rc = r < 0 ? kjs_api_error(res->resource, r, &e) : 0;
	js_apierr_done(&e);
	return rc;
}

/* ---- get ---- */

/* The CRD's additionalPrinterColumns (deploy/crd/), in order; the test
 * compares this output with kubectl's, which the server prints from the
 * CRD. None has priority > 0, so -o wide shows the same columns. */
static const char *const get_cols[] = {"NAME", "TERMINALSTATE", "RESTARTS", "COMPLETED", "SUSPENDED", "AGE",
				       "STARTTIME"};

static const char *scalar(const json_t *v, char *buf, size_t len)
{
	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_integer(v))
		(void)snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else if (json_is_boolean(v))
		(void)snprintf(buf, len, "%s", json_is_true(v) ? "true" : "false");
	else
		buf[0] = '\0';
	return buf;
}

static const json_t *condition(const json_t *obj, const char *type)
{
	const json_t *conds = js_json_path(obj, "status.conditions");
	for (size_t i = 0; i < json_array_size(conds); i++) {
		const char *t = js_json_str(json_array_get(conds, i), "type");
		if (t && strcmp(t, type) == 0)
			return json_array_get(conds, i);
	}
	return NULL;
}

static void get_row(const struct kctx *k, struct js_ktable *t, const json_t *o)
{
	char b[3][32], age[JS_KPRINT_AGE_LEN], start[JS_KPRINT_AGE_LEN];
	const char *st = js_json_str(js_json_path(o, "status"), "startTime");
	const char *cells[8] = {
		js_json_str(js_json_path(o, "metadata"), "namespace"),
		js_json_str(js_json_path(o, "metadata"), "name"),
		scalar(js_json_path(o, "status.terminalState"), b[0], sizeof(b[0])),
		scalar(js_json_path(o, "status.restarts"), b[1], sizeof(b[1])),
		js_json_str(condition(o, "Completed"), "status"),
		scalar(js_json_path(o, "spec.suspend"), b[2], sizeof(b[2])),
		js_kprint_age(js_json_str(js_json_path(o, "metadata"), "creationTimestamp"), k->now, age),
		st ? js_kprint_age(st, k->now, start) : NULL,
	};
	js_ktable_add(t, k->all_ns ? cells : cells + 1);
}

static void strip_managed(json_t *o)
{
	json_object_del(js_json_path(o, "metadata"), "managedFields");
}

static int print_objects(const json_t *v, bool json_out)
{
	struct js_buf out;
	js_buf_init(&out, 0);
	int r = json_out ? js_emit_json(v, &out) : js_emit_yaml(v, 0, &out);
	if (r == 0)
		fputs(js_buf_str(&out), stdout);
	js_buf_done(&out);
	return r == 0 ? JS_EXIT_OK : (fputs("error: output too large\n", stderr), JS_EXIT_USAGE);
}

static int cmd_get(struct kctx *k)
{
	const char *o = k->output;
	if (o && strcmp(o, "json") && strcmp(o, "yaml") && strcmp(o, "wide") && strcmp(o, "name"))
		return kjs_usage(k, "unable to match a printer suitable for the output format \"%s\", allowed formats "
				    "are: json,name,wide,yaml",
				 o);
	if (k->npos > 1)
		return kjs_usage(k, "get takes at most one NAME, got %zu arguments", k->npos);
	if (k->npos == 1 && k->all_ns)
		return kjs_usage(k, "a resource cannot be retrieved by name across all namespaces");
	int rc = kjs_connect(k);
	if (rc)
		return rc;
	json_t *items = NULL, *one = NULL;
	if (k->npos == 1) {
		if ((rc = kjs_get_jobset(k, k->pos[0], &one)) != 0)
			return rc;
		items = json_pack("[O]", one);
	} else if ((rc = kjs_list_all(k, &js_client_res_jobsets, k->all_ns ? NULL : k->ns, NULL, &items)) != 0) {
		return rc;
	}
	for (size_t i = 0; i < json_array_size(items); i++)
		strip_managed(json_array_get(items, i));
	if (o && (strcmp(o, "json") == 0 || strcmp(o, "yaml") == 0)) {
		json_t *v = one ? json_incref(one)
				: json_pack("{s:s, s:O, s:s, s:{s:s}}", "apiVersion", "v1", "items", items, "kind", "List",
					    "metadata", "resourceVersion", "");
		rc = print_objects(v, o[0] == 'j');
		json_decref(v);
	} else if (o && strcmp(o, "name") == 0) {
		for (size_t i = 0; i < json_array_size(items); i++)
			printf("jobset.jobset.x-k8s.io/%s\n", js_json_str(js_json_path(json_array_get(items, i), "metadata"), "name"));
	} else if (json_array_size(items) == 0) {
		if (k->all_ns)
			fputs("No resources found\n", stderr);
		else
			fprintf(stderr, "No resources found in %s namespace.\n", k->ns);
	} else {
		size_t nc = JS_ARRAY_SIZE(get_cols) + (k->all_ns ? 1 : 0);
		struct js_ktable *t = js_ktable_new(nc);
		const char *hdr[8] = {"NAMESPACE"};
		for (size_t i = 0; i < JS_ARRAY_SIZE(get_cols); i++)
			hdr[i + 1] = get_cols[i];
		js_ktable_add(t, k->all_ns ? hdr : hdr + 1);
		for (size_t i = 0; i < json_array_size(items); i++)
			get_row(k, t, json_array_get(items, i));
		struct js_buf out;
		js_buf_init(&out, 0);
		if (js_ktable_print(t, "", &out) == 0)
			fputs(js_buf_str(&out), stdout);
		js_buf_done(&out);
		js_ktable_free(t);
	}
	json_decref(items);
	json_decref(one);
	return rc;
}

/* ---- restart ---- */

static int cmd_restart(struct kctx *k)
{
	if (k->npos != 1)
		return kjs_usage(k, "restart takes the JobSet's NAME");
	int rc = kjs_connect(k);
	if (rc)
		return rc;
	const char *name = k->pos[0];
	/* The request names the attempt seen; if status.restarts moves
	 * between our GET and PATCH (the resourceVersion precondition
	 * fails), read again, so the request names the attempt running. */
	for (int tries = 0; tries < 5; tries++) {
		json_t *js = NULL;
		if ((rc = kjs_get_jobset(k, name, &js)) != 0)
			return rc;
		const char *term = js_json_str(js_json_path(js, "status"), "terminalState");
		if (term) {
			fprintf(stderr, "error: jobset %s has finished (%s): a finished JobSet is not restarted\n", name, term);
			json_decref(js);
			return JS_EXIT_INVALID;
		}
		const char *mb = js_json_str(js_json_path(js, "spec"), "managedBy");
		if (mb && strcmp(mb, JS_MANAGED_BY_SELF) != 0) {
			fprintf(stderr, "error: jobset %s is managed by %s (spec.managedBy), which does not act on "
					"restart requests; only %s does\n", name, mb, JS_MANAGED_BY_SELF);
			json_decref(js);
			return JS_EXIT_INVALID;
		}
		if (json_is_true(js_json_path(js, "spec.suspend"))) {
			fprintf(stderr, "error: jobset %s is suspended (spec.suspend: true): resume it first; a request made "
					"while suspended takes effect at the resume\n", name);
			json_decref(js);
			return JS_EXIT_INVALID;
		}
		char n[24];
		(void)snprintf(n, sizeof(n), "%lld", (long long)json_integer_value(js_json_path(js, "status.restarts")));
		const char *have = json_string_value(
			json_object_get(js_json_path(js, "metadata.annotations"), JS_ANN_RESTART_REQUEST));
		if (have && strcmp(have, n) == 0) {
			printf("jobset.jobset.x-k8s.io/%s restart already requested (attempt %s ends)\n", name, n);
			json_decref(js);
			return JS_EXIT_OK;
		}
		json_t *patch = json_pack("{s:{s:{s:s}, s:s}}", "metadata", "annotations", JS_ANN_RESTART_REQUEST, n,
					  "resourceVersion", js_json_str(js_json_path(js, "metadata"), "resourceVersion"));
		json_decref(js);
		struct js_apierr e = {0};
		int r = js_client_patch(k->client, &js_client_res_jobsets, k->ns, name, JS_PATCH_MERGE, patch, NULL, NULL,
					&e);
		json_decref(patch);
		if (r == JS_ECONFLICT) {
			js_apierr_done(&e);
			continue;
		}
		if (r < 0) {
			rc = kjs_api_error("restart", r, &e);
			js_apierr_done(&e);
			return rc;
		}
		js_apierr_done(&e);
		printf("jobset.jobset.x-k8s.io/%s restart requested (attempt %s ends, attempt %lld starts)\n", name, n,
		       strtoll(n, NULL, 10) + 1);
		return JS_EXIT_OK;
	}
	fprintf(stderr, "error: jobset %s kept changing; try again\n", name);
	return JS_EXIT_INVALID;
}

/* ---- dispatch ---- */

int js_cli_kubectl(int argc, char **argv)
{
	struct kctx k = {0};
	bool help = false;
	int rc = parse_args(argc - 1, argv + 1, &k, &help);
	if (rc)
		return rc;
	if (help || (!k.cmd && argc < 2)) {
		fputs(usage, help ? stdout : stderr);
		return help ? JS_EXIT_OK : JS_EXIT_USAGE;
	}
	static const struct {
		const char *name;
		int (*fn)(struct kctx *k);
	} cmds[] = {{"get", cmd_get}, {"describe", kjs_describe}, {"logs", kjs_logs}, {"restart", cmd_restart},
		    {"diff", kjs_diff}, {"report", kjs_report}};
	int (*fn)(struct kctx *) = NULL;
	for (size_t i = 0; k.cmd && i < JS_ARRAY_SIZE(cmds); i++)
		if (strcmp(k.cmd, cmds[i].name) == 0)
			fn = cmds[i].fn;
	if (!fn)
		return kjs_usage(NULL, "unknown command \"%s\" for \"kubectl jobset\"; valid: get, describe, logs, restart, "
				       "diff, report",
				 k.cmd ? k.cmd : "");
	/* A command's flag given before the command word: checked now that the
	 * command is known, as those after it were while parsing. */
	for (size_t i = 0; i < k.n_early; i++)
		if (!(where_of(k.cmd) & k.early_where[i]))
			return kjs_usage(&k, "unknown flag for %s: %s", k.cmd, k.early[i]);
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = fn(&k);
	k.client = js_client_free(k.client);
	curl_global_cleanup();
	return rc;
}
