/*
 * jobset.c - lookups over a JobSet (the codec owns allocation and release).
 */
#include "api/jobset.h"

#include <string.h>

bool js_strlist_has(const struct js_strlist *l, const char *s)
{
	for (size_t i = 0; s && i < l->n; i++)
		if (l->items[i] && strcmp(l->items[i], s) == 0)
			return true;
	return false;
}

int js_jobset_find_rjob(const struct js_jobset *js, const char *name)
{
	for (size_t i = 0; name && i < js->spec.n_replicated_jobs; i++)
		if (js->spec.replicated_jobs[i].name && strcmp(js->spec.replicated_jobs[i].name, name) == 0)
			return (int)i;
	return -1;
}

int js_jobset_find_rjob_status(const struct js_jobset *js, const char *name)
{
	for (size_t i = 0; name && i < js->status.n_replicated_jobs_status; i++) {
		const char *n = js->status.replicated_jobs_status[i].name;
		if (n && strcmp(n, name) == 0)
			return (int)i;
	}
	return -1;
}

const struct js_condition *js_jobset_condition(const struct js_jobset *js, const char *type)
{
	for (size_t i = 0; i < js->status.n_conditions; i++) {
		const struct js_condition *c = &js->status.conditions[i];
		if (c->type && strcmp(c->type, type) == 0)
			return c;
	}
	return NULL;
}

bool js_jobset_condition_true(const struct js_jobset *js, const char *type)
{
	const struct js_condition *c = js_jobset_condition(js, type);
	return c && c->status && strcmp(c->status, "True") == 0;
}
