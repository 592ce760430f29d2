/*
 * jobset-crdgen - generate the CustomResourceDefinition jobsets.jobset.x-k8s.io
 * (SPEC §1) from our API model and the Kubernetes OpenAPI v3 documents.
 *
 *   jobset-crdgen --batch BATCH_V1.json --core CORE_V1.json [-o OUT.yaml]
 *
 * BATCH_V1.json and CORE_V1.json are what a kube-apiserver serves at
 * /openapi/v3/apis/batch/v1 and /openapi/v3/api/v1 (tools/crdgen/regen.sh
 * fetches them from the test control plane). The JobSet part of the schema
 * comes from the codec's descriptor tables (js_codec_openapi_schema); the
 * constraints the tables do not carry (defaults D1-D4, minimums, list limits
 * and list-map keys, CEL rules S1-S8, condition patterns) and our field
 * descriptions are added here from SPEC §3-§5. The embedded batch/v1
 * JobTemplateSpec and core/v1 PersistentVolumeClaim are inlined from the
 * OpenAPI documents with every $ref resolved, turned into a structural
 * schema (no $ref, a type on every node, int-or-string and quantity as
 * x-kubernetes-int-or-string, embedded ObjectMeta cut to the five fields the
 * API server keeps), so the API server checks the embedded templates and
 * `kubectl explain jobset.spec.replicatedJobs.template` works.
 *
 * Output is byte-stable (sorted keys). Exit status 0, 1 on bad input, 2 on
 * usage errors.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/codec.h"
#include "api/jobset.h"
#include "base/buf.h"
#include "base/emit.h"
#include "base/json.h"

#define REF_PREFIX "#/components/schemas/"
#define OBJECT_META "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
#define MAX_DEPTH 64

/* Schema keywords a CRD accepts and we keep; everything else of the OpenAPI
 * document (x-kubernetes-patch-*, x-kubernetes-group-version-kind, unions)
 * is dropped, and so are enums: the Kubernetes API validates those values
 * when the child Job is created, and a CRD enum would refuse values a newer
 * control plane accepts. properties/items/additionalProperties/allOf are
 * walked. */
static const char *const kept_keys[] = {
	"description", "type", "format", "required", "minimum", "maximum", "exclusiveMinimum",
	"exclusiveMaximum", "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems",
	"minProperties", "maxProperties", "nullable", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
	"x-kubernetes-map-type", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
	"x-kubernetes-embedded-resource",
};

struct gen {
	const json_t *schemas; /* components.schemas of both documents, merged */
	const char *stack[MAX_DEPTH];
	int depth;
	int errors;
};

static bool kept(const char *k)
{
	for (size_t i = 0; i < JS_ARRAY_SIZE(kept_keys); i++)
		if (strcmp(kept_keys[i], k) == 0)
			return true;
	return false;
}

/* Kubernetes' quantity grammar: signed decimal number with an optional
 * binary (Ki..Ei), decimal (n, u, m, k, M..E) or exponent suffix. */
static const char quantity_pattern[] =
	"^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$";

static json_t *int_or_string(void)
{
	return json_pack("{s:[{s:s},{s:s}],s:b}", "anyOf", "type", "integer", "type", "string",
			 "x-kubernetes-int-or-string", 1);
}

/* ObjectMeta inside a template: the API server keeps only these fields. */
static json_t *embedded_meta(void)
{
	return json_pack("{s:s,s:{s:{s:s,s:{s:s}},s:{s:s,s:{s:s}},s:{s:s,s:{s:s}},s:{s:s},s:{s:s}}}", "type", "object",
			 "properties", "annotations", "type", "object", "additionalProperties", "type", "string",
			 "finalizers", "type", "array", "items", "type", "string", "labels", "type", "object",
			 "additionalProperties", "type", "string", "name", "type", "string", "namespace", "type",
			 "string");
}

static json_t *convert(struct gen *g, const json_t *node);

/* A named schema, with the special cases that are not plain objects. */
static json_t *convert_ref(struct gen *g, const char *ref)
{
	if (strncmp(ref, REF_PREFIX, strlen(REF_PREFIX)) != 0) {
		fprintf(stderr, "jobset-crdgen: unsupported $ref '%s'\n", ref);
		g->errors++;
		return json_pack("{s:s}", "type", "object");
	}
	const char *name = ref + strlen(REF_PREFIX);
	if (strcmp(name, OBJECT_META) == 0)
		return embedded_meta();
	if (strcmp(name, "io.k8s.apimachinery.pkg.util.intstr.IntOrString") == 0)
		return int_or_string();
	if (strcmp(name, "io.k8s.apimachinery.pkg.api.resource.Quantity") == 0) {
		json_t *q = int_or_string();
		json_object_set_new(q, "pattern", json_string(quantity_pattern));
		return q;
	}
	for (int i = 0; i < g->depth; i++)
		if (strcmp(g->stack[i], name) == 0) {
			/* A recursive type cannot be inlined; keep what is there. */
			return json_pack("{s:s,s:b}", "type", "object", "x-kubernetes-preserve-unknown-fields", 1);
		}
	const json_t *target = json_object_get(g->schemas, name);
	if (!target || g->depth >= MAX_DEPTH) {
		fprintf(stderr, "jobset-crdgen: %s '%s'\n", target ? "nesting too deep at" : "no schema for", name);
		g->errors++;
		return json_pack("{s:s}", "type", "object");
	}
	g->stack[g->depth++] = name;
	json_t *out = convert(g, target);
	g->depth--;
	return out;
}

static json_t *convert(struct gen *g, const json_t *node)
{
	const char *ref = js_json_str(node, "$ref");
	const json_t *all = json_object_get(node, "allOf");
	json_t *out;
	if (ref)
		out = convert_ref(g, ref);
	else if (json_array_size(all) == 1 && js_json_str(json_array_get(all, 0), "$ref"))
		out = convert_ref(g, js_json_str(json_array_get(all, 0), "$ref"));
	else
		out = json_object();
	/* The referring site's own keywords (its description) win. */
	const char *k;
	json_t *v;
	json_object_foreach(js_json_unconst(node), k, v)
	{
		if (kept(k)) {
			if (strcmp(k, "format") == 0 && strcmp(json_string_value(v), "int-or-string") == 0)
				continue;
			json_object_set(out, k, v);
		} else if (strcmp(k, "default") == 0 && !json_is_object(v) && !json_is_array(v) &&
			   !(json_is_string(v) && !json_string_length(v)) &&
			   !(json_is_integer(v) && json_integer_value(v) == 0)) {
			/* Scalar defaults the Kubernetes types declare (protocol TCP,
			 * fsType ext4, ...). The document also gives Go zero values
			 * ("", 0) and {} for struct wrappers as defaults; those are
			 * not defaults a user would expect. */
			json_object_set(out, k, v);
		} else if (strcmp(k, "default") == 0 && !json_is_object(v) && !json_is_array(v)) {
			/* Kept aside: a list-map key needs it (finish()). */
			json_object_set(out, "x-crdgen-default", v);
		}
	}
	const json_t *props = json_object_get(node, "properties");
	if (json_is_object(props)) {
		json_t *p = json_object();
		json_object_foreach(js_json_unconst(props), k, v)
		{
			json_object_set_new(p, k, convert(g, v));
		}
		json_object_set_new(out, "properties", p);
	}
	const json_t *items = json_object_get(node, "items");
	if (json_is_object(items))
		json_object_set_new(out, "items", convert(g, items));
	const json_t *ap = json_object_get(node, "additionalProperties");
	if (json_is_object(ap))
		json_object_set_new(out, "additionalProperties", convert(g, ap));
	const json_t *one = json_object_get(node, "oneOf");
	if (one && !json_object_get(out, "x-kubernetes-int-or-string")) {
		/* Only quantity and int-or-string use oneOf, by reference (above). */
		fprintf(stderr, "jobset-crdgen: unexpected oneOf\n");
		g->errors++;
	}
	if (!json_object_get(out, "type") && !json_object_get(out, "x-kubernetes-int-or-string") &&
	    !json_object_get(out, "x-kubernetes-preserve-unknown-fields"))
		json_object_set_new(out, "type", json_string("object"));
	return out;
}

/* The API server wants every list-map key required or defaulted: give the
 * keys that are neither their zero-value default back, then drop the
 * defaults kept aside. */
static void finish(json_t *node)
{
	const json_t *keys = json_object_get(node, "x-kubernetes-list-map-keys");
	json_t *items = json_object_get(node, "items");
	size_t i;
	json_t *key;
	json_array_foreach(js_json_unconst(keys), i, key)
	{
		const char *name = json_string_value(key);
		json_t *prop = json_object_get(json_object_get(items, "properties"), name);
		bool required = false;
		size_t j;
		json_t *r;
		json_array_foreach(json_object_get(items, "required"), j, r)
		{
			required |= strcmp(json_string_value(r), name) == 0;
		}
		json_t *dflt = json_object_get(prop, "x-crdgen-default");
		if (!required && prop && !json_object_get(prop, "default") && dflt)
			json_object_set(prop, "default", dflt);
	}
	json_object_del(node, "x-crdgen-default");
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(node, "properties"), k, v)
	{
		finish(v);
	}
	if (items)
		finish(items);
	if (json_is_object(json_object_get(node, "additionalProperties")))
		finish(json_object_get(node, "additionalProperties"));
}

/* ---- overlay of SPEC §3-§5 constraints on the codec's schema ---- */

/* The schema node at a path of property names; "[]" steps into items. */
static json_t *at(json_t *root, const char *path)
{
	json_t *cur = root;
	for (const char *p = path; *p && cur;) {
		size_t n = strcspn(p, ".");
		bool item = n > 2 && strncmp(p + n - 2, "[]", 2) == 0;
		char seg[128];
		snprintf(seg, sizeof(seg), "%.*s", (int)(item ? n - 2 : n), p);
		cur = json_object_get(json_object_get(cur, "properties"), seg);
		if (item)
			cur = json_object_get(cur, "items");
		p += n;
		if (*p == '.')
			p++;
	}
	if (!cur) {
		fprintf(stderr, "jobset-crdgen: no schema node at '%s'\n", path);
		exit(1);
	}
	return cur;
}

/* Merge `json` (an object) into the node at `path`. */
static void set(json_t *root, const char *path, const char *json)
{
	json_error_t e;
	json_t *v = json_loads(json, 0, &e);
	if (!v) {
		fprintf(stderr, "jobset-crdgen: bad overlay at %s: %s\n", path, e.text);
		exit(1);
	}
	json_object_update(path[0] ? at(root, path) : root, v);
	json_decref(v);
}

#define IMMUTABLE "\"x-kubernetes-validations\":[{\"rule\":\"self == oldSelf\",\"message\":\"Value is immutable\"}]"
#define ATOMIC "\"x-kubernetes-list-type\":\"atomic\""
#define MAP_BY(k) "\"x-kubernetes-list-type\":\"map\",\"x-kubernetes-list-map-keys\":[\"" k "\"]"

static const struct {
	const char *path, *json;
} overlay[] = {
	{"", "{\"description\":\"JobSet runs a group of Kubernetes Jobs as one workload: leaders, workers and other "
	     "roles, with a headless Service for pod-to-pod DNS, success and failure policies, restarts, startup "
	     "ordering, suspend/resume and TTL.\"}"},
	{"apiVersion", "{\"description\":\"Versioned schema of this object: jobset.x-k8s.io/v1alpha2.\"}"},
	{"kind", "{\"description\":\"The REST resource this object represents: JobSet.\"}"},
	{"spec", "{\"description\":\"What the JobSet should run.\",\"x-kubernetes-validations\":[{\"rule\":\"!(has(self."
		 "startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder') || !has(self.replicatedJobs) || "
		 "self.replicatedJobs.all(r, !has(r.dependsOn))\",\"message\":\"StartupPolicy and DependsOn APIs are "
		 "mutually exclusive\"}]}"},
	{"spec.replicatedJobs", "{" MAP_BY("name") ",\"description\":\"The groups of identical Jobs that make up the "
						  "JobSet, in order (global Job index, startup order and dependsOn follow it).\"}"},
	{"spec.replicatedJobs[].name", "{\"description\":\"Name of the group; child Jobs are named "
				       "<jobset>-<name>-<index>.\"}"},
	{"spec.replicatedJobs[].groupName", "{\"default\":\"default\",\"description\":\"Group label of these Jobs "
					    "(a DNS-1035 label).\"}"},
	{"spec.replicatedJobs[].replicas", "{\"default\":1,\"minimum\":0,\"description\":\"Number of child Jobs "
					   "created from the template.\"}"},
	{"spec.replicatedJobs[].dependsOn", "{\"maxItems\":5," MAP_BY("name") "," IMMUTABLE ",\"description\":"
					    "\"Earlier ReplicatedJobs that must reach a status before these Jobs are "
					    "created.\"}"},
	{"spec.replicatedJobs[].dependsOn[].name", "{\"description\":\"Name of an earlier ReplicatedJob.\"}"},
	{"spec.replicatedJobs[].dependsOn[].status", "{\"description\":\"Ready: all its Jobs are ready or "
						     "finished. Complete: all its Jobs succeeded.\"}"},
	{"spec.network", "{" IMMUTABLE ",\"description\":\"Pod-to-pod DNS through a headless Service.\"}"},
	{"spec.network.enableDNSHostnames", "{\"description\":\"Give pods stable hostnames "
					    "<jobset>-<rjob>-<job>-<pod>.<subdomain>.\"}"},
	{"spec.network.subdomain", "{\"description\":\"Name of the headless Service; defaults to the JobSet name.\"}"},
	{"spec.network.publishNotReadyAddresses", "{\"description\":\"Publish DNS records of pods before they are "
						  "ready.\"}"},
	{"spec.successPolicy", "{" IMMUTABLE ",\"description\":\"When the JobSet counts as Completed.\"}"},
	{"spec.successPolicy.operator", "{\"description\":\"All: every targeted Job must succeed. Any: one is "
					"enough.\"}"},
	{"spec.successPolicy.targetReplicatedJobs", "{" ATOMIC ",\"description\":\"ReplicatedJobs the policy looks at; "
						    "empty means all.\"}"},
	{"spec.failurePolicy", "{" IMMUTABLE ",\"description\":\"What happens when a child Job fails.\"}"},
	{"spec.failurePolicy.maxRestarts", "{\"description\":\"Restarts allowed before the JobSet fails.\"}"},
	{"spec.failurePolicy.restartStrategy", "{\"default\":\"Recreate\",\"description\":\"How Jobs are recreated on "
					       "a restart.\"}"},
	{"spec.failurePolicy.rules", "{\"description\":\"Rules matched in order against a failed Job; the first match "
				     "decides. No match means RestartJobSet.\"}"},
	{"spec.failurePolicy.rules[]", "{\"required\":[\"action\",\"name\"]}"},
	{"spec.failurePolicy.rules[].name", "{\"description\":\"Rule name, used in the condition reason.\"}"},
	{"spec.failurePolicy.rules[].action", "{\"description\":\"What to do when the rule matches.\"}"},
	{"spec.failurePolicy.rules[].onJobFailureReasons", "{\"description\":\"Job failure reasons the rule matches; "
							   "empty means any.\"}"},
	{"spec.failurePolicy.rules[].onJobFailureMessagePatterns", "{\"description\":\"RE2 patterns searched in the Job "
								   "failure message; empty means any.\"}"},
	{"spec.failurePolicy.rules[].targetReplicatedJobs", "{" ATOMIC ",\"description\":\"ReplicatedJobs the rule "
							    "applies to; empty means all.\"}"},
	{"spec.startupPolicy", "{" IMMUTABLE ",\"description\":\"Order in which ReplicatedJobs are started.\"}"},
	{"spec.startupPolicy.startupPolicyOrder", "{\"description\":\"AnyOrder starts all at once; InOrder waits for "
						  "each ReplicatedJob to be ready.\"}"},
	{"spec.suspend", "{\"description\":\"Suspend every child Job while true.\"}"},
	{"spec.coordinator", "{\"description\":\"A pod whose stable address is published to every Job and pod.\"}"},
	{"spec.managedBy", "{\"description\":\"Controller that reconciles this JobSet; another value hands it to an "
			   "external controller.\"}"},
	{"spec.ttlSecondsAfterFinished", "{\"minimum\":0,\"description\":\"Seconds after finishing before the JobSet is "
					 "deleted.\"}"},
	{"spec.activeDeadlineSeconds", "{\"minimum\":1,\"description\":\"Seconds the JobSet may stay continuously "
				       "active, from status.startTime, before it fails with DeadlineExceeded (KEP-1186, "
				       "gate JobSetActiveDeadlineSeconds). Mutable.\"}"},
	{"spec.volumeClaimPolicies", "{\"maxItems\":50," ATOMIC "," IMMUTABLE ",\"description\":\"PersistentVolumeClaims "
				     "created for the JobSet and mounted by its pods.\"}"},
	{"spec.volumeClaimPolicies[]", "{\"x-kubernetes-validations\":[{\"rule\":\"!has(self.templates) || self.templates"
				       ".all(t, !has(t.metadata) || !has(t.metadata.namespace) || t.metadata.namespace "
				       "== '')\",\"message\":\"namespace cannot be set for VolumeClaimPolicies templates\"}]}"},
	{"spec.volumeClaimPolicies[].templates", "{\"maxItems\":50," ATOMIC ",\"description\":\"Claims to create, named "
						 "<template name>-<jobset>.\"}"},
	{"spec.volumeClaimPolicies[].retentionPolicy.whenDeleted", "{\"default\":\"Delete\",\"description\":\"Delete or "
								   "keep the claims when the JobSet is deleted.\"}"},
	{"status", "{\"description\":\"What the controller observed.\"}"},
	{"status.conditions", "{" MAP_BY("type") "}"},
	{"status.conditions[]", "{\"required\":[\"lastTransitionTime\",\"message\",\"reason\",\"status\",\"type\"]}"},
	{"status.conditions[].type", "{\"maxLength\":316,\"pattern\":\"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]"
				     "([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$\"}"},
	{"status.conditions[].status", "{\"enum\":[\"True\",\"False\",\"Unknown\"]}"},
	{"status.conditions[].reason", "{\"minLength\":1,\"maxLength\":1024,\"pattern\":\"^[A-Za-z]([A-Za-z0-9_,:]*"
				       "[A-Za-z0-9_])?$\"}"},
	{"status.conditions[].message", "{\"maxLength\":32768}"},
	{"status.conditions[].lastTransitionTime", "{\"format\":\"date-time\"}"},
	{"status.conditions[].observedGeneration", "{\"minimum\":0}"},
	{"status.replicatedJobsStatus", "{" MAP_BY("name") "}"},
	{"status.replicatedJobsStatus[]", "{\"required\":[\"active\",\"failed\",\"name\",\"ready\",\"succeeded\","
					  "\"suspended\"]}"},
	{"status.replicatedJobsStatus[].jobRestarts", "{\"maxItems\":1024," ATOMIC "}"},
	{"status.replicatedJobsStatus[].jobRestartsCountTowardsMax", "{\"maxItems\":1024," ATOMIC "}"},
	{"status.previousInPlaceRestartAttempt", "{\"minimum\":0}"},
	{"status.currentInPlaceRestartAttempt", "{\"minimum\":0}"},
	{"status.executionAttempts", "{\"minimum\":0,\"description\":\"Execution lifecycles: resumes and whole-JobSet "
				     "restarts (KEP-1282, gate ExecutionAttemptsTracking).\"}"},
	{"status.startTime", "{\"format\":\"date-time\",\"description\":\"When the JobSet last became active; "
			     "cleared while suspended (KEP-1186, gate JobSetActiveDeadlineSeconds).\"}"},
};

/* spec.scheduling (KEP-969): kept verbatim by the codec, so its structure is
 * written out here (api/sched.c checks the rest: one of basic/gang, targets
 * that exist, minCount within the pods, one of single/all, the old and the
 * new name of a field not both). The KEP's names first; our first names
 * stay as deprecated aliases for one release, so that `kubectl apply
 * --validate=strict` takes either (docs/gang-scheduling.md). */
#define SCHED_DEPRECATED(now) "Deprecated: use " now " (KEP-969's name); accepted until the next release. "
#define SCHED_POLICY(pre)                                                                                     \
	"{\"type\":\"object\",\"description\":\"" pre "Basic (pods schedule one by one) or Gang (no pod starts "      \
	"until minCount of them fit); Gang when absent.\",\"properties\":{\"basic\":{\"type\":\"object\"},\"gang\":{" \
	"\"type\":\"object\",\"properties\":{\"minCount\":{\"type\":\"integer\",\"format\":\"int32\",\"minimum\":1,"    \
	"\"description\":\"Pods that must fit together; defaults to parallelism x replicas of what the group "     \
	"holds.\"}}}}}"
#define SCHED_CONSTRAINTS(pre)                                                                                \
	"{\"type\":\"object\",\"description\":\"" pre "Topology the group must fit in.\",\"properties\":{"          \
	"\"topology\":{\"type\":\"array\"," ATOMIC ",\"items\":{\"type\":\"object\",\"required\":[\"key\"],"            \
	"\"properties\":{\"key\":{\"type\":\"string\",\"description\":\"Node label key of the topology "              \
	"domain.\"}}}}}}"
#define SCHED_DISRUPTION_MODE                                                                                 \
	"{\"type\":\"object\",\"description\":\"Exactly one of single (pods are disrupted one by one) and all (the " \
	"group is disrupted as one).\",\"properties\":{\"single\":{\"type\":\"object\"},\"all\":{\"type\":"          \
	"\"object\"}}}"
#define SCHED_DISRUPTION                                                                                      \
	"{\"type\":\"string\",\"description\":\"" SCHED_DEPRECATED("disruptionMode") "Single (pods are disrupted "   \
	"one by one) or All.\"}"
/* The fields every block has, KEP-969's names and the deprecated ones. */
#define SCHED_BLOCK                                                                                           \
	"\"schedulingPolicy\":" SCHED_POLICY("") ",\"schedulingConstraints\":" SCHED_CONSTRAINTS(                   \
		"") ",\"disruptionMode\":" SCHED_DISRUPTION_MODE                                                     \
	",\"policy\":" SCHED_POLICY(SCHED_DEPRECATED("schedulingPolicy")) ",\"constraints\":" SCHED_CONSTRAINTS(     \
		SCHED_DEPRECATED("schedulingConstraints")) ",\"disruption\":" SCHED_DISRUPTION
/* One replicatedJobs entry. `job` (KEP-969's per-Job gangs) is in the
 * schema so that it is kept, not pruned, and admission refuses it by name. */
#define SCHED_ENTRY                                                                                           \
	"{\"type\":\"object\",\"properties\":{\"targetReplicatedJobs\":{\"type\":\"array\",\"minItems\":1,"          \
	"\"maxItems\":50,\"x-kubernetes-list-type\":\"set\",\"description\":\"The ReplicatedJobs that share this "  \
	"entry's PodGroup.\",\"items\":{\"type\":\"string\",\"maxLength\":256}},\"targetReplicatedJob\":{\"type\":"  \
	"\"string\",\"description\":\"" SCHED_DEPRECATED("targetReplicatedJobs") "One ReplicatedJob.\"},"          \
	SCHED_BLOCK ",\"resourceClaims\":{\"type\":\"array\",\"maxItems\":4," MAP_BY("name") ",\"description\":"    \
	"\"DRA claims shared by the group's pods.\",\"items\":{\"type\":\"object\",\"required\":[\"name\"],"          \
	"\"properties\":{\"name\":{\"type\":\"string\"},\"resourceClaimName\":{\"type\":\"string\"},"                \
	"\"resourceClaimTemplateName\":{\"type\":\"string\"}}}},\"job\":{\"type\":\"object\",\"description\":"     \
	"\"KEP-969's per-Job gangs: not supported by this implementation (refused at admission).\","             \
	"\"properties\":{\"schedulingPolicy\":" SCHED_POLICY("") ",\"schedulingConstraints\":" SCHED_CONSTRAINTS(  \
		"") ",\"disruptionMode\":" SCHED_DISRUPTION_MODE "}}}}"
static const char sched_schema[] =
	"{\"type\":\"object\"," IMMUTABLE ",\"description\":\"Gang scheduling through Kubernetes Workload and "
	"PodGroup objects (KEP-969; feature gate JobSetWorkloadAwareSchedulingAPI).\",\"properties\":{" SCHED_BLOCK
	",\"replicatedJobs\":{\"type\":\"array\"," ATOMIC ",\"maxItems\":50,\"description\":\"Per-ReplicatedJob "
	"PodGroups: each entry's targets share one; any entry gives every ReplicatedJob a PodGroup of its own or of "
	"its entry.\",\"items\":" SCHED_ENTRY "},\"replicatedJobPolicies\":{\"type\":\"array\"," ATOMIC
	",\"maxItems\":50,\"description\":\"" SCHED_DEPRECATED("replicatedJobs") "\",\"items\":" SCHED_ENTRY
	"}}}";

static json_t *load(const char *path)
{
	json_error_t e;
	json_t *j = json_load_file(path, 0, &e);
	if (!j)
		fprintf(stderr, "jobset-crdgen: %s:%d: %s\n", path, e.line, e.text);
	return j;
}

static json_t *crd(json_t *schema)
{
	json_t *cols = json_loads(
		"[{\"name\":\"TerminalState\",\"type\":\"string\",\"jsonPath\":\".status.terminalState\","
		"\"description\":\"Completed or Failed once finished\"},"
		"{\"name\":\"Restarts\",\"type\":\"string\",\"jsonPath\":\".status.restarts\","
		"\"description\":\"Restarts of the whole JobSet\"},"
		"{\"name\":\"Completed\",\"type\":\"string\",\"jsonPath\":\".status.conditions[?(@.type==\\\"Completed\\\")]"
		".status\"},"
		"{\"name\":\"Suspended\",\"type\":\"string\",\"jsonPath\":\".spec.suspend\",\"description\":\"Whether the "
		"JobSet is suspended\"},"
		"{\"name\":\"Age\",\"type\":\"date\",\"jsonPath\":\".metadata.creationTimestamp\"},"
		"{\"name\":\"StartTime\",\"type\":\"date\",\"jsonPath\":\".status.startTime\",\"description\":"
		"\"Time the JobSet became active\"}]",
		0, NULL);
	json_t *version = json_pack("{s:s,s:b,s:b,s:{s:{}},s:o,s:{s:o}}", "name", "v1alpha2", "served", 1, "storage", 1,
				    "subresources", "status", "additionalPrinterColumns", cols, "schema",
				    "openAPIV3Schema", schema);
	return json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:s,s:{s:s,s:s,s:s,s:s},s:s,s:[o]}}", "apiVersion",
			 "apiextensions.k8s.io/v1", "kind", "CustomResourceDefinition", "metadata", "name",
			 "jobsets.jobset.x-k8s.io", "annotations", "jobset.x-k8s.io/generated-by",
			 "tools/crdgen from src/api/codec.c and the Kubernetes OpenAPI v3 documents", "spec", "group",
			 JS_API_GROUP, "names", "kind", JS_KIND, "listKind", "JobSetList", "plural", "jobsets",
			 "singular", "jobset", "scope", "Namespaced", "versions", version);
}

int main(int argc, char **argv)
{
	const char *batch = NULL, *core = NULL, *out = NULL;
	static const struct option opts[] = {
		{"batch", required_argument, NULL, 'b'},
		{"core", required_argument, NULL, 'c'},
		{"output", required_argument, NULL, 'o'},
		{NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		if (c == 'b')
			batch = optarg;
		else if (c == 'c')
			core = optarg;
		else if (c == 'o')
			out = optarg;
		else
			return 2;
	}
	if (!batch || !core) {
		fprintf(stderr, "usage: jobset-crdgen --batch BATCH_V1.json --core CORE_V1.json [-o OUT.yaml]\n");
		return 2;
	}
	json_t *b = load(batch), *k = load(core);
	if (!b || !k)
		return 1;
	json_t *schemas = json_object();
	json_object_update(schemas, json_object_get(json_object_get(k, "components"), "schemas"));
	json_object_update(schemas, json_object_get(json_object_get(b, "components"), "schemas"));
	struct gen g = {.schemas = schemas};

	json_t *schema = js_codec_openapi_schema();
	json_object_set_new(json_object_get(schema, "properties"), "metadata", json_pack("{s:s}", "type", "object"));
	for (size_t i = 0; i < JS_ARRAY_SIZE(overlay); i++)
		set(schema, overlay[i].path, overlay[i].json);

	json_t *tmpl = convert_ref(&g, REF_PREFIX "io.k8s.api.batch.v1.JobTemplateSpec");
	finish(tmpl);
	json_object_set_new(tmpl, "description", json_string("Template of the child Jobs (batch/v1 JobTemplateSpec)."));
	json_object_set_new(json_object_get(at(schema, "spec.replicatedJobs[]"), "properties"), "template", tmpl);
	json_t *sched = json_loads(sched_schema, 0, NULL);
	if (!sched) {
		fprintf(stderr, "jobset-crdgen: bad spec.scheduling schema\n");
		return 1;
	}
	json_object_set_new(json_object_get(at(schema, "spec"), "properties"), "scheduling", sched);
	json_t *pvc = convert_ref(&g, REF_PREFIX "io.k8s.api.core.v1.PersistentVolumeClaim");
	finish(pvc);
	json_object_set_new(at(schema, "spec.volumeClaimPolicies[].templates"), "items", pvc);
	if (g.errors) {
		fprintf(stderr, "jobset-crdgen: %d problem(s) in the OpenAPI documents\n", g.errors);
		return 1;
	}

	json_t *doc = crd(schema);
	struct js_buf text;
	js_buf_init(&text, 0);
	int r = js_buf_puts(&text, "# Generated by tools/crdgen (tools/crdgen/regen.sh); do not edit.\n");
	if (r == 0)
		r = js_emit_yaml(doc, 1, &text);
	if (r < 0) {
		fprintf(stderr, "jobset-crdgen: %s\n", js_strerror(r));
		return 1;
	}
	FILE *f = out ? fopen(out, "w") : stdout;
	if (!f || fwrite(text.p, 1, text.len, f) != text.len || (out && fclose(f) != 0)) {
		perror(out ? out : "stdout");
		return 1;
	}
	js_buf_done(&text);
	json_decref(doc);
	json_decref(schemas);
	json_decref(b);
	json_decref(k);
	return 0;
}
