#!/usr/bin/env bash
# Installs the Debian packages the project needs to build and test. Idempotent:
# packages already present are skipped, and `apt-get update` runs at most once
# per call (only when something is missing).
#
#   scripts/setup-debian.sh            the build and test dependencies
#   scripts/setup-debian.sh --bench    only the optional benchmark tools
#                                      (heaptrack, for bench/controller/heap.sh,
#                                      which runs this itself when missing)
#
# python3-h2 runs the fault-injection proxy of tests/fault (HTTP/2 to the
# controller, Debian's /usr/bin/python3), and faketime (libfaketime) steps
# the controller's clock in its clock-jump scenario.
#
# podman with runc is the container runtime of `jobset run --runtime podman`
# and its e2e tests (netavark, its network backend, needs iptables; a podman
# pod's infra image is built locally from catatonit, so nothing is pulled).
#
# chromium renders a run's picture (report.html) headless in the e2e tier
# (tests/e2e/local/test_report.py): the DOM and a screenshot, as a user's
# browser shows it.
#
# containerd, containernetworking-plugins (and runc) run the test cluster's
# real nodes (hack/cluster up --real-nodes); busybox-static is their test
# workload image, built FROM scratch without a registry.
set -euo pipefail

pkgs=(
  build-essential g++ cmake ninja-build pkg-config git
  libyaml-dev libjansson-dev libssl-dev libcurl4-openssl-dev libre2-dev
  libuv1-dev libevent-dev libmnl-dev
  libcmocka-dev
  clang libclang-rt-14-dev
  valgrind gcovr
  openssl curl ca-certificates procps iproute2 util-linux
  python3 python3-yaml
  python3-h2 faketime
  podman runc netavark iptables catatonit
  containerd containernetworking-plugins busybox-static
  chromium
)
case ${1:-} in
  --bench) pkgs=(heaptrack) ;;
  "") ;;
  *) echo "usage: $0 [--bench]" >&2; exit 2 ;;
esac

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-debian: all ${#pkgs[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "setup-debian: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
