#!/usr/bin/env bash
# Builds the project's images without a daemon, as OCI archives that containerd imports
# (`ctr -n k8s.io images import --local FILE`):
#   spark-runtime  Spark, Java 17, Python 3 and the scipy stack (images/spark-runtime), per Spark version;
#                  3.x ones also Spark Connect's server and the service's gate on it (connect_layer)
#   kernel         the notebook kernel image, FROM the Spark runtime (manifests/kernel-image), per version
#   service        the service itself (the repository's Dockerfile); its dependencies apart, per lockfile
# Spark versions: SPARK_VERSIONS (default "3.5.7 4.2.0", the versions the service offers); each
# pinned by images/spark-runtime/requirements[-X.Y].txt. The first is the default version: its
# archives are named `spark-runtime` and `kernel` as before, the others `spark-runtime-VERSION`
# and `kernel-VERSION`; every image is tagged by its version (localhost/submission-service/spark:VERSION).
# No registry is reachable here, so the bases are root filesystems made from Debian packages
# (mmdebstrap) and the builder is buildah; the build arguments that name the bases take the
# official images elsewhere (README, "Container images").
#
# Each output lives under $cache/images/<hash>/, the hash covering every input of that image
# (its recipe, the files it copies, the hash of its base), so a second run builds nothing.
# Progress goes to stderr; stdout is one line per image: `NAME ARCHIVE`.
# IMAGES_ONLY="spark-runtime kernel" builds only those (and what they stand on).
set -euo pipefail
# Errors inside "$(...)" stop the build too (bash clears -e there otherwise).
shopt -s inherit_errexit
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${SUBMISSION_SERVICE_CACHE:-$HOME/.cache/submission-service}/images
mkdir -p "$cache"
say() { echo "images: $*" >&2; }
[ "$(id -u)" -eq 0 ] || { say "needs root (mmdebstrap and buildah make root filesystems)"; exit 1; }
for tool in mmdebstrap buildah; do
  command -v "$tool" >/dev/null || { say "$tool is missing: apt-get install mmdebstrap buildah"; exit 1; }
done

read -r -a spark_versions <<<"${SPARK_VERSIONS:-3.5.7 4.2.0}"
service_version=$(node -p 'require(process.argv[1]).version' "$root/package.json" 2>/dev/null \
  || sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$root/package.json" | head -1)
debian_mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
debian_security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

# buildah keeps its working state under the cache, apart from any other container storage on
# the machine; overlay where the kernel allows it (copying a 1 GB root per step on vfs is slow).
storage=$cache/storage
driver=${BUILDAH_STORAGE_DRIVER:-}
if [ -z "$driver" ]; then
  driver=$(cat "$storage/.driver" 2>/dev/null || true)
fi
bh() { buildah --root "$storage/root" --runroot "$storage/run" --storage-driver "$driver" "$@"; }
pick_driver() {
  [ -n "$driver" ] && return 0
  mkdir -p "$storage"
  driver=overlay
  if ! bh info >/dev/null 2>&1 || ! (c=$(bh from scratch) && bh mount "$c" >/dev/null && bh rm "$c" >/dev/null); then
    say "overlay storage does not work here; using vfs"
    rm -rf "$storage/root" "$storage/run"; driver=vfs
  fi
  echo "$driver" >"$storage/.driver"
}

hash_of() { sha256sum | cut -c1-16; }
# Time a step in whole seconds, to stderr.
timed() {
  local what=$1 start=$SECONDS; shift
  "$@"
  say "$what ready in $((SECONDS - start)) s"
}

# An OCI archive whose index names the image for containerd (`io.containerd.image.name`) as well
# as by the OCI tag, so `ctr images import` needs no --base-name. Written beside, then renamed:
# an archive that exists is complete.
push_archive() {
  local image=$1 name=$2 out=$3 layout
  layout=$(mktemp -d "$cache/layout.XXXXXX")
  bh push --quiet "$image" "oci:$layout:$name" >&2
  python3 - "$layout/index.json" "$name" <<'PY'
import json, sys
path, name = sys.argv[1], sys.argv[2]
with open(path) as f:
    index = json.load(f)
for manifest in index["manifests"]:
    manifest.setdefault("annotations", {})["io.containerd.image.name"] = name
with open(path, "w") as f:
    json.dump(index, f)
PY
  tar -C "$layout" -cf "$out.partial" . && mv "$out.partial" "$out"
  rm -rf "$layout"
}

# A base root filesystem from Debian packages: minbase plus PACKAGES, without documentation,
# manual pages or translations, apt's lists removed (images install nothing at run time).
# The empty man1/ stays: Java's postinst links its manual pages there and fails without it.
base() {
  local name=$1 suite=$2; shift 2
  local packages=("$@") hash dir
  hash=$({ declare -f base; echo "$suite ${packages[*]} $(mmdebstrap --version)"; } | hash_of)
  dir=$cache/$hash
  if [ ! -f "$dir/$name.oci.tar" ]; then
    pick_driver
    mkdir -p "$dir"
    local mirrors=("deb $debian_mirror $suite main" "deb $debian_mirror $suite-updates main"
                   "deb $debian_security $suite-security main")
    say "making the $name root filesystem from Debian $suite (first time only)"
    mmdebstrap --quiet --variant=minbase --format=tar \
      --aptopt='APT::Install-Recommends "false"' \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
      --include="$(IFS=,; echo "${packages[*]}")" \
      --essential-hook='mkdir -p "$1"/usr/share/man/man1' \
      --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/*.log "$1"/var/cache/ldconfig/aux-cache' \
      "$suite" "$dir/rootfs.tar" "${mirrors[@]}" >&2
    local ctr mnt
    ctr=$(bh from scratch); mnt=$(bh mount "$ctr")
    tar -C "$mnt" -xf "$dir/rootfs.tar"
    bh config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      --cmd /bin/bash --os linux --arch amd64 "$ctr"
    bh commit --quiet --rm "$ctr" "localhost/submission-service/base-$name:$hash" >/dev/null
    push_archive "localhost/submission-service/base-$name:$hash" "localhost/submission-service/base-$name:$hash" "$dir/$name.oci.tar"
    rm -f "$dir/rootfs.tar"
  fi
  echo "$dir/$name.oci.tar"
}

# The service's build stage needs npm beside Node. Debian's npm is some 400 packages (ten minutes
# of mmdebstrap here); npm's own package carries all of its dependencies, so the build base is
# the Node base plus that one tarball, the npm release Node 20's official images ship.
npm_version=10.8.2
node_build_base() {
  local node_base=$1 hash dir
  hash=$({ declare -f node_build_base push_archive; echo "$node_base $npm_version"; } | hash_of)
  dir=$cache/$hash
  if [ ! -f "$dir/node-build.oci.tar" ]; then
    pick_driver
    mkdir -p "$dir"
    say "adding npm $npm_version to the Node base for the build stage"
    # npm pack checks the tarball against the registry's integrity hash.
    (cd "$dir" && npm pack --silent "npm@$npm_version" >/dev/null)
    local ctr mnt
    ctr=$(bh from --quiet "oci-archive:$node_base"); mnt=$(bh mount "$ctr")
    mkdir -p "$mnt/usr/local/lib/node_modules/npm" "$mnt/usr/local/bin"
    tar -xzf "$dir/npm-$npm_version.tgz" --no-same-owner --strip-components=1 -C "$mnt/usr/local/lib/node_modules/npm"
    ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"
    ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$mnt/usr/local/bin/npx"
    bh commit --quiet --rm "$ctr" "localhost/submission-service/base-node-build:$hash" >/dev/null
    push_archive "localhost/submission-service/base-node-build:$hash" "localhost/submission-service/base-node-build:$hash" "$dir/node-build.oci.tar"
    rm -f "$dir/npm-$npm_version.tgz"
  fi
  echo "$dir/node-build.oci.tar"
}

# An image from a Containerfile, with the repository as its context. HASH_INPUTS are the files
# (besides the Containerfile) whose content the image copies.
image() {
  local name=$1 ref=$2 containerfile=$3; shift 3
  local args=() inputs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=(--build-arg "$1"); shift; done
  [ $# -gt 0 ] && shift && inputs=("$@")
  local hash dir out
  hash=$({ declare -f image push_archive; echo "$ref ${args[*]} ${SUBMISSION_SERVICE_S3A_JARS:-}"; cat "$root/$containerfile";
           (cd "$root" && sha256sum "${inputs[@]}"); } | hash_of)
  dir=$cache/$hash; out=$dir/$name.oci.tar
  if [ ! -f "$out" ]; then
    pick_driver
    mkdir -p "$dir"
    say "building $name from $containerfile"
    # RUN steps trust what this machine trusts (a proxy's own CA): its bundle is mounted
    # while they run, never copied into the image.
    local volumes=() bundle=/etc/ssl/certs/ca-certificates.crt
    [ -f "$bundle" ] && volumes=(--volume "$bundle:$bundle:ro")
    # The S3A jars (scripts/setup.sh, checksums verified there), for the Spark runtime's COPY-less install.
    [ -n "${SUBMISSION_SERVICE_S3A_JARS:-}" ] && volumes+=(--volume "$(dirname "${SUBMISSION_SERVICE_S3A_JARS%%:*}"):/tmp/s3a-jars:ro")
    bh build --quiet --isolation chroot --network host --layers=false --force-rm "${volumes[@]}" \
      --format oci -f "$root/$containerfile" "${args[@]}" -t "$ref" "$root" >&2
    push_archive "$ref" "$ref" "$out"
  fi
  echo "$out"
}

# The service's dependencies: the Dockerfile's stage `deps` alone (all of them in /src for the
# build, the production ones in /app), on the Node build base, once per package.json and lockfile.
# The per-commit service build starts its `deps` stage from this archive and finds them there
# (the Dockerfile checks they were installed from the same two files), so it runs no npm ci.
# Not through `image`: its text is in every image's hash (changing it would rebuild the Spark
# images). Written uncompressed (150 MB): only buildah reads it back, so no service build gunzips it.
service_deps() {
  local node_build_base=$1 hash dir out ref
  hash=$({ declare -f service_deps; echo "$node_build_base"; (cd "$root" && sha256sum Dockerfile package.json package-lock.json); } | hash_of)
  dir=$cache/$hash; out=$dir/service-deps.oci.tar
  ref=localhost/submission-service/service-deps:$hash
  if [ ! -f "$out" ]; then
    pick_driver
    mkdir -p "$dir"
    say "installing the service's dependencies (once per package-lock.json)"
    local volumes=() bundle=/etc/ssl/certs/ca-certificates.crt
    [ -f "$bundle" ] && volumes=(--volume "$bundle:$bundle:ro")
    bh build --quiet --isolation chroot --network host --layers=false --force-rm "${volumes[@]}" \
      --format oci -f "$root/Dockerfile" --target deps --build-arg "NODE_BUILD_IMAGE=oci-archive:$node_build_base" \
      -t "$ref" "$root" >&2
    rm -f "$out.partial"
    bh push --quiet --disable-compression "$ref" "oci-archive:$out.partial:$ref" >&2
    mv "$out.partial" "$out"
  fi
  echo "$out"
}

# The service's context as the Dockerfile sees it: the files git would add, less what
# .dockerignore leaves out (its patterns, anchored at the root, as git pathspecs).
context_files() {
  local specs=() line
  while IFS= read -r line; do
    line=${line%%#*}; line=${line%"${line##*[![:space:]]}"}
    [ -n "$line" ] && specs+=(":(exclude,glob)$line" ":(exclude,glob)$line/**")
  done <"$root/.dockerignore"
  (cd "$root" && git ls-files -co --exclude-standard -- . "${specs[@]}" \
    | while IFS= read -r f; do [ -f "$f" ] && echo "$f"; done)
}

wanted() { [ -z "${IMAGES_ONLY:-}" ] || [[ " $IMAGES_ONLY " == *" $1 "* ]]; }

# Spark 3.x's Connect server is an artifact of its own (spark-connect_2.12-VERSION.jar, which
# scripts/setup.sh fetches and checks: SUBMISSION_SERVICE_CONNECT_JARS) and checks no token:
# the service's gate on it (cluster/local/connect-gate.ts) is compiled here against that jar
# (the image has a JRE only) and both go into a layer over the runtime image BASE, at the fixed
# paths domain/connect-gate.ts names (images/spark-runtime/connect.Containerfile). Built by
# `image` with a context of its own, the two jars and that recipe, so that their content is among
# the layer's inputs; the runtime image under it, and 4.x images, keep their hash. Without the
# server's jar the image gets no layer (said here), and its Connect sessions' drivers fail.
connect_layer() {
  local version=$1 base=$2 name=$3 server gate context out
  server=${SUBMISSION_SERVICE_CONNECT_JARS:-}/spark-connect_2.12-$version.jar
  if [ -z "${SUBMISSION_SERVICE_CONNECT_JARS:-}" ] || [ ! -f "$server" ]; then
    say "no spark-connect_2.12-$version.jar in SUBMISSION_SERVICE_CONNECT_JARS (scripts/setup.sh): the Spark $version image carries no Connect server, so its Connect sessions will not start"
    echo "$base"
    return 0
  fi
  gate=$(cd "$root" && node --import tsx scripts/connect-gate-jar.ts "$server" "$version")
  context=$(mktemp -d "$cache/connect-context.XXXXXX")
  install -m 0644 "$server" "$context/spark-connect.jar"
  install -m 0644 "$gate" "$context/connect-gate.jar"
  install -m 0644 "$root/images/spark-runtime/connect.Containerfile" "$context/Containerfile"
  out=$(root=$context SUBMISSION_SERVICE_S3A_JARS='' image "$name" "localhost/submission-service/spark:$version" Containerfile \
    "SPARK_IMAGE=oci-archive:$base" -- spark-connect.jar connect-gate.jar)
  rm -rf "$context"
  echo "$out"
}

# The Spark runtime and kernel images of one Spark version, each cached by its inputs (so by
# version). Each gets the S3A connector of its Spark's Hadoop (scripts/setup.sh fetches both):
# 3.x images Hadoop 3.3.4's (SUBMISSION_SERVICE_S3A_JARS), 4.x images Hadoop 3.5.0's with the
# AWS SDK v2 bundle (SUBMISSION_SERVICE_S3A_JARS_SPARK4); the jars are among the image's inputs.
spark_images() {
  local version=$1 suffixed=$2 minor requirements name_suffix="" s3a=""
  minor=$(echo "$version" | cut -d. -f1,2)
  requirements=images/spark-runtime/requirements.txt
  [ "${version%%.*}" = 3 ] || requirements=images/spark-runtime/requirements-$minor.txt
  [ -f "$root/$requirements" ] || { say "no $requirements pins Spark $version"; exit 1; }
  grep -q "^pyspark==$version\$" "$root/$requirements" || { say "$requirements does not pin pyspark==$version"; exit 1; }
  [ -n "$suffixed" ] && name_suffix="-$version"
  if [ "${version%%.*}" = 3 ]; then s3a=${SUBMISSION_SERVICE_S3A_JARS:-}; else s3a=${SUBMISSION_SERVICE_S3A_JARS_SPARK4:-}; fi
  local spark kernel
  spark=$(SUBMISSION_SERVICE_S3A_JARS=$s3a timed "the Spark $version runtime image" image "spark-runtime$name_suffix" \
    "localhost/submission-service/spark:$version" images/spark-runtime/Containerfile \
    "BASE_IMAGE=oci-archive:$spark_base" "SPARK_REQUIREMENTS=$requirements" -- \
    images/spark-runtime/entrypoint.sh "$requirements" examples/pi.py)
  if [ "${version%%.*}" = 3 ]; then
    spark=$(timed "the Spark $version Connect server layer" connect_layer "$version" "$spark" "spark-runtime$name_suffix")
  fi
  wanted spark-runtime && echo "spark-runtime$name_suffix $spark"
  if wanted kernel; then
    kernel=$(timed "the Spark $version kernel image" image "kernel$name_suffix" \
      "localhost/submission-service/kernel:$version" manifests/kernel-image/Dockerfile \
      "SPARK_IMAGE=oci-archive:$spark" -- gateway/kernel/launcher.py)
    echo "kernel$name_suffix $kernel"
  fi
}

# The whole script is read before it runs (a function): editing it mid-build is harmless.
main() {
  # One build at a time: two would write the same archives.
  exec 9>"$cache/.lock"
  flock 9
  pick_driver
  local node_job=""
  if wanted service; then
    # The two Debian root filesystems are made side by side: each mostly waits on the mirror
    # and on dpkg, one process at a time.
    # Node 20 is Debian's from trixie (bookworm has 18).
    timed "the Node base" base node trixie nodejs ca-certificates >"$cache/.node-base" &
    node_job=$!
  fi
  if wanted spark-runtime || wanted kernel; then
    spark_base=$(timed "the Spark base" base spark bookworm \
      openjdk-17-jre-headless python3 python3-pip tini procps ca-certificates)
    local version suffix=""
    for version in "${spark_versions[@]}"; do
      spark_images "$version" "$suffix"
      suffix=1 # the first version's archives keep their plain names
    done
  fi
  if wanted service; then
    wait "$node_job" || { say "the Node base was not made"; exit 1; }
    node_base=$(cat "$cache/.node-base")
    node_build_base=$(timed "the Node build base" node_build_base "$node_base")
    service_deps=$(timed "the service's dependencies" service_deps "$node_build_base")
    mapfile -t files < <(context_files)
    service=$(timed "the service image" image service \
      "localhost/submission-service/submission-service:$service_version" Dockerfile \
      "NODE_IMAGE=oci-archive:$node_base" "NODE_BUILD_IMAGE=oci-archive:$node_build_base" \
      "DEPS_BASE=oci-archive:$service_deps" -- "${files[@]}")
    echo "service $service"
  fi
  # The archives are the product, and every build reads its base from one: what buildah's
  # storage holds now (gigabytes) is of no further use.
  if [ -d "$storage/root" ]; then
    bh rm --all >/dev/null 2>&1 || true
    bh rmi --all --force >/dev/null 2>&1 || true
  fi
}

main "$@"
