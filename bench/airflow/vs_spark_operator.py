"""What N concurrent Spark runs cost Airflow while they last, waited for by this repository's deferrable
SparkApplicationOperator or by Airflow's own SparkKubernetesOperator driving Kubeflow's Spark Operator,
on the same test bed (bench/airflow/vs-spark-operator.ts starts it, the service, Kubeflow's operator).
Airflow's own processes (api-server, scheduler, dag-processor, triggerer; LocalExecutor, SQLite), one DAG
run of N parallel tasks per mode, each mode in an Airflow home of its own:

  ours                 SparkApplicationOperator (deferrable, its default): submits, then the triggerer waits
  kubeflow             SparkKubernetesOperator (deferrable=False, its default): creates the SparkApplication,
                       then its worker follows the driver pod (log stream and pod reads) until it ends
  kubeflow-deferrable  SparkKubernetesOperator(deferrable=True): the pod wait as a KubernetesPodTrigger

  python vs_spark_operator.py MODE     (env BENCH_TASKS, BENCH_PARALLELISM, BENCH_HOLD_S, BENCH_BED (JSON); AIRFLOW_HOME: empty)
Prints one JSON line: worker-slot-seconds (task instances `running`, sampled every 0.25 s, integrated),
deferred task-seconds, the most tasks in a slot at once, trigger -> first and -> all driver pods running,
trigger -> the DAG run's end, the CPU seconds of each Airflow process (the scheduler's with its executor's
workers and their task processes), and the scheduler tree's peak memory.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict

import psutil
from kubernetes import client as k8s_client, config as k8s_config

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "clients" / "airflow" / "tests"))
from airflow_processes import AIRFLOW, Components, prepare_home, query, wait_for  # noqa: E402
from scheduled import TaskSeconds, cpu_seconds, run_ended  # noqa: E402

TASKS = int(os.environ.get("BENCH_TASKS", "10"))
# Airflow's worker slots (LocalExecutor's parallelism): every task at once by default; fewer shows what
# an operator that holds its slot while Spark runs does to tasks that wait for one.
PARALLELISM = int(os.environ.get("BENCH_PARALLELISM") or TASKS)
HOLD_S = float(os.environ.get("BENCH_HOLD_S", "60"))
SAMPLE_S = 0.25
MEMORY_EVERY = 8  # samples: the scheduler tree's RSS every 2 s (walking N processes is not free)
LABEL_JOB = "submission-service/job-name"

HEADER = '''"""N parallel tasks (written by bench/airflow/vs_spark_operator.py)."""
from datetime import datetime
from airflow.sdk import DAG
with DAG(dag_id="bench_wait", schedule=None, start_date=datetime(2026, 1, 1), catchup=False, max_active_tasks=%(tasks)d):
    for i in range(%(tasks)d):
'''
OURS = '''from submission_service_airflow.operators import SparkApplicationOperator
''' + HEADER + '''        SparkApplicationOperator(task_id="t%%d" %% i, job_name=%(job)r, config_overrides={
            "type": "Python", "mainApplicationFile": "local:///bench.py", "arguments": ["sleep=%(hold)g"],
            "executor": {"cores": 1, "instances": 1}})
'''
KUBEFLOW = '''from airflow.providers.cncf.kubernetes.operators.spark_kubernetes import SparkKubernetesOperator
''' + HEADER + '''        SparkKubernetesOperator(task_id="t%%d" %% i, namespace=%(namespace)r, deferrable=%(deferrable)s,
                                template_spec=%(spec)r)
'''


def spark_application(bed: Dict[str, Any], job: str) -> Dict[str, Any]:
    """The SparkApplication each SparkKubernetesOperator task creates: the same run as ours (a driver
    whose fake-spark-submit sleeps BENCH_HOLD_S), with the label the test bed's FakeKubelet runs."""
    return {"spark": {
        "apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
        "spec": {
            "type": "Python", "mode": "cluster", "sparkVersion": "3.5.7", "image": bed["image"], "imagePullPolicy": "IfNotPresent",
            "mainApplicationFile": "local:///bench.py", "arguments": ["sleep=%g" % HOLD_S], "restartPolicy": {"type": "Never"},
            "labels": {LABEL_JOB: job},
            "driver": {"cores": 1, "memory": "512m", "labels": {LABEL_JOB: job}},
            "executor": {"instances": 1, "cores": 1, "memory": "512m", "labels": {LABEL_JOB: job}},
            # spark-submit's credentials against the test bed (the operator passes them on as --conf).
            "sparkConf": {"spark.kubernetes.authenticate.submission.caCertFile": bed["caCertFile"],
                          "spark.kubernetes.authenticate.submission.oauthTokenFile": bed["oauthTokenFile"]},
        },
    }}


def dag_file(mode: str, bed: Dict[str, Any], job: str) -> str:
    if mode == "ours":
        return OURS % {"tasks": TASKS, "job": job, "hold": HOLD_S}
    return KUBEFLOW % {"tasks": TASKS, "namespace": bed["namespace"], "deferrable": mode == "kubeflow-deferrable",
                       "spec": spark_application(bed, job)}


def tree_rss_mib(process: psutil.Process) -> float:
    total = 0
    for p in [process, *process.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total / 2**20


def never_ran(home: Path, task_id: str) -> bool:
    """Whether a failed task's log ends before its operator started (Airflow's own failure, not the operator's)."""
    logs = list((home / "logs" / "dag_id=bench_wait").glob("run_id=*/task_id=%s/attempt=*.log" % task_id))
    return not logs or all("Pre Execute" in log.read_text() and "::endgroup::" not in log.read_text() for log in logs)


def sample_until_ended(home: Path, airflow: Components, running_pods: Callable[[], int], start: float) -> Dict[str, Any]:
    """Every SAMPLE_S until the DAG run ends: task-seconds by state, until all are, how many of the job's driver
    pods run, and now and then the scheduler tree's memory."""
    seconds = TaskSeconds(home, start, TASKS)
    peak_mib, tick = 0.0, 0
    scheduler = psutil.Process(airflow.processes["scheduler"].pid)
    while True:
        seconds.sample(running_pods)
        if tick % MEMORY_EVERY == 0:
            peak_mib = max(peak_mib, tree_rss_mib(scheduler))
        tick += 1
        ended = run_ended(home)
        if ended:
            # On an overloaded machine Airflow itself can fail a task before it runs (its supervisor's
            # Execution API call times out): counted, not fatal; any other failure is.
            failed = [r[0] for r in query(home, "select task_id from task_instance where dag_id = 'bench_wait' and state != 'success'")]
            assert ended == ["success"] or all(never_ran(home, task) for task in failed), "the DAG run ended %s: %s%s" % (
                ended, failed, airflow.tails())
            return {"failedBeforeRunning": len(failed), **seconds.figures(), "schedulerPeakMiB": round(peak_mib)}
        airflow.check_alive()
        time.sleep(SAMPLE_S)


def main(mode: str) -> None:
    # A stopped bench stops Airflow's processes too (each in a session of its own): SystemExit runs Components' exit.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    bed = json.loads(os.environ["BENCH_BED"])
    home = Path(os.environ["AIRFLOW_HOME"])
    job = "bench-%s-%d" % (mode, os.getpid())
    source = home / "dag-source" / "bench_wait.py"
    source.parent.mkdir(parents=True)
    source.write_text(dag_file(mode, bed, job))
    env = prepare_home(home, [source], bed["baseUrl"])
    # Airflow's own 30 s limit on parsing the DAG file, in every mode alike: 50 task processes
    # starting at once on two cores parse slower than that, and a task that fails there never
    # reaches the operator being measured (45 of 50 SparkKubernetesOperator tasks at load 34-53).
    env["AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT"] = "300"
    env["AIRFLOW_CONN_KUBERNETES_DEFAULT"] = json.dumps({"conn_type": "kubernetes", "extra": {
        "kube_config_path": bed["kubeconfig"], "namespace": bed["namespace"]}})
    core = k8s_client.CoreV1Api(k8s_config.new_client_from_config(bed["kubeconfig"]))
    selector = "%s=%s,spark-role=driver" % (LABEL_JOB, job)

    def running_pods() -> int:
        pods = core.list_namespaced_pod(bed["namespace"], label_selector=selector).items
        return sum(p.status.phase not in ("Pending", None) for p in pods)

    with Components(home, env, parallelism=PARALLELISM) as airflow:
        wait_for("the DAG to be parsed", lambda: query(home, "select 1 from serialized_dag where dag_id = 'bench_wait'"), airflow)
        processes = {name: psutil.Process(p.pid) for name, p in airflow.processes.items()}
        cpu0 = {name: cpu_seconds(p) for name, p in processes.items()}
        start = time.monotonic()
        triggered = subprocess.run([AIRFLOW, "dags", "trigger", "bench_wait"], env=env, capture_output=True, text=True, timeout=600)
        assert triggered.returncode == 0, triggered.stdout + triggered.stderr
        figures = sample_until_ended(home, airflow, running_pods, start)
        wall = time.monotonic() - start
        cpu = {name: round(cpu_seconds(p) - cpu0[name], 2) for name, p in processes.items()}
    print(json.dumps({"mode": mode, "tasks": TASKS, "slots": PARALLELISM, "holdS": HOLD_S, **figures, "runS": round(wall, 1),
                      "triggererCpuS": cpu["triggerer"], "schedulerCpuS": cpu["scheduler"], "apiServerCpuS": cpu["api-server"],
                      "dagProcessorCpuS": cpu["dag-processor"]}))


if __name__ == "__main__":
    main(sys.argv[1])
