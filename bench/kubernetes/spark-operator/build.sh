#!/usr/bin/env bash
# Builds the Kubeflow Spark Operator (the closest peer, issue 16's race) from its Go module once
# per version, and prints the folder holding `spark-operator` and `crds/` as the last line of
# stdout (progress goes to stderr). Safe to call before every bench run.
#
# `go install MODULE/cmd/operator@VERSION` refuses the module: its go.mod pins the k8s.io
# modules with replace directives. So the module's source is taken from the module cache and
# built in a scratch copy with its own go.mod and go.sum.
set -euo pipefail

OPERATOR_MODULE=github.com/kubeflow/spark-operator/v2
OPERATOR_VERSION=v2.5.1

GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
export CGO_ENABLED=0
key="$({ "$GO" env GOVERSION; echo "$OPERATOR_VERSION"; } | sha256sum | cut -c1-12)"
dir="${SUBMISSION_SERVICE_CACHE:-$HOME/.cache/submission-service}/spark-operator/$OPERATOR_VERSION-$key"

if [[ ! -x "$dir/spark-operator" ]]; then
  echo "spark-operator/build.sh: building $OPERATOR_MODULE $OPERATOR_VERSION into $dir (cold: ten minutes on 2 cores)" >&2
  start=$SECONDS
  tmp="$dir.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp/src"
  trap 'rm -rf "$tmp"' EXIT
  source_dir="$(cd "$tmp" && GOFLAGS=-mod=mod "$GO" mod download -json "$OPERATOR_MODULE@$OPERATOR_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$source_dir" ]] || { echo "spark-operator/build.sh: the module cache has no $OPERATOR_MODULE@$OPERATOR_VERSION" >&2; exit 1; }
  cp -r "$source_dir/." "$tmp/src" && chmod -R u+w "$tmp/src"
  (cd "$tmp/src" && "$GO" build -trimpath -ldflags="-s -w" -o "$tmp/spark-operator" ./cmd/operator) >&2
  cp -r "$tmp/src/charts/spark-operator-chart/crds" "$tmp/crds"
  rm -rf "$tmp/src"
  rm -rf "$dir" && mkdir -p "$(dirname "$dir")" && mv "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp" # a concurrent build won: keep its
  trap - EXIT
  echo "spark-operator/build.sh: built in $((SECONDS - start))s" >&2
fi
echo "$dir"
