#!/usr/bin/env bash
# Installs what the service and its tests need, idempotently: npm packages, the
# TypeScript build, and a cached Python virtualenv with pyspark. Java 17+ is checked,
# not installed. Progress goes to stderr; the last stdout line is the env file to source (its
# name depends on its contents: source the file printed, never a fixed name).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${SUBMISSION_SERVICE_CACHE:-$HOME/.cache/submission-service}
mkdir -p "$cache"
say() { echo "setup: $*" >&2; }

need_node() {
  command -v node >/dev/null || { say "Node.js 20+ is missing: apt-get install nodejs npm"; exit 1; }
  local major; major=$(node -p 'process.versions.node.split(".")[0]')
  [ "$major" -ge 20 ] || { say "Node.js $major found; 20+ is needed"; exit 1; }
}

need_java() {
  if ! command -v java >/dev/null; then
    say "Java 17+ is missing and Spark needs it: apt-get install openjdk-17-jre-headless"; exit 1
  fi
  local v; v=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
  [ "${v:-0}" -ge 17 ] || { say "Java $v found; Spark here needs 17+ (apt-get install openjdk-17-jre-headless)"; exit 1; }
}

npm_install() {
  local stamp="$root/node_modules/.lock-hash" want
  want=$(sha256sum "$root/package-lock.json" | cut -c1-16)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "installing npm packages"
    (cd "$root" && npm ci --no-audit --no-fund --loglevel=error >&2)
    echo "$want" >"$stamp"
  fi
}

# tap's test class is built for the plugins .taprc names (tsx in place of tap's ts-node plugin):
# here, once, rather than by the first of the two tap runs that scripts/test.sh starts together.
tap_build() {
  local stamp="$root/node_modules/.taprc-hash" want
  want=$(cat "$root/.taprc" "$root/package-lock.json" | sha256sum | cut -c1-16)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "building tap's test class for .taprc's plugins"
    (cd "$root" && npx tap build >&2)
    echo "$want" >"$stamp"
  fi
}

build() {
  say "building TypeScript"
  (cd "$root" && npx tsc -p tsconfig.json >&2)
}

# A virtualenv per requirements file, cached by its hash (and Python's version), made by
# cluster/local/python-env.sh: the same script local mode runs to make a Spark version's venv at its
# first application, so both agree on the path, and its lock keeps them from building one twice.
python_env() {
  SUBMISSION_SERVICE_CACHE="$cache" bash "$root/cluster/local/python-env.sh" "$1" "$2"
}

# Debian's Chromium, for the dashboard's browser tests (SETUP_BROWSER=1: the test command).
browser() {
  command -v chromium >/dev/null && return 0
  say "installing Debian's chromium for the browser tests"
  local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >&2 \
    || { say "could not install chromium; the dashboard's browser test will fail"; return 0; }
}

# Debian's bubblewrap: local mode's driver sandbox with --auth on (docs/security.md), and the
# tests that prove it (SETUP_TEST_TOOLS=1). Without it, --auth on serves admin keys only.
sandbox() {
  command -v bwrap >/dev/null && return 0
  command -v apt-get >/dev/null || { say "bubblewrap is missing (local mode with --auth on and user keys needs it)"; return 0; }
  say "installing Debian's bubblewrap (the driver sandbox of local mode)"
  local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq bubblewrap >&2 \
    || { say "could not install bubblewrap; the sandbox tests will fail"; return 0; }
}

# Debian's mmdebstrap, buildah and runc, for the images' build and test (SETUP_IMAGE_TOOLS=1:
# the test command; images/build.sh needs root, so only as root).
image_tools() {
  [ "$(id -u)" -eq 0 ] || return 0
  command -v mmdebstrap >/dev/null && command -v buildah >/dev/null && command -v runc >/dev/null && return 0
  say "installing Debian's mmdebstrap, buildah and runc for the image tests"
  apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap buildah runc >&2 \
    || { say "could not install mmdebstrap, buildah and runc; the image test will be skipped"; return 0; }
}

# Debian's runc and iptables, for the test bed's real node (testbed/real-node.ts; SETUP_TEST_TOOLS=1),
# and ipset for its NetworkPolicy enforcer (kube-router; testbed/node-policy.ts).
node_packages() {
  command -v runc >/dev/null && command -v iptables >/dev/null && command -v ipset >/dev/null && return 0
  say "installing Debian's runc, iptables and ipset for the test bed's real node"
  local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq runc iptables ipset >&2 \
    || { say "could not install runc, iptables and ipset; the real-node tests will be skipped"; return 0; }
}

# Spark's S3A connector for the test bed's object store (event logs, archived logs), one set per
# Hadoop line that the offered Sparks are built on: hadoop-aws of that Hadoop and the AWS SDK it
# was built against (Spark 3.5: Hadoop 3.3.4 with SDK v1's bundle; Spark 4.2: Hadoop 3.5.0 with
# SDK v2's bundle and the analytics accelerator hadoop-aws 3.5 links), fetched with Maven once
# and checked against pinned SHA-256 sums (SETUP_TEST_TOOLS=1; images/ bakes each into its
# Spark's images).
S3A_JARS="org.apache.hadoop:hadoop-aws:3.3.4 com.amazonaws:aws-java-sdk-bundle:1.12.262"
S3A_SUMS="53f9ae03c681a30a50aa17524bd9790ab596b28481858e54efd989a826ed3a4a  hadoop-aws-3.3.4.jar
873fe7cf495126619997bec21c44de5d992544aea7e632fdc77adb1a0915bae5  aws-java-sdk-bundle-1.12.262.jar"
S3A4_JARS="org.apache.hadoop:hadoop-aws:3.5.0 software.amazon.awssdk:bundle:2.35.4 software.amazon.s3.analyticsaccelerator:analyticsaccelerator-s3:1.3.1"
S3A4_SUMS="66bd9eefb938b1a1657487324b63c13df2d8b17164a1dd24e0ef37b905bc5baa  hadoop-aws-3.5.0.jar
db4b55f24ad1b4e70f17eb1717a4de76a8dadc5a27d764be7c44ff67b2c1c677  bundle-2.35.4.jar
4959a9747cbb479c73c3ffbcd479bee5b014f8b2880994585a8693fb9d24675e  analyticsaccelerator-s3-1.3.1.jar"
# s3a_jars "ARTIFACTS" "SUMS": the folder holding them; prints the class path (jars joined by ':').
s3a_jars() {
  local artifacts=$1 sums=$2 dir artifact tmp
  dir="$cache/s3a-$(echo "$sums" | sha256sum | cut -c1-12)"
  if [ ! -f "$dir/.complete" ]; then
    if ! command -v mvn >/dev/null; then
      say "installing Debian's maven to fetch the S3A connector"
      local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
      $sudo apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq maven >&2 \
        || { say "could not install maven; the history tests on object storage will fail"; return 0; }
    fi
    say "fetching the S3A connector jars into $dir (first time only)"
    tmp="$dir.tmp.$$" && rm -rf "$tmp" && mkdir -p "$tmp"
    for artifact in $artifacts; do
      mvn -q -B dependency:copy -Dartifact="$artifact" -DoutputDirectory="$tmp" >&2 \
        || { say "could not fetch $artifact"; rm -rf "$tmp"; return 0; }
    done
    (cd "$tmp" && echo "$sums" | sha256sum --quiet -c - >&2) || { say "S3A jars: checksum mismatch"; rm -rf "$tmp"; return 0; }
    touch "$tmp/.complete" && rm -rf "$dir" && mv "$tmp" "$dir"
  fi
  echo "$sums" | awk -v dir="$dir" '{ printf "%s%s/%s", (NR > 1 ? ":" : ""), dir, $2 } END { print "" }'
}

# Spark 3.5's Connect server (the driver of a Spark Connect session, connect/): the
# spark-connect_2.12 artifact of pyspark's version, fetched with Maven once and checked against its
# pinned SHA-256 (Spark 4 ships it). Without it, each session's driver resolves it at its start.
CONNECT_JARS="org.apache.spark:spark-connect_2.12:3.5.7"
CONNECT_SUMS="15366e21273a874c760b51fa00743a2acb8fa78642cc35d7a076a3ade0c5eef6  spark-connect_2.12-3.5.7.jar"
connect_jars() {
  local dir="$cache/connect-$(echo "$CONNECT_SUMS" | sha256sum | cut -c1-12)" artifact tmp
  if [ ! -f "$dir/.complete" ]; then
    command -v mvn >/dev/null || { say "maven is missing: Spark Connect sessions will fetch their server at start"; return 0; }
    say "fetching Spark Connect's server jar into $dir (first time only)"
    tmp="$dir.tmp.$$" && rm -rf "$tmp" && mkdir -p "$tmp"
    for artifact in $CONNECT_JARS; do
      mvn -q -B dependency:copy -Dartifact="$artifact" -DoutputDirectory="$tmp" >&2 \
        || { say "could not fetch $artifact"; rm -rf "$tmp"; return 0; }
    done
    (cd "$tmp" && echo "$CONNECT_SUMS" | sha256sum --quiet -c - >&2) || { say "Connect jar: checksum mismatch"; rm -rf "$tmp"; return 0; }
    touch "$tmp/.complete" && rm -rf "$dir" && mv "$tmp" "$dir"
  fi
  echo "$dir"
}

need_node; need_java; npm_install
[ "${SETUP_TEST_TOOLS:-}" = 1 ] && sandbox
[ "${SETUP_IMAGE_TOOLS:-}" = 1 ] && image_tools
[ "${SETUP_BROWSER:-}" = 1 ] && browser
[ "${SETUP_TEST_TOOLS:-}" = 1 ] && node_packages
[ "${SETUP_TEST_TOOLS:-}" = 1 ] && tap_build
[ "${SKIP_BUILD:-}" = 1 ] || build
venv=$(python_env "$root/requirements.txt" venv)
# SETUP_SPARK_VERSIONS=1 (the test command): the other Spark versions' venvs too
# (requirements-spark-X.Y.txt), which local mode otherwise makes at a version's first
# application (minutes). Cached by hash like the one above: a second run makes nothing.
if [ "${SETUP_SPARK_VERSIONS:-}" = 1 ]; then
  for requirements in "$root"/requirements-spark-*.txt; do
    minor=$(basename "$requirements" .txt); minor=${minor#requirements-spark-}
    python_env "$requirements" "spark-$minor" >/dev/null
  done
fi
# The History Server's gate (cluster/local/ui-gate.ts), compiled once per Spark version and cached,
# so that the first history view (or test) does not wait for javac. Needs the build; harmless to skip.
if [ "${SKIP_BUILD:-}" != 1 ]; then
  (cd "$root" && node --input-type=module -e "
    const gate = await import('./dist/cluster/local/ui-gate.js');
    const { sparkJars } = await import('./dist/cluster/local/spark-builds.js');
    await gate.buildUiGate(await sparkJars('$venv/bin/spark-class', '$venv/bin/python'));" >&2) \
    || say "could not compile the History Server's gate now; the service will try at first need"
fi
# SETUP_TEST_TOOLS=1 (the test command): Jupyter Server, Notebook 7, Kernel Gateway and
# schemathesis, in a virtualenv of their own so that they never shadow the product's.
tools=""
[ "${SETUP_TEST_TOOLS:-}" = 1 ] && tools=$(python_env "$root/requirements-test.txt" tools)
# SETUP_AIRFLOW=1 (the test command): real Airflow 3 with pinned dependencies, for the Airflow
# provider's tests (clients/airflow); a virtualenv of its own (Airflow pins much of what it needs).
airflow=""
[ "${SETUP_AIRFLOW:-}" = 1 ] && airflow=$(python_env "$root/clients/airflow/requirements-test.txt" airflow)
# SETUP_AIRFLOW_K8S=1 (bench/airflow/vs-spark-operator.ts only): the same Airflow with Airflow's
# cncf-kubernetes provider (its SparkKubernetesOperator, the peer in issue 27's benchmark).
airflow_k8s=""
[ "${SETUP_AIRFLOW_K8S:-}" = 1 ] && airflow_k8s=$(python_env "$root/clients/airflow/requirements-bench-k8s.txt" airflow-k8s)
s3a="" s3a4=""
[ "${SETUP_TEST_TOOLS:-}" = 1 ] && s3a=$(s3a_jars "$S3A_JARS" "$S3A_SUMS") && s3a4=$(s3a_jars "$S3A4_JARS" "$S3A4_SUMS")
connect=$(connect_jars)
# The Spark Connect client the endpoint's tests and bench drive (pyspark[connect] 3.5.7).
connect_client=""
[ "${SETUP_TEST_TOOLS:-}" = 1 ] && connect_client=$(python_env "$root/requirements-connect-client.txt" connect-client)
# Spark 4's thin client (pyspark-client 4.2.0): the Kubernetes-mode Connect test and the Connect bench's 4.2.0 sessions.
connect_client_4=""
[ "${SETUP_TEST_TOOLS:-}" = 1 ] && connect_client_4=$(python_env "$root/requirements-connect-client-4.2.txt" connect-client-4.2)
# The env file is named by what it holds, so a setup with other flags (or from another checkout)
# writes another file and never rewrites one that a running suite sources. Written to a temporary
# name and renamed: a reader sees the whole file or none.
env_text=$(
  echo "export SUBMISSION_SERVICE_PYTHON_ENV='$venv'"
  echo "export PATH='$venv/bin':\"\$PATH\""
  [ -z "$tools" ] || echo "export SUBMISSION_SERVICE_TOOLS_ENV='$tools'"
  [ -z "$airflow" ] || echo "export SUBMISSION_SERVICE_AIRFLOW_ENV='$airflow'"
  [ -z "$airflow_k8s" ] || echo "export SUBMISSION_SERVICE_AIRFLOW_K8S_ENV='$airflow_k8s'"
  [ -z "$connect" ] || echo "export SUBMISSION_SERVICE_CONNECT_JARS='$connect'"
  [ -z "$connect_client" ] || echo "export SUBMISSION_SERVICE_CONNECT_CLIENT_ENV='$connect_client'"
  [ -z "$connect_client_4" ] || echo "export SUBMISSION_SERVICE_CONNECT_CLIENT_4_ENV='$connect_client_4'"
  [ -z "$s3a" ] || echo "export SUBMISSION_SERVICE_S3A_JARS='$s3a'"
  # Spark 4's (Hadoop 3.5): its images and a Spark 4 History Server on s3a://.
  [ -z "$s3a4" ] || echo "export SUBMISSION_SERVICE_S3A_JARS_SPARK4='$s3a4'"
)
env_file="$cache/env-$(printf '%s\n' "$env_text" | sha256sum | cut -c1-12).sh"
if [ ! -f "$env_file" ]; then
  printf '%s\n' "$env_text" >"$env_file.tmp.$$" && mv -f "$env_file.tmp.$$" "$env_file"
fi
echo "$env_file"
