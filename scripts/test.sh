#!/usr/bin/env bash
# Runs every test: installs what they need (scripts/setup.sh), then tap over test/.
# Ends with one line "N passed, N failed[, N skipped]" and exits non-zero on any failure.
# Extra arguments go to tap (e.g. a subset of files).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# Each phase's seconds, printed near the end (a CI log that keeps only its tail still says where the time went).
phases=()
phase() { phases+=("$1 $((SECONDS - phase_start)) s;"); phase_start=$SECONDS; }
phase_start=$SECONDS
env_file=$(SETUP_BROWSER=1 SETUP_SPARK_VERSIONS=1 SETUP_TEST_TOOLS=1 SETUP_IMAGE_TOOLS=1 SETUP_AIRFLOW=1 bash scripts/setup.sh | tail -n 1) || { echo "0 passed, 1 failed"; exit 1; }
# shellcheck disable=SC1090
source "$env_file"
# Spark's JVMs in the tests live seconds to minutes: with the client compiler alone and the serial
# collector they start on much less CPU (pi.py: 13.9 -> 9.1 s; test/history/local-history.test.ts:
# 85 -> 66 s), which the files that run together share on two cores. spark-submit gives these to
# the drivers (and pyspark's, the kernels', the Connect servers') and to its own launcher JVM. Only
# here: the product's JVMs, the benches and the real node's images keep the JVM's defaults.
jit_opts="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
export SPARK_SUBMIT_OPTS="${SPARK_SUBMIT_OPTS:+$SPARK_SUBMIT_OPTS }$jit_opts" SPARK_LAUNCHER_OPTS="${SPARK_LAUNCHER_OPTS:+$SPARK_LAUNCHER_OPTS }$jit_opts"
if [ -x test/cluster/build.sh ] && [ "${SKIP_CLUSTER_TESTS:-}" != 1 ]; then
  echo "test: building the Kubernetes test bed (cached after the first time)" >&2
  if bin=$(bash test/cluster/build.sh | tail -n 1); then export SUBMISSION_SERVICE_TESTBED="$bin"; else echo "test: the test bed did not build; its tests will fail" >&2; fi
  # The real node's parts (containerd, CNI plugins, kubelet, images), cached per version like the bed.
  echo "test: building the test bed's real node (cached after the first time)" >&2
  if bin=$(bash test/node/build.sh | tail -n 1); then export SUBMISSION_SERVICE_NODE="$bin"; else echo "test: the real node did not build; its test will fail" >&2; fi
  # The test bed's S3 server (object storage for event logs and archived logs), cached per version.
  echo "test: building the test bed's S3 server (cached after the first time)" >&2
  if bin=$(bash test/s3/build.sh | tail -n 1); then export SUBMISSION_SERVICE_S3_SERVER="$bin"; else echo "test: the S3 server did not build; the history tests on it will fail" >&2; fi
fi
phase "setup and builds:"
# The whole tree type-checks (tests and benches too) and lints (eslint.config.js: no floating or
# misused promises, type-aware): one check each in the count. Each keeps one core busy for about
# half a minute, so they run side by side, their output printed once both end.
check_log=$(mktemp) lint_log=$(mktemp)
npx tsc -p tsconfig.check.json > "$check_log" 2>&1 & typecheck=$!
npx eslint --max-warnings 0 . > "$lint_log" 2>&1 & lint=$!
typecheck_failed=0 lint_failed=0
wait "$typecheck" || typecheck_failed=1
wait "$lint" || lint_failed=1
cat "$check_log" "$lint_log" >&2
[ "$typecheck_failed" -eq 0 ] || echo "test: type errors (above)" >&2
[ "$lint_failed" -eq 0 ] || echo "test: lint errors (above)" >&2
rm -f "$check_log" "$lint_log"
phase "typecheck and lint:"
files=("$@")
[ ${#files[@]} -gt 0 ] || mapfile -t files < <(find test -name '*.test.ts' -not -path '*/node_modules/*' | sort)
# A file whose first lines say "// Runs alone" loads the machine by itself (20 JVMs). Those on the
# real node (their first line says "real node": one per machine) run one after another in a lane
# of their own from the start, beside everything else: their pods spend most of their time starting
# and loading images, which leaves the machine half idle. The other heavy files run one at a time
# as soon as either of those two ends, beside the one still going (never beside both).
together=() on_node=() heavy=()
for f in "${files[@]}"; do
  head=$(head -n 5 "$f" 2>/dev/null)
  if ! grep -q '^// Runs alone' <<<"$head"; then together+=("$f")
  elif head -n 1 <<<"$head" | grep -q 'real node'; then on_node+=("$f")
  else heavy+=("$f"); fi
done
# One lane's output, printed whole once it ends (two lanes' lines interleaved would not read).
lane() {
  local lane_out=$1; shift
  [ $# -gt 0 ] || return 0
  npx tap --jobs=1 "$@" > "$lane_out" 2>&1
}
# SUBMISSION_SERVICE_NODE_LOCK (a file): a machine whose other checkouts also start the real node
# takes this flock around each of the node's files (CI, alone on its machine, sets none).
node_files() {
  local lane_out=$1; shift
  [ -n "${SUBMISSION_SERVICE_NODE_LOCK:-}" ] || { lane "$lane_out" "$@"; return; }
  local f rc=0
  for f in "$@"; do flock "$SUBMISSION_SERVICE_NODE_LOCK" npx tap --jobs=1 "$f" >> "$lane_out" 2>&1 || rc=1; done
  return "$rc"
}
out=$(mktemp) node_out=$(mktemp) heavy_out=$(mktemp) lane_seconds=$(mktemp -d)
# The cores' use while the lanes run, a sample every 30 s (kept with the times below): whether the
# suite's length is the cores' work or its waits decides which cut to make next.
cache_dir=${SUBMISSION_SERVICE_CACHE:-$HOME/.cache/submission-service}
cpu_log=$(mktemp)
cpu_sampler=
if command -v vmstat > /dev/null; then vmstat -n 30 > "$cpu_log" 2>/dev/null & cpu_sampler=$!; fi
trap '[ -z "$cpu_sampler" ] || kill "$cpu_sampler" 2>/dev/null' EXIT
# Each lane writes its own seconds when it ends (the waits for them below come in either order).
timed() { local name=$1 start=$SECONDS rc; shift; "$@"; rc=$?; echo $((SECONDS - start)) > "$lane_seconds/$name"; return "$rc"; }
together_files() { [ ${#together[@]} -gt 0 ] || return 0; npx tap --jobs=2 "${together[@]}" 2>&1 | tee "$out"; return "${PIPESTATUS[0]}"; }
timed node node_files "$node_out" "${on_node[@]}" & node_lane=$!
timed together together_files & together_lane=$!
status=0
wait -n -p first "$node_lane" "$together_lane" || status=1
if [ "$first" = "$node_lane" ]; then still=$together_lane still_name="the files together"; else still=$node_lane still_name="the real node's lane"; fi
phase "until the first of the two lanes ended:"
timed heavy lane "$heavy_out" "${heavy[@]}" || status=1
phase "${#heavy[@]} heavy files beside $still_name:"
wait "$still" || status=1
phase "waiting for $still_name:"
# Printed whole in this order (the count below reads them from one file).
cat "$heavy_out" | tee -a "$out"
cat "$node_out" | tee -a "$out"
lanes="${#together[@]} files together in $(cat "$lane_seconds/together" 2>/dev/null) s; the real node's ${#on_node[@]} files in $(cat "$lane_seconds/node" 2>/dev/null) s; ${#heavy[@]} heavy files in $(cat "$lane_seconds/heavy" 2>/dev/null) s, after $([ "$first" = "$node_lane" ] && echo "the real node's lane" || echo "the files together")"
echo "test: lanes: $lanes" >&2
[ -z "$cpu_sampler" ] || kill "$cpu_sampler" 2>/dev/null
# vmstat's us, sy, id, wa columns (13-16), averaged over the samples after its first line (which is since boot).
cpu_use=$(awk 'NR > 3 && NF >= 16 { us += $13; sy += $14; id += $15; wa += $16; n++ } END { if (n) printf "cores while the lanes ran (%d samples): %.0f%% user, %.0f%% system, %.0f%% idle, %.0f%% waiting on I/O", n, us / n, sy / n, id / n, wa / n }' "$cpu_log")
cpu_idle=$(awk 'NR > 3 && NF >= 16 { printf "%s ", $15 }' "$cpu_log")
rm -f "$cpu_log"
[ -z "$cpu_use" ] || { echo "test: $cpu_use" >&2; lanes="$lanes; $cpu_use"; }
rm -rf "$node_out" "$heavy_out" "$lane_seconds"
# Tests, not assertions: each top-level t.test of a file is one test (tap prints it indented
# once under its file); a file that fails outside its tests (a crash before or between them)
# counts as one more failure.
read -r pass fail skip < <(awk '
  /^    ok [0-9]+ - / { if ($0 ~ /# (SKIP|TODO)/) skip++; else pass++; next }
  /^    not ok [0-9]+ - / { if ($0 ~ /# TODO/) skip++; else { fail++; file_fail++ }; next }
  /^not ok [0-9]+ - / { if (file_fail == 0) fail++; file_fail = 0; next }
  /^ok [0-9]+ - / { file_fail = 0; next }
  END { print pass + 0, fail + 0, skip + 0 }' "$out")
# The fifteen slowest files, then the phases.
awk '/^(not )?ok [0-9]+ - .* # time=/ { t = $0; sub(/.*# time=/, "", t); sub(/ms.*/, "", t); n = $0; sub(/^(not )?ok [0-9]+ - /, "", n); sub(/ # time=.*/, "", n); printf "%d %s\n", t / 1000, n }' "$out" |
  sort -rn | head -n 15 | awk '{ printf "test: %ss %s\n", $1, $2 }' >&2
echo "test: times: ${phases[*]}" >&2
# The same figures and every file's seconds, kept on the machine (the CI log of a run that passed is
# not): where the next cut of the suite's time should go is read from here. About the newest 40 runs.
times_log=$cache_dir/test-times.log
{
  echo "== $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null) load $(cut -d' ' -f1-3 /proc/loadavg): ${phases[*]} lanes: $lanes"
  [ -z "$cpu_idle" ] || echo "idle % every 30 s: $cpu_idle"
  awk '/^(not )?ok [0-9]+ - .* # time=/ { t = $0; sub(/.*# time=/, "", t); sub(/ms.*/, "", t); n = $0; sub(/^(not )?ok [0-9]+ - /, "", n); sub(/ # time=.*/, "", n); printf "%d %s\n", t / 1000, n }' "$out" | sort -rn
} >> "$times_log" 2>/dev/null && tail -n 12000 "$times_log" > "$times_log.new" 2>/dev/null && mv "$times_log.new" "$times_log"
# The failures by name, just above the count: a CI log that keeps only its tail still says which.
# Under each, its first failed assertions (tap prints them before the test's own line).
awk '
  /^# Subtest: / { file = substr($0, 12); next }
  /^        +not ok [0-9]+ - / && $0 !~ /# TODO/ { if (held < 5) { line = $0; sub(/^ +not ok [0-9]+ - /, "", line); sub(/ # time=.*/, "", line); because[++held] = line }; next }
  /^    ok [0-9]+ - / { held = 0; next }
  /^    not ok [0-9]+ - / && $0 !~ /# TODO/ { sub(/^    not ok [0-9]+ - /, ""); sub(/ # time=.*/, ""); print "failed: " file " > " $0; for (i = 1; i <= held; i++) print "  because: " because[i]; held = 0; named[file] = 1; next }
  /^not ok [0-9]+ - / { name = $0; sub(/^not ok [0-9]+ - /, "", name); sub(/ # .*/, "", name); if (!(name in named)) print "failed: " name " (outside its tests)" }
' "$out" >&2
files_seen=$(grep -cE '^(not )?ok [0-9]+ - ' "$out")
rm -f "$out"
if [ "$files_seen" -eq 0 ]; then pass=0; fail=1; fi
if [ "$status" -ne 0 ] && [ "$fail" -eq 0 ]; then fail=1; fi
if [ "$typecheck_failed" -eq 1 ]; then fail=$((fail + 1)); else pass=$((pass + 1)); fi
if [ "$lint_failed" -eq 1 ]; then fail=$((fail + 1)); else pass=$((pass + 1)); fi
line="$pass passed, $fail failed"
[ "$skip" -gt 0 ] && line="$line, $skip skipped"
echo "$line"
[ "$status" -eq 0 ] && [ "$fail" -eq 0 ] && [ "$typecheck_failed" -eq 0 ] && [ "$lint_failed" -eq 0 ]
