// A kernel's Jupyter clients: their websockets (one per session: a newer socket of a session
// replaces the older, as in jupyter_server), who asked what (replies go back to their asker),
// and what is kept for sessions whose socket is away, as jupyter_server's own kernels keep it:
// iopub while nobody listens, and the replies to requests whose socket closed before they came.
import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import { ByteQueue } from './byte-queue.js';
import { type SessionLimits, SLOW_CONSUMER_CLOSE } from './session-limits.js';

/** `replaced`: a newer socket of the same session took its place (its close is not the session leaving). */
export interface Client { ws: WebSocket; sessionId: string; replaced?: boolean }
/** Who sent a request, and on which channel (statuses of control requests do not say what the shell does). */
interface Asker { client: Client; channel: string }

const ROUTE_LIMIT = 5000;
/** Close code for a socket replaced by a newer one of the same session (jupyter_server closes the stale one too). */
export const REPLACED_CLOSE = 1000;

export class SessionClients {
  private readonly clients = new Set<Client>();
  /**
   * iopub kept while no client is attached, for the sessions that come back; `session`: a reply
   * kept for that session alone. Byte-capped, oldest dropped first.
   */
  private readonly replay: ByteQueue<{ seq: number; text: string; session?: string }>;
  private seq = 0;
  /** Last iopub sequence number each disconnected session received. */
  private readonly sessionSeen = new Map<string, number>();
  /** msg_id of a request → the client that sent it, so replies go to their asker. */
  private readonly askers = new Map<string, Asker>();

  constructor(private readonly kernelId: string, private readonly log: FastifyBaseLogger, private readonly limits: SessionLimits) {
    this.replay = new ByteQueue(limits.replayBytes);
  }

  get size(): number { return this.clients.size; }
  /** Bytes kept for sessions to come back to (≤ `replayBytes`). */
  get replayBytes(): number { return this.replay.bytes; }

  /** Forgets what was kept (a pool's kernel handed to a user sees nothing of its time in the pool). */
  clearReplay(): void { this.replay.clear(); }

  /**
   * A client's socket: it gets what was kept for its session, or everything kept when
   * `keptForAnyone` (a kernel found again after a gateway restart, its first client).
   */
  add(ws: WebSocket, sessionId: string, keptForAnyone: boolean): Client {
    const client: Client = { ws, sessionId };
    this.replaceStale(sessionId);
    const seen = this.sessionSeen.get(sessionId);
    const replayAll = keptForAnyone && this.clients.size === 0 && this.sessionSeen.size === 0 && seen === undefined;
    this.clients.add(client);
    if (seen !== undefined || replayAll) {
      this.sessionSeen.delete(sessionId);
      for (const entry of this.replay) {
        if (entry.seq > (seen ?? 0) && (entry.session === undefined || entry.session === sessionId)) this.send(client, entry.text);
      }
    }
    // Nobody else is away: what was kept has been delivered (or was for no one), and nothing is kept while a client listens.
    if (this.sessionSeen.size === 0) this.replay.clear();
    ws.on('close', (code) => {
      this.log.info({ kernel: this.kernelId, session: sessionId, code }, 'client websocket closed');
      // A replaced socket's session is still here, on its newer socket: nothing is kept for it.
      if (client.replaced) return;
      this.clients.delete(client);
      this.sessionSeen.set(sessionId, this.seq);
      if (this.sessionSeen.size > 1000) this.sessionSeen.delete(this.sessionSeen.keys().next().value!);
    });
    ws.on('error', (error) => this.log.info({ kernel: this.kernelId, err: error }, 'client websocket error'));
    return client;
  }

  /**
   * A second socket of the same session replaces the first, as in jupyter_server: the first is
   * most likely a connection the client has lost and our side has not noticed yet, and two sockets
   * of one session would each get every reply meant for it.
   */
  private replaceStale(sessionId: string): void {
    if (sessionId === '') return; // no session named: nothing to match
    for (const stale of this.clients) {
      if (stale.sessionId !== sessionId) continue;
      this.log.warn({ kernel: this.kernelId, session: sessionId }, 'replaced a stale websocket of the same session');
      stale.replaced = true;
      this.clients.delete(stale);
      stale.ws.close(REPLACED_CLOSE, 'replaced by a newer connection of the same session');
    }
  }

  /** A request `client` sent on `channel`: its replies go back to it. */
  noteRequest(msgId: string, client: Client, channel: string): void {
    this.askers.set(msgId, { client, channel });
    if (this.askers.size > ROUTE_LIMIT) this.askers.delete(this.askers.keys().next().value!);
  }

  /** The channel a request was sent on (undefined: not a client's, or forgotten). */
  channelOf(msgId: string): string | undefined {
    return this.askers.get(msgId)?.channel;
  }

  send(client: Client, text: string): void {
    const ws = client.ws;
    if (ws.readyState !== ws.OPEN) return;
    // A client that reads slower than its kernel writes: closed before its queue passes the cap
    // (it reconnects and gets what was kept for its session), never buffered without bound.
    if (ws.bufferedAmount + text.length > this.limits.sendBufferBytes) return this.closeSlow(client);
    ws.send(text); // a string: always a text frame
  }

  private closeSlow(client: Client): void {
    const ws = client.ws;
    this.log.warn({ kernel: this.kernelId, session: client.sessionId, bufferedBytes: ws.bufferedAmount }, 'closed a client websocket that reads too slowly');
    // Nothing more is queued for it (send sends only while OPEN); the close frame waits behind
    // what it did not read, and ws destroys the socket if no answer comes (its closeTimeout).
    ws.close(SLOW_CONSUMER_CLOSE, `slow consumer: over ${Math.round(this.limits.sendBufferBytes / 1048576)} MiB unsent`);
  }

  /** To every client; iopub is also kept for the sessions that are away. */
  broadcast(text: string, iopub: boolean): void {
    if (iopub) this.remember(text);
    for (const client of this.clients) this.send(client, text);
  }

  /** A reply to the request `parent`: to its asker, wherever its session is now. */
  reply(parent: string, text: string): void {
    const asker = this.askers.get(parent)?.client;
    // Asked before a gateway restart (no route known): whoever is connected.
    if (!asker) return this.broadcast(text, false);
    if (this.clients.has(asker)) return this.send(asker, text);
    // The asker's socket closed meanwhile: its session's new socket gets the reply, now or when
    // it reconnects (else the notebook would wait for it forever, its cell showing [*]).
    const again = [...this.clients].find((c) => c.sessionId === asker.sessionId);
    if (again) return this.send(again, text);
    this.remember(text, asker.sessionId);
  }

  /** iopub is kept only while nobody listens (a reply for a session, whenever its socket is away). */
  private remember(text: string, session?: string): void {
    ++this.seq;
    if (session === undefined && this.clients.size > 0) return;
    this.replay.keep({ seq: this.seq, text, session });
  }

  closeAll(code: number, reason: string): void {
    for (const client of this.clients) client.ws.close(code, reason);
  }
}
