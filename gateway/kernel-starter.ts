// Starting kernels: a ready one of the template's warm pool (claimed for the caller), else an
// application of its own submitted through the API. A start counts against its key's kernel
// limit from the request on, and a kernel submitted here that does not launch in time is ended.
// The registry (kernel-registry.ts) keeps the kernels; this file only adds to them.
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { type ApiApplication, type ApiClient, ApiError, TERMINAL_STATES } from './api-client.js';
import type { GatewayCaller } from './auth.js';
import type { Clock, TimerHandle } from '../lib/clock.js';
import { GatewayError } from './gateway-error.js';
import { attemptDelayMs, kernelSubmission, type PoolOrigin } from './kernel-application.js';
import { kernelLimitRefusal } from './kernel-owners.js';
import type { KernelSession } from './kernel-session.js';
import type { LauncherAuth } from './launcher-auth.js';

/** What the starter needs of the registry. */
export interface StarterHost {
  /** Every kernel now (a key's count of them). */
  sessions(): Iterable<KernelSession>;
  /** A new session, listed; `key`: the key its application is removed with. */
  register(id: string, specName: string, key: string | undefined, pool?: string): KernelSession;
  /** Whether `session` is still listed and not being ended. */
  current(session: KernelSession): boolean;
  /** Unlists a kernel whose submission failed. */
  drop(id: string): void;
  end(id: string, callerKey?: string, why?: string): Promise<void>;
  /** A ready kernel of `template`'s warm pool, now claimed for `owner`. */
  takePooled(template: string, owner: string | undefined): Promise<KernelSession | undefined>;
}

/** What starting a kernel needs, which the registry is given (kernel-registry.ts RegistryOptions) and hands on. */
export interface LaunchOptions {
  api: ApiClient;
  auth: LauncherAuth;
  log: FastifyBaseLogger;
  /** `local://` path of launcher.py as the driver sees it. */
  launcherFile: string;
  /** The gateway's address as the launcher dials it (ws://…/notebooks), known once the server listens. */
  launcherUrl: () => string;
  kernelImage?: string;
  /** Kernels one key may hold at once (kernel-owners.ts); 0: no limit. */
  kernelsPerKey?: number;
  /**
   * The launcher's credential as the driver gets it (launcher-files.ts): env entries; absent: the
   * token goes to the API in a header, and the cluster keeps it beside the driver (a Secret on
   * Kubernetes), never in its config (domain/launcher-credential.ts).
   */
  launcherEnv?: (kernelId: string, token: string) => Record<string, string>;
}

export interface StarterOptions extends LaunchOptions {
  /** 0: no launch timeout. */
  launchTimeoutMs: number;
  clock: Clock;
}

export class KernelStarter {
  /** Starts under way per key id, counted against its limit until their kernel has its owner. */
  private readonly starting = new Map<string, number>();
  /** Kernels submitted here and not launched yet: ended when their launch timeout passes. */
  private readonly launchTimers = new Map<string, TimerHandle>();
  /** The latest attempt of each kernel's driver that got its own launch window (the first start's is 1). */
  private readonly timedAttempts = new Map<string, number>();

  constructor(private readonly host: StarterHost, private readonly options: StarterOptions) {}

  /**
   * Starts a kernel: a ready one of the template's warm pool when there is one (claimed for the
   * caller), else its own application; answers as soon as the API accepted it.
   */
  async start(specName: string, key: string | undefined, env: Record<string, unknown>, caller: GatewayCaller = null): Promise<KernelSession> {
    // Counted before anything is awaited, so that starts sent at once cannot pass the limit together.
    const held = caller ? [...this.host.sessions()].filter((s) => s.owner === caller.id && s.executionState !== 'dead').length + (this.starting.get(caller.id) ?? 0) : 0;
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
    const pooled = await this.host.takePooled(specName, caller?.id);
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
    return this.submit(specName, key, undefined, caller?.id, owned);
  }

  /** Submits a kernel's application; a pool's (`pool` set) with the gateway's own key. */
  async submit(specName: string, key: string | undefined, pool?: PoolOrigin, owner?: string, owned?: () => void): Promise<KernelSession> {
    const id = randomUUID();
    const token = this.options.auth.issue(id);
    const session = this.host.register(id, specName, key, pool?.template);
    this.startLaunchTimer(session);
    session.poolVersion = pool?.version;
    session.owner = owner;
    owned?.();
    const { launcherEnv } = this.options;
    try {
      const app = await this.options.api.submit(kernelSubmission(id, specName, {
        launcherFile: this.options.launcherFile, launcherUrl: this.options.launcherUrl(), kernelImage: this.options.kernelImage,
        launcherEnv: launcherEnv ? launcherEnv(id, token) : undefined,
      }, pool), key, launcherEnv ? undefined : token);
      session.appName = app.appName;
      if (TERMINAL_STATES.has(app.state)) throw new GatewayError(500, 'Internal Server Error', `the kernel's application ended at once: ${app.state}`);
      return session;
    } catch (error) {
      this.host.drop(id);
      if (error instanceof ApiError) throw new GatewayError(error.statusCode, 'Kernel not started', error.message);
      throw error;
    }
  }

  /**
   * A kernel submitted here has `launchTimeoutMs` to report ready (its driver scheduled, its
   * launcher connected, Spark started or failed). One that does not is ended with a reason in the
   * notebook, instead of a notebook that shows `busy` and holds its requests for good (a driver
   * that never gets a node, an image that cannot be pulled, a SparkContext that hangs).
   * `delayMs`: a retry's driver is not created yet; its window starts when it is.
   */
  private startLaunchTimer(session: KernelSession, attempt = session.attempt, delayMs = 0): void {
    const ms = this.options.launchTimeoutMs;
    if (ms <= 0) return;
    this.launchTimers.set(session.id, this.options.clock.setTimeout(() => {
      this.launchTimers.delete(session.id);
      if (!this.host.current(session) || this.launchedSince(session, attempt)) return;
      const which = attempt > 1 ? `Attempt ${attempt} of the kernel's driver (its application retried it)` : 'The kernel';
      const why = `${which} did not start within ${ms / 1000} s (its driver was not scheduled, or its launcher or Spark did not come up): it was shut down. Start a new one; the application's log says more.`;
      this.options.log.warn({ kernel: session.id, appName: session.appName, attempt, launchTimeoutMs: ms }, 'a kernel did not start in time: ending it');
      this.host.end(session.id, undefined, why).catch((error: Error) => this.options.log.error({ err: error, kernel: session.id }, 'could not remove a kernel that did not start'));
    }, delayMs + ms));
  }

  /**
   * The API reported a new attempt of the kernel's driver (restartPolicy). It does so when the
   * attempt before ends, and the new driver is only created at its due time (the retry interval
   * after that end, at once after an eviction): the window starts then, so that a long interval
   * does not end a kernel whose retry has not begun, and a driver that is never scheduled is
   * still ended. Timed on this clock from the report's arrival, by the retry's delay (a duration
   * of the API's, not its due time: that is stamped with the API's clock, which on another host
   * may be minutes off this one's). The report comes a little after the end, so the window starts
   * that much late, never before the driver is created.
   */
  attemptReported(session: KernelSession, app: ApiApplication): void {
    const attempt = app.attempt ?? 1;
    this.timeAttempt(session, attempt, attemptDelayMs(app, attempt));
  }

  /**
   * A new attempt of a kernel's driver (its application retried it) gets as long to report ready
   * as a first start: without it, one whose Spark never comes up again would show `restarting`
   * for good. Each attempt once, from the first news of it: the API's report (attemptReported),
   * else its launcher connecting (the report was missed; the driver runs, so no delay). An
   * attempt that connects before the last one's Spark came up starts a fresh window (the last
   * one's ended with its driver).
   */
  timeAttempt(session: KernelSession, attempt = session.attempt, delayMs = 0): void {
    if (this.launchedSince(session, attempt) || attempt <= (this.timedAttempts.get(session.id) ?? 1)) return;
    this.timedAttempts.set(session.id, attempt);
    this.stopLaunchTimer(session.id);
    this.startLaunchTimer(session, attempt, delayMs);
  }

  /**
   * Whether `attempt` (or a later one) reported ready. The API may say a new attempt was started
   * (attempt-status) before its launcher connects, while the old driver's ready still shows.
   */
  private launchedSince(session: KernelSession, attempt: number): boolean {
    return session.launched && session.attempt >= attempt;
  }

  /** The kernel changed: a launch window of an attempt that has now reported ready stops. */
  settled(session: KernelSession): void {
    if (this.launchedSince(session, this.timedAttempts.get(session.id) ?? 1)) this.stopLaunchTimer(session.id);
    else this.timeAttempt(session);
  }

  /** The kernel launched, or is gone: its launch timeout no longer runs. */
  stopLaunchTimer(id: string): void {
    const timer = this.launchTimers.get(id);
    if (timer !== undefined) this.options.clock.clearTimeout(timer);
    this.launchTimers.delete(id);
  }

  /** The kernel is unlisted: nothing of it stays here. */
  forget(id: string): void {
    this.stopLaunchTimer(id);
    this.timedAttempts.delete(id);
  }

  close(): void {
    for (const timer of this.launchTimers.values()) this.options.clock.clearTimeout(timer);
    this.launchTimers.clear();
    this.timedAttempts.clear();
  }
}
