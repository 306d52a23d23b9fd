#!/usr/bin/env bash
# Builds the testbed binary once per source hash and prints its path as the
# last line of stdout (progress goes to stderr). Safe to call before every test run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
# -mod=mod lets a fresh machine fill in anything go.sum lacks instead of failing.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod"
export CGO_ENABLED=0 # static binary, no C toolchain needed

# The key covers the sources, this script (build flags) and the Go version.
hash="$({ "$GO" env GOVERSION; for f in go.mod go.sum build.sh *.go; do echo "== $f"; cat "$f"; done; } |
  sha256sum | cut -c1-16)"
out="${SUBMISSION_SERVICE_CACHE:-$HOME/.cache/submission-service}/testbed/$hash/testbed"

if [[ ! -x "$out" ]]; then
  # Stamp the Kubernetes version so /version reports it (unset it says v0.0.0-master).
  kver="$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' go.mod)" # e.g. v1.36.3
  IFS=. read -r major minor _ <<<"${kver#v}"
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$kver -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done

  mkdir -p "$(dirname "$out")"
  echo "build.sh: building testbed ($kver) into $out (cold: several minutes on 2 cores)" >&2
  start=$SECONDS
  tmp="$out.tmp.$$"
  trap 'rm -f "$tmp"' EXIT
  "$GO" build -trimpath -ldflags="$ldflags" -o "$tmp" . >&2
  mv -f "$tmp" "$out" # atomic: a concurrent caller never sees a half-written binary
  echo "build.sh: built in $((SECONDS - start))s" >&2
fi
echo "$out"
