/*
 * codec.c - table-driven JSON codec for the JobSet API types.
 *
 * Each API type is described once, as a table of fields (JSON name, kind,
 * offsets of the value, its presence flag and its count, nested type or enum
 * table, flags). decode(), encode() and release() walk these tables; no code
 * is written per type (STYLE.md anti-pattern 1). Validation and defaulting,
 * where the JobSet logic lives, are hand-written elsewhere.
 */
#include "api/codec.h"

#include "api/api_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/limits.h"

#define NONE SIZE_MAX

enum kind {
	K_STR,     /* char *, NULL when absent */
	K_BOOL,    /* bool at off, has flag at has */
	K_I32,     /* int32_t; has flag optional */
	K_I64,     /* int64_t; has flag optional */
	K_ENUM,    /* int-sized enum with has flag, string table */
	K_OBJ,     /* pointer to struct of `sub` */
	K_INLINE,  /* struct of `sub` embedded at off; has flag optional */
	K_LIST,    /* array of `sub` structs: items at off, count at cnt, has flag */
	K_STRLIST, /* struct js_strlist */
	K_I32LIST, /* struct js_i32list */
	K_RAWOBJ,  /* json_t * object, verbatim */
	K_RAWARR,  /* json_t * array, verbatim */
	K_STRMAP,  /* json_t * object whose values are strings */
};

enum {
	F_REQ = 1,       /* required: absent is a Required error */
	F_OMITZERO = 2,  /* (no has flag) omit from output when zero */
};

struct type;

struct field {
	const char *json;
	enum kind kind;
	size_t off;
	size_t has;
	size_t cnt;
	const struct type *sub;
	const struct js__enum_table *en;
	unsigned flags;
};

struct type {
	const char *name;
	size_t size;
	const struct field *fields;
	size_t nfields;
	size_t extra;                   /* json_t * slot for unmodelled keys, or NONE */
	const char *const *extra_known; /* keys allowed into `extra` in strict mode */
};

/* ---- the tables ---- */

#define O(T, f) offsetof(struct T, f)
#define TYPE(T, nm, fl, ex, known) {nm, sizeof(struct T), fl, JS_ARRAY_SIZE(fl), ex, known}

static const struct field meta_fields[] = {
	{"name", K_STR, O(js_meta, name), NONE, NONE, NULL, NULL, 0},
	{"generateName", K_STR, O(js_meta, generate_name), NONE, NONE, NULL, NULL, 0},
	{"namespace", K_STR, O(js_meta, namespace_), NONE, NONE, NULL, NULL, 0},
	{"uid", K_STR, O(js_meta, uid), NONE, NONE, NULL, NULL, 0},
	{"resourceVersion", K_STR, O(js_meta, resource_version), NONE, NONE, NULL, NULL, 0},
	{"generation", K_I64, O(js_meta, generation), O(js_meta, has_generation), NONE, NULL, NULL, 0},
	{"creationTimestamp", K_STR, O(js_meta, creation_timestamp), NONE, NONE, NULL, NULL, 0},
	{"deletionTimestamp", K_STR, O(js_meta, deletion_timestamp), NONE, NONE, NULL, NULL, 0},
	{"labels", K_STRMAP, O(js_meta, labels), NONE, NONE, NULL, NULL, 0},
	{"annotations", K_STRMAP, O(js_meta, annotations), NONE, NONE, NULL, NULL, 0},
};
static const char *const meta_extra_known[] = {
	"selfLink", "deletionGracePeriodSeconds", "ownerReferences", "finalizers", "managedFields", NULL,
};
static const struct type meta_type = TYPE(js_meta, "ObjectMeta", meta_fields, O(js_meta, extra),
					  meta_extra_known);

static const struct field depends_on_fields[] = {
	{"name", K_STR, O(js_depends_on, name), NONE, NONE, NULL, NULL, F_REQ},
	{"status", K_ENUM, O(js_depends_on, status), O(js_depends_on, has_status), NONE, NULL,
	 &js__depends_status_table, F_REQ},
};
static const struct type depends_on_type = TYPE(js_depends_on, "DependsOn", depends_on_fields, NONE, NULL);

static const struct field rjob_fields[] = {
	{"name", K_STR, O(js_rjob, name), NONE, NONE, NULL, NULL, F_REQ},
	{"groupName", K_STR, O(js_rjob, group_name), NONE, NONE, NULL, NULL, 0},
	{"template", K_RAWOBJ, O(js_rjob, template_), NONE, NONE, NULL, NULL, F_REQ},
	{"replicas", K_I32, O(js_rjob, replicas), O(js_rjob, has_replicas), NONE, NULL, NULL, 0},
	{"dependsOn", K_LIST, O(js_rjob, depends_on), O(js_rjob, has_depends_on), O(js_rjob, n_depends_on),
	 &depends_on_type, NULL, 0},
};
static const struct type rjob_type = TYPE(js_rjob, "ReplicatedJob", rjob_fields, NONE, NULL);

static const struct field network_fields[] = {
	{"enableDNSHostnames", K_BOOL, O(js_network, enable_dns_hostnames),
	 O(js_network, has_enable_dns_hostnames), NONE, NULL, NULL, 0},
	{"subdomain", K_STR, O(js_network, subdomain), NONE, NONE, NULL, NULL, 0},
	{"publishNotReadyAddresses", K_BOOL, O(js_network, publish_not_ready_addresses),
	 O(js_network, has_publish_not_ready_addresses), NONE, NULL, NULL, 0},
};
static const struct type network_type = TYPE(js_network, "Network", network_fields, NONE, NULL);

static const struct field success_fields[] = {
	{"operator", K_ENUM, O(js_success_policy, operator_), O(js_success_policy, has_operator), NONE, NULL,
	 &js__success_op_table, F_REQ},
	{"targetReplicatedJobs", K_STRLIST, O(js_success_policy, target_replicated_jobs), NONE, NONE, NULL,
	 NULL, 0},
};
static const struct type success_type = TYPE(js_success_policy, "SuccessPolicy", success_fields, NONE, NULL);

static const struct field rule_fields[] = {
	{"name", K_STR, O(js_fp_rule, name), NONE, NONE, NULL, NULL, 0},
	{"action", K_ENUM, O(js_fp_rule, action), O(js_fp_rule, has_action), NONE, NULL, &js__fp_action_table,
	 F_REQ},
	{"onJobFailureReasons", K_STRLIST, O(js_fp_rule, on_job_failure_reasons), NONE, NONE, NULL, NULL, 0},
	{"onJobFailureMessagePatterns", K_STRLIST, O(js_fp_rule, on_job_failure_message_patterns), NONE, NONE,
	 NULL, NULL, 0},
	{"targetReplicatedJobs", K_STRLIST, O(js_fp_rule, target_replicated_jobs), NONE, NONE, NULL, NULL, 0},
};
static const struct type rule_type = TYPE(js_fp_rule, "FailurePolicyRule", rule_fields, NONE, NULL);

static const struct field failure_fields[] = {
	{"maxRestarts", K_I32, O(js_failure_policy, max_restarts), O(js_failure_policy, has_max_restarts),
	 NONE, NULL, NULL, 0},
	{"restartStrategy", K_ENUM, O(js_failure_policy, restart_strategy),
	 O(js_failure_policy, has_restart_strategy), NONE, NULL, &js__restart_strategy_table, 0},
	{"rules", K_LIST, O(js_failure_policy, rules), O(js_failure_policy, has_rules),
	 O(js_failure_policy, n_rules), &rule_type, NULL, 0},
};
static const struct type failure_type = TYPE(js_failure_policy, "FailurePolicy", failure_fields, NONE, NULL);

static const struct field startup_fields[] = {
	{"startupPolicyOrder", K_ENUM, O(js_startup_policy, order), O(js_startup_policy, has_order), NONE,
	 NULL, &js__startup_order_table, F_REQ},
};
static const struct type startup_type = TYPE(js_startup_policy, "StartupPolicy", startup_fields, NONE, NULL);

static const struct field coordinator_fields[] = {
	{"replicatedJob", K_STR, O(js_coordinator, replicated_job), NONE, NONE, NULL, NULL, F_REQ},
	{"jobIndex", K_I32, O(js_coordinator, job_index), O(js_coordinator, has_job_index), NONE, NULL, NULL,
	 0},
	{"podIndex", K_I32, O(js_coordinator, pod_index), O(js_coordinator, has_pod_index), NONE, NULL, NULL,
	 0},
};
static const struct type coordinator_type = TYPE(js_coordinator, "Coordinator", coordinator_fields, NONE, NULL);

static const struct field retention_fields[] = {
	{"whenDeleted", K_ENUM, O(js_retention_policy, when_deleted), O(js_retention_policy, has_when_deleted),
	 NONE, NULL, &js__when_deleted_table, 0},
};
static const struct type retention_type =
	TYPE(js_retention_policy, "VolumeRetentionPolicy", retention_fields, NONE, NULL);

static const struct field vcp_fields[] = {
	{"templates", K_RAWARR, O(js_vcp, templates), NONE, NONE, NULL, NULL, 0},
	{"retentionPolicy", K_OBJ, O(js_vcp, retention_policy), NONE, NONE, &retention_type, NULL, 0},
};
static const struct type vcp_type = TYPE(js_vcp, "VolumeClaimPolicy", vcp_fields, NONE, NULL);

static const struct field spec_fields[] = {
	{"replicatedJobs", K_LIST, O(js_spec, replicated_jobs), O(js_spec, has_replicated_jobs),
	 O(js_spec, n_replicated_jobs), &rjob_type, NULL, 0},
	{"network", K_OBJ, O(js_spec, network), NONE, NONE, &network_type, NULL, 0},
	{"successPolicy", K_OBJ, O(js_spec, success_policy), NONE, NONE, &success_type, NULL, 0},
	{"failurePolicy", K_OBJ, O(js_spec, failure_policy), NONE, NONE, &failure_type, NULL, 0},
	{"startupPolicy", K_OBJ, O(js_spec, startup_policy), NONE, NONE, &startup_type, NULL, 0},
	{"suspend", K_BOOL, O(js_spec, suspend), O(js_spec, has_suspend), NONE, NULL, NULL, 0},
	{"coordinator", K_OBJ, O(js_spec, coordinator), NONE, NONE, &coordinator_type, NULL, 0},
	{"managedBy", K_STR, O(js_spec, managed_by), NONE, NONE, NULL, NULL, 0},
	{"ttlSecondsAfterFinished", K_I32, O(js_spec, ttl_seconds_after_finished),
	 O(js_spec, has_ttl_seconds_after_finished), NONE, NULL, NULL, 0},
	{"activeDeadlineSeconds", K_I64, O(js_spec, active_deadline_seconds),
	 O(js_spec, has_active_deadline_seconds), NONE, NULL, NULL, 0},
	{"volumeClaimPolicies", K_LIST, O(js_spec, volume_claim_policies), O(js_spec, has_volume_claim_policies),
	 O(js_spec, n_volume_claim_policies), &vcp_type, NULL, 0},
};
static const struct type spec_type = TYPE(js_spec, "JobSetSpec", spec_fields, NONE, NULL);

static const struct field condition_fields[] = {
	{"type", K_STR, O(js_condition, type), NONE, NONE, NULL, NULL, F_REQ},
	{"status", K_STR, O(js_condition, status), NONE, NONE, NULL, NULL, F_REQ},
	{"observedGeneration", K_I64, O(js_condition, observed_generation),
	 O(js_condition, has_observed_generation), NONE, NULL, NULL, 0},
	{"lastTransitionTime", K_STR, O(js_condition, last_transition_time), NONE, NONE, NULL, NULL, 0},
	{"reason", K_STR, O(js_condition, reason), NONE, NONE, NULL, NULL, 0},
	{"message", K_STR, O(js_condition, message), NONE, NONE, NULL, NULL, 0},
};
static const struct type condition_type = TYPE(js_condition, "Condition", condition_fields, NONE, NULL);

static const struct field rjs_fields[] = {
	{"name", K_STR, O(js_rjob_status, name), NONE, NONE, NULL, NULL, F_REQ},
	{"ready", K_I32, O(js_rjob_status, ready), NONE, NONE, NULL, NULL, 0},
	{"succeeded", K_I32, O(js_rjob_status, succeeded), NONE, NONE, NULL, NULL, 0},
	{"failed", K_I32, O(js_rjob_status, failed), NONE, NONE, NULL, NULL, 0},
	{"active", K_I32, O(js_rjob_status, active), NONE, NONE, NULL, NULL, 0},
	{"suspended", K_I32, O(js_rjob_status, suspended), NONE, NONE, NULL, NULL, 0},
	{"jobRestarts", K_I32LIST, O(js_rjob_status, job_restarts), NONE, NONE, NULL, NULL, 0},
	{"jobRestartsCountTowardsMax", K_I32LIST, O(js_rjob_status, job_restarts_count_towards_max), NONE,
	 NONE, NULL, NULL, 0},
};
static const struct type rjs_type = TYPE(js_rjob_status, "ReplicatedJobStatus", rjs_fields, NONE, NULL);

static const struct field status_fields[] = {
	{"conditions", K_LIST, O(js_status, conditions), O(js_status, has_conditions), O(js_status, n_conditions),
	 &condition_type, NULL, 0},
	{"restarts", K_I32, O(js_status, restarts), NONE, NONE, NULL, NULL, 0},
	{"restartsCountTowardsMax", K_I32, O(js_status, restarts_count_towards_max), NONE, NONE, NULL, NULL,
	 F_OMITZERO},
	{"terminalState", K_STR, O(js_status, terminal_state), NONE, NONE, NULL, NULL, 0},
	{"replicatedJobsStatus", K_LIST, O(js_status, replicated_jobs_status),
	 O(js_status, has_replicated_jobs_status), O(js_status, n_replicated_jobs_status), &rjs_type, NULL, 0},
	{"previousInPlaceRestartAttempt", K_I32, O(js_status, previous_in_place_restart_attempt),
	 O(js_status, has_previous_in_place_restart_attempt), NONE, NULL, NULL, 0},
	{"currentInPlaceRestartAttempt", K_I32, O(js_status, current_in_place_restart_attempt),
	 O(js_status, has_current_in_place_restart_attempt), NONE, NULL, NULL, 0},
	{"executionAttempts", K_I32, O(js_status, execution_attempts), O(js_status, has_execution_attempts), NONE,
	 NULL, NULL, 0},
	{"startTime", K_STR, O(js_status, start_time), NONE, NONE, NULL, NULL, 0},
};
static const struct type status_type = TYPE(js_status, "JobSetStatus", status_fields, NONE, NULL);

static const struct field jobset_fields[] = {
	{"apiVersion", K_STR, O(js_jobset, api_version), NONE, NONE, NULL, NULL, 0},
	{"kind", K_STR, O(js_jobset, kind), NONE, NONE, NULL, NULL, 0},
	{"metadata", K_INLINE, O(js_jobset, meta), NONE, NONE, &meta_type, NULL, 0},
	{"spec", K_INLINE, O(js_jobset, spec), O(js_jobset, has_spec), NONE, &spec_type, NULL, 0},
	{"status", K_INLINE, O(js_jobset, status), O(js_jobset, has_status), NONE, &status_type, NULL, 0},
};
static const struct type jobset_type = TYPE(js_jobset, "JobSet", jobset_fields, NONE, NULL);

/* ---- slot access ---- */

static inline void *at(void *base, size_t off) { return (char *)base + off; }
static inline const void *cat(const void *base, size_t off) { return (const char *)base + off; }

static void set_has(void *obj, const struct field *f, bool v)
{
	if (f->has != NONE)
		*(bool *)at(obj, f->has) = v;
}

static bool get_has(const void *obj, const struct field *f)
{
	return f->has == NONE ? true : *(const bool *)cat(obj, f->has);
}

/* ---- decode ---- */

struct dec {
	enum js_codec_mode mode;
	struct js_diag *diag;
	struct js_buf path;
	int errors;
};

const char *js_codec_json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	case JSON_NULL: return "null";
	}
	return "value";
}

static char *render_value(const json_t *v)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	if (!s)
		return js_xstrdup("?");
	if (strlen(s) > 200) {
		/* Keep diagnostics readable when the offending value is a subtree. */
		s[197] = s[198] = s[199] = '.';
		s[200] = '\0';
	}
	return s;
}

static void err_type(struct dec *d, const json_t *v, const char *want)
{
	char *val = render_value(v);
	const char *hint = "";
	if (json_is_boolean(v) && strcmp(want, "string") == 0)
		hint = " (YAML 1.1 reads unquoted yes/no/on/off/y/n as booleans; quote the value)";
	else if ((json_is_integer(v) || json_is_real(v)) && strcmp(want, "string") == 0)
		hint = " (quote the value to make it a string)";
	js_diag_add(d->diag, JS_DIAG_TYPE, js_buf_str(&d->path), val, "expected %s, got %s%s", want,
		    js_codec_json_type_name(v), hint);
	free(val);
	d->errors++;
}

static size_t path_push_key(struct dec *d, const char *key)
{
	size_t mark = d->path.len;
	int r = d->path.len ? js_buf_printf(&d->path, ".%s", key) : js_buf_puts(&d->path, key);
	(void)r; /* path buffer is unbounded in practice: depth <= JS_LIMIT_NESTING_DEPTH */
	return mark;
}

static size_t path_push_index(struct dec *d, size_t i)
{
	size_t mark = d->path.len;
	int r = js_buf_printf(&d->path, "[%zu]", i);
	(void)r;
	return mark;
}

static size_t path_push_mapkey(struct dec *d, const char *key)
{
	size_t mark = d->path.len;
	int r = js_buf_printf(&d->path, "[%s]", key);
	(void)r;
	return mark;
}

static void path_pop(struct dec *d, size_t mark)
{
	d->path.len = mark;
	if (d->path.p)
		d->path.p[mark] = '\0';
}

/* Levenshtein distance, bounded: names are short (< 64), so O(n*m) is fine. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 64 || lb > 64)
		return SIZE_MAX;
	size_t prev[65], cur[65];
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			char ca = a[i - 1], cb = b[j - 1];
			if (ca >= 'A' && ca <= 'Z')
				ca = (char)(ca - 'A' + 'a');
			if (cb >= 'A' && cb <= 'Z')
				cb = (char)(cb - 'A' + 'a');
			size_t cost = ca == cb ? 0 : 1;
			size_t m = prev[j] + 1;
			if (cur[j - 1] + 1 < m)
				m = cur[j - 1] + 1;
			if (prev[j - 1] + cost < m)
				m = prev[j - 1] + cost;
			cur[j] = m;
		}
		memcpy(prev, cur, sizeof(size_t) * (lb + 1));
	}
	return prev[lb];
}

static const char *suggest(const struct type *t, const char *key)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX;
	size_t limit = strlen(key) <= 4 ? 1 : 3;
	for (size_t i = 0; i < t->nfields; i++) {
		size_t dist = edit_distance(key, t->fields[i].json);
		if (dist < best_d) {
			best_d = dist;
			best = t->fields[i].json;
		}
	}
	return best_d <= limit ? best : NULL;
}

static bool in_list(const char *const *list, const char *key)
{
	for (; list && *list; list++)
		if (strcmp(*list, key) == 0)
			return true;
	return false;
}

static void decode_obj(struct dec *d, const json_t *v, const struct type *t, void *obj, int depth);

static void decode_strlist(struct dec *d, const json_t *v, struct js_strlist *l)
{
	if (!json_is_array(v)) {
		err_type(d, v, "a list of strings");
		return;
	}
	l->has = true;
	l->n = json_array_size(v);
	l->items = js_xcalloc(l->n, sizeof(char *));
	size_t i;
	json_t *e;
	json_array_foreach(v, i, e) {
		size_t mark = path_push_index(d, i);
		if (json_is_string(e))
			l->items[i] = js_xstrdup(json_string_value(e));
		else {
			l->items[i] = js_xstrdup("");
			err_type(d, e, "string");
		}
		path_pop(d, mark);
	}
}

static bool decode_int(struct dec *d, const json_t *v, int64_t lo, int64_t hi, int64_t *out)
{
	if (!json_is_integer(v)) {
		err_type(d, v, "integer");
		return false;
	}
	json_int_t x = json_integer_value(v);
	if (x < lo || x > hi) {
		char *val = render_value(v);
		js_diag_add(d->diag, JS_DIAG_INVALID, js_buf_str(&d->path), val,
			    "must be a %s integer (between %lld and %lld)", hi == INT32_MAX ? "32-bit" : "64-bit",
			    (long long)lo, (long long)hi);
		free(val);
		d->errors++;
		return false;
	}
	*out = x;
	return true;
}

static void decode_i32list(struct dec *d, const json_t *v, struct js_i32list *l)
{
	if (!json_is_array(v)) {
		err_type(d, v, "a list of integers");
		return;
	}
	l->has = true;
	l->n = json_array_size(v);
	l->items = js_xcalloc(l->n, sizeof(int32_t));
	size_t i;
	json_t *e;
	json_array_foreach(v, i, e) {
		size_t mark = path_push_index(d, i);
		int64_t x;
		if (decode_int(d, e, INT32_MIN, INT32_MAX, &x))
			l->items[i] = (int32_t)x;
		path_pop(d, mark);
	}
}

static void decode_enum(struct dec *d, const json_t *v, const struct field *f, void *obj)
{
	if (!json_is_string(v)) {
		err_type(d, v, "string");
		return;
	}
	const char *s = json_string_value(v);
	for (int i = 0; i < f->en->count; i++) {
		if (strcmp(f->en->names[i], s) == 0) {
			*(int *)at(obj, f->off) = i;
			set_has(obj, f, true);
			return;
		}
	}
	struct js_buf allowed;
	js_buf_init(&allowed, 0);
	for (int i = 0; i < f->en->count; i++)
		if (js_buf_printf(&allowed, "%s\"%s\"", i ? ", " : "", f->en->names[i]) < 0)
			break;
	char *val = render_value(v);
	js_diag_add(d->diag, JS_DIAG_NOT_SUPPORTED, js_buf_str(&d->path), val, "supported values: %s",
		    js_buf_str(&allowed));
	free(val);
	js_buf_done(&allowed);
	d->errors++;
}

static void decode_strmap(struct dec *d, const json_t *v, json_t **slot)
{
	if (!json_is_object(v)) {
		err_type(d, v, "a map of strings");
		return;
	}
	const char *k;
	json_t *e;
	json_object_foreach(js_json_unconst(v), k, e) {
		if (!json_is_string(e)) {
			size_t mark = path_push_mapkey(d, k);
			err_type(d, e, "string");
			path_pop(d, mark);
		}
	}
	*slot = json_deep_copy(v);
}

static void decode_field(struct dec *d, const json_t *v, const struct field *f, void *obj, int depth)
{
	int64_t x;
	switch (f->kind) {
	case K_STR:
		if (json_is_string(v))
			*(char **)at(obj, f->off) = js_xstrdup(json_string_value(v));
		else
			err_type(d, v, "string");
		break;
	case K_BOOL:
		if (json_is_boolean(v)) {
			*(bool *)at(obj, f->off) = json_is_true(v);
			set_has(obj, f, true);
		} else {
			err_type(d, v, "boolean");
		}
		break;
	case K_I32:
		if (decode_int(d, v, INT32_MIN, INT32_MAX, &x)) {
			*(int32_t *)at(obj, f->off) = (int32_t)x;
			set_has(obj, f, true);
		}
		break;
	case K_I64:
		if (decode_int(d, v, INT64_MIN, INT64_MAX, &x)) {
			*(int64_t *)at(obj, f->off) = x;
			set_has(obj, f, true);
		}
		break;
	case K_ENUM:
		decode_enum(d, v, f, obj);
		break;
	case K_OBJ:
		if (!json_is_object(v)) {
			err_type(d, v, "object");
			break;
		}
		*(void **)at(obj, f->off) = js_xcalloc(1, f->sub->size);
		decode_obj(d, v, f->sub, *(void **)at(obj, f->off), depth + 1);
		break;
	case K_INLINE:
		if (!json_is_object(v)) {
			err_type(d, v, "object");
			break;
		}
		set_has(obj, f, true);
		decode_obj(d, v, f->sub, at(obj, f->off), depth + 1);
		break;
	case K_LIST: {
		if (!json_is_array(v)) {
			err_type(d, v, "list");
			break;
		}
		size_t n = json_array_size(v);
		char *items = js_xcalloc(n, f->sub->size);
		*(void **)at(obj, f->off) = items;
		*(size_t *)at(obj, f->cnt) = n;
		set_has(obj, f, true);
		for (size_t i = 0; i < n; i++) {
			size_t mark = path_push_index(d, i);
			const json_t *e = json_array_get(v, i);
			if (json_is_object(e))
				decode_obj(d, e, f->sub, items + i * f->sub->size, depth + 1);
			else
				err_type(d, e, "object");
			path_pop(d, mark);
		}
		break;
	}
	case K_STRLIST:
		decode_strlist(d, v, at(obj, f->off));
		break;
	case K_I32LIST:
		decode_i32list(d, v, at(obj, f->off));
		break;
	case K_RAWOBJ:
		if (json_is_object(v))
			*(json_t **)at(obj, f->off) = json_deep_copy(v);
		else
			err_type(d, v, "object");
		break;
	case K_RAWARR:
		if (json_is_array(v))
			*(json_t **)at(obj, f->off) = json_deep_copy(v);
		else
			err_type(d, v, "list");
		break;
	case K_STRMAP:
		decode_strmap(d, v, at(obj, f->off));
		break;
	}
}

static void decode_obj(struct dec *d, const json_t *v, const struct type *t, void *obj, int depth)
{
	if (depth > JS_LIMIT_NESTING_DEPTH) {
		js_diag_add(d->diag, JS_DIAG_LIMIT, js_buf_str(&d->path), NULL, "nesting deeper than %d levels",
			    JS_LIMIT_NESTING_DEPTH);
		d->errors++;
		return;
	}
	for (size_t i = 0; i < t->nfields; i++) {
		const struct field *f = &t->fields[i];
		const json_t *fv = json_object_get(v, f->json);
		size_t mark = path_push_key(d, f->json);
		if (fv && !json_is_null(fv)) {
			decode_field(d, fv, f, obj, depth);
		} else if ((f->flags & F_REQ) && d->mode == JS_CODEC_STRICT) {
			js_diag_add(d->diag, JS_DIAG_REQUIRED, js_buf_str(&d->path), NULL, "%s.%s must be set",
				    t->name, f->json);
			d->errors++;
		}
		path_pop(d, mark);
	}
	const char *key;
	json_t *val;
	json_object_foreach(js_json_unconst(v), key, val) {
		bool known = false;
		for (size_t i = 0; i < t->nfields && !known; i++)
			known = strcmp(t->fields[i].json, key) == 0;
		if (known)
			continue;
		bool keep = t->extra != NONE &&
			    (d->mode == JS_CODEC_LENIENT || in_list(t->extra_known, key));
		if (keep) {
			json_t **extra = at(obj, t->extra);
			if (!*extra)
				*extra = json_object();
			json_object_set_new(*extra, key, json_deep_copy(val));
			continue;
		}
		if (d->mode == JS_CODEC_LENIENT)
			continue;
		size_t mark = path_push_key(d, key);
		const char *s = suggest(t, key);
		if (s)
			js_diag_add(d->diag, JS_DIAG_UNKNOWN_FIELD, js_buf_str(&d->path), NULL,
				    "%s has no field \"%s\"; did you mean \"%s\"?", t->name, key, s);
		else
			js_diag_add(d->diag, JS_DIAG_UNKNOWN_FIELD, js_buf_str(&d->path), NULL,
				    "%s has no field \"%s\"", t->name, key);
		d->errors++;
		path_pop(d, mark);
	}
}

/* ---- release ---- */

static void release_obj(const struct type *t, void *obj);

static void release_field(const struct field *f, void *obj)
{
	switch (f->kind) {
	case K_STR:
		free(*(char **)at(obj, f->off));
		break;
	case K_BOOL:
	case K_I32:
	case K_I64:
	case K_ENUM:
		break;
	case K_OBJ: {
		void *p = *(void **)at(obj, f->off);
		if (p) {
			release_obj(f->sub, p);
			free(p);
		}
		break;
	}
	case K_INLINE:
		release_obj(f->sub, at(obj, f->off));
		break;
	case K_LIST: {
		char *items = *(char **)at(obj, f->off);
		size_t n = *(size_t *)at(obj, f->cnt);
		for (size_t i = 0; items && i < n; i++)
			release_obj(f->sub, items + i * f->sub->size);
		free(items);
		break;
	}
	case K_STRLIST: {
		struct js_strlist *l = at(obj, f->off);
		for (size_t i = 0; l->items && i < l->n; i++)
			free(l->items[i]);
		free(l->items);
		break;
	}
	case K_I32LIST:
		free(((struct js_i32list *)at(obj, f->off))->items);
		break;
	case K_RAWOBJ:
	case K_RAWARR:
	case K_STRMAP:
		json_decref(*(json_t **)at(obj, f->off));
		break;
	}
}

static void release_obj(const struct type *t, void *obj)
{
	for (size_t i = 0; i < t->nfields; i++)
		release_field(&t->fields[i], obj);
	if (t->extra != NONE)
		json_decref(*(json_t **)at(obj, t->extra));
	memset(obj, 0, t->size);
}

/* ---- copy ---- */

/*
 * A copy walks the same tables as encode and decode, and keeps exactly what
 * an encode/decode round trip would keep: a value whose presence flag is off
 * is not copied. Verbatim JSON (templates, labels, unmodelled metadata) is
 * shared by reference, not copied: nothing mutates it in place except
 * defaulting, which replaces a template with its own copy before adding to
 * it (api/defaults.c). Strings and lists are copied.
 */

static void copy_obj(const struct type *t, void *dst, const void *src);

static char *dup_or_null(const char *s)
{
	return s ? js_xstrdup(s) : NULL;
}

static void copy_field(const struct field *f, void *dst, const void *src)
{
	if (!get_has(src, f))
		return; /* absent: the zeroed destination says so */
	set_has(dst, f, true);
	switch (f->kind) {
	case K_STR:
		*(char **)at(dst, f->off) = dup_or_null(*(char *const *)cat(src, f->off));
		break;
	case K_BOOL:
		*(bool *)at(dst, f->off) = *(const bool *)cat(src, f->off);
		break;
	case K_I32:
		*(int32_t *)at(dst, f->off) = *(const int32_t *)cat(src, f->off);
		break;
	case K_I64:
		*(int64_t *)at(dst, f->off) = *(const int64_t *)cat(src, f->off);
		break;
	case K_ENUM:
		*(int *)at(dst, f->off) = *(const int *)cat(src, f->off);
		break;
	case K_OBJ: {
		const void *p = *(void *const *)cat(src, f->off);
		if (p) {
			*(void **)at(dst, f->off) = js_xcalloc(1, f->sub->size);
			copy_obj(f->sub, *(void **)at(dst, f->off), p);
		}
		break;
	}
	case K_INLINE:
		copy_obj(f->sub, at(dst, f->off), cat(src, f->off));
		break;
	case K_LIST: {
		const char *items = *(char *const *)cat(src, f->off);
		size_t n = *(const size_t *)cat(src, f->cnt);
		char *out = n ? js_xcalloc(n, f->sub->size) : NULL;
		for (size_t i = 0; i < n; i++)
			copy_obj(f->sub, out + i * f->sub->size, items + i * f->sub->size);
		*(void **)at(dst, f->off) = out;
		*(size_t *)at(dst, f->cnt) = n;
		break;
	}
	case K_STRLIST: {
		const struct js_strlist *l = cat(src, f->off);
		struct js_strlist *o = at(dst, f->off);
		*o = (struct js_strlist){.has = l->has, .n = l->has ? l->n : 0};
		o->items = o->n ? js_xcalloc(o->n, sizeof(char *)) : NULL;
		for (size_t i = 0; i < o->n; i++)
			o->items[i] = dup_or_null(l->items[i]);
		break;
	}
	case K_I32LIST: {
		const struct js_i32list *l = cat(src, f->off);
		struct js_i32list *o = at(dst, f->off);
		*o = (struct js_i32list){.has = l->has, .n = l->has ? l->n : 0};
		if (o->n) {
			o->items = js_xmalloc(o->n * sizeof(int32_t));
			memcpy(o->items, l->items, o->n * sizeof(int32_t));
		}
		break;
	}
	case K_RAWOBJ:
	case K_RAWARR:
	case K_STRMAP:
		*(json_t **)at(dst, f->off) = json_incref(*(json_t *const *)cat(src, f->off));
		break;
	}
}

static void copy_obj(const struct type *t, void *dst, const void *src)
{
	for (size_t i = 0; i < t->nfields; i++)
		copy_field(&t->fields[i], dst, src);
	if (t->extra != NONE)
		*(json_t **)at(dst, t->extra) = json_incref(*(json_t *const *)cat(src, t->extra));
}

/* ---- encode ---- */

static json_t *encode_obj(const struct type *t, const void *obj);

static json_t *encode_field(const struct field *f, const void *obj)
{
	switch (f->kind) {
	case K_STR: {
		const char *s = *(char *const *)cat(obj, f->off);
		return s ? json_string(s) : NULL;
	}
	case K_BOOL:
		return get_has(obj, f) ? json_boolean(*(const bool *)cat(obj, f->off)) : NULL;
	case K_I32: {
		int32_t x = *(const int32_t *)cat(obj, f->off);
		if (!get_has(obj, f) || ((f->flags & F_OMITZERO) && x == 0))
			return NULL;
		return json_integer(x);
	}
	case K_I64:
		return get_has(obj, f) ? json_integer(*(const int64_t *)cat(obj, f->off)) : NULL;
	case K_ENUM: {
		if (!get_has(obj, f))
			return NULL;
		int x = *(const int *)cat(obj, f->off);
		return json_string(x >= 0 && x < f->en->count ? f->en->names[x] : "");
	}
	case K_OBJ: {
		const void *p = *(void *const *)cat(obj, f->off);
		return p ? encode_obj(f->sub, p) : NULL;
	}
	case K_INLINE:
		if (f->has != NONE && !get_has(obj, f))
			return NULL;
		return encode_obj(f->sub, cat(obj, f->off));
	case K_LIST: {
		if (!get_has(obj, f))
			return NULL;
		const char *items = *(char *const *)cat(obj, f->off);
		size_t n = *(const size_t *)cat(obj, f->cnt);
		json_t *a = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, encode_obj(f->sub, items + i * f->sub->size));
		return a;
	}
	case K_STRLIST: {
		const struct js_strlist *l = cat(obj, f->off);
		if (!l->has)
			return NULL;
		json_t *a = json_array();
		for (size_t i = 0; i < l->n; i++)
			json_array_append_new(a, json_string(l->items[i]));
		return a;
	}
	case K_I32LIST: {
		const struct js_i32list *l = cat(obj, f->off);
		if (!l->has)
			return NULL;
		json_t *a = json_array();
		for (size_t i = 0; i < l->n; i++)
			json_array_append_new(a, json_integer(l->items[i]));
		return a;
	}
	case K_RAWOBJ:
	case K_RAWARR:
	case K_STRMAP: {
		json_t *j = *(json_t *const *)cat(obj, f->off);
		return j ? json_deep_copy(j) : NULL;
	}
	}
	return NULL;
}

static json_t *encode_obj(const struct type *t, const void *obj)
{
	json_t *o = json_object();
	if (t->extra != NONE) {
		json_t *extra = *(json_t *const *)cat(obj, t->extra);
		if (extra)
			json_object_update(o, extra);
	}
	for (size_t i = 0; i < t->nfields; i++) {
		json_t *v = encode_field(&t->fields[i], obj);
		if (v)
			json_object_set_new(o, t->fields[i].json, v);
	}
	return o;
}

/* ---- public ---- */

int js_codec_decode_jobset(const json_t *root, enum js_codec_mode mode, struct js_diag *diag,
			   struct js_jobset **ret_js)
{
	struct dec d = {.mode = mode, .diag = diag, .errors = 0};
	js_buf_init(&d.path, 0);
	if (!json_is_object(root)) {
		err_type(&d, root, "object");
		js_buf_done(&d.path);
		return JS_EINVALID;
	}
	struct js_jobset *js = js_xcalloc(1, sizeof(*js));
	decode_obj(&d, root, &jobset_type, js, 0);
	js_buf_done(&d.path);
	if (d.errors) {
		js_jobset_free(js);
		return JS_EINVALID;
	}
	*ret_js = js;
	return 0;
}

json_t *js_codec_encode_jobset(const struct js_jobset *js)
{
	return encode_obj(&jobset_type, js);
}

json_t *js_codec_encode_status(const struct js_status *st)
{
	return encode_obj(&status_type, st);
}

struct js_jobset *js_jobset_new(void)
{
	struct js_jobset *js = js_xcalloc(1, sizeof(*js));
	js->api_version = js_xstrdup(JS_API_VERSION);
	js->kind = js_xstrdup(JS_KIND);
	return js;
}

struct js_jobset *js_jobset_free(struct js_jobset *js)
{
	if (!js)
		return NULL;
	release_obj(&jobset_type, js);
	free(js);
	return NULL;
}

struct js_jobset *js_jobset_copy(const struct js_jobset *js)
{
	struct js_jobset *out = js_xcalloc(1, sizeof(*out));
	copy_obj(&jobset_type, out, js);
	return out;
}

/* ---- OpenAPI schema (for the CRD generator, tools/crdgen) ---- */

static json_t *schema_of_type(const struct type *t, int depth);

static json_t *schema_of_field(const struct field *f, int depth)
{
	switch (f->kind) {
	case K_STR:
		return json_pack("{s:s}", "type", "string");
	case K_BOOL:
		return json_pack("{s:s}", "type", "boolean");
	case K_I32:
		return json_pack("{s:s,s:s}", "type", "integer", "format", "int32");
	case K_I64:
		return json_pack("{s:s,s:s}", "type", "integer", "format", "int64");
	case K_ENUM: {
		json_t *en = json_array();
		for (int i = 0; i < f->en->count; i++)
			json_array_append_new(en, json_string(f->en->names[i]));
		return json_pack("{s:s,s:o}", "type", "string", "enum", en);
	}
	case K_OBJ:
	case K_INLINE:
		return schema_of_type(f->sub, depth + 1);
	case K_LIST:
		return json_pack("{s:s,s:o}", "type", "array", "items", schema_of_type(f->sub, depth + 1));
	case K_STRLIST:
		return json_pack("{s:s,s:{s:s}}", "type", "array", "items", "type", "string");
	case K_I32LIST:
		return json_pack("{s:s,s:{s:s,s:s}}", "type", "array", "items", "type", "integer", "format", "int32");
	case K_RAWOBJ:
		return json_pack("{s:s,s:b}", "type", "object", "x-kubernetes-preserve-unknown-fields", 1);
	case K_RAWARR:
		return json_pack("{s:s,s:{s:s,s:b}}", "type", "array", "items", "type", "object",
				 "x-kubernetes-preserve-unknown-fields", 1);
	case K_STRMAP:
		return json_pack("{s:s,s:{s:s}}", "type", "object", "additionalProperties", "type", "string");
	}
	return json_object();
}

static json_t *schema_of_type(const struct type *t, int depth)
{
	json_t *s = json_pack("{s:s}", "type", "object");
	if (depth > JS_LIMIT_NESTING_DEPTH)
		return s;
	json_t *props = json_object(), *req = json_array();
	for (size_t i = 0; i < t->nfields; i++) {
		const struct field *f = &t->fields[i];
		json_object_set_new(props, f->json, schema_of_field(f, depth));
		if (f->flags & F_REQ)
			json_array_append_new(req, json_string(f->json));
	}
	json_object_set_new(s, "properties", props);
	if (json_array_size(req))
		json_object_set_new(s, "required", req);
	else
		json_decref(req);
	if (t->extra != NONE)
		json_object_set_new(s, "x-kubernetes-preserve-unknown-fields", json_true());
	return s;
}

json_t *js_codec_openapi_schema(void)
{
	return schema_of_type(&jobset_type, 0);
}
