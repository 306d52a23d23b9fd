// Issue 27's benchmark: what N concurrent Spark runs cost Airflow while they last, waited for by this
// repository's deferrable SparkApplicationOperator against Airflow's own SparkKubernetesOperator
// driving Kubeflow's Spark Operator (v2.5.1, built from its Go module by
// ../kubernetes/spark-operator/build.sh), in the same run, on the same test bed: `testbed up
// --run-pods` (etcd, kube-apiserver, our webhook and API in Kubernetes mode) with the FakeKubelet
// TEST DOUBLE running every driver pod as the fake-spark-submit TEST DOUBLE (it sleeps BENCH_HOLD_S).
// Kubeflow's operator runs beside it with a spark-submit TEST DOUBLE of its own
// (fake_cluster_submit.py: it creates the driver pod spark-submit would create, without a JVM).
// What is measured is Airflow's side (worker slots, triggerer / scheduler / api-server CPU, wall
// time), which does not depend on what the pods do; the peer controller's CPU is reported beside it.
// Airflow in the SETUP_AIRFLOW_K8S=1 virtualenv (SUBMISSION_SERVICE_AIRFLOW_K8S_ENV), this checkout's
// client and provider installed in it; vs_spark_operator.py runs each mode under Airflow's processes.
//   node --import tsx bench/airflow/vs-spark-operator.ts    (BENCH_TASKS=100 BENCH_PARALLELISM=100 BENCH_HOLD_S=60 BENCH_MODES=ours,kubeflow,kubeflow-deferrable)
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../../test/helpers/api.js';
import { installCheckout } from '../../test/helpers/checkout-install.js';
import { writeFakeSparkEnv } from '../../test/helpers/fake-spark-submit.js';
import { sparkEnv } from '../../test/helpers/service.js';
import { cpuMs, load } from '../lib.js';
import { clusterUp, NAMESPACE, SPARK_IMAGE, type Testbed } from '../kubernetes/testbed.js';
import { buildOperator, startOperator, type RunningOperator } from '../kubernetes/spark-operator/operator.js';
import { exec, lastJson } from './service.js';

const tasks = Number(process.env.BENCH_TASKS ?? 100);
const modes = (process.env.BENCH_MODES ?? 'ours,kubeflow,kubeflow-deferrable').split(',');
const venv = sparkEnv().SUBMISSION_SERVICE_AIRFLOW_K8S_ENV;
if (!venv) {
  process.stderr.write('SUBMISSION_SERVICE_AIRFLOW_K8S_ENV is missing: scripts/setup.sh with SETUP_AIRFLOW_K8S=1\n');
  process.exit(2);
}
const python = join(venv, 'bin', 'python');

interface Row {
  mode: string; tasks: number; holdS: number; workerSlotS: number; deferredS: number; mostRunning: number; firstRunningS: number;
  allRunningS: number; runS: number; triggererCpuS: number; schedulerCpuS: number; apiServerCpuS: number; schedulerPeakMiB: number;
  operatorCpuS?: number; load?: string; failedBeforeRunning: number;
}

/** Kubeflow's SPARK_HOME: bin/spark-submit is the TEST DOUBLE that creates the driver pod. */
function fakeSparkHome(dir: string): string {
  const home = join(dir, 'kubeflow-spark-home');
  mkdirSync(join(home, 'bin'), { recursive: true });
  const submit = join(home, 'bin', 'spark-submit');
  writeFileSync(submit, `#!/bin/sh\n# TEST DOUBLE (bench/airflow/vs-spark-operator.ts)\nexec python3 ${join(repoRoot, 'bench', 'airflow', 'fake_cluster_submit.py')} "$@"\n`);
  chmodSync(submit, 0o755);
  return home;
}

async function runMode(mode: string, dir: string, tb: Testbed, operator: RunningOperator): Promise<Row> {
  const home = join(dir, `airflow-${mode}`);
  mkdirSync(home);
  const bed = { baseUrl: tb.baseUrl, kubeconfig: tb.kubeconfig, namespace: NAMESPACE, image: SPARK_IMAGE, ...tb.auth };
  const loadBefore = load();
  const operatorCpu0 = cpuMs(operator.pid);
  const out = await exec(python, [join(repoRoot, 'bench', 'airflow', 'vs_spark_operator.py'), mode],
    { ...process.env, AIRFLOW_HOME: home, BENCH_BED: JSON.stringify(bed), BENCH_TASKS: String(tasks) });
  const row = lastJson<Row>(out);
  process.stderr.write(`${mode}: ${JSON.stringify(row)}\n`);
  return { ...row, operatorCpuS: Math.round(cpuMs(operator.pid) - operatorCpu0) / 1000, load: `${loadBefore} → ${load()}` };
}

const OPERATORS: Record<string, string> = {
  ours: 'SparkApplicationOperator (deferrable, default)',
  kubeflow: 'SparkKubernetesOperator (default: deferrable=False)',
  'kubeflow-deferrable': 'SparkKubernetesOperator(deferrable=True)',
};

function print(rows: Row[]): void {
  console.log(`\n${tasks} parallel tasks in one DAG run under airflow scheduler + triggerer (LocalExecutor), driver pods of ${rows[0]?.holdS} s on the test bed\n`);
  console.log('| operator | worker-slot-seconds | deferred task-seconds | most tasks in a slot at once | trigger → first driver running (s) | → all running (s) | → DAG run success (s) | triggerer CPU (s) | scheduler + workers CPU (s) | api-server CPU (s) | scheduler + workers peak RSS (MiB) | Kubeflow operator CPU (s) | tasks Airflow failed before they ran | load (1, 5, 15 min) before → after |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const r of rows) {
    console.log(`| ${OPERATORS[r.mode] ?? r.mode} | ${r.workerSlotS} | ${r.deferredS} | ${r.mostRunning} | ${r.firstRunningS} | ${r.allRunningS} | ${r.runS} | ${r.triggererCpuS} | ${r.schedulerCpuS} | ${r.apiServerCpuS} | ${r.schedulerPeakMiB} | ${r.operatorCpuS} | ${r.failedBeforeRunning} | ${r.load} |`);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'bench-vs-spark-operator-'));
const operatorDir = buildOperator(); // cached by version; cold: minutes
// The test bed's FakeKubelet runs every driver pod as fake-spark-submit (the env names it).
process.env.SUBMISSION_SERVICE_PYTHON_ENV = writeFakeSparkEnv(dir);
const install = await installCheckout(python, [join(repoRoot, 'clients', 'python'), join(repoRoot, 'clients', 'airflow')]);
if (install.code !== 0) throw new Error(`pip install of the client and the provider failed:\n${install.output}`);
process.stderr.write(`testbed up in ${dir} (load ${load()})\n`);
const tb = await clusterUp(join(dir, 'cluster'), { runPods: true });
let operator: RunningOperator | undefined;
const rows: Row[] = [];
try {
  operator = await startOperator({ dir: operatorDir, kubeconfig: tb.kubeconfig, server: tb.server, namespace: NAMESPACE, sparkHome: fakeSparkHome(dir) });
  for (const mode of modes) rows.push(await runMode(mode, dir, tb, operator));
} finally {
  await operator?.stop();
  await tb.down();
  // A failed mode's Airflow home (task logs) and the test bed's logs stay for a look.
  if (rows.length === modes.length) rmSync(dir, { recursive: true, force: true });
  else process.stderr.write(`kept ${dir} (Airflow homes, cluster/cluster.log)\n`);
}
print(rows);
