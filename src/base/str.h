/*
 * str.h - the two equalities of optional strings (NULL = absent), so that
 * every comparison says which one it means: a record's field compared with
 * the same field of its previous version (absent equals absent), or an
 * identity checked against the API (an absent uid proves nothing).
 */
#ifndef JS_STR_H
#define JS_STR_H

#include <stdbool.h>
#include <string.h>

/** Equal values, where absent equals absent: change detection. */
static inline bool js_str_same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/** Both present and equal: identity checks, where two absent values (two
 * objects without a uid) must not count as the same object. */
static inline bool js_str_match(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

#endif
