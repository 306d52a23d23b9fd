// Kernels belong to the key that started them, and launchers prove who they are with nothing
// another key can read (issue 17), against `submission-service local --auth on` with real
// kernels: two user keys A and B and an admin. B cannot list, see, attach to, interrupt,
// restart or delete A's kernel (a refused DELETE leaves it running: A's `x` is still 42); B,
// following the events stream, gets nothing to connect as A's launcher with; a second launcher
// connection is refused even with the real secret; an app carrying kernel labels is refused;
// a key holds at most --kernels-per-key kernels.
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import WebSocket from 'ws';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { serverEvents } from '../../lib/server-events.js';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { KernelClient } from './jupyter.js';

const skip = !realSpark() ? 'needs the Spark virtualenv' : false;
const NIL = '00000000-0000-0000-0000-000000000000';

/** The HTTP status a websocket upgrade gets (101 when it opened; the socket is closed again). */
function upgradeStatus(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((ok, fail) => {
    const ws = new WebSocket(url, { headers });
    ws.once('unexpected-response', (_request, response) => { ok(response.statusCode ?? 0); ws.terminate(); });
    ws.once('open', () => { ok(101); ws.close(); });
    ws.once('error', (error) => { if (!/Unexpected server response/.test(error.message)) fail(error); });
  });
}

t.test('kernels belong to their key; launchers cannot be impersonated', { skip, timeout: 600_000 }, async (t) => {
  const root = tempDir(t);
  const dataDir = join(root, 'data');
  const store = new FileKeyStore(dataDir);
  const keyA = store.create('user', 'A');
  const keyB = store.create('user', 'B');
  const keyC = store.create('user', 'C').key;
  const admin = store.create('admin', 'admin').key;
  // No share of the cores (kernels count in it: test/local/kernel-share.test.ts): the count of kernels is what is tested here.
  const service = await startService(t, { dataDir, env: sparkEnv(), args: ['--auth', 'on', '--kernels-per-key', '2', '--key-core-share', '0'] });
  const wsBase = service.url.replace('http', 'ws');
  const gw = (key: string, method: string, path: string, body?: unknown) => http(service.url, method, `/notebooks${path}`, body, { authorization: `token ${key}` });
  // Plain Python kernels (no SparkContext): what is tested here is who may use them.
  t.equal((await http(service.url, 'POST', '/api/config-templates/', { name: 'plain', config: { pythonVersion: '3', driver: { env: { SUBMISSION_SERVICE_KERNEL_SPARK: 'off' } } } }, { 'x-api-key': admin })).status, 201);

  // B follows the events stream of kernels from before A's kernel exists, and tries to connect
  // as its launcher with every value it is shown, the moment the application appears.
  const follower = new AbortController();
  t.teardown(() => follower.abort());
  const seenByB: Array<Record<string, string>> = [];
  const attempts: Array<{ value: string; status: number }> = [];
  const events = await fetch(`${service.url}/api/apps/events?labelSelector=kernel.submission-service.io/kernel%3Dtrue`, { headers: { 'x-api-key': keyB.key }, signal: follower.signal });
  t.equal(events.status, 200);
  const following = (async () => {
    for await (const { event, data } of serverEvents(events.body as unknown as AsyncIterable<Uint8Array>)) {
      if (event !== 'changed') continue;
      const app = JSON.parse(data) as { labels: Record<string, string>; config: { driver?: { env?: Record<string, string> } } };
      const id = app.labels['kernel.submission-service.io/id'];
      const env = app.config.driver?.env ?? {};
      seenByB.push(env);
      for (const value of Object.values(env)) {
        attempts.push({ value, status: await upgradeStatus(`${wsBase}/notebooks/launcher/${id}`, { authorization: `token ${value}` }) });
      }
    }
  })().catch((error: Error) => { if (!follower.signal.aborted) throw error; });

  const created = await gw(keyA.key, 'POST', '/api/kernels', { name: 'plain' });
  t.equal(created.status, 201, created.text);
  const id = created.json.id as string;
  const channels = (key: string) => `${wsBase}/notebooks/api/kernels/${id}/channels?token=${key}`;
  const clientA = await new KernelClient(channels(keyA.key)).open(t);
  t.equal((await clientA.execute('x = 42; x', 120_000)).result, '42', 'the real launcher connected');

  await t.test('B cannot list, see, attach to, interrupt, restart or delete A\'s kernel', async (t) => {
    const ids = async (key: string) => ((await gw(key, 'GET', '/api/kernels')).json as Array<{ id: string }>).map((k) => k.id);
    t.ok((await ids(keyA.key)).includes(id), 'A lists it');
    t.notOk((await ids(keyB.key)).includes(id), 'B does not');
    t.ok((await ids(admin)).includes(id), 'an admin does');
    const one = await gw(keyB.key, 'GET', `/api/kernels/${id}`);
    t.equal(one.status, 404, 'GET: as if it did not exist');
    t.same(Object.keys(one.json).sort(), ['message', 'reason']);
    t.equal(await upgradeStatus(channels(keyB.key)), 404, 'the channels upgrade');
    t.equal((await gw(keyB.key, 'POST', `/api/kernels/${id}/interrupt`, {})).status, 404, 'interrupt');
    t.equal((await gw(keyB.key, 'POST', `/api/kernels/${id}/restart`, {})).status, 404, 'restart');
    t.equal((await gw(keyB.key, 'DELETE', `/api/kernels/${id}`)).status, 404, 'delete');
    t.equal((await gw(keyA.key, 'GET', `/api/kernels/${id}`)).json.execution_state, 'idle', 'still there for A');
    t.equal((await clientA.execute('x', 30_000)).result, '42', 'A\'s kernel runs on, neither shut down nor restarted');
  });

  await t.test('nothing B reads lets it connect as the launcher', async (t) => {
    const apps = await http(service.url, 'GET', `/api/apps/?labelSelector=kernel.submission-service.io/id=${id}`, undefined, { 'x-api-key': keyB.key });
    const app = apps.json.items[0];
    t.ok(app, 'B reads the kernel\'s application');
    const envB = app.config.driver.env as Record<string, string>;
    t.ok(Object.values(envB).every((v) => v === 'REDACTED'), 'B sees no environment values of A\'s app');
    t.ok(seenByB.length > 0 && seenByB.every((env) => Object.values(env).every((v) => v === 'REDACTED')), 'nor on the events stream');
    t.ok(attempts.length > 0 && attempts.every((a) => a.status === 401), `every launcher connection with what B saw is refused: ${JSON.stringify(attempts.map((a) => a.status))}`);
    const own = (await http(service.url, 'GET', `/api/apps/${app.appName}`, undefined, { 'x-api-key': keyA.key })).json.config.driver.env as Record<string, string>;
    t.notOk('SUBMISSION_SERVICE_KERNEL_TOKEN' in own, 'the launcher\'s token is not in the config at all');
    t.match(own.SUBMISSION_SERVICE_KERNEL_TOKEN_FILE, /launchers/, 'only the path of its file, which the launcher has deleted');
    for (const value of Object.values(own)) {
      t.not(await upgradeStatus(`${wsBase}/notebooks/launcher/${id}`, { authorization: `token ${value}` }), 101, 'nor with what A (or an admin) reads');
    }
    // The reconnect secret used to be HMAC(kernel id) under DIR/gateway-secret, which local drivers can read.
    const gatewaySecret = readFileSync(join(dataDir, 'gateway-secret'), 'utf8').trim();
    const derived = createHmac('sha256', gatewaySecret).update(`kernel:${id}`).digest('base64url');
    t.equal(await upgradeStatus(`${wsBase}/notebooks/launcher/${id}`, { authorization: `token ${derived}` }), 401, 'the reconnect secret cannot be derived from the data dir');
    t.equal((await clientA.execute('x', 30_000)).result, '42');
  });

  await t.test('a second launcher connection is refused, even with the real secret', async (t) => {
    // The kernel's own code can read the launcher's memory: the real reconnect secret.
    const secret = (await clientA.execute('import gc; print([o for o in gc.get_objects() if type(o).__name__ == "Bridge"][0].secret)', 30_000)).stdout.trim();
    t.ok(secret.length >= 32, 'the secret, from inside the kernel');
    t.equal(await upgradeStatus(`${wsBase}/notebooks/launcher/${id}`, { authorization: `token ${secret}` }), 409, 'refused while the first is connected');
    t.equal((await clientA.execute('x', 30_000)).result, '42', 'the first launcher keeps the kernel');
  });

  await t.test('an application cannot carry the labels of a kernel', async (t) => {
    const api = (body: unknown) => http(service.url, 'POST', '/api/apps/', body, { 'x-api-key': keyB.key });
    const labelled = await api({ jobName: 'fake-kernel', labels: { 'kernel.submission-service.io/kernel': 'true', 'kernel.submission-service.io/id': id }, configOverrides: { type: 'Python', mainApplicationFile: 'local:///bin/true' } });
    t.equal(labelled.status, 400, labelled.text);
    t.match(labelled.json.message, /kernel\.submission-service\.io/);
    const podLabels = await api({ jobName: 'fake-kernel', configOverrides: { type: 'Python', mainApplicationFile: 'local:///bin/true', driver: { labels: { 'kernel.submission-service.io/kernel': 'true' } } } });
    t.equal(podLabels.status, 400, podLabels.text);
    const appLabel = await api({ jobName: 'fake-kernel', configOverrides: { type: 'Python', mainApplicationFile: 'local:///bin/true', driver: { labels: { 'submission-service/app-name': 'other' } } } });
    t.equal(appLabel.status, 400, 'nor the service\'s own pod labels');
    t.equal((await clientA.execute('x', 30_000)).result, '42');
  });

  await t.test('kernels at once per key', async (t) => {
    const second = await gw(keyA.key, 'POST', '/api/kernels', { name: 'plain' });
    t.equal(second.status, 201, second.text);
    const third = await gw(keyA.key, 'POST', '/api/kernels', { name: 'plain' });
    t.equal(third.status, 429, third.text);
    t.equal(third.json.reason, 'Too Many Kernels');
    t.match(third.json.message, /at most 2/);
    const ofB = await gw(keyB.key, 'POST', '/api/kernels', { name: 'plain' });
    t.equal(ofB.status, 201, 'another key is not held back');
    t.equal((await gw(keyB.key, 'DELETE', `/api/kernels/${ofB.json.id}`)).status, 204, 'B deletes its own');
    t.equal((await gw(keyA.key, 'DELETE', `/api/kernels/${second.json.id}`)).status, 204);
    t.equal((await gw(keyA.key, 'POST', `/api/kernels/${NIL}/interrupt`, {})).status, 404);
    // Starts sent at once count before any of them is submitted.
    const burst = await Promise.all([1, 2, 3].map(() => gw(keyC, 'POST', '/api/kernels', { name: 'plain' })));
    t.same(burst.map((r) => r.status).sort(), [201, 201, 429], 'three at once: two start, one is refused');
    for (const started of burst.filter((r) => r.status === 201)) t.equal((await gw(keyC, 'DELETE', `/api/kernels/${started.json.id}`)).status, 204);
  });

  await t.test('an admin acts on every kernel', async (t) => {
    t.equal((await gw(admin, 'GET', `/api/kernels/${id}`)).status, 200);
    t.equal((await gw(admin, 'DELETE', `/api/kernels/${id}`)).status, 204);
    t.equal((await gw(keyA.key, 'GET', `/api/kernels/${id}`)).status, 404, 'gone');
  });
  follower.abort();
  await following;
});
