# shellcheck shell=bash
# hack/cluster.d/build.sh - build the test control-plane binaries from the Go
# module proxy.  Sourced by hack/cluster; not meant to be run directly.
#
# Everything lands in the cache directory ($JOBSET_CACHE, default
# ~/.cache/jobset), keyed by version, outside the repository:
#   $CACHE/k8s/<ver>/bin/{kube-apiserver,kube-controller-manager,kube-scheduler,kubectl}
#   $CACHE/etcd/<ver>/bin/etcd
#   $CACHE/kwok/<ver>/bin/kwok
#   $CACHE/node/<k8s ver>/bin/{kubelet,kube-proxy}   (real nodes, `build real-nodes`)
#   $CACHE/coredns/<ver>/bin/coredns                (real nodes' cluster DNS)
#   $CACHE/helm/<ver>/bin/helm       (chart tests; Debian bookworm has no helm)
#   $CACHE/kueue/<ver>/bin/kueue     (Kueue e2e tests, not in "all"; CRDs and webhook
#                                     manifests are read from its module source)
#   $CACHE/trainer/<ver>/bin/trainer-controller-manager
#                                    (Kubeflow Trainer e2e tests, not in "all"; CRDs are
#                                     read from its module source, manifests/)
#   $CACHE/go/{pkg/mod,...}  GOPATH / GOMODCACHE
#   $CACHE/go-build          GOCACHE
# Each component directory carries a .stamp file; when the stamp and the
# binaries are present the component is not rebuilt.
#
# Go is used here only to compile unmodified upstream components; scratch
# "main modules" are generated under $CACHE/<component>/<ver>/src.

build_go_env() {
	export GOTOOLCHAIN=local
	export CGO_ENABLED=0
	export GOPATH="$CACHE/go"
	export GOMODCACHE="$CACHE/go/pkg/mod"
	export GOCACHE="$CACHE/go-build"
	export GOFLAGS="-modcacherw -buildvcs=false -p=${JOBSET_BUILD_JOBS:-2}"
	mkdir -p "$GOMODCACHE" "$GOCACHE"
}

# component_ok DIR BIN... -> 0 when DIR/.stamp exists and every DIR/bin/BIN is executable
component_ok() {
	local dir=$1 b
	shift
	[[ -f $dir/.stamp ]] || return 1
	for b in "$@"; do [[ -x $dir/bin/$b ]] || return 1; done
}

# build_lock: take the cache's build lock (once per process), waiting for
# another build (a background warm-up, another checkout's tests) to finish.
# Taken only when something is to be built, so a run whose components are
# all cached never waits on another's long build.
build_lock() {
	[[ -n ${BUILD_LOCKED:-} ]] && return 0
	exec 9>"$CACHE/.build.lock"
	if ! flock -n 9; then
		log "another build holds $CACHE/.build.lock; waiting for it"
		flock 9
	fi
	BUILD_LOCKED=1
}

# cached LABEL DIR BIN... -> 0 (and says so) when the component is in the
# cache. Otherwise takes the build lock and looks again (the build that held
# it may have been building this very component): 1, lock held, to build.
cached() {
	local label=$1 dir=$2
	shift 2
	if ! component_ok "$dir" "$@"; then
		build_lock
		component_ok "$dir" "$@" || return 1
	fi
	log "$label: cached at $dir/bin"
}

write_stamp() {
	local dir=$1 ver=$2
	{
		echo "version=$ver"
		echo "go=$(go env GOVERSION)"
		echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	} >"$dir/.stamp"
}

build_etcd() {
	local dir="$CACHE/etcd/$ETCD_VERSION"
	cached "etcd $ETCD_VERSION" "$dir" etcd && return 0
	log "etcd $ETCD_VERSION: building"
	local t0=$SECONDS src="$dir/src"
	rm -rf "$src" && mkdir -p "$src" "$dir/bin"
	(
		cd "$src"
		go mod init local/etcdbin >/dev/null 2>&1
		# etcd's own go.mod has replace directives (../api etc.), so it cannot
		# be installed with "go install pkg@ver"; a tiny main module ignores them.
		go get -tool "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
		go build -trimpath -ldflags="-s -w" -o "$dir/bin/etcd" go.etcd.io/etcd/server/v3
	) || return 1
	write_stamp "$dir" "$ETCD_VERSION"
	log "etcd $ETCD_VERSION: built in $((SECONDS - t0))s"
}

build_kwok() {
	local dir="$CACHE/kwok/$KWOK_VERSION"
	cached "kwok $KWOK_VERSION" "$dir" kwok && return 0
	log "kwok $KWOK_VERSION: building"
	local t0=$SECONDS
	mkdir -p "$dir/bin"
	GOBIN="$dir/bin" go install -trimpath \
		-ldflags="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" \
		"sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" || return 1
	write_stamp "$dir" "$KWOK_VERSION"
	log "kwok $KWOK_VERSION: built in $((SECONDS - t0))s"
}

# k8s_main_module SRC CMD... -> SRC is a scratch main module that requires
# k8s.io/kubernetes $K8S_VERSION with its staging modules mapped to their
# published twins and the given k8s.io/kubernetes/cmd/CMDs as tools; prints
# the -ldflags that stamp the version. Runs in a subshell of the caller.
k8s_main_module() {
	local src=$1 v=${K8S_VERSION#v}
	shift
	local major=${v%%.*} rest=${v#*.}
	local minor=${rest%%.*} patch=${rest#*.}
	local staging_ver="v0.$minor.$patch"
	cd "$src" || return 1
	go mod init local/k8sbins >/dev/null 2>&1
	local gomod
	gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
	[[ -f $gomod ]] || { log "cannot download k8s.io/kubernetes@$K8S_VERSION go.mod"; return 1; }
	# k8s.io/kubernetes requires its staging modules at v0.0.0 and maps them
	# to ./staging/src/... with replace directives that only apply inside
	# the kubernetes repo.  Map each to its published twin v0.<minor>.<patch>,
	# derived from the downloaded go.mod rather than a hard-coded list.
	local mods
	mods=$( {
		sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\)[[:space:]]*=>[[:space:]]*\./staging/.*#\1#p' "$gomod"
		sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\)[[:space:]]\{1,\}v0\.0\.0\([[:space:]].*\)\{0,1\}$#\1#p' "$gomod"
	} | sort -u)
	[[ -n $mods ]] || { log "no staging modules found in $gomod"; return 1; }
	local args=() m
	for m in $mods; do args+=("-replace=$m=$m@$staging_ver"); done
	# Kubernetes pins GODEBUG defaults to the Go it shipped with; only the
	# main module's go/godebug lines count, so copy them.
	local gover godebug
	gover=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$gomod" | head -1)
	godebug=$(sed -n 's/^godebug \(.*\)$/\1/p' "$gomod" | head -1)
	go mod edit -go="$gover" "${args[@]}" || return 1
	[[ -z $godebug ]] || go mod edit -godebug="$godebug" || return 1
	log "kubernetes $K8S_VERSION: $(wc -w <<<"$mods") staging modules -> $staging_ver, go $gover, godebug ${godebug:-none}" >&2
	local pkgs=() c
	for c in "$@"; do pkgs+=("k8s.io/kubernetes/cmd/$c@$K8S_VERSION"); done
	go get -tool "${pkgs[@]}" >&2 || return 1
	# Version stamping as kubernetes' hack/lib/version.sh does, so that
	# /version and kubectl version report the real version.
	local ld="-s -w" k pkg
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		for k in "gitVersion=$K8S_VERSION" "gitMajor=$major" "gitMinor=$minor" \
			"gitTreeState=clean" "buildDate=1970-01-01T00:00:00Z"; do
			ld+=" -X $pkg.$k"
		done
	done
	printf '%s\n' "$ld"
}

# build_k8s_cmds LABEL DIR CMD... -> one `go build` of k8s.io/kubernetes/cmd/CMD...
# at $K8S_VERSION into DIR/bin, stamped.
build_k8s_cmds() {
	local label=$1 dir=$2
	shift 2
	local t0=$SECONDS src="$dir/src"
	rm -rf "$src" && mkdir -p "$src" "$dir/bin"
	(
		set -e
		ld=$(k8s_main_module "$src" "$@")
		cd "$src"
		pkgs=()
		for c in "$@"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
		go build -trimpath -ldflags="$ld" -o "$dir/bin/" "${pkgs[@]}"
	) || return 1
	write_stamp "$dir" "$K8S_VERSION"
	log "$label $K8S_VERSION: built in $((SECONDS - t0))s"
}

build_k8s() {
	local dir="$CACHE/k8s/$K8S_VERSION"
	# Only the default version builds kubectl: a cluster of another version
	# (JOBSET_K8S_VERSION, e.g. the gang tier's 1.36) drives itself with the
	# default version's kubectl, which saves a fourth link of the cold build.
	local cmds=(kube-apiserver kube-controller-manager kube-scheduler)
	[[ $K8S_VERSION != "$K8S_DEFAULT_VERSION" ]] || cmds+=(kubectl)
	cached "kubernetes $K8S_VERSION" "$dir" "${cmds[@]}" && return 0
	log "kubernetes $K8S_VERSION: building ${cmds[*]} (cold: ~9 min measured on 2 cores for v1.34.4, ~1 min with a warm GOCACHE; see docs/cluster.md)"
	build_k8s_cmds kubernetes "$dir" "${cmds[@]}"
}

# The node binaries of real nodes (hack/cluster up --real-nodes): kubelet and
# kube-proxy of the same Kubernetes version as the control plane, in a main
# module of their own (the control plane's stamp stays as it is), sharing
# its module and build caches.
build_node() {
	local dir="$CACHE/node/$K8S_VERSION"
	cached "kubelet/kube-proxy $K8S_VERSION" "$dir" kubelet kube-proxy && return 0
	log "kubelet/kube-proxy $K8S_VERSION: building (~1-2 min with the control plane's GOCACHE warm)"
	build_k8s_cmds kubelet/kube-proxy "$dir" kubelet kube-proxy
}

# CoreDNS for real nodes: a main module with only the plugins the test
# cluster's Corefile uses (the full set pulls in every cloud provider's SDK).
build_coredns() {
	local dir="$CACHE/coredns/$COREDNS_VERSION"
	cached "coredns $COREDNS_VERSION" "$dir" coredns && return 0
	log "coredns $COREDNS_VERSION: building"
	local t0=$SECONDS src="$dir/src"
	rm -rf "$src" && mkdir -p "$src" "$dir/bin"
	(
		set -e
		cd "$src"
		go mod init local/corednsbin >/dev/null 2>&1
		local plugins=(bind ready health errors log cache hosts kubernetes loop)
		local p imports=() directives=""
		for p in "${plugins[@]}"; do
			imports+=("github.com/coredns/coredns/plugin/$p")
			directives+="\"$p\", "
		done
		# Directives: upstream's order (core/dnsserver/zdirectives.go), only these.
		{
			echo 'package main'
			echo 'import ('
			echo '	"github.com/coredns/coredns/core/dnsserver"'
			echo '	"github.com/coredns/coredns/coremain"'
			for p in "${imports[@]}"; do echo "	_ \"$p\""; done
			echo ')'
			echo "func init() { dnsserver.Directives = []string{$directives} }"
			echo 'func main() { coremain.Run() }'
		} >main.go
		go get "github.com/coredns/coredns@$COREDNS_VERSION"
		go get "${imports[@]/%/@$COREDNS_VERSION}" "github.com/coredns/coredns/coremain@$COREDNS_VERSION"
		go build -trimpath -ldflags="-s -w" -o "$dir/bin/coredns" .
	) || return 1
	write_stamp "$dir" "$COREDNS_VERSION"
	log "coredns $COREDNS_VERSION: built in $((SECONDS - t0))s"
}

# build_go_tool NAME VERSION MODULE/PKG -> go install of an upstream command
# whose go.mod has no replace directives (helm, kueue, trainer), into
# $CACHE/NAME/VERSION/bin, skipped when its stamp is present.
build_go_tool() {
	local name=$1 ver=$2 pkg=$3 ld=${4:-}
	local dir="$CACHE/$name/$ver" bin=${pkg##*/}
	cached "$name $ver" "$dir" "$bin" && return 0
	log "$name $ver: building"
	local t0=$SECONDS
	mkdir -p "$dir/bin"
	GOBIN="$dir/bin" go install -trimpath -ldflags="-s -w $ld" "$pkg@$ver" || return 1
	write_stamp "$dir" "$ver"
	log "$name $ver: built in $((SECONDS - t0))s"
}

# helm: the version is stamped as helm's Makefile does, so "helm version"
# and the chart's .Capabilities report it.
build_helm() {
	build_go_tool helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm \
		"-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
}

build_kueue() {
	build_go_tool kueue "$KUEUE_VERSION" sigs.k8s.io/kueue/cmd/kueue \
		"-X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION"
}

# kueue_src -> prints the directory of Kueue's module source (CRDs, webhook
# manifests), downloading it into the module cache if needed.
kueue_src() {
	go mod download -json "sigs.k8s.io/kueue@$KUEUE_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p'
}

# Kubeflow Trainer v2's controller manager (TrainJob -> JobSet). Its go.mod
# has no replace directives, so a plain go install builds it.
build_trainer() {
	build_go_tool trainer "$TRAINER_VERSION" \
		github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager
}

cmd_build() {
	build_go_env
	mkdir -p "$CACHE"
	local only=${1:-all}
	local t0=$SECONDS
	case $only in
	# Another version than the default also needs the default's kubectl.
	# The clients other than helm are not in "all": `clients` builds them,
	# and the cluster tier of scripts/test runs both (docs/cluster.md).
	all) build_etcd && build_kwok && build_k8s &&
		{ [[ $K8S_VERSION == "$K8S_DEFAULT_VERSION" ]] || K8S_VERSION=$K8S_DEFAULT_VERSION build_k8s; } && build_helm ;;
	etcd) build_etcd ;;
	kwok) build_kwok ;;
	k8s) build_k8s ;;
	helm) build_helm ;;
	kueue) build_kueue ;;
	trainer) build_trainer ;;
	clients) build_helm && build_kueue && build_trainer ;;
	node) build_node ;;
	coredns) build_coredns ;;
	# everything a cluster with real nodes needs on top of "all"'s control plane
	real-nodes) build_node && build_coredns ;;
	*) die "build: unknown component '$only' (all|etcd|kwok|k8s|helm|kueue|trainer|clients|node|coredns|real-nodes)" ;;
	esac || die "build failed"
	log "build done in $((SECONDS - t0))s"
}
