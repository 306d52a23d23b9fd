// A kernel's launcher as the gateway holds it: the websocket its driver dialled out on (one at a
// time), what it says (kernel messages, its hello and Spark's state, answers to what it was
// asked), and a ping for a peer gone without a close.
import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import type { Clock } from '../lib/clock.js';
import { type Routing, splitKernelFrame } from './messages.js';

type Answer = Record<string, unknown> | undefined;

/** Where what the launcher says goes (answers to `ask` are resolved here). */
export interface LauncherListener {
  /** A kernel message, with what the launcher says of it (the message itself left unparsed). */
  kernel(routing: Routing, body: string): void;
  /** Its first words on each connection. */
  hello(message: Record<string, unknown>): void;
  /** Spark started, failed, or is off. */
  spark(message: { ok: boolean; error?: string; disabled?: boolean }): void;
}

export class LauncherLink {
  private ws: WebSocket | undefined;
  /** A ping to the launcher is under way (probe). */
  private probing = false;
  /** Answers awaited from the launcher, by the `op` it answers with (ask). */
  private readonly awaited = new Map<string, Array<(answer: Answer) => void>>();

  constructor(private readonly kernelId: string, private readonly log: FastifyBaseLogger, private readonly clock: Clock) {}

  get connected(): boolean { return this.ws !== undefined; }

  /**
   * Pings the launcher's socket and drops it when no pong comes within `ms`: a peer gone without
   * a close (a lost network) would otherwise keep its relaunched launcher refused for good.
   */
  probe(ms: number): void {
    const ws = this.ws;
    if (!ws || this.probing) return;
    this.probing = true;
    const timer = setTimeout(() => {
      this.probing = false;
      if (this.ws !== ws) return;
      this.log.warn({ kernel: this.kernelId }, 'the launcher did not answer a ping: its connection is dropped');
      ws.terminate();
    }, ms);
    ws.once('pong', () => { clearTimeout(timer); this.probing = false; });
    ws.ping();
  }

  /** Takes `ws` as the launcher's socket (a previous one is closed) and hands it its reconnect secret. */
  attach(ws: WebSocket, secret: string, listener: LauncherListener): void {
    const previous = this.ws;
    this.ws = ws;
    if (previous) {
      previous.close(1000, 'replaced by a new launcher connection');
      // What the previous one was asked will not be answered on this socket.
      this.answerAll(undefined);
    }
    ws.send(JSON.stringify({ op: 'secret', value: secret }));
    ws.on('message', (data: Buffer) => this.fromLauncher(data, listener));
    ws.on('close', () => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      this.log.info({ kernel: this.kernelId }, 'launcher disconnected');
      // What it was asked and has not answered will not be answered on another socket.
      this.answerAll(undefined);
    });
    ws.on('error', (error) => this.log.info({ kernel: this.kernelId, err: error }, 'launcher websocket error'));
  }

  private fromLauncher(data: Buffer, listener: LauncherListener): void {
    const text = data.toString('utf8');
    const kernel = splitKernelFrame(text);
    if (kernel) return listener.kernel(kernel.routing, kernel.body);
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(text) as Record<string, unknown>;
    } catch {
      this.log.warn({ kernel: this.kernelId }, 'undecodable frame from the launcher');
      return;
    }
    switch (message.op) {
      case 'hello': return listener.hello(message);
      case 'spark': return listener.spark(message as unknown as { ok: boolean; error?: string });
      case 'claimed': case 'restarted': case 'interrupted': return this.answered(message.op, message);
      default: this.log.warn({ kernel: this.kernelId, op: message.op }, 'unknown launcher message');
    }
  }

  /** Sends when a launcher is connected; false when none is. */
  send(text: string): boolean {
    if (!this.ws) return false;
    this.ws.send(text);
    return true;
  }

  /**
   * Sends the launcher `request` and resolves with its answer (the message whose `op` is
   * `answer`), or undefined when none came within `ms` or the launcher went away meanwhile.
   */
  ask(request: Record<string, unknown>, answer: string, ms: number): Promise<Answer> {
    const launcher = this.ws;
    if (!launcher) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => {
        const waiters = this.awaited.get(answer) ?? [];
        const left = waiters.filter((w) => w !== done);
        if (left.length) this.awaited.set(answer, left); else this.awaited.delete(answer);
        resolve(undefined);
      }, ms);
      const done = (message: Answer) => { this.clock.clearTimeout(timer); resolve(message); };
      this.awaited.set(answer, [...(this.awaited.get(answer) ?? []), done]);
      launcher.send(JSON.stringify(request));
    });
  }

  /** The launcher answered with `message` (its `op` says what it answers). */
  private answered(op: string, message: Record<string, unknown>): void {
    const waiters = this.awaited.get(op) ?? [];
    this.awaited.delete(op);
    for (const done of waiters) done(message);
  }

  private answerAll(answer: undefined): void {
    const waiting = [...this.awaited.values()].flat();
    this.awaited.clear();
    for (const done of waiting) done(answer);
  }

  /** Closes the launcher's socket: nothing it was asked is answered any more. */
  close(reason: string): void {
    this.ws?.close(1000, reason);
    this.ws = undefined;
    this.answerAll(undefined);
  }
}
