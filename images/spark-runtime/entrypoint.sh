#!/bin/bash
# The Spark runtime image's entrypoint. Spark on Kubernetes starts its pods with one of two
# first arguments, and this script turns each into the process to run (the contract of the
# `apache/spark` images, so pods that Spark itself creates work unchanged):
#   driver ARGS...   spark-submit in client mode inside the driver pod, listening on the pod IP
#                    Spark passes as SPARK_DRIVER_BIND_ADDRESS
#   executor         the Kubernetes executor backend, configured from SPARK_* variables
#   anything else    run as given (a shell, python3, a kernel launcher)
# Every process runs under tini, which forwards signals and reaps zombies (PID 1 in a pod).
# SPARK_ENTRYPOINT_DRY_RUN=1 prints the final command line, one argument a line, instead.
set -euo pipefail

spark_home=${SPARK_HOME:-/opt/spark}

# A pod may run as a uid the image does not know (OpenShift, runAsUser): the JVM and Python
# look the user up, so give it an entry when /etc/passwd is writable for that purpose.
if ! getent passwd "$(id -u)" >/dev/null 2>&1 && [ -w /etc/passwd ]; then
  echo "spark-$(id -u):x:$(id -u):$(id -g):spark:${HOME:-$spark_home}:/bin/false" >>/etc/passwd
fi

# spark.executor.extraJavaOptions reaches an executor as SPARK_JAVA_OPT_0, _1, ... in order.
java_opts=()
while IFS='=' read -r -d '' name value; do
  [[ $name =~ ^SPARK_JAVA_OPT_([0-9]+)$ ]] && java_opts[${BASH_REMATCH[1]}]=$value
done < <(env -0)
java_opts=("${java_opts[@]}")

classpath="${SPARK_CLASSPATH:+$SPARK_CLASSPATH:}$spark_home/jars/*"
[ -n "${SPARK_EXTRA_CLASSPATH:-}" ] && classpath="$classpath:$SPARK_EXTRA_CLASSPATH"
# Configuration directories mounted by Spark (spark.kubernetes.hadoop.configMapName and the
# driver's own conf map) are read from the classpath.
for dir in "${HADOOP_CONF_DIR:-}" "${SPARK_CONF_DIR:-}"; do
  [ -n "$dir" ] && classpath="$dir:$classpath"
done
if [ -n "${HADOOP_HOME:-}" ] && [ -z "${SPARK_DIST_CLASSPATH:-}" ] && [ -x "$HADOOP_HOME/bin/hadoop" ]; then
  SPARK_DIST_CLASSPATH=$("$HADOOP_HOME/bin/hadoop" classpath)
fi
[ -n "${SPARK_DIST_CLASSPATH:-}" ] && classpath="$classpath:$SPARK_DIST_CLASSPATH"

need() {
  local name
  for name in "$@"; do
    [ -n "${!name:-}" ] || { echo "entrypoint: $name is not set (Spark sets it in executor pods)" >&2; exit 64; }
  done
}

case "${1:-}" in
  driver)
    shift
    bind=${SPARK_DRIVER_BIND_ADDRESS:-0.0.0.0}
    command=("$spark_home/bin/spark-submit"
      --conf "spark.driver.bindAddress=$bind"
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=$bind"
      --deploy-mode client "$@")
    ;;
  executor)
    shift
    need SPARK_DRIVER_URL SPARK_EXECUTOR_ID SPARK_EXECUTOR_CORES SPARK_EXECUTOR_MEMORY \
      SPARK_APPLICATION_ID SPARK_EXECUTOR_POD_IP
    java=${JAVA_HOME:+$JAVA_HOME/bin/}java
    command=("$java" "${java_opts[@]}"
      "-Xms$SPARK_EXECUTOR_MEMORY" "-Xmx$SPARK_EXECUTOR_MEMORY"
      -cp "$classpath"
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend
      --driver-url "$SPARK_DRIVER_URL"
      --executor-id "$SPARK_EXECUTOR_ID"
      --cores "$SPARK_EXECUTOR_CORES"
      --app-id "$SPARK_APPLICATION_ID"
      --hostname "$SPARK_EXECUTOR_POD_IP"
      --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}")
    [ -n "${SPARK_EXECUTOR_POD_NAME:-}" ] && command+=(--podName "$SPARK_EXECUTOR_POD_NAME")
    ;;
  "")
    command=(/bin/bash)
    ;;
  *)
    command=("$@")
    ;;
esac

if [ "${SPARK_ENTRYPOINT_DRY_RUN:-}" = 1 ]; then
  printf '%s\n' "${command[@]}"
  exit 0
fi
if [ "$$" -eq 1 ] && command -v tini >/dev/null; then
  exec tini -s -- "${command[@]}"
fi
exec "${command[@]}"
