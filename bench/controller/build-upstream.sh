#!/usr/bin/env bash
# bench/controller/build-upstream.sh - build the upstream JobSet controller
# (sigs.k8s.io/jobset, unmodified) from the Go module proxy, for the
# side-by-side benchmark only.  Nothing upstream is committed: the binary and
# the module sources live in the cache outside the repository.
#
#   bench/controller/build-upstream.sh            # build (or find cached); prints the binary path
#   bench/controller/build-upstream.sh --crd      # prints the path of upstream's base CRD
#   bench/controller/build-upstream.sh --dir      # prints the module directory in the module cache
#
# Layout (shared with hack/cluster's Go cache):
#   $JOBSET_CACHE/jobset-upstream/<ver>/bin/manager   the controller (module-root main package)
#   $JOBSET_CACHE/jobset-upstream/<ver>/.stamp        version, go version, build date
#   $JOBSET_CACHE/go/pkg/mod                         GOMODCACHE (the CRD is read from here)
#   $JOBSET_CACHE/go-build                           GOCACHE
# Idempotent: a stamped, executable binary is not rebuilt.  Concurrent builds
# serialise on $JOBSET_CACHE/.build.lock (the same lock hack/cluster uses).
#
# Settings: JOBSET_UPSTREAM_VERSION (default v0.12.0), JOBSET_CACHE
# (default ~/.cache/jobset), JOBSET_BUILD_JOBS (go build -p, default 2).
set -euo pipefail

VER=${JOBSET_UPSTREAM_VERSION:-v0.12.0}
CACHE=${JOBSET_CACHE:-$HOME/.cache/jobset}
MOD=sigs.k8s.io/jobset

export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOPATH="$CACHE/go"
export GOMODCACHE="$CACHE/go/pkg/mod"
export GOCACHE="$CACHE/go-build"
export GOFLAGS="-modcacherw -buildvcs=false -p=${JOBSET_BUILD_JOBS:-2}"

log() { echo "build-upstream: $*" >&2; }

# module_dir -> the extracted module in GOMODCACHE (downloads it if needed)
module_dir() {
	local d
	d=$(cd /tmp && go mod download -json "$MOD@$VER" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
	[[ -n $d && -d $d ]] || { log "cannot download $MOD@$VER"; return 1; }
	echo "$d"
}

case ${1:-} in
--dir) module_dir; exit ;;
--crd)
	crd="$(module_dir)/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"
	[[ -f $crd ]] || { log "no CRD at $crd"; exit 1; }
	echo "$crd"
	exit
	;;
"") ;;
*) log "usage: $0 [--crd|--dir]"; exit 2 ;;
esac

dir="$CACHE/jobset-upstream/$VER"
bin="$dir/bin/manager"
if [[ -f $dir/.stamp && -x $bin ]]; then
	log "$MOD $VER: cached"
	echo "$bin"
	exit 0
fi

mkdir -p "$CACHE" "$GOMODCACHE" "$GOCACHE"
exec 9>"$CACHE/.build.lock"
if ! flock -n 9; then
	log "another build holds $CACHE/.build.lock; waiting"
	flock 9
fi
if [[ -f $dir/.stamp && -x $bin ]]; then echo "$bin"; exit 0; fi

log "$MOD $VER: building (cold ~5 min on 2 cores)"
t0=$SECONDS
src="$dir/src"
rm -rf "$src" && mkdir -p "$src" "$dir/bin"
# A throw-away main module under the cache requires the module as a tool
# and builds its root package (main.go) from the module cache, as
# hack/cluster does for etcd.  ("go install pkg@version" fails here: it
# asks the proxy for the module's version list, which is refused.)  The main
# module copies the go line of upstream's go.mod so GODEBUG defaults match.
(
	cd "$src"
	go mod init local/jobset-upstream >/dev/null 2>&1
	go get -tool "$MOD@$VER"
	gomod=$(go mod download -json "$MOD@$VER" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
	gover=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$gomod" | head -1)
	[[ -z $gover ]] || go mod edit -go="$gover"
	go build -trimpath -ldflags="-s -w -X $MOD/pkg/version.GitVersion=$VER" -o "$bin.tmp" "$MOD"
)
mv "$bin.tmp" "$bin"
{
	echo "module=$MOD"
	echo "version=$VER"
	echo "go=$(go env GOVERSION)"
	echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$dir/.stamp"
log "$MOD $VER: built in $((SECONDS - t0))s -> $bin"
echo "$bin"
