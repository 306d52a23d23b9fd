// Two API processes (`submission-service api`, as the chart runs them) against one
// apiserver and one webhook: the API keeps nothing in memory that matters, so 500
// concurrent submissions split across them all land, once each.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import t from 'tap';
import { httpCall, type Reply, startKubeBed } from '../helpers/kubernetes.js';
import { binPath } from '../helpers/service.js';

/** `submission-service api` as a child process; resolves with its base URL. */
function apiProcess(t: { teardown(fn: () => unknown): void }, kubeconfig: string, namespace: string): Promise<string> {
  const child = spawn(process.execPath, [binPath, 'api', '--kubeconfig', kubeconfig, '--namespace', namespace, '--port', '0', '--host', '127.0.0.1', '--auth', 'off'],
    { stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, LOG_LEVEL: 'warn' } });
  t.teardown(() => { child.kill('SIGTERM'); });
  return new Promise((ok, fail) => {
    child.once('exit', (code) => fail(new Error(`the api process exited (${code})`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = / at (http:\/\/[^ ]+)\/api\//.exec(line);
      if (match) ok(match[1]);
    });
  });
}

const TOTAL = 500;
const IN_FLIGHT = 50;

t.test('500 submissions through two API processes', async (t) => {
  const bed = await startKubeBed(t);
  const bases = await Promise.all([1, 2].map(() => apiProcess(t, bed.testbed.kubeconfig, bed.namespace)));

  const replies: Reply[] = new Array(TOTAL);
  const errors: string[] = [];
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    for (let i = next++; i < TOTAL; i = next++) {
      const body = { jobName: `scale${i % 10}`, configOverrides: { executor: { cores: [2, 4, 6][i % 3] } } };
      try {
        replies[i] = await httpCall(bases[i % 2], 'POST', '/api/apps/', body, 120_000);
        if (replies[i].status !== 201) errors.push(`#${i}: ${replies[i].status} ${replies[i].body.slice(0, 300)}`);
      } catch (error) {
        errors.push(`#${i}: ${(error as Error).message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const elapsed = (performance.now() - started) / 1000;
  t.comment(`${TOTAL} submissions, ${IN_FLIGHT} in flight, 2 API processes: ${elapsed.toFixed(1)} s (${(TOTAL / elapsed).toFixed(0)}/s); slowest ${Math.round(Math.max(...replies.filter(Boolean).map((r) => r.ms)))} ms`);

  t.same(errors, [], 'zero errors');
  const names = replies.filter(Boolean).map((r) => r.json?.appName as string);
  t.equal(new Set(names).size, TOTAL, `${TOTAL} unique appNames`);
  t.ok(names.every((n) => /^scale\d-\d{8}-\d{6}-[a-z0-9]{5}$/.test(n)), 'every appName has the shape of SPEC');

  const drivers = await bed.pods('spark-role=driver');
  t.equal(drivers.length, TOTAL, `${TOTAL} driver pods`);
  t.ok(drivers.every((p) => p.metadata?.annotations?.['submission-service/admitted-by']), 'every one admitted by the webhook');
  const records = await bed.applications();
  t.equal(records.length, TOTAL, `${TOTAL} Application resources`);
  t.same(records.map((r) => r.metadata.name).sort(), [...names].sort(), 'one record per appName, and the pods too');
  t.same(drivers.map((p) => p.metadata!.name).sort(), [...names].sort());
  // Both instances see everything, whichever wrote it.
  for (const base of bases) {
    const page = await httpCall(base, 'GET', '/api/apps/?limit=500');
    t.equal(page.json.items.length, TOTAL, `${base} lists all ${TOTAL}`);
  }
});
