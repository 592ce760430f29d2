# shellcheck shell=bash
# hack/cluster.d/selftest.sh - "hack/cluster selftest": checks a running
# cluster end to end (kwok nodes, kwok stages, the real Job controller, GC,
# namespace deletion).  Sourced by hack/cluster.

st_fail() {
	log "selftest FAILED: $*"
	if [[ -n ${ST_NS:-} ]]; then
		kc -n "$ST_NS" get jobs,pods -o wide >&2 || true
	fi
	exit 1
}

st_step() {
	ST_T0=$(now_ms)
	log "selftest: $*"
}

st_done() { log "selftest:   ok ($(($(now_ms) - ST_T0)) ms)"; }

# st_job NAME SPEC ANNOTATIONS - apply a batch/v1 Job NAME in $ST_NS whose
# spec starts with the YAML lines SPEC (two-space indent) and whose one fake
# container's pod carries the kwok stage annotations ANNOTATIONS (YAML lines,
# eight-space indent).
st_job() {
	kc -n "$ST_NS" apply -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
spec:
$2
  template:
    metadata:
      annotations:
$3
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: fake.invalid/none:latest
EOF
}

cmd_selftest() {
	cluster_running || die "no running cluster in $DIR (hack/cluster up)"
	comp_pid kwok >/dev/null || die "selftest needs the full cluster (kwok is not running)"
	local nodes want
	want=$(sed -n 's/^export JOBSET_TEST_NODES=//p' "$DIR/env")

	st_step "$want kwok nodes are Ready"
	nodes_ready "$want" || st_fail "not all $want nodes are Ready"
	nodes=$(kc get nodes -l type=kwok -o name | wc -l)
	((nodes == want)) || st_fail "expected $want kwok nodes, found $nodes"
	st_done

	ST_NS=selftest-$$-$RANDOM
	kc create namespace "$ST_NS" >/dev/null

	st_step "a 3-pod batch/v1 Job completes (kwok run-for 300ms)"
	st_job ok '  completions: 3
  parallelism: 3
  backoffLimit: 0' '        jobset-test/run-for: 300ms'
	kc -n "$ST_NS" wait --for=condition=Complete job/ok --timeout=60s >/dev/null ||
		st_fail "Job ok did not complete"
	[[ $(kc -n "$ST_NS" get job ok -o jsonpath='{.status.succeeded}') == 3 ]] ||
		st_fail "Job ok: succeeded != 3"
	st_done

	st_step "a bare pod annotated jobset-test/exit-code=42 ends Failed with exit code 42"
	kc -n "$ST_NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: fail42
  annotations:
    jobset-test/exit-code: "42"
    jobset-test/fail-reason: Crashed
    jobset-test/run-for: 200ms
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: fake.invalid/none:latest
EOF
	kc -n "$ST_NS" wait --for=jsonpath='{.status.phase}'=Failed pod/fail42 --timeout=60s >/dev/null ||
		st_fail "pod fail42 did not fail"
	local code reason
	code=$(kc -n "$ST_NS" get pod fail42 -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')
	reason=$(kc -n "$ST_NS" get pod fail42 -o jsonpath='{.status.containerStatuses[0].state.terminated.reason}')
	[[ $code == 42 && $reason == Crashed ]] || st_fail "pod fail42: exit code '$code' reason '$reason'"
	st_done

	st_step "a Job whose podFailurePolicy matches exit code 42 fails with reason PodFailurePolicy"
	st_job pfp '  completions: 2
  parallelism: 2
  completionMode: Indexed
  backoffLimit: 6
  podFailurePolicy:
    rules:
    - action: FailJob
      onExitCodes:
        operator: In
        values: [42]' '        jobset-test/exit-code: "42"
        jobset-test/fail-if-completion-index: "1"
        jobset-test/run-for: 200ms'
	kc -n "$ST_NS" wait --for=condition=Failed job/pfp --timeout=60s >/dev/null ||
		st_fail "Job pfp did not fail"
	reason=$(kc -n "$ST_NS" get job pfp -o jsonpath='{.status.conditions[?(@.type=="Failed")].reason}')
	[[ $reason == PodFailurePolicy ]] || st_fail "Job pfp failed with reason '$reason'"
	st_done

	st_step "a finished Job with ttlSecondsAfterFinished: 1 is deleted (ttl-after-finished controller)"
	st_job ttl '  ttlSecondsAfterFinished: 1' '        jobset-test/run-for: 100ms'
	kc -n "$ST_NS" wait --for=delete job/ttl --timeout=60s >/dev/null ||
		st_fail "Job ttl was not deleted after it finished"
	st_done

	st_step "a pod stays Running while its run-for lasts, and the Job reports it ready"
	st_job long '' '        jobset-test/run-for: 1h'
	kc -n "$ST_NS" wait --for=jsonpath='{.status.ready}'=1 job/long --timeout=60s >/dev/null ||
		st_fail "Job long never reported a ready pod"
	st_done

	st_step "foreground deletion of a running Job removes its pods (GC + kwok delete stages)"
	kc -n "$ST_NS" delete job long --cascade=foreground --timeout=60s >/dev/null ||
		st_fail "deleting Job long failed"
	wait_until "pods of Job long gone" 60 "" \
		bash -c "[[ -z \$('$KUBECTL_BIN' --kubeconfig='$DIR/kubeconfig' -n '$ST_NS' get pods -l job-name=long -o name) ]]" ||
		st_fail "pods of Job long were not removed"
	st_done

	st_step "namespace deletion completes"
	kc delete namespace "$ST_NS" --timeout=90s >/dev/null || st_fail "namespace $ST_NS was not deleted"
	ST_NS=
	st_done
	log "selftest passed"
}
