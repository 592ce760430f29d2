/*
 * manifest.h - shared by the subcommands that read manifests: load a file,
 * pick out the JobSet documents, decode, default and validate them, and print
 * diagnostics.
 */
#ifndef JS_CLI_MANIFEST_H
#define JS_CLI_MANIFEST_H

#include <stdbool.h>
#include <stdio.h>

#include "api/jobset.h"
#include "base/diag.h"
#include "base/load.h"

/** Parse "--feature-gates A=true,B=false". Returns 0 or -EINVAL with a
 * message in `err`. */
int js_cli_parse_gates(const char *spec, struct js_gates *gates, char *err, size_t errlen);

/** Outcome of reading one document. */
enum js_cli_doc_kind {
	JS_CLI_DOC_JOBSET,  /* decoded, defaulted and valid: *ret_js set */
	JS_CLI_DOC_INVALID, /* a JobSet with errors, appended to diag */
	JS_CLI_DOC_OTHER,   /* another kind of object: skipped */
};

/**
 * Decode document `i` of `docs` as a JobSet, default it (SPEC §4) and
 * validate it for creation (SPEC §5, strict). Diagnostics get positions.
 * `ret_kind_name` receives "Kind/name" of the document (borrowed from docs).
 */
enum js_cli_doc_kind js_cli_read_doc(const struct js_docs *docs, size_t i, const struct js_gates *gates,
				     struct js_diag *diag, struct js_jobset **ret_js, char *desc, size_t desclen);

/** Print each diagnostic on its own line to `f`. */
void js_cli_print_diag(FILE *f, const struct js_diag *diag);

#endif
