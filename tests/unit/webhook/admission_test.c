/*
 * admission_test.c - the four admission webhooks through js_webhook_review(),
 * AdmissionReview in, AdmissionReview out, as a table: the request (path,
 * operation, object from inline YAML plus a JSON merge patch, old object),
 * and what the response must say: allowed, HTTP code of the Status, message
 * and cause field paths, and values at paths of the patched object.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "support/testutil.h"
#include "webhook/admission.h"
#include "webhook/jsonpatch.h"
#include "webhook/webhook.h"

static const char base_yaml[] =
	"apiVersion: jobset.x-k8s.io/v1alpha2\n"
	"kind: JobSet\n"
	"metadata: {name: js, namespace: default}\n"
	"spec:\n"
	"  replicatedJobs:\n"
	"  - name: rj\n"
	"    replicas: 2\n"
	"    template:\n"
	"      spec:\n"
	"        completions: 2\n"
	"        parallelism: 2\n"
	"        template:\n"
	"          spec:\n"
	"            containers: [{name: test, image: 'bash:latest'}]\n";

/* The same JobSet as the mutating webhook leaves it. */
#define DEFAULTED                                                                                             \
	"{\"spec\":{\"successPolicy\":{\"operator\":\"All\"},\"startupPolicy\":{\"startupPolicyOrder\":\"AnyOrder\"}," \
	"\"network\":{\"enableDNSHostnames\":true,\"publishNotReadyAddresses\":true},"                              \
	"\"replicatedJobs\":[{\"name\":\"rj\",\"groupName\":\"default\",\"replicas\":2,\"template\":{\"spec\":{"   \
	"\"completionMode\":\"Indexed\",\"completions\":2,\"parallelism\":2,\"template\":{\"spec\":{"                \
	"\"restartPolicy\":\"OnFailure\",\"containers\":[{\"name\":\"test\",\"image\":\"bash:latest\"}]}}}}}]}}"

static const char pod_yaml[] =
	"apiVersion: v1\n"
	"kind: Pod\n"
	"metadata:\n"
	"  generateName: js-rj-0-1-\n"
	"  namespace: default\n"
	"  labels:\n"
	"    jobset.sigs.k8s.io/jobset-name: js\n"
	"    jobset.sigs.k8s.io/replicatedjob-name: rj\n"
	"    jobset.sigs.k8s.io/job-index: '0'\n"
	"    jobset.sigs.k8s.io/job-key: abc123\n"
	"  annotations:\n"
	"    jobset.sigs.k8s.io/jobset-name: js\n"
	"    alpha.jobset.sigs.k8s.io/exclusive-topology: topology.kubernetes.io/zone\n"
	"    batch.kubernetes.io/job-completion-index: '1'\n"
	"  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: js-rj-0, uid: job-uid, controller: true}]\n"
	"spec:\n"
	"  containers: [{name: c, image: busybox}]\n";

#define LEADER "{\"metadata\":{\"annotations\":{\"batch.kubernetes.io/job-completion-index\":\"0\"}}}"
#define NO_EXCLUSIVE "{\"metadata\":{\"annotations\":{\"alpha.jobset.sigs.k8s.io/exclusive-topology\":null}}}"
/* A pod of a ReplicatedJob with a deadline, as the controller renders it
 * (api/render.c), not exclusive. */
#define PROGRESS_ANN                                                                                        \
	"\"annotations\":{\"alpha.jobset.sigs.k8s.io/exclusive-topology\":null,"                              \
	"\"jobset.sigs.k8s.io/progress-deadline-seconds\":\"30\",\"jobset.sigs.k8s.io/progress-startup-seconds\":\"90\"}"
#define PROGRESS "{\"metadata\":{" PROGRESS_ANN "}}"
#define HEARTBEAT_ENV "{\"name\":\"JOBSET_PROGRESS_FILE\",\"value\":\"/run/jobset/progress/heartbeat\"}"
#define WITH_SELECTOR "{\"spec\":{\"nodeSelector\":{\"topology.kubernetes.io/zone\":\"zone-1\"}}}"

/* Fake cluster state for the lookups, chosen per case. */
enum world {
	W_NONE = 0,
	W_LEADER_SCHEDULED = 1,   /* leader js-rj-0-0-xxxxx on node n1 (zone-1) */
	W_LEADER_PENDING = 2,     /* leader exists, no node yet */
	W_TWO_LEADERS = 4,
	W_LEADER_OTHER_OWNER = 8,
	W_PVC_OTHER = 16,         /* PVC data-js exists with another spec */
	W_NODE_NO_LABEL = 32,
	W_RESTART_JOB_GATE = 64,
	W_NODE_GONE = 128,        /* the leader's node cannot be read */
	W_UPSTREAM = 256,         /* --exclusive-placement=webhook; else gates, where pod
				     webhooks must make no lookup at all */
	W_PROGRESS = 512,         /* the ProgressDeadline gate on */
	W_WATCHER_IMAGE = 1024,   /* --progress-watcher-image img:1 */
};

struct expect_at {
	const char *path;  /* dotted path in the patched object */
	const char *json;  /* its expected value as JSON; NULL = absent */
};

struct rcase {
	const char *id;
	const char *path;
	const char *op;
	bool pod;             /* object is pod_yaml, else base_yaml */
	const char *patch;    /* merge patch on the object, or NULL */
	const char *old;      /* merge patch on the base for oldObject (UPDATE); "" = same as base */
	unsigned world;
	bool allowed;
	int code;             /* Status code when rejected */
	const char *message;  /* substring of Status.message */
	const char *cause;    /* a details.causes[].field, or NULL */
	bool has_patch;
	struct expect_at at[4];
};

#define JSV JS_WEBHOOK_PATH_VALIDATE_JOBSET
#define JSM JS_WEBHOOK_PATH_MUTATE_JOBSET
#define PDM JS_WEBHOOK_PATH_MUTATE_POD
#define PDV JS_WEBHOOK_PATH_VALIDATE_POD

static const struct rcase cases[] = {
	/* mjobset.kb.io (SPEC §4.2; acceptance WH-001..019). */
	{"mutate-defaults", JSM, "CREATE", false, NULL, NULL, 0, true, 0, NULL, NULL, true,
	 {{"spec.successPolicy", "{\"operator\":\"All\"}"},
	  {"spec.startupPolicy", "{\"startupPolicyOrder\":\"AnyOrder\"}"},
	  {"spec.network", "{\"enableDNSHostnames\":true,\"publishNotReadyAddresses\":true}"},
	  {"spec.replicatedJobs.0.template.spec.completionMode", "\"Indexed\""}}},
	{"mutate-restart-policy", JSM, "CREATE", false, NULL, NULL, 0, true, 0, NULL, NULL, true,
	 {{"spec.replicatedJobs.0.template.spec.template.spec.restartPolicy", "\"OnFailure\""},
	  {"spec.replicatedJobs.0.groupName", "\"default\""},
	  {"spec.network.subdomain", NULL}}},
	{"mutate-keeps-user-values", JSM, "CREATE", false,
	 "{\"spec\":{\"successPolicy\":{\"operator\":\"Any\"},\"network\":{\"enableDNSHostnames\":false},"
	 "\"replicatedJobs\":[{\"name\":\"rj\",\"template\":{\"spec\":{\"completionMode\":\"NonIndexed\","
	 "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"t\",\"image\":\"b\"}]}}}}}]}}",
	 NULL, 0, true, 0, NULL, NULL, true,
	 {{"spec.successPolicy.operator", "\"Any\""},
	  {"spec.network.enableDNSHostnames", "false"},
	  {"spec.network.publishNotReadyAddresses", "true"},
	  {"spec.replicatedJobs.0.template.spec.completionMode", "\"NonIndexed\""}}},
	{"mutate-rule-names", JSM, "CREATE", false,
	 "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"name\":\"keep\",\"action\":\"FailJobSet\"},{\"action\":\"RestartJobSet\"}]},"
	 "\"volumeClaimPolicies\":[{\"templates\":[]}]}}",
	 NULL, 0, true, 0, NULL, NULL, true,
	 {{"spec.failurePolicy.rules.0.name", "\"keep\""},
	  {"spec.failurePolicy.rules.1.name", "\"failurePolicyRule1\""},
	  {"spec.failurePolicy.restartStrategy", "\"Recreate\""},
	  {"spec.volumeClaimPolicies.0.retentionPolicy", "{\"whenDeleted\":\"Delete\"}"}}},
	{"mutate-generate-name", JSM, "CREATE", false, "{\"metadata\":{\"name\":null,\"generateName\":\"js-\"}}", NULL, 0,
	 true, 0, NULL, NULL, true, {{"metadata.name", NULL}, {"metadata.generateName", "\"js-\""}, {"spec.network.subdomain", NULL}}},
	{"mutate-idempotent", JSM, "CREATE", false, DEFAULTED, NULL, 0, true, 0, NULL, NULL, false, {{0}}},
	{"mutate-update-untouched", JSM, "UPDATE", false, NULL, "", 0, true, 0, NULL, NULL, false, {{0}}},
	/* vjobset.kb.io CREATE (SPEC §5.3; acceptance WH-030..144). */
	{"validate-ok", JSV, "CREATE", false, DEFAULTED, NULL, 0, true, 0, NULL, NULL, false, {{0}}},
	{"validate-subdomain", JSV, "CREATE", false, "{\"spec\":{\"network\":{\"subdomain\":\"Bad_Sub\"}}}", NULL, 0,
	 false, 422, "JobSet.jobset.x-k8s.io \"js\" is invalid: ", "spec.network.subdomain", false, {{0}}},
	{"validate-managed-by", JSV, "CREATE", false, "{\"spec\":{\"managedBy\":\"no-slash\"}}", NULL, 0, false, 422,
	 "spec.managedBy: Invalid value: \"no-slash\"", "spec.managedBy", false, {{0}}},
	{"validate-name-too-long", JSV, "CREATE", false,
	 "{\"metadata\":{\"name\":\"a123456789a123456789a123456789a123456789a123456789a123456789\"}}", NULL, 0, false, 422,
	 "JobSet name is too long", "spec.replicatedJobs[0].name", false, {{0}}},
	{"validate-depends-on-first", JSV, "CREATE", false,
	 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"rj\",\"dependsOn\":[],\"template\":{\"spec\":{\"completionMode\":\"Indexed\","
	 "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"t\",\"image\":\"b\"}]}}}}}]}}",
	 NULL, 0, false, 422, "the first ReplicatedJob cannot have dependsOn", "spec.replicatedJobs[0].dependsOn", false, {{0}}},
	{"validate-restart-job-gate-off", JSV, "CREATE", false,
	 "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"name\":\"r\",\"action\":\"RestartJob\"}]}}}", NULL, 0, false, 422,
	 "need the RestartJob feature gate", "spec.failurePolicy.rules[0].action", false, {{0}}},
	{"validate-restart-job-gate-on", JSV, "CREATE", false,
	 "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"name\":\"r\",\"action\":\"RestartJob\"}]}}}", NULL,
	 W_RESTART_JOB_GATE, true, 0, NULL, NULL, false, {{0}}},
	{"validate-several-bracketed", JSV, "CREATE", false,
	 "{\"spec\":{\"managedBy\":\"x\",\"network\":{\"subdomain\":\"Bad\"}}}", NULL, 0, false, 422,
	 "is invalid: [", "spec.managedBy", false, {{0}}},
	{"validate-pvc-exists-other-spec", JSV, "CREATE", false,
	 "{\"spec\":{\"volumeClaimPolicies\":[{\"templates\":[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"accessModes\":"
	 "[\"ReadWriteOnce\"]}}],\"retentionPolicy\":{\"whenDeleted\":\"Retain\"}}],\"replicatedJobs\":[{\"name\":\"rj\","
	 "\"template\":{\"spec\":{\"completionMode\":\"Indexed\",\"template\":{\"spec\":{\"restartPolicy\":\"Never\","
	 "\"containers\":[{\"name\":\"t\",\"image\":\"b\",\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/d\"}]}]}}}}}]}}",
	 NULL, W_PVC_OTHER, false, 422, "does not match the spec of the existing PVC data-js in namespace default",
	 "spec.volumeClaimPolicies[0].template[0].spec", false, {{0}}},
	/* vjobset.kb.io UPDATE (SPEC §5.4; acceptance WH-150..172). */
	{"update-suspend-ok", JSV, "UPDATE", false, "{\"spec\":{\"suspend\":true}}", "", 0, true, 0, NULL, NULL, false,
	 {{0}}},
	{"update-managed-by", JSV, "UPDATE", false, "{\"spec\":{\"managedBy\":\"example.com/other\"}}", "", 0, false, 422,
	 "spec.managedBy: Invalid value", "spec.managedBy", false, {{0}}},
	{"update-replicas", JSV, "UPDATE", false,
	 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"rj\",\"replicas\":3,\"template\":{\"spec\":{\"completions\":2,"
	 "\"parallelism\":2,\"template\":{\"spec\":{\"containers\":[{\"name\":\"test\",\"image\":\"bash:latest\"}]}}}}}]}}",
	 "", 0, false, 422, "cannot be changed after creation", "spec.replicatedJobs", false, {{0}}},
	{"delete-never-validated", JSV, "DELETE", false, "{\"spec\":{\"managedBy\":\"x\"}}", NULL, 0, true, 0, NULL, NULL,
	 false, {{0}}},
	/* mpod.kb.io (SPEC §9.2). */
	{"pod-leader-affinity", PDM, "CREATE", true, LEADER, NULL, 0, true, 0, NULL, NULL, true,
	 {{"spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution.0.topologyKey",
	   "\"topology.kubernetes.io/zone\""},
	  {"spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution.0.labelSelector.matchExpressions.0",
	   "{\"key\":\"jobset.sigs.k8s.io/job-key\",\"operator\":\"In\",\"values\":[\"abc123\"]}"},
	  {"spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution.0.labelSelector.matchExpressions.2",
	   "{\"key\":\"jobset.sigs.k8s.io/priority\",\"operator\":\"In\",\"values\":[\"\"]}"},
	  {"spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution.0.namespaceSelector", "{}"}}},
	{"pod-priority-label", PDM, "CREATE", true, "{\"spec\":{\"priority\":100}}", NULL, W_LEADER_PENDING, true, 0,
	 NULL, NULL, true, {{"metadata.labels.jobset.sigs.k8s.io/priority", "\"100\""}, {"spec.nodeSelector", NULL}}},
	{"pod-follower-pinned", PDM, "CREATE", true, NULL, NULL, W_LEADER_SCHEDULED | W_UPSTREAM, true, 0, NULL, NULL, true,
	 {{"spec.nodeSelector", "{\"topology.kubernetes.io/zone\":\"zone-1\"}"}}},
	{"pod-follower-leader-pending", PDM, "CREATE", true, NULL, NULL, W_LEADER_PENDING | W_UPSTREAM, true, 0, NULL, NULL, false,
	 {{0}}},
	{"pod-follower-node-unlabelled", PDM, "CREATE", true, NULL, NULL, W_LEADER_SCHEDULED | W_NODE_NO_LABEL | W_UPSTREAM, false,
	 403, "node does not have topology label: topology.kubernetes.io/zone", NULL, false, {{0}}},
	{"pod-not-exclusive", PDM, "CREATE", true, NO_EXCLUSIVE, NULL, 0, true, 0, NULL, NULL, false, {{0}}},
	{"pod-not-jobset", PDM, "CREATE", true, "{\"metadata\":{\"annotations\":{\"jobset.sigs.k8s.io/jobset-name\":null}},"
	 "\"spec\":{\"priority\":5}}", NULL, W_LEADER_SCHEDULED, true, 0, NULL, NULL, false, {{0}}}, /* PWH-001 */
	{"pod-node-selector-strategy", PDM, "CREATE", true,
	 "{\"metadata\":{\"annotations\":{\"alpha.jobset.sigs.k8s.io/node-selector\":\"true\"}},\"spec\":{\"priority\":5}}",
	 NULL, W_LEADER_SCHEDULED, true, 0, NULL, NULL, false, {{0}}}, /* PWH-002 */
	{"pod-leader-keeps-terms", PDM, "CREATE", true,
	 "{\"metadata\":{\"annotations\":{\"batch.kubernetes.io/job-completion-index\":\"0\"}},\"spec\":{\"affinity\":{"
	 "\"nodeAffinity\":{\"x\":1},\"podAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"topologyKey\":\"t\"}]}}}}",
	 NULL, 0, true, 0, NULL, NULL, true,
	 {{"spec.affinity.nodeAffinity", "{\"x\":1}"},
	  {"spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution.0", "{\"topologyKey\":\"t\"}"},
	  {"spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution.1.topologyKey",
	   "\"topology.kubernetes.io/zone\""}}}, /* PWH-006 */
	{"pod-follower-node-missing", PDM, "CREATE", true, NULL, NULL, W_LEADER_SCHEDULED | W_NODE_GONE | W_UPSTREAM, false, 404,
	 "not found", NULL, false, {{0}}},
	/* Hang detection (gate ProgressDeadline; webhook/watcher.c). */
	{"progress-injected", PDM, "CREATE", true, PROGRESS, NULL, W_PROGRESS, true, 0, NULL, NULL, true,
	 {{"spec.volumes", "[{\"name\":\"jobset-progress\",\"emptyDir\":{\"sizeLimit\":\"1Mi\"}}]"},
	  {"spec.containers.0.env", "[" HEARTBEAT_ENV "]"},
	  {"spec.containers.0.volumeMounts",
	   "[{\"name\":\"jobset-progress\",\"mountPath\":\"/run/jobset/progress\"}]"},
	  {"metadata.labels.jobset.sigs.k8s.io/progress-watch", "\"watched\""}}},
	{"progress-watcher", PDM, "CREATE", true, PROGRESS, NULL, W_PROGRESS, true, 0, NULL, NULL, true,
	 {{"spec.initContainers.0.command", "[\"/usr/local/bin/in-place-restart-agent\",\"--watch-progress\"]"},
	  {"spec.initContainers.0.env",
	   "[" HEARTBEAT_ENV ",{\"name\":\"JOBSET_PROGRESS_DEADLINE_SECONDS\",\"value\":\"30\"},"
	   "{\"name\":\"JOBSET_PROGRESS_STARTUP_SECONDS\",\"value\":\"90\"}]"},
	  {"spec.initContainers.0.restartPolicy", "\"Always\""},
	  {"spec.initContainers.0.image", "\"jobset-controller:" JS_VERSION "\""}}},
	{"progress-watcher-image", PDM, "CREATE", true, PROGRESS, NULL, W_PROGRESS | W_WATCHER_IMAGE, true, 0, NULL,
	 NULL, true,
	 {{"spec.initContainers.0.image", "\"img:1\""},
	  {"spec.initContainers.0.name", "\"jobset-progress\""},
	  {"spec.initContainers.0.volumeMounts",
	   "[{\"name\":\"jobset-progress\",\"mountPath\":\"/run/jobset/progress\",\"readOnly\":true}]"},
	  {"spec.initContainers.0.resources.limits", "{\"cpu\":\"10m\",\"memory\":\"32Mi\"}"}}},
	{"progress-keeps-existing", PDM, "CREATE", true,
	 "{\"metadata\":{" PROGRESS_ANN "},\"spec\":{\"volumes\":[{\"name\":\"data\",\"emptyDir\":{}}],"
	 "\"initContainers\":[{\"name\":\"init\",\"image\":\"x\"}],\"containers\":[{\"name\":\"c\",\"image\":\"b\","
	 "\"env\":[{\"name\":\"A\",\"value\":\"$(JOBSET_PROGRESS_FILE)\"}],"
	 "\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/d\"}]}]}}",
	 NULL, W_PROGRESS, true, 0, NULL, NULL, true,
	 {{"spec.volumes.0", "{\"name\":\"data\",\"emptyDir\":{}}"},
	  {"spec.containers.0.env", "[" HEARTBEAT_ENV ",{\"name\":\"A\",\"value\":\"$(JOBSET_PROGRESS_FILE)\"}]"},
	  {"spec.initContainers.0.env", "[" HEARTBEAT_ENV "]"},
	  {"spec.initContainers.1.name", "\"jobset-progress\""}}},
	{"progress-node-selector-strategy", PDM, "CREATE", true,
	 "{\"metadata\":{\"annotations\":{\"alpha.jobset.sigs.k8s.io/node-selector\":\"true\","
	 "\"jobset.sigs.k8s.io/progress-deadline-seconds\":\"30\"}},\"spec\":{\"priority\":5}}",
	 NULL, W_PROGRESS, true, 0, NULL, NULL, true,
	 {{"spec.volumes.0.name", "\"jobset-progress\""},
	  {"spec.initContainers.0.env.2", "{\"name\":\"JOBSET_PROGRESS_STARTUP_SECONDS\",\"value\":\"30\"}"},
	  {"metadata.labels.jobset.sigs.k8s.io/priority", NULL},
	  {"spec.affinity", NULL}}},
	{"progress-gate-off", PDM, "CREATE", true, PROGRESS, NULL, 0, true, 0, NULL, NULL, false, {{0}}},
	{"progress-no-deadline", PDM, "CREATE", true, NO_EXCLUSIVE, NULL, W_PROGRESS, true, 0, NULL, NULL, false, {{0}}},
	{"progress-garbled-deadline", PDM, "CREATE", true,
	 "{\"metadata\":{\"annotations\":{\"alpha.jobset.sigs.k8s.io/exclusive-topology\":null,"
	 "\"jobset.sigs.k8s.io/progress-deadline-seconds\":\"10s\"}}}",
	 NULL, W_PROGRESS, true, 0, NULL, NULL, false, {{0}}},
	{"progress-once", PDM, "CREATE", true,
	 "{\"metadata\":{" PROGRESS_ANN ",\"labels\":{\"jobset.sigs.k8s.io/progress-watch\":\"watched\"}}}", NULL,
	 W_PROGRESS, true, 0, NULL, NULL, false, {{0}}},
	{"progress-volume-clash", PDM, "CREATE", true,
	 "{\"metadata\":{" PROGRESS_ANN "},\"spec\":{\"volumes\":[{\"name\":\"jobset-progress\",\"emptyDir\":{}}]}}",
	 NULL, W_PROGRESS, false, 403,
	 "spec.volumes: the volume name 'jobset-progress' is reserved for hang detection", NULL, false, {{0}}},
	{"progress-container-clash", PDM, "CREATE", true,
	 "{\"metadata\":{" PROGRESS_ANN "},\"spec\":{\"containers\":[{\"name\":\"jobset-progress\",\"image\":\"b\"}]}}",
	 NULL, W_PROGRESS, false, 403, "the container name 'jobset-progress' is reserved", NULL, false, {{0}}},
	{"progress-mount-clash", PDM, "CREATE", true,
	 "{\"metadata\":{" PROGRESS_ANN "},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"b\","
	 "\"volumeMounts\":[{\"name\":\"x\",\"mountPath\":\"/run/jobset/progress\"}]}]}}",
	 NULL, W_PROGRESS, false, 403, "container 'c' mounts a volume at /run/jobset/progress", NULL, false, {{0}}},
	{"progress-clash-gate-off", PDM, "CREATE", true,
	 "{\"metadata\":{" PROGRESS_ANN "},\"spec\":{\"volumes\":[{\"name\":\"jobset-progress\",\"emptyDir\":{}}]}}",
	 NULL, 0, true, 0, NULL, NULL, false, {{0}}},
	/* vjobset.kb.io keeps refusing the annotations while the gate is off. */
	{"validate-progress-gate-off", JSV, "CREATE", false,
	 "{\"metadata\":{\"annotations\":{\"jobset.sigs.k8s.io/progress-deadline-seconds\":\"30\"}}}", NULL, 0, false,
	 422, "hang detection needs the ProgressDeadline feature gate",
	 "metadata.annotations[jobset.sigs.k8s.io/progress-deadline-seconds]", false, {{0}}},
	{"validate-progress-gate-on", JSV, "CREATE", false,
	 "{\"metadata\":{\"annotations\":{\"jobset.sigs.k8s.io/progress-deadline-seconds\":\"30\"}}}", NULL,
	 W_PROGRESS, true, 0, NULL, NULL, false, {{0}}},
	{"validate-progress-out-of-range", JSV, "CREATE", false,
	 "{\"metadata\":{\"annotations\":{\"jobset.sigs.k8s.io/progress-deadline-seconds\":\"0\"}}}", NULL,
	 W_PROGRESS, false, 422, "a whole number of seconds from 1 to 2147483647",
	 "metadata.annotations[jobset.sigs.k8s.io/progress-deadline-seconds]", false, {{0}}},
	/* vpod.kb.io (SPEC §9.3). */
	{"vpod-no-selector", PDV, "CREATE", true, NULL, NULL, W_LEADER_SCHEDULED | W_UPSTREAM, false, 403,
	 "follower pod node selector not set", NULL, false, {{0}}},
	{"vpod-selector-missing-key", PDV, "CREATE", true, "{\"spec\":{\"nodeSelector\":{\"a\":\"b\"}}}", NULL, W_LEADER_SCHEDULED | W_UPSTREAM, false, 403, "missing selector: topology.kubernetes.io/zone", NULL, false, {{0}}},
	{"vpod-leader-pending", PDV, "CREATE", true, WITH_SELECTOR, NULL, W_LEADER_PENDING | W_UPSTREAM, false, 403,
	 "leader pod not yet scheduled", NULL, false, {{0}}},
	{"vpod-no-leader", PDV, "CREATE", true, WITH_SELECTOR, NULL, W_UPSTREAM, false, 403,
	 "expected 1 leader pod (js-rj-0-0), but got 0", NULL, false, {{0}}},
	{"vpod-two-leaders", PDV, "CREATE", true, WITH_SELECTOR, NULL, W_TWO_LEADERS | W_UPSTREAM, false, 403, "but got 2", NULL,
	 false, {{0}}},
	{"vpod-other-owner", PDV, "CREATE", true, WITH_SELECTOR, NULL, W_LEADER_SCHEDULED | W_LEADER_OTHER_OWNER | W_UPSTREAM, false,
	 403, "follower pod owner UID (job-uid) != leader pod owner UID (other)", NULL, false, {{0}}},
	{"vpod-ok", PDV, "CREATE", true, WITH_SELECTOR, NULL, W_LEADER_SCHEDULED | W_UPSTREAM, true, 0, NULL, NULL, false, {{0}}},
	/* Gates mode (docs/differences.md): the follower is labelled and gated
	 * whatever its leader's state, with no lookup; never refused for it. */
	{"gates-follower-gated", PDM, "CREATE", true, NULL, NULL, W_LEADER_PENDING, true, 0, NULL, NULL, true,
	 {{"spec.schedulingGates", "[{\"name\":\"jobset.sigs.k8s.io/exclusive-placement\"}]"},
	  {"metadata.labels.jobset.sigs.k8s.io/exclusive-placement", "\"gated\""},
	  {"spec.nodeSelector", NULL}}},
	{"gates-follower-leader-bound", PDM, "CREATE", true, NULL, NULL, W_LEADER_SCHEDULED, true, 0, NULL, NULL, true,
	 {{"spec.schedulingGates", "[{\"name\":\"jobset.sigs.k8s.io/exclusive-placement\"}]"},
	  {"spec.nodeSelector", NULL}}},
	{"gates-follower-keeps-user-gates", PDM, "CREATE", true,
	 "{\"spec\":{\"schedulingGates\":[{\"name\":\"example.com/quota\"}]}}", NULL, 0, true, 0, NULL, NULL, true,
	 {{"spec.schedulingGates",
	   "[{\"name\":\"example.com/quota\"},{\"name\":\"jobset.sigs.k8s.io/exclusive-placement\"}]"}}},
	{"gates-follower-gate-once", PDM, "CREATE", true,
	 "{\"metadata\":{\"labels\":{\"jobset.sigs.k8s.io/exclusive-placement\":\"gated\"}},"
	 "\"spec\":{\"schedulingGates\":[{\"name\":\"jobset.sigs.k8s.io/exclusive-placement\"}]}}",
	 NULL, 0, true, 0, NULL, NULL, false, {{0}}},
	{"gates-leader-labelled-not-gated", PDM, "CREATE", true, LEADER, NULL, 0, true, 0, NULL, NULL, true,
	 {{"metadata.labels.jobset.sigs.k8s.io/exclusive-placement", "\"gated\""},
	  {"spec.schedulingGates", NULL},
	  {"spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution.0.topologyKey",
	   "\"topology.kubernetes.io/zone\""}}},
	{"gates-bound-pod-untouched", PDM, "CREATE", true, "{\"spec\":{\"nodeName\":\"n1\"}}", NULL, 0, true, 0,
	 NULL, NULL, false, {{0}}},
	{"gates-node-selector-strategy-unlabelled", PDM, "CREATE", true,
	 "{\"metadata\":{\"annotations\":{\"alpha.jobset.sigs.k8s.io/node-selector\":\"true\"}}}", NULL, 0, true, 0,
	 NULL, NULL, false, {{0}}},
	{"gates-vpod-gated-allowed", PDV, "CREATE", true,
	 "{\"spec\":{\"schedulingGates\":[{\"name\":\"jobset.sigs.k8s.io/exclusive-placement\"}]}}", NULL,
	 W_LEADER_PENDING, true, 0, NULL, NULL, false, {{0}}},
	{"gates-vpod-no-leader-allowed", PDV, "CREATE", true,
	 "{\"spec\":{\"schedulingGates\":[{\"name\":\"jobset.sigs.k8s.io/exclusive-placement\"}]}}", NULL, 0,
	 true, 0, NULL, NULL, false, {{0}}},
	{"gates-vpod-selector-allowed", PDV, "CREATE", true, WITH_SELECTOR, NULL, 0, true, 0, NULL, NULL, false, {{0}}},
	{"gates-vpod-ungated-refused", PDV, "CREATE", true, NULL, NULL, W_LEADER_SCHEDULED, false, 403,
	 "neither the scheduling gate jobset.sigs.k8s.io/exclusive-placement nor a node selector for "
	 "topology.kubernetes.io/zone", NULL, false, {{0}}},
	{"vpod-leader-always-ok", PDV, "CREATE", true, LEADER, NULL, 0, true, 0, NULL, NULL, false, {{0}}},
};

/* ---- fake lookups ---- */

static json_t *leader_pod(unsigned world, const char *suffix)
{
	char buf[1024];
	snprintf(buf, sizeof(buf),
		 "{\"metadata\":{\"name\":\"js-rj-0-0-%s\",\"annotations\":{\"alpha.jobset.sigs.k8s.io/exclusive-topology\":"
		 "\"topology.kubernetes.io/zone\"},\"ownerReferences\":[{\"uid\":\"%s\",\"controller\":true}]},"
		 "\"spec\":{%s},\"status\":{\"phase\":\"%s\"}}",
		 suffix, world & W_LEADER_OTHER_OWNER ? "other" : "job-uid",
		 world & W_LEADER_SCHEDULED ? "\"nodeName\":\"n1\"" : "", world & W_LEADER_SCHEDULED ? "Running" : "Pending");
	json_t *p = json_loads(buf, 0, NULL);
	assert_non_null(p);
	return p;
}

static int fake_list_pods(void *ctx, const char *ns, const json_t *match, json_t **ret, char **ret_err)
{
	(void)ret_err;
	unsigned world = *(unsigned *)ctx;
	assert_string_equal(ns, "default");
	assert_string_equal(js_json_str(match, "jobset.sigs.k8s.io/job-index"), "0");
	json_t *pods = json_array();
	if (world & (W_LEADER_SCHEDULED | W_LEADER_PENDING | W_TWO_LEADERS))
		json_array_append_new(pods, leader_pod(world, "abcde"));
	if (world & W_TWO_LEADERS)
		json_array_append_new(pods, leader_pod(world, "fghij"));
	/* Not candidates: a finished leader and a pod of another index. */
	json_t *done = leader_pod(world, "zzzzz");
	json_object_set_new(json_object_get(done, "status"), "phase", json_string("Succeeded"));
	json_array_append_new(pods, done);
	*ret = pods;
	return 0;
}

static int fake_get_node(void *ctx, const char *name, json_t **ret, int *ret_code, char **ret_err)
{
	unsigned world = *(unsigned *)ctx;
	if (strcmp(name, "n1") != 0 || (world & W_NODE_GONE)) {
		*ret_code = 404;
		*ret_err = strdup("nodes \"x\" not found");
		return JS_ENOTFOUND;
	}
	*ret = json_loads(world & W_NODE_NO_LABEL ? "{\"metadata\":{\"name\":\"n1\",\"labels\":{}}}"
						  : "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"topology.kubernetes.io/zone\":\"zone-1\"}}}",
			  0, NULL);
	return 0;
}

/* Gates mode: the pod webhooks must answer without looking anything up. */
static int no_list_pods(void *ctx, const char *ns, const json_t *match, json_t **ret, char **ret_err)
{
	(void)ctx, (void)ns, (void)match, (void)ret, (void)ret_err;
	fail_msg("gates mode listed pods");
	return -1;
}

static int no_get_node(void *ctx, const char *name, json_t **ret, int *ret_code, char **ret_err)
{
	(void)ctx, (void)name, (void)ret, (void)ret_code, (void)ret_err;
	fail_msg("gates mode read a node");
	return -1;
}

static enum js_pvc_lookup fake_pvc(void *ctx, const char *ns, const char *name, json_t **ret_spec, char **ret_err)
{
	(void)ns;
	(void)ret_err;
	unsigned world = *(unsigned *)ctx;
	if (!(world & W_PVC_OTHER) || strcmp(name, "data-js") != 0)
		return JS_PVC_NOT_FOUND;
	*ret_spec = json_loads("{\"accessModes\":[\"ReadWriteMany\"]}", 0, NULL);
	return JS_PVC_FOUND;
}

/* ---- driver ---- */

static json_t *object_for(const struct rcase *c, const char *patch)
{
	json_t *o = tu_yaml(c->pod ? pod_yaml : base_yaml);
	if (patch && patch[0])
		tu_merge_patch(o, patch);
	return o;
}

static json_t *review_for(const struct rcase *c)
{
	json_t *req = json_object();
	json_object_set_new(req, "uid", json_string("0d5e7c3a-uid"));
	json_object_set_new(req, "operation", json_string(c->op));
	json_object_set_new(req, "namespace", json_string("default"));
	json_object_set_new(req, "kind", json_pack("{s:s,s:s,s:s}", "group", c->pod ? "" : "jobset.x-k8s.io", "version",
						   c->pod ? "v1" : "v1alpha2", "kind", c->pod ? "Pod" : "JobSet"));
	json_object_set_new(req, "resource", json_pack("{s:s}", "resource", c->pod ? "pods" : "jobsets"));
	if (strcmp(c->op, "DELETE") != 0)
		json_object_set_new(req, "object", object_for(c, c->patch));
	if (c->old)
		json_object_set_new(req, "oldObject", object_for(c, c->old[0] ? c->old : DEFAULTED));
	if (c->old && strcmp(c->op, "DELETE") != 0 && !c->pod) {
		/* Updates compare against the defaulted object. */
		tu_merge_patch(json_object_get(req, "object"), DEFAULTED);
		if (c->patch)
			tu_merge_patch(json_object_get(req, "object"), c->patch);
	}
	return json_pack("{s:s,s:s,s:o}", "apiVersion", "admission.k8s.io/v1", "kind", "AdmissionReview", "request",
			 req);
}

static json_t *decode_patch(const char *b64)
{
	/* Tiny base64 decoder for the check. */
	static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(b64);
	char *out = calloc(n, 1);
	size_t o = 0;
	unsigned acc = 0;
	int bits = 0;
	for (size_t i = 0; i < n && b64[i] != '='; i++) {
		const char *p = strchr(tbl, b64[i]);
		assert_non_null(p);
		acc = acc << 6 | (unsigned)(p - tbl);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)(acc >> bits & 0xff);
		}
	}
	json_t *j = json_loadb(out, o, 0, NULL);
	free(out);
	return j;
}

/* Dotted path with numeric segments as array indexes; keys may contain
 * dots only as the last segment's "a/b.c" label keys, so we try the longest
 * remaining key first. */
static json_t *at_path(json_t *root, const char *path)
{
	json_t *cur = root;
	const char *p = path;
	while (cur && *p) {
		if (json_is_object(cur)) {
			json_t *whole = json_object_get(cur, p);
			if (whole)
				return whole;
		}
		size_t n = strcspn(p, ".");
		char key[256];
		snprintf(key, sizeof(key), "%.*s", (int)n, p);
		if (json_is_array(cur))
			cur = json_array_get(cur, strtoul(key, NULL, 10));
		else
			cur = json_object_get(cur, key);
		p += n;
		if (*p == '.')
			p++;
	}
	return cur;
}

static int failures;

/* Report a failing row and go on with the next one (leaks nothing that
 * matters: the test fails). */
#define CASE_FAIL(...)                   \
	do {                             \
		print_error(__VA_ARGS__); \
		print_error("\n");       \
		failures++;              \
	} while (0)

static void run_case(const struct rcase *c)
{
	unsigned world = c->world;
	struct js_webhook_admit_cfg cfg = {
		.strict = true,
		.gates = {.restart_job = (c->world & W_RESTART_JOB_GATE) != 0,
			  .progress_deadline = (c->world & W_PROGRESS) != 0},
		.watcher_image = c->world & W_WATCHER_IMAGE ? "img:1" : NULL,
		.placement = c->world & W_UPSTREAM ? JS_PLACEMENT_WEBHOOK : JS_PLACEMENT_GATES,
		.lookups = {&world, fake_pvc, fake_list_pods, fake_get_node},
	};
	if (c->pod && !(c->world & W_UPSTREAM)) {
		cfg.lookups.list_pods = no_list_pods;
		cfg.lookups.get_node = no_get_node;
	}
	json_t *review = review_for(c);
	char *body = json_dumps(review, 0);
	json_t *out = NULL;
	int http = 0;
	int r = js_webhook_review(&cfg, c->path, body, strlen(body), &out, &http);
	if (r != 0 || http != 200)
		CASE_FAIL("%s: review returned %d, HTTP %d", c->id, r, http);
	const json_t *resp = json_object_get(out, "response");
	assert_string_equal(js_json_str(out, "kind"), "AdmissionReview");
	assert_string_equal(js_json_str(resp, "uid"), "0d5e7c3a-uid");
	bool allowed = json_is_true(json_object_get(resp, "allowed"));
	const json_t *st = json_object_get(resp, "status");
	if (allowed != c->allowed)
		CASE_FAIL("%s: allowed %d, want %d (%s)", c->id, allowed, c->allowed,
			 st ? js_json_str(st, "message") : "no status");
	if (!c->allowed) {
		if (json_integer_value(json_object_get(st, "code")) != c->code)
			CASE_FAIL("%s: code %lld, want %d", c->id, (long long)json_integer_value(json_object_get(st, "code")),
				 c->code);
		const char *msg = js_json_str(st, "message");
		if (!msg || !strstr(msg, c->message))
			CASE_FAIL("%s: message '%s' lacks '%s'", c->id, msg ? msg : "", c->message);
		if (c->code == 422) {
			assert_string_equal(js_json_str(st, "reason"), "Invalid");
			assert_string_equal(js_json_str(json_object_get(st, "details"), "kind"), "JobSet");
			assert_string_equal(js_json_str(json_object_get(st, "details"), "group"), "jobset.x-k8s.io");
		}
		if (c->cause) {
			bool found = false;
			size_t i;
			json_t *cause;
			json_array_foreach(json_object_get(json_object_get(st, "details"), "causes"), i, cause)
			{
				found |= strcmp(js_json_str(cause, "field"), c->cause) == 0;
			}
			if (!found)
				CASE_FAIL("%s: no cause with field %s in %s", c->id, c->cause, msg);
		}
	}
	const char *patch64 = js_json_str(resp, "patch");
	if (c->has_patch != (patch64 != NULL))
		CASE_FAIL("%s: patch %s, want %s", c->id, patch64 ? "present" : "absent", c->has_patch ? "one" : "none");
	if (patch64) {
		assert_string_equal(js_json_str(resp, "patchType"), "JSONPatch");
		json_t *patch = decode_patch(patch64);
		assert_non_null(patch);
		json_t *obj = json_deep_copy(json_object_get(json_object_get(review, "request"), "object"));
		if (js_jsonpatch_apply(obj, patch) != 0)
			CASE_FAIL("%s: patch does not apply", c->id);
		for (size_t i = 0; i < JS_ARRAY_SIZE(c->at) && c->at[i].path; i++) {
			json_t *got = at_path(obj, c->at[i].path);
			json_t *want = c->at[i].json ? json_loads(c->at[i].json, JSON_DECODE_ANY, NULL) : NULL;
			if (!(got == NULL && want == NULL) && !(got && want && json_equal(got, want))) {
				char *g = got ? json_dumps(got, JSON_ENCODE_ANY) : strdup("(absent)");
				CASE_FAIL("%s: at %s got %s, want %s", c->id, c->at[i].path, g,
					 c->at[i].json ? c->at[i].json : "(absent)");
			}
			json_decref(want);
		}
		json_decref(obj);
		json_decref(patch);
	}
	json_decref(out);
	free(body);
	json_decref(review);
}

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < JS_ARRAY_SIZE(cases); i++)
		run_case(&cases[i]);
	assert_int_equal(failures, 0);
}

/* Malformed requests and unknown paths are answered, never crash. */
static void test_malformed(void **state)
{
	(void)state;
	static const struct {
		const char *path, *body;
		int rc, http;
	} rows[] = {
		{JSV, "not json", JS_EINVALID, 400},
		{JSV, "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"x\"}}",
		 JS_EINVALID, 400},
		{JSV, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{}}", JS_EINVALID, 400},
		{JSV, "[]", JS_EINVALID, 400},
		{"/nope", "{}", JS_ENOTFOUND, 404},
	};
	struct js_webhook_admit_cfg cfg = {.strict = true};
	for (size_t i = 0; i < JS_ARRAY_SIZE(rows); i++) {
		json_t *out = NULL;
		int http = 0;
		int r = js_webhook_review(&cfg, rows[i].path, rows[i].body, strlen(rows[i].body), &out, &http);
		assert_int_equal(r, rows[i].rc);
		assert_int_equal(http, rows[i].http);
		assert_int_equal(json_integer_value(json_object_get(out, "code")), rows[i].http);
		json_decref(out);
	}
	/* A request without an object is answered 400 inside the review. */
	const char *noobj = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\","
			    "\"operation\":\"CREATE\"}}";
	json_t *out = NULL;
	int http = 0;
	assert_int_equal(js_webhook_review(&cfg, JSM, noobj, strlen(noobj), &out, &http), 0);
	const json_t *resp = json_object_get(out, "response");
	assert_false(json_is_true(json_object_get(resp, "allowed")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(resp, "status"), "code")), 400);
	json_decref(out);
}

/* SPEC §5.1.7: one error unbracketed; causes carry type, body and field. */
static void test_status_invalid(void **state)
{
	(void)state;
	struct js_diag d = {0};
	js_diag_add(&d, JS_DIAG_INVALID, "spec.managedBy", "\"x\"", "field is immutable");
	json_t *st = js_admission_status_invalid("jobset.x-k8s.io", "JobSet", "js", &d);
	assert_string_equal(js_json_str(st, "message"),
			    "JobSet.jobset.x-k8s.io \"js\" is invalid: spec.managedBy: Invalid value: \"x\": field is immutable");
	const json_t *cause = json_array_get(json_object_get(json_object_get(st, "details"), "causes"), 0);
	assert_string_equal(js_json_str(cause, "reason"), "FieldValueInvalid");
	assert_string_equal(js_json_str(cause, "message"), "Invalid value: \"x\": field is immutable");
	assert_string_equal(js_json_str(cause, "field"), "spec.managedBy");
	json_decref(st);
	js_diag_add(&d, JS_DIAG_INTERNAL, NULL, NULL, "boom");
	js_diag_add(&d, JS_DIAG_INTERNAL, NULL, NULL, "boom"); /* duplicates collapse in the message */
	st = js_admission_status_invalid("jobset.x-k8s.io", "JobSet", "js", &d);
	assert_string_equal(js_json_str(st, "message"),
			    "JobSet.jobset.x-k8s.io \"js\" is invalid: [spec.managedBy: Invalid value: \"x\": field is "
			    "immutable, <nil>: Internal error: boom]");
	assert_int_equal(json_array_size(json_object_get(json_object_get(st, "details"), "causes")), 3);
	cause = json_array_get(json_object_get(json_object_get(st, "details"), "causes"), 1);
	assert_string_equal(js_json_str(cause, "field"), "<nil>");
	assert_string_equal(js_json_str(cause, "reason"), "InternalError");
	json_decref(st);
	js_diag_done(&d);
}

/* vjobset.kb.io with the KEP-969 gate on: KEP-969's spec.scheduling names
 * pass quietly; our first names (deprecated aliases) pass with admission
 * warnings naming the new names, which kubectl shows; both names of one
 * field are refused, the cause at the old name's path. */
static void test_scheduling_names(void **state)
{
	(void)state;
	static const struct {
		const char *scheduling;
		bool allowed;
		const char *warning; /* a substring of response.warnings[], NULL: no warnings */
		const char *cause;
	} rows[] = {
		{"{\"schedulingPolicy\":{\"gang\":{}},\"disruptionMode\":{\"all\":{}},\"replicatedJobs\":[{"
		 "\"targetReplicatedJobs\":[\"rj\"]}]}",
		 true, NULL, NULL},
		{"{\"policy\":{\"gang\":{}}}", true,
		 "spec.scheduling.policy: deprecated field name, use spec.scheduling.schedulingPolicy", NULL},
		{"{\"replicatedJobPolicies\":[{\"targetReplicatedJob\":\"rj\",\"disruption\":\"Single\"}]}", true,
		 "spec.scheduling.replicatedJobPolicies[0].disruption: deprecated field name, use "
		 "spec.scheduling.replicatedJobPolicies[0].disruptionMode",
		 NULL},
		{"{\"policy\":{\"gang\":{}},\"schedulingPolicy\":{\"gang\":{}}}", false, NULL,
		 "spec.scheduling.policy"},
	};
	for (size_t i = 0; i < JS_ARRAY_SIZE(rows); i++) {
		struct js_webhook_admit_cfg cfg = {.strict = true, .gates = {.workload_aware_scheduling = true}};
		struct rcase c = {.id = "scheduling", .path = JSV, .op = "CREATE"};
		json_t *review = review_for(&c);
		json_t *obj = json_object_get(json_object_get(review, "request"), "object");
		tu_merge_patch(obj, DEFAULTED);
		json_object_set_new(json_object_get(obj, "spec"), "scheduling", json_loads(rows[i].scheduling, 0, NULL));
		char *body = json_dumps(review, 0);
		json_t *out = NULL;
		int http = 0;
		assert_int_equal(js_webhook_review(&cfg, JSV, body, strlen(body), &out, &http), 0);
		const json_t *resp = json_object_get(out, "response");
		const json_t *warnings = json_object_get(resp, "warnings");
		bool allowed = json_is_true(json_object_get(resp, "allowed"));
		bool found = false;
		size_t wi;
		json_t *w;
		json_array_foreach(js_json_unconst(warnings), wi, w) found |=
			rows[i].warning && strstr(json_string_value(w), rows[i].warning) != NULL;
		if (allowed != rows[i].allowed || (rows[i].warning ? !found : rows[i].allowed && warnings != NULL)) {
			char *s = json_dumps(resp, 0);
			fail_msg("row %zu: response %s", i, s);
		}
		if (rows[i].cause) {
			const json_t *causes = js_json_path(json_object_get(resp, "status"), "details.causes");
			bool has = false;
			json_array_foreach(js_json_unconst(causes), wi, w) has |=
				strcmp(js_json_str(w, "field"), rows[i].cause) == 0;
			assert_true(has);
		}
		json_decref(out);
		free(body);
		json_decref(review);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_status_invalid),
		cmocka_unit_test(test_scheduling_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
