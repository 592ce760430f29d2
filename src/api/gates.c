/*
 * gates.c - feature gates by name (SPEC §12.3). See gates.h.
 */
#include "api/gates.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/parse.h"

#define NO_FIELD ((size_t)-1)

/* Stages as component-base's featuregate.prerelease; only Alpha and GA
 * gates exist today, so nothing answers AllBeta yet. */
enum stage { ALPHA, BETA, GA };

/* The gates of SPEC §12.3. `locked` gates are GA and always on: they have
 * no field, and only "true" is accepted for them (as upstream's
 * component-base refuses to change a locked gate). */
static const struct {
	const char *name;
	size_t off;
	enum stage stage;
	bool locked;
} gates_table[] = {
	{"RestartJob", offsetof(struct js_gates, restart_job), ALPHA, false},
	{"InPlaceRestart", offsetof(struct js_gates, in_place_restart), ALPHA, false},
	{"ElasticJobSet", offsetof(struct js_gates, elastic_jobset), ALPHA, false},
	{"ExecutionAttemptsTracking", offsetof(struct js_gates, execution_attempts), ALPHA, false},
	{"MutablePodResourcesForSuspendedJobSets", offsetof(struct js_gates, mutable_pod_resources), ALPHA, false},
	{"JobSetActiveDeadlineSeconds", offsetof(struct js_gates, active_deadline), ALPHA, false},
	{"JobSetWorkloadAwareSchedulingAPI", offsetof(struct js_gates, workload_aware_scheduling), ALPHA, false},
	{"ProgressDeadline", offsetof(struct js_gates, progress_deadline), ALPHA, false},
	{"NodeQuarantine", offsetof(struct js_gates, node_quarantine), ALPHA, false}, /* ours */
	{"TLSOptions", NO_FIELD, GA, true},
};

/* Old names kept for one release after a rename: each sets its gate as
 * the new name would (it is the same entry of gates_table, so AllAlpha and
 * "last one wins" treat the two names as one gate). WorkloadAwareScheduling
 * was ours before KEP-969 named the gate JobSetWorkloadAwareSchedulingAPI
 * (keps/969-WAS-integration/kep.yaml). */
static const struct {
	const char *name, *canonical;
} aliases_table[] = {
	{"WorkloadAwareScheduling", "JobSetWorkloadAwareSchedulingAPI"},
};

/* component-base's two special keys: each sets every gate of its stage
 * that the same list does not name itself. */
static const struct {
	const char *name;
	enum stage stage;
} all_table[] = {
	{"AllAlpha", ALPHA},
	{"AllBeta", BETA},
};

#define N_GATES JS_ARRAY_SIZE(gates_table)
#define N_ALL JS_ARRAY_SIZE(all_table)

const char *js_gates_known(void)
{
	return "RestartJob, InPlaceRestart, ElasticJobSet, ExecutionAttemptsTracking, "
	       "MutablePodResourcesForSuspendedJobSets, JobSetActiveDeadlineSeconds, JobSetWorkloadAwareSchedulingAPI, "
	       "ProgressDeadline, NodeQuarantine, TLSOptions, AllAlpha, AllBeta (deprecated: WorkloadAwareScheduling)";
}

static int fail(char **reterr_msg, char *msg)
{
	if (reterr_msg)
		*reterr_msg = msg;
	else
		free(msg);
	return JS_EINVALID;
}

static bool name_is(const char *want, const char *name, size_t n)
{
	return strlen(want) == n && memcmp(want, name, n) == 0;
}

/* What a list asks for, before it is applied: per gate and per special
 * key, unset (-1), false (0) or true (1); the last item naming one wins. */
struct request {
	signed char gate[N_GATES];
	signed char all[N_ALL];
};

/* The canonical name `name` stands for: itself, or the gate a deprecated
 * alias names. Sets *n to its length. */
static const char *canonical(const char *name, size_t *n)
{
	for (size_t i = 0; i < JS_ARRAY_SIZE(aliases_table); i++)
		if (name_is(aliases_table[i].name, name, *n)) {
			*n = strlen(aliases_table[i].canonical);
			return aliases_table[i].canonical;
		}
	return name;
}

static int request_add(struct request *req, const char *name, size_t n, bool on, char **reterr_msg)
{
	size_t given_n = n;
	const char *given = name;
	name = canonical(name, &n);
	for (size_t i = 0; i < N_ALL; i++) {
		if (name_is(all_table[i].name, name, n)) {
			req->all[i] = on;
			return 0;
		}
	}
	for (size_t i = 0; i < N_GATES; i++) {
		if (!name_is(gates_table[i].name, name, n))
			continue;
		if (gates_table[i].locked && !on)
			return fail(reterr_msg, js_buf_format("cannot set feature gate '%.*s' to false: it is locked to true",
							      (int)given_n, given));
		req->gate[i] = on;
		return 0;
	}
	return fail(reterr_msg,
		    js_buf_format("unknown feature gate '%.*s' (known: %s)", (int)given_n, given, js_gates_known()));
}

/* Explicit settings win over AllAlpha/AllBeta whatever their order, as in
 * component-base's setUnsetAlphaGates/setUnsetBetaGates, which skip a gate
 * already set; locked gates are never touched by either. */
static void request_apply(const struct request *req, struct js_gates *gates)
{
	for (size_t i = 0; i < N_GATES; i++) {
		if (gates_table[i].locked)
			continue;
		int v = req->gate[i];
		for (size_t a = 0; a < N_ALL && v < 0; a++)
			if (req->all[a] >= 0 && all_table[a].stage == gates_table[i].stage)
				v = req->all[a];
		if (v >= 0)
			*(bool *)((char *)gates + gates_table[i].off) = v;
	}
}

static void request_init(struct request *req)
{
	memset(req->gate, -1, sizeof(req->gate));
	memset(req->all, -1, sizeof(req->all));
}

int js_gates_set_all(struct js_gates *gates, const struct js_gate_setting *settings, size_t n,
		     size_t *reterr_index, char **reterr_msg)
{
	struct request req;
	request_init(&req);
	for (size_t i = 0; i < n; i++) {
		int r = request_add(&req, settings[i].name, settings[i].len, settings[i].on, reterr_msg);
		if (r < 0) {
			if (reterr_index)
				*reterr_index = i;
			return r;
		}
	}
	request_apply(&req, gates);
	return 0;
}

/* Drop blanks around the `*n` bytes at `*p` (Go's strings.TrimSpace, for
 * the ASCII blanks a command line can carry). */
static void trim(const char **p, size_t *n)
{
	while (*n > 0 && ((*p)[0] == ' ' || (*p)[0] == '\t')) {
		(*p)++;
		(*n)--;
	}
	while (*n > 0 && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t'))
		(*n)--;
}

int js_gates_parse(const char *spec, struct js_gates *gates, char **reterr_msg)
{
	struct request req;
	request_init(&req);
	for (const char *p = spec ? spec : ""; *p;) {
		const char *item = p;
		size_t n = strcspn(p, ",");
		p += n;
		if (*p == ',')
			p++;
		if (n == 0)
			continue;
		/* As component-base's featureGate.Set: split at the first '=',
		 * trim name and value apart, the value by strconv.ParseBool. */
		const char *eq = memchr(item, '=', n);
		const char *name = item, *val = eq ? eq + 1 : NULL;
		size_t name_len = eq ? (size_t)(eq - item) : n, val_len = eq ? n - name_len - 1 : 0;
		trim(&name, &name_len);
		trim(&val, &val_len);
		bool on = false;
		if (!eq || js_parse_bool(val, val_len, &on) < 0)
			return fail(reterr_msg, js_buf_format("invalid feature gate '%.*s': expected Name=true|false",
							      (int)n, item));
		int r = request_add(&req, name, name_len, on, reterr_msg);
		if (r < 0)
			return r;
	}
	request_apply(&req, gates);
	return 0;
}

const char *js_gates_deprecated(const char *name, size_t len)
{
	/* One text per alias, so the pointer is static. */
	static const char *const msgs[] = {
		"feature gate 'WorkloadAwareScheduling' is deprecated and will be removed in the next release: use "
		"'JobSetWorkloadAwareSchedulingAPI' (KEP-969's name; same meaning)",
	};
	_Static_assert(JS_ARRAY_SIZE(msgs) == JS_ARRAY_SIZE(aliases_table), "one message per alias");
	for (size_t i = 0; i < JS_ARRAY_SIZE(aliases_table); i++)
		if (name_is(aliases_table[i].name, name, len))
			return msgs[i];
	return NULL;
}

const char *js_gates_list_deprecated(const char *spec)
{
	for (const char *p = spec ? spec : ""; *p;) {
		size_t n = strcspn(p, ",");
		const char *name = p;
		const char *eq = memchr(p, '=', n);
		size_t name_len = eq ? (size_t)(eq - p) : n;
		trim(&name, &name_len);
		const char *w = js_gates_deprecated(name, name_len);
		if (w)
			return w;
		p += n;
		if (*p == ',')
			p++;
	}
	return NULL;
}
