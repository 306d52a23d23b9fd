// One kernel as the gateway sees it: the application running it, the launcher's websocket
// (dialled out from the driver), the Jupyter clients' websockets, the requests held until
// Spark is ready, and a replay buffer per session: iopub output, and the replies to requests
// whose socket closed before they came (jupyter_server's own kernels buffer both).
import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import { ByteQueue } from './byte-queue.js';
import { type Clock, systemClock } from '../lib/clock.js';
import { GatewayError } from './gateway-error.js';
import { IopubRateLimiter, rateNotice } from './iopub-rate-limit.js';
import { countsAsActivity, type JupyterMessage, parseClientFrame, refusedReply, type Routing, splitKernelFrame, statusMessage, stderrMessage } from './messages.js';
import { DEFAULT_LIFECYCLE, type LifecycleLimits } from './lifecycle-limits.js';
import { DEFAULT_LIMITS, type SessionLimits, SLOW_CONSUMER_CLOSE } from './session-limits.js';

export type ExecutionState = 'starting' | 'idle' | 'busy' | 'restarting' | 'dead';
/**
 * Whether a warm pool's kernel was handed out. `unknown`: found again after a gateway restart,
 * until its launcher (which keeps the claim) says so in its hello.
 */
export type ClaimState = 'unclaimed' | 'claimed' | 'unknown';

/** `replaced`: a newer socket of the same session took its place (its close is not the session leaving). */
interface Client { ws: WebSocket; sessionId: string; replaced?: boolean }
/** Who sent a request, and on which channel (statuses of control requests do not say what the shell does). */
interface Asker { client: Client; channel: string }

const ROUTE_LIMIT = 5000;
const CLAIM_TIMEOUT_MS = 3000;
/** The launcher's own requests to the kernel (its restart's reset): their statuses are not the user's work. */
const LAUNCHER_REQUEST_PREFIX = 'ss-restart-';
/** Close code for a socket replaced by a newer one of the same session (jupyter_server closes the stale one too). */
export const REPLACED_CLOSE = 1000;

export interface KernelModel {
  id: string;
  name: string;
  last_activity: string;
  execution_state: ExecutionState;
  connections: number;
}

export class KernelSession {
  appName = '';
  executionState: ExecutionState = 'starting';
  /** When the kernel was last busy or claimed, on the session's clock (idle culling reads it). */
  lastActivity: Date;
  /** Set while the application waits for resources, so the notebook learns why nothing happens. */
  pendingNoticeSent = false;
  private readonly clients = new Set<Client>();
  private launcher: WebSocket | undefined;
  private ready = false;
  /** Client requests (their text as received) held until Spark is ready, up to a byte cap. */
  private readonly held: ByteQueue<{ text: string }>;
  /**
   * iopub kept while no client is attached (jupyter_server's buffering), for the sessions that
   * come back; `session`: a reply kept for that session alone. Byte-capped, oldest dropped first.
   */
  private readonly replay: ByteQueue<{ seq: number; text: string; session?: string }>;
  private readonly rate: IopubRateLimiter;
  /** iopub messages the rate limit dropped (a debug counter for tests and logs). */
  droppedIopub = 0;
  private seq = 0;
  /** Last iopub sequence number each disconnected session received. */
  private readonly sessionSeen = new Map<string, number>();
  /** msg_id of a request → the client that sent it, so replies go to their asker. */
  private readonly askers = new Map<string, Asker>();
  /** Answers awaited from the launcher, by the `op` it answers with (ask). */
  private readonly awaited = new Map<string, Array<(answer: Record<string, unknown> | undefined) => void>>();
  /** What the kernel itself last said on iopub (the gateway's own `restarting` aside). */
  private kernelState: 'busy' | 'idle' = 'idle';
  /** The launcher confirms interrupts and says the kernel's state after a restart (launchers before this did not). */
  private launcherConfirms = false;
  private buffersWarned = false;
  private sparkFailed = false;
  /** A claim sent, not yet confirmed: no second request may take this kernel meanwhile. */
  private claiming = false;
  /** A ping to the launcher is under way (probeLauncher). */
  private probing = false;
  /** Ordinary kernels are someone's from the start; a pool's are not until claimed. */
  claim: ClaimState;
  /** The id of the key the kernel belongs to (its starter, a pool kernel's claimer); undefined: admins only (kernel-owners.ts). */
  owner: string | undefined;
  /** A pool's kernel: the fingerprint of the template config it was started from. */
  poolVersion: string | undefined;
  /** Called when the claim becomes known or Spark's state changes (the warm pool listens). */
  onChange: () => void = () => {};

  constructor(
    readonly id: string,
    readonly specName: string,
    private readonly log: FastifyBaseLogger,
    /** Found again after a gateway restart: its first client gets what the launcher kept meanwhile. */
    private adopted = false,
    /** The template whose warm pool started this kernel; undefined for a kernel started on request. */
    readonly pool?: string,
    private readonly limits: SessionLimits = DEFAULT_LIMITS,
    private readonly lifecycle: LifecycleLimits = DEFAULT_LIFECYCLE,
    private readonly clock: Clock = systemClock,
  ) {
    this.lastActivity = new Date(clock.now());
    this.claim = pool === undefined ? 'claimed' : adopted ? 'unknown' : 'unclaimed';
    this.held = new ByteQueue(limits.heldBytes);
    this.replay = new ByteQueue(limits.replayBytes);
    this.rate = new IopubRateLimiter(limits);
  }

  /** Bytes of client requests held until Spark is ready (≤ `heldBytes`). */
  get heldBytes(): number { return this.held.bytes; }
  /** Bytes kept for sessions to come back to (≤ `replayBytes`). */
  get replayBytes(): number { return this.replay.bytes; }

  /** A pool's kernel nobody has: not listed, not culled, not reachable by id. */
  get unclaimed(): boolean { return this.claim === 'unclaimed'; }

  /** Can be handed out now: launcher connected, claim known to be free, Spark up. */
  get claimable(): boolean {
    return this.claim === 'unclaimed' && !this.claiming && this.launcher !== undefined && this.ready && !this.sparkFailed && this.executionState === 'idle';
  }

  /** The launcher has reported Spark started (or failed, or off): the kernel takes requests. */
  get launched(): boolean { return this.ready; }
  get sparkReady(): boolean { return this.ready && !this.sparkFailed; }
  get sparkBroken(): boolean { return this.ready && this.sparkFailed; }

  /**
   * Hands a pool's kernel to a user: the launcher records the claim (and says it in every hello,
   * so a restarted gateway knows) before the claim counts. False when the launcher did not confirm.
   */
  async claimIt(owner?: string): Promise<boolean> {
    if (!this.claimable) return false;
    this.claiming = true;
    // The launcher keeps the claimer too and says it in every hello (a restarted gateway's owner).
    const ok = (await this.ask({ op: 'claim', owner }, 'claimed', CLAIM_TIMEOUT_MS)) !== undefined;
    this.claiming = false;
    // Unconfirmed (the launcher gone or too slow): it stays in the pool; a later claim is sent again.
    if (!ok || this.claim !== 'unclaimed') return false;
    // The user sees the kernel from now on: nothing from its time in the pool.
    this.replay.clear();
    this.adopted = false;
    this.owner = owner;
    this.lastActivity = new Date(this.clock.now());
    this.markClaimed();
    return true;
  }

  private markClaimed(): void {
    this.claim = 'claimed';
    this.onChange();
  }

  model(): KernelModel {
    return {
      id: this.id, name: this.specName, last_activity: this.lastActivity.toISOString(),
      execution_state: this.executionState, connections: this.clients.size,
    };
  }

  get connections(): number { return this.clients.size; }

  // ---- Jupyter clients -------------------------------------------------------------------

  addClient(ws: WebSocket, sessionId: string): void {
    const client: Client = { ws, sessionId };
    this.replaceStale(sessionId);
    const seen = this.sessionSeen.get(sessionId);
    const replayAll = this.adopted && this.clients.size === 0 && this.sessionSeen.size === 0 && seen === undefined;
    this.clients.add(client);
    if (seen !== undefined || replayAll) {
      this.sessionSeen.delete(sessionId);
      for (const entry of this.replay) {
        if (entry.seq > (seen ?? 0) && (entry.session === undefined || entry.session === sessionId)) this.sendText(client, entry.text);
      }
    }
    // Nobody else is away: what was kept has been delivered (or was for no one), and nothing is kept while a client listens.
    if (this.sessionSeen.size === 0) this.replay.clear();
    // Until the driver and its SparkContext are ready the kernel shows busy (SPEC), never silence.
    if (!this.ready) this.sendText(client, JSON.stringify(statusMessage('busy')));
    ws.on('message', (data: Buffer) => this.fromClient(client, data));
    ws.on('close', (code) => {
      this.log.info({ kernel: this.id, session: sessionId, code }, 'client websocket closed');
      // A replaced socket's session is still here, on its newer socket: nothing is kept for it.
      if (client.replaced) return;
      this.clients.delete(client);
      this.sessionSeen.set(sessionId, this.seq);
      if (this.sessionSeen.size > 1000) this.sessionSeen.delete(this.sessionSeen.keys().next().value!);
    });
    ws.on('error', (error) => this.log.info({ kernel: this.id, err: error }, 'client websocket error'));
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
      this.log.warn({ kernel: this.id, session: sessionId }, 'replaced a stale websocket of the same session');
      stale.replaced = true;
      this.clients.delete(stale);
      stale.ws.close(REPLACED_CLOSE, 'replaced by a newer connection of the same session');
    }
  }

  private fromClient(client: Client, data: Buffer): void {
    const frame = parseClientFrame(data.toString('utf8'));
    if (!frame) {
      this.log.warn({ kernel: this.id, bytes: data.length }, 'ignored a websocket frame that is not a Jupyter message');
      return;
    }
    const { message, text } = frame;
    if (countsAsActivity(message.header.msg_type)) this.lastActivity = new Date(this.clock.now());
    this.askers.set(message.header.msg_id, { client, channel: message.channel });
    if (this.askers.size > ROUTE_LIMIT) this.askers.delete(this.askers.keys().next().value!);
    // Passed on as received: checked above, never re-serialized (but for a channel written in).
    if (this.ready && this.launcher) this.launcher.send(text);
    else if (!this.held.hold({ text })) this.refuseHeld(client, message);
  }

  /** The hold is full while the driver starts: the request fails at once, with a reason, instead of growing memory. */
  private refuseHeld(client: Client, message: JupyterMessage): void {
    const why = `The kernel is still starting and ${Math.round(this.held.bytes / 1048576)} MiB of requests already wait for it `
      + `(at most ${Math.round(this.limits.heldBytes / 1048576)} MiB): this request was not taken. Send it again once the kernel is idle.`;
    this.log.warn({ kernel: this.id, heldBytes: this.held.bytes, msgType: message.header.msg_type }, 'refused a request: the hold while the kernel starts is full');
    this.sendText(client, JSON.stringify(stderrMessage(`${why}\n`, message.header)));
    const reply = typeof message.header.msg_type === 'string' ? refusedReply(message, why) : undefined;
    if (reply) this.sendText(client, JSON.stringify(reply));
  }

  private sendText(client: Client, text: string): void {
    const ws = client.ws;
    if (ws.readyState !== ws.OPEN) return;
    // A client that reads slower than its kernel writes: closed before its queue passes the cap
    // (it reconnects and gets what was kept for its session), never buffered without bound.
    if (ws.bufferedAmount + text.length > this.limits.sendBufferBytes) return this.closeSlow(client);
    ws.send(text); // a string: always a text frame
  }

  private closeSlow(client: Client): void {
    const ws = client.ws;
    this.log.warn({ kernel: this.id, session: client.sessionId, bufferedBytes: ws.bufferedAmount }, 'closed a client websocket that reads too slowly');
    // Nothing more is queued for it (sendText sends only while OPEN); the close frame waits behind
    // what it did not read, and ws destroys the socket if no answer comes (its closeTimeout).
    ws.close(SLOW_CONSUMER_CLOSE, `slow consumer: over ${Math.round(this.limits.sendBufferBytes / 1048576)} MiB unsent`);
  }

  /** A message the gateway writes itself (status, notices). */
  private broadcast(message: JupyterMessage): void {
    this.broadcastText(JSON.stringify(message), message.channel === 'iopub');
  }

  private broadcastText(text: string, iopub: boolean): void {
    if (iopub) this.remember(text);
    for (const client of this.clients) this.sendText(client, text);
  }

  /** iopub is kept only while nobody listens (a reply for a session, whenever its socket is away). */
  private remember(text: string, session?: string): void {
    ++this.seq;
    if (session === undefined && this.clients.size > 0) return;
    this.replay.keep({ seq: this.seq, text, session });
  }

  // ---- the launcher ----------------------------------------------------------------------

  get launcherConnected(): boolean { return this.launcher !== undefined; }

  /**
   * Pings the launcher's socket and drops it when no pong comes within `ms`: a peer gone without
   * a close (a lost network) would otherwise keep its relaunched launcher refused for good.
   */
  probeLauncher(ms = 10_000): void {
    const ws = this.launcher;
    if (!ws || this.probing) return;
    this.probing = true;
    const timer = setTimeout(() => {
      this.probing = false;
      if (this.launcher !== ws) return;
      this.log.warn({ kernel: this.id }, 'the launcher did not answer a ping: its connection is dropped');
      ws.terminate();
    }, ms);
    ws.once('pong', () => { clearTimeout(timer); this.probing = false; });
    ws.ping();
  }

  setLauncher(ws: WebSocket, secret: string): void {
    const previous = this.launcher;
    this.launcher = ws;
    previous?.close(1000, 'replaced by a new launcher connection');
    ws.send(JSON.stringify({ op: 'secret', value: secret }));
    ws.on('message', (data: Buffer) => this.fromLauncher(data));
    ws.on('close', () => {
      if (this.launcher !== ws) return;
      this.launcher = undefined;
      this.log.info({ kernel: this.id }, 'launcher disconnected');
      // What it was asked and has not answered will not be answered on another socket.
      this.answerAll(undefined);
    });
    ws.on('error', (error) => this.log.info({ kernel: this.id, err: error }, 'launcher websocket error'));
  }

  private fromLauncher(data: Buffer): void {
    const text = data.toString('utf8');
    const kernel = splitKernelFrame(text);
    if (kernel) return this.kernelMessage(kernel.routing, kernel.body);
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(text) as Record<string, unknown>;
    } catch {
      this.log.warn({ kernel: this.id }, 'undecodable frame from the launcher');
      return;
    }
    switch (message.op) {
      case 'hello': {
        this.launcherConfirms = message.confirms === true;
        if (this.claim === 'unknown' && typeof message.claimed === 'boolean') {
          if (message.claimed) {
            if (typeof message.owner === 'string') this.owner = message.owner;
            this.markClaimed();
          }
          else { this.claim = 'unclaimed'; this.onChange(); }
        }
        if (typeof message.busy === 'boolean') this.kernelState = message.busy ? 'busy' : 'idle';
        if (typeof message.busy === 'boolean' && this.ready) this.executionState = this.kernelState;
        const spark = message.spark as { ok: boolean; error?: string } | undefined;
        if (spark && !this.ready) this.becomeReady(spark, message.busy === true);
        else if (this.ready) this.flushHeld();
        return;
      }
      case 'spark': return this.becomeReady(message as unknown as { ok: boolean; error?: string }, false);
      case 'claimed': case 'restarted': case 'interrupted': {
        const waiters = this.awaited.get(message.op) ?? [];
        this.awaited.delete(message.op);
        for (const done of waiters) done(message);
        return;
      }
      default: this.log.warn({ kernel: this.id, op: message.op }, 'unknown launcher message');
    }
  }

  private becomeReady(spark: { ok: boolean; error?: string; disabled?: boolean }, busy: boolean): void {
    if (!spark.ok && !spark.disabled) this.broadcast(stderrMessage(`Spark failed to start: ${spark.error ?? 'unknown error'}\nsc, sqlContext and spark are not available in this kernel.\n`));
    this.ready = true;
    this.sparkFailed = !spark.ok && !spark.disabled;
    this.executionState = busy ? 'busy' : 'idle';
    if (!busy) this.broadcast(statusMessage('idle'));
    this.flushHeld();
    this.onChange();
  }

  private flushHeld(): void {
    while (this.launcher && this.held.length) this.launcher.send(this.held.shift()!.text);
  }

  /** A kernel message: routed by what the launcher said of it, passed on as the text it sent. */
  private kernelMessage(routing: Routing, body: string): void {
    let text = body;
    if (routing.buffers > 0) {
      // Binary frames kill jupyter_server's relay (FIELD-NOTES): buffers are dropped, said once per kernel.
      if (!this.buffersWarned) this.log.warn({ kernel: this.id, msgType: routing.msg_type }, 'dropped binary buffers of a kernel message (never sent to Jupyter)');
      this.buffersWarned = true;
      try {
        text = JSON.stringify({ ...(JSON.parse(body) as JupyterMessage), buffers: [] });
      } catch {
        this.log.warn({ kernel: this.id }, 'undecodable kernel message from the launcher');
        return;
      }
    }
    if (routing.state !== null) {
      // The kernel's own `starting`, parented to nothing, says it was born: the gateway said
      // `busy` and `idle` for it already (and Kernel Gateway relays none). Late, it would undo them.
      if (routing.state === 'starting' && routing.parent === '') return;
      this.noteKernelState(routing);
    } else if (countsAsActivity(routing.msg_type)) this.lastActivity = new Date(this.clock.now());
    if (routing.channel === 'iopub') {
      if (!this.admitIopub(routing, text)) return;
      return this.broadcastText(text, true);
    }
    const asker = this.askers.get(routing.parent)?.client;
    // Asked before a gateway restart (no route known): whoever is connected.
    if (!asker) return this.broadcastText(text, false);
    if (this.clients.has(asker)) return this.sendText(asker, text);
    // The asker's socket closed meanwhile: its session's new socket gets the reply, now or when
    // it reconnects (else the notebook would wait for it forever, its cell showing [*]).
    const again = [...this.clients].find((c) => c.sessionId === asker.sessionId);
    if (again) return this.sendText(again, text);
    this.remember(text, asker.sessionId);
  }


  /**
   * The kernel's state, from its statuses. Not from statuses of control requests: ipykernel
   * handles those on a thread beside the shell and says `idle` after them while a cell still runs.
   * Not from the launcher's own reset. The gateway's `restarting` and `dead` stay until it says.
   */
  private noteKernelState(routing: Routing): void {
    if (routing.state !== 'busy' && routing.state !== 'idle') return;
    if (routing.parent.startsWith(LAUNCHER_REQUEST_PREFIX) || this.askers.get(routing.parent)?.channel === 'control') return;
    this.kernelState = routing.state;
    if (this.executionState !== 'restarting' && this.executionState !== 'dead') this.executionState = routing.state;
  }

  /**
   * Sends the launcher `request` and resolves with its answer (the message whose `op` is
   * `answer`), or undefined when none came within `ms` or the launcher went away meanwhile.
   */
  private ask(request: Record<string, unknown>, answer: string, ms: number): Promise<Record<string, unknown> | undefined> {
    const launcher = this.launcher;
    if (!launcher) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => {
        const waiters = this.awaited.get(answer) ?? [];
        const left = waiters.filter((w) => w !== done);
        if (left.length) this.awaited.set(answer, left); else this.awaited.delete(answer);
        resolve(undefined);
      }, ms);
      const done = (message: Record<string, unknown> | undefined) => { this.clock.clearTimeout(timer); resolve(message); };
      this.awaited.set(answer, [...(this.awaited.get(answer) ?? []), done]);
      launcher.send(JSON.stringify(request));
    });
  }

  private answerAll(answer: undefined): void {
    const waiting = [...this.awaited.values()].flat();
    this.awaited.clear();
    for (const done of waiting) done(answer);
  }

  /** jupyter_server's iopub rate limit: false when the message is dropped; the user is told once, in the cell. */
  private admitIopub(routing: Routing, text: string): boolean {
    const verdict = this.rate.admit(routing.msg_type, routing.state, text.length, Date.now());
    if (verdict.send) return true;
    this.droppedIopub++;
    if (verdict.notices.length === 0) return false;
    let parent: Record<string, unknown> = {};
    try { parent = (JSON.parse(text) as JupyterMessage).parent_header ?? {}; } catch { /* unparented notice */ }
    for (const which of verdict.notices) {
      this.log.warn({ kernel: this.id, limit: which }, 'iopub rate limit reached: output dropped');
      this.broadcast(stderrMessage(rateNotice(which, this.limits), parent));
    }
    return false;
  }

  // ---- lifecycle -------------------------------------------------------------------------

  /**
   * Cancels the kernel's Spark jobs and interrupts its running cell (the launcher does both).
   * Throws when the interrupt cannot reach the kernel, or its launcher did not confirm it: a 204
   * says it was delivered.
   */
  async interrupt(): Promise<void> {
    if (!this.launcher) throw this.unreachable('interrupt');
    // A launcher from before confirmations: sent is all that can be known.
    if (!this.launcherConfirms) return void this.launcher.send(JSON.stringify({ op: 'interrupt' }));
    const confirmed = await this.ask({ op: 'interrupt' }, 'interrupted', this.lifecycle.interruptTimeoutMs);
    if (this.executionState === 'dead') throw new GatewayError(404, 'Not Found', `Kernel ended while being interrupted: ${this.id}`);
    if (!confirmed) throw new GatewayError(504, 'Gateway Timeout', `The kernel's launcher did not confirm the interrupt (no answer within ${this.lifecycle.interruptTimeoutMs / 1000} s, or it disconnected): it may not have reached the kernel.`);
  }

  /**
   * Same kernel id, same sockets: `restarting`, a fresh namespace (Spark kept), then the kernel's
   * state as its launcher reports it after the reset. False: it died meanwhile; throws when the
   * restart could not be done or was not confirmed (the kernel's state is then said again).
   */
  async restart(): Promise<boolean> {
    if (!this.launcher) throw this.unreachable('restart');
    if (!this.ready) throw new GatewayError(409, 'Conflict', `Kernel ${this.id} is still starting (Spark is not ready): nothing has run in it yet; restart it once it is idle.`);
    this.executionState = 'restarting';
    this.broadcast(statusMessage('restarting'));
    const answer = await this.ask({ op: 'restart' }, 'restarted', this.lifecycle.restartTimeoutMs);
    // Ended while restarting (its application gone): dead stays dead.
    if ((this.executionState as ExecutionState) === 'dead') return false;
    if (answer && typeof answer.busy === 'boolean') this.kernelState = answer.busy ? 'busy' : 'idle';
    this.executionState = this.kernelState;
    this.broadcast(statusMessage(this.kernelState));
    if (!answer) throw new GatewayError(504, 'Gateway Timeout', `The kernel did not confirm its restart (no answer within ${this.lifecycle.restartTimeoutMs / 1000} s, or its launcher disconnected); it is ${this.kernelState}.`);
    if (answer.ok === false) throw new GatewayError(500, 'Restart failed', `The kernel could not reset its namespace: ${typeof answer.error === 'string' ? answer.error : 'unknown error'}`);
    return true;
  }

  private unreachable(action: string): GatewayError {
    return new GatewayError(409, 'Conflict', `Kernel ${this.id} cannot ${action} now: its launcher is not connected (the driver is starting or reconnecting). Try again in a moment.`);
  }

  /** Tells the launcher to stop; the application is removed by the caller. `why`: told to the notebook first, with `dead`. */
  shutdown(why?: string): void {
    if (why !== undefined && this.executionState !== 'dead') {
      this.broadcast(stderrMessage(`${why}\n`));
      this.broadcast(statusMessage('dead'));
    }
    // Listed as dead until its application is removed (kernel-registry.ts): never claimed or culled again.
    this.executionState = 'dead';
    this.launcher?.send(JSON.stringify({ op: 'shutdown' }));
    this.close(1000, 'kernel shut down');
  }

  /** The driver ended: say so on iopub, then close every socket. */
  markDead(reason: string): void {
    if (this.executionState === 'dead') return;
    this.executionState = 'dead';
    this.broadcast(stderrMessage(`The kernel's driver ended: ${reason}\n`));
    this.broadcast(statusMessage('dead'));
    this.close(1011, 'kernel died');
  }

  notice(text: string): void {
    this.broadcast(stderrMessage(text));
  }

  private close(code: number, reason: string): void {
    for (const client of this.clients) client.ws.close(code, reason);
    this.launcher?.close(1000, reason);
    this.launcher = undefined;
    this.answerAll(undefined);
    this.held.clear();
  }
}
