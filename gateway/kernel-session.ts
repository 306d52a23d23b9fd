// One kernel as the gateway sees it: the application running it, its state (starting, idle,
// busy, restarting, dead), its claim and owner, and its lifecycle (ready, interrupt, restart,
// shutdown, a dead driver). Its parts: the Jupyter clients' websockets (session-clients.ts),
// the launcher's (launcher-link.ts), the traffic between them (kernel-relay.ts), and the words
// the notebook is told (lifecycle-messages.ts).
import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import { type Clock, systemClock } from '../lib/clock.js';
import type { ClaimState, ExecutionState, KernelModel } from './kernel-model.js';
import { KernelRelay } from './kernel-relay.js';
import { LauncherLink } from './launcher-link.js';
import {
  deathNotice, driverEndedNotice, endedWhileInterrupted, interruptUnconfirmed, launcherUnreachable, newAttemptNotice, restartBeforeReady,
  restartFailed, restartUnconfirmed, sparkFailedNotice,
} from './lifecycle-messages.js';
import { type JupyterMessage, type Routing, statusMessage, stderrMessage } from './messages.js';
import { DEFAULT_LIFECYCLE, type LifecycleLimits } from './lifecycle-limits.js';
import { SessionClients } from './session-clients.js';
import { DEFAULT_LIMITS, type SessionLimits } from './session-limits.js';

export { REPLACED_CLOSE } from './session-clients.js';

const CLAIM_TIMEOUT_MS = 3000;
/** The launcher's own requests to the kernel (its restart's reset): their statuses are not the user's work. */
const LAUNCHER_REQUEST_PREFIX = 'ss-restart-';

export class KernelSession {
  appName = '';
  executionState: ExecutionState = 'starting';
  /** When the kernel was last busy or claimed, on the session's clock (idle culling reads it). */
  lastActivity: Date;
  /** Set while the application waits for resources, so the notebook learns why nothing happens. */
  pendingNoticeSent = false;
  private readonly clients: SessionClients;
  private readonly launcher: LauncherLink;
  private readonly relay: KernelRelay;
  private ready = false;
  private attemptNumber = 1;
  /** What the kernel itself last said on iopub (the gateway's own `restarting` aside). */
  private kernelState: 'busy' | 'idle' = 'idle';
  /** The launcher confirms interrupts and says the kernel's state after a restart (launchers before this did not). */
  private launcherConfirms = false;
  private sparkFailed = false;
  /** A claim sent, not yet confirmed: no second request may take this kernel meanwhile. */
  private claiming = false;
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
    limits: SessionLimits = DEFAULT_LIMITS,
    private readonly lifecycle: LifecycleLimits = DEFAULT_LIFECYCLE,
    private readonly clock: Clock = systemClock,
  ) {
    this.lastActivity = new Date(clock.now());
    this.claim = pool === undefined ? 'claimed' : adopted ? 'unknown' : 'unclaimed';
    this.clients = new SessionClients(id, log, limits);
    this.launcher = new LauncherLink(id, log, clock);
    this.relay = new KernelRelay(id, this.clients, this.launcher, {
      passing: () => this.ready,
      activity: () => { this.lastActivity = new Date(this.clock.now()); },
      kernelStatus: (routing) => this.noteKernelState(routing),
    }, log, limits);
  }

  /** Bytes of client requests held until Spark is ready (≤ `heldBytes`). */
  get heldBytes(): number { return this.relay.heldBytes; }
  /** iopub messages the rate limit dropped (a debug counter for tests and logs). */
  get droppedIopub(): number { return this.relay.droppedIopub; }
  /** Bytes kept for sessions to come back to (≤ `replayBytes`). */
  get replayBytes(): number { return this.clients.replayBytes; }

  /** A pool's kernel nobody has: not listed, not culled, not reachable by id. */
  get unclaimed(): boolean { return this.claim === 'unclaimed'; }

  /** Can be handed out now: launcher connected, claim known to be free, Spark up. */
  get claimable(): boolean {
    return this.claim === 'unclaimed' && !this.claiming && this.launcher.connected && this.ready && !this.sparkFailed && this.executionState === 'idle';
  }

  /** The launcher has reported Spark started (or failed, or off): the kernel takes requests. */
  get launched(): boolean { return this.ready; }
  /** Which run of the kernel's driver its launcher belongs to: 1, then each retry's attempt. */
  get attempt(): number { return this.attemptNumber; }
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
    const ok = (await this.launcher.ask({ op: 'claim', owner }, 'claimed', CLAIM_TIMEOUT_MS)) !== undefined;
    this.claiming = false;
    // Unconfirmed (the launcher gone or too slow): it stays in the pool; a later claim is sent again.
    if (!ok || this.claim !== 'unclaimed') return false;
    // The user sees the kernel from now on: nothing from its time in the pool.
    this.clients.clearReplay();
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
    const client = this.clients.add(ws, sessionId, this.adopted);
    // Until the driver and its SparkContext are ready the kernel shows busy (SPEC), never silence.
    if (!this.ready) this.clients.send(client, JSON.stringify(statusMessage('busy')));
    ws.on('message', (data: Buffer) => this.relay.fromClient(client, data));
  }

  /** A message the gateway writes itself (status, notices). */
  private broadcast(message: JupyterMessage): void {
    this.clients.broadcast(JSON.stringify(message), message.channel === 'iopub');
  }

  // ---- the launcher ----------------------------------------------------------------------

  get launcherConnected(): boolean { return this.launcher.connected; }

  /**
   * Pings the launcher's socket and drops it when no pong comes within `ms`: a peer gone without
   * a close (a lost network) would otherwise keep its relaunched launcher refused for good.
   */
  probeLauncher(ms = 10_000): void {
    this.launcher.probe(ms);
  }

  /** `attempt`: the launcher of a new attempt of the kernel's driver (it proved itself with that attempt's token). */
  setLauncher(ws: WebSocket, secret: string, attempt?: number): void {
    this.launcher.attach(ws, secret, {
      kernel: (routing, body) => this.relay.fromKernel(routing, body),
      hello: (message) => this.hello(message),
      spark: (message) => this.becomeReady(message, false),
    });
    if (attempt !== undefined) this.newAttempt(attempt);
  }

  /**
   * The application retried the kernel's driver (its restartPolicy): a new process, and what the
   * kernel held is gone. The clients are told as jupyter_server tells them when its restarter
   * brings back a kernel that died: `restarting` on iopub (with the reason on stderr); then, as
   * at a start, requests wait for the new driver's Spark, and `idle` says the kernel is back.
   */
  private newAttempt(attempt: number): void {
    if (this.executionState === 'dead') return;
    // Nothing ran yet (Spark never came up; a kernel found again after a gateway restart may have run): nothing to tell.
    const ran = this.ready || this.adopted;
    this.log.warn({ kernel: this.id, attempt, ran }, 'a new attempt of the kernel\'s driver connected: the kernel restarted');
    this.attemptNumber = attempt;
    this.ready = false;
    this.sparkFailed = false;
    this.kernelState = 'idle';
    // The new launcher knows nothing of a claim: it is told again, so that it says it after a gateway restart.
    if (this.pool !== undefined && this.claim === 'claimed') this.launcher.send(JSON.stringify({ op: 'claim', owner: this.owner }));
    if (ran) {
      this.executionState = 'restarting';
      for (const message of newAttemptNotice(attempt)) this.broadcast(message);
    }
    this.onChange();
  }

  /** A launcher's first words on each connection: its claim, the kernel's state, Spark's when known. */
  private hello(message: Record<string, unknown>): void {
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
    else if (this.ready) this.relay.flushHeld();
  }

  private becomeReady(spark: { ok: boolean; error?: string; disabled?: boolean }, busy: boolean): void {
    if (!spark.ok && !spark.disabled) this.broadcast(sparkFailedNotice(spark.error));
    this.ready = true;
    this.sparkFailed = !spark.ok && !spark.disabled;
    this.executionState = busy ? 'busy' : 'idle';
    if (!busy) this.broadcast(statusMessage('idle'));
    this.relay.flushHeld();
    this.onChange();
  }

  /**
   * The kernel's state, from its statuses. Not from statuses of control requests: ipykernel
   * handles those on a thread beside the shell and says `idle` after them while a cell still runs.
   * Not from the launcher's own reset. The gateway's `restarting` and `dead` stay until it says.
   */
  private noteKernelState(routing: Routing): void {
    if (routing.state !== 'busy' && routing.state !== 'idle') return;
    if (routing.parent.startsWith(LAUNCHER_REQUEST_PREFIX) || this.clients.channelOf(routing.parent) === 'control') return;
    this.kernelState = routing.state;
    if (this.executionState !== 'restarting' && this.executionState !== 'dead') this.executionState = routing.state;
  }

  // ---- lifecycle -------------------------------------------------------------------------

  /**
   * Cancels the kernel's Spark jobs and interrupts its running cell (the launcher does both).
   * Throws when the interrupt cannot reach the kernel, or its launcher did not confirm it: a 204
   * says it was delivered.
   */
  async interrupt(): Promise<void> {
    if (!this.launcher.connected) throw launcherUnreachable(this.id, 'interrupt');
    // A launcher from before confirmations: sent is all that can be known.
    if (!this.launcherConfirms) return void this.launcher.send(JSON.stringify({ op: 'interrupt' }));
    const confirmed = await this.launcher.ask({ op: 'interrupt' }, 'interrupted', this.lifecycle.interruptTimeoutMs);
    if (this.executionState === 'dead') throw endedWhileInterrupted(this.id);
    if (!confirmed) throw interruptUnconfirmed(this.lifecycle.interruptTimeoutMs);
  }

  /**
   * Same kernel id, same sockets: `restarting`, a fresh namespace (Spark kept), then the kernel's
   * state as its launcher reports it after the reset. False: it died meanwhile; throws when the
   * restart could not be done or was not confirmed (the kernel's state is then said again).
   */
  async restart(): Promise<boolean> {
    if (!this.launcher.connected) throw launcherUnreachable(this.id, 'restart');
    if (!this.ready) throw restartBeforeReady(this.id);
    this.executionState = 'restarting';
    this.broadcast(statusMessage('restarting'));
    const answer = await this.launcher.ask({ op: 'restart' }, 'restarted', this.lifecycle.restartTimeoutMs);
    // Ended while restarting (its application gone): dead stays dead.
    if ((this.executionState as ExecutionState) === 'dead') return false;
    if (answer && typeof answer.busy === 'boolean') this.kernelState = answer.busy ? 'busy' : 'idle';
    this.executionState = this.kernelState;
    this.broadcast(statusMessage(this.kernelState));
    if (!answer) throw restartUnconfirmed(this.lifecycle.restartTimeoutMs, this.kernelState);
    if (answer.ok === false) throw restartFailed(answer.error);
    return true;
  }

  /** Tells the launcher to stop; the application is removed by the caller. `why`: told to the notebook first, with `dead`. */
  shutdown(why?: string): void {
    if (why !== undefined && this.executionState !== 'dead') for (const message of deathNotice(why)) this.broadcast(message);
    // Listed as dead until its application is removed (kernel-registry.ts): never claimed or culled again.
    this.executionState = 'dead';
    this.launcher.send(JSON.stringify({ op: 'shutdown' }));
    this.close(1000, 'kernel shut down');
  }

  /** The driver ended: say so on iopub, then close every socket. */
  markDead(reason: string): void {
    if (this.executionState === 'dead') return;
    this.executionState = 'dead';
    for (const message of driverEndedNotice(reason)) this.broadcast(message);
    this.close(1011, 'kernel died');
  }

  notice(text: string): void {
    this.broadcast(stderrMessage(text));
  }

  private close(code: number, reason: string): void {
    this.clients.closeAll(code, reason);
    this.launcher.close(reason);
    this.relay.clearHeld();
  }
}
