#!/usr/bin/env bash
# bench/controller/held.sh - controller memory over a cluster that already
# holds a large JobSet (issue 9: peak RSS at 10,000 Jobs / 50,000 pods).
#
#   bench/controller/held.sh [--jobs 10000] [--pods 5] [--reps 2]
#                            [--targets "ours upstream"] [--out DIR]
#
# The suite's memory case waits for kwok to run every pod, which on two
# shared cores takes hours. Here the cluster is populated once and then
# held: one fresh control plane; our controller creates one JobSet of JOBS
# Jobs x PODS pods whose pods name a scheduler that does not run
# (schedulerName: bench-none), so the Job controller makes every pod and they
# stay Pending - no scheduler or kwok work; once the API server holds all the
# pods (apiserver_storage_objects) the creator is stopped. Then each target
# in turn, interleaved over REPS, starts cold against the same objects
# (measure.py held): it lists and watches what it caches (upstream: every
# pod of the cluster; ours: Jobs, Services, PVCs and JobSets), reconciles the
# JobSet, goes quiet, and its VmHWM is read. Pending pods are smaller than
# running ones (no status.podIP, no containerStatuses), so upstream's figure
# here is a lower bound of what it needs with running pods.
#
# Environment: as suite.sh (JOBSET_CONTROLLER, JOBSET_CLUSTER_DIR, QPS,
# BURST); HELD_JOB_SYNCS, the Job controller's workers while populating (20).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
JOBS=10000 PODS=5 REPS=2 TARGETS="ours upstream"
OUT=/tmp/js-bench/held-$(date +%Y%m%d-%H%M%S)
CONTROLLER=${JOBSET_CONTROLLER:-$ROOT/build/jobset-controller}
ARGV=("$@")
while (($#)); do
	case $1 in
	--jobs) JOBS=$2; shift 2 ;;
	--pods) PODS=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--targets) TARGETS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | grep -v '^set ' | sed -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "held.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
for t in $TARGETS; do
	[[ $t =~ ^(ours|upstream)$ ]] || { echo "held.sh: unknown target $t (ours, upstream)" >&2; exit 2; }
done
[[ -x $CONTROLLER ]] || { echo "held.sh: no $CONTROLLER (set JOBSET_CONTROLLER)" >&2; exit 1; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BENCH_TAG=held
# shellcheck source=lib.sh
. "$HERE/lib.sh"
log() { bench_log "$@"; }
measure() { python3 "$HERE/measure.py" "$@"; }

UPSTREAM=$("$HERE/build-upstream.sh")
CRD=$("$HERE/build-upstream.sh" --crd)
write_command "$OUT/command.txt" "$0" "${ARGV[@]}"
echo "ours: $CONTROLLER; upstream: $UPSTREAM; qps/burst: $QPS/$BURST" >>"$OUT/command.txt"

trap '[[ -n ${creator:-} ]] && kill "$creator" 2>/dev/null; cluster_down' EXIT
export JOBSET_KCM_JOB_SYNCS=${HELD_JOB_SYNCS:-20}
log "fresh cluster; populating $JOBS Jobs x $PODS pods (Job controller workers: $JOBSET_KCM_JOB_SYNCS)"
cluster_up 0 "$CRD"
eval "$("$CLUSTER" env)"
hp=$(free_port) mp=$(free_port)
ours_flags "$hp" "$mp"
"$CONTROLLER" --kubeconfig="$JOBSET_CLUSTER_DIR/kubeconfig" "${OURS_FLAGS[@]}" >"$OUT/creator.log" 2>&1 &
creator=$!
until curl -sf "http://127.0.0.1:$hp/readyz" >/dev/null; do
	kill -0 "$creator" 2>/dev/null || { log "the creating controller exited (log: $OUT/creator.log)"; exit 1; }
	sleep 0.5
done
kubectl create namespace bench >/dev/null
measure jobset --jobs "$JOBS" --pods "$PODS" --scheduler-name bench-none >"$OUT/jobset.yaml"
kubectl apply -n bench -f "$OUT/jobset.yaml" >/dev/null
t0=$SECONDS want=$((JOBS * PODS))
while :; do
	have=$(kubectl get --raw /metrics | sed -n 's/^apiserver_storage_objects{resource="pods"} //p')
	have=${have%%.*}
	log "pods held: ${have:-0}/$want after $((SECONDS - t0)) s"
	((${have:-0} >= want)) && break
	((SECONDS - t0 < 3 * 3600)) || { log "not populated after 3 h"; exit 1; }
	sleep 20
done
echo "populated: $want pods in $((SECONDS - t0)) s" >>"$OUT/command.txt"
kill "$creator"
wait "$creator" || true
creator=

for ((rep = 1; rep <= REPS; rep++)); do
	for t in $TARGETS; do
		id="held-${JOBS}x$PODS-$t-$rep"
		hp=$(free_port) mp=$(free_port) wp=$(free_port)
		if [[ $t == ours ]]; then
			ours_flags "$hp" "$mp"
			cmd=("$CONTROLLER" --kubeconfig='{kubeconfig}' "${OURS_FLAGS[@]}")
		else
			upstream_config "$OUT/upstream-config.yaml" "$wp" "$mp" "$hp"
			cmd=("$UPSTREAM" --config="$OUT/upstream-config.yaml" --kubeconfig='{kubeconfig}')
		fi
		log "$id"
		measure held --name "$t" --ready-url "http://127.0.0.1:$hp/readyz" --log "$OUT/$id.log" \
			--out "$OUT/$id.json" --qps "$QPS" --burst "$BURST" -- "${cmd[@]}" >/dev/null
	done
done
python3 - "$OUT" <<'EOP' | tee "$OUT/summary.md"
import glob, json, statistics, sys
runs = {}
for p in sorted(glob.glob(sys.argv[1] + "/held-*.json")):
    r = json.load(open(p))
    runs.setdefault(r["name"], []).append(r)
print("| target | pods / Jobs held | peak RSS MB (each rep) | median | CPU-s to quiet (each rep) |")
print("|---|---|---|---|---|")
for name, rs in runs.items():
    print(f"| {name} | {rs[0]['pods_in_cluster']:,} / {rs[0]['jobs_in_cluster']:,} | "
          f"{' / '.join(str(r['peak_rss_mb']) for r in rs)} | {statistics.median(r['peak_rss_mb'] for r in rs)} | "
          f"{' / '.join(str(r['cpu_s']) for r in rs)} |")
if "ours" in runs and "upstream" in runs:
    o = statistics.median(r["peak_rss_mb"] for r in runs["ours"])
    u = statistics.median(r["peak_rss_mb"] for r in runs["upstream"])
    print(f"\nours / upstream peak RSS (medians): {o / u:.3f}")
EOP
