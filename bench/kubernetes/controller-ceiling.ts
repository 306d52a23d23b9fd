// Submissions per minute with the controller running, side by side in one run with the
// apiserver's own ceiling: the same number of Application creates plus bare pod creates
// (the two writes a submission makes; the pod matches no webhook) from a minimal Node client
// (client-node, one kept-alive connection pool) at the same concurrency, in a namespace of
// their own so that the service (its cache, its controller) does not see them. Goal: >= 70%.
//
//   node --import tsx bench/kubernetes/controller-ceiling.ts
//   env: CEILING_COUNT (400 per phase), CEILING_CONCURRENCY (16), SUBMISSION_SERVICE_TESTBED
import { CustomObjectsApi } from '@kubernetes/client-node';
import { envNumber, fmt, load, saveSummary, table } from '../lib.js';
import { deleteAllPods, NAMESPACE, withClusterUp } from './testbed.js';

const COUNT = envNumber('CEILING_COUNT', 400);
const CONCURRENCY = envNumber('CEILING_CONCURRENCY', 16);
const GOAL = 0.7;

const BODY = JSON.stringify({ jobName: 'bench', configOverrides: { type: 'Python', mainApplicationFile: 'local:///opt/spark/examples/src/main/python/pi.py' } });

/** `count` jobs at `concurrency` in flight; per minute. */
async function phase(count: number, concurrency: number, one: (i: number) => Promise<void>): Promise<{ perMinute: number; ms: number }> {
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) await one(next++);
  }));
  const ms = performance.now() - started;
  return { perMinute: (count / ms) * 60_000, ms };
}

async function clean(custom: CustomObjectsApi, core: Parameters<typeof deleteAllPods>[0]) {
  for (const namespace of [NAMESPACE, 'ceiling']) {
    await custom.deleteCollectionNamespacedCustomObject({ group: 'submission-service.io', version: 'v1', namespace, plural: 'applications' });
    await deleteAllPods(core, namespace);
  }
  // Let the service's cache and controller digest the deletions before the next phase.
  await new Promise((ok) => setTimeout(ok, 2000));
}

await withClusterUp('controller-ceiling', async (tb) => {
  const custom = tb.kc.makeApiClient(CustomObjectsApi);
  const CEILING_NS = 'ceiling';
  await tb.core.createNamespace({ body: { metadata: { name: CEILING_NS } } });
  const run = `r${Date.now().toString(36)}`;
  const ceiling = async (i: number) => {
    const name = `ceiling-${run}-${i}`;
    await custom.createNamespacedCustomObject({
      group: 'submission-service.io', version: 'v1', namespace: CEILING_NS, plural: 'applications',
      body: { apiVersion: 'submission-service.io/v1', kind: 'Application', metadata: { name }, spec: { jobName: 'ceiling', configTemplateName: '', config: {} } },
    });
    await tb.core.createNamespacedPod({ namespace: CEILING_NS, body: { metadata: { name }, spec: { containers: [{ name: 'c', image: 'apache/spark:3.5.7' }] } } });
  };
  const submit = async () => {
    const response = await fetch(`${tb.baseUrl}/api/apps/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY });
    await response.arrayBuffer();
    if (response.status !== 201) throw new Error(`POST /api/apps/: ${response.status}`);
  };
  // Warm-up both ways, then alternate phases so drift in machine load hits both sides.
  await ceiling(-1);
  await submit();
  await clean(custom, tb.core);
  const results: { ceiling: number[]; api: number[] } = { ceiling: [], api: [] };
  for (const round of [1, 2]) {
    process.stderr.write(`round ${round}: ceiling, ${COUNT} x (Application + pod), ${CONCURRENCY} in flight (load ${load()})\n`);
    results.ceiling.push((await phase(COUNT, CONCURRENCY, (i) => ceiling(round * 100_000 + i))).perMinute);
    await clean(custom, tb.core);
    process.stderr.write(`round ${round}: POST /api/apps/ x ${COUNT}, controller running (load ${load()})\n`);
    results.api.push((await phase(COUNT, CONCURRENCY, submit)).perMinute);
    await clean(custom, tb.core);
  }
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const ceilingRate = sum(results.ceiling) / results.ceiling.length;
  const apiRate = sum(results.api) / results.api.length;
  const ratio = apiRate / ceilingRate;
  console.log(`\n## Submissions with the controller vs the apiserver's ceiling (load ${load()})\n`);
  console.log(table(['path', 'per minute (rounds)', 'mean'], [
    [`Application + bare pod, client-node, ${CONCURRENCY} in flight`, results.ceiling.map((r) => fmt(r)).join(', '), fmt(ceilingRate)],
    [`POST /api/apps/ (webhook, controller running), ${CONCURRENCY} in flight`, results.api.map((r) => fmt(r)).join(', '), fmt(apiRate)],
  ]));
  console.log(`\nratio: ${(ratio * 100).toFixed(1)}% of the ceiling (goal >= ${GOAL * 100}%)`);
  saveSummary('kubernetes-controller-ceiling', [
    { bench: 'k8s controller', metric: `submissions/min vs ceiling (${CONCURRENCY} in flight)`, value: `${fmt(apiRate)} vs ${fmt(ceilingRate)} = ${(ratio * 100).toFixed(1)}%`, goal: `>= ${GOAL * 100}%`, verdict: ratio >= GOAL ? 'ok' : 'below goal' },
  ], { results, count: COUNT, concurrency: CONCURRENCY });
});
