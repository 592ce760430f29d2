#!/usr/bin/env bash
# bench/controller/reconcile-sampler.sh - once a second, the controller pod's
# controller_runtime_reconcile_total samples, for recovery.sh's runs: how many
# reconcile passes the controller makes while the old pods stop (a controller
# that spins takes CPU from the kubelets on the same nodes exactly then).
#
#   JOBSET_CLUSTER_DIR=... bench/controller/reconcile-sampler.sh OUT
#
# Start it once recovery.sh has applied deploy/ (the "runs:" line of its
# log); stop it (kill its pid) when recovery.sh is done. Appends to OUT one
# line per sample and series: "<epoch s> <pod> <series> <value>", and
# "<epoch s> pod <pod> <ip>" when it (re)finds the pod (after each variant
# switch). Reads /metrics (HTTPS, checked by TokenReview and
# SubjectAccessReview, ours and upstream's alike) from inside the cluster
# namespace at the pod's :8443, as a service account it binds to deploy/'s
# jobset-metrics-reader. bench/controller/recovery_rates.py reads OUT.
set -uo pipefail

OUT=${1:?usage: $0 OUT}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CLUSTER=$HERE/../../hack/cluster
eval "$("$CLUSTER" env)"
export KUBECONFIG=$JOBSET_TEST_KUBECONFIG
NSPID=$(cat "$JOBSET_CLUSTER_DIR/pids/nsholder.pid")
SA=reconcile-sampler
kubectl create serviceaccount "$SA" -n default >/dev/null 2>&1
kubectl create clusterrolebinding "$SA" --clusterrole=jobset-metrics-reader \
	--serviceaccount="default:$SA" >/dev/null 2>&1
TOKEN=$(kubectl create token "$SA" -n default --duration=3h)
pod="" ip=""
while :; do
	now=$(date +%s.%N)
	body=""
	if [[ -n $ip ]]; then
		body=$(nsenter -t "$NSPID" -n -- curl -sk --max-time 2 -H "Authorization: Bearer $TOKEN" \
			"https://$ip:8443/metrics" 2>/dev/null | grep '^controller_runtime_reconcile_total')
	fi
	if [[ -z $body ]]; then
		# No answer: the Deployment switched variants (or the pod is starting).
		read -r pod ip < <(kubectl get pods -n jobset-system -l control-plane=controller-manager \
			--field-selector=status.phase=Running \
			-o jsonpath='{range .items[*]}{.metadata.name} {.status.podIP}{"\n"}{end}' 2>/dev/null | tail -1)
		echo "$now pod $pod $ip" >>"$OUT"
	else
		while read -r l; do echo "$now $pod $l"; done <<<"$body" >>"$OUT"
	fi
	sleep 1
done
