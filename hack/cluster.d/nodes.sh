# shellcheck shell=bash
# hack/cluster.d/nodes.sh - real nodes for hack/cluster (up --real-nodes N):
# kubelets with their own containerd (Debian), runc and CNI plugins (Debian),
# CoreDNS and kube-proxy, all inside namespaces hack/cluster makes.
# Sourced by hack/cluster; not meant to be run directly.
#
# Containment (docs/cluster.md, "Real nodes"):
#   - the cluster namespace: one network namespace and one mount namespace,
#     held by a `sleep` (pids/nsholder.pid), in which every process of the
#     cluster runs, the control plane included. Its /run is a private tmpfs
#     (xtables lock, runc state, pod network namespaces). The host reaches
#     it through one veth pair (host side js<ID>, 10.62.K.1/30; inside
#     10.62.K.2): the API server's address for tests. Node and service
#     addresses (10.63.0.0/24 on the namespace's lo, pod subnets
#     10.244.I.0/24 on bridges cni<I>) exist only inside.
#   - one mount namespace per node inside it (pids/nsholder-I.pid), with
#     private tmpfs over /run, /var/lib and /var/log: kubelet's hard-coded
#     /var/lib/kubelet/device-plugins, /var/log/containers, /var/lib/cni,
#     /run/containerd and /run/netns are the node's own.
#   - cgroups: every pod's cgroup is under /jobset-<ID>/node-<I>/kubepods
#     in each cgroup v1 hierarchy (kubelet cgroupRoot, cgroupsPerQOS).
#   - every process started here carries JOBSET_CLUSTER_ID=<ID> in its
#     environment (containerd's shims inherit it); `down` kills whatever
#     carries it or sits in the cluster's cgroups, which is what makes
#     `down` after a crash (everything SIGKILLed) leave nothing behind.
# <ID> is derived from the state directory's path, so two clusters (two
# JOBSET_CLUSTER_DIRs) never share one.

CNI_BIN_DIR=/usr/lib/cni
# Addresses inside the cluster namespace.
RN_SVC_NET=10.63.0
RN_DNS_IP=$RN_SVC_NET.10
RN_POD_NET=10.244

rn_id() { printf '%s' "$(realpath -m "$DIR")" | sha1sum | cut -c1-8; }
rn_node_name() { echo "real-node-$1"; }
rn_node_ip() { echo "$RN_SVC_NET.$((20 + $1))"; }
rn_node_dir() { echo "$DIR/nodes/$1"; }

# rn_in_ns CMD... -> CMD in the cluster's network and mount namespace
rn_in_ns() { nsenter -t "$(comp_pid nsholder)" -n -m -- "$@"; }
# rn_in_node I CMD... -> CMD in node I's mount namespace
rn_in_node() {
	local i=$1
	shift
	nsenter -t "$(comp_pid "nsholder-$i")" -n -m -- "$@"
}
# rn_ctr I ARGS... -> ctr against node I's containerd, CRI namespace
rn_ctr() {
	local i=$1
	shift
	rn_in_node "$i" ctr -a /run/containerd/containerd.sock -n k8s.io "$@"
}

# ns_run CMD... -> CMD where the cluster's loopback is: in the cluster
# namespace when the cluster has one, else here.
ns_run() {
	if [[ -f $DIR/pids/nsholder.pid ]]; then
		rn_in_ns "$@"
	else
		"$@"
	fi
}

# rn_pick_net -> sets RN_NET to a K (0-255) whose 10.62.K.0/30 no host
# interface uses, starting from the cluster ID's hash.
rn_pick_net() {
	local used k i start
	used=$(ip -o -4 addr show | awk '{print $4}')
	start=$((16#${CLUSTER_ID:0:4} % 256))
	for ((i = 0; i < 256; i++)); do
		k=$(((start + i) % 256))
		grep -q "^10\.62\.$k\." <<<"$used" || {
			RN_NET=$k
			return 0
		}
	done
	die "no free 10.62.K.0/30 for the cluster's veth"
}

# rn_holder NAME SCRIPT -> starts a `sleep infinity` holding the namespaces
# SCRIPT sets up (bash, run inside them first), as component NAME.
rn_holder() {
	local name=$1 script=$2
	shift 2
	setsid env JOBSET_CLUSTER_ID="$CLUSTER_ID" "$@" bash -c "set -e; $script; exec sleep infinity" \
		>>"$DIR/logs/$name.log" 2>&1 </dev/null &
	local pid=$! i
	echo "$pid" >"$(pidfile "$name")"
	for ((i = 0; i < 100; i++)); do
		comp_pid "$name" >/dev/null && break
		[[ -d /proc/$pid ]] || break
		sleep 0.05
	done
	comp_pid "$name" >/dev/null || {
		cat "$DIR/logs/$name.log" >&2
		die "$name: namespace setup failed"
	}
}

# rn_cluster_ns -> the cluster's network + mount namespace and its veth.
rn_cluster_ns() {
	local addrs="ip addr add $RN_SVC_NET.1/32 dev lo" i
	for ((i = 0; i < REAL_NODES; i++)); do addrs+="; ip addr add $(rn_node_ip "$i")/32 dev lo"; done
	rn_holder nsholder "ip link set lo up; $addrs; ip addr add $RN_DNS_IP/32 dev lo;
		mount -t tmpfs -o mode=755 jobset-run /run; mkdir -p /run/lock;
		sysctl -qw net.ipv4.ip_forward=1" \
		unshare --net --mount --propagation private --
	local h=js$CLUSTER_ID pid
	pid=$(comp_pid nsholder)
	ip link add "$h" type veth peer name host0 netns "$pid" || die "veth for the cluster namespace"
	ip addr add "10.62.$RN_NET.1/30" dev "$h"
	ip link set "$h" up
	rn_in_ns ip addr add "10.62.$RN_NET.2/30" dev host0
	rn_in_ns ip link set host0 up
	log "cluster namespace: holder pid $pid, host veth $h 10.62.$RN_NET.1 <-> 10.62.$RN_NET.2"
}

rn_write_containerd_config() {
	local i=$1 n
	n=$(rn_node_dir "$i")
	cat >"$n/containerd.toml" <<EOF
version = 2
root = "$n/containerd"
state = "/run/containerd/state"
oom_score = 0
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "/run/containerd/containerd.sock"
[ttrpc]
  address = "/run/containerd/containerd.sock.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$n/containerd-opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # The machine lacks CAP_SYS_RESOURCE: without it every sandbox fails
  # ("can't get final child's PID from pipe", research/real-nodes.md).
  restrict_oom_score_adj = true
  enable_selinux = false
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
        Root = "/run/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN_DIR"
    conf_dir = "$n/cni"
    max_conf_num = 1
EOF
	mkdir -p "$n/cni"
	# One bridge and /24 per node; all bridges are in the cluster namespace,
	# so pod-to-pod traffic between nodes is routed there directly.
	cat >"$n/cni/10-jobset.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "jobset-$i",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni$i",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$RN_POD_NET.$i.0/24"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "/var/lib/cni/networks"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
}

rn_write_kubelet_config() {
	local i=$1 n port=$2 hport=$3
	n=$(rn_node_dir "$i")
	echo "nameserver $RN_DNS_IP" >"$n/resolv.conf"
	cat >"$n/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $(rn_node_ip "$i")
port: $port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $hport
cgroupDriver: cgroupfs
failCgroupV1: false
cgroupsPerQOS: true
cgroupRoot: /jobset-$CLUSTER_ID/node-$i
enforceNodeAllocatable: []
failSwapOn: false
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
podLogsDir: /var/log/pods
resolvConf: $n/resolv.conf
clusterDNS: [$RN_DNS_IP]
clusterDomain: cluster.local
makeIPTablesUtilChains: false
volumePluginDir: $n/volume-plugins
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%"
  nodefs.inodesFree: "1%"
  imagefs.available: "1%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
maxPods: 110
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $DIR/pki/ca.crt}
authorization:
  mode: AlwaysAllow
EOF
}

# rn_start_node I -> node I: its mount namespace, containerd, the images,
# kubelet.
rn_start_node() {
	local i=$1 n port hport
	n=$(rn_node_dir "$i")
	mkdir -p "$n/volume-plugins"
	rn_holder "nsholder-$i" "mount -t tmpfs -o mode=755 jobset-run /run; mkdir -p /run/lock;
		mount -t tmpfs -o mode=755 jobset-var-lib /var/lib; mkdir -p /var/lib/kubelet /var/lib/cni;
		mount -t tmpfs -o mode=755 jobset-var-log /var/log" \
		nsenter -t "$(comp_pid nsholder)" -n -m -- unshare --mount --propagation private --
	rn_write_containerd_config "$i"
	NS_PREFIX=(nsenter -t "$(comp_pid "nsholder-$i")" -n -m --)
	start "containerd-$i" /usr/bin/containerd --config "$n/containerd.toml"
	wait_until "containerd-$i" 30 "containerd-$i" rn_ctr "$i" version
	rn_import_images "$i" "$DIR/images"/*.tar
	free_port port
	free_port hport
	echo "kubelet-$i=$port" >>"$DIR/ports"
	echo "kubelet-$i-healthz=$hport" >>"$DIR/ports"
	rn_write_kubelet_config "$i" "$port" "$hport"
	# The node's cgroup root in every hierarchy: kubelet makes its kubepods
	# tree (and runc the containers') below it, so the cluster's cgroups are
	# all under /jobset-<ID> (without cgroupsPerQOS, containerd would put
	# them at /k8s.io/<container>, beside any other cluster's).
	local h
	for h in /sys/fs/cgroup/*/; do
		[[ -f $h/cgroup.procs ]] && mkdir -p "$h/jobset-$CLUSTER_ID/node-$i"
	done
	start "kubelet-$i" "$NODE_BIN/kubelet" \
		--config="$n/kubelet.yaml" \
		--kubeconfig="$DIR/kubeconfig" \
		--hostname-override="$(rn_node_name "$i")" \
		--node-ip="$(rn_node_ip "$i")" \
		--root-dir=/var/lib/kubelet \
		--cert-dir="$n/pki" \
		--node-labels="type=real,jobset-test/real-node=true" \
		--v="${JOBSET_CLUSTER_VERBOSITY:-1}"
	NS_PREFIX=()
}

# rn_import_images I TAR... -> imports image archives into node I's containerd
rn_import_images() {
	local i=$1 f
	shift
	for f in "$@"; do
		[[ -f $f ]] || continue
		rn_ctr "$i" images import --no-unpack=false "$f" >/dev/null ||
			die "importing $f into $(rn_node_name "$i") failed"
	done
}

rn_start_coredns() {
	local hp rp
	free_port hp
	free_port rp
	cat >"$DIR/Corefile" <<EOF
.:53 {
    bind $RN_DNS_IP
    errors
    health 127.0.0.1:$hp
    ready 127.0.0.1:$rp
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $DIR/kubeconfig jobset-test
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 1
    }
}
EOF
	echo "coredns-ready=$rp" >>"$DIR/ports"
	NS_PREFIX=(nsenter -t "$(comp_pid nsholder)" -n -m --)
	start coredns "$COREDNS_BIN/coredns" -conf "$DIR/Corefile"
	NS_PREFIX=()
	wait_until "coredns /ready" 60 coredns \
		rn_in_ns curl -fsS --max-time 2 "http://127.0.0.1:$rp/ready"
}

rn_start_kube_proxy() {
	local hp mp
	free_port hp
	free_port mp
	# One kube-proxy for the cluster namespace: every node's pods are routed
	# there, so one set of rules serves them all. masqueradeAll: replies of
	# a Service's pod on the client's own bridge come back through the
	# gateway (no br_netfilter needed). conntrack sysctls are the host's
	# business: left alone.
	cat >"$DIR/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $DIR/kubeconfig
mode: iptables
clusterCIDR: $RN_POD_NET.0.0/16
hostnameOverride: $(rn_node_name 0)
bindAddress: $(rn_node_ip 0)
nodePortAddresses: [primary]
healthzBindAddress: 127.0.0.1:$hp
metricsBindAddress: 127.0.0.1:$mp
iptables:
  masqueradeAll: true
  syncPeriod: 30s
  minSyncPeriod: 0s
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
	echo "kube-proxy-healthz=$hp" >>"$DIR/ports"
	NS_PREFIX=(nsenter -t "$(comp_pid nsholder)" -n -m --)
	start kube-proxy "$NODE_BIN/kube-proxy" --config="$DIR/kube-proxy.yaml" --v="${JOBSET_CLUSTER_VERBOSITY:-1}"
	NS_PREFIX=()
	wait_until "kube-proxy /healthz" 60 kube-proxy \
		rn_in_ns curl -fsS --max-time 2 "http://127.0.0.1:$hp/healthz"
}

# rn_label_nodes -> topology labels on the real nodes (kubelet may not set
# topology.kubernetes.io/rack itself): node I is in pool/zone I % POOLS,
# every node its own rack.
rn_label_nodes() {
	local i pool
	for ((i = 0; i < REAL_NODES; i++)); do
		pool=$((i % POOLS))
		kc label --overwrite node "$(rn_node_name "$i")" \
			"cloud.google.com/gke-nodepool=real-pool-$pool" \
			"topology.kubernetes.io/zone=real-zone-$pool" \
			"topology.kubernetes.io/region=region-0" \
			"topology.kubernetes.io/rack=real-rack-$i" \
			"jobset-test/rack=real-rack-$i" >/dev/null || die "labelling $(rn_node_name "$i")"
	done
}

real_nodes_ready() {
	local ready
	ready=$(kc get nodes -l type=real -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c '^True$')
	((ready >= REAL_NODES))
}

# rn_start -> everything of the real nodes after the control plane.
rn_start() {
	rn_build_base_images
	rn_start_coredns
	local i
	for ((i = 0; i < REAL_NODES; i++)); do rn_start_node "$i"; done
	wait_until "$REAL_NODES real nodes Ready" 120 "kubelet-0" real_nodes_ready
	rn_label_nodes
	# After the nodes: kube-proxy takes its address from its Node.
	rn_start_kube_proxy
}

# ---------------------------------------------------------------- images

# Extra environment (K=V) of the images rn_image_archive makes.
IMG_ENV=()
# rn_image_archive OUT NAME ROOTFS ENTRYPOINT... -> a docker-archive (v1.2)
# OUT of one layer made from ROOTFS, named NAME, as `FROM scratch` + COPY
# would make it; no registry, no container engine.
rn_image_archive() {
	local out=$1 name=$2 rootfs=$3
	shift 3
	local w ep="" a layer_sha cfg_sha
	w=$(mktemp -d "$DIR/images/.build.XXXXXX")
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$rootfs" -cf "$w/layer.tar" .
	layer_sha=$(sha256sum "$w/layer.tar" | cut -d' ' -f1)
	for a in "$@"; do ep+="${ep:+,}\"$a\""; done
	local env='"PATH=/usr/local/bin:/usr/bin:/bin"'
	for a in "${IMG_ENV[@]}"; do env+=",\"$a\""; done
	printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":[%s],"Env":[%s]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$ep" "$env" "$layer_sha" >"$w/config.json"
	cfg_sha=$(sha256sum "$w/config.json" | cut -d' ' -f1)
	mv "$w/config.json" "$w/$cfg_sha.json"
	printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["layer.tar"]}]' "$cfg_sha" "$name" >"$w/manifest.json"
	tar -C "$w" -cf "$out" manifest.json "$cfg_sha.json" layer.tar
	rm -rf "$w"
}

# The sandbox ("pause") image: a static program that waits for a signal
# and reaps what it inherits.
PAUSE_IMAGE=localhost/jobset-test/pause:1
BUSYBOX_IMAGE=localhost/jobset-test/busybox:1
rn_build_base_images() {
	mkdir -p "$DIR/images"
	local r="$DIR/images/.pause-root"
	mkdir -p "$r"
	gcc -static -O2 -o "$r/pause" "$HERE/cluster.d/pause.c" || die "building the pause program"
	rn_image_archive "$DIR/images/pause.tar" "$PAUSE_IMAGE" "$r" /pause
	rm -rf "$r"
	# Test workloads: Debian's static busybox (sh, sleep, nslookup, nc, wget).
	r="$DIR/images/.busybox-root"
	mkdir -p "$r/bin" "$r/tmp" "$r/etc"
	cp /bin/busybox "$r/bin/busybox"
	local a
	for a in $(/bin/busybox --list); do [[ $a == busybox ]] || ln -s busybox "$r/bin/$a"; done
	rn_image_archive "$DIR/images/busybox.tar" "$BUSYBOX_IMAGE" "$r" /bin/sh
	rm -rf "$r"
}

# ---------------------------------------------------------------- down

# rn_sweep -> kills every process of the cluster (JOBSET_CLUSTER_ID in its
# environment, or in the cluster's cgroups), then removes its cgroups and its
# host veth. Safe to run when nothing is left, and after a crash.
rn_sweep() {
	local id=$1 round pids p cg
	for ((round = 0; round < 50; round++)); do
		pids=$(
			grep -lsz "^JOBSET_CLUSTER_ID=$id\$" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3
			for cg in /sys/fs/cgroup/*/jobset-"$id"; do
				[[ ! -d $cg ]] || find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null || true
			done
		)
		pids=$(sort -un <<<"$pids" | grep -vx -e "$$" -e "$BASHPID" -e '' || true)
		[[ -n $pids ]] || break
		for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
		sleep 0.1
	done
	[[ -z $pids ]] || log "warning: processes of cluster $id would not die: $pids"
	# cgroups: deepest first (a cgroup is removed once it has no children
	# and no tasks)
	for cg in /sys/fs/cgroup/*/jobset-"$id"; do
		[[ -d $cg ]] || continue
		find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true
		[[ ! -d $cg ]] || log "warning: cgroup $cg not removed"
	done
	# The veth goes with the namespace; a namespace kept alive by something
	# else is cut off from the host at least.
	ip link del "js$id" 2>/dev/null || true
}

# rn_node_list -> the real nodes' names, comma-separated (empty without)
rn_node_list() {
	local i out=""
	for ((i = 0; i < REAL_NODES; i++)); do out+="${out:+,}$(rn_node_name "$i")"; done
	printf '%s' "$out"
}

# rn_load_settings -> REAL_NODES etc. of the running cluster in $DIR
rn_load_settings() {
	[[ -f $DIR/settings ]] || die "no cluster in $DIR (hack/cluster up)"
	REAL_NODES=$(sed -n 's/^REAL_NODES=//p' "$DIR/settings")
	REAL_NODES=${REAL_NODES:-0}
}

# hack/cluster image import IMAGE... -> each image of the machine's podman
# into every real node's containerd (pods then use it with
# imagePullPolicy: Never or IfNotPresent).
# hack/cluster image load TAR...     -> image archives (docker-archive or
# OCI) into every real node.
cmd_image() {
	local sub=${1:-} i f tmp
	shift || true
	if [[ $sub != bundle || " $* " != *" --out "* ]]; then
		rn_load_settings
		((REAL_NODES > 0)) || die "the cluster in $DIR has no real nodes (up --real-nodes N)"
	fi
	case $sub in
	import)
		(($#)) || die "image import IMAGE..."
		tmp=$(mktemp -d "$DIR/images/.import.XXXXXX")
		for f in "$@"; do
			podman image exists "$f" || die "podman has no image $f"
			podman save --format docker-archive -o "$tmp/img.tar" "$f" >/dev/null || die "podman save $f failed"
			for ((i = 0; i < REAL_NODES; i++)); do rn_import_images "$i" "$tmp/img.tar"; done
			rm -f "$tmp/img.tar"
			log "image $f: imported into $REAL_NODES real nodes"
		done
		rm -rf "$tmp"
		;;
	load)
		(($#)) || die "image load TAR..."
		for f in "$@"; do
			f=$(realpath "$f")
			for ((i = 0; i < REAL_NODES; i++)); do rn_import_images "$i" "$f"; done
			log "image archive $f: loaded into $REAL_NODES real nodes"
		done
		;;
	list)
		for ((i = 0; i < REAL_NODES; i++)); do
			echo "# $(rn_node_name "$i")"
			rn_ctr "$i" images list -q
		done
		;;
	bundle)
		# bundle NAME [--entrypoint PATH] [--env K=V]... [--out TAR] FILE...:
		# an image of FILEs (programs, libraries, directories) and the shared
		# libraries they need, loaded into every real node (or only written
		# to TAR with --out and no cluster needed).
		local name=${1:?image bundle NAME FILE...} ep=() out="" root
		shift
		while (($#)); do
			case $1 in
			--entrypoint) ep+=("${2:?}"); shift 2 ;;
			--env) IMG_ENV+=("${2:?}"); shift 2 ;;
			--out) out=${2:?}; shift 2 ;;
			*) break ;;
			esac
		done
		(($#)) || die "image bundle NAME [--entrypoint PATH] [--env K=V] [--out TAR] FILE..."
		mkdir -p "$DIR/images"
		root=$(mktemp -d "$DIR/images/.bundle.XXXXXX")
		rn_bundle "$root" "$@"
		[[ -n $out ]] || out="$root.tar"
		rn_image_archive "$out" "$name" "$root" "${ep[@]}"
		rm -rf "$root"
		if [[ $out == "$root.tar" ]]; then
			for ((i = 0; i < REAL_NODES; i++)); do rn_import_images "$i" "$out"; done
			rm -f "$out"
			log "image $name: bundled and loaded into $REAL_NODES real nodes"
		else
			log "image $name: written to $out"
		fi
		;;
	*) die "image: import IMAGE... | load TAR... | bundle NAME FILE... | list" ;;
	esac
}

# rn_bundle ROOTFS FILE... -> copies each FILE (a program, a shared library
# or a directory; SRC=DEST: at DEST) into ROOTFS at its own path, and every shared library
# they need (ldd, the dynamic loader included) at its own path, so a
# FROM-scratch image of ROOTFS runs them as the machine does.
rn_bundle() {
	local root=$1 f lib
	shift
	local elves=()
	local dest
	for f in "$@"; do
		# SRC=DEST puts SRC at DEST in the image
		dest=""
		[[ $f != *=* ]] || { dest=${f#*=}; f=${f%%=*}; }
		f=$(realpath "$f")
		if [[ -n $dest ]]; then
			mkdir -p "$root$(dirname "$dest")"
			cp -a "$f" "$root$dest"
		else
			mkdir -p "$root$(dirname "$f")"
			cp -a "$f" "$root$(dirname "$f")/"
		fi
		if [[ -d $f ]]; then
			mapfile -t -O "${#elves[@]}" elves < <(find "$f" -type f \( -name '*.so' -o -name '*.so.*' -o -perm -u+x \))
		else
			elves+=("$f")
		fi
	done
	for f in "${elves[@]}"; do
		# ldd prints "name => /path (addr)" or "/path (addr)"; not-ELF files fail quietly
		{ ldd "$f" 2>/dev/null || true; } | awk '/=> \//{print $3} /^[[:space:]]*\//{print $1}'
	done | sort -u | while read -r lib; do
		[[ -e $root$lib ]] && continue
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
		# the loader is asked for by its canonical path too
		[[ $lib == "$(realpath "$lib")" ]] || { mkdir -p "$root$(dirname "$(realpath "$lib")")"; cp -L "$lib" "$root$(realpath "$lib")" 2>/dev/null || true; }
	done
	# glibc loads these itself for name lookups (no ldd shows them)
	for lib in /lib/x86_64-linux-gnu/libnss_dns.so.2 /lib/x86_64-linux-gnu/libnss_files.so.2 /lib/x86_64-linux-gnu/libresolv.so.2; do
		[[ -e $lib && ! -e $root$lib ]] && { mkdir -p "$root$(dirname "$lib")"; cp -L "$lib" "$root$lib"; }
	done
	mkdir -p "$root/tmp" "$root/etc"
	chmod 1777 "$root/tmp"
	[[ -e $root/etc/passwd ]] || printf 'root:x:0:0::/:/bin/false\nnonroot:x:65532:65532::/:/bin/false\n' >"$root/etc/passwd"
	[[ -e $root/etc/group ]] || printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"
	return 0
}
