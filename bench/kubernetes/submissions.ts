// Real submissions against a real control plane (`testbed up`: etcd,
// kube-apiserver, our webhook, our API), side by side in one run with what users run today:
// `spark-submit --deploy-mode cluster` (a new JVM each time, waitAppCompletion=false), which
// creates the same kind of driver pod for the same application (pi.py).
//
//   node --import tsx bench/kubernetes/submissions.ts
//   env: SUBMIT_CONCURRENCY (16 in flight), SUBMIT_MAX (600 submissions), SUBMIT_SECONDS (20, whichever ends first),
//        SUBMIT_SPARK_RUNS (4: half before the API phase, half after), SUBMIT_SEQUENTIAL (60 one-at-a-time
//        submissions: the latency one user sees), SUBMISSION_SERVICE_TESTBED (skip the build)
//
// Goals: >= 3,000 submissions/minute through the API, and a submission >= 50x faster than spark-submit.
import { envNumber, fmt, load, median, percentileSorted, saveSummary, type SummaryRow, table } from '../lib.js';
import {
  deleteAllPods, NAMESPACE, PI_PY, runSparkSubmit, sparkSubmitArgs, type Testbed, withClusterUp,
} from './testbed.js';

const CONCURRENCY = envNumber('SUBMIT_CONCURRENCY', 16);
const MAX = envNumber('SUBMIT_MAX', 600);
const SECONDS = envNumber('SUBMIT_SECONDS', 20);
const SPARK_RUNS = envNumber('SUBMIT_SPARK_RUNS', 4);
const SEQUENTIAL = envNumber('SUBMIT_SEQUENTIAL', 60);
const GOAL_PER_MINUTE = 3000;
const GOAL_RATIO = 50;

const BODY = JSON.stringify({
  jobName: 'bench',
  configOverrides: { type: 'Python', mainApplicationFile: PI_PY.file, arguments: PI_PY.arguments, engineVersion: '3.5.7' },
});

interface SparkRun { run: number; ms: number; podCreated: boolean }

async function sparkSubmitPhase(tb: Testbed, first: number, count: number): Promise<SparkRun[]> {
  const runs: SparkRun[] = [];
  for (let i = first; i < first + count; i++) {
    const name = `bench-spark-${i}`;
    const result = await runSparkSubmit(sparkSubmitArgs(tb, name, PI_PY));
    if (result.code !== 0) throw new Error(`spark-submit run ${i} exited ${result.code}:\n${result.output.slice(-2000)}`);
    const pods = await tb.core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: `spark-app-name=${name},spark-role=driver` });
    runs.push({ run: i, ms: result.ms, podCreated: pods.items.length === 1 });
    process.stderr.write(`spark-submit run ${i}: ${fmt(result.ms)} ms (load ${load()})\n`);
  }
  return runs;
}

interface ApiPhase { ok: number; failed: number; statuses: Record<string, number>; elapsedMs: number; latencies: number[]; podsCreated: number }

async function apiPhase(tb: Testbed, concurrency: number, max: number): Promise<ApiPhase> {
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let issued = 0;
  let ok = 0;
  const deadline = performance.now() + SECONDS * 1000;
  const started = performance.now();
  const worker = async () => {
    while (issued < max && performance.now() < deadline) {
      issued++;
      const t0 = performance.now();
      let status: string;
      try {
        const response = await fetch(`${tb.baseUrl}/api/apps/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY });
        await response.arrayBuffer();
        status = String(response.status);
        if (response.status === 201) { ok++; latencies.push(performance.now() - t0); }
      } catch (error) {
        status = (error as Error).name;
      }
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsedMs = performance.now() - started;
  let podsCreated = 0;
  let _continue: string | undefined;
  do {
    const page = await tb.core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: 'submission-service/job-name=bench', limit: 500, _continue });
    podsCreated += page.items.filter((p) => p.metadata?.annotations?.['submission-service/admitted-by']).length;
    _continue = page.metadata?._continue || undefined;
  } while (_continue);
  return { ok, failed: issued - ok, statuses, elapsedMs, latencies: latencies.sort((a, b) => a - b), podsCreated };
}

async function main() {
  await withClusterUp('submissions', async (tb) => {
    // One untimed warm-up each way (JIT, connections, caches), then clean.
    await fetch(`${tb.baseUrl}/api/apps/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY }).then((r) => r.arrayBuffer());
    await deleteAllPods(tb.core);

    const before = Math.ceil(SPARK_RUNS / 2);
    const spark = await sparkSubmitPhase(tb, 1, before);
    await deleteAllPods(tb.core);
    process.stderr.write(`API phase: ${CONCURRENCY} in flight, up to ${MAX} submissions or ${SECONDS} s (load ${load()})\n`);
    const api = await apiPhase(tb, CONCURRENCY, MAX);
    await deleteAllPods(tb.core);
    process.stderr.write(`API phase: one at a time, ${SEQUENTIAL} submissions (load ${load()})\n`);
    const sequential = await apiPhase(tb, 1, SEQUENTIAL);
    await deleteAllPods(tb.core);
    spark.push(...await sparkSubmitPhase(tb, before + 1, SPARK_RUNS - before));
    await deleteAllPods(tb.core);

    const perMinute = (api.ok / api.elapsedMs) * 60_000;
    const apiP50 = percentileSorted(api.latencies, 50);
    const apiP99 = percentileSorted(api.latencies, 99);
    const sparkMs = spark.map((r) => r.ms);
    const sparkMedian = median(sparkMs);
    const seqP50 = percentileSorted(sequential.latencies, 50);
    const seqP99 = percentileSorted(sequential.latencies, 99);
    // The time one user waits: a lone POST against one spark-submit.
    const latencyRatio = sparkMedian / seqP50;
    const loadedRatio = sparkMedian / apiP50;
    // Per-submission time at the measured throughput (one submission every 1/throughput).
    const throughputRatio = sparkMedian / (api.elapsedMs / api.ok);

    console.log(`\n## Kubernetes submissions (testbed up: etcd + kube-apiserver + webhook + API; load ${load()})\n`);
    console.log(table(['path', 'submissions', 'per-submission p50 (ms)', 'p99 / max (ms)', 'throughput'], [
      [`POST /api/apps/ (${CONCURRENCY} in flight)`, `${api.ok} ok, ${api.failed} failed`, fmt(apiP50, 1), fmt(apiP99, 1), `${fmt(perMinute)} /min`],
      ['POST /api/apps/ (one at a time)', `${sequential.ok} ok, ${sequential.failed} failed`, fmt(seqP50, 1), fmt(seqP99, 1), `${fmt((sequential.ok / sequential.elapsedMs) * 60_000)} /min`],
      ['spark-submit --deploy-mode cluster (new JVM each)', `${spark.length} runs`, fmt(sparkMedian), fmt(Math.max(...sparkMs)), `${fmt(60_000 / sparkMedian, 1)} /min (sequential)`],
    ]));
    console.log(`\nspark-submit runs (ms): ${sparkMs.map((ms) => fmt(ms)).join(', ')}; driver pod created each time: ${spark.every((r) => r.podCreated)}`);
    console.log(`API statuses: ${JSON.stringify(api.statuses)}; admitted driver pods found: ${api.podsCreated}; elapsed ${fmt(api.elapsedMs)} ms`);
    console.log(`ratio spark-submit median / API p50: one at a time ${fmt(latencyRatio)}x; with ${CONCURRENCY} in flight ${fmt(loadedRatio)}x; at throughput (elapsed/ok) ${fmt(throughputRatio)}x`);

    const rows: SummaryRow[] = [
      { bench: 'k8s submissions', metric: `submissions/min (${CONCURRENCY} in flight)`, value: fmt(perMinute), goal: `>= ${fmt(GOAL_PER_MINUTE)}`, verdict: perMinute >= GOAL_PER_MINUTE ? 'ok' : 'below goal' },
      { bench: 'k8s submissions', metric: 'API latency p50 / p99 (ms)', value: `${fmt(apiP50, 1)} / ${fmt(apiP99, 1)}`, goal: '', verdict: 'info' },
      { bench: 'k8s submissions', metric: 'spark-submit median (ms)', value: fmt(sparkMedian), goal: '', verdict: 'info' },
      { bench: 'k8s submissions', metric: 'API latency one at a time p50 / p99 (ms)', value: `${fmt(seqP50, 1)} / ${fmt(seqP99, 1)}`, goal: '', verdict: 'info' },
      { bench: 'k8s submissions', metric: 'spark-submit / API per submission (p50, one at a time)', value: `${fmt(latencyRatio)}x`, goal: `>= ${GOAL_RATIO}x`, verdict: latencyRatio >= GOAL_RATIO ? 'ok' : 'below goal' },
    ];
    saveSummary('kubernetes-submissions', rows, {
      api: { ...api, latencies: undefined, p50: apiP50, p99: apiP99 },
      sequential: { ...sequential, latencies: undefined, p50: seqP50, p99: seqP99 },
      spark, concurrency: CONCURRENCY, ratios: { latencyRatio, loadedRatio, throughputRatio },
    });
    const okAll = api.failed === 0 && api.podsCreated === api.ok && sequential.failed === 0 && spark.every((r) => r.podCreated);
    if (!okAll) { process.stderr.write('some submissions failed or created no admitted pod\n'); process.exitCode = 1; }
  });
}

await main();
