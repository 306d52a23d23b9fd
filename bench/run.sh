#!/usr/bin/env bash
# Runs the benchmarks and prints a Markdown summary table at the end.
#   bash bench/run.sh                      setup (scripts/setup.sh), then dry-run, admission, local-run
#   bash bench/run.sh admission dry-run    only those parts
#   BENCH_SKIP_SETUP=1 bash bench/run.sh   skip scripts/setup.sh (deps and dist/ already there)
# Each part is bounded in time (timeout) and only talks to 127.0.0.1. Tunables: see bench/README.md.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(dry-run admission local-run)

if [ "${BENCH_SKIP_SETUP:-}" != 1 ]; then
  if env_file=$(bash scripts/setup.sh | tail -n 1) && [ -n "$env_file" ]; then
    # shellcheck disable=SC1090
    source "$env_file"
  else
    echo "bench: scripts/setup.sh failed; going on with what is installed" >&2
  fi
fi
# Skipped setup: the newest env file setup wrote (named by its contents, env-<hash>.sh).
cache=${SUBMISSION_SERVICE_CACHE:-$HOME/.cache/submission-service}
if [ -z "${SUBMISSION_SERVICE_PYTHON_ENV:-}" ] && env_file=$(ls -t "$cache"/env-*.sh "$cache"/env.sh 2>/dev/null | head -n 1) && [ -n "$env_file" ]; then
  # shellcheck disable=SC1090
  source "$env_file"
fi

BENCH_RESULTS_DIR=$(mktemp -d)
export BENCH_RESULTS_DIR
trap 'rm -rf "$BENCH_RESULTS_DIR"' EXIT

pin=()
command -v taskset >/dev/null && pin=(taskset -c 1)
failed=()
for part in "${parts[@]}"; do
  case "$part" in
    dry-run)   cmd=(timeout 300 node --import tsx bench/dry-run.ts) ;;
    admission) cmd=(timeout 180 "${pin[@]}" node --import tsx bench/admission.ts) ;;
    local-run) cmd=(timeout 900 node --import tsx bench/local-run.ts) ;;
    sizing)    cmd=(timeout 600 "${pin[@]}" node --expose-gc --import tsx bench/sizing.ts) ;;
    *) echo "bench: unknown part $part (dry-run, admission, local-run, sizing)" >&2; exit 2 ;;
  esac
  echo "bench: $part (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  if ! "${cmd[@]}"; then
    echo "bench: $part FAILED" >&2
    failed+=("$part")
  fi
done

node --import tsx bench/summary.ts "$BENCH_RESULTS_DIR" "${failed[@]}"
[ ${#failed[@]} -eq 0 ]
