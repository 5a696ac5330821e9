#!/usr/bin/env bash
# Installs the Debian bookworm packages Gantry needs to build, test and run
# its demo. Idempotent: it asks dpkg what is missing and installs only that,
# so a second run costs a fraction of a second. As non-root it prints the
# exact apt-get command instead of running it.
set -euo pipefail

PACKAGES=(
  # build
  build-essential cmake pkg-config clang
  # gRPC and protobuf (CSI wire format)
  libgrpc-dev protobuf-c-compiler libprotobuf-c-dev libprotobuf-dev protobuf-compiler
  # storage backends
  librbd-dev librados-dev libnvme-dev libjson-c-dev libblkid-dev
  # HTTP, JSON, YAML
  libcurl4-openssl-dev libjansson-dev libmicrohttpd-dev libyaml-dev libnghttp2-dev
  # tests
  libcmocka-dev python3 python3-grpcio python3-grpc-tools python3-protobuf python3-yaml python3-kubernetes
  # promtool (alert rules' checks and unit tests, tests/alerts/): Debian ships it
  # only in the server's package, whose unit a systemd host starts on :9090
  # (systemctl disable --now prometheus when not wanted)
  prometheus
  openssl # test CAs: the fake Kubernetes API server, gantry-target TLS
  libclang-rt-14-dev
  # the chart tests' helm template stand-in (Go, GOPATH mode, offline)
  golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v3-dev
  # real parts for tests and demo: Ceph cluster, VM with Debian's kernel
  ceph-mon ceph-mgr ceph-osd ceph-common rbd-mirror uuid-runtime python3-rados python3-rbd
  qemu-system-x86 busybox-static kmod iproute2 e2fsprogs xfsprogs nvme-cli
  # the `k8s` test tier: etcd under the real kube-apiserver (../shared/k8s)
  etcd-server
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

cmd=(apt-get install -y --no-install-recommends "${missing[@]}")
if [ "$(id -u)" -ne 0 ]; then
  echo "gantry: missing Debian packages; as root run:" >&2
  echo "  apt-get update && ${cmd[*]}" >&2
  exit 1
fi
echo "gantry: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
"${cmd[@]}" >/dev/null
