/*
 * quarantine.c - node quarantine rules, list and rendering (ours, gate
 * NodeQuarantine). See quarantine.h and docs/node-quarantine.md.
 */
#include "api/quarantine.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "api/validate.h"
#include "base/json.h"
#include "base/parse.h"

static const char *const rule_keys[] = {JS_ANN_NQ_EXIT_CODES, JS_ANN_NQ_POD_CONDITIONS, JS_ANN_NQ_NODE_LOST,
					JS_ANN_NQ_ATTEMPTS};

bool js_quarantine_rules_present(const json_t *annotations)
{
	for (size_t i = 0; i < JS_ARRAY_SIZE(rule_keys); i++)
		if (json_object_get(annotations, rule_keys[i]))
			return true;
	return false;
}

static void bad(struct js_diag *diag, const char *key, const char *val, const char *msg)
{
	if (!diag)
		return;
	char *path = js_buf_format("metadata.annotations[%s]", key);
	/* A huge value is shown cut: the message is for a person. */
	char *shown = js_buf_format("%.*s%s", 120, val ? val : "", val && strlen(val) > 120 ? "..." : "");
	(void)js_diag_add(diag, JS_DIAG_INVALID, path, shown, "%s", msg);
	free(shown);
	free(path);
}

static void trim(const char **p, size_t *n)
{
	while (*n > 0 && (**p == ' ' || **p == '\t')) {
		(*p)++;
		(*n)--;
	}
	while (*n > 0 && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t'))
		(*n)--;
}

/* The next item of a comma list at *p, blanks around it trimmed; false at
 * the end. An empty item ("1,,2") is returned empty, for the caller to
 * refuse. */
static bool next_item(const char **p, const char **item, size_t *len)
{
	if (!**p)
		return false;
	size_t n = strcspn(*p, ",");
	*item = *p;
	*len = n;
	*p += n + ((*p)[n] == ',');
	trim(item, len);
	return true;
}

/* The string value of `key`, or NULL (absent). A value that is no string or
 * over JS_QUARANTINE_MAX_RULE_TEXT is reported and read as absent. */
static const char *rule_text(const json_t *ann, const char *key, struct js_diag *diag, int *r)
{
	const json_t *v = json_object_get(ann, key);
	if (!v)
		return NULL;
	const char *s = json_string_value(v);
	if (!s || strlen(s) > JS_QUARANTINE_MAX_RULE_TEXT) {
		bad(diag, key, s, "the value must be a string of at most 8192 bytes");
		*r = JS_EINVALID;
		return NULL;
	}
	return s;
}

static void read_exit_codes(const char *s, struct js_quarantine_rules *ret, struct js_diag *diag, int *r)
{
	size_t count = 0;
	const char *p = s, *item;
	size_t len;
	while (next_item(&p, &item, &len)) {
		int64_t code;
		if (js_parse_i64_in(item, len, 1, 255, &code) < 0) {
			bad(diag, JS_ANN_NQ_EXIT_CODES, s, "a comma-separated list of exit codes, each a whole number from 1 to 255 (e.g. \"134,137\")");
			*r = JS_EINVALID;
			return;
		}
		ret->exit_code[code] = true;
		count++;
	}
	if (count == 0) {
		bad(diag, JS_ANN_NQ_EXIT_CODES, s, "name at least one exit code from 1 to 255 (e.g. \"134,137\")");
		*r = JS_EINVALID;
	}
}

static void read_conditions(const char *s, struct js_quarantine_rules *ret, struct js_diag *diag, int *r)
{
	const char *p = s, *item;
	size_t len;
	while (next_item(&p, &item, &len)) {
		if (ret->n_conditions == JS_QUARANTINE_MAX_CONDITIONS) {
			bad(diag, JS_ANN_NQ_POD_CONDITIONS, s, "at most 16 pod condition types");
			*r = JS_EINVALID;
			return;
		}
		char *t = ret->conditions[ret->n_conditions];
		if (len == 0 || len > JS_QUARANTINE_MAX_TYPE) {
			bad(diag, JS_ANN_NQ_POD_CONDITIONS, s, "a comma-separated list of pod condition types (qualified names, e.g. \"DisruptionTarget\")");
			*r = JS_EINVALID;
			return;
		}
		memcpy(t, item, len);
		t[len] = '\0';
		if (!js_is_qualified_name(t)) {
			bad(diag, JS_ANN_NQ_POD_CONDITIONS, s, "a comma-separated list of pod condition types (qualified names, e.g. \"DisruptionTarget\")");
			*r = JS_EINVALID;
			return;
		}
		ret->n_conditions++;
	}
	if (ret->n_conditions == 0) {
		bad(diag, JS_ANN_NQ_POD_CONDITIONS, s, "name at least one pod condition type (e.g. \"DisruptionTarget\")");
		*r = JS_EINVALID;
	}
}

int js_quarantine_rules_read(const json_t *annotations, struct js_quarantine_rules *ret, struct js_diag *diag)
{
	int r = 0;
	memset(ret, 0, sizeof(*ret));
	ret->attempts = 1;
	if (!json_is_object(annotations))
		return 0;
	const char *s = rule_text(annotations, JS_ANN_NQ_EXIT_CODES, diag, &r);
	if (s)
		read_exit_codes(s, ret, diag, &r);
	s = rule_text(annotations, JS_ANN_NQ_POD_CONDITIONS, diag, &r);
	if (s)
		read_conditions(s, ret, diag, &r);
	s = rule_text(annotations, JS_ANN_NQ_NODE_LOST, diag, &r);
	if (s && js_parse_bool(s, strlen(s), &ret->node_lost) < 0) {
		bad(diag, JS_ANN_NQ_NODE_LOST, s, "the value is \"true\" or \"false\"");
		r = JS_EINVALID;
		ret->node_lost = false;
	}
	s = rule_text(annotations, JS_ANN_NQ_ATTEMPTS, diag, &r);
	int64_t a;
	if (s && js_parse_i64_in(s, strlen(s), 1, JS_QUARANTINE_MAX_ATTEMPTS, &a) < 0) {
		bad(diag, JS_ANN_NQ_ATTEMPTS, s, "the number of following attempts that avoid a node: a whole number from 1 to 1000");
		r = JS_EINVALID;
	} else if (s) {
		ret->attempts = (int32_t)a;
	}
	for (size_t c = 1; c < 256 && !ret->any; c++)
		ret->any = ret->exit_code[c];
	ret->any = ret->any || ret->n_conditions > 0 || ret->node_lost;
	return r;
}

bool js_quarantine_rules_condition(const struct js_quarantine_rules *rules, const char *type)
{
	for (size_t i = 0; type && i < rules->n_conditions; i++)
		if (strcmp(rules->conditions[i], type) == 0)
			return true;
	return false;
}

int js_quarantine_validate(const struct js_jobset *js, const struct js_gates *gates, struct js_diag *diag)
{
	const json_t *ann = js->meta.annotations;
	if (!js_quarantine_rules_present(ann))
		return 0;
	if (!gates->node_quarantine) {
		for (size_t i = 0; i < JS_ARRAY_SIZE(rule_keys); i++) {
			if (!json_object_get(ann, rule_keys[i]))
				continue;
			char *path = js_buf_format("metadata.annotations[%s]", rule_keys[i]);
			(void)js_diag_add(diag, JS_DIAG_FORBIDDEN, path, NULL,
					  "node quarantine needs the feature gate NodeQuarantine (alpha, off by "
					  "default; docs/node-quarantine.md)");
			free(path);
		}
		return JS_EINVALID;
	}
	struct js_quarantine_rules *rules = js_xmalloc(sizeof(*rules));
	int r = js_quarantine_rules_read(ann, rules, diag);
	if (r == 0 && !rules->any) {
		(void)js_diag_add(diag, JS_DIAG_INVALID, "metadata.annotations[" JS_ANN_NQ_ATTEMPTS "]", NULL,
				  "says how long a node is avoided, but no rule says which failure blames a node: set "
				  "%s, %s or %s: \"true\"",
				  JS_ANN_NQ_EXIT_CODES, JS_ANN_NQ_POD_CONDITIONS, JS_ANN_NQ_NODE_LOST);
		r = JS_EINVALID;
	}
	free(rules);
	return r;
}

int js_quarantine_validate_update(const struct js_jobset *old, const struct js_jobset *js,
				  const struct js_gates *gates, struct js_diag *diag)
{
	bool same = true;
	for (size_t i = 0; i < JS_ARRAY_SIZE(rule_keys) && same; i++) {
		const json_t *a = json_object_get(old->meta.annotations, rule_keys[i]);
		const json_t *b = json_object_get(js->meta.annotations, rule_keys[i]);
		same = (!a && !b) || (a && b && json_equal(a, b));
	}
	return same ? 0 : js_quarantine_validate(js, gates, diag);
}

/* ---- the list ---- */

int js_quarantine_list_find(const struct js_quarantine_list *l, const char *node)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->items[i].node, node) == 0)
			return (int)i;
	return -1;
}

/* One `node:until:reason` of `len` bytes at `p` into *e. */
static bool parse_entry(const char *p, size_t len, struct js_quarantine_entry *e)
{
	const char *c1 = memchr(p, ':', len);
	if (!c1 || (size_t)(c1 - p) > JS_QUARANTINE_MAX_NODE || c1 == p)
		return false;
	size_t rest = len - (size_t)(c1 - p) - 1;
	const char *c2 = memchr(c1 + 1, ':', rest);
	if (!c2)
		return false;
	memset(e, 0, sizeof(*e));
	memcpy(e->node, p, (size_t)(c1 - p));
	if (!js_is_dns1123_subdomain(e->node))
		return false;
	int64_t until;
	if (js_parse_i64_in(c1 + 1, (size_t)(c2 - c1 - 1), 0, INT32_MAX, &until) < 0)
		return false;
	e->until = (int32_t)until;
	const char *why = c2 + 1;
	size_t wn = len - (size_t)(why - p);
	static const char ec[] = "exitCode=", pc[] = "podCondition=", nl[] = "nodeLost";
	if (wn > sizeof(ec) - 1 && memcmp(why, ec, sizeof(ec) - 1) == 0) {
		int64_t code;
		if (js_parse_i64_in(why + sizeof(ec) - 1, wn - (sizeof(ec) - 1), 1, 255, &code) < 0)
			return false;
		e->why = JS_QUARANTINE_EXIT_CODE;
		e->exit_code = (int32_t)code;
		return true;
	}
	if (wn > sizeof(pc) - 1 && memcmp(why, pc, sizeof(pc) - 1) == 0) {
		size_t tn = wn - (sizeof(pc) - 1);
		if (tn > JS_QUARANTINE_MAX_TYPE)
			return false;
		memcpy(e->condition, why + sizeof(pc) - 1, tn);
		e->condition[tn] = '\0';
		e->why = JS_QUARANTINE_POD_CONDITION;
		return js_is_qualified_name(e->condition);
	}
	if (wn == sizeof(nl) - 1 && memcmp(why, nl, wn) == 0) {
		e->why = JS_QUARANTINE_NODE_LOST;
		return true;
	}
	return false;
}

int js_quarantine_list_parse(const char *text, struct js_quarantine_list *ret)
{
	ret->n = 0;
	if (!text)
		return 0;
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, ",");
		struct js_quarantine_entry e;
		if (ret->n == JS_QUARANTINE_MAX_NODES || !parse_entry(p, n, &e) ||
		    js_quarantine_list_find(ret, e.node) >= 0) {
			ret->n = 0;
			return JS_EINVALID;
		}
		ret->items[ret->n++] = e;
		p += n + (p[n] == ',');
	}
	return 0;
}

int js_quarantine_list_format(const struct js_quarantine_list *l, struct js_buf *out)
{
	int r = 0;
	for (size_t i = 0; i < l->n && r == 0; i++) {
		const struct js_quarantine_entry *e = &l->items[i];
		r = js_buf_printf(out, "%s%s:%" PRId32 ":", i ? "," : "", e->node, e->until);
		if (r < 0)
			break;
		switch (e->why) {
		case JS_QUARANTINE_EXIT_CODE:
			r = js_buf_printf(out, "exitCode=%" PRId32, e->exit_code);
			break;
		case JS_QUARANTINE_POD_CONDITION:
			r = js_buf_printf(out, "podCondition=%s", e->condition);
			break;
		case JS_QUARANTINE_NODE_LOST:
		default:
			r = js_buf_puts(out, "nodeLost");
			break;
		}
	}
	return r;
}

int js_quarantine_why_text(const struct js_quarantine_entry *e, struct js_buf *out)
{
	switch (e->why) {
	case JS_QUARANTINE_EXIT_CODE:
		return js_buf_printf(out, "exit code %" PRId32, e->exit_code);
	case JS_QUARANTINE_POD_CONDITION:
		return js_buf_printf(out, "pod condition %s", e->condition);
	case JS_QUARANTINE_NODE_LOST:
	default:
		return js_buf_puts(out, "node lost");
	}
}

/* The requirement that keeps a pod off the nodes of `l`. */
static json_t *requirement(const struct js_quarantine_list *l)
{
	json_t *values = json_array();
	for (size_t i = 0; i < l->n; i++)
		json_array_append_new(values, json_string(l->items[i].node));
	return json_pack("{s:s, s:s, s:o}", "key", "metadata.name", "operator", "NotIn", "values", values);
}

void js_quarantine_apply(json_t *job, const struct js_quarantine_list *l)
{
	if (!l || l->n == 0)
		return;
	struct js_buf text;
	js_buf_init(&text, 0);
	if (js_quarantine_list_format(l, &text) < 0)
		js_buf_clear(&text); /* bounded list: cannot reach the ceiling */
	json_object_set_new(js_json_path_make(job, "metadata.annotations"), JS_ANN_QUARANTINED_NODES,
			    json_string(js_buf_str(&text)));
	json_object_set_new(js_json_path_make(job, "spec.template.metadata.annotations"), JS_ANN_QUARANTINED_NODES,
			    json_string(js_buf_str(&text)));
	js_buf_done(&text);

	json_t *req = js_json_path_make(job, "spec.template.spec.affinity.nodeAffinity."
					     "requiredDuringSchedulingIgnoredDuringExecution");
	json_t *terms = json_object_get(req, "nodeSelectorTerms");
	if (!json_is_array(terms) || json_array_size(terms) == 0) {
		terms = json_array();
		json_array_append_new(terms, json_object());
		json_object_set_new(req, "nodeSelectorTerms", terms);
	}
	/* Terms are ORed: a term without the requirement would let a pod
	 * onto an avoided node, so each term gets it (ANDed inside it). */
	size_t i;
	json_t *term;
	json_array_foreach(terms, i, term) {
		if (!json_is_object(term))
			continue;
		json_t *fields = json_object_get(term, "matchFields");
		if (!json_is_array(fields)) {
			fields = json_array();
			json_object_set_new(term, "matchFields", fields);
		}
		json_array_append_new(fields, requirement(l));
	}
}
