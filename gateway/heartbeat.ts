// Pings every websocket of the gateway (the Jupyter clients' and the launchers') and closes one
// whose peer stopped answering, as jupyter_server's websockets do: a peer gone without a close (a
// laptop's lid shut, a NAT that forgot the connection) would otherwise hold its socket, its slot
// and, for a launcher, its kernel for good. Proxies also keep a connection that carries pings.
import type { FastifyBaseLogger } from 'fastify';
import { type Clock, systemClock, type TimerHandle } from '../lib/clock.js';

/** What the heartbeat needs of a websocket (ws's WebSocket has it). */
export interface PingableSocket {
  ping(): void;
  terminate(): void;
  on(event: 'pong' | 'close', listener: () => void): unknown;
}

interface Watched { kind: string; lastPing: number; lastPong: number }

export class Heartbeat {
  private readonly sockets = new Map<PingableSocket, Watched>();
  private timer: TimerHandle | undefined;

  constructor(
    private readonly intervalMs: number,
    private readonly timeoutMs: number,
    private readonly log: FastifyBaseLogger,
    private readonly clock: Clock = systemClock,
  ) {}

  get watching(): number { return this.sockets.size; }

  start(): void {
    if (this.intervalMs > 0 && this.timer === undefined) this.timer = this.clock.setInterval(() => this.beat(), this.intervalMs);
  }

  stop(): void {
    if (this.timer !== undefined) this.clock.clearInterval(this.timer);
    this.timer = undefined;
    this.sockets.clear();
  }

  /** Watches `ws` until it closes; `kind` names it in the log (`client`, `launcher`). */
  watch(ws: PingableSocket, kind: string): void {
    if (this.intervalMs <= 0) return;
    const now = this.clock.now();
    const watched: Watched = { kind, lastPing: now, lastPong: now };
    this.sockets.set(ws, watched);
    ws.on('pong', () => { watched.lastPong = this.clock.now(); });
    ws.on('close', () => this.sockets.delete(ws));
  }

  /** One round: a socket silent past the timeout is closed, every other one pinged. */
  beat(): void {
    const now = this.clock.now();
    for (const [ws, watched] of this.sockets) {
      // Only a ping sent recently can be missed: after the process was suspended (a laptop asleep),
      // the first round pings again instead of closing everything.
      const pingedRecently = now - watched.lastPing < 2 * this.intervalMs;
      if (pingedRecently && now - watched.lastPong > this.timeoutMs) {
        this.log.warn({ kind: watched.kind, silentMs: now - watched.lastPong }, 'closed a websocket whose peer stopped answering pings');
        this.sockets.delete(ws);
        ws.terminate();
        continue;
      }
      try {
        ws.ping();
      } catch { /* closing already: its close event removes it */ }
      watched.lastPing = now;
    }
  }
}
