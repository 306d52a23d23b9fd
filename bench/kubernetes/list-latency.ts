// A page of 100 out of 10,000 Applications, served from the API's cache: the latency of
// `GET /api/apps/?limit=100` (plain pages, a job filter, a cursor) against the goal p99 < 50 ms,
// and the apiserver LISTs those reads cost (none expected). The functional side (no LIST,
// every application once by pages) is asserted by test/kubernetes/list-scale.test.ts; the
// figure lives here, because a timed assertion fails a test on a loaded machine.
//
//   node --import tsx bench/kubernetes/list-latency.ts
//   env: LIST_COUNT (10000 Applications), LIST_READS (500 pages), SUBMISSION_SERVICE_TESTBED
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ensureCrds, ensureNamespace } from '../../cluster/kubernetes/bootstrap.js';
import { kubeClients } from '../../cluster/kubernetes/client.js';
import { freePort } from '../../lib/free-port.js';
import { startTestbed } from '../../testbed/control-plane.js';
import { OVERRIDES } from '../fixtures.js';
import { envNumber, fmt, load, percentileSorted, saveSummary, table } from '../lib.js';
import { ROOT, SHARED_TESTBED_DIR, sharedTestbed } from './testbed.js';

const COUNT = envNumber('LIST_COUNT', 10_000);
const READS = envNumber('LIST_READS', 500);
const GOAL_MS = 50;
// On the test bed shared with the other benches (SHARED_TESTBED_DIR), its control plane only and
// a namespace of its own, which that bed's service (watching spark-apps) does not cache.
const NAMESPACE = SHARED_TESTBED_DIR ? 'list-latency' : 'spark-apps';

const dir = mkdtempSync(join(tmpdir(), 'bench-list-latency-'));
const testbed = SHARED_TESTBED_DIR
  ? { kubeconfig: sharedTestbed(SHARED_TESTBED_DIR).kubeconfig, stop: async () => undefined }
  : await startTestbed(join(dir, 'testbed'));
const children: ReturnType<typeof spawn>[] = [];
try {
  const clients = kubeClients(testbed.kubeconfig);
  await ensureNamespace(clients, NAMESPACE);
  await ensureCrds(clients);
  const started = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (next < COUNT) {
      const i = next++;
      const job = `scale${i % 10}`;
      const name = `${job}-20261123-${String(100000 + Math.floor(i / 10)).slice(-6)}-${(i * 7919 % 60466176).toString(36).padStart(5, '0').slice(-5)}`;
      await clients.custom.createNamespacedCustomObject({
        group: 'submission-service.io', version: 'v1', namespace: NAMESPACE, plural: 'applications',
        body: { apiVersion: 'submission-service.io/v1', kind: 'Application', metadata: { name, labels: { 'submission-service/job-name': job } }, spec: { jobName: job, configTemplateName: '', config: OVERRIDES } },
      });
    }
  }));
  process.stderr.write(`${COUNT} Applications created in ${fmt((performance.now() - started) / 1000, 1)} s\n`);

  // The API as its own process (`api --controller off`), ready once it prints its URL (after it listens).
  const port = await freePort();
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'submission-service.js'), 'api', '--kubeconfig', testbed.kubeconfig,
    '--namespace', NAMESPACE, '--auth', 'off', '--controller', 'off', '--port', String(port), '--host', '127.0.0.1'], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  await new Promise<void>((ok, fail) => {
    child.once('exit', (code) => fail(new Error(`api exited with ${code}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => { if (line.includes(`at http://127.0.0.1:${port}/api/`)) ok(); });
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 20; i++) await (await fetch(`${baseUrl}/api/apps/?limit=100`)).arrayBuffer(); // warm-up

  const times: number[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < READS; i++) {
    const query = i % 5 === 4 && cursor ? `?limit=100&cursor=${cursor}` : i % 5 === 3 ? '?limit=100&jobName=scale3' : '?limit=100';
    const start = performance.now();
    const res = await fetch(`${baseUrl}/api/apps/${query}`);
    const page = await res.json() as { items: unknown[]; next: string | null };
    times.push(performance.now() - start);
    if (res.status !== 200) throw new Error(`page ${i}: HTTP ${res.status}`);
    cursor = page.next;
  }
  times.sort((a, b) => a - b);
  const p50 = percentileSorted(times, 50);
  const p99 = percentileSorted(times, 99);
  process.stdout.write(`\nGET /api/apps/?limit=100 over ${COUNT} cached Applications, ${READS} reads (load ${load()})\n\n`);
  process.stdout.write(`${table(['p50 ms', 'p99 ms', 'max ms', 'goal'], [[fmt(p50, 2), fmt(p99, 2), fmt(times[times.length - 1], 2), `p99 < ${GOAL_MS} ms`]])}\n`);
  saveSummary('list-latency', [{
    bench: 'list-latency', metric: `GET /api/apps/?limit=100 of ${COUNT}: p50 / p99 ms`, value: `${fmt(p50, 2)} / ${fmt(p99, 2)}`,
    goal: `p99 < ${GOAL_MS} ms`, verdict: p99 < GOAL_MS ? 'ok' : 'below goal',
  }], { count: COUNT, reads: READS, times });
} finally {
  for (const child of children) child.kill('SIGTERM');
  await testbed.stop();
  rmSync(dir, { recursive: true, force: true });
}
