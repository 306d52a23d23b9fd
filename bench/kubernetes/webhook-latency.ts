// What our mutating webhook adds to a pod create, measured on a real kube-apiserver
// (`testbed up`). The same creates run with and without the
// MutatingWebhookConfiguration registered, in alternating blocks of one run:
//
//   webhook        the bare driver pod the API writes (bareDriverPod: labels, no image);
//                  the apiserver calls our webhook, which renders the whole driver pod
//   no webhook     the same bare pod with the image already set (else validation rejects it)
//   no webhook,    the pod exactly as the webhook would have rendered it (same stored size as
//   pre-rendered   "webhook"), isolating the webhook call from the bigger object it stores
//
// The webhook runs as its own process (`submission-service webhook`), as the chart deploys
// it, not inside `testbed up`'s process, where the API's informers and controller handle
// every one of these pods' events on the same event loop.
//
// Real creates (not dryRun), then deleted after each block. Raw HTTPS with the kubeconfig's
// client certificate over keep-alive connections, so the client adds as little as possible.
// Sequential and with a small concurrency.
//
//   node --import tsx bench/kubernetes/webhook-latency.ts
//   env: WEBHOOK_BLOCKS (6 blocks per side and mode), WEBHOOK_BLOCK_SIZE (50 creates), WEBHOOK_CONCURRENCY (4)
//
// Goal: the webhook adds < 5 ms at p99.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { AdmissionregistrationV1Api, type V1MutatingWebhookConfiguration, type V1Pod } from '@kubernetes/client-node';
import { bareDriverPod } from '../../domain/driver-pod.js';
import { type RawClient as Raw, rawClient, send } from './raw-client.js';
import { envNumber, fmt, load, percentileSorted, saveSummary, type SummaryRow, table } from '../lib.js';
import { freePort } from '../../lib/free-port.js';
import { productArgs } from '../../testbed/entry.js';
import { NAMESPACE, NODE_POOLS, SHARED_TESTBED_DIR, SPARK_IMAGE, type Testbed, withClusterUp } from './testbed.js';

const BLOCKS = envNumber('WEBHOOK_BLOCKS', 6);
const BLOCK_SIZE = envNumber('WEBHOOK_BLOCK_SIZE', 50);
const CONCURRENCY = envNumber('WEBHOOK_CONCURRENCY', 4);
const WARMUP = 5;
const GOAL_ADDED_P99_MS = 5;
const JOB = 'wh-bench';
/** testbed up's own registration, removed for the run, and the standalone webhook's. */
const CLUSTER_UP_WEBHOOK = 'submission-service';
const WEBHOOK_NAME = 'submission-service-bench';

type Side = 'webhook' | 'no webhook' | 'no webhook, pre-rendered';

/** The apiserver's own timing of its calls to mutating webhooks: calls in all, and calls within 5 ms (its bucket le="0.005"). */
interface WebhookCalls { count: number; within5ms: number }

async function apiserverWebhookCalls(raw: Raw): Promise<WebhookCalls> {
  const metrics = await send(raw, '/metrics');
  if (metrics.status !== 200) throw new Error(`GET /metrics of the apiserver: ${metrics.status}`);
  const text = metrics.body;
  const calls = { count: 0, within5ms: 0 };
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_admission_webhook_admission_duration_seconds') || !line.includes('type="admit"')) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (line.startsWith('apiserver_admission_webhook_admission_duration_seconds_count{')) calls.count += value;
    else if (line.includes('le="0.005"')) calls.within5ms += value;
  }
  return calls;
}

const podsPath = `/api/v1/namespaces/${NAMESPACE}/pods`;
let counter = 0;
/** Names of one length, so that every side stores objects of the same size. */
const podName = (prefix = '') => `wh-bench-20260101-000000-${prefix}${String(counter++).padStart(6 - prefix.length, '0')}`;

function bare(name: string): V1Pod {
  return bareDriverPod({ appName: name, jobName: JOB, namespace: NAMESPACE });
}

function podFor(side: Side, name: string, rendered: V1Pod): V1Pod {
  if (side === 'webhook') return bare(name);
  if (side === 'no webhook') {
    const pod = bare(name);
    pod.spec!.containers[0].image = SPARK_IMAGE;
    return pod;
  }
  // Rename everything that carries the app name so the stored size matches the webhook's pod.
  const text = JSON.stringify(rendered).replaceAll(rendered.metadata!.name!, name);
  return JSON.parse(text) as V1Pod;
}

/** The admitted pod the webhook renders for a bare pod (dry run, nothing stored), as a create body. */
async function renderedTemplate(raw: Raw): Promise<V1Pod> {
  const name = podName('t');
  const res = await send(raw, `${podsPath}?dryRun=All`, JSON.stringify(bare(name)));
  if (res.status !== 201) throw new Error(`dry-run create through the webhook failed: ${res.status} ${res.body.slice(0, 300)}`);
  const pod = JSON.parse(res.body) as V1Pod;
  const { uid, resourceVersion, creationTimestamp, managedFields, generation, ...metadata } = pod.metadata!;
  void uid; void resourceVersion; void creationTimestamp; void managedFields; void generation;
  return { apiVersion: 'v1', kind: 'Pod', metadata, spec: pod.spec };
}

/** Waits until the apiserver applies (or no longer applies) our webhook, probing with dry-run creates. */
async function awaitWebhook(raw: Raw, active: boolean): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < 600; i++) {
    const res = await send(raw, `${podsPath}?dryRun=All`, JSON.stringify(bare(podName('p'))));
    const admitted = res.status === 201 && res.body.includes('submission-service/admitted-by');
    if (admitted === active) return performance.now() - started;
    await new Promise((ok) => setTimeout(ok, 50));
  }
  throw new Error(`the webhook did not become ${active ? 'active' : 'inactive'} within 30 s`);
}

async function deleteBenchPods(tb: Testbed): Promise<void> {
  await tb.core.deleteCollectionNamespacedPod({ namespace: NAMESPACE, labelSelector: `submission-service/job-name=${JOB}`, gracePeriodSeconds: 0 });
}

async function block(raw: Raw, side: Side, rendered: V1Pod, count: number, concurrency: number): Promise<number[]> {
  const bodies = Array.from({ length: count }, () => JSON.stringify(podFor(side, podName(), rendered)));
  const latencies: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) {
      const body = bodies[next++];
      const t0 = performance.now();
      const res = await send(raw, podsPath, body);
      const ms = performance.now() - t0;
      if (res.status !== 201) throw new Error(`${side}: create failed ${res.status} ${res.body.slice(0, 300)}`);
      latencies.push(ms);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return latencies;
}

/** `submission-service webhook` (from source) in its own process, registered as WEBHOOK_NAME; resolves once it serves. */
async function standaloneWebhook(tb: Testbed): Promise<() => Promise<void>> {
  const port = await freePort();
  const child = spawn(process.execPath, productArgs(['webhook', '--kubeconfig', tb.kubeconfig, '--namespace', NAMESPACE,
    '--node-pools', NODE_POOLS, '--cert-dir', join(tb.dir, 'bench-webhook-certs'), '--host', '127.0.0.1', '--port', String(port),
    '--register', WEBHOOK_NAME, '--url', `https://127.0.0.1:${port}/mutate-pods`, '--metrics-port', '0']),
  { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, LOG_LEVEL: 'warn' } });
  const stop = async () => { if (child.exitCode === null) { child.kill('SIGTERM'); await once(child, 'exit'); } };
  let printed = '';
  child.stdout.setEncoding('utf8');
  await new Promise<void>((ok, fail) => {
    child.stdout.on('data', (chunk: string) => { printed += chunk; if (printed.includes('webhook at')) ok(); });
    child.once('exit', (code) => fail(new Error(`the standalone webhook exited (${code}) before serving: ${printed}`)));
  });
  return stop;
}

/**
 * Removes testbed up's own webhook registration for the run; what it returns puts it back in
 * place of the bench's (whose webhook has stopped), on a test bed shared with other benches
 * (SHARED_TESTBED_DIR), which would otherwise find no webhook admitting their pods. A bed of the
 * bench's own is stopped after the run instead.
 */
async function removedForTheRun(admission: AdmissionregistrationV1Api): Promise<() => Promise<void>> {
  const own = await admission.readMutatingWebhookConfiguration({ name: CLUSTER_UP_WEBHOOK });
  await admission.deleteMutatingWebhookConfiguration({ name: CLUSTER_UP_WEBHOOK });
  if (!SHARED_TESTBED_DIR) return async () => undefined;
  return async () => {
    await admission.deleteMutatingWebhookConfiguration({ name: WEBHOOK_NAME }).catch(() => undefined);
    const { name, labels, annotations } = own.metadata ?? {};
    await admission.createMutatingWebhookConfiguration({ body: { apiVersion: own.apiVersion, kind: own.kind, metadata: { name, labels, annotations }, webhooks: own.webhooks } });
  };
}

// eslint-disable-next-line max-lines-per-function -- one run on one test bed (below)
async function main() {
  // eslint-disable-next-line max-lines-per-function -- one run on one test bed: the blocks with and without the webhook share its state
  await withClusterUp('webhook-latency', async (tb) => {
    const admission = tb.kc.makeApiClient(AdmissionregistrationV1Api);
    const restore = await removedForTheRun(admission);
    const stopWebhook = await standaloneWebhook(tb);
    try {
      const registered = await admission.readMutatingWebhookConfiguration({ name: WEBHOOK_NAME });
      const body: V1MutatingWebhookConfiguration = {
        apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration',
        metadata: { name: WEBHOOK_NAME, labels: registered.metadata?.labels }, webhooks: registered.webhooks,
      };
      let active = true;
      const setWebhook = async (on: boolean) => {
        if (on === active) return;
        if (on) await admission.createMutatingWebhookConfiguration({ body });
        else await admission.deleteMutatingWebhookConfiguration({ name: WEBHOOK_NAME });
        active = on;
      };

      const modes = [{ label: 'sequential', concurrency: 1 }, { label: `${CONCURRENCY} in flight`, concurrency: CONCURRENCY }];
      const results: Record<string, Record<Side, number[]>> = {};
      const toggleMs: number[] = [];
      const apiserverTimed: Record<string, WebhookCalls> = {};
      for (const mode of modes) {
        const raw = rawClient(tb.kc, mode.concurrency);
        await setWebhook(true);
        await awaitWebhook(raw, true);
        const rendered = await renderedTemplate(raw);
        const byside: Record<Side, number[]> = { 'webhook': [], 'no webhook': [], 'no webhook, pre-rendered': [] };
      const callsBefore = await apiserverWebhookCalls(raw);
        for (let round = 0; round < BLOCKS; round++) {
          // Alternate which state comes first so that drift hits both alike.
          const order: Side[] = round % 2 === 0 ? ['webhook', 'no webhook', 'no webhook, pre-rendered'] : ['no webhook, pre-rendered', 'no webhook', 'webhook'];
          for (const side of order) {
            const on = side === 'webhook';
            if (on !== active) { await setWebhook(on); toggleMs.push(await awaitWebhook(raw, on)); }
            await block(raw, side, rendered, WARMUP, mode.concurrency); // untimed: connections, caches
            byside[side].push(...await block(raw, side, rendered, BLOCK_SIZE, mode.concurrency));
            await deleteBenchPods(tb);
          }
          process.stderr.write(`${mode.label}: round ${round + 1}/${BLOCKS} done (load ${load()})\n`);
        }
        const callsAfter = await apiserverWebhookCalls(raw);
        apiserverTimed[mode.label] = { count: callsAfter.count - callsBefore.count, within5ms: callsAfter.within5ms - callsBefore.within5ms };
        raw.agent.destroy();
        results[mode.label] = byside;
      }
      await setWebhook(true);

      const rows: (string | number)[][] = [];
      const summary: SummaryRow[] = [];
      let worstAdded = -Infinity;
      for (const mode of modes) {
        const stats = Object.fromEntries(Object.entries(results[mode.label]).map(([side, l]) => {
          const sorted = [...l].sort((a, b) => a - b);
          return [side, { n: sorted.length, p50: percentileSorted(sorted, 50), p99: percentileSorted(sorted, 99) }];
        })) as Record<Side, { n: number; p50: number; p99: number }>;
        for (const side of Object.keys(stats) as Side[]) {
          const s = stats[side];
          const base = stats['no webhook'];
          rows.push([mode.label, side, s.n, fmt(s.p50, 2), fmt(s.p99, 2),
            side === 'no webhook' ? '' : `${fmt(s.p50 - base.p50, 2)} / ${fmt(s.p99 - base.p99, 2)}`]);
        }
        const added = stats.webhook.p99 - stats['no webhook'].p99;
        const addedVsRendered = stats.webhook.p99 - stats['no webhook, pre-rendered'].p99;
        worstAdded = Math.max(worstAdded, added);
        summary.push({ bench: 'webhook latency', metric: `added p99, ${mode.label} (ms)`, value: fmt(added, 2), goal: `< ${GOAL_ADDED_P99_MS}`, verdict: added < GOAL_ADDED_P99_MS ? 'ok' : 'above goal' });
        summary.push({ bench: 'webhook latency', metric: `added p50, ${mode.label} (ms)`, value: fmt(stats.webhook.p50 - stats['no webhook'].p50, 2), goal: '', verdict: 'info' });
        const calls = apiserverTimed[mode.label];
      const within = (100 * calls.within5ms) / Math.max(1, calls.count);
      summary.push({ bench: 'webhook latency', metric: `webhook calls within 5 ms as the apiserver times them, ${mode.label} (%)`, value: fmt(within, 2), goal: '>= 99', verdict: within >= 99 ? 'ok' : 'below goal' });
      summary.push({ bench: 'webhook latency', metric: `added p99 vs pre-rendered pod, ${mode.label} (ms)`, value: fmt(addedVsRendered, 2), goal: '', verdict: 'info' });
      }
      console.log(`\n## Webhook latency on pod create (real kube-apiserver + etcd, real creates; load ${load()})\n`);
      console.log(table(['mode', 'side', 'creates', 'p50 (ms)', 'p99 (ms)', 'added p50 / p99 vs "no webhook" (ms)'], rows));
      console.log('\nThe webhook call as the apiserver times it (apiserver_admission_webhook_admission_duration_seconds, our webhook only, dry-run probes included):\n');
    console.log(table(['mode', 'calls', 'within 5 ms'], modes.map((mode) => {
      const calls = apiserverTimed[mode.label];
      return [mode.label, calls.count, `${fmt((100 * calls.within5ms) / Math.max(1, calls.count), 2)}%`];
    })));
    console.log(`\nblocks of ${BLOCK_SIZE} (after ${WARMUP} untimed) x ${BLOCKS} per side, alternating; webhook (un)registration took effect in ${fmt(Math.min(...toggleMs))}-${fmt(Math.max(...toggleMs))} ms`);
      saveSummary('kubernetes-webhook-latency', summary, { results: Object.fromEntries(Object.entries(results).map(([m, s]) => [m, Object.fromEntries(Object.entries(s).map(([k, v]) => [k, v.length]))])), toggleMs });
      if (!(worstAdded < GOAL_ADDED_P99_MS)) process.stderr.write(`added p99 ${fmt(worstAdded, 2)} ms is above the ${GOAL_ADDED_P99_MS} ms goal\n`);
    } finally {
      await stopWebhook();
      await restore();
    }
  }, (reason) => reason.startsWith('no Spark'));
}

await main();
