// One KernelSession over real websockets without a kernel: the Jupyter side is a websocket
// client, the kernel side a websocket peer that speaks the launcher's protocol
// (gateway/kernel/launcher.py: JSON ops, and kernel messages as `>routing\n` + the message).
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import WebSocket, { WebSocketServer } from 'ws';
import type { Clock } from '../../lib/clock.js';
import { KernelSession } from '../../gateway/kernel-session.js';
import { DEFAULT_LIFECYCLE, type LifecycleLimits } from '../../gateway/lifecycle-limits.js';
import { DEFAULT_LIMITS, type SessionLimits } from '../../gateway/session-limits.js';

export const silentLog = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;

/** A launcher socket as the session uses it: it records what is sent and is fed frames by hand. */
export class FakeLauncher extends EventEmitter {
  readonly sent: string[] = [];
  readonly readyState = 1;
  readonly OPEN = 1;
  send(text: string): void { this.sent.push(text); }
  close(): void { this.emit('close'); }
  say(message: object): void { this.emit('message', Buffer.from(JSON.stringify(message))); }
}

export interface Frame { channel?: string; op?: string; header: { msg_id: string; msg_type: string; session?: string }; parent_header: { msg_id?: string; msg_type?: string }; content: any }

/** A websocket that records what it receives (JSON frames parsed once), and wakes waiters. */
export class Peer {
  readonly frames: string[] = [];
  private readonly parsed: Frame[] = [];
  closed: Promise<number>;
  private waiters: Array<() => void> = [];
  constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const text = data.toString();
      this.frames.push(text);
      if (text.startsWith('{')) this.parsed.push(JSON.parse(text) as Frame);
      for (const w of this.waiters.splice(0)) w();
    });
    this.closed = new Promise((ok) => ws.once('close', (code) => ok(code)));
  }
  json(): Frame[] { return this.parsed; }
  async until(match: () => boolean): Promise<void> {
    while (!match()) await new Promise<void>((ok) => this.waiters.push(ok));
  }
  statuses(): string[] { return this.parsed.filter((m) => m.header?.msg_type === 'status').map((m) => m.content.execution_state as string); }
}

/** Waits for a state of the session that no socket event announces (checked after each turn of the loop). */
/**
 * Waits, turn by turn of the event loop, until `match` holds. Bounded (a minute of real time, far
 * above any turn count these need): a regression fails its test instead of spinning a core for good.
 */
export async function settled(match: () => boolean): Promise<void> {
  const giveUp = Date.now() + 60_000;
  while (!match()) {
    if (Date.now() > giveUp) throw new Error(`settled: never reached ${match.toString()}`);
    await new Promise((ok) => setImmediate(ok));
  }
}

/** Frames up to this size pass both ends (the session's own caps are what the tests exercise). */
const MAX_PAYLOAD = 64 * 1024 * 1024;

export async function scriptedSession(tt: { teardown(fn: () => unknown): void }, lifecycle: Partial<LifecycleLimits> = {}, clock?: Clock, limits: Partial<SessionLimits> = {}) {
  const session = new KernelSession(randomUUID(), 'default', silentLog, false, undefined, { ...DEFAULT_LIMITS, ...limits }, { ...DEFAULT_LIFECYCLE, ...lifecycle }, clock);
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', maxPayload: MAX_PAYLOAD });
  await new Promise((ok) => wss.once('listening', ok));
  wss.on('connection', (ws, request) => {
    const url = new URL(request.url ?? '/', 'http://x');
    // `?attempt=N`: the launcher of a new attempt of the driver, as channels.ts says it.
    const attempt = url.searchParams.get('attempt');
    if (url.pathname === '/launcher') session.setLauncher(ws, 'secret', attempt === null ? undefined : Number(attempt));
    else session.addClient(ws, url.searchParams.get('session_id') ?? '');
  });
  tt.teardown(() => { for (const ws of wss.clients) ws.terminate(); wss.close(); });
  const base = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
  const open = async (path: string) => {
    const ws = new WebSocket(`${base}${path}`, { maxPayload: MAX_PAYLOAD });
    const peer = new Peer(ws);
    await new Promise((ok, fail) => { ws.once('open', ok); ws.once('error', fail); });
    tt.teardown(() => ws.terminate());
    return peer;
  };
  /** A launcher connected; `hello` null: it says nothing after the session's reconnect secret; `attempt`: a new attempt's. */
  const launcher = async (hello: Record<string, unknown> | null = { op: 'hello', busy: false, claimed: false, confirms: true }, attempt?: number) => {
    const peer = await open(attempt === undefined ? '/launcher' : `/launcher?attempt=${attempt}`);
    await peer.until(() => peer.frames.length > 0); // the reconnect secret: the session has it
    if (hello) peer.ws.send(JSON.stringify(hello));
    return peer;
  };
  return { session, launcher, client: (sessionId: string) => open(`/channels?session_id=${sessionId}`) };
}

export function request(msgType: string, content: object, extra: Record<string, unknown> = { channel: 'shell' }) {
  const msgId = randomUUID();
  return { msgId, text: JSON.stringify({ ...extra, header: { msg_id: msgId, msg_type: msgType, session: 's', username: 'u', version: '5.3', date: '' }, parent_header: {}, metadata: {}, content }) };
}

/** A kernel message as the launcher frames it. */
export function kernelFrame(channel: string, msgType: string, parent: string, content: object, state: string | null = null): string {
  const body = JSON.stringify({ header: { msg_id: randomUUID(), msg_type: msgType, session: 'k' }, parent_header: parent ? { msg_id: parent } : {}, metadata: {}, content, buffers: [], channel });
  return `>${JSON.stringify({ channel, msg_type: msgType, parent, state, buffers: 0 })}\n${body}`;
}
