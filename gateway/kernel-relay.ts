// The traffic of one kernel: client requests to its launcher (held, up to a byte cap, until
// Spark is ready), and kernel messages back to the clients, passed on as the text the launcher
// sent: binary buffers dropped, iopub under jupyter_server's rate limit, replies to their asker.
// The session (kernel-session.ts) says when requests may pass and hears the kernel's statuses.
import type { FastifyBaseLogger } from 'fastify';
import { ByteQueue } from './byte-queue.js';
import { IopubRateLimiter, rateNotice } from './iopub-rate-limit.js';
import type { LauncherLink } from './launcher-link.js';
import { heldRefusal } from './lifecycle-messages.js';
import { countsAsActivity, type JupyterMessage, parseClientFrame, type Routing, stderrMessage } from './messages.js';
import type { Client, SessionClients } from './session-clients.js';
import type { SessionLimits } from './session-limits.js';

export interface RelayHooks {
  /** Whether requests go to the kernel now (Spark ready), else they are held. */
  passing(): boolean;
  /** A message that counts as activity went by (culling reads it). */
  activity(): void;
  /** An iopub status of the kernel's (its `execution_state` in `routing.state`). */
  kernelStatus(routing: Routing): void;
}

export class KernelRelay {
  /** Client requests (their text as received) held until Spark is ready, up to a byte cap. */
  private readonly held: ByteQueue<{ text: string }>;
  private readonly rate: IopubRateLimiter;
  /** iopub messages the rate limit dropped (a debug counter for tests and logs). */
  droppedIopub = 0;
  private buffersWarned = false;

  constructor(
    private readonly kernelId: string,
    private readonly clients: SessionClients,
    private readonly launcher: LauncherLink,
    private readonly hooks: RelayHooks,
    private readonly log: FastifyBaseLogger,
    private readonly limits: SessionLimits,
  ) {
    this.held = new ByteQueue(limits.heldBytes);
    this.rate = new IopubRateLimiter(limits);
  }

  /** Bytes of client requests held until Spark is ready (≤ `heldBytes`). */
  get heldBytes(): number { return this.held.bytes; }

  fromClient(client: Client, data: Buffer): void {
    const frame = parseClientFrame(data.toString('utf8'));
    if (!frame) {
      this.log.warn({ kernel: this.kernelId, bytes: data.length }, 'ignored a websocket frame that is not a Jupyter message');
      return;
    }
    const { message, text } = frame;
    if (countsAsActivity(message.header.msg_type)) this.hooks.activity();
    this.clients.noteRequest(message.header.msg_id, client, message.channel);
    // Passed on as received: checked above, never re-serialized (but for a channel written in).
    if (this.hooks.passing() && this.launcher.connected) this.launcher.send(text);
    else if (!this.held.hold({ text })) this.refuseHeld(client, message);
  }

  /** The hold is full while the driver starts: the request fails at once, with a reason, instead of growing memory. */
  private refuseHeld(client: Client, message: JupyterMessage): void {
    this.log.warn({ kernel: this.kernelId, heldBytes: this.held.bytes, msgType: message.header.msg_type }, 'refused a request: the hold while the kernel starts is full');
    for (const answer of heldRefusal(message, this.held.bytes, this.limits.heldBytes)) this.clients.send(client, JSON.stringify(answer));
  }

  /** Sends the held requests, in order, while a launcher is connected. */
  flushHeld(): void {
    while (this.launcher.connected && this.held.length) this.launcher.send(this.held.shift()!.text);
  }

  clearHeld(): void { this.held.clear(); }

  /** A kernel message: routed by what the launcher said of it, passed on as the text it sent. */
  fromKernel(routing: Routing, body: string): void {
    const text = routing.buffers > 0 ? this.withoutBuffers(routing, body) : body;
    if (text === undefined) return;
    if (routing.state !== null) {
      // The kernel's own `starting`, parented to nothing, says it was born: the gateway said
      // `busy` and `idle` for it already (and Kernel Gateway relays none). Late, it would undo them.
      if (routing.state === 'starting' && routing.parent === '') return;
      this.hooks.kernelStatus(routing);
    } else if (countsAsActivity(routing.msg_type)) this.hooks.activity();
    if (routing.channel === 'iopub') {
      if (!this.admitIopub(routing, text)) return;
      return this.clients.broadcast(text, true);
    }
    this.clients.reply(routing.parent, text);
  }

  /** Binary frames kill jupyter_server's relay (FIELD-NOTES): buffers are dropped, said once per kernel. */
  private withoutBuffers(routing: Routing, body: string): string | undefined {
    if (!this.buffersWarned) this.log.warn({ kernel: this.kernelId, msgType: routing.msg_type }, 'dropped binary buffers of a kernel message (never sent to Jupyter)');
    this.buffersWarned = true;
    try {
      return JSON.stringify({ ...(JSON.parse(body) as JupyterMessage), buffers: [] });
    } catch {
      this.log.warn({ kernel: this.kernelId }, 'undecodable kernel message from the launcher');
      return undefined;
    }
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
      this.log.warn({ kernel: this.kernelId, limit: which }, 'iopub rate limit reached: output dropped');
      this.clients.broadcast(JSON.stringify(stderrMessage(rateNotice(which, this.limits), parent)), true);
    }
    return false;
  }
}
