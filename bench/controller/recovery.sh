#!/usr/bin/env bash
# bench/controller/recovery.sh - restart recovery on real nodes (issue 23
# item 3): time from one worker's failure until every pod of the next attempt
# is Running and Ready and its worker started, for upstream v0.12.0, ours
# --restart-cleanup=foreground, ours direct (the default) and ours with
# in-place restart, interleaved in one run on one cluster.  The figures and
# what holds each step: BENCHMARKS.md "Restart recovery on real nodes".
#
#   bench/controller/recovery.sh [--reps N] [--variants "upstream foreground direct inplace"]
#                                [--out DIR] [--keep]
#
# Root (real nodes).  Brings up `hack/cluster up --nodes 0 --real-nodes 2`
# (state in $JOBSET_CLUSTER_DIR, default /tmp/jobset-cluster-recovery, torn
# down at the end unless --keep), bundles the images offline (ours from
# $JOBSET_BUILD_DIR, default build/: the controller and the in-place restart
# agent; upstream's manager from build-upstream.sh, a static binary) and
# loads them into both nodes, installs deploy/ as users do (the controller a
# pod on a real node, its webhooks through their Service), then runs
# recovery.py: for each rep, each variant in turn, the one controller
# Deployment switched to that variant (upstream's manager runs in the same
# Deployment, with its own defaults: deploy/ has upstream's names for the
# Service, Secret and webhook configurations).  See recovery.py for the
# workload (32 pods with a SIGTERM handler) and the steps traced.
#
# Output in --out (default /tmp/js-bench/recovery-<date>): <variant>-<rep>.json
# per run, command.txt (command, machine, load, commit), summary.md (the
# table recovery.py report prints), cluster-up.log.
#
# Time on 2 shared cores at load ~30 (measured 2026-12-02): cluster, images
# and deploy/ ~1 min; each run ~1.2 min (32 pods started twice, a controller
# rollout when the variant changes); --reps 3 of the four variants ~15 min.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export JOBSET_CLUSTER_DIR=${JOBSET_CLUSTER_DIR:-/tmp/jobset-cluster-recovery}
BUILD=${JOBSET_BUILD_DIR:-$ROOT/build}
REPS=3
VARIANTS="upstream foreground direct inplace"
OUT=/tmp/js-bench/recovery-$(date -u +%Y%m%d-%H%M%S)
KEEP=false
ARGS=("$@")
while (($#)); do
	case $1 in
	--reps) REPS=$2; shift 2 ;;
	--variants) VARIANTS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--keep) KEEP=true; shift ;;
	*) echo "usage: $0 [--reps N] [--variants LIST] [--out DIR] [--keep]" >&2; exit 2 ;;
	esac
done
HERE=$HERE ROOT=$ROOT source "$HERE/lib.sh"
BENCH_TAG=recovery
mkdir -p "$OUT"

for b in jobset-controller in-place-restart-agent; do
	[[ -x $BUILD/$b ]] || { echo "recovery.sh: $BUILD/$b is missing: build first" >&2; exit 1; }
done
UPSTREAM=""
if [[ " $VARIANTS " == *" upstream "* ]]; then
	UPSTREAM=$("$HERE/build-upstream.sh")
fi

write_command "$OUT/command.txt" "$0" "${ARGS[@]}"
{
	echo "ours: $BUILD/jobset-controller ($(git -C "$ROOT" rev-parse --short HEAD))"
	echo "upstream: ${UPSTREAM:-none} (${JOBSET_UPSTREAM_VERSION:-v0.12.0})"
	echo "cluster: hack/cluster up --nodes 0 --real-nodes 2 ($JOBSET_CLUSTER_DIR)"
} >>"$OUT/command.txt"

cleanup() { $KEEP || "$CLUSTER" down >/dev/null 2>&1 || true; }
trap cleanup EXIT
"$CLUSTER" down >/dev/null 2>&1 || true
bench_log "cluster up (2 real nodes)"
"$CLUSTER" up --nodes 0 --real-nodes 2 >"$OUT/cluster-up.log" 2>&1 || { tail -30 "$OUT/cluster-up.log" >&2; exit 1; }
eval "$("$CLUSTER" env)"
export KUBECONFIG=$JOBSET_TEST_KUBECONFIG

bench_log "images"
"$CLUSTER" image bundle jobset-controller:0.1.0 --entrypoint /usr/local/bin/jobset-controller \
	"$BUILD/jobset-controller=/usr/local/bin/jobset-controller" \
	"$BUILD/in-place-restart-agent=/usr/local/bin/in-place-restart-agent" >/dev/null
"$CLUSTER" image bundle localhost/jobset-test/agent:1 --entrypoint /usr/local/bin/in-place-restart-agent \
	"$BUILD/in-place-restart-agent=/usr/local/bin/in-place-restart-agent" \
	/bin/busybox=/bin/sh /bin/busybox=/bin/sleep >/dev/null
if [[ -n $UPSTREAM ]]; then
	"$CLUSTER" image bundle "jobset-upstream:${JOBSET_UPSTREAM_VERSION:-v0.12.0}" --entrypoint /manager \
		"$UPSTREAM=/manager" >/dev/null
fi

bench_log "deploy/"
kubectl apply --server-side --force-conflicts -k "$ROOT/deploy" >/dev/null
kubectl -n jobset-system rollout status deploy/jobset-controller-manager --timeout=300s >/dev/null

bench_log "runs: $REPS reps of: $VARIANTS (out: $OUT)"
rc=0
RECOVERY_UPSTREAM_IMAGE="jobset-upstream:${JOBSET_UPSTREAM_VERSION:-v0.12.0}" \
	python3 "$HERE/recovery.py" run --out "$OUT" --reps "$REPS" --variants "$VARIANTS" >"$OUT/summary.md" || rc=$?
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/command.txt"
cat "$OUT/summary.md"
exit $rc
