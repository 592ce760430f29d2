#!/usr/bin/env bash
# bench/controller/suite.sh - the controller benchmark suite (issue 9): our
# jobset-controller vs the upstream controller (sigs.k8s.io/jobset v0.12.0,
# built by build-upstream.sh) vs a raw create loop, at several sizes N, in
# one run on one control-plane build.  Results, plots and the commands used
# are in BENCHMARKS.md (bench/controller/report.py writes them there).
#
#   bench/controller/suite.sh [--cases "create memory held restart"] [--n "1000 3000 10000"]
#                             [--memory-n 10000] [--memory-pods 5] [--restart-n 1000]
#                             [--targets "ours upstream raw"] [--reps R] [--out DIR]
#                             [--until settled|jobs]
#
# Cases (each measurement on a fresh control plane: hack/cluster up,
# upstream's base CRD, kwok nodes with $NODE_PODS pods each, enough of them
# for every pod plus a quarter; torn down afterwards):
#   create   one JobSet of N single-pod Jobs, for each N in --n: create -> all
#            Jobs, create -> all ready, create -> settled, controller CPU,
#            idle and peak RSS, RSS per child Job, API requests, reconciles
#   memory   one JobSet of --memory-n Jobs x --memory-pods pods (default
#            10,000 x 5 = 50,000 pods in the cluster): the same figures
#   held     the memory case's JobSet with its pods held Pending, each
#            controller started cold against it (held.sh, the quick way to
#            the 50,000-pod figure; its results go to DIR/held)
#   restart  one JobSet of --restart-n single-pod Jobs (failurePolicy
#            maxRestarts 3): once settled, the pod of Job 0 is marked Failed;
#            inject -> Job Failed -> every Job of attempt 1 exists -> ready,
#            with CPU, requests and reconciles over the restart
# Targets (create runs all of them; memory and restart only the controllers):
#   ours      $JOBSET_CONTROLLER (default build/jobset-controller), leader
#             election off, webhooks off, metrics HTTPS behind TokenReview
#             (scraped with a token, as upstream's)
#   upstream  sigs.k8s.io/jobset $JOBSET_UPSTREAM_VERSION (default v0.12.0),
#             out of cluster, webhooks not registered (the JobSet is
#             submitted fully defaulted), internal cert management and
#             leader election off, zap defaults
#   raw       build-bench/rawcreate: the same Service + N Jobs (jobset
#             render -o json), 100 requests in flight, no client rate limit
#   raw-qps   the same with the controllers' client limit
# Both controllers get client QPS/burst $QPS/$BURST (default 500/500,
# upstream's defaults) and the benchmark identity's kubeconfig
# (CN=jobset-bench-controller; its requests are counted by the API server,
# see measure.py).  Order: for each rep, case and N, the targets one after
# the other (interleaved, so slow drift on a shared machine hits them alike).
#
# --until jobs stops each create measurement once every Job exists (create ->
# all Jobs, CPU and requests to that point only): a quick way to compare
# creation throughput over several interleaved reps.
#
# Output in --out (default /tmp/js-bench/<date>): <case>-<N>x<P>-<target>-<rep>.json
# per measurement (+ .log of the process under test, .json.metrics.txt),
# command.txt (the command line, binaries, commits), summary.md.  Then
#   bench/controller/report.py write DIR...   # tables into BENCHMARKS.md, plots
#
# Time on 2 shared cores (one rep, ours + upstream + raw; measured, see
# BENCHMARKS.md): create N=1,000 ~4 min, 3,000 ~10 min, 10,000 ~36 min;
# restart 1,000 ~7 min; memory 10,000 x 5 pods 2 h or more (the Job
# controller creates ~20 pods/s on a loaded machine).
#
# Environment: JOBSET_CONTROLLER, JOBSET_CLI (default build/jobset: renders
# the raw loop's List), JOBSET_CLUSTER_DIR (default /tmp/js-bench-cluster),
# MEMORY_JOB_SYNCS (the Job controller's workers in the memory case, default
# 50), QPS, BURST, NODE_PODS (pods per kwok node, default 1000), MIN_NODES
# (default 4).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
REPS=1
CASES="create"
NS="1000 3000 10000"
MEMORY_N=10000
MEMORY_PODS=5
RESTART_N=1000
TARGETS="ours upstream raw"
UNTIL=settled
OUT=/tmp/js-bench/$(date +%Y%m%d-%H%M%S)
CONTROLLER=${JOBSET_CONTROLLER:-$ROOT/build/jobset-controller}
JOBSET_CLI=${JOBSET_CLI:-$ROOT/build/jobset}
ARGV=("$@")

usage() { sed -n '2,/^set -euo/p' "$0" | grep -v '^set ' | sed -e 's/^# \{0,1\}//'; }
while (($#)); do
	case $1 in
	--cases) CASES=$2; shift 2 ;;
	--n) NS=$2; shift 2 ;;
	--memory-n) MEMORY_N=$2; shift 2 ;;
	--memory-pods) MEMORY_PODS=$2; shift 2 ;;
	--restart-n) RESTART_N=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--targets) TARGETS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--until) UNTIL=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "suite.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
for c in $CASES; do
	[[ $c =~ ^(create|memory|held|restart)$ ]] || { echo "suite.sh: unknown case $c" >&2; exit 2; }
done
[[ $UNTIL =~ ^(settled|jobs)$ ]] || { echo "suite.sh: --until takes settled or jobs" >&2; exit 2; }
for t in $TARGETS; do
	[[ $t =~ ^(ours|upstream|raw|raw-qps)$ ]] || { echo "suite.sh: unknown target $t" >&2; exit 2; }
done

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BENCH_TAG=suite
# shellcheck source=lib.sh
. "$HERE/lib.sh"
log() { bench_log "$@"; }

# ---- build what is needed
if [[ " $TARGETS " == *" upstream "* ]]; then
	UPSTREAM=$("$HERE/build-upstream.sh")
fi
CRD=$("$HERE/build-upstream.sh" --crd)
if [[ " $TARGETS " == *" raw"* ]]; then
	cmake -S "$HERE" -B "$ROOT/build-bench" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build "$ROOT/build-bench" >/dev/null
	[[ -x $JOBSET_CLI ]] || { log "no $JOBSET_CLI (set JOBSET_CLI): needed to render the raw loop's Jobs"; exit 1; }
fi
RAW="$ROOT/build-bench/rawcreate"
if [[ " $TARGETS " == *" ours "* && ! -x $CONTROLLER ]]; then
	log "no $CONTROLLER: skipping target 'ours' (set JOBSET_CONTROLLER)"
	TARGETS=${TARGETS//ours/}
fi
hack_k8s=$(sed -n 's/^K8S_VERSION=\${JOBSET_K8S_VERSION:-\(.*\)}$/\1/p' "$CLUSTER")
write_command "$OUT/command.txt" "$0" "${ARGV[@]}"
{
	echo "ours: $CONTROLLER"
	echo "upstream: ${UPSTREAM:-} (${JOBSET_UPSTREAM_VERSION:-v0.12.0})"
	echo "kubernetes: ${JOBSET_K8S_VERSION:-$hack_k8s}"
	echo "qps/burst: $QPS/$BURST; pods per node: $NODE_PODS"
} >>"$OUT/command.txt"

measure() { python3 "$HERE/measure.py" "$@"; }

# run_target CASE N PODS TARGET REP
run_target() {
	local c=$1 n=$2 pods=$3 t=$4 rep=$5 hp mp wp js
	local id="$c-${n}x$pods-$t-$rep"
	local res="$OUT/$id.json" lg="$OUT/$id.log"
	local common=(--case "$c" --jobs "$n" --pods "$pods" --qps "$QPS" --burst "$BURST" --log "$lg" --out "$res"
		--until "$([[ $c == create ]] && echo "$UNTIL" || echo settled)")
	local extra=()
	hp=$(free_port) mp=$(free_port) wp=$(free_port)
	js="$OUT/jobset-$c-${n}x$pods.yaml"
	if [[ $c == restart ]]; then
		measure jobset --jobs "$n" --pods "$pods" --max-restarts 3 >"$js"
		extra=(--restart)
	else
		measure jobset --jobs "$n" --pods "$pods" >"$js"
	fi
	case $t in
	upstream)
		# Webhooks are always served by upstream's manager (it needs
		# tls.crt/tls.key); they are simply not registered with the API
		# server.  Its metrics are HTTPS behind TokenReview.
		upstream_config "$OUT/upstream-config.yaml" "$wp" "$mp" "$hp"
		measure controller --name upstream "${common[@]}" "${extra[@]}" --jobset "$js" \
			--ready-url "http://127.0.0.1:$hp/readyz" \
			--metrics-url "https://127.0.0.1:$mp/metrics" --metrics-token -- \
			"$UPSTREAM" --config="$OUT/upstream-config.yaml" --kubeconfig='{kubeconfig}' >/dev/null
		;;
	ours)
		# Scraped as upstream's is: HTTPS (a self-signed certificate),
		# a ServiceAccount token checked by TokenReview and
		# SubjectAccessReview (the decisions cached, as upstream's).
		ours_flags "$hp" "$mp"
		measure controller --name ours "${common[@]}" "${extra[@]}" --jobset "$js" \
			--ready-url "http://127.0.0.1:$hp/readyz" \
			--metrics-url "https://127.0.0.1:$mp/metrics" --metrics-token -- \
			"$CONTROLLER" --kubeconfig='{kubeconfig}' "${OURS_FLAGS[@]}" >/dev/null
		;;
	raw | raw-qps)
		local list="$OUT/render-${n}x$pods.json" limit=()
		[[ -f $list ]] || measure rawlist --jobs "$n" --pods "$pods" --cli "$JOBSET_CLI" --out "$list"
		[[ $t == raw ]] || limit=(--qps "$QPS" --burst "$BURST")
		measure raw --name "$t" "${common[@]}" --list "$list" -- \
			"$RAW" --kubeconfig='{kubeconfig}' --window 100 "${limit[@]}" >/dev/null
		;;
	esac
}

# sizes CASE -> N:PODS words
sizes() {
	case $1 in
	create) for n in $NS; do echo "$n:1"; done ;;
	memory) echo "$MEMORY_N:$MEMORY_PODS" ;;
	restart) echo "$RESTART_N:1" ;;
	esac
}

log "results in $OUT; cases: $CASES; targets: $TARGETS; reps: $REPS; QPS/burst $QPS/$BURST"
trap cluster_down EXIT
failed=0
for ((rep = 1; rep <= REPS; rep++)); do
	for c in $CASES; do
		if [[ $c == held ]]; then
			# Populated once per rep, on a control plane of its own.
			JOBSET_CONTROLLER=$CONTROLLER "$HERE/held.sh" --jobs "$MEMORY_N" --pods "$MEMORY_PODS" --reps 1 \
				--targets "$(for t in $TARGETS; do [[ $t == ours || $t == upstream ]] && printf '%s ' "$t"; done)" \
				--out "$OUT/held-$rep" || failed=$((failed + 1))
			continue
		fi
		for size in $(sizes "$c"); do
			n=${size%:*} pods=${size#*:}
			for t in $TARGETS; do
				[[ $c == create || $t == ours || $t == upstream ]] || continue
				id="$c-${n}x$pods-$t-$rep"
				log "$id: fresh cluster, $(nodes_for $((n * pods))) nodes"
				t0=$SECONDS
				# The 50,000-pod case: more Job controller workers, so the
				# cluster makes the pods in a fraction of the time (the same
				# for both controllers; it is their memory that is measured).
				if [[ $c == memory ]]; then export JOBSET_KCM_JOB_SYNCS=${MEMORY_JOB_SYNCS:-50}; else unset JOBSET_KCM_JOB_SYNCS; fi
				cluster_up $((n * pods)) "$CRD" || exit 1
				if ! run_target "$c" "$n" "$pods" "$t" "$rep"; then
					log "$id FAILED (log: $OUT/$id.log)"
					failed=$((failed + 1))
					cluster_down --keep
					cp -r "$JOBSET_CLUSTER_DIR/logs" "$OUT/cluster-logs-$id" 2>/dev/null || true
					continue
				fi
				cluster_down
				log "$id: done in $((SECONDS - t0)) s"
				echo "$id $((SECONDS - t0))" >>"$OUT/durations.txt"
			done
		done
	done
done
python3 "$HERE/report.py" summary "$OUT" | tee "$OUT/summary.md"
((failed == 0)) || { log "$failed measurement(s) failed"; exit 1; }
