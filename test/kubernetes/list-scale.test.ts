// 10,000 Applications in the namespace: a page of 100 comes from the cache and costs the
// apiserver nothing: the API process opens no connection to it for 500 pages (counted by a
// proxy between them; the API's reads and lists each open one, only its watches stay open).
// The apiserver's own LIST counter is not the measure: it has no label for the client, and
// the test bed's other clients (its garbage collector's reflectors list again when a watch
// ends) move it too; a run beside two CPU hogs counted one LIST during the pages. Pages walk
// the set in order; the API's memory with them is reported. The latency (goal p99 < 50 ms)
// is a figure, measured by bench/kubernetes/list-latency.ts: a timed assertion would fail
// here on a loaded machine.
import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ensureNamespace } from '../../cluster/kubernetes/bootstrap.js';
import { statusCode } from '../../cluster/kubernetes/errors.js';
import { backoff, retry } from '../../lib/retry.js';
import { eventually, freePort, startKubeBed } from '../helpers/kubernetes.js';
import { startStallProxy } from '../helpers/stall-proxy.js';

const rssKib = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);

/** `submission-service api --controller off` (dist/ build) on a free port; killed at teardown. */
async function startApiProcess(t: { teardown(fn: () => unknown): void }, kubeconfig: string, namespace: string): Promise<{ baseUrl: string; pid: number }> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(import.meta.dirname, '..', '..', 'bin', 'submission-service.js'), 'api', '--kubeconfig', kubeconfig,
    '--namespace', namespace, '--auth', 'off', '--controller', 'off', '--port', String(port), '--host', '127.0.0.1'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  t.teardown(async () => { child.kill('SIGTERM'); await exited; });
  await new Promise<void>((ok, fail) => {
    child.once('exit', (code) => fail(new Error(`api exited with ${code}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => { if (/at http/.test(line)) ok(); });
  });
  return { baseUrl: `http://127.0.0.1:${port}`, pid: child.pid! };
}

const COUNT = Number(process.env.LIST_SCALE_COUNT ?? 10_000);

t.test(`${COUNT} applications: a page from the cache`, async (t) => {
  const bed = await startKubeBed(t);
  await bed.api.cluster.close(); // no controller here: these records have no pods on purpose
  const config = (await bed.call('POST', '/api/apps/?dryRun=true', { jobName: 'scale', configOverrides: { executor: { cores: 4, instances: 3 } } })).json.config;
  const { custom } = bed.clients;
  const started = Date.now();
  let next = 0;
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (next < COUNT) {
      const i = next++;
      const name = `scale${i % 10}-20261123-${String(100000 + Math.floor(i / 10)).slice(-6)}-${(i * 7919 % 60466176).toString(36).padStart(5, '0').slice(-5)}`;
      // An overloaded machine makes etcd time out now and then (500 "etcdserver: request timed
      // out", seen with load 30 on 2 cores): that create is sent again; a 409 means it got in.
      await retry(() => custom.createNamespacedCustomObject({
        group: 'submission-service.io', version: 'v1', namespace: bed.namespace, plural: 'applications',
        body: { apiVersion: 'submission-service.io/v1', kind: 'Application', metadata: { name, labels: { 'submission-service/job-name': `scale${i % 10}` } }, spec: { jobName: `scale${i % 10}`, configTemplateName: '', config } },
      }).catch((error: unknown) => { if (statusCode(error) !== 409) throw error; }), { attempts: 8, retryOn: (error) => [429, 500, 503, 504].includes(statusCode(error) ?? 0), delayMs: backoff({ baseMs: 200 }) });
    }
  }));
  t.comment(`${COUNT} Applications created in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  // The API as its own process (`api --controller off`), so its memory is its own, reaching
  // the apiserver through a proxy that counts its connections.
  const proxy = await startStallProxy(new URL(bed.testbed.server));
  t.teardown(() => proxy.close());
  const api = await startApiProcess(t, proxy.kubeconfig(bed.testbed.kubeconfig, join(bed.dir, 'counted-kubeconfig')), bed.namespace);
  const listed = await eventually(async () => (await fetch(`${api.baseUrl}/api/apps/?limit=100`)).json() as Promise<{ items: unknown[]; next: string | null }>, (p) => p.items.length === 100, { what: 'the first page' });
  t.ok(listed.next, 'more pages');
  await ensureNamespace(bed.clients, 'empty-apps');
  const empty = await startApiProcess(t, bed.testbed.kubeconfig, 'empty-apps');
  await fetch(`${empty.baseUrl}/api/apps/?limit=100`);
  const connectionsBefore = proxy.accepted();
  let cursor: string | null = null;
  let wrong = 0;
  for (let i = 0; i < 500; i++) {
    const query = i % 5 === 4 && cursor ? `?limit=100&cursor=${cursor}` : i % 5 === 3 ? '?limit=100&jobName=scale3' : '?limit=100';
    const res = await fetch(`${api.baseUrl}/api/apps/${query}`);
    const page = await res.json() as { items: { appName: string }[]; next: string | null };
    if (res.status !== 200 || page.items.length !== Math.min(100, i % 5 === 3 ? COUNT / 10 : COUNT)) { wrong++; t.fail(`page ${i}: ${res.status}, ${page.items.length} items`); }
    cursor = page.next;
  }
  t.equal(wrong, 0, '500 full pages (plain, by job, by cursor)');
  t.equal(proxy.accepted() - connectionsBefore, 0, 'no request to the apiserver for 500 pages');
  t.ok(proxy.open() > 0, "the API's watches are open through the proxy");

  // Pages walk the whole set in order with no duplicates.
  const seen = new Set<string>();
  let page = await (await fetch(`${api.baseUrl}/api/apps/?limit=100&jobName=scale7`)).json() as { items: { appName: string; createdAt: string }[]; next: string | null };
  for (;;) {
    for (const item of page.items) seen.add(item.appName);
    if (!page.next) break;
    page = await (await fetch(`${api.baseUrl}/api/apps/?limit=100&jobName=scale7&cursor=${page.next}`)).json() as typeof page;
  }
  t.equal(seen.size, COUNT / 10, 'every application of the job, once, by pages');
  const mib = (kib: number) => (kib / 1024).toFixed(0);
  t.comment(`API process memory (VmRSS): ${mib(rssKib(api.pid))} MiB with ${COUNT} applications cached, ${mib(rssKib(empty.pid))} MiB with none (same build, same moment)`);
});
