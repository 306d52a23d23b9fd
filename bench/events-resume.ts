// The events-stream resume probe of issue 18, as a figure: `submission-service local` (drivers:
// the fake-spark-submit TEST DOUBLE) with BENCH_EVENTS events held (one application holds the
// cores, the others wait PENDING: one `changed` each), then six clients resume from the oldest
// held event and read nothing. Reported: the service's RSS before, its peak (VmHWM) while the six
// hang, how long /healthz takes meanwhile, and what each stream was sent first.
//   node --import tsx bench/events-resume.ts [ROOT]   (ROOT: a checkout with dist/ built; default this one)
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { writeFakeSparkEnv } from '../test/helpers/fake-spark-submit.js';
import { repoRoot } from '../test/helpers/api.js';
import { killDrivers } from '../test/helpers/drivers.js';
import { tempDir } from '../test/helpers/temp.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const PROBES = 6;
const HOLD_MS = 5000;
const root = process.argv[2] ?? repoRoot;
const cleanup: Array<() => unknown> = [];
const dir = tempDir({ teardown: (fn) => cleanup.push(fn) });

const child = spawn(process.execPath, [join(root, 'bin', 'submission-service.js'), 'local', '--port', '0', '--data-dir', join(dir, 'data'), '--cores', '1',
  '--node-pools', join(repoRoot, 'examples', 'example-cluster.json')], {
  env: { ...process.env, LOG_LEVEL: 'warn', SUBMISSION_SERVICE_PYTHON_ENV: writeFakeSparkEnv(dir) }, stdio: ['ignore', 'pipe', 'inherit'],
});
const base = await new Promise<string>((ok) => {
  let out = '';
  child.stdout!.on('data', (c) => { out += c; const m = /at (http:\/\/[^\s/]+)\/api\//.exec(out); if (m) ok(m[1]); });
});
const status = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]) / 1024;
const post = (body: object) => fetch(`${base}/api/apps/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const job = (args: string[]) => ({ type: 'Python', mainApplicationFile: 'local:///bench.py', arguments: args, executor: { cores: 1 } });

/** The feed's position now: a fresh stream's `ready` carries it. */
const position = () => new Promise<string>((ok) => {
  const socket = connect(Number(new URL(base).port), '127.0.0.1', () => socket.write('GET /api/apps/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'));
  socket.on('data', (d) => { const m = /id: (\w+)\.(\d+)/.exec(String(d)); if (m) { socket.destroy(); ok(`${m[1]}.${m[2]}`); } });
});
await position(); // the service answers
const started = performance.now();
await post({ jobName: 'hold', configOverrides: job(['sleep=600']) });
let next = 1;
await Promise.all(Array.from({ length: 8 }, async () => {
  while (next < EVENTS) { next += 1; await (await post({ jobName: 'queued', configOverrides: job([]) })).text(); }
}));
console.log(`${EVENTS} applications submitted in ${((performance.now() - started) / 1000).toFixed(1)} s`);
// Resumed from the oldest event the feed still holds (it keeps 10,000).
const [epoch, last] = (await position()).split('.');
const first = `${epoch}.${Math.max(0, Number(last) - Math.min(EVENTS, 10_000) + 10)}`;
const before = status('VmRSS');

const heads: string[] = [];
const sockets = Array.from({ length: PROBES }, (_, i) => {
  const socket = connect(Number(new URL(base).port), '127.0.0.1', () => {
    socket.write(`GET /api/apps/events HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: ${first}\r\n\r\n`);
  });
  socket.once('data', (d) => { heads[i] = String(d).split('\r\n\r\n')[1]?.split('\n\n').slice(0, 2).map((b) => /event: (\w+)/.exec(b)?.[1]).join(',') ?? ''; socket.pause(); });
  return socket;
});
let slowest = 0;
let answered = 0;
const until = Date.now() + HOLD_MS;
while (Date.now() < until) {
  const t0 = performance.now();
  const res = await fetch(`${base}/healthz`);
  await res.text();
  if (res.ok) answered += 1;
  slowest = Math.max(slowest, performance.now() - t0);
  await new Promise((r) => setTimeout(r, 50));
}
console.log(`root ${root}`);
console.log(`RSS before ${before.toFixed(0)} MiB, peak ${status('VmHWM').toFixed(0)} MiB with ${PROBES} unread resumed streams; /healthz answered ${answered} times, slowest ${slowest.toFixed(0)} ms`);
console.log(`first events of each stream: ${heads.map((h) => h || '(none)').join(' | ')}`);
for (const s of sockets) s.destroy();
child.kill('SIGKILL');
await new Promise((r) => child.once('exit', r));
killDrivers(join(dir, 'data'));
cleanup.forEach((fn) => fn());
