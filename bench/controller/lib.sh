# bench/controller/lib.sh - settings and shell helpers shared by suite.sh
# and heap.sh (sourced, not run).  Expects HERE and ROOT; cluster_up also OUT.
# shellcheck shell=bash

export JOBSET_CLUSTER_DIR=${JOBSET_CLUSTER_DIR:-/tmp/js-bench-cluster}
QPS=${QPS:-500}
BURST=${BURST:-500}
NODE_PODS=${NODE_PODS:-1000}
MIN_NODES=${MIN_NODES:-4}
CLUSTER="$ROOT/hack/cluster"

# ours_flags HEALTH_PORT METRICS_PORT -> OURS_FLAGS: our controller's flags
# after --kubeconfig (client limit, leader election and webhooks off,
# probes and metrics on loopback)
ours_flags() {
	OURS_FLAGS=(--kube-api-qps="$QPS" --kube-api-burst="$BURST" --leader-elect=false --enable-webhooks=false
		--health-probe-bind-address="127.0.0.1:$1" --metrics-bind-address="127.0.0.1:$2")
}

# upstream_config FILE WEBHOOK_PORT METRICS_PORT HEALTH_PORT -> upstream's
# Configuration: leader election and internal cert management off, its
# webhook server on loopback with hack/cluster's webhook certificate (it
# always serves one; whether it is registered is the caller's business),
# metrics (HTTPS behind TokenReview) and probes on loopback, client QPS/burst
upstream_config() {
	cat >"$1" <<-EOF
		apiVersion: config.jobset.x-k8s.io/v1alpha1
		kind: Configuration
		leaderElection: {leaderElect: false}
		internalCertManagement: {enable: false}
		webhook: {host: 127.0.0.1, port: $2, certDir: "$JOBSET_CLUSTER_DIR/pki/webhook"}
		metrics: {bindAddress: "127.0.0.1:$3"}
		health: {healthProbeBindAddress: "127.0.0.1:$4"}
		clientConnection: {qps: $QPS, burst: $BURST}
	EOF
}

bench_log() { printf '[%s %s] %s\n' "${BENCH_TAG:-bench}" "$(date +%H:%M:%S)" "$*" >&2; }

# free_port -> a TCP port free on 127.0.0.1 now
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# nodes_for PODS -> kwok nodes of NODE_PODS pods for PODS pods and a quarter
# more, at least MIN_NODES
nodes_for() {
	local n=$((($1 * 5 / 4 + NODE_PODS - 1) / NODE_PODS))
	echo $((n < MIN_NODES ? MIN_NODES : n))
}

# cluster_up PODS CRD -> a fresh control plane sized for PODS pods (the log
# goes to $OUT/cluster-up.log)
cluster_up() {
	"$CLUSTER" down >/dev/null 2>&1 || true
	JOBSET_NODE_PODS=$NODE_PODS "$CLUSTER" up --nodes "$(nodes_for "$1")" --crd "$2" >"$OUT/cluster-up.log" 2>&1 ||
		{ cat "$OUT/cluster-up.log" >&2; return 1; }
}

cluster_down() { "$CLUSTER" down "$@" >/dev/null 2>&1 || true; }

# write_command FILE SCRIPT ARGS... -> appends the command line, the
# machine and the commit to FILE, for the report
write_command() {
	local f=$1 a
	shift
	{
		printf 'command:'
		for a in "$@"; do
			if [[ $a =~ ^[A-Za-z0-9_./=:,@+-]+$ ]]; then printf ' %s' "$a"; else printf " '%s'" "${a//\'/\'\\\'\'}"; fi
		done
		echo
		echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
		echo "host: $(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "repo: $(git -C "$ROOT" rev-parse --short HEAD); src/ as of $(git -C "$ROOT" log -1 --format=%h -- src)$(git -C "$ROOT" diff --quiet HEAD -- src || echo ' (modified)')"
	} >>"$f"
}
