/*
 * policy.c - compiled failure-policy message patterns (policy.h).
 */
#include "core/policy.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "base/regex.h"

/* One rule's patterns: the source text (to check fits) and the compiled
 * form (NULL where it did not compile). */
struct rule {
	size_t n;
	char **text;
	struct js_regex **re;
};

struct js_policy {
	atomic_size_t refs;
	size_t n_rules;
	struct rule *rules;
	size_t compiled;
};

struct js_policy *js_policy_compile(const struct js_jobset *js)
{
	struct js_policy *p = js_xcalloc(1, sizeof(*p));
	atomic_init(&p->refs, 1);
	const struct js_failure_policy *fp = js && js->has_spec ? js->spec.failure_policy : NULL;
	if (!fp || fp->n_rules == 0)
		return p;
	p->n_rules = fp->n_rules;
	p->rules = js_xcalloc(fp->n_rules, sizeof(*p->rules));
	for (size_t i = 0; i < fp->n_rules; i++) {
		const struct js_strlist *pats = &fp->rules[i].on_job_failure_message_patterns;
		struct rule *r = &p->rules[i];
		r->n = pats->n;
		r->text = js_xcalloc(pats->n + 1, sizeof(*r->text));
		r->re = js_xcalloc(pats->n + 1, sizeof(*r->re));
		for (size_t k = 0; k < pats->n; k++) {
			if (!pats->items[k])
				continue;
			r->text[k] = js_xstrdup(pats->items[k]);
			if (js_regex_compile(pats->items[k], &r->re[k], NULL, 0) < 0)
				r->re[k] = NULL;
			p->compiled++;
		}
	}
	return p;
}

const struct js_policy *js_policy_ref(const struct js_policy *p)
{
	if (p)
		atomic_fetch_add(&((struct js_policy *)(uintptr_t)p)->refs, 1);
	return p;
}

void js_policy_unref(const struct js_policy *cp)
{
	struct js_policy *p = (struct js_policy *)(uintptr_t)cp;
	if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
		return;
	for (size_t i = 0; i < p->n_rules; i++) {
		for (size_t k = 0; k < p->rules[i].n; k++) {
			free(p->rules[i].text[k]);
			js_regex_free(p->rules[i].re[k]);
		}
		free(p->rules[i].text);
		free(p->rules[i].re);
	}
	free(p->rules);
	free(p);
}

static bool str_same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

bool js_policy_fits(const struct js_policy *p, const struct js_jobset *js)
{
	const struct js_failure_policy *fp = js && js->has_spec ? js->spec.failure_policy : NULL;
	size_t n = fp ? fp->n_rules : 0;
	if (!p || p->n_rules != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		const struct js_strlist *pats = &fp->rules[i].on_job_failure_message_patterns;
		if (pats->n != p->rules[i].n)
			return false;
		for (size_t k = 0; k < pats->n; k++)
			if (!str_same(pats->items[k], p->rules[i].text[k]))
				return false;
	}
	return true;
}

bool js_policy_rule_matches(const struct js_policy *p, size_t rule, const char *message)
{
	if (!p || rule >= p->n_rules)
		return false;
	const struct rule *r = &p->rules[rule];
	for (size_t k = 0; k < r->n; k++)
		if (r->re[k] && js_regex_search(r->re[k], message ? message : ""))
			return true;
	return false;
}

size_t js_policy_compiled(const struct js_policy *p)
{
	return p ? p->compiled : 0;
}
