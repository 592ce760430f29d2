#!/usr/bin/env bash
# bench/controller/heap.sh - heap profile of our jobset-controller under
# heaptrack while it creates and settles one JobSet of N single-pod Jobs
# (default 1,000) on a fresh hack/cluster, then the top allocation sites by
# peak heap, named by function (bench/controller/report.py heap).
#
#   bench/controller/heap.sh [--n N] [--out DIR] [--write LABEL]
#
# --write LABEL also puts the tables into BENCHMARKS.md between
# <!-- bench-heap-LABEL:begin/end --> (e.g. "before", "after").
#
# The controller is $JOBSET_CONTROLLER_HEAP, or else built RelWithDebInfo
# (-O2 -g, so inlined frames get names too) from this tree into
# build-bench-heap.  heaptrack (Debian package) is installed by
# `scripts/setup-debian.sh --bench` when missing.  heaptrack slows every
# allocation, so CPU and wall times of this run are not benchmark figures;
# peak heap is (the heap, not RSS: no allocator arenas or fragmentation).
# Output: DIR/heaptrack.jobset-controller.zst, DIR/heap.json (the measure.py
# result), DIR/heap.md (the tables).  ~10 min at N=1,000 on 2 cores.
#
# Environment: JOBSET_CLUSTER_DIR (default /tmp/js-bench-cluster), QPS,
# BURST (500/500), NODE_PODS (1000).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
N=1000
OUT=/tmp/js-bench/heap-$(date +%Y%m%d-%H%M%S)
WRITE=
ARGV=("$@")
while (($#)); do
	case $1 in
	--n) N=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--write) WRITE=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | grep -v '^set ' | sed -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "heap.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BENCH_TAG=heap
# shellcheck source=lib.sh
. "$HERE/lib.sh"
log() { bench_log "$@"; }

command -v heaptrack >/dev/null || "$ROOT/scripts/setup-debian.sh" --bench
CONTROLLER=${JOBSET_CONTROLLER_HEAP:-}
if [[ -z $CONTROLLER ]]; then
	log "building jobset-controller RelWithDebInfo in build-bench-heap"
	cmake -S "$ROOT" -B "$ROOT/build-bench-heap" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	ninja -C "$ROOT/build-bench-heap" -j2 jobset-controller >/dev/null
	CONTROLLER="$ROOT/build-bench-heap/jobset-controller"
fi
CRD=$("$HERE/build-upstream.sh" --crd)
write_command "$OUT/command.txt" "$0" "${ARGV[@]}"
echo "ours: $CONTROLLER ($(heaptrack --version 2>&1 | head -1))" >>"$OUT/command.txt"

trap cluster_down EXIT
cluster_up "$N" "$CRD"
python3 "$HERE/measure.py" jobset --jobs "$N" >"$OUT/jobset.yaml"
hp=$(free_port) mp=$(free_port)
ours_flags "$hp" "$mp"
log "N=$N under heaptrack; results in $OUT"
# heaptrack runs the controller as its child; measure.py follows the child
# (--target-comm) and, at the end, stops it and waits for heaptrack to write
# its file.
python3 "$HERE/measure.py" controller --name ours-heaptrack --case heap --jobs "$N" \
	--qps "$QPS" --burst "$BURST" --jobset "$OUT/jobset.yaml" --log "$OUT/heap.log" --out "$OUT/heap.json" \
	--ready-url "http://127.0.0.1:$hp/readyz" --metrics-url "https://127.0.0.1:$mp/metrics" --metrics-token --start-timeout 180 --quiet-s 10 --stop-timeout 900 \
	--target-comm jobset-controller -- \
	heaptrack -o "$OUT/heaptrack.jobset-controller" "$CONTROLLER" --kubeconfig='{kubeconfig}' "${OURS_FLAGS[@]}" >/dev/null
cluster_down
shopt -s nullglob
data=("$OUT"/heaptrack.jobset-controller*.{zst,gz})
((${#data[@]})) || { log "no heaptrack data in $OUT"; exit 1; }
write=()
[[ -z $WRITE ]] || write=(--write "$WRITE")
python3 "$HERE/report.py" heap --binary "$CONTROLLER" --command "$OUT/command.txt" --result "$OUT/heap.json" --jobs "$N" "${write[@]}" "${data[0]}" |
	tee "$OUT/heap.md"
