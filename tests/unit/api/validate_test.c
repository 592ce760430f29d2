/*
 * validate_test.c - every validation rule of SPEC §5 and the validation rows
 * of acceptance-cases.md §3-§4, as a table: a merge patch on a base JobSet,
 * whether it is accepted, and (when rejected) the field path and a piece of
 * our message.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/codec.h"
#include "api/defaults.h"
#include "api/validate.h"
#include "support/testutil.h"

/* BASE-W of acceptance-cases.md §0.5 with an Indexed, 1-completion Job. */
static const char base_yaml[] =
	"apiVersion: jobset.x-k8s.io/v1alpha2\n"
	"kind: JobSet\n"
	"metadata: {name: js, namespace: default}\n"
	"spec:\n"
	"  replicatedJobs:\n"
	"  - name: rj\n"
	"    replicas: 1\n"
	"    template:\n"
	"      spec:\n"
	"        completionMode: Indexed\n"
	"        completions: 1\n"
	"        parallelism: 1\n"
	"        template:\n"
	"          spec:\n"
	"            restartPolicy: Never\n"
	"            containers: [{name: test, image: 'bash:latest'}]\n";

#define POD(extra) "\"template\":{\"spec\":{\"restartPolicy\":\"Never\"," extra "\"containers\":[{\"name\":\"test\",\"image\":\"bash\"}]}}"
#define MOUNT_POD(vol) "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"test\",\"image\":\"bash\",\"volumeMounts\":[{\"name\":\"" vol "\",\"mountPath\":\"/d\"}]}]}}"
#define IDX "\"completionMode\":\"Indexed\",\"completions\":1,\"parallelism\":1,"
#define RJ(name, reps, jobspec) "{\"name\":\"" name "\",\"replicas\":" #reps ",\"template\":{\"spec\":{" jobspec POD("") "}}}"
#define RJS_BODY(list) "\"spec\":{\"replicatedJobs\":[" list "]}"
#define RJS(list) "{" RJS_BODY(list) "}"
#define VCP(name, extra) "\"volumeClaimPolicies\":[{\"templates\":[{\"metadata\":{\"name\":\"" name "\"},\"spec\":{\"accessModes\":[\"ReadWriteMany\"]}}]" extra "}]"
#define VRJ(vol) "\"replicatedJobs\":[{\"name\":\"job-1\",\"template\":{\"spec\":{" IDX MOUNT_POD(vol) "}}}]"
#define A10 "aaaaaaaaaa"
#define A50 A10 A10 A10 A10 A10
#define A60 A50 A10

enum flags {
	F_RESTART_JOB = 1,
	F_IN_PLACE = 2,
	F_LOOSE = 4,      /* strict checks off: upstream's behaviour */
	F_NO_DEFAULT = 8, /* validate without defaulting (webhook bypassed) */
	F_PVC_SAME = 16,  /* an existing PVC with the template's spec */
	F_PVC_OTHER = 32, /* an existing PVC with another spec */
	F_PVC_ERROR = 64, /* the PVC lookup fails */
	F_DEADLINE = 128, /* gate JobSetActiveDeadlineSeconds (KEP-1186) */
	F_PROGRESS = 256, /* gate ProgressDeadline (ours) */
};

struct vcase {
	const char *id;
	const char *patch;
	unsigned flags;
	bool valid;
	const char *path;   /* expected field path of one error */
	const char *needle; /* expected piece of its message */
};

static const struct vcase cases[] = {
	/* 3.1 general, naming and size */
	{"WH-030 minimal", NULL, 0, true, NULL, NULL},
	{"WH-031 no replicatedJobs", RJS(""), 0, true, NULL, NULL},
	{"WH-032 zero replicas", RJS(RJ("rj", 0, IDX)), 0, true, NULL, NULL},
	{"WH-033 negative replicas", RJS(RJ("rj", -1, IDX)), 0, false, "spec.replicatedJobs[0].replicas", "0 or more"},
	/* Upstream's row had replicas 2147483647; our bound on child Jobs
	 * (below) refuses that first, so the product is reached by parallelism. */
	{"WH-034 replicas x parallelism overflow",
	 RJS("{\"name\":\"a\",\"replicas\":2,\"template\":{\"spec\":{\"parallelism\":2147483647,\"completions\":1," POD("") "}}}"),
	 0, false, "spec.replicatedJobs[0].replicas", "over 2147483647"},
	{"WH-035 overflow boundary",
	 RJS("{\"name\":\"a\",\"replicas\":1,\"template\":{\"spec\":{\"completionMode\":\"NonIndexed\",\"parallelism\":2147483647,"
	     "\"completions\":1," POD("") "}}}"),
	 0, true, NULL, NULL},
	/* Issue 22: names at the length limits. Without a subdomain the
	 * Service is named after the JobSet, even with no ReplicatedJobs. */
	{"Service name of 64 characters", "{\"metadata\":{\"name\":\"" A60 "aaaa\"}," RJS_BODY("") "}", 0, false,
	 "metadata.name", "a Service name is a DNS-1035 label: at most 63 lower-case letters, digits or '-', starting with a letter (this one has 64 characters)"},
	{"Service name of 253 characters", "{\"metadata\":{\"name\":\"" A60 A60 A60 A60 "aaaaaaaaaaaaa\"}," RJS_BODY("") "}", 0,
	 false, "metadata.name", "(this one has 253 characters)"},
	{"Service name of 63 characters", "{\"metadata\":{\"name\":\"" A60 "aaa\"}," RJS_BODY("") "}", 0, true, NULL, NULL},
	{"Service name starting with a digit", "{\"metadata\":{\"name\":\"1abc\"}," RJS_BODY("") "}", 0, false, "metadata.name",
	 "DNS-1035"},
	{"Service name: upstream does not check it", "{\"metadata\":{\"name\":\"" A60 "aaaa\"}," RJS_BODY("") "}", F_LOOSE, true,
	 NULL, NULL},
	{"a subdomain names the Service", "{\"metadata\":{\"name\":\"" A60 "aaaa\"},\"spec\":{\"network\":{\"subdomain\":\"s\"},"
	 "\"replicatedJobs\":[]}}", 0, true, NULL, NULL},
	{"no Service without DNS hostnames", "{\"metadata\":{\"name\":\"" A60 "aaaa\"},\"spec\":{\"network\":"
	 "{\"enableDNSHostnames\":false},\"replicatedJobs\":[]}}", 0, true, NULL, NULL},
	/* Issue 22, docs/differences.md "Size limits": at most 100,000 child Jobs. */
	{"limit: 2,000,000,000 replicas", RJS("{\"name\":\"a\",\"replicas\":2000000000,\"template\":{\"spec\":{" POD("") "}}}"), 0,
	 false, "spec.replicatedJobs[0].replicas", "would have 2000000000 child Jobs (replicas summed over its ReplicatedJobs); at most 100000"},
	{"limit: replicas 2147483647", RJS("{\"name\":\"a\",\"replicas\":2147483647,\"template\":{\"spec\":{" POD("") "}}}"), 0, false,
	 "spec.replicatedJobs[0].replicas", "at most 100000 are allowed"},
	{"limit: upstream's rules pass it", RJS("{\"name\":\"a\",\"replicas\":2147483647,\"template\":{\"spec\":{" POD("") "}}}"),
	 F_LOOSE, false, "spec.replicatedJobs[0].replicas", "at most 100000 are allowed"},
	{"limit: 100,000 child Jobs", RJS(RJ("a", 100000, "")), 0, true, NULL, NULL},
	{"limit: 100,001 child Jobs", RJS(RJ("a", 100001, "")), 0, false, "spec.replicatedJobs[0].replicas",
	 "would have 100001 child Jobs"},
	{"limit: the sum over ReplicatedJobs", RJS(RJ("a", 60000, "") "," RJ("b", 0, "") "," RJ("c", 40001, "") "," RJ("d", 1, "")), 0,
	 false, "spec.replicatedJobs[2].replicas", "would have 100002 child Jobs"},
	{"limit: the sum at the bound", RJS(RJ("a", 60000, "") "," RJ("b", 40000, "")), 0, true, NULL, NULL},
	{"WH-036 success target missing", "{\"spec\":{\"successPolicy\":{\"operator\":\"All\",\"targetReplicatedJobs\":[\"does not exist\"]}}}", 0,
	 false, "spec.successPolicy.targetReplicatedJobs[0]", "does not exist"},
	{"WH-037 subdomain too long", "{\"spec\":{\"network\":{\"subdomain\":\"" A60 "aaaa\"}}}", 0, false, "spec.network.subdomain",
	 "too long"},
	{"WH-038 subdomain bad chars 1123", "{\"spec\":{\"network\":{\"subdomain\":\"Bad_Sub\"}}}", 0, false, "spec.network.subdomain",
	 "DNS-1123 subdomain"},
	{"WH-038 subdomain bad chars 1035", "{\"spec\":{\"network\":{\"subdomain\":\"Bad_Sub\"}}}", 0, false, "spec.network.subdomain",
	 "DNS-1035"},
	{"WH-039 subdomain with a dot", "{\"spec\":{\"network\":{\"subdomain\":\"a.b\"}}}", 0, false, "spec.network.subdomain", "DNS-1035"},
	{"WH-040 rjob name makes bad Job name", RJS(RJ("username.llama65b", 1, IDX)), 0, false, "spec.replicatedJobs[0].name", "DNS-1035"},
	{"WH-041 groupName too long", RJS("{\"name\":\"rj\",\"groupName\":\"" A60 "aaaa\",\"template\":{\"spec\":{" IDX POD("") "}}}"), 0, false,
	 "spec.replicatedJobs[0].groupName", "too long"},
	{"WH-042 groupName bad chars", RJS("{\"name\":\"rj\",\"groupName\":\"Group_A\",\"template\":{\"spec\":{" IDX POD("") "}}}"), 0, false,
	 "spec.replicatedJobs[0].groupName", "DNS-1035"},
	{"WH-043 longest Job name over 63", "{\"metadata\":{\"name\":\"" A60 "aa\"},"  RJS_BODY(RJ("rj", 101, "")) "}", F_LOOSE, false,
	 "spec.replicatedJobs[0].name", "child Job names would be 69"},
	{"WH-044 Job name of exactly 63 (upstream)", "{\"metadata\":{\"name\":\"" A50 "aaaaaaaa\"},"  RJS_BODY(RJ("rj", 1, "")) "}", F_LOOSE, true, NULL, NULL},
	{"WH-044 Job name of 64", "{\"metadata\":{\"name\":\"" A50 "aaaaaaaaa\"},"  RJS_BODY(RJ("rj", 1, "")) "}", F_LOOSE, false,
	 "spec.replicatedJobs[0].name", "child Job names would be 64"},
	{"WH-044 strict: hostname of a 63-char Job name is too long", "{\"metadata\":{\"name\":\"" A50 "aaaaaaaa\"}}", 0, false,
	 "spec.replicatedJobs[0].name", "pod names would be"},
	{"WH-045 longest pod name over 63", "{\"metadata\":{\"name\":\"" A50 "aaaaaa\"}}", 0, false, "spec.replicatedJobs[0].name",
	 "pod names would be 69"},
	{"WH-046a pod name exactly 63", "{\"metadata\":{\"name\":\"" A50 "\"}}", 0, true, NULL, NULL},
	{"WH-046b pod name 64", "{\"metadata\":{\"name\":\"" A50 "a\"}}", 0, false, "spec.replicatedJobs[0].name", "pod names would be 64"},
	{"WH-047 generateName simulated name",
	 "{\"metadata\":{\"name\":null,\"generateName\":\"" A10 A10 A10 A10 "aaaaaaaaa-\"},"  RJS_BODY(RJ("worker", 1, "")) "}", F_LOOSE, false,
	 "spec.replicatedJobs[0].name", "child Job names would be 64"},
	{"WH-050 errors aggregate",
	 "{\"metadata\":{\"name\":\"" A60 "aa\"},\"spec\":{\"successPolicy\":{\"operator\":\"All\",\"targetReplicatedJobs\":[\"x\"]}}}", 0, false,
	 "spec.successPolicy.targetReplicatedJobs[0]", "x"},
	{"issue 22: Job activeDeadlineSeconds 0 (batch/v1 asks >= 0)", RJS(RJ("rj", 1, IDX "\"activeDeadlineSeconds\":0,")), 0, true,
	 NULL, NULL},
	{"issue 22: Job activeDeadlineSeconds int64 max (an int64 field)",
	 RJS(RJ("rj", 1, IDX "\"activeDeadlineSeconds\":9223372036854775807,")), 0, true, NULL, NULL},
	{"Job activeDeadlineSeconds -1", RJS(RJ("rj", 1, IDX "\"activeDeadlineSeconds\":-1,")), 0, false,
	 "spec.replicatedJobs[0].template.spec.activeDeadlineSeconds", "between 0 and 9223372036854775807"},
	{"Job backoffLimit 2147483648 (an int32 field)", RJS(RJ("rj", 1, IDX "\"backoffLimit\":2147483648,")), 0, false,
	 "spec.replicatedJobs[0].template.spec.backoffLimit", "between 0 and 2147483647"},
	{"metadata.name not a DNS-1123 subdomain", "{\"metadata\":{\"name\":\"Bad_Name\"}}", 0, false, "metadata.name", "DNS-1123"},
	{"WH-048 generateName overlong PVC name",
	 "{\"metadata\":{\"name\":null,\"generateName\":\"" A10 A10 A10 A10 "aaaaaaaaa-\"},\"spec\":{" VCP("datasets", "") ",\"replicatedJobs\":[{\"name\":\"w\",\"template\":{\"spec\":{" IDX MOUNT_POD("datasets") "}}}]}}",
	 F_LOOSE, false, "spec.volumeClaimPolicies[0].template[0].name", "64 characters"},
	{"WH-101 coordinator label too long (JobSet name)",
	 "{\"metadata\":{\"name\":\"" A60 "\"},\"spec\":{\"coordinator\":{\"replicatedJob\":\"a\"},\"replicatedJobs\":[" RJ("a", 1, IDX) "]}}", F_LOOSE,
	 false, "spec.coordinator", "not a valid value for label"},
	{"WH-103 coordinator label too long (subdomain)",
	 "{\"spec\":{\"network\":{\"subdomain\":\"" A60 "\"},\"coordinator\":{\"replicatedJob\":\"a\"},\"replicatedJobs\":[" RJ("a", 1, IDX) "]}}", 0,
	 false, "spec.coordinator", "not a valid value for label"},
	{"WH-111 chain",
	 RJS(RJ("job-1", 1, IDX) ",{\"name\":\"job-2\",\"dependsOn\":[{\"name\":\"job-1\",\"status\":\"Complete\"}],\"template\":{\"spec\":{" IDX POD("") "}}},{\"name\":\"job-3\",\"dependsOn\":[{\"name\":\"job-2\",\"status\":\"Ready\"}],\"template\":{\"spec\":{" IDX POD("") "}}}"),
	 0, true, NULL, NULL},
	{"WH-112 fan-in",
	 RJS(RJ("job-1", 1, IDX) "," RJ("job-2", 1, IDX) ",{\"name\":\"job-3\",\"dependsOn\":[{\"name\":\"job-1\",\"status\":\"Complete\"},{\"name\":\"job-2\",\"status\":\"Ready\"}],\"template\":{\"spec\":{" IDX POD("") "}}}"),
	 0, true, NULL, NULL},
	{"WH-114 one valid and one forward dependency",
	 RJS(RJ("job-1", 1, IDX) ",{\"name\":\"job-2\",\"dependsOn\":[{\"name\":\"job-1\",\"status\":\"Ready\"},{\"name\":\"job-3\",\"status\":\"Ready\"}],\"template\":{\"spec\":{" IDX POD("") "}}}," RJ("job-3", 1, IDX)),
	 0, false, "spec.replicatedJobs[1].dependsOn[1].name", "cannot depend on 'job-3'"},
	{"WH-120 dependsOn with AnyOrder",
	 "{\"spec\":{\"startupPolicy\":{\"startupPolicyOrder\":\"AnyOrder\"},\"replicatedJobs\":[" RJ("job-1", 1, IDX) ",{\"name\":\"job-2\",\"dependsOn\":[{\"name\":\"job-1\",\"status\":\"Ready\"}],\"template\":{\"spec\":{" IDX POD("") "}}}]}}",
	 0, true, NULL, NULL},
	{"WH-126 mounted only by an initContainer of another rjob",
	 "{\"spec\":{" VCP("test-volume", "") ",\"replicatedJobs\":[" RJ("job-1", 1, IDX) ",{\"name\":\"job-2\",\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"initContainers\":[{\"name\":\"test-init\",\"image\":\"b\",\"volumeMounts\":[{\"name\":\"test-volume\",\"mountPath\":\"/d\"}]}],\"containers\":[{\"name\":\"t\",\"image\":\"b\"}]}}}}}]}}",
	 0, true, NULL, NULL},
	{"WH-090 in-place completions unset",
	 "{\"spec\":{\"failurePolicy\":{\"restartStrategy\":\"InPlaceRestart\"},\"replicatedJobs\":[" RJ("job-1", 1,
	 "\"parallelism\":1,\"backoffLimit\":2147483647,\"podReplacementPolicy\":\"Failed\",") "]}}",
	 F_IN_PLACE | F_LOOSE, false, "spec.replicatedJobs[0].template.spec.completions", "equal"},
	{"WH-092 in-place checks run per rjob",
	 "{\"spec\":{\"failurePolicy\":{\"restartStrategy\":\"InPlaceRestart\"},\"replicatedJobs\":[" RJ("job-1", 1,
	 "\"parallelism\":1,\"completions\":1,\"backoffLimit\":2147483647,\"podReplacementPolicy\":\"Failed\",") "," RJ("job-2", 1,
	 "\"parallelism\":1,\"completions\":1,\"backoffLimit\":1,\"podReplacementPolicy\":\"Failed\",") "]}}",
	 F_IN_PLACE, false, "spec.replicatedJobs[1].template.spec.backoffLimit", "job-2"},
	{"WH-038 subdomain valid", "{\"spec\":{\"network\":{\"subdomain\":\"my-net\"}}}", 0, true, NULL, NULL},
	{"metadata.namespace not a DNS-1123 label", "{\"metadata\":{\"namespace\":\"Bad_NS\"}}", 0, false, "metadata.namespace", "DNS-1123 label"},
	{"label key invalid", "{\"metadata\":{\"labels\":{\"bad key!\":\"v\"}}}", 0, false, "metadata.labels[bad key!]", "label key"},
	{"label value too long", "{\"metadata\":{\"labels\":{\"k\":\"" A60 "aaaaaaaaaa\"}}}", 0, false, "metadata.labels[k]", "label value"},
	{"pod template label value invalid",
	 RJS("{\"name\":\"a\",\"template\":{\"spec\":{" IDX "\"template\":{\"metadata\":{\"labels\":{\"app\":\"-x-\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}}}}"),
	 0, false, "spec.replicatedJobs[0].template.spec.template.metadata.labels[app]", "label value"},
	{"annotation key invalid", "{\"metadata\":{\"annotations\":{\"a/b/c\":\"v\"}}}", 0, false, "metadata.annotations[a/b/c]", "annotation key"},
	/* docs/differences.md (e): restart on request */
	{"restart request a whole number", "{\"metadata\":{\"annotations\":{\"jobset.sigs.k8s.io/restart-request\":\"3\"}}}", 0, true, NULL, NULL},
	{"restart request not a number", "{\"metadata\":{\"annotations\":{\"jobset.sigs.k8s.io/restart-request\":\"now\"}}}", 0, false,
	 "metadata.annotations[jobset.sigs.k8s.io/restart-request]", "the attempt to end"},
	{"restart request negative", "{\"metadata\":{\"annotations\":{\"jobset.sigs.k8s.io/restart-request\":\"-1\"}}}", 0, false,
	 "metadata.annotations[jobset.sigs.k8s.io/restart-request]", "whole number"},
	{"bad JobSet name: shape, not length", "{\"metadata\":{\"name\":\"demo-x\"}," RJS_BODY(RJ("Bad_X", 1, IDX)) "}", 0, false,
	 "spec.replicatedJobs[0].name", "not a DNS-1035 label"},
	/* 3.2 managedBy */
	{"WH-055 managedBy not a domain path", "{\"spec\":{\"managedBy\":\"notDomainPrefixedPathControllerName\"}}", 0, false, "spec.managedBy",
	 "domain-prefixed"},
	{"WH-056 managedBy too long", "{\"spec\":{\"managedBy\":\"foo.bar/" A60 "aaa\"}}", 0, false, "spec.managedBy", "63 bytes"},
	{"WH-057 managedBy reserved", "{\"spec\":{\"managedBy\":\"jobset.sigs.k8s.io/jobset-controller\"}}", 0, true, NULL, NULL},
	{"WH-059 managedBy kueue", "{\"spec\":{\"managedBy\":\"kueue.x-k8s.io/multikueue\"}}", 0, true, NULL, NULL},
	{"WH-060 managedBy empty", "{\"spec\":{\"managedBy\":\"\"}}", 0, false, "spec.managedBy", "domain-prefixed"},
	/* 3.3 failure policy */
	{"WH-065 valid rule name", "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"name\":\"superAwesomeFailurePolicyRule\",\"action\":\"FailJobSet\"}]}}}",
	 0, true, NULL, NULL},
	{"WH-066 unknown failure reason",
	 "{\"spec\":{\"failurePolicy\":{\"maxRestarts\":1,\"rules\":[{\"action\":\"FailJobSet\",\"onJobFailureReasons\":[\"fakeReason\"]}]}}}", 0,
	 false, "spec.failurePolicy.rules[0].onJobFailureReasons[0]", "fakeReason"},
	{"WH-067 all five reasons",
	 "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"action\":\"FailJobSet\",\"onJobFailureReasons\":[\"BackoffLimitExceeded\","
	 "\"DeadlineExceeded\",\"FailedIndexes\",\"MaxFailedIndexesExceeded\",\"PodFailurePolicy\"]}]}}}",
	 0, true, NULL, NULL},
	{"WH-068 unknown target", "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"action\":\"FailJobSet\",\"targetReplicatedJobs\":[\"fakeReplicatedJob\"]}]}}}",
	 0, false, "spec.failurePolicy.rules[0].targetReplicatedJobs[0]", "fakeReplicatedJob"},
	{"WH-069 empty rule name without defaulting", "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"action\":\"FailJobSet\"}]}}}",
	 F_NO_DEFAULT, false, "spec.failurePolicy.rules[0].name", "length 0"},
	{"WH-013 empty rule name is defaulted, then valid", "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"action\":\"FailJobSet\"}]}}}", 0, true,
	 NULL, NULL},
	{"WH-070 rule name 129", "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"action\":\"FailJobSet\",\"name\":\"" A60 A60 "aaaaaaaaa\"}]}}}", 0,
	 false, "spec.failurePolicy.rules[0].name", "length 129"},
	{"WH-071 rule name 128", "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"action\":\"FailJobSet\",\"name\":\"" A60 A60 "aaaaaaaa\"}]}}}", 0, true,
	 NULL, NULL},
	{"WH-072 duplicate rule names",
	 "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"action\":\"FailJobSet\",\"name\":\"repeatedRuleName\"},{\"action\":\"FailJobSet\",\"name\":\"repeatedRuleName\"}]}}}",
	 0, false, "spec.failurePolicy.rules[0].name", "rules [0 1]"},
	{"WH-073 rule name starts with digit", "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"action\":\"FailJobSet\",\"name\":\"1ruleToRuleThemAll\"}]}}}",
	 0, false, "spec.failurePolicy.rules[0].name", "'1ruleToRuleThemAll'"},
	{"WH-074 rule name ends with comma", "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"action\":\"FailJobSet\",\"name\":\"ruleToRuleThemAll,\"}]}}}",
	 0, false, "spec.failurePolicy.rules[0].name", "'ruleToRuleThemAll,'"},
	{"WH-075 rule names a a_ A:b,c_1",
	 "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"action\":\"FailJobSet\",\"name\":\"a\"},{\"action\":\"FailJobSet\",\"name\":\"a_\"},{\"action\":\"FailJobSet\",\"name\":\"A:b,c_1\"}]}}}",
	 0, true, NULL, NULL},
	{"WH-076 RestartJob with replicas 1025",
	 "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"name\":\"restartJobRule\",\"action\":\"RestartJob\"}]},\"replicatedJobs\":[" RJ("rj", 1025, IDX) "]}}",
	 F_RESTART_JOB, false, "spec.replicatedJobs[0].replicas", "more than 1024"},
	{"WH-077 RestartJobAndIgnoreMaxRestarts with replicas 1025",
	 "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"name\":\"r\",\"action\":\"RestartJobAndIgnoreMaxRestarts\"}]},\"replicatedJobs\":[" RJ("rj", 1025, IDX) "]}}",
	 F_RESTART_JOB, false, "spec.replicatedJobs[0].replicas", "more than 1024"},
	{"WH-078 RestartJob with replicas 1024",
	 "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"name\":\"restartJobRule\",\"action\":\"RestartJob\"}]},\"replicatedJobs\":[" RJ("rj", 1024, IDX) "]}}",
	 F_RESTART_JOB, true, NULL, NULL},
	{"WH-079 RestartJob gate off", "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"name\":\"restartJobRule\",\"action\":\"RestartJob\"}]}}}", 0, false,
	 "spec.failurePolicy.rules[0].action", "RestartJob feature gate"},
	{"WH-081 invalid RE2 pattern (upstream accepts)",
	 "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"action\":\"FailJobSet\",\"onJobFailureMessagePatterns\":[\"(\"]}]}}}", F_LOOSE, true, NULL, NULL},
	{"WH-081 strict: invalid RE2 pattern",
	 "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"action\":\"FailJobSet\",\"onJobFailureMessagePatterns\":[\"(\"]}]}}}", 0, false,
	 "spec.failurePolicy.rules[0].onJobFailureMessagePatterns[0]", "RE2"},
	{"WH-082 action outside enum", "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"action\":\"Explode\"}]}}}", 0, false,
	 "spec.failurePolicy.rules[0].action", "\"FailJobSet\""},
	{"WH-083 restartStrategy outside enum", "{\"spec\":{\"failurePolicy\":{\"restartStrategy\":\"Foo\"}}}", 0, false,
	 "spec.failurePolicy.restartStrategy", "\"BlockingRecreate\""},
	/* 3.4 in-place restart */
	{"WH-085 InPlaceRestart gate off", "{\"spec\":{\"failurePolicy\":{\"restartStrategy\":\"InPlaceRestart\"}}}", 0, false,
	 "spec.failurePolicy.restartStrategy", "InPlaceRestart feature gate"},
	{"WH-086 valid in-place",
	 "{\"spec\":{\"failurePolicy\":{\"restartStrategy\":\"InPlaceRestart\"},\"replicatedJobs\":[" RJ("job-1", 1,
	 "\"parallelism\":1,\"completions\":1,\"backoffLimit\":2147483647,\"podReplacementPolicy\":\"Failed\",") "]}}",
	 F_IN_PLACE, true, NULL, NULL},
	{"WH-087 in-place backoffLimit 0",
	 "{\"spec\":{\"failurePolicy\":{\"restartStrategy\":\"InPlaceRestart\"},\"replicatedJobs\":[" RJ("job-1", 1,
	 "\"parallelism\":1,\"completions\":1,\"backoffLimit\":0,\"podReplacementPolicy\":\"Failed\",") "]}}",
	 F_IN_PLACE, false, "spec.replicatedJobs[0].template.spec.backoffLimit", "2147483647"},
	{"WH-088 in-place podReplacementPolicy",
	 "{\"spec\":{\"failurePolicy\":{\"restartStrategy\":\"InPlaceRestart\"},\"replicatedJobs\":[" RJ("job-1", 1,
	 "\"parallelism\":1,\"completions\":1,\"backoffLimit\":2147483647,\"podReplacementPolicy\":\"TerminatingOrFailed\",") "]}}",
	 F_IN_PLACE, false, "spec.replicatedJobs[0].template.spec.podReplacementPolicy", "Failed"},
	{"WH-089 in-place completions != parallelism",
	 "{\"spec\":{\"failurePolicy\":{\"restartStrategy\":\"InPlaceRestart\"},\"replicatedJobs\":[" RJ("job-1", 1,
	 "\"parallelism\":1,\"completions\":2,\"backoffLimit\":2147483647,\"podReplacementPolicy\":\"Failed\",") "]}}",
	 F_IN_PLACE, false, "spec.replicatedJobs[0].template.spec.completions", "equal"},
	{"WH-091 in-place parallelism unset",
	 "{\"spec\":{\"failurePolicy\":{\"restartStrategy\":\"InPlaceRestart\"},\"replicatedJobs\":[" RJ("job-1", 1,
	 "\"completions\":1,\"backoffLimit\":2147483647,\"podReplacementPolicy\":\"Failed\",") "]}}",
	 F_IN_PLACE, false, "spec.replicatedJobs[0].template.spec.completions", "equal"},
	/* 3.5 coordinator */
	{"WH-095 coordinator rjob missing", "{\"spec\":{\"coordinator\":{\"replicatedJob\":\"fake-rjob\"}}}", 0, false,
	 "spec.coordinator.replicatedJob", "fake-rjob"},
	{"WH-096 coordinator without completions",
	 "{\"spec\":{\"coordinator\":{\"replicatedJob\":\"a\"},\"replicatedJobs\":[" RJ("a", 2, "\"completionMode\":\"Indexed\",") "]}}", F_LOOSE,
	 false, "spec.coordinator.replicatedJob", "Indexed"},
	{"WH-097 coordinator NonIndexed",
	 "{\"spec\":{\"coordinator\":{\"replicatedJob\":\"a\"},\"replicatedJobs\":[" RJ("a", 2, "\"completionMode\":\"NonIndexed\",\"completions\":2,") "]}}",
	 0, false, "spec.coordinator.replicatedJob", "Indexed"},
	{"WH-098 coordinator jobIndex out of range",
	 "{\"spec\":{\"coordinator\":{\"replicatedJob\":\"a\",\"jobIndex\":2},\"replicatedJobs\":[" RJ("a", 2, "\"completionMode\":\"Indexed\",\"completions\":2,\"parallelism\":2,") "]}}",
	 0, false, "spec.coordinator.jobIndex", "job index 2"},
	{"WH-099 coordinator podIndex out of range",
	 "{\"spec\":{\"coordinator\":{\"replicatedJob\":\"a\",\"podIndex\":2},\"replicatedJobs\":[" RJ("a", 2, "\"completionMode\":\"Indexed\",\"completions\":2,\"parallelism\":2,") "]}}",
	 0, false, "spec.coordinator.podIndex", "pod index 2"},
	{"WH-100 coordinator negative jobIndex",
	 "{\"spec\":{\"coordinator\":{\"replicatedJob\":\"a\",\"jobIndex\":-1},\"replicatedJobs\":[" RJ("a", 2, "\"completionMode\":\"Indexed\",\"completions\":2,\"parallelism\":2,") "]}}",
	 0, false, "spec.coordinator.jobIndex", "job index -1"},
	{"WH-102 coordinator label too long (rjob name)",
	 "{\"spec\":{\"coordinator\":{\"replicatedJob\":\"" A60 "\"},\"replicatedJobs\":[" RJ(A60, 1, IDX) "]}}", F_LOOSE, false,
	 "spec.coordinator", "not a valid value for label"},
	{"WH-104 valid coordinator",
	 "{\"spec\":{\"coordinator\":{\"replicatedJob\":\"a\",\"jobIndex\":1,\"podIndex\":1},\"replicatedJobs\":[" RJ("a", 2, "\"completionMode\":\"Indexed\",\"completions\":2,\"parallelism\":2,") "]}}",
	 0, true, NULL, NULL},
	/* 3.6 dependsOn and startup policy */
	{"WH-110 fan-out",
	 RJS(RJ("job-1", 1, IDX) ",{\"name\":\"job-2\",\"dependsOn\":[{\"name\":\"job-1\",\"status\":\"Complete\"}],\"template\":{\"spec\":{" IDX POD("") "}}}"),
	 0, true, NULL, NULL},
	{"WH-113 dependency on a later rjob",
	 RJS(RJ("job-1", 1, IDX) ",{\"name\":\"job-2\",\"dependsOn\":[{\"name\":\"job-3\",\"status\":\"Ready\"}],\"template\":{\"spec\":{" IDX POD("") "}}}," RJ("job-3", 1, IDX)),
	 0, false, "spec.replicatedJobs[1].dependsOn[0].name", "cannot depend on 'job-3'"},
	{"WH-115 dependency on unknown",
	 RJS(RJ("job-1", 1, IDX) ",{\"name\":\"job-2\",\"dependsOn\":[{\"name\":\"invalid\",\"status\":\"Ready\"}],\"template\":{\"spec\":{" IDX POD("") "}}}"),
	 0, false, "spec.replicatedJobs[1].dependsOn[0].name", "'invalid'"},
	{"WH-116 first rjob has dependsOn",
	 RJS("{\"name\":\"job-1\",\"dependsOn\":[],\"template\":{\"spec\":{" IDX POD("") "}}}"), 0, false, "spec.replicatedJobs[0].dependsOn",
	 "first ReplicatedJob"},
	{"WH-117 self dependency (upstream accepts)",
	 RJS(RJ("job-1", 1, IDX) ",{\"name\":\"job-2\",\"dependsOn\":[{\"name\":\"job-2\",\"status\":\"Ready\"}],\"template\":{\"spec\":{" IDX POD("") "}}}"),
	 F_LOOSE, true, NULL, NULL},
	{"WH-117 strict: self dependency",
	 RJS(RJ("job-1", 1, IDX) ",{\"name\":\"job-2\",\"dependsOn\":[{\"name\":\"job-2\",\"status\":\"Ready\"}],\"template\":{\"spec\":{" IDX POD("") "}}}"),
	 0, false, "spec.replicatedJobs[1].dependsOn[0].name", "itself"},
	{"WH-118 dependsOn status outside enum",
	 RJS(RJ("job-1", 1, IDX) ",{\"name\":\"job-2\",\"dependsOn\":[{\"name\":\"job-1\",\"status\":\"Failed\"}],\"template\":{\"spec\":{" IDX POD("") "}}}"),
	 0, false, "spec.replicatedJobs[1].dependsOn[0].status", "\"Complete\""},
	{"WH-119 dependsOn with InOrder",
	 "{\"spec\":{\"startupPolicy\":{\"startupPolicyOrder\":\"InOrder\"},\"replicatedJobs\":[" RJ("job-1", 1, IDX) ",{\"name\":\"job-2\",\"dependsOn\":[{\"name\":\"job-1\",\"status\":\"Ready\"}],\"template\":{\"spec\":{" IDX POD("") "}}}]}}",
	 0, false, "spec", "InOrder and dependsOn"},
	{"WH-121 more than 5 dependsOn",
	 RJS(RJ("j1", 1, IDX) "," RJ("j2", 1, IDX) "," RJ("j3", 1, IDX) "," RJ("j4", 1, IDX) "," RJ("j5", 1, IDX) "," RJ("j6", 1, IDX) ",{\"name\":\"j7\",\"dependsOn\":[{\"name\":\"j1\",\"status\":\"Ready\"},{\"name\":\"j2\",\"status\":\"Ready\"},{\"name\":\"j3\",\"status\":\"Ready\"},{\"name\":\"j4\",\"status\":\"Ready\"},{\"name\":\"j5\",\"status\":\"Ready\"},{\"name\":\"j6\",\"status\":\"Ready\"}],\"template\":{\"spec\":{" IDX POD("") "}}}"),
	 0, false, "spec.replicatedJobs[6].dependsOn", "at most 5"},
	{"WH-122 startupPolicyOrder outside enum", "{\"spec\":{\"startupPolicy\":{\"startupPolicyOrder\":\"Random\"}}}", 0, false,
	 "spec.startupPolicy.startupPolicyOrder", "\"InOrder\""},
	{"WH-123 successPolicy operator outside enum", "{\"spec\":{\"successPolicy\":{\"operator\":\"Some\"}}}", 0, false,
	 "spec.successPolicy.operator", "\"Any\""},
	/* 3.7 volume claim policies */
	{"WH-125 mounted VCP", "{\"spec\":{" VCP("test-volume", "") "," VRJ("test-volume") "}}", 0, true, NULL, NULL},
	{"WH-127 duplicate VCP names",
	 "{\"spec\":{\"volumeClaimPolicies\":[{\"templates\":[{\"metadata\":{\"name\":\"d\"}}]},{\"templates\":[{\"metadata\":{\"name\":\"d\"}}]}]," VRJ("d") "}}",
	 0, false, "spec.volumeClaimPolicies[1].template[0].name", "unique"},
	{"WH-128 VCP name not DNS-1123", "{\"spec\":{" VCP("InvalidVolumeName", "") "," VRJ("InvalidVolumeName") "}}", 0, false,
	 "spec.volumeClaimPolicies[0].template[0].name", "DNS-1123"},
	{"WH-129 PVC name too long", "{\"spec\":{" VCP(A60 "aaaa", "") "," VRJ(A60 "aaaa") "}}", 0, false,
	 "spec.volumeClaimPolicies[0].template[0].name", "67 characters"},
	{"WH-130 VCP not mounted", "{\"spec\":{" VCP("test-volume", "") "}}", 0, false, "spec.replicatedJobs", "test-volume"},
	{"WH-131 pod volume with the VCP name",
	 "{\"spec\":{" VCP("cv", "") ",\"replicatedJobs\":[{\"name\":\"job-1\",\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"volumes\":[{\"name\":\"cv\",\"emptyDir\":{}}],\"containers\":[{\"name\":\"t\",\"image\":\"b\",\"volumeMounts\":[{\"name\":\"cv\",\"mountPath\":\"/d\"}]}]}}}}}]}}",
	 0, false, "spec.replicatedJobs[0].template.spec.template.spec.volumes[0].name", "cv"},
	{"WH-132 existing PVC same spec, Retain",
	 "{\"spec\":{" VCP("test-volume", ",\"retentionPolicy\":{\"whenDeleted\":\"Retain\"}") "," VRJ("test-volume") "}}", F_PVC_SAME, true,
	 NULL, NULL},
	{"WH-133 existing PVC with Delete", "{\"spec\":{" VCP("test-volume", "") "," VRJ("test-volume") "}}", F_PVC_SAME, false,
	 "spec.volumeClaimPolicies[0].retentionPolicy.whenDeleted", "Retain"},
	{"WH-134 existing PVC other spec",
	 "{\"spec\":{" VCP("test-volume", ",\"retentionPolicy\":{\"whenDeleted\":\"Retain\"}") "," VRJ("test-volume") "}}", F_PVC_OTHER, false,
	 "spec.volumeClaimPolicies[0].template[0].spec", "test-volume-js"},
	{"WH-136 PVC lookup error",
	 "{\"spec\":{" VCP("test-volume", ",\"retentionPolicy\":{\"whenDeleted\":\"Retain\"}") "," VRJ("test-volume") "}}", F_PVC_ERROR, false,
	 "spec.volumeClaimPolicies[0].template[0]", "boom"},
	{"WH-137 VCP template namespace",
	 "{\"spec\":{\"volumeClaimPolicies\":[{\"templates\":[{\"metadata\":{\"name\":\"v\",\"namespace\":\"x\"}}]}]," VRJ("v") "}}", 0, false,
	 "spec.volumeClaimPolicies[0].templates[0].metadata.namespace", "namespace"},
	{"WH-140 whenDeleted outside enum", "{\"spec\":{" VCP("v", ",\"retentionPolicy\":{\"whenDeleted\":\"Keep\"}") "," VRJ("v") "}}", 0, false,
	 "spec.volumeClaimPolicies[0].retentionPolicy.whenDeleted", "\"Retain\""},
	/* 3.8 misc schema */
	{"WH-142 negative TTL", "{\"spec\":{\"ttlSecondsAfterFinished\":-1}}", 0, false, "spec.ttlSecondsAfterFinished", "0 or more"},
	{"WH-143 TTL zero", "{\"spec\":{\"ttlSecondsAfterFinished\":0}}", 0, true, NULL, NULL},
	{"WH-144 rjob without name", RJS("{\"template\":{\"spec\":{" IDX POD("") "}}}"), 0, false, "spec.replicatedJobs[0].name", "must be set"},
	{"WH-144 rjob without template", RJS("{\"name\":\"a\"}"), 0, false, "spec.replicatedJobs[0].template", "must be set"},
	{"WH-144 rule without action", "{\"spec\":{\"failurePolicy\":{\"rules\":[{\"name\":\"a\"}]}}}", 0, false, "spec.failurePolicy.rules[0].action",
	 "must be set"},
	{"WH-144 coordinator without replicatedJob", "{\"spec\":{\"coordinator\":{\"jobIndex\":0}}}", 0, false, "spec.coordinator.replicatedJob",
	 "must be set"},
	{"S9 duplicate rjob names", RJS(RJ("a", 1, IDX) "," RJ("a", 1, IDX)), 0, false, "spec.replicatedJobs[1]", "unique"},
	/* strictness: mistakes upstream finds only after submit */
	{"unknown field with suggestion", RJS("{\"name\":\"a\",\"replica\":2,\"template\":{\"spec\":{" IDX POD("") "}}}"), 0, false,
	 "spec.replicatedJobs[0].replica", "did you mean \"replicas\""},
	{"number where a string belongs", RJS("{\"name\":5,\"template\":{\"spec\":{" IDX POD("") "}}}"), 0, false, "spec.replicatedJobs[0].name",
	 "expected string, got integer"},
	{"boolean where a string belongs", "{\"spec\":{\"managedBy\":true}}", 0, false, "spec.managedBy", "quote the value"},
	{"restartPolicy Always", RJS("{\"name\":\"a\",\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"restartPolicy\":\"Always\",\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}}}}"),
	 0, false, "spec.replicatedJobs[0].template.spec.template.spec.restartPolicy", "Always"},
	{"restartPolicy Always (upstream accepts)", RJS("{\"name\":\"a\",\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"restartPolicy\":\"Always\",\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}}}}"),
	 F_LOOSE, true, NULL, NULL},
	{"invalid container name", RJS("{\"name\":\"a\",\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"containers\":[{\"name\":\"My_Container\",\"image\":\"i\"}]}}}}}"),
	 0, false, "spec.replicatedJobs[0].template.spec.template.spec.containers[0].name", "DNS-1123 label"},
	{"duplicate container names", RJS("{\"name\":\"a\",\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"initContainers\":[{\"name\":\"c\",\"image\":\"i\"}],\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}}}}"),
	 0, false, "spec.replicatedJobs[0].template.spec.template.spec.initContainers[0].name", "unique"},
	{"no containers", RJS("{\"name\":\"a\",\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"containers\":[]}}}}}"), 0, false,
	 "spec.replicatedJobs[0].template.spec.template.spec.containers", "at least one container"},
	{"container without image", RJS("{\"name\":\"a\",\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}}}}"), 0,
	 false, "spec.replicatedJobs[0].template.spec.template.spec.containers[0].image", "image"},
	{"Indexed with parallelism but no completions", RJS(RJ("a", 1, "\"completionMode\":\"Indexed\",\"parallelism\":2,")), 0, false,
	 "spec.replicatedJobs[0].template.spec.completions", "needs completions"},
	{"completionMode outside enum", RJS(RJ("a", 1, "\"completionMode\":\"Sometimes\",")), 0, false,
	 "spec.replicatedJobs[0].template.spec.completionMode", "NonIndexed"},
	{"negative backoffLimit", RJS(RJ("a", 1, IDX "\"backoffLimit\":-1,")), 0, false, "spec.replicatedJobs[0].template.spec.backoffLimit",
	 "between 0"},
	{"completions as a string", RJS(RJ("a", 1, "\"completions\":\"3\",")), 0, false, "spec.replicatedJobs[0].template.spec.completions",
	 "expected integer"},
	{"exclusive placement with NonIndexed (#1284)",
	 "{\"metadata\":{\"annotations\":{\"alpha.jobset.sigs.k8s.io/exclusive-topology\":\"rack\"}},"  RJS_BODY(RJ("a", 1, "\"completionMode\":\"NonIndexed\",")) "}",
	 0, false, "spec.replicatedJobs[0].template.spec.completionMode", "exclusive placement"},
	{"podFailurePolicy needs restartPolicy Never",
	 RJS("{\"name\":\"a\",\"template\":{\"spec\":{" IDX "\"podFailurePolicy\":{\"rules\":[]},\"podReplacementPolicy\":\"Failed\",\"template\":{\"spec\":{\"restartPolicy\":\"OnFailure\",\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}}}}"),
	 0, false, "spec.replicatedJobs[0].template.spec.template.spec.restartPolicy", "podFailurePolicy"},
	{"maxFailedIndexes without backoffLimitPerIndex", RJS(RJ("a", 1, IDX "\"maxFailedIndexes\":1,")), 0, false,
	 "spec.replicatedJobs[0].template.spec.maxFailedIndexes", "backoffLimitPerIndex"},
	/* KEP-1186 "Validation": minimum 1, and the feature-gate guard on create. */
	{"KEP-1186 activeDeadlineSeconds with the gate", "{\"spec\":{\"activeDeadlineSeconds\":1}}", F_DEADLINE, true, NULL, NULL},
	{"KEP-1186 activeDeadlineSeconds 0", "{\"spec\":{\"activeDeadlineSeconds\":0}}", F_DEADLINE, false,
	 "spec.activeDeadlineSeconds", "1 or more"},
	{"KEP-1186 activeDeadlineSeconds negative", "{\"spec\":{\"activeDeadlineSeconds\":-5}}", F_DEADLINE, false,
	 "spec.activeDeadlineSeconds", "1 or more"},
	{"KEP-1186 activeDeadlineSeconds with the gate off", "{\"spec\":{\"activeDeadlineSeconds\":60}}", 0, false,
	 "spec.activeDeadlineSeconds", "JobSetActiveDeadlineSeconds"},
	/* Ours: hang detection (docs/progress-deadline.md), gate ProgressDeadline. */
#define PD_ANN(k, v) "{\"metadata\":{\"annotations\":{\"jobset.sigs.k8s.io/progress-" k "-seconds\":" v "}}}"
#define PD_PATH(k) "metadata.annotations[jobset.sigs.k8s.io/progress-" k "-seconds]"
#define PD_RJ(ann) RJS("{\"name\":\"a\",\"template\":{\"metadata\":{\"annotations\":{" ann "}},\"spec\":{" IDX POD("") "}}}")
	{"progress deadline with the gate", PD_ANN("deadline", "\"600\""), F_PROGRESS, true, NULL, NULL},
	{"progress deadline with the gate off", PD_ANN("deadline", "\"600\""), 0, false, PD_PATH("deadline"),
	 "ProgressDeadline feature gate"},
	{"progress startup with the gate off", PD_ANN("startup", "\"60\""), 0, false, PD_PATH("startup"),
	 "ProgressDeadline=true"},
	{"progress deadline on a template, gate off", PD_RJ("\"jobset.sigs.k8s.io/progress-deadline-seconds\":\"5\""), 0,
	 false, "spec.replicatedJobs[0].template.metadata.annotations[jobset.sigs.k8s.io/progress-deadline-seconds]",
	 "ProgressDeadline"},
	{"progress deadline 1", PD_ANN("deadline", "\"1\""), F_PROGRESS, true, NULL, NULL},
	{"progress deadline 2^31-1", PD_ANN("deadline", "\"2147483647\""), F_PROGRESS, true, NULL, NULL},
	{"progress deadline 2^31", PD_ANN("deadline", "\"2147483648\""), F_PROGRESS, false, PD_PATH("deadline"),
	 "from 1 to 2147483647"},
	{"progress deadline 0", PD_ANN("deadline", "\"0\""), F_PROGRESS, false, PD_PATH("deadline"), "from 1 to 2147483647"},
	{"progress deadline negative", PD_ANN("deadline", "\"-5\""), F_PROGRESS, false, PD_PATH("deadline"),
	 "from 1 to 2147483647"},
	{"progress deadline with a unit", PD_ANN("deadline", "\"10s\""), F_PROGRESS, false, PD_PATH("deadline"),
	 "whole number of seconds"},
	{"progress deadline empty", PD_ANN("deadline", "\"\""), F_PROGRESS, false, PD_PATH("deadline"), "whole number"},
	{"progress startup 0", "{\"metadata\":{\"annotations\":{\"jobset.sigs.k8s.io/progress-deadline-seconds\":\"5\","
	 "\"jobset.sigs.k8s.io/progress-startup-seconds\":\"0\"}}}", F_PROGRESS, false, PD_PATH("startup"), "from 1 to"},
	{"progress startup without a deadline", PD_ANN("startup", "\"60\""), F_PROGRESS, false, PD_PATH("startup"),
	 "needs a deadline"},
	{"progress deadline on a template", PD_RJ("\"jobset.sigs.k8s.io/progress-deadline-seconds\":\"5\""), F_PROGRESS,
	 true, NULL, NULL},
	{"progress deadline bad on a template", PD_RJ("\"jobset.sigs.k8s.io/progress-deadline-seconds\":\"x\""),
	 F_PROGRESS, false,
	 "spec.replicatedJobs[0].template.metadata.annotations[jobset.sigs.k8s.io/progress-deadline-seconds]", "from 1"},
	{"progress startup on a template without a deadline", PD_RJ("\"jobset.sigs.k8s.io/progress-startup-seconds\":\"5\""),
	 F_PROGRESS, false,
	 "spec.replicatedJobs[0].template.metadata.annotations[jobset.sigs.k8s.io/progress-startup-seconds]",
	 "ReplicatedJob 'a' has no"},
};

static enum js_pvc_lookup fake_lookup(void *ctx, const char *ns, const char *name, json_t **ret_spec, char **ret_err)
{
	unsigned flags = *(const unsigned *)ctx;
	(void)ns;
	if (strcmp(name, "test-volume-js") != 0)
		return JS_PVC_NOT_FOUND;
	if (flags & F_PVC_ERROR) {
		*ret_err = strdup("boom");
		return JS_PVC_ERROR;
	}
	if (flags & F_PVC_SAME) {
		*ret_spec = json_pack("{s:[s]}", "accessModes", "ReadWriteMany");
		return JS_PVC_FOUND;
	}
	if (flags & F_PVC_OTHER) {
		*ret_spec = json_pack("{s:[s]}", "accessModes", "ReadWriteOnce");
		return JS_PVC_FOUND;
	}
	return JS_PVC_NOT_FOUND;
}

static void run_case(const struct vcase *c, int *failures)
{
	json_t *j = tu_yaml(base_yaml);
	tu_merge_patch(j, c->patch);
	struct js_diag d;
	js_diag_init(&d);
	struct js_jobset *js = NULL;
	int r = js_codec_decode_jobset(j, JS_CODEC_STRICT, &d, &js);
	if (r == 0) {
		if (!(c->flags & F_NO_DEFAULT))
			js_default_jobset(js);
		unsigned flags = c->flags;
		struct js_validate_opts o = {
			.gates = {.restart_job = c->flags & F_RESTART_JOB,
				  .in_place_restart = c->flags & F_IN_PLACE,
				  .active_deadline = c->flags & F_DEADLINE,
				  .progress_deadline = c->flags & F_PROGRESS},
			.strict = !(c->flags & F_LOOSE),
			.pvc_lookup = fake_lookup,
			.pvc_ctx = &flags,
		};
		r = js_validate_create(js, &o, &d);
	}
	bool ok = (r == 0) == c->valid;
	if (ok && !c->valid)
		ok = js_diag_has(&d, c->path, c->needle);
	if (!ok) {
		fprintf(stderr, "FAIL %s: expected %s", c->id, c->valid ? "valid" : "invalid");
		if (!c->valid)
			fprintf(stderr, " with %s: ...%s...", c->path, c->needle);
		fprintf(stderr, "; got %s\n", r == 0 ? "valid" : "invalid");
		tu_print_diag(&d);
		(*failures)++;
	}
	js_jobset_free(js);
	js_diag_done(&d);
	json_decref(j);
}

static void test_create_table(void **state)
{
	(void)state;
	int failures = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i], &failures);
	fprintf(stderr, "%zu create cases, %d failed\n", sizeof(cases) / sizeof(cases[0]), failures);
	assert_int_equal(failures, 0);
}

/* ---- update (SPEC §5.4, acceptance §4) ---- */

struct ucase {
	const char *id;
	const char *old_patch, *new_patch;
	unsigned flags; /* gates: 1 = ElasticJobSet, 2 = MutablePodResourcesForSuspendedJobSets, 4 =
			   JobSetActiveDeadlineSeconds */
	bool valid;
	const char *path, *needle;
};

#define SUSP "{\"spec\":{\"suspend\":true}}"
#define PODANN "{\"spec\":{\"replicatedJobs\":[{\"name\":\"rj\",\"replicas\":1,\"template\":{\"spec\":{" IDX "\"template\":{\"metadata\":{\"annotations\":{\"key\":\"value\"}},\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"test\",\"image\":\"bash:latest\"}]}}}}}]"
#define ELASTIC(p, c) "{\"spec\":{\"replicatedJobs\":[{\"name\":\"rj\",\"replicas\":2,\"template\":{\"spec\":{\"completionMode\":\"Indexed\",\"parallelism\":" #p ",\"completions\":" #c "," POD("") "}}}]}}"

#define ELASTIC_DONE(cond) "{\"status\":{\"conditions\":[{\"type\":\"" cond "\",\"status\":\"True\",\"reason\":\"r\",\"message\":\"m\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]},\"spec\":{\"replicatedJobs\":[{\"name\":\"rj\",\"replicas\":2,\"template\":{\"spec\":{\"completionMode\":\"Indexed\",\"parallelism\":2,\"completions\":2," POD("") "}}}]}}"

/* KEP-1150: the one ReplicatedJob with pod spec `pod` (containers...), suspended or not. */
#define RES(susp, pod) "{\"spec\":{" susp "\"replicatedJobs\":[{\"name\":\"rj\",\"replicas\":1,\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"restartPolicy\":\"Never\"," pod "}}}}}]}}"
#define S "\"suspend\":true,"
#define C(res) "\"containers\":[{\"name\":\"test\",\"image\":\"bash:latest\"" res "}]"
#define REQ(cpu) ",\"resources\":{\"requests\":{\"cpu\":\"" cpu "\"}}"
#define DL(v) "{\"spec\":{\"activeDeadlineSeconds\":" #v "}}"

static const struct ucase ucases[] = {
	/* KEP-1150 "Test Plan" (webhook unit tests). */
	{"KEP-1150 requests/limits while suspended, gate on", RES(S, C(REQ("1"))), RES(S, C(",\"resources\":{\"requests\":{\"cpu\":\"2\"},\"limits\":{\"cpu\":\"4\"}}")), 2, true, NULL, NULL},
	{"KEP-1150 add resources while suspended, gate on", SUSP, RES(S, C(REQ("2"))), 2, true, NULL, NULL},
	{"KEP-1150 while suspending, gate on", RES("", C(REQ("1"))), RES(S, C(REQ("2"))), 2, true, NULL, NULL},
	{"KEP-1150 init container while suspended, gate on", RES(S, "\"initContainers\":[{\"name\":\"i\",\"image\":\"bash\"}]," C("")),
	 RES(S, "\"initContainers\":[{\"name\":\"i\",\"image\":\"bash\"" REQ("1") "}]," C("")), 2, true, NULL, NULL},
	{"KEP-1150 while suspended, gate off", RES(S, C(REQ("1"))), RES(S, C(REQ("2"))), 0, false, "spec.replicatedJobs", "cannot be changed"},
	{"KEP-1150 while running, gate on", RES("", C(REQ("1"))), RES("", C(REQ("2"))), 2, false, "spec.replicatedJobs", "cannot be changed"},
	{"KEP-1150 claims stay immutable", RES(S, C(REQ("1"))),
	 RES(S, C(",\"resources\":{\"requests\":{\"cpu\":\"1\"},\"claims\":[{\"name\":\"gpu\"}]}")), 2, false, "spec.replicatedJobs", "cannot be changed"},
	{"KEP-1150 adding a container stays refused", RES(S, C(REQ("1"))),
	 RES(S, "\"containers\":[{\"name\":\"test\",\"image\":\"bash:latest\"" REQ("2") "},{\"name\":\"x\",\"image\":\"bash\"}]"), 2, false,
	 "spec.replicatedJobs", "cannot be changed"},
	{"KEP-1150 init container image stays immutable", RES(S, "\"initContainers\":[{\"name\":\"i\",\"image\":\"bash\"}]," C("")),
	 RES(S, "\"initContainers\":[{\"name\":\"i\",\"image\":\"bash:5\"" REQ("1") "}]," C("")), 2, false, "spec.replicatedJobs", "cannot be changed"},
	/* KEP-1186 "Validation": mutable while running; the gate guard on update. */
	{"KEP-1186 raise while running", DL(60), DL(600), 4, true, NULL, NULL},
	{"KEP-1186 lower while running", DL(600), DL(60), 4, true, NULL, NULL},
	{"KEP-1186 add while running", NULL, DL(60), 4, true, NULL, NULL},
	{"KEP-1186 remove", DL(60), "{\"spec\":{\"activeDeadlineSeconds\":null}}", 4, true, NULL, NULL},
	{"KEP-1186 gate off: unchanged is allowed", DL(60), "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}", 0, true, NULL, NULL},
	{"KEP-1186 gate off: clearing is allowed", DL(60), "{\"spec\":{\"activeDeadlineSeconds\":null}}", 0, true, NULL, NULL},
	{"KEP-1186 gate off: changing is refused", DL(60), DL(61), 0, false, "spec.activeDeadlineSeconds", "JobSetActiveDeadlineSeconds"},
	{"KEP-1186 gate off: adding is refused", NULL, DL(60), 0, false, "spec.activeDeadlineSeconds", "JobSetActiveDeadlineSeconds"},
	{"WH-150 suspend a running JobSet", NULL, SUSP, 0, true, NULL, NULL},
	{"WH-151 resume", SUSP, "{\"spec\":{\"suspend\":false}}", 0, true, NULL, NULL},
	{"WH-152 change labels", NULL, "{\"metadata\":{\"labels\":{\"hello\":\"world\"}}}", 0, true, NULL, NULL},
	{"WH-153 change managedBy", "{\"spec\":{\"managedBy\":\"example.com/old\"}}", "{\"spec\":{\"managedBy\":\"example.com/new\"}}", 0,
	 false, "spec.managedBy", "cannot be changed"},
	{"WH-154 set managedBy", SUSP, "{\"spec\":{\"suspend\":true,\"managedBy\":\"new-manager\"}}", 0, false, "spec.managedBy",
	 "cannot be changed"},
	{"WH-155 pod annotation while suspended", SUSP, PODANN ",\"suspend\":true}}", 0, true, NULL, NULL},
	{"WH-156 pod annotation while suspending", NULL, PODANN ",\"suspend\":true}}", 0, true, NULL, NULL},
	{"WH-157 pod annotation while running", NULL, PODANN "}}", 0, false, "spec.replicatedJobs", "cannot be changed"},
	{"WH-164 image change while suspended", SUSP,
	 "{\"spec\":{\"suspend\":true,\"replicatedJobs\":[{\"name\":\"rj\",\"replicas\":1,\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"test\",\"image\":\"bash:5\"}]}}}}}]}}",
	 0, false, "spec.replicatedJobs", "cannot be changed"},
	{"WH-165 rename rjob", SUSP, "{\"spec\":{\"suspend\":true,\"replicatedJobs\":[{\"name\":\"new\",\"replicas\":1,\"template\":{\"spec\":{" IDX POD("") "}}}]}}",
	 0, false, "spec.replicatedJobs", "cannot be changed"},
	{"WH-166 add rjob while suspended", SUSP,
	 "{\"spec\":{\"suspend\":true,\"replicatedJobs\":[{\"name\":\"rj\",\"replicas\":1,\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"test\",\"image\":\"bash:latest\"}]}}}}}," RJ("job-b", 1, IDX) "]}}",
	 0, false, "spec.replicatedJobs", "cannot be changed"},
	{"WH-167 change replicas", NULL, "{\"spec\":{\"replicatedJobs\":[{\"name\":\"rj\",\"replicas\":2,\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"test\",\"image\":\"bash:latest\"}]}}}}}]}}",
	 0, false, "spec.replicatedJobs", "cannot be changed"},
	{"WH-168 change successPolicy", NULL, "{\"spec\":{\"successPolicy\":{\"operator\":\"Any\"}}}", 0, false, "spec.successPolicy", "cannot be changed"},
	{"WH-169 change failurePolicy", "{\"spec\":{\"failurePolicy\":{\"maxRestarts\":3}}}", "{\"spec\":{\"failurePolicy\":{\"maxRestarts\":21}}}",
	 0, false, "spec.failurePolicy", "cannot be changed"},
	{"WH-172 change network", NULL, "{\"spec\":{\"network\":{\"enableDNSHostnames\":false}}}", 0, false, "spec.network", "cannot be changed"},
	{"WH-175 elastic scale up", ELASTIC(2, 2), ELASTIC(8, 8), 1, true, NULL, NULL},
	{"WH-176 elastic parallelism 0", ELASTIC(2, 2), ELASTIC(0, 2), 1, false, "spec.replicatedJobs[0].template.spec.parallelism", "at least 1"},
	{"WH-182 elastic P != C", ELASTIC(2, 2), ELASTIC(4, 5), 1, false, "spec.replicatedJobs[0].template.spec.completions", "equal"},
	{"WH-158 schedulingGates while suspended", SUSP,
	 "{\"spec\":{\"suspend\":true,\"replicatedJobs\":[{\"name\":\"rj\",\"replicas\":1,\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"schedulingGates\":[{\"name\":\"example.com/gate\"}],\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"test\",\"image\":\"bash:latest\"}]}}}}}]}}",
	 0, true, NULL, NULL},
	{"WH-159 schedulingGates while running", NULL,
	 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"rj\",\"replicas\":1,\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"schedulingGates\":[{\"name\":\"example.com/gate\"}],\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"test\",\"image\":\"bash:latest\"}]}}}}}]}}",
	 0, false, "spec.replicatedJobs", "cannot be changed"},
	{"WH-160 nodeSelector while suspended", SUSP,
	 "{\"spec\":{\"suspend\":true,\"replicatedJobs\":[{\"name\":\"rj\",\"replicas\":1,\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"nodeSelector\":{\"test\":\"test\"},\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"test\",\"image\":\"bash:latest\"}]}}}}}]}}",
	 0, true, NULL, NULL},
	{"WH-161 nodeSelector while running", NULL,
	 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"rj\",\"replicas\":1,\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"nodeSelector\":{\"test\":\"test\"},\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"test\",\"image\":\"bash:latest\"}]}}}}}]}}",
	 0, false, "spec.replicatedJobs", "cannot be changed"},
	{"WH-162 pod labels and tolerations while suspended", SUSP,
	 "{\"spec\":{\"suspend\":true,\"replicatedJobs\":[{\"name\":\"rj\",\"replicas\":1,\"template\":{\"spec\":{" IDX "\"template\":{\"metadata\":{\"labels\":{\"q\":\"a\"}},\"spec\":{\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\"}],\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"test\",\"image\":\"bash:latest\"}]}}}}}]}}",
	 0, true, NULL, NULL},
	{"WH-163 hostname while running", NULL,
	 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"rj\",\"replicas\":1,\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"hostname\":\"test\",\"subdomain\":\"test\",\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"test\",\"image\":\"bash:latest\"}]}}}}}]}}",
	 0, false, "spec.replicatedJobs", "cannot be changed"},
	{"WH-170 change a dependsOn entry",
	 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"rj\",\"template\":{\"spec\":{" IDX POD("") "}}},{\"name\":\"rj2\",\"dependsOn\":[{\"name\":\"rj\",\"status\":\"Ready\"}],\"template\":{\"spec\":{" IDX POD("") "}}}]}}",
	 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"rj\",\"groupName\":\"default\",\"replicas\":1,\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"test\",\"image\":\"bash\"}]}}}}},{\"name\":\"rj2\",\"groupName\":\"default\",\"replicas\":1,\"dependsOn\":[{\"name\":\"rj\",\"status\":\"Complete\"}],\"template\":{\"spec\":{" IDX "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"test\",\"image\":\"bash\"}]}}}}}]}}",
	 0, false, "spec.replicatedJobs[1].dependsOn", "cannot be changed"},
	{"WH-171 change volumeClaimPolicies",
	 "{\"spec\":{\"volumeClaimPolicies\":[{\"templates\":[],\"retentionPolicy\":{\"whenDeleted\":\"Delete\"}}]}}",
	 "{\"spec\":{\"volumeClaimPolicies\":[{\"templates\":[],\"retentionPolicy\":{\"whenDeleted\":\"Retain\"}}]}}", 0, false,
	 "spec.volumeClaimPolicies", "cannot be changed"},
	{"WH-172 change startupPolicy", NULL, "{\"spec\":{\"startupPolicy\":{\"startupPolicyOrder\":\"InOrder\"}}}", 0, false, "spec.startupPolicy",
	 "cannot be changed"},
	{"WH-177 elastic completions 0", ELASTIC(2, 2), ELASTIC(2, 0), 1, false, "spec.replicatedJobs[0].template.spec.completions", "at least 1"},
	{"WH-178 elastic on a Completed JobSet", ELASTIC_DONE("Completed"), ELASTIC(4, 4), 1, false, "spec.replicatedJobs[0].template.spec",
	 "Completed or Failed"},
	{"WH-179 elastic on a Failed JobSet", ELASTIC_DONE("Failed"), ELASTIC(4, 4), 1, false, "spec.replicatedJobs[0].template.spec",
	 "Completed or Failed"},
	{"WH-180 elastic plus replicas change", ELASTIC(2, 2),
	 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"rj\",\"replicas\":3,\"template\":{\"spec\":{\"completionMode\":\"Indexed\",\"parallelism\":4,\"completions\":4," POD("") "}}}]}}",
	 1, false, "spec.replicatedJobs", "cannot be changed"},
	{"WH-184 elastic on NonIndexed",
	 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"rj\",\"template\":{\"spec\":{\"completionMode\":\"NonIndexed\",\"parallelism\":2,\"completions\":2," POD("") "}}}]}}",
	 "{\"spec\":{\"replicatedJobs\":[{\"name\":\"rj\",\"template\":{\"spec\":{\"completionMode\":\"NonIndexed\",\"parallelism\":4,\"completions\":4," POD("") "}}}]}}",
	 1, false, "spec.replicatedJobs", "cannot be changed"},
	{"WH-181 elastic gate off", ELASTIC(2, 2), ELASTIC(8, 8), 0, false, "spec.replicatedJobs", "cannot be changed"},
};

static struct js_jobset *build(const char *patch)
{
	json_t *j = tu_yaml(base_yaml);
	tu_merge_patch(j, patch);
	struct js_jobset *js = tu_decode(j);
	js_default_jobset(js);
	json_decref(j);
	return js;
}

static void test_update_table(void **state)
{
	(void)state;
	int failures = 0;
	for (size_t i = 0; i < sizeof(ucases) / sizeof(ucases[0]); i++) {
		const struct ucase *c = &ucases[i];
		struct js_jobset *old = build(c->old_patch), *nw = build(c->old_patch);
		json_t *nj = js_codec_encode_jobset(nw);
		tu_merge_patch(nj, c->new_patch);
		js_jobset_free(nw);
		nw = tu_decode(nj);
		json_decref(nj);
		js_default_crd(nw); /* the API server applies CRD defaults on update too */
		struct js_diag d;
		js_diag_init(&d);
		struct js_validate_opts o = {.gates = {.elastic_jobset = c->flags & 1,
						       .mutable_pod_resources = c->flags & 2,
						       .active_deadline = c->flags & 4},
					     .strict = true};
		int r = js_validate_update(old, nw, &o, &d);
		bool ok = (r == 0) == c->valid && (c->valid || js_diag_has(&d, c->path, c->needle));
		if (!ok) {
			fprintf(stderr, "FAIL %s: expected %s %s %s\n", c->id, c->valid ? "valid" : "invalid", c->path ? c->path : "",
				c->needle ? c->needle : "");
			tu_print_diag(&d);
			failures++;
		}
		js_diag_done(&d);
		js_jobset_free(old);
		js_jobset_free(nw);
	}
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_table),
		cmocka_unit_test(test_update_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
