#!/usr/bin/env bash
# Builds the test bed's real node once and prints the directory holding it as the last
# line of stdout (progress and per-part build times go to stderr). Safe to call before every
# test run. Each part is cached on its own under ${SUBMISSION_SERVICE_CACHE}/node/:
#   containerd-<version>-<key>  containerd, ctr, containerd-shim-runc-v2 (their Go module)
#   cni-<version>-<key>         the CNI plugins bridge, host-local, loopback, portmap
#   tools-<hash>                testnode (kubelet, kube-proxy, CRI and image helpers; this
#                               module, same k8s.io/kubernetes as test/cluster), the pause and
#                               testbox binaries and their one-layer OCI archives
#   coredns-<hash>              CoreDNS with the plugins cluster DNS uses (dns/, its own module)
#   kube-router-<version>-<key> kube-router, whose network-policy controller enforces the chart's
#                               NetworkPolicies on the node (iptables and ipset, from Debian)
# and node-<hash>/ links them all into one directory (the one printed).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

CONTAINERD_VERSION=v2.4.2
CNI_VERSION=v1.10.0
KUBE_ROUTER_VERSION=v2.1.0 # the newest the module proxy serves
CONTAINERD_TAGS="no_btrfs no_devmapper no_zfs" # no C libraries, and snapshotters the node does not use

GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
export CGO_ENABLED=0 # static binaries, no C toolchain needed
cache="${SUBMISSION_SERVICE_CACHE:-$HOME/.cache/submission-service}/node"
goversion="$("$GO" env GOVERSION)"
key() { { echo "$goversion"; printf '%s\n' "$@"; } | sha256sum | cut -c1-12; }
mkdir -p "$cache"

# built DIR WHAT COMMAND...: runs COMMAND with $tmp as the output directory once, then moves
# it to DIR (atomic: a concurrent caller never sees half of it).
built() {
  local dir=$1 what=$2
  shift 2
  [[ -f "$dir/.complete" ]] && return 0
  echo "node/build.sh: building $what into $dir" >&2
  local start=$SECONDS
  tmp="$dir.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  trap 'rm -rf "$tmp"' EXIT
  "$@" >&2
  echo "$((SECONDS - start))" >"$tmp/.build-seconds"
  touch "$tmp/.complete"
  rm -rf "$dir" && mv "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp" # a concurrent build won: keep its
  trap - EXIT
  echo "node/build.sh: built $what in $((SECONDS - start))s" >&2
}

# `go install PKG@VERSION` builds with each module's own go.mod (the versions its
# maintainers test), outside this module.
install_at() {
  local version=$1 tags=$2 ldflags=$3
  shift 3
  GOBIN="$tmp" GOFLAGS= "$GO" install -trimpath -ldflags="-s -w $ldflags" -tags "$tags" "${@/%/@$version}"
}

# The version it reports (to the kubelet, hence the Node's containerRuntimeVersion); unset it says "+unknown".
CONTAINERD_LDFLAGS="-X github.com/containerd/containerd/v2/version.Version=${CONTAINERD_VERSION#v}"
containerd="$cache/containerd-$CONTAINERD_VERSION-$(key "$CONTAINERD_TAGS" "$CONTAINERD_LDFLAGS")"
built "$containerd" "containerd $CONTAINERD_VERSION" install_at "$CONTAINERD_VERSION" "$CONTAINERD_TAGS" "$CONTAINERD_LDFLAGS" \
  github.com/containerd/containerd/v2/cmd/containerd \
  github.com/containerd/containerd/v2/cmd/ctr \
  github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2

cni="$cache/cni-$CNI_VERSION-$(key)"
built "$cni" "CNI plugins $CNI_VERSION" install_at "$CNI_VERSION" "" "" \
  github.com/containernetworking/plugins/plugins/main/bridge \
  github.com/containernetworking/plugins/plugins/ipam/host-local \
  github.com/containernetworking/plugins/plugins/main/loopback \
  github.com/containernetworking/plugins/plugins/meta/portmap

build_tools() {
  # Stamp the Kubernetes version as test/cluster/build.sh does (the Node reports it).
  local kver major minor ldflags
  kver="$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' go.mod)"
  IFS=. read -r major minor _ <<<"${kver#v}"
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$kver -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  # -mod=mod lets a fresh machine fill in anything go.sum lacks instead of failing.
  GOFLAGS=-mod=mod "$GO" build -trimpath -ldflags="$ldflags" -o "$tmp/testnode" .
  GOFLAGS=-mod=mod "$GO" build -trimpath -ldflags="-s -w" -o "$tmp/pause" ./pause
  GOFLAGS=-mod=mod "$GO" build -trimpath -ldflags="-s -w" -o "$tmp/testbox" ./testbox
  "$tmp/testnode" pack-image "$tmp/pause.tar" localhost/testbed/pause:1 /pause "$tmp/pause=/pause"
  "$tmp/testnode" pack-image "$tmp/testbox.tar" localhost/testbed/testbox:1 /testbox "$tmp/testbox=/testbox"
}
tools="$cache/tools-$(key "$(for f in go.mod go.sum build.sh ./*.go pause/*.go testbox/*.go; do echo "== $f"; cat "$f"; done)")"
built "$tools" "testnode (kubelet, kube-proxy), pause and testbox" build_tools

build_dns() {
  (cd dns && GOFLAGS=-mod=mod "$GO" build -trimpath -ldflags="-s -w" -o "$tmp/coredns" .)
}
dns="$cache/coredns-$(key "$(for f in dns/go.mod dns/go.sum dns/*.go; do echo "== $f"; cat "$f"; done)")"
built "$dns" "CoreDNS (cluster DNS)" build_dns

# Only its network-policy controller runs (no routing, no service proxy): the bridge plugin stays
# the CNI and kube-proxy the service proxy; this makes the node's NetworkPolicies enforced.
kube_router="$cache/kube-router-$KUBE_ROUTER_VERSION-$(key)"
built "$kube_router" "kube-router $KUBE_ROUTER_VERSION" install_at "$KUBE_ROUTER_VERSION" "" "" \
  github.com/cloudnativelabs/kube-router/v2/cmd/kube-router

out="$cache/node-$(key "$containerd" "$cni" "$tools" "$dns" "$kube_router")"
if [[ ! -f "$out/.complete" ]]; then
  tmp="$out.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  for part in "$containerd" "$cni" "$tools" "$dns" "$kube_router"; do
    for f in "$part"/*; do ln -s "$f" "$tmp/$(basename "$f")"; done
  done
  touch "$tmp/.complete"
  rm -rf "$out" && mv "$tmp" "$out" 2>/dev/null || rm -rf "$tmp"
fi
echo "$out"
