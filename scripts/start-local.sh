#!/usr/bin/env bash
# Starts the whole service in local mode on this machine, installing what it needs first.
# Arguments go to `submission-service local` (e.g. --port 8080 --node-pools FILE).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
env_file=$(bash "$root/scripts/setup.sh" | tail -n 1)
# shellcheck disable=SC1090
source "$env_file"
exec node "$root/bin/submission-service.js" local "$@"
