#!/usr/bin/env bash
# bench/controller/placement.sh - the exclusive-placement benchmark (issue
# 14 item 2): one JobSet of 50 Jobs x 4 pods with
# alpha.jobset.sigs.k8s.io/exclusive-topology: cloud.google.com/gke-nodepool
# on 100 kwok nodes in 50 pools (hack/cluster up --nodes 100 --pools 50: two
# nodes per pool, so every pool is taken), our controller (its default
# --exclusive-placement=gates) vs upstream v0.12.0, each with its four
# admission webhooks registered, each on a fresh control plane of the same
# build, in one run.  Figures: JobSet POST -> every pod bound, admission
# rejections (the API server's apiserver_admission_webhook_rejection_count),
# pod creates by HTTP code, the controller's API requests.  The table and
# the command are in BENCHMARKS.md.
#
#   bench/controller/placement.sh [--targets "ours upstream"] [--reps R] [--out DIR]
#
# Environment: JOBSET_CONTROLLER (default build/jobset-controller),
# JOBSET_CLUSTER_DIR, QPS, BURST (lib.sh).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TARGETS="ours upstream"
REPS=1
OUT=/tmp/js-bench/placement-$(date +%Y%m%d-%H%M%S)
CONTROLLER=${JOBSET_CONTROLLER:-$ROOT/build/jobset-controller}
ARGV=("$@")
while (($#)); do
	case $1 in
	--targets) TARGETS=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | grep -v '^set ' | sed -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "placement.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BENCH_TAG=placement
# shellcheck source=lib.sh
. "$HERE/lib.sh"
log() { bench_log "$@"; }

[[ " $TARGETS " != *" upstream "* ]] || UPSTREAM=$("$HERE/build-upstream.sh")
CRD=$("$HERE/build-upstream.sh" --crd)
[[ " $TARGETS " != *" ours "* || -x $CONTROLLER ]] || { log "no $CONTROLLER (set JOBSET_CONTROLLER)"; exit 1; }
write_command "$OUT/command.txt" "$0" "${ARGV[@]}"
echo "upstream: ${UPSTREAM:-} (${JOBSET_UPSTREAM_VERSION:-v0.12.0}); ours: $CONTROLLER" >>"$OUT/command.txt"

run_target() {
	local t=$1 rep=$2 hp mp wp id
	id="placement-$t-$rep"
	hp=$(free_port) mp=$(free_port) wp=$(free_port)
	local common=(--name "$t" --ready-url "http://127.0.0.1:$hp/readyz" --webhook-port "$wp"
		--log "$OUT/$id.log" --out "$OUT/$id.json")
	case $t in
	upstream)
		upstream_config "$OUT/upstream-config.yaml" "$wp" "$mp" "$hp"
		python3 "$HERE/placement.py" "${common[@]}" -- \
			"$UPSTREAM" --config="$OUT/upstream-config.yaml" --kubeconfig='{kubeconfig}' >/dev/null
		;;
	ours)
		ours_flags "$hp" "$mp"
		OURS_FLAGS=("${OURS_FLAGS[@]/--enable-webhooks=false/--enable-webhooks=true}")
		python3 "$HERE/placement.py" "${common[@]}" -- \
			"$CONTROLLER" --kubeconfig='{kubeconfig}' "${OURS_FLAGS[@]}" --cert-management=none \
			--webhook-cert-dir='{webhook_cert_dir}' --webhook-host=127.0.0.1 --webhook-port="$wp" >/dev/null
		;;
	esac
}

trap cluster_down EXIT
failed=0
for ((rep = 1; rep <= REPS; rep++)); do
	for t in $TARGETS; do
		log "placement-$t-$rep: fresh cluster, 100 nodes in 50 pools"
		"$CLUSTER" down >/dev/null 2>&1 || true
		"$CLUSTER" up --nodes 100 --pools 50 --crd "$CRD" >"$OUT/cluster-up.log" 2>&1 ||
			{ cat "$OUT/cluster-up.log" >&2; exit 1; }
		if ! run_target "$t" "$rep"; then
			log "placement-$t-$rep FAILED (log: $OUT/placement-$t-$rep.log)"
			failed=$((failed + 1))
		fi
	done
done
cluster_down
python3 - "$OUT" <<'EOP' | tee "$OUT/summary.md"
import json, pathlib, sys
d = pathlib.Path(sys.argv[1])
print("| target | rep | create -> all 200 pods bound (s) | admission rejections | pod POSTs by code | controller API requests | exclusive |")
print("|---|---|---|---|---|---|---|")
for f in sorted(d.glob("placement-*.json")):
    r = json.loads(f.read_text())
    rep = f.stem.rsplit("-", 1)[1]
    rej = ", ".join(f"{k} {v}" for k, v in r["admission_rejections"].items()) or "0"
    posts = ", ".join(f"{k}: {v}" for k, v in r["pod_creates_by_code"].items())
    print(f"| {r['name']} | {rep} | {r['create_to_all_bound_s']} | {r['admission_rejections_total']} ({rej}) | {posts} | {r['requests']['total']} | {r['exclusive']} |")
EOP
((failed == 0))
