#!/usr/bin/env bash
# tools/crdgen/regen.sh - regenerate deploy/crd/jobset.x-k8s.io_jobsets.yaml.
#
# Fetches the Kubernetes OpenAPI v3 documents for batch/v1 and core/v1 from
# the test control plane (hack/cluster; started here with --apiserver-only
# when none is running in $JOBSET_CLUSTER_DIR), builds tools/crdgen and runs
# it. The output depends only on our API model and the Kubernetes version of
# the control plane (JOBSET_K8S_VERSION, see docs/cluster.md).
#
#   tools/crdgen/regen.sh [BUILD_DIR]     (default build/)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=$ROOT/deploy/crd/jobset.x-k8s.io_jobsets.yaml
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

started=
if ! "$ROOT/hack/cluster" kubectl get --raw /readyz >/dev/null 2>&1; then
	"$ROOT/hack/cluster" up --apiserver-only >&2
	started=1
fi
"$ROOT/hack/cluster" kubectl get --raw /openapi/v3/apis/batch/v1 >"$TMP/batch.json"
"$ROOT/hack/cluster" kubectl get --raw /openapi/v3/api/v1 >"$TMP/core.json"
if [[ -n $started ]]; then
	"$ROOT/hack/cluster" down >&2
fi

cmake -S "$ROOT" -B "$BUILD" >/dev/null
cmake --build "$BUILD" --target jobset-crdgen >/dev/null
mkdir -p "$(dirname "$OUT")"
"$BUILD/jobset-crdgen" --batch "$TMP/batch.json" --core "$TMP/core.json" -o "$OUT"
echo "wrote $OUT ($(wc -c <"$OUT") bytes)" >&2
