/*
 * render.h - the child Jobs and headless Service the controller creates for
 * a JobSet (SPEC §2.5, §6, §7), as JSON objects ready to POST.
 *
 * Byte-stable: the same JobSet always yields the same objects. Pure, no
 * clock: restart attempts come from the JobSet's status (or an override).
 */
#ifndef JS_RENDER_H
#define JS_RENDER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/jobset.h"
#include "base/buf.h"

struct js_quarantine_list;

/** The JobSet name N (metadata.name; "" when absent). Borrowed. */
const char *js_jobset_name(const struct js_jobset *js);

/** The JobSet namespace ("default" when absent). Borrowed. */
const char *js_jobset_namespace(const struct js_jobset *js);

/** The subdomain: spec.network.subdomain if non-empty, else N. Borrowed. */
const char *js_jobset_subdomain(const struct js_jobset *js);

/** True when DNS hostnames are on: network present and enableDNSHostnames
 * true (SPEC §6.2 step 4; an undefaulted nil network means off). */
bool js_jobset_dns_hostnames(const struct js_jobset *js);

/** Child Job name `<N>-<rjob>-<jobIndex>` (SPEC §6.1); caller frees. */
char *js_render_job_name(const struct js_jobset *js, const struct js_rjob *rjob, int32_t job_index);

/** The same name appended to `out` (for callers that reuse one buffer per
 * Job). Returns 0, or -E2BIG past the buffer's ceiling (out unchanged). */
int js_render_job_name_to(struct js_buf *out, const struct js_jobset *js, const struct js_rjob *rjob,
			  int32_t job_index);

/** Coordinator endpoint `<N>-<rjob>-<jobIdx>-<podIdx>.<subdomain>` or NULL
 * when spec.coordinator is unset; caller frees. */
char *js_render_coordinator(const struct js_jobset *js);

/** Lowercase hex SHA-1 of `<namespace>/<jobName>` (label job-key). Writes 41
 * bytes including the NUL. */
void js_render_job_key(const char *namespace_, const char *job_name, char out[41]);

/** Options for js_render_job. */
struct js_render_opts {
	struct js_gates gates;
	bool has_attempt;       /* override status.restarts (jobset render --attempt) */
	int32_t attempt;
	/* Nodes the Job's pods keep off (gate NodeQuarantine; api/quarantine.h),
	 * or NULL / empty: nothing added. Borrowed. */
	const struct js_quarantine_list *quarantine;
};

/**
 * The child Job for ReplicatedJob `rjob_index`, Job `job_index` (SPEC §6.2,
 * §6.3): labels and annotations K1-K14 (and, with the gate
 * ExecutionAttemptsTracking, jobset.sigs.k8s.io/execution-attempt from
 * status.executionAttempts, KEP-1282), subdomain, exclusive placement,
 * suspend, PVC volumes, owner reference, and the node quarantine of
 * opts->quarantine (js_quarantine_apply). Returns a new reference (never NULL).
 */
json_t *js_render_job(const struct js_jobset *js, size_t rjob_index, int32_t job_index,
		      const struct js_render_opts *opts);

/** The headless Service (SPEC §7). Returns a new reference (never NULL). */
json_t *js_render_service(const struct js_jobset *js);

/** The PVCs of volumeClaimPolicies (SPEC §8), as a JSON array. New reference. */
json_t *js_render_pvcs(const struct js_jobset *js);

/** Controller owner reference to the JobSet (SPEC §6.2 step 8). New ref. */
json_t *js_render_owner_ref(const struct js_jobset *js);

/** The reverse, read from any object: its first ownerReference with
 * `controller: true`, kind JobSet and apiVersion jobset.x-k8s.io/v1alpha2
 * (SPEC §11.1), else NULL. Borrowed from `obj`. This is the one reader of
 * owner references: the core's Job records (core/job.c) and the
 * controller's event mapping (ctrl/owner.h) both use it. */
const json_t *js_render_jobset_owner(const json_t *obj);

#endif
