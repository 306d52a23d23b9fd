// One kernel session's byte caps and protocol, over real websockets, without a kernel: the
// Jupyter side is a websocket client, the kernel side a websocket peer that speaks the
// launcher's protocol (gateway/kernel/launcher.py: `>routing\n` + the message). Each probe of
// issue 18 ends on a structural property: bytes held ≤ the cap, the slow socket closed with
// 1008, output dropped and the user told. Figures (peak RSS) are in bench/gateway/memory-probes.ts.
import t from 'tap';
import type { SessionLimits } from '../../gateway/session-limits.js';
import { type Frame, kernelFrame, request, scriptedSession, settled } from './scripted-kernel.js';

const MiB = 1024 * 1024;

async function setup(tt: { teardown(fn: () => unknown): void }, limits: Partial<SessionLimits> = {}) {
  const { session, launcher, client } = await scriptedSession(tt, {}, undefined, limits);
  return { session, launcher: await launcher(null), client };
}

t.test('held requests while the kernel starts stop at the byte cap; the rest are refused with an error reply', async (t) => {
  const { session, launcher, client } = await setup(t, { heldBytes: 4 * MiB });
  const c = await client('a');
  const sent = Array.from({ length: 20 }, (_, i) => request('execute_request', { code: `# ${i}\n${'x'.repeat(MiB)}` }));
  for (const r of sent) c.ws.send(r.text);
  await c.until(() => c.json().filter((m) => m.header.msg_type === 'execute_reply').length === 17);
  t.ok(session.heldBytes <= 4 * MiB && session.heldBytes > 3 * MiB, `held ${session.heldBytes} bytes, cap ${4 * MiB}`);
  const refused = c.json().filter((m) => m.header.msg_type === 'execute_reply');
  t.equal(refused.length, 17, 'three 1 MiB requests fit under 4 MiB, the other 17 are refused');
  t.ok(refused.every((m) => m.content.status === 'error' && m.content.ename === 'GatewayLimit'), 'as errors with a reason');
  t.same(refused.map((m) => m.parent_header.msg_id), sent.slice(3).map((r) => r.msgId), 'each parented to its own request');
  const notice = c.json().find((m) => m.header.msg_type === 'stream' && m.parent_header.msg_id === sent[3].msgId);
  t.match(notice?.content.text, /still starting/, 'the cell shows why');
  launcher.ws.send(JSON.stringify({ op: 'spark', ok: true }));
  await launcher.until(() => launcher.frames.length >= 4);
  t.same(launcher.frames.slice(1).map((f) => (JSON.parse(f) as Frame).header.msg_id), sent.slice(0, 3).map((r) => r.msgId), 'the held ones reach the kernel, in order');
  t.equal(session.heldBytes, 0, 'and the hold is empty');
});

t.test('iopub is kept only while no client is attached, up to the byte cap, newest first', async (t) => {
  // Data rate off: 30 MiB of stream output would trip it (its own test is below).
  const { session, launcher, client } = await setup(t, { replayBytes: 4 * MiB, iopubDataRate: 0 });
  const a = await client('a');
  launcher.ws.send(JSON.stringify({ op: 'spark', ok: true }));
  await a.until(() => a.json().some((m) => m.content.execution_state === 'idle'));
  for (let i = 0; i < 20; i++) launcher.ws.send(kernelFrame('iopub', 'stream', 'p', { name: 'stdout', text: `${i} ${'y'.repeat(MiB / 2)}` }));
  await a.until(() => a.json().filter((m) => m.header.msg_type === 'stream').length === 20);
  t.equal(session.replayBytes, 0, 'nothing kept while a client listens');
  a.ws.close();
  await a.closed;
  await settled(() => session.connections === 0);
  for (let i = 0; i < 40; i++) launcher.ws.send(kernelFrame('iopub', 'stream', 'p', { name: 'stdout', text: `away ${i} ${'z'.repeat(MiB / 2)}` }));
  // A marker after them (frames are handled in order): once the kernel shows busy, all 40 went by.
  launcher.ws.send(kernelFrame('iopub', 'status', 'p', { execution_state: 'busy' }, 'busy'));
  await settled(() => session.executionState === 'busy');
  t.ok(session.replayBytes <= 4 * MiB && session.replayBytes > 3 * MiB, `kept ${session.replayBytes} bytes, cap ${4 * MiB}`);
  const again = await client('a');
  await again.until(() => again.json().some((m) => m.content.execution_state === 'busy'));
  const replayed = again.json().filter((m) => m.header.msg_type === 'stream').map((m) => (m.content.text as string).split(' ').slice(0, 2).join(' '));
  t.equal(replayed.length, 7, 'the 0.5 MiB messages that fit in 4 MiB');
  t.same(replayed, Array.from({ length: 40 }, (_, i) => `away ${i}`).slice(-7), 'the newest, in order');
  t.equal(session.replayBytes, 0, 'delivered, then not kept while the client listens');
});

t.test('a client that does not read is closed with 1008 before its queue passes the cap', async (t) => {
  const { session, launcher, client } = await setup(t, { sendBufferBytes: 4 * MiB });
  const slow = await client('slow');
  launcher.ws.send(JSON.stringify({ op: 'spark', ok: true }));
  await slow.until(() => slow.json().some((m) => m.content.execution_state === 'idle'));
  const socket = (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
  socket.pause();
  const frames = 64;
  for (let i = 0; i < frames; i++) launcher.ws.send(kernelFrame('iopub', 'display_data', 'p', { data: { 'text/plain': 'w'.repeat(MiB) } }));
  // A marker after them (frames are handled in order): once the kernel shows busy, the gateway has sent (or not) all 64.
  launcher.ws.send(kernelFrame('iopub', 'status', 'p', { execution_state: 'busy' }, 'busy'));
  await settled(() => session.executionState === 'busy');
  socket.resume();
  t.equal(await slow.closed, 1008, 'closed as a slow consumer');
  const got = slow.json().filter((m) => m.header.msg_type === 'display_data').length;
  t.ok(got < frames, `it got ${got} of ${frames}: the rest was never queued for it`);
});

t.test("iopub over jupyter_server's message rate is dropped with one notice in the cell; idle starts afresh", async (t) => {
  // 10 messages per hour-long window: the 11th of a burst is over, whatever the machine's speed.
  const { session, launcher, client } = await setup(t, { iopubMsgRate: 10 / 3600, rateWindowSeconds: 3600 });
  launcher.ws.send(JSON.stringify({ op: 'spark', ok: true }));
  const c = await client('a');
  for (let i = 0; i < 50; i++) launcher.ws.send(kernelFrame('iopub', 'stream', 'cell-1', { name: 'stdout', text: `${i}\n` }));
  launcher.ws.send(kernelFrame('iopub', 'status', 'cell-1', { execution_state: 'idle' }, 'idle'));
  launcher.ws.send(kernelFrame('iopub', 'stream', 'cell-2', { name: 'stdout', text: 'after idle\n' }));
  await c.until(() => c.json().some((m) => m.content.text === 'after idle\n'));
  const cell1 = c.json().filter((m) => m.parent_header.msg_id === 'cell-1' && m.header.msg_type === 'stream');
  const out = cell1.filter((m) => m.content.name === 'stdout').map((m) => m.content.text as string);
  t.same(out, Array.from({ length: 10 }, (_, i) => `${i}\n`), 'the first 10 pass, the rest are dropped');
  const notices = cell1.filter((m) => m.content.name === 'stderr');
  t.equal(notices.length, 1, 'one notice');
  t.match(notices[0].content.text, /IOPub message rate exceeded/);
  t.equal(session.droppedIopub, 40);
  t.ok(c.json().some((m) => m.parent_header.msg_id === 'cell-1' && m.content.execution_state === 'idle'), 'status is never dropped');
});

t.test('a frame without channel is a shell request; the gateway\'s statuses are parented', async (t) => {
  const { launcher, client } = await setup(t);
  const c = await client('a');
  await c.until(() => c.json().length > 0);
  const busy = c.json()[0];
  t.equal(busy.content.execution_state, 'busy', 'busy while the driver starts');
  t.equal(busy.parent_header.msg_type, 'kernel_info_request', 'parented like Kernel Gateway\'s: to a kernel_info_request');
  t.type(busy.parent_header.msg_id, 'string');
  launcher.ws.send(JSON.stringify({ op: 'spark', ok: true }));
  await c.until(() => c.json().some((m) => m.content.execution_state === 'idle'));
  const bare = request('kernel_info_request', {}, {});
  c.ws.send(bare.text);
  await launcher.until(() => launcher.frames.some((f) => f.includes(bare.msgId)));
  const passed = JSON.parse(launcher.frames.find((f) => f.includes(bare.msgId))!) as Frame;
  t.equal(passed.channel, 'shell', 'passed to the kernel on shell');
  t.equal(passed.header.msg_id, bare.msgId, 'the message itself unchanged');
});

t.test('a restart that the kernel does not survive says so', async (t) => {
  const { session, launcher } = await setup(t);
  launcher.ws.send(JSON.stringify({ op: 'spark', ok: true }));
  await settled(() => session.sparkReady);
  const restarting = session.restart();
  session.markDead('application gone');
  t.equal(await restarting, false, 'false: the route answers 404');
  t.equal(session.executionState, 'dead', 'and the kernel stays dead');
});
