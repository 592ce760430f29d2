/*
 * manifest.h - shared by the subcommands that read manifests: the options
 * they have in common (-o, --feature-gates), loading a file, picking out the
 * JobSet documents, decoding, defaulting and validating them, and printing
 * diagnostics.
 */
#ifndef JS_CLI_MANIFEST_H
#define JS_CLI_MANIFEST_H

#include <stdbool.h>
#include <stdio.h>

#include "api/jobset.h"
#include "api/render.h"
#include "base/diag.h"
#include "base/load.h"

/*
 * Options shared by the subcommands, parsed here once. Each returns
 * JS_EXIT_OK, or prints "jobset CMD: why" on stderr and returns
 * JS_EXIT_USAGE; `cmd` is the subcommand's name.
 */

/** --feature-gates LIST into `gates` (api/gates.h: Name=bool items). */
int js_cli_opt_gates(const char *cmd, const char *arg, struct js_gates *gates);

/** -o/--output: `arg` is `plain` (the default format, "text" or "yaml") or
 * "json"; *ret_json says which. */
int js_cli_opt_output(const char *cmd, const char *arg, const char *plain, bool *ret_json);

/** The same for another flag of that kind (`flag`, e.g. "--events"), which
 * the error names. */
int js_cli_opt_format(const char *cmd, const char *flag, const char *arg, const char *plain, bool *ret_json);

/** For a subcommand that drives the reconcile core without pods (simulate):
 * refuse InPlaceRestart=true, which it would accept and never act on.
 * `missing` says what it lacks for it (docs/differences.md). Returns
 * JS_EXIT_OK, or JS_EXIT_USAGE having said why on stderr. */
int js_cli_refuse_in_place(const char *cmd, const struct js_gates *gates, const char *missing);

/** For the subcommands that drive the reconcile core (run, simulate):
 * refuse JobSetWorkloadAwareSchedulingAPI=true (KEP-969): gang scheduling makes
 * Workload and PodGroup objects for the Kubernetes scheduler, which they
 * have not. Returns JS_EXIT_OK, or JS_EXIT_USAGE having said why on stderr
 * (docs/differences.md). */
int js_cli_refuse_gang(const char *cmd, const struct js_gates *gates);

/** Outcome of reading one document. */
enum js_cli_doc_kind {
	JS_CLI_DOC_JOBSET,  /* decoded, defaulted and valid: *ret_js set */
	JS_CLI_DOC_INVALID, /* a JobSet with errors, appended to diag */
	JS_CLI_DOC_OTHER,   /* another kind of object: skipped */
};

/**
 * Decode document `i` of `docs` as a JobSet, default it (SPEC §4) and
 * validate it for creation (SPEC §5, strict). Diagnostics get positions.
 * Deprecated spec.scheduling names (api/sched.h js_sched_warnings) are
 * printed to stderr as warnings.
 * `ret_kind_name` receives "Kind/name" of the document (borrowed from docs).
 */
enum js_cli_doc_kind js_cli_read_doc(const struct js_docs *docs, size_t i, const struct js_gates *gates,
				     struct js_diag *diag, struct js_jobset **ret_js, char *desc, size_t desclen);

/**
 * Append to `items` every object the controller creates for `js` (defaulted
 * and valid), in creation order: the headless Service (when DNS hostnames
 * are on), the PVCs of volumeClaimPolicies, then each child Job (SPEC
 * §6-§8; api/render.h). Used by `render` and `kubectl jobset diff`.
 */
void js_cli_render_collect(const struct js_jobset *js, const struct js_render_opts *ro, json_t *items);

/** Print each diagnostic on its own line to `f`. */
void js_cli_print_diag(FILE *f, const struct js_diag *diag);

#endif
