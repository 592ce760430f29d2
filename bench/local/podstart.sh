#!/usr/bin/env bash
# podstart.sh - time until N pods run in container mode (`jobset run
# --runtime podman`), against podman making the same pods in a shell loop.
#
#   bench/local/podstart.sh [-r REPS] [-s "16 64"] build/jobset [OTHER_JOBSET...]
#
# For each size N, REPS rounds (default 3); a round measures, one after the
# other (the order turns each round), every jobset given and the baseline:
#   jobset   `jobset run --detach --runtime podman` of one Job of N pods
#            (completions = parallelism = N), from its start until every
#            pod's container has run its first command;
#   baseline a shell loop doing what the runner asks podman for a pod, one
#            pod after the other: `podman network create` (the run's
#            network) once, then per pod `podman pod create` (same
#            network, address, hostname, label) + `pod start` + `podman
#            run -d --pod`, until every container has run its first command.
# Every container is the same: a FROM scratch image holding this machine's
# static busybox (built offline once, localhost/jobset-bench-busybox), running
#   sh -c 'touch /m/$HOSTNAME; exec sleep 600'
# with /m a directory of the benchmark bind-mounted (a hostPath volume for
# jobset): "running" is N files there (polled every 20 ms). Each measurement
# is then torn down (jobset down; podman pod rm + network rm) and not timed.
# Prints every figure, the load average before and after, the medians and
# the median of the per-round ratios jobset/baseline (side by side, so the
# load of a shared machine weighs on both).
#
# podman is configured as in the tests (tests/e2e/local/containers.conf:
# runc, cgroupfs). Everything made carries label io.jobset.bench=podstart
# (baseline) or the run's io.jobset.run label, and is removed at the end.
set -euo pipefail

reps=3
sizes="16 64"
while getopts r:s: o; do
	case $o in
	r) reps=$OPTARG ;;
	s) sizes=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r REPS] [-s SIZES] JOBSET [JOBSET...]" >&2; exit 2; }
bins=()
for b in "$@"; do bins+=("$(realpath "$b")"); done

root=$(cd "$(dirname "$0")/../.." && pwd)
export CONTAINERS_CONF="$root/tests/e2e/local/containers.conf"
work=$(mktemp -d /tmp/podstart-XXXXXX)
net="jobset-bench-$$"
image="localhost/jobset-bench-busybox:1"

cleanup() {
	podman pod rm -f -t 0 $(podman pod ps -q --filter label=io.jobset.bench=podstart) >/dev/null 2>&1 || true
	podman network rm -f "$net" >/dev/null 2>&1 || true
	for d in "$work"/run-*; do
		[ -d "$d" ] && "${bins[0]}" down --run-dir "$d" >/dev/null 2>&1 || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

if ! podman image exists "$image"; then
	ctx="$work/image"
	mkdir -p "$ctx"
	cp "$(command -v busybox)" "$ctx/busybox"
	printf '%s\n' 'FROM scratch' 'COPY busybox /bin/busybox' 'RUN ["/bin/busybox", "--install", "-s", "/bin"]' \
		'ENTRYPOINT ["/bin/sh"]' >"$ctx/Containerfile"
	podman build -q -t "$image" "$ctx" >/dev/null
fi

now() { date +%s.%N; }

# Wait until directory $1 holds $2 files; fail after 600 s.
wait_files() {
	local deadline=$((SECONDS + 600)) n
	while :; do
		n=$(find "$1" -mindepth 1 -maxdepth 1 | wc -l)
		[ "$n" -ge "$2" ] && return 0
		[ $SECONDS -lt $deadline ] || { echo "timed out: $n of $2 pods running" >&2; return 1; }
		sleep 0.02
	done
}

# jobset BIN N TAG: prints seconds until N pods run.
run_jobset() {
	local bin=$1 n=$2 tag=$3
	local m="$work/m-$tag" d="$work/run-$tag"
	mkdir -p "$m"
	cat >"$work/js-$tag.yaml" <<EOF
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: ps}
spec:
  replicatedJobs:
  - name: w
    template:
      spec:
        completions: $n
        parallelism: $n
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            terminationGracePeriodSeconds: 1
            volumes: [{name: m, hostPath: {path: $m}}]
            containers:
            - name: c
              image: $image
              command: [/bin/sh, -c, 'touch /m/\$HOSTNAME; exec sleep 600']
              volumeMounts: [{name: m, mountPath: /m}]
EOF
	local t0 t1
	t0=$(now)
	"$bin" run --detach --runtime podman --run-dir "$d" "$work/js-$tag.yaml" >/dev/null 2>&1
	wait_files "$m" "$n"
	t1=$(now)
	local pid
	pid=$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' "$d/state.json" | head -1)
	"$bin" down --run-dir "$d" >/dev/null 2>&1 || true
	while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	rm -rf "$m" "$d"
	echo "$t1 - $t0" | bc
}

# baseline N TAG: prints seconds until N pods run.
run_baseline() {
	local n=$1 tag=$2
	local m="$work/m-$tag"
	mkdir -p "$m"
	local t0 t1 i
	t0=$(now)
	podman network create --internal --subnet 10.239.0.0/16 --gateway 10.239.0.1 --ip-range 10.239.128.0/17 \
		--label io.jobset.bench=podstart "$net" >/dev/null
	for ((i = 0; i < n; i++)); do
		podman pod create --name "pb-$i" --network "$net" --ip "10.239.0.$((i + 2))" --hostname "pb-$i" \
			--no-hosts --label io.jobset.bench=podstart >/dev/null 2>&1
		podman pod start "pb-$i" >/dev/null
		podman run -d --pull never --pod "pb-$i" --label io.jobset.bench=podstart -v "$m:/m" "$image" \
			-c 'touch /m/$HOSTNAME; exec sleep 600' >/dev/null
	done
	wait_files "$m" "$n"
	t1=$(now)
	podman pod rm -f -t 0 $(podman pod ps -q --filter label=io.jobset.bench=podstart) >/dev/null
	podman network rm -f "$net" >/dev/null
	rm -rf "$m"
	echo "$t1 - $t0" | bc
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; podman $(podman version -f '{{.Client.Version}}')"
for n in $sizes; do
	declare -A times=()
	for ((r = 1; r <= reps; r++)); do
		order=(baseline)
		for ((k = 0; k < ${#bins[@]}; k++)); do order+=("$k"); done
		if ((r % 2 == 0)); then order=($(printf '%s\n' "${order[@]}" | tac)); fi
		line="N=$n round $r:"
		for w in "${order[@]}"; do
			if [ "$w" = baseline ]; then
				t=$(run_baseline "$n" "b$n-$r")
			else
				t=$(run_jobset "${bins[$w]}" "$n" "j$w-$n-$r")
			fi
			times[$w]+="$t "
			line+=" $w=${t}s"
		done
		echo "$line (load $(cut -d' ' -f1 /proc/loadavg))"
	done
	b_med=$(printf '%s\n' ${times[baseline]} | median)
	echo "N=$n baseline (podman in a shell loop): median ${b_med}s [${times[baseline]% }]"
	for ((k = 0; k < ${#bins[@]}; k++)); do
		read -ra js <<<"${times[$k]}"
		read -ra bs <<<"${times[baseline]}"
		ratios=$(for ((r = 0; r < ${#js[@]}; r++)); do echo "${js[$r]} / ${bs[$r]}" | bc -l; done | median)
		echo "N=$n jobset[$k] ${bins[$k]}: median $(printf '%s\n' ${times[$k]} | median)s [${times[$k]% }]," \
			"median ratio to baseline $(printf '%.2f' "$ratios")"
	done
	unset times
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
