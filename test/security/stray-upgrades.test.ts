// Upgrades the service does not serve, sent as an anonymous outsider would: 1,100 of them, on
// paths outside /notebooks/ and on unknown ones, half of them left at once by their client.
// Each is answered (or closed) at once, no socket stays in CLOSE_WAIT, the service answers
// after them, and upgrades meet the Host allowlist and the Origin check. For `local` and for
// the gateway alone, each under the usual 1,024 open-files limit (where they once took every
// descriptor and the service refused all connections until restarted).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { http, startGatewayAlone, startService } from '../helpers/service.js';
import { writeFakeSparkEnv } from '../helpers/fake-spark-submit.js';
import { closeWaitCount, eventually, rawUpgrade, type UpgradeAttempt } from '../helpers/sockets.js';
import { tempDir } from '../helpers/temp.js';
import { freePort } from '../gateway/jupyter.js';
import { guardUpgrades } from '../../gateway/upgrade-guard.js';

const KERNEL = '0f0e0d0c-0b0a-4908-8706-050403020100';
const STRAY: UpgradeAttempt[] = [
  { path: '/api/apps/' }, { path: '/' }, { path: '/dashboard/' }, { path: '/healthz' }, { path: '/metrics' },
  { path: '/notebooks/' }, { path: '/notebooks/nothing/here' }, { path: `/notebooks/api/kernels/${KERNEL}/channels` },
  { path: '/no/such/path?x=1' }, { path: `/notebooks/launcher/${KERNEL}` },
];

async function strayUpgrades(t: Test, base: string, pid: number) {
  const port = Number(new URL(base).port);
  const attempts = Array.from({ length: 1100 }, (_, i) => ({ ...STRAY[i % STRAY.length]!, leaveAtOnce: i % 2 === 1 }));
  const outcomes = [];
  for (let i = 0; i < attempts.length; i += 275) outcomes.push(...await Promise.all(attempts.slice(i, i + 275).map((a) => rawUpgrade(port, a))));
  const waited = outcomes.filter((_, i) => !attempts[i]!.leaveAtOnce);
  t.equal(waited.filter((o) => o.hung).length, 0, 'no upgrade was left unanswered and open');
  const statuses = [...new Set(waited.map((o) => o.status ?? 'closed'))].sort();
  t.ok(waited.every((o) => o.closedByServer || (o.status! >= 400 && o.status! < 500)), `each answered with a 4xx or closed (${statuses.join(', ')})`);
  const closeWait = await eventually(() => closeWaitCount(port), (n) => n === 0);
  t.equal(closeWait, 0, 'no socket of the service is left in CLOSE_WAIT');
  t.equal((await http(base, 'GET', '/healthz')).status, 200, 'and the service answers after them');
  t.equal(process.kill(pid, 0), true, 'still running');
}

async function checksOfUpgrades(t: Test, base: string, expectHostCheck: boolean) {
  const port = Number(new URL(base).port);
  const own = `http://127.0.0.1:${port}`;
  const unknownKernel = `/notebooks/api/kernels/${KERNEL}/channels`;
  t.equal((await rawUpgrade(port, { path: unknownKernel, origin: own })).status, 404, 'the service\'s own origin passes (to a 404: no such kernel)');
  t.equal((await rawUpgrade(port, { path: unknownKernel })).status, 404, 'no Origin (not a browser) passes');
  t.equal((await rawUpgrade(port, { path: unknownKernel, origin: 'https://evil.example' })).status, 403, 'a page of another site is refused');
  t.equal((await rawUpgrade(port, { path: unknownKernel, origin: 'null' })).status, 403, 'so is a sandboxed page (Origin: null)');
  t.equal((await rawUpgrade(port, { path: unknownKernel, origin: 'https://jupyter.example' })).status, 404, 'an origin of --allowed-origins passes');
  if (expectHostCheck) {
    t.equal((await rawUpgrade(port, { path: unknownKernel, host: `evil.example:${port}` })).status, 403, 'a Host outside --allowed-hosts is refused (auth off)');
  }
}

t.test('local: stray upgrades are answered and closed', { timeout: 240_000 }, async (t) => {
  const root = tempDir(t);
  const service = await startService(t, {
    dataDir: join(root, 'data'), wrapper: ['prlimit', '--nofile=1024'],
    env: { ...process.env, SUBMISSION_SERVICE_PYTHON_ENV: writeFakeSparkEnv(root) },
    args: ['--allowed-origins', 'https://jupyter.example'],
  });
  await checksOfUpgrades(t, service.url, true);
  await strayUpgrades(t, service.url, service.child.pid!);
});

t.test('gateway alone: stray upgrades are answered and closed', { timeout: 240_000 }, async (t) => {
  const root = tempDir(t);
  // No API behind it: stray upgrades never reach one.
  const gateway = await startGatewayAlone(t, {
    port: await freePort(), wrapper: ['prlimit', '--nofile=1024'], env: { ...process.env, LOG_LEVEL: 'fatal' },
    args: ['--api-url', 'http://127.0.0.1:9', '--auth', 'off', '--data-dir', join(root, 'gateway'), '--allowed-origins', 'https://jupyter.example'],
  });
  await checksOfUpgrades(t, gateway.url, false);
  await strayUpgrades(t, gateway.url, gateway.child.pid!);
});

t.test('an upgrade its handler leaves pending is closed when the handshake times out', async (t) => {
  const server = createServer();
  // A handler that never answers: what an upgrade waiting on a check that never returns looks like.
  guardUpgrades(server, { handshakeTimeoutMs: 300, log: pino({ level: 'silent' }) }, () => {});
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => new Promise((ok) => server.close(ok)));
  const { port } = server.address() as AddressInfo;
  const outcome = await rawUpgrade(port, { path: '/notebooks/api/kernels/x/channels' });
  t.same(outcome, { closedByServer: true, hung: false }, 'the server closed it');
  t.equal(await eventually(() => closeWaitCount(port), (n) => n === 0), 0, 'nothing left in CLOSE_WAIT');
});
