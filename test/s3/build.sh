#!/usr/bin/env bash
# Builds the test bed's S3 server once per version and prints its path as the last line of
# stdout (progress goes to stderr). Safe to call before every test run.
#
# The server is versitygw (Apache-2.0), a real S3 API server with a plain-directory backend,
# built from its Go module. MinIO's server module publishes no semver release and is AGPL,
# so it is not used here.
set -euo pipefail

VERSITYGW_VERSION=v1.8.0

GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
export CGO_ENABLED=0 # static binary, no C toolchain needed
key="$({ "$GO" env GOVERSION; echo "$VERSITYGW_VERSION"; } | sha256sum | cut -c1-12)"
dir="${SUBMISSION_SERVICE_CACHE:-$HOME/.cache/submission-service}/s3/versitygw-$VERSITYGW_VERSION-$key"

if [[ ! -x "$dir/versitygw" ]]; then
  echo "s3/build.sh: building versitygw $VERSITYGW_VERSION into $dir (cold: a few minutes on 2 cores)" >&2
  start=$SECONDS
  tmp="$dir.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  trap 'rm -rf "$tmp"' EXIT
  # `go install PKG@VERSION` builds with the module's own go.mod, outside this repository.
  GOBIN="$tmp" GOFLAGS= "$GO" install -trimpath -ldflags="-s -w" \
    "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION" >&2
  rm -rf "$dir" && mv "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp" # a concurrent build won: keep its
  trap - EXIT
  echo "s3/build.sh: built in $((SECONDS - start))s" >&2
fi
echo "$dir/versitygw"
