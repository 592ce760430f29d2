# bench/controller/lib.sh - shell helpers shared by suite.sh and heap.sh
# (sourced, not run).  Expects HERE, ROOT, OUT and NODE_PODS, MIN_NODES set.
# shellcheck shell=bash

CLUSTER="$ROOT/hack/cluster"

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

# write_command FILE SCRIPT ARGS... -> the command line, the machine and
# the commit, for the report
write_command() {
	local f=$1
	shift
	{
		printf 'command:'
		printf ' %q' "$@"
		echo
		echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
		echo "host: $(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "repo: $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- src || echo ' (src modified)')"
	} >"$f"
}
