#!/usr/bin/env bash
# Builds Helm from its Go module (helm.sh/helm/v3) once per version into the project cache
# and prints the binary's path as the last line of stdout (progress goes to stderr).
# Idempotent: a second call only prints the path. Override the version with HELM_VERSION.
set -euo pipefail

version="${HELM_VERSION:-v3.22.0}"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
out="${SUBMISSION_SERVICE_CACHE:-$HOME/.cache/submission-service}/helm/$version/helm"

if [[ ! -x "$out" ]]; then
  export CGO_ENABLED=0 # static binary, no C toolchain needed
  export GOFLAGS=""    # the project's own flags (e.g. -mod=mod) mean nothing to `go install pkg@v`
  echo "install-helm.sh: building helm $version into $out (cold: a few minutes on 2 cores)" >&2
  start=$SECONDS

  # Stamp what Helm's own release build stamps: its version, and the Kubernetes version that
  # `helm template` and `helm lint` assume (the client-go it is built with, as Helm does).
  gomod="$(cd / && "$GO" mod download -json "helm.sh/helm/v3@$version" | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')"
  kver="$(awk '$1 == "k8s.io/client-go" { print $2; exit }' "$gomod")" # e.g. v0.34.2
  IFS=. read -r _ kminor _ <<<"${kver#v}"
  ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version -X helm.sh/helm/v3/internal/version.metadata="
  ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  if [[ -n "${kminor:-}" ]]; then
    for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
      ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$kminor"
    done
  fi

  bin="$(mktemp -d)"
  trap 'rm -rf "$bin"' EXIT
  (cd / && GOBIN="$bin" "$GO" install -trimpath -ldflags="$ldflags" "helm.sh/helm/v3/cmd/helm@$version") >&2
  mkdir -p "$(dirname "$out")"
  mv -f "$bin/helm" "$out.tmp.$$"
  mv -f "$out.tmp.$$" "$out" # atomic: a concurrent caller never sees a half-written binary
  echo "install-helm.sh: built in $((SECONDS - start))s" >&2
fi
echo "$out"
