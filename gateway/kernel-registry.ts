// The gateway's kernels: the list of them and who may use which (lookup and ownership), their
// applications followed through the API's change feed (a driver that ends makes its kernel dead),
// found again by label after a restart, ended on request or culled when idle if asked. Starting
// one is kernel-starter.ts's; what its application is made of, kernel-application.ts's.
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { type ApiApplication, TERMINAL_STATES } from './api-client.js';
import type { GatewayCaller } from './auth.js';
import { type Clock, systemClock, type TimerHandle } from '../lib/clock.js';
import { GatewayError } from './gateway-error.js';
import { KERNEL_ID_LABEL, KERNEL_POOL_CONFIG_LABEL, KERNEL_POOL_LABEL, KERNEL_SELECTOR as SELECTOR, KERNEL_SPEC_LABEL } from './kernel-application.js';
import { mayUseKernel } from './kernel-owners.js';
import { reconcileKernels } from './kernel-reconcile.js';
import { KernelSession } from './kernel-session.js';
import { KernelStarter, type LaunchOptions } from './kernel-starter.js';
import { DEFAULT_LIFECYCLE, type LifecycleLimits } from './lifecycle-limits.js';
import { idleKernelsTotal } from './metrics.js';
import { WarmPool } from './warm-pool.js';

export { KERNEL_ID_LABEL, KERNEL_LABEL, KERNEL_POOL_CONFIG_LABEL, KERNEL_POOL_LABEL, KERNEL_SPEC_LABEL } from './kernel-application.js';

export interface RegistryOptions extends LaunchOptions {
  /** Seconds without activity and connections before a kernel is shut down; 0 = never. */
  cullIdleSeconds: number;
  /** Warm pool sizes per template (`--warm-pool TEMPLATE=N`); empty: no pool. */
  warmPool?: Record<string, number>;
  /** Throws away what launcherEnv wrote for a kernel that is gone. */
  forgetLauncher?: (kernelId: string) => void;
  /** Launch, restart and interrupt timeouts (lifecycle-limits.ts); absent: the defaults. */
  lifecycle?: LifecycleLimits;
  /** Time for the launch timeouts, idle culling, the warm pool's checks and the sessions' waits; absent: the process's. */
  clock?: Clock;
}

/** How long the list waits, after a restart, for launchers to say whether their pool kernel was claimed. */
const CLAIM_SETTLE_MS = 8000;

export { GatewayError };

export class KernelRegistry {
  readonly kernels = new Map<string, KernelSession>();
  private readonly keys = new Map<string, string | undefined>();
  private readonly stop = new AbortController();
  private cullTimer: TimerHandle | undefined;
  /** Kernels being ended: their application's removal, in flight. */
  private readonly ending = new Map<string, Promise<void>>();
  private following: Promise<void> | undefined;
  readonly pool: WarmPool;
  /** 'claim' when a pool kernel's claim becomes known. */
  private readonly changes = new EventEmitter();
  private settleUntil: number;
  /** The first listing of running kernels, done or failed (requests may arrive before it ends). */
  private readonly found: Promise<void>;
  private foundDone: () => void = () => {};
  private readonly starter: KernelStarter;
  private readonly lifecycle: LifecycleLimits;
  private readonly clock: Clock;

  constructor(private readonly options: RegistryOptions) {
    this.lifecycle = options.lifecycle ?? DEFAULT_LIFECYCLE;
    this.clock = options.clock ?? systemClock;
    this.settleUntil = this.clock.now() + CLAIM_SETTLE_MS;
    this.found = new Promise((resolve) => { this.foundDone = resolve; });
    this.starter = new KernelStarter({
      sessions: () => this.kernels.values(),
      register: (id, specName, key, pool) => {
        this.keys.set(id, key);
        return this.track(this.newSession(id, specName, false, pool));
      },
      current: (session) => this.kernels.get(session.id) === session && !this.ending.has(session.id),
      drop: (id) => this.drop(id),
      end: (id, callerKey, why) => this.end(id, callerKey, why),
      takePooled: (template, owner) => this.pool.take(template, owner),
    }, { ...options, launchTimeoutMs: this.lifecycle.launchTimeoutMs, clock: this.clock });
    this.pool = new WarmPool(new Map(Object.entries(options.warmPool ?? {})), {
      sessions: () => this.kernels.values(),
      startPooled: (template, version) => this.starter.submit(template, undefined, { template, version }),
      removePooled: (id) => this.end(id),
      templateVersion: async (template) => {
        const found = await this.options.api.template(template);
        if (found?.config.pythonVersion !== '3') return undefined;
        return createHash('sha256').update(JSON.stringify(found.config)).digest('hex').slice(0, 16);
      },
    }, options.log, undefined, this.clock);
  }

  async open(): Promise<void> {
    this.following = this.options.api.follow(SELECTOR, (type, app) => this.onApp(type, app),
      () => { this.resync().catch((error: Error) => this.options.log.error({ err: error }, 'kernel re-sync failed')); },
      this.stop.signal, (error) => this.options.log.warn({ err: error }, 'events stream of the API failed; retrying'));
    // The API may not answer yet (standalone gateway started first): the feed's reset retries.
    await this.resync().catch((error: Error) => this.options.log.error({ err: error }, 'could not list running kernels through the API'));
    this.foundDone();
    this.settleUntil = this.clock.now() + CLAIM_SETTLE_MS;
    this.pool.open();
    if (this.options.cullIdleSeconds > 0) {
      this.cullTimer = this.clock.setInterval(() => this.cull(), Math.min(60_000, this.options.cullIdleSeconds * 250));
    }
  }

  async close(): Promise<void> {
    this.foundDone();
    this.stop.abort();
    if (this.cullTimer !== undefined) this.clock.clearInterval(this.cullTimer);
    this.starter.close();
    await this.pool.close();
    await this.following;
  }

  /**
   * Makes the list match the API's (after a restart, and after each `reset` of the change feed):
   * running kernels found again by label, kernels whose application is gone or ended dead and dropped.
   */
  async resync(): Promise<void> {
    const tracked = [...this.kernels.values()].map((s) => ({ id: s.id, appName: s.appName, ending: this.ending.has(s.id) }));
    const sessions = new Map([...this.kernels].map(([id, s]) => [id, s]));
    const plan = reconcileKernels(tracked, await this.options.api.list(SELECTOR), (app) => app.labels?.[KERNEL_ID_LABEL]);
    for (const app of plan.found) {
      const id = app.labels![KERNEL_ID_LABEL];
      if (this.kernels.has(id)) continue;
      const session = this.track(this.newSession(id, app.labels?.[KERNEL_SPEC_LABEL] ?? 'default', true, app.labels?.[KERNEL_POOL_LABEL]));
      session.appName = app.appName;
      session.poolVersion = app.labels?.[KERNEL_POOL_CONFIG_LABEL];
      // A pool's kernel says its claimer in its launcher's hello; any other is its submitter's.
      if (session.pool === undefined) session.owner = app.submittedBy ?? undefined;
      this.options.log.info({ kernel: id, appName: app.appName }, 'found a running kernel again');
    }
    for (const { id, reason } of plan.gone) {
      const session = sessions.get(id)!;
      // Still the same kernel, and not being ended since the listing began.
      if (this.kernels.get(id) !== session || this.ending.has(id)) continue;
      this.options.log.info({ kernel: id, reason }, 'a kernel left the list on re-sync');
      session.markDead(reason);
      this.drop(id);
      if (session.unclaimed) this.pool.poke();
    }
  }

  private onApp(type: string, app: ApiApplication): void {
    const id = app.labels?.[KERNEL_ID_LABEL];
    const found = id ? this.kernels.get(id) : undefined;
    // Only the kernel's own application speaks for it: labels copied onto another one do not.
    const session = found && found.appName === app.appName ? found : undefined;
    // A kernel being ended leaves the list when end() has removed its application, not when the
    // stop that removal begins with (KILLED) comes by on the feed.
    if (!session || this.ending.has(session.id)) return;
    if (type === 'deleted' || TERMINAL_STATES.has(app.state)) {
      session.markDead(`application ${app.appName} is ${type === 'deleted' ? 'deleted' : app.state}${app.stateDetail ? ` (${app.stateDetail})` : ''}`);
      this.drop(session.id);
      if (session.unclaimed) this.pool.poke(); // replace it
    } else {
      // A new attempt the API started (restartPolicy): its launcher may never connect (a driver
      // never scheduled), so its launch window does not wait for that connection.
      if ((app.attempt ?? 1) > session.attempt) this.starter.attemptReported(session, app);
      this.pendingNotice(session, app);
    }
  }

  private pendingNotice(session: KernelSession, app: ApiApplication): void {
    if (app.state === 'PENDING' && !session.pendingNoticeSent) {
      session.pendingNoticeSent = true;
      session.notice(`Application ${app.appName} is PENDING: its driver waits for cores or memory; the kernel starts when they are free.\n`);
    }
  }

  /**
   * A kernel the Jupyter side may use by id: a warm pool's unclaimed kernels do not exist for it,
   * nor another key's kernels for a user key (kernel-owners.ts).
   */
  find(id: string, caller: GatewayCaller): KernelSession | undefined {
    const session = this.kernels.get(id);
    return session && !session.unclaimed && mayUseKernel(caller, session.owner) ? session : undefined;
  }

  get(id: string, caller: GatewayCaller): KernelSession {
    const session = this.find(id, caller);
    if (!session) throw new GatewayError(404, 'Not Found', `Kernel does not exist: ${id}`);
    return session;
  }

  /**
   * The kernels to list. Just after a restart, a pool kernel's claim is known once its launcher
   * reconnects: the list waits for that (a while at most), since a claimed kernel missing from it
   * would be dropped by the Jupyter server, and an unclaimed one must not show.
   */
  async list(caller: GatewayCaller): Promise<KernelSession[]> {
    await this.found;
    const unknown = () => [...this.kernels.values()].some((s) => s.claim === 'unknown');
    while (unknown() && this.clock.now() < this.settleUntil) await this.nextClaim(Math.max(1, this.settleUntil - this.clock.now()));
    return [...this.kernels.values()].filter((s) => !s.unclaimed && mayUseKernel(caller, s.owner));
  }

  /** Resolves at the next claim that becomes known, or after `ms` on the registry's clock. */
  private nextClaim(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.clock.clearTimeout(timer);
        this.changes.off('claim', done);
        resolve();
      };
      const timer = this.clock.setTimeout(done, ms);
      this.changes.once('claim', done);
    });
  }

  private newSession(id: string, specName: string, adopted: boolean, pool?: string): KernelSession {
    return new KernelSession(id, specName, this.options.log, adopted, pool, undefined, this.lifecycle, this.clock);
  }

  /** Registers a session and hears what the pool needs to know of it. */
  private track(session: KernelSession): KernelSession {
    this.kernels.set(session.id, session);
    session.onChange = () => {
      this.starter.settled(session);
      this.changes.emit('claim');
      if (session.pool !== undefined) this.pool.poke();
    };
    return session;
  }

  /**
   * Starts a kernel: a ready one of the template's warm pool when there is one (claimed for the
   * caller), else its own application; answers as soon as the API accepted it (kernel-starter.ts).
   */
  start(specName: string, key: string | undefined, env: Record<string, unknown>, caller: GatewayCaller = null): Promise<KernelSession> {
    return this.starter.start(specName, key, env, caller);
  }

  /**
   * Ends the kernel and its application, with the caller's key when it sent one: the person
   * shutting the kernel down is the one whose key started it (a gateway restarted since then
   * holds only its own key for the kernels it found again).
   */
  async remove(id: string, callerKey: string | undefined, caller: GatewayCaller): Promise<void> {
    // The owner is checked (get) before the kernel is touched: a refused DELETE changes nothing.
    await this.end(this.get(id, caller).id, callerKey);
  }

  /**
   * Ends any kernel, a pool's unclaimed ones included. It stays listed until its application
   * is gone: once a DELETE has answered or a culled kernel has left the list, the application
   * has too. A removal that failed leaves it listed as dead, for a DELETE to remove again; its
   * launcher has exited, so the application ends rather than runs unlisted.
   */
  private end(id: string, callerKey?: string, why?: string): Promise<void> {
    const session = this.kernels.get(id);
    if (!session) return Promise.resolve();
    // A second ending (a DELETE during a cull) waits for the first.
    const ending = this.ending.get(id);
    if (ending) return ending;
    // A pool's kernel was submitted with the gateway's own key, which alone may remove it.
    const key = session.pool !== undefined ? undefined : callerKey ?? this.keys.get(id);
    session.shutdown(why);
    const removed = (async () => {
      if (session.appName) await this.options.api.remove(session.appName, key);
      this.drop(id);
    })().finally(() => this.ending.delete(id));
    this.ending.set(id, removed);
    return removed;
  }

  private drop(id: string): void {
    this.starter.forget(id);
    this.kernels.delete(id);
    this.keys.delete(id);
    this.options.auth.forget(id);
    this.options.forgetLauncher?.(id);
  }

  private cull(): void {
    const limit = this.clock.now() - this.options.cullIdleSeconds * 1000;
    for (const session of this.kernels.values()) {
      if (session.connections > 0 || session.executionState !== 'idle' || session.lastActivity.getTime() >= limit || this.ending.has(session.id)) continue;
      // A pool's kernels wait unclaimed by design: only claimed ones are culled (counted, so a test sees the pass).
      if (session.claim !== 'claimed') idleKernelsTotal.inc({ outcome: 'spared' });
      else {
        idleKernelsTotal.inc({ outcome: 'culled' });
        this.options.log.info({ kernel: session.id }, 'culling an idle kernel');
        this.end(session.id).catch((error: Error) => this.options.log.error({ err: error, kernel: session.id }, 'culling failed'));
      }
    }
  }
}
