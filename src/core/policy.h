/*
 * policy.h - the RE2 message patterns of a JobSet's failure-policy rules
 * (SPEC §11.8 onJobFailureMessagePatterns), compiled once.
 *
 * Compiling a pattern costs far more than matching it, and the core matches
 * every failed Job against the rules in every pass: compiled per match, a
 * pass over N failed Jobs compiled every pattern N times. A runtime that
 * caches JobSets builds one js_policy when it ingests a JobSet and shares it
 * between the records of one generation (ctrl/cache.c); the core borrows it
 * through js_reconcile_input.policy. Without one (the local runtime, the
 * simulator, tests) the core compiles its own once per pass.
 *
 * A pattern that does not compile never matches (validation rejects it at
 * admission; a JobSet stored without the webhook can still carry one).
 *
 * Pure (no I/O, no clock). Immutable once built and reference-counted
 * (atomically): any thread may match with it and share it.
 */
#ifndef JS_POLICY_H
#define JS_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "api/jobset.h"

struct js_policy;

/** Compile the message patterns of every rule of `js`'s failure policy
 * (none, or `js` NULL: an empty policy). Returns a new policy holding one
 * reference (js_policy_unref); allocation failure aborts (js_x*). */
struct js_policy *js_policy_compile(const struct js_jobset *js);

/** Take one more reference; returns `p`. NULL is a no-op. */
const struct js_policy *js_policy_ref(const struct js_policy *p);

/** Drop one reference; the last frees. NULL is a no-op. */
void js_policy_unref(const struct js_policy *p);

/** True when `p` was compiled from exactly `js`'s rules' patterns (as many
 * rules, the same patterns in the same order): what a record of a later
 * resourceVersion checks before sharing its predecessor's policy. */
bool js_policy_fits(const struct js_policy *p, const struct js_jobset *js);

/** True when a message pattern of rule `rule` (its index in
 * spec.failurePolicy.rules) matches `message` (NULL: the empty message)
 * anywhere (RE2, unanchored). False for a rule without patterns or out of
 * range. */
bool js_policy_rule_matches(const struct js_policy *p, size_t rule, const char *message);

/** How many patterns were compiled to build `p` (a test and bench hook:
 * with js_policy_fits it shows a policy is compiled once, not per match). */
size_t js_policy_compiled(const struct js_policy *p);

#endif
