// The gateway's kernels: started as applications through the API, followed through its change
// feed (a driver that ends makes its kernel dead), found again by label after a restart,
// culled when idle if asked.
import { createHash, randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { FastifyBaseLogger } from 'fastify';
import { ApiClient, type ApiApplication, ApiError, TERMINAL_STATES } from './api-client.js';
import type { GatewayCaller } from './auth.js';
import { type Clock, systemClock, type TimerHandle } from '../lib/clock.js';
import { GatewayError } from './gateway-error.js';
import { kernelLimitRefusal, mayUseKernel } from './kernel-owners.js';
import { reconcileKernels } from './kernel-reconcile.js';
import { KernelSession } from './kernel-session.js';
import type { LauncherAuth } from './launcher-auth.js';
import { DEFAULT_LIFECYCLE, type LifecycleLimits } from './lifecycle-limits.js';
import { idleKernelsTotal } from './metrics.js';
import { WarmPool } from './warm-pool.js';

export const KERNEL_LABEL = 'kernel.submission-service.io/kernel';
export const KERNEL_ID_LABEL = 'kernel.submission-service.io/id';
export const KERNEL_SPEC_LABEL = 'kernel.submission-service.io/spec';
/** On a warm pool's kernels: the template whose pool started it. */
export const KERNEL_POOL_LABEL = 'kernel.submission-service.io/pool';
/** On a warm pool's kernels: a fingerprint of the template config they were started from. */
export const KERNEL_POOL_CONFIG_LABEL = 'kernel.submission-service.io/pool-config';
const SELECTOR = `${KERNEL_LABEL}=true`;

export interface RegistryOptions {
  api: ApiClient;
  auth: LauncherAuth;
  log: FastifyBaseLogger;
  /** `local://` path of launcher.py as the driver sees it. */
  launcherFile: string;
  /** The gateway's address as the launcher dials it (ws://…/notebooks), known once the server listens. */
  launcherUrl: () => string;
  kernelImage?: string;
  /** Seconds without activity and connections before a kernel is shut down; 0 = never. */
  cullIdleSeconds: number;
  /** Warm pool sizes per template (`--warm-pool TEMPLATE=N`); empty: no pool. */
  warmPool?: Record<string, number>;
  /** Kernels one key may hold at once (kernel-owners.ts); 0: no limit. */
  kernelsPerKey?: number;
  /**
   * The launcher's credential as the driver gets it (launcher-files.ts): env entries; absent: the
   * token goes to the API in a header, and the cluster keeps it beside the driver (a Secret on
   * Kubernetes), never in its config (domain/launcher-credential.ts).
   */
  launcherEnv?: (kernelId: string, token: string) => Record<string, string>;
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

const jobNameFor = (spec: string) => `kernel-${spec}`.slice(0, 41).replace(/-+$/, '');

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
  /** Starts under way per key id, counted against its limit until their kernel has its owner. */
  private readonly starting = new Map<string, number>();
  /** Kernels submitted here and not launched yet: ended when their launch timeout passes. */
  private readonly launchTimers = new Map<string, TimerHandle>();
  private readonly lifecycle: LifecycleLimits;
  private readonly clock: Clock;

  constructor(private readonly options: RegistryOptions) {
    this.lifecycle = options.lifecycle ?? DEFAULT_LIFECYCLE;
    this.clock = options.clock ?? systemClock;
    this.settleUntil = this.clock.now() + CLAIM_SETTLE_MS;
    this.found = new Promise((resolve) => { this.foundDone = resolve; });
    this.pool = new WarmPool(new Map(Object.entries(options.warmPool ?? {})), {
      sessions: () => this.kernels.values(),
      startPooled: (template, version) => this.submitKernel(template, undefined, { template, version }),
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
    for (const timer of this.launchTimers.values()) this.clock.clearTimeout(timer);
    this.launchTimers.clear();
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
    } else if (app.state === 'PENDING' && !session.pendingNoticeSent) {
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
      if (session.launched) this.stopLaunchTimer(session.id);
      this.changes.emit('claim');
      if (session.pool !== undefined) this.pool.poke();
    };
    return session;
  }

  /**
   * A kernel submitted here has `launchTimeoutMs` to report ready (its driver scheduled, its
   * launcher connected, Spark started or failed). One that does not is ended with a reason in the
   * notebook, instead of a notebook that shows `busy` and holds its requests for good (a driver
   * that never gets a node, an image that cannot be pulled, a SparkContext that hangs).
   */
  private startLaunchTimer(session: KernelSession): void {
    const ms = this.lifecycle.launchTimeoutMs;
    if (ms <= 0) return;
    this.launchTimers.set(session.id, this.clock.setTimeout(() => {
      this.launchTimers.delete(session.id);
      if (this.kernels.get(session.id) !== session || session.launched || this.ending.has(session.id)) return;
      const why = `The kernel did not start within ${ms / 1000} s (its driver was not scheduled, or its launcher or Spark did not come up): it was shut down. Start a new one; the application's log says more.`;
      this.options.log.warn({ kernel: session.id, appName: session.appName, launchTimeoutMs: ms }, 'a kernel did not start in time: ending it');
      this.end(session.id, undefined, why).catch((error: Error) => this.options.log.error({ err: error, kernel: session.id }, 'could not remove a kernel that did not start'));
    }, ms));
  }

  private stopLaunchTimer(id: string): void {
    const timer = this.launchTimers.get(id);
    if (timer !== undefined) this.clock.clearTimeout(timer);
    this.launchTimers.delete(id);
  }

  /**
   * Starts a kernel: a ready one of the template's warm pool when there is one (claimed for the
   * caller), else its own application; answers as soon as the API accepted it.
   */
  async start(specName: string, key: string | undefined, env: Record<string, unknown>, caller: GatewayCaller = null): Promise<KernelSession> {
    // Counted before anything is awaited, so that starts sent at once cannot pass the limit together.
    const held = caller ? [...this.kernels.values()].filter((s) => s.owner === caller.id && s.executionState !== 'dead').length + (this.starting.get(caller.id) ?? 0) : 0;
    const refusal = kernelLimitRefusal(caller, held, this.options.kernelsPerKey ?? 0);
    if (refusal) throw new GatewayError(429, 'Too Many Kernels', refusal);
    const owner = caller?.id;
    if (owner !== undefined) this.starting.set(owner, (this.starting.get(owner) ?? 0) + 1);
    let counted = owner !== undefined;
    // Once the kernel has its owner it counts itself: the start stops counting then (or when it fails).
    const release = () => {
      if (!counted) return;
      counted = false;
      const left = (this.starting.get(owner!) ?? 1) - 1;
      if (left > 0) this.starting.set(owner!, left); else this.starting.delete(owner!);
    };
    try {
      return await this.startCounted(specName, key, env, caller, release);
    } finally {
      release();
    }
  }

  private async startCounted(specName: string, key: string | undefined, env: Record<string, unknown>, caller: GatewayCaller, owned: () => void): Promise<KernelSession> {
    if (specName !== 'default') {
      const template = await this.options.api.template(specName, key);
      if (!template || !template.config.pythonVersion) throw new GatewayError(404, 'Not Found', `No such kernel spec: ${specName}`);
      if (template.config.pythonVersion !== '3') {
        throw new GatewayError(400, 'Bad Request', `Kernel spec ${specName} asks for Python ${template.config.pythonVersion}: Spark 3 runs Python 3 only. Set "pythonVersion": "3" in the template.`);
      }
    }
    void env; // KERNEL_WORKING_DIR is a path on the Jupyter host: meaningless in the driver.
    // The template was checked with the caller's key above: the caller may use it.
    const pooled = await this.pool.take(specName, caller?.id);
    if (pooled) {
      this.options.log.info({ kernel: pooled.id, appName: pooled.appName, spec: specName }, 'started a kernel from the warm pool');
      // The application is the gateway's; recorded as the claimer's too, so that the API's owner
      // checks and the Spark UI let the claimer in (KERNEL_CLAIMER_LABEL). With auth off: no owners.
      if (key && caller && pooled.appName) {
        await this.options.api.claim(pooled.appName, key).catch((error: Error) =>
          this.options.log.warn({ err: error, kernel: pooled.id, appName: pooled.appName }, 'could not record the claim in the API: only an admin opens its Spark UI'));
      }
      return pooled;
    }
    return this.submitKernel(specName, key, undefined, caller?.id, owned);
  }

  /** Submits a kernel's application; a pool's (`pool` set) with the gateway's own key. */
  private async submitKernel(specName: string, key: string | undefined, pool?: { template: string; version: string }, owner?: string, owned?: () => void): Promise<KernelSession> {
    const id = randomUUID();
    const token = this.options.auth.issue(id);
    const session = this.track(this.newSession(id, specName, false, pool?.template));
    this.startLaunchTimer(session);
    session.poolVersion = pool?.version;
    session.owner = owner;
    owned?.();
    this.keys.set(id, key);
    const poolLabels = pool ? { [KERNEL_POOL_LABEL]: pool.template, [KERNEL_POOL_CONFIG_LABEL]: pool.version } : {};
    try {
      const app = await this.options.api.submit({
        jobName: jobNameFor(specName),
        ...(specName === 'default' ? {} : { configTemplateName: specName }),
        labels: { [KERNEL_LABEL]: 'true', [KERNEL_ID_LABEL]: id, [KERNEL_SPEC_LABEL]: specName, ...poolLabels },
        configOverrides: {
          type: 'Python',
          ...(this.options.kernelImage ? { image: this.options.kernelImage } : {}),
          mainApplicationFile: this.options.launcherFile,
          driver: {
            env: {
              SUBMISSION_SERVICE_GATEWAY_URL: this.options.launcherUrl(),
              SUBMISSION_SERVICE_KERNEL_ID: id,
              // Local mode: a file of the gateway's; else the API keeps the token beside the driver (header below).
              ...(this.options.launcherEnv ? this.options.launcherEnv(id, token) : {}),
              SUBMISSION_SERVICE_KERNEL_SPEC: specName,
              ...(pool === undefined ? {} : { SUBMISSION_SERVICE_KERNEL_POOL: pool.template }),
            },
          },
        },
      }, key, this.options.launcherEnv ? undefined : token);
      session.appName = app.appName;
      if (TERMINAL_STATES.has(app.state)) throw new GatewayError(500, 'Internal Server Error', `the kernel's application ended at once: ${app.state}`);
      return session;
    } catch (error) {
      this.drop(id);
      if (error instanceof ApiError) throw new GatewayError(error.statusCode, 'Kernel not started', error.message);
      throw error;
    }
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
    this.stopLaunchTimer(id);
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
