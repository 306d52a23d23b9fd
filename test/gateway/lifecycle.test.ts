// The kernel lifecycle as jupyter_server has it, in component tests without a kernel (seconds):
// the websocket heartbeat, a second socket of one session replacing the first, the kernel's own
// late `starting` not relayed, restart and interrupt answered with what really happened, control
// requests not taken for the end of a cell, and empty JSON bodies. The launch timeout has its
// own file (launch-timeout.test.ts). Time is a FakeClock moved by hand: nothing here waits for
// real time.
import { EventEmitter } from 'node:events';
import Fastify from 'fastify';
import t from 'tap';
import { GatewayError } from '../../gateway/gateway-error.js';
import { Heartbeat } from '../../gateway/heartbeat.js';
import type { KernelRegistry } from '../../gateway/kernel-registry.js';
import { kernelRoutes } from '../../gateway/routes/kernels.js';
import { installJsonBodyParser } from '../../lib/json-body.js';
import { FakeClock } from './fake-clock.js';
import { kernelFrame, request, scriptedSession, settled, silentLog } from './scripted-kernel.js';

class FakeSocket extends EventEmitter {
  pings = 0;
  terminated = false;
  answers = true;
  ping(): void { this.pings++; if (this.answers) this.emit('pong'); }
  terminate(): void { this.terminated = true; this.emit('close'); }
}

t.test('heartbeat: a peer that stops answering pings is closed after the timeout, one that answers is kept', async (t) => {
  const clock = new FakeClock();
  const beat = new Heartbeat(30_000, 90_000, silentLog, clock);
  const alive = new FakeSocket();
  const gone = new FakeSocket();
  gone.answers = false;
  beat.watch(alive, 'client');
  beat.watch(gone, 'launcher');
  beat.start();
  clock.advance(60_000);
  t.equal(alive.pings, 2, 'pinged every 30 s');
  t.notOk(gone.terminated, 'silent for 60 s: still within the 90 s timeout');
  clock.advance(60_000);
  t.ok(gone.terminated, 'silent past 90 s: closed');
  t.notOk(alive.terminated, 'the one that answers stays');
  t.equal(beat.watching, 1, 'and only it is still watched');
  beat.stop();
  t.equal(clock.pending, 0, 'stop ends the timer');
});

t.test('heartbeat: after the process was suspended the first round pings again instead of closing', async (t) => {
  const clock = new FakeClock();
  const beat = new Heartbeat(30_000, 90_000, silentLog, clock);
  const peer = new FakeSocket();
  beat.watch(peer, 'client');
  peer.answers = false;
  clock.advance(3_600_000 - 1); // no round ran: the timer was not started (a suspended process runs none either)
  beat.beat();
  t.notOk(peer.terminated, 'no ping was missed: one is sent');
  t.equal(peer.pings, 1);
  clock.advance(30_000);
  beat.beat();
  t.ok(peer.terminated, 'then a missed ping counts');
  const off = new Heartbeat(0, 0, silentLog, clock);
  off.watch(new FakeSocket(), 'client');
  off.start();
  t.equal(off.watching, 0, 'interval 0: no pings at all');
});

t.test('a second websocket of the same session replaces the first; replies to the first go to it', async (t) => {
  const { session, launcher, client } = await scriptedSession(t);
  const kernel = await launcher({ op: 'hello', busy: false, claimed: false, confirms: true, spark: { ok: true } });
  const first = await client('s1');
  const other = await client('s2');
  await settled(() => session.executionState === 'idle' && session.connections === 2);
  const asked = request('execute_request', { code: '1' });
  first.ws.send(asked.text);
  await kernel.until(() => kernel.frames.some((f) => f.includes(asked.msgId)));
  const second = await client('s1');
  t.equal(await first.closed, 1000, 'the first socket of s1 is closed');
  t.equal(session.connections, 2, 's1 once, s2 once');
  kernel.ws.send(kernelFrame('shell', 'execute_reply', asked.msgId, { status: 'ok' }));
  await second.until(() => second.json().some((m) => m.parent_header.msg_id === asked.msgId));
  t.notOk(other.json().some((m) => m.parent_header.msg_id === asked.msgId), 'the reply goes to its session only');
  kernel.ws.send(kernelFrame('iopub', 'stream', 'p', { name: 'stdout', text: 'x' }));
  await other.until(() => other.json().some((m) => m.header.msg_type === 'stream'));
  t.equal(session.replayBytes, 0, 's1 is not taken for away: nothing is kept for it');
});

t.test("the kernel's own parent-less `starting` is not relayed after the gateway's idle", async (t) => {
  const { launcher, client } = await scriptedSession(t);
  const c = await client('a');
  const kernel = await launcher();
  kernel.ws.send(JSON.stringify({ op: 'spark', ok: true }));
  // As the launcher's outbox delivers it on its first connection: after the gateway said idle.
  kernel.ws.send(kernelFrame('iopub', 'status', '', { execution_state: 'starting' }, 'starting'));
  kernel.ws.send(kernelFrame('iopub', 'status', 'cell', { execution_state: 'busy' }, 'busy'));
  await c.until(() => c.statuses().length === 3);
  t.same(c.statuses(), ['busy', 'idle', 'busy'], 'busy while starting, idle when ready, then the kernel\'s own; no starting');
});

t.test("restart reports the kernel's state after the reset, not idle regardless", async (t) => {
  const { session, launcher, client } = await scriptedSession(t);
  const kernel = await launcher({ op: 'hello', busy: false, claimed: false, confirms: true, spark: { ok: true } });
  const c = await client('a');
  await settled(() => session.launched);
  const restarting = session.restart();
  await kernel.until(() => kernel.json().some((m) => m.op === 'restart'));
  t.equal(session.executionState, 'restarting');
  kernel.ws.send(JSON.stringify({ op: 'restarted', ok: true, busy: true }));
  t.equal(await restarting, true);
  t.equal(session.executionState, 'busy', 'busy as the launcher said (a request sent meanwhile runs)');
  await c.until(() => c.statuses().includes('restarting') && c.statuses().at(-1) !== 'restarting');
  t.same(c.statuses().slice(-2), ['restarting', 'busy'], 'the notebook is told the same');
  const failing = session.restart();
  await kernel.until(() => kernel.json().filter((m) => m.op === 'restart').length === 2);
  kernel.ws.send(JSON.stringify({ op: 'restarted', ok: false, busy: false, error: 'NameError: x' }));
  await t.rejects(failing, { statusCode: 500, message: /NameError: x/ }, 'a reset that failed is a failed restart');
  t.equal(session.executionState, 'idle');
});

t.test('a restart the launcher does not confirm fails after the timeout, and the kernel keeps its real state', async (t) => {
  const clock = new FakeClock();
  const { session, launcher, client } = await scriptedSession(t, { restartTimeoutMs: 60_000 }, clock);
  const kernel = await launcher({ op: 'hello', busy: false, claimed: false, confirms: true, spark: { ok: true } });
  const c = await client('a');
  await settled(() => session.launched);
  kernel.ws.send(kernelFrame('iopub', 'status', 'cell', { execution_state: 'busy' }, 'busy'));
  await settled(() => session.executionState === 'busy');
  const restarting = session.restart();
  await kernel.until(() => kernel.json().some((m) => m.op === 'restart'));
  clock.advance(59_999);
  t.equal(session.executionState, 'restarting', 'waiting');
  clock.advance(1);
  await t.rejects(restarting, { statusCode: 504, message: /did not confirm/ }, 'unconfirmed: not answered as done');
  t.equal(session.executionState, 'busy', 'busy, as the kernel last said (not idle)');
  await c.until(() => c.statuses().at(-1) === 'busy' && c.statuses().includes('restarting'));
});

t.test('restart and interrupt that cannot reach the kernel are errors, not 200 and 204', async (t) => {
  const { session, launcher } = await scriptedSession(t);
  await t.rejects(session.interrupt(), { statusCode: 409, message: /not connected/ }, 'interrupt without a launcher: not delivered');
  await t.rejects(session.restart(), { statusCode: 409, message: /not connected/ }, 'restart without a launcher');
  await launcher();
  await settled(() => session.launcherConnected);
  await t.rejects(session.restart(), { statusCode: 409, message: /still starting/ }, 'restart before the kernel is ready');
  t.equal(session.executionState, 'starting', 'and it did not pretend to restart');
});

t.test('interrupt answers once the launcher confirmed it; unconfirmed it fails', async (t) => {
  const clock = new FakeClock();
  const { session, launcher } = await scriptedSession(t, { interruptTimeoutMs: 10_000 }, clock);
  const kernel = await launcher({ op: 'hello', busy: true, claimed: false, confirms: true, spark: { ok: true } });
  await settled(() => session.launched);
  const interrupting = session.interrupt();
  await kernel.until(() => kernel.json().some((m) => m.op === 'interrupt'));
  kernel.ws.send(JSON.stringify({ op: 'interrupted', signalled: true }));
  await interrupting;
  t.pass('confirmed: resolved');
  const lost = session.interrupt();
  await kernel.until(() => kernel.json().filter((m) => m.op === 'interrupt').length === 2);
  clock.advance(10_000);
  await t.rejects(lost, { statusCode: 504, message: /did not confirm/ }, 'unconfirmed: 504');
  const old = await scriptedSession(t);
  const oldKernel = await old.launcher({ op: 'hello', busy: true, claimed: false, spark: { ok: true } });
  await old.session.interrupt();
  await oldKernel.until(() => oldKernel.json().some((m) => m.op === 'interrupt'));
  t.pass('a launcher from before confirmations: sent is enough');
});

t.test("a control request's idle does not end a running cell", async (t) => {
  const { session, launcher, client } = await scriptedSession(t);
  const kernel = await launcher({ op: 'hello', busy: false, claimed: false, confirms: true, spark: { ok: true } });
  const c = await client('a');
  const cell = request('execute_request', { code: 'while True: pass' });
  const info = request('kernel_info_request', {}, { channel: 'control' });
  c.ws.send(cell.text);
  c.ws.send(info.text);
  await kernel.until(() => kernel.frames.some((f) => f.includes(info.msgId)));
  kernel.ws.send(kernelFrame('iopub', 'status', cell.msgId, { execution_state: 'busy' }, 'busy'));
  kernel.ws.send(kernelFrame('iopub', 'status', info.msgId, { execution_state: 'busy' }, 'busy'));
  kernel.ws.send(kernelFrame('iopub', 'status', info.msgId, { execution_state: 'idle' }, 'idle'));
  await c.until(() => c.json().some((m) => m.parent_header.msg_id === info.msgId && m.content.execution_state === 'idle'));
  t.equal(session.executionState, 'busy', 'the cell still runs');
  kernel.ws.send(kernelFrame('iopub', 'status', cell.msgId, { execution_state: 'idle' }, 'idle'));
  await settled(() => session.executionState === 'idle');
});

t.test('an empty body sent as application/json is no body (as @jupyterlab/services sends it)', async (t) => {
  const app = Fastify();
  installJsonBodyParser(app);
  const model = { id: 'k', name: 'default', last_activity: '', execution_state: 'idle', connections: 0 };
  const session = { interrupt: async () => {}, restart: async () => true, model: () => model };
  const registry = { get: () => session, remove: async () => {}, start: async () => session, list: async () => [] };
  await app.register(kernelRoutes, { registry: registry as unknown as KernelRegistry });
  t.teardown(() => app.close());
  const json = { 'content-type': 'application/json' };
  for (const [method, url, status] of [['POST', '/api/kernels/k/interrupt', 204], ['POST', '/api/kernels/k/restart', 200], ['DELETE', '/api/kernels/k', 204], ['POST', '/api/kernels', 201]] as const) {
    const withLength = await app.inject({ method, url, headers: { ...json, 'content-length': '0' } });
    t.equal(withLength.statusCode, status, `${method} ${url}, Content-Length: 0: ${withLength.body}`);
    const without = await app.inject({ method, url, headers: json });
    t.equal(without.statusCode, status, `${method} ${url}, no Content-Length: ${without.body}`);
  }
  t.equal((await app.inject({ method: 'POST', url: '/api/kernels', headers: json, payload: '{"name": "Bad Name"}' })).statusCode, 400, 'a body is still read and checked');
  t.equal((await app.inject({ method: 'POST', url: '/api/kernels', headers: json, payload: '{' })).statusCode, 400, 'and bad JSON is still refused');
  t.ok(new GatewayError(409, 'Conflict', 'x') instanceof Error);
});
