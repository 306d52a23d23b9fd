// A kernel whose application retried its driver (restartPolicy, issue 26), in component tests
// without a kernel (seconds): the launcher of the new attempt is a new process, so the clients
// are told what jupyter_server tells them when its restarter brings back a kernel that died
// (`restarting` on iopub), requests wait for the new driver's Spark, then `idle`; a launcher
// that only reconnects says nothing of the kind. The channels take a new attempt's launcher even
// while the old driver's socket has not closed yet (a lost node), and nothing else as a second launcher.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import WebSocket from 'ws';
import { attemptLauncherToken } from '../../domain/index.js';
import type { GatewayAuthOptions } from '../../gateway/auth.js';
import { attachChannels } from '../../gateway/channels.js';
import type { KernelRegistry } from '../../gateway/kernel-registry.js';
import { KernelSession } from '../../gateway/kernel-session.js';
import { LauncherAuth } from '../../gateway/launcher-auth.js';
import { SocketSlots } from '../../gateway/socket-slots.js';
import type { KeyVerifier } from '../../submit-api/auth/plugin.js';
import { FakeLauncher, request, scriptedSession, settled, silentLog } from './scripted-kernel.js';

const HELLO = { op: 'hello', busy: false, claimed: false, confirms: true };

t.test("a new attempt's launcher: `restarting`, requests held for its Spark, then `idle`; a reconnect says nothing", async (t) => {
  const { session, launcher, client } = await scriptedSession(t);
  const c = await client('a');
  const first = await launcher({ ...HELLO, spark: { ok: true } });
  await c.until(() => c.statuses().includes('idle'));
  t.same(c.statuses(), ['busy', 'idle'], 'busy while starting, idle when ready');

  // The same driver's launcher reconnecting (a lost connection): the kernel did not restart.
  first.ws.close();
  await settled(() => !session.launcherConnected);
  const again = await launcher({ ...HELLO, spark: { ok: true } });
  await settled(() => session.launcherConnected);
  again.ws.close();
  await settled(() => !session.launcherConnected);
  t.same(c.statuses(), ['busy', 'idle'], 'a reconnect is no restart');

  // The driver died; the cell sent meanwhile waits (no launcher), then attempt 2's launcher connects.
  const cell = request('execute_request', { code: 'x' });
  c.ws.send(cell.text);
  const second = await launcher(HELLO, 2);
  await c.until(() => c.statuses().at(-1) === 'restarting');
  const notice = c.json().find((m) => m.header.msg_type === 'stream');
  t.match(notice?.content.text, /attempt 2.*restarted, and what it held .* is gone/, 'why, on stderr');
  t.equal(session.executionState, 'restarting', 'listed as restarting');
  t.notOk(session.launched, 'not ready until the new driver reports Spark');
  t.notOk(second.json().some((m) => m.header?.msg_id === cell.msgId), 'the request waits for the new Spark');

  second.ws.send(JSON.stringify({ op: 'spark', ok: true }));
  await c.until(() => c.statuses().at(-1) === 'idle');
  t.same(c.statuses(), ['busy', 'idle', 'restarting', 'idle'], "the notebook hears jupyter_server's auto-restart: restarting, then idle");
  t.equal(session.executionState, 'idle');
  await second.until(() => second.json().some((m) => m.header?.msg_id === cell.msgId));
  t.pass('the held request reaches the new kernel once its Spark is ready');
});

t.test("a new attempt before Spark was ever ready is no restart to tell; a claimed pool kernel's claim goes to the new launcher", async (t) => {
  const fresh = new KernelSession(randomUUID(), 'default', silentLog);
  fresh.setLauncher(new FakeLauncher() as unknown as WebSocket, 'secret');
  fresh.setLauncher(new FakeLauncher() as unknown as WebSocket, 'secret', 2);
  t.equal(fresh.executionState, 'starting', 'nothing ran: still starting, no restarting');

  const pooled = new KernelSession(randomUUID(), 'notebook', silentLog, false, 'notebook');
  const old = new FakeLauncher();
  pooled.setLauncher(old as unknown as WebSocket, 'secret');
  old.say({ ...HELLO, spark: { ok: true } });
  const claiming = pooled.claimIt('key-a');
  old.say({ op: 'claimed' });
  t.ok(await claiming, 'claimed by key-a');
  old.close();
  const renewed = new FakeLauncher();
  pooled.setLauncher(renewed as unknown as WebSocket, 'secret', 2);
  const told = renewed.sent.map((text) => JSON.parse(text) as Record<string, unknown>).find((m) => m.op === 'claim');
  t.same(told, { op: 'claim', owner: 'key-a' }, 'the new launcher keeps the claim, to say it after a gateway restart');
  t.equal(pooled.claim, 'claimed', 'still the claimer\'s');
  t.equal(pooled.executionState, 'restarting');
});

/** The status of a launcher's upgrade with `credential`, and its socket when it opened. */
function connectLauncher(url: string, credential: string, t: { teardown(fn: () => unknown): void }): Promise<{ status: number; ws: WebSocket }> {
  return new Promise((ok, fail) => {
    const ws = new WebSocket(url, { headers: { authorization: `token ${credential}` } });
    t.teardown(() => ws.terminate());
    ws.once('unexpected-response', (_request, response) => { ok({ status: response.statusCode ?? 0, ws }); ws.terminate(); });
    ws.once('open', () => ok({ status: 101, ws }));
    ws.once('error', (error) => { if (!/Unexpected server response/.test(error.message)) fail(error); });
  });
}

t.test("channels: a later attempt's launcher replaces a socket whose close has not come; any other second launcher is 409", async (t) => {
  const secret = 'the-gateway-secret';
  const id = randomUUID();
  const session = new KernelSession(id, 'default', silentLog);
  const server = createServer();
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const auth: GatewayAuthOptions = { enabled: false, store: {} as KeyVerifier };
  const launcherAuth = new LauncherAuth(secret);
  const detach = attachChannels(server, { registry: { kernels: new Map([[id, session]]) } as unknown as KernelRegistry, auth, launcherAuth, log: silentLog, sockets: new SocketSlots(0, auth) });
  t.teardown(() => { detach(); server.close(); });
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/notebooks/launcher/${id}`;

  const first = await connectLauncher(url, launcherAuth.issue(id), t);
  t.equal(first.status, 101, "the first driver's launcher");
  const firstClosed = new Promise<number>((ok) => first.ws.once('close', (code) => ok(code)));
  t.equal((await connectLauncher(url, launcherAuth.reconnectSecret(id), t)).status, 409, 'a second launcher with the reconnect secret is refused while the first is connected');
  const second = await connectLauncher(url, attemptLauncherToken(secret, id, 2), t);
  t.equal(second.status, 101, "attempt 2's launcher is taken although the old socket has not closed");
  t.equal(await firstClosed, 1000, 'the old socket is closed by the gateway');
  t.ok(session.launcherConnected, 'the new one is the kernel\'s launcher');
  t.equal((await connectLauncher(url, attemptLauncherToken(secret, id, 2), t)).status, 401, 'its token is taken once');
});
