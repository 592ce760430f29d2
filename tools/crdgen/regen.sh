#!/usr/bin/env bash
# tools/crdgen/regen.sh - regenerate deploy/crd/jobset.x-k8s.io_jobsets.yaml
# (the Helm chart's crds/ links to it).
#
# Fetches the Kubernetes OpenAPI v3 documents for batch/v1 and core/v1 from
# a test control plane (hack/cluster) of the newest Kubernetes the project
# supports (`hack/cluster version newest`; JOBSET_K8S_VERSION overrides it),
# builds tools/crdgen and runs it. The embedded Job and pod schemas are that
# version's, so fields of newer pod specs (1.36's spec.schedulingGroup) are
# kept; an older API server (the oldest supported, the default test cluster)
# serves the CRD too, and stores such fields in the JobSet (the cluster tier
# checks both: docs/webhooks.md "The CRD"). The output depends only on our
# API model and that Kubernetes version.
#
# A control plane of that version already running in $JOBSET_CLUSTER_DIR is
# used; a cluster of another version there is an error; with none, one is
# started with --apiserver-only and stopped again.
#
#   tools/crdgen/regen.sh [BUILD_DIR]     (default build/)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=$ROOT/deploy/crd/jobset.x-k8s.io_jobsets.yaml
export JOBSET_K8S_VERSION=${JOBSET_K8S_VERSION:-$("$ROOT/hack/cluster" version newest)}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

started=
if ! "$ROOT/hack/cluster" kubectl get --raw /readyz >/dev/null 2>&1; then
	"$ROOT/hack/cluster" up --apiserver-only >&2
	started=1
fi
stop() { [[ -z $started ]] || "$ROOT/hack/cluster" down >&2; }
# The version the API server reports, not the one asked for: a cluster
# left running in the state directory may be another one.
"$ROOT/hack/cluster" kubectl get --raw /version >"$TMP/version.json"
served=$(sed -n 's/^[[:space:]]*"gitVersion": "\([^"]*\)".*/\1/p' "$TMP/version.json")
if [[ $served != "$JOBSET_K8S_VERSION" ]]; then
	stop
	echo "regen.sh: the cluster in ${JOBSET_CLUSTER_DIR:-/tmp/jobset-cluster} serves Kubernetes ${served:-?}," \
		"not $JOBSET_K8S_VERSION; stop it or set JOBSET_CLUSTER_DIR to another directory" >&2
	exit 1
fi
"$ROOT/hack/cluster" kubectl get --raw /openapi/v3/apis/batch/v1 >"$TMP/batch.json"
"$ROOT/hack/cluster" kubectl get --raw /openapi/v3/api/v1 >"$TMP/core.json"
stop

cmake -S "$ROOT" -B "$BUILD" >/dev/null
cmake --build "$BUILD" --target jobset-crdgen >/dev/null
mkdir -p "$(dirname "$OUT")"
"$BUILD/jobset-crdgen" --batch "$TMP/batch.json" --core "$TMP/core.json" -o "$OUT"
echo "wrote $OUT from Kubernetes $JOBSET_K8S_VERSION ($(wc -c <"$OUT") bytes)" >&2
