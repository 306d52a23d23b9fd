#!/usr/bin/env bash
# A virtualenv for one requirements file, cached by its hash (and Python's version) under the
# service's cache: `python-env.sh REQUIREMENTS NAME` prints its path, making it first if needed.
# scripts/setup.sh makes the project's venvs with it, and local mode makes a Spark version's
# venv with it at that version's first application (cluster/local/spark-envs.ts), so both agree
# on the path. The marker is written last: an interrupted install is redone, never trusted.
# A lock beside it: a second process (setup, another service) waits, then finds it made.
set -euo pipefail
requirements=$1 name=$2
cache=${SUBMISSION_SERVICE_CACHE:-$HOME/.cache/submission-service}
say() { echo "setup: $*" >&2; }
command -v python3 >/dev/null || { say "python3 is missing: apt-get install python3 python3-venv"; exit 1; }
mkdir -p "$cache"
hash=$(cat "$requirements" <(python3 --version) | sha256sum | cut -c1-12)
venv="$cache/$name-$hash"
if [ ! -f "$venv/.complete" ]; then
  exec 9>"$venv.lock"
  flock 9
  if [ ! -f "$venv/.complete" ]; then
    say "creating Python virtualenv $venv from $(basename "$requirements") (first time only)"
    rm -rf "$venv" && python3 -m venv "$venv"
    "$venv/bin/pip" install --disable-pip-version-check -q -r "$requirements" >&2
    touch "$venv/.complete"
  fi
fi
echo "$venv"
