#!/usr/bin/env bash
# bench/controller/run.sh - the controller benchmark: one JobSet with 1,000
# child Jobs, our jobset-controller vs the upstream controller
# (sigs.k8s.io/jobset, built by build-upstream.sh), plus a raw parallel
# create loop of the same 1,000 Jobs (the API server's limit).  Results and
# the commands used are in BENCHMARKS.md.
#
#   bench/controller/run.sh [--reps N] [--targets "upstream ours raw raw-qps"] [--out DIR]
#
# Every measurement gets a fresh control plane (hack/cluster up, 4 kwok
# nodes, upstream's base CRD from the Go module cache), in its own state dir
# ($JOBSET_CLUSTER_DIR, default /tmp/js-bench-cluster), and tears it down
# afterwards.  Targets:
#   upstream  sigs.k8s.io/jobset v0.12.0, out of cluster, webhooks not
#             registered (the JobSet is submitted fully defaulted), internal
#             cert management and leader election off, zap defaults
#   ours      $JOBSET_CONTROLLER (default build/jobset-controller), leader
#             election off, webhooks off
#   raw       build-bench/rawcreate: the same Service + 1,000 Jobs
#             (jobset render -o json), 100 requests in flight, no client
#             rate limit
#   raw-qps   the same with the controllers' client limit
# Both controllers get client QPS/burst $QPS/$BURST (default 500/500,
# upstream's defaults) and the benchmark identity's kubeconfig
# (CN=jobset-bench-controller; its requests are counted by the API server,
# see measure.py).  Per-run JSON goes to --out (default /tmp/js-bench/<date>);
# a summary table is printed at the end.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export JOBSET_CLUSTER_DIR=${JOBSET_CLUSTER_DIR:-/tmp/js-bench-cluster}
QPS=${QPS:-500}
BURST=${BURST:-500}
NODES=${NODES:-4}
REPS=3
TARGETS="upstream ours raw raw-qps"
OUT=/tmp/js-bench/$(date +%Y%m%d-%H%M%S)
CONTROLLER=${JOBSET_CONTROLLER:-$ROOT/build/jobset-controller}
JOBSET_CLI=${JOBSET_CLI:-$ROOT/build/jobset}

while (($#)); do
	case $1 in
	--reps) REPS=$2; shift 2 ;;
	--targets) TARGETS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	-h | --help) sed -n '2,29p' "$0"; exit 0 ;;
	*) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
mkdir -p "$OUT"
CLUSTER="$ROOT/hack/cluster"

# ---- build what is needed
UPSTREAM=$("$HERE/build-upstream.sh")
CRD=$("$HERE/build-upstream.sh" --crd)
cmake -S "$HERE" -B "$ROOT/build-bench" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$ROOT/build-bench" >/dev/null
RAW="$ROOT/build-bench/rawcreate"
"$JOBSET_CLI" render -o json "$HERE/jobset-1000.yaml" >"$OUT/render.json"
if [[ " $TARGETS " == *" ours "* && ! -x $CONTROLLER ]]; then
	log "no $CONTROLLER: skipping target 'ours' (set JOBSET_CONTROLLER)"
	TARGETS=${TARGETS//ours/}
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

cluster_up() {
	"$CLUSTER" down >/dev/null 2>&1 || true
	"$CLUSTER" up --nodes "$NODES" --crd "$CRD" >"$OUT/cluster-up.log" 2>&1 ||
		{ cat "$OUT/cluster-up.log" >&2; exit 1; }
}

measure() { python3 "$HERE/measure.py" "$@"; }

run_target() {
	local t=$1 rep=$2 hp mp wp
	local res="$OUT/$t-$rep.json" lg="$OUT/$t-$rep.log"
	hp=$(free_port) mp=$(free_port) wp=$(free_port)
	case $t in
	upstream)
		# Webhooks are always served by upstream's manager (it needs
		# tls.crt/tls.key); they are simply not registered with the API
		# server.  Everything else is upstream's default.
		cat >"$OUT/upstream-config.yaml" <<-EOF
			apiVersion: config.jobset.x-k8s.io/v1alpha1
			kind: Configuration
			leaderElection: {leaderElect: false}
			internalCertManagement: {enable: false}
			webhook: {host: 127.0.0.1, port: $wp, certDir: "$JOBSET_CLUSTER_DIR/pki/webhook"}
			metrics: {bindAddress: "127.0.0.1:$mp"}
			health: {healthProbeBindAddress: "127.0.0.1:$hp"}
			clientConnection: {qps: $QPS, burst: $BURST}
		EOF
		measure controller --name upstream --jobset "$HERE/jobset-1000.yaml" \
			--ready-url "http://127.0.0.1:$hp/readyz" --qps "$QPS" --burst "$BURST" \
			--log "$lg" --out "$res" -- \
			"$UPSTREAM" --config="$OUT/upstream-config.yaml" --kubeconfig='{kubeconfig}' >/dev/null
		;;
	ours)
		measure controller --name ours --jobset "$HERE/jobset-1000.yaml" \
			--ready-url "http://127.0.0.1:$hp/readyz" --qps "$QPS" --burst "$BURST" \
			--scrape-url "http://127.0.0.1:$mp/metrics" \
			--log "$lg" --out "$res" -- \
			"$CONTROLLER" --kubeconfig='{kubeconfig}' --kube-api-qps="$QPS" --kube-api-burst="$BURST" \
			--leader-elect=false --enable-webhooks=false --health-probe-bind-address="127.0.0.1:$hp" \
			--metrics-bind-address="127.0.0.1:$mp" >/dev/null
		;;
	raw)
		measure raw --name raw --list "$OUT/render.json" --log "$lg" --out "$res" -- \
			"$RAW" --kubeconfig='{kubeconfig}' --window 100 >/dev/null
		;;
	raw-qps)
		measure raw --name "raw-qps$QPS" --list "$OUT/render.json" --log "$lg" --out "$res" -- \
			"$RAW" --kubeconfig='{kubeconfig}' --window 100 --qps "$QPS" --burst "$BURST" >/dev/null
		;;
	*) log "unknown target $t"; return 1 ;;
	esac
}

log "results in $OUT; targets: $TARGETS; reps: $REPS; QPS/burst $QPS/$BURST; $NODES nodes"
trap '"$CLUSTER" down >/dev/null 2>&1 || true' EXIT
for ((rep = 1; rep <= REPS; rep++)); do
	for t in $TARGETS; do
		log "rep $rep: $t (fresh cluster)"
		cluster_up
		if ! run_target "$t" "$rep"; then
			log "rep $rep: $t FAILED (log: $OUT/$t-$rep.log)"
			"$CLUSTER" down --keep >/dev/null 2>&1 || true
			cp -r "$JOBSET_CLUSTER_DIR/logs" "$OUT/cluster-logs-$t-$rep" 2>/dev/null || true
			continue
		fi
		"$CLUSTER" down >/dev/null 2>&1 || true
	done
done
shopt -s nullglob
files=("$OUT"/*-[0-9]*.json)
((${#files[@]})) && measure summary "${files[@]}" | tee "$OUT/summary.md"
