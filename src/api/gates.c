/*
 * gates.c - feature gates by name (SPEC §12.3). See gates.h.
 */
#include "api/gates.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/parse.h"

#define NO_FIELD ((size_t)-1)

/* The gates of SPEC §12.3. `locked` gates are GA and always on: they have
 * no field, and only "true" is accepted for them (as upstream's
 * component-base refuses to change a locked gate). */
static const struct {
	const char *name;
	size_t off;
	bool locked;
} gates_table[] = {
	{"RestartJob", offsetof(struct js_gates, restart_job), false},
	{"InPlaceRestart", offsetof(struct js_gates, in_place_restart), false},
	{"ElasticJobSet", offsetof(struct js_gates, elastic_jobset), false},
	{"ExecutionAttemptsTracking", offsetof(struct js_gates, execution_attempts), false},
	{"MutablePodResourcesForSuspendedJobSets", offsetof(struct js_gates, mutable_pod_resources), false},
	{"JobSetActiveDeadlineSeconds", offsetof(struct js_gates, active_deadline), false},
	{"TLSOptions", NO_FIELD, true},
};

const char *js_gates_known(void)
{
	return "RestartJob, InPlaceRestart, ElasticJobSet, ExecutionAttemptsTracking, "
	       "MutablePodResourcesForSuspendedJobSets, JobSetActiveDeadlineSeconds, TLSOptions";
}

static int fail(char **reterr_msg, char *msg)
{
	if (reterr_msg)
		*reterr_msg = msg;
	else
		free(msg);
	return JS_EINVALID;
}

int js_gates_set(struct js_gates *gates, const char *name, size_t n, bool on, char **reterr_msg)
{
	for (size_t i = 0; i < JS_ARRAY_SIZE(gates_table); i++) {
		if (strlen(gates_table[i].name) != n || memcmp(gates_table[i].name, name, n) != 0)
			continue;
		if (gates_table[i].locked) {
			if (on)
				return 0;
			return fail(reterr_msg, js_buf_format("cannot set feature gate '%.*s' to false: it is locked to true",
							      (int)n, name));
		}
		*(bool *)((char *)gates + gates_table[i].off) = on;
		return 0;
	}
	return fail(reterr_msg, js_buf_format("unknown feature gate '%.*s' (known: %s)", (int)n, name, js_gates_known()));
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
	struct js_gates g = *gates;
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
		int r = js_gates_set(&g, name, name_len, on, reterr_msg);
		if (r < 0)
			return r;
	}
	*gates = g;
	return 0;
}
