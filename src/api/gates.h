/*
 * gates.h - the feature gates of SPEC §12.3 by name: one table and one
 * parser for every place that reads them (the controller's --feature-gates
 * flag and Configuration file, and the --feature-gates option of the
 * `jobset` subcommands), so that they all know the same gates and read the
 * same syntax.
 *
 * Whether a program can honour a gate is that program's business, not this
 * module's: `jobset simulate` refuses InPlaceRestart=true, which it could
 * not act on (docs/differences.md); the controller and `jobset run` drive
 * it (docs/in-place-restart.md); `jobset validate` accepts it.
 *
 * Pure; thread-safe.
 */
#ifndef JS_GATES_H
#define JS_GATES_H

#include <stdbool.h>
#include <stddef.h>

#include "api/jobset.h"
#include "base/common.h"

/** One `name: value` of a feature-gate map (the Configuration file's
 * `featureGates`): `len` bytes at `name`, not NUL-terminated. */
struct js_gate_setting {
	const char *name;
	size_t len;
	bool on;
};

/**
 * Apply the `n` settings to `gates` as component-base's SetFromMap does.
 * Known gates: RestartJob, InPlaceRestart, ElasticJobSet,
 * ExecutionAttemptsTracking (KEP-1282), MutablePodResourcesForSuspendedJobSets
 * (KEP-1150), JobSetActiveDeadlineSeconds (KEP-1186),
 * JobSetWorkloadAwareSchedulingAPI (KEP-969; its deprecated alias
 * WorkloadAwareScheduling sets the same gate), ProgressDeadline (ours: hang
 * detection, docs/progress-deadline.md) and NodeQuarantine (ours,
 * docs/node-quarantine.md) (alpha, off by default) and TLSOptions (GA, locked to true:
 * setting it true is accepted and changes nothing). The special keys
 * `AllAlpha` and `AllBeta` set every alpha (beta) gate that the settings do
 * not name themselves, whatever the order; they never touch a locked gate.
 * When a name repeats, its last value wins. Gates not reached keep their
 * value in `gates`. All or nothing: returns 0, or JS_EINVALID for an unknown
 * name or for turning a locked gate off, with *reterr_index (may be NULL) the
 * offending setting and *reterr_msg (caller frees; may be NULL) saying what
 * is wrong; `gates` is then untouched. Source: SPEC §12.3; k8s.io/
 * component-base/featuregate (allAlphaGate, allBetaGate).
 */
JS_WARN_UNUSED int js_gates_set_all(struct js_gates *gates, const struct js_gate_setting *settings, size_t n,
				    size_t *reterr_index, char **reterr_msg);

/**
 * Parse a feature-gate list as Kubernetes components read --feature-gates:
 * comma-separated `Name=value` items, spaces around an item ignored, empty
 * items skipped, values by Go's strconv.ParseBool (js_parse_bool), names and
 * AllAlpha/AllBeta as js_gates_set_all. Gates not reached keep their value
 * in `gates`. All or nothing: returns 0, or
 * JS_EINVALID with *reterr_msg (caller frees; may be NULL) naming the item,
 * and `gates` unchanged. `spec` NULL is the empty list.
 */
JS_WARN_UNUSED int js_gates_parse(const char *spec, struct js_gates *gates, char **reterr_msg);

/** The known gate names, ", "-separated, for usage texts and messages. Static. */
const char *js_gates_known(void);

/**
 * When the `len` bytes at `name` are a deprecated alias of a gate (accepted
 * for one release after a rename; today WorkloadAwareScheduling, now
 * JobSetWorkloadAwareSchedulingAPI), the warning to show, naming the new
 * name; else NULL. Static text.
 */
const char *js_gates_deprecated(const char *name, size_t len);

/** js_gates_deprecated for the first item of a --feature-gates list (as
 * js_gates_parse reads it) that uses a deprecated alias, or NULL. */
const char *js_gates_list_deprecated(const char *spec);

#endif
