// More slow connections than the process has file descriptors (the service under
// `prlimit --nofile=256`): the server holds them below the limit, the process survives, and it
// answers again once they are gone. Also: process.memoryUsage() (which @fastify/under-pressure
// calls from a timer) answers with no descriptor free, and an error nobody handles ends the
// process on purpose with status 70 and a log line, never silently.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { connectionBudget } from '../../lib/fd-limit.js';
import { repoRoot } from '../helpers/api.js';
import { writeFakeSparkEnv } from '../helpers/fake-spark-submit.js';
import { startService } from '../helpers/service.js';
import { eventually, slowClients } from '../helpers/sockets.js';
import { tempDir } from '../helpers/temp.js';

const healthz = (base: string) => fetch(`${base}/healthz`, { signal: AbortSignal.timeout(5000) }).then((r) => r.status, () => 0);

t.test('connections beyond the descriptors: the process survives and recovers', { timeout: 180_000 }, async (t) => {
  const root = tempDir(t);
  const service = await startService(t, {
    dataDir: join(root, 'data'), wrapper: ['prlimit', '--nofile=256'],
    env: { ...process.env, SUBMISSION_SERVICE_PYTHON_ENV: writeFakeSparkEnv(root) },
  });
  const pid = service.child.pid!;
  const soft = /Max open files\s+(\d+)/.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'))?.[1];
  t.equal(soft, '256', 'the service runs with 256 descriptors');
  const port = Number(new URL(service.url).port);
  const clients = await slowClients(port, 600);
  // Those beyond maxConnections are closed by the server as soon as it accepts them.
  const held = await eventually(() => clients.open(), (n) => n <= connectionBudget(256), 30_000);
  t.ok(held <= connectionBudget(256), `the server held ${held} of 600 connections (its budget: ${connectionBudget(256)} of 256 descriptors)`);
  const whileHeld = await healthz(service.url);
  t.comment(`while they are held, /healthz: ${whileHeld || 'no answer'}`);
  const started = Date.now();
  for (const socket of clients.sockets) socket.destroy();
  const status = await eventually(() => healthz(service.url), (s) => s === 200, 60_000);
  t.equal(status, 200, 'it answers again once they close');
  t.comment(`recovered ${Date.now() - started} ms after the clients closed`);
  t.equal(service.child.exitCode, null, 'the process is still running');
  t.notMatch(service.output(), /EMFILE.*\n.*at /, 'no stack of an uncaught EMFILE');
});

const node = (code: string, limit?: number) => spawnSync(limit ? 'prlimit' : process.execPath,
  [...(limit ? [`--nofile=${limit}`, process.execPath] : []), '--input-type=module', '-e', code], { cwd: repoRoot, encoding: 'utf8', timeout: 30_000, env: { ...process.env, NODE_OPTIONS: '' } });

t.test('process.memoryUsage() answers with no descriptor free', async (t) => {
  const run = node(`
    import { closeSync, openSync } from 'node:fs';
    import { installProcessGuards } from './dist/lib/process-guards.js';
    installProcessGuards();
    const held = [];
    try { for (;;) held.push(openSync('/dev/null', 'r')); } catch (error) { console.log('filled', error.code); }
    console.log('rss', process.memoryUsage().rss > 0);
    for (const fd of held) closeSync(fd);
  `, 64);
  t.match(run.stdout, /filled EMFILE/, 'every descriptor taken');
  t.match(run.stdout, /rss true/, 'the last reading, no throw');
  t.equal(run.status, 0, run.stderr);
});

t.test('an unhandled rejection ends the process on purpose, with a log line', async (t) => {
  const run = node(`
    import { installProcessGuards } from './dist/lib/process-guards.js';
    installProcessGuards();
    Promise.reject(new Error('nobody caught this'));
    setTimeout(() => console.log('still running'), 2000);
  `);
  t.equal(run.status, 70, 'exit status 70');
  t.notMatch(run.stdout, /still running/);
  const line = JSON.parse(run.stderr.trim().split('\n').at(-1)!);
  t.match(line, { level: 60, msg: /unhandled promise rejection/, err: { message: 'nobody caught this' } });
});
