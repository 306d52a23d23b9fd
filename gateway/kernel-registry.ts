// The gateway's kernels: started as applications through the API, followed through its change
// feed (a driver that ends makes its kernel dead), found again by label after a restart,
// culled when idle if asked.
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { ApiClient, type ApiApplication, ApiError, TERMINAL_STATES } from './api-client.js';
import { KernelSession } from './kernel-session.js';
import type { LauncherAuth } from './launcher-auth.js';

export const KERNEL_LABEL = 'kernel.submission-service.io/kernel';
export const KERNEL_ID_LABEL = 'kernel.submission-service.io/id';
export const KERNEL_SPEC_LABEL = 'kernel.submission-service.io/spec';
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
}

/** An error to answer the Jupyter server with: status and `{reason, message}`. */
export class GatewayError extends Error {
  constructor(readonly statusCode: number, readonly reason: string, message: string) {
    super(message);
  }
}

const jobNameFor = (spec: string) => `kernel-${spec}`.slice(0, 41).replace(/-+$/, '');

export class KernelRegistry {
  readonly kernels = new Map<string, KernelSession>();
  private readonly keys = new Map<string, string | undefined>();
  private readonly stop = new AbortController();
  private cullTimer: NodeJS.Timeout | undefined;
  private following: Promise<void> | undefined;

  constructor(private readonly options: RegistryOptions) {}

  async open(): Promise<void> {
    this.following = this.options.api.follow(SELECTOR, (type, app) => this.onApp(type, app),
      () => { this.resync().catch((error: Error) => this.options.log.error({ err: error }, 'kernel re-sync failed')); },
      this.stop.signal, (error) => this.options.log.warn({ err: error }, 'events stream of the API failed; retrying'));
    // The API may not answer yet (standalone gateway started first): the feed's reset retries.
    await this.resync().catch((error: Error) => this.options.log.error({ err: error }, 'could not list running kernels through the API'));
    if (this.options.cullIdleSeconds > 0) {
      this.cullTimer = setInterval(() => this.cull(), Math.min(60_000, this.options.cullIdleSeconds * 250));
    }
  }

  async close(): Promise<void> {
    this.stop.abort();
    if (this.cullTimer) clearInterval(this.cullTimer);
    await this.following;
  }

  /** Running kernels the API knows by label (a restarted gateway finds its kernels here). */
  async resync(): Promise<void> {
    const apps = await this.options.api.list(SELECTOR);
    for (const app of apps) {
      const id = app.labels?.[KERNEL_ID_LABEL];
      if (!id || this.kernels.has(id) || TERMINAL_STATES.has(app.state)) continue;
      const session = new KernelSession(id, app.labels?.[KERNEL_SPEC_LABEL] ?? 'default', this.options.log, true);
      session.appName = app.appName;
      this.kernels.set(id, session);
      this.options.log.info({ kernel: id, appName: app.appName }, 'found a running kernel again');
    }
  }

  private onApp(type: string, app: ApiApplication): void {
    const id = app.labels?.[KERNEL_ID_LABEL];
    const session = id ? this.kernels.get(id) : undefined;
    if (!session) return;
    if (type === 'deleted' || TERMINAL_STATES.has(app.state)) {
      session.markDead(`application ${app.appName} is ${type === 'deleted' ? 'deleted' : app.state}${app.stateDetail ? ` (${app.stateDetail})` : ''}`);
      this.drop(session.id);
    } else if (app.state === 'PENDING' && !session.pendingNoticeSent) {
      session.pendingNoticeSent = true;
      session.notice(`Application ${app.appName} is PENDING: its driver waits for cores or memory; the kernel starts when they are free.\n`);
    }
  }

  get(id: string): KernelSession {
    const session = this.kernels.get(id);
    if (!session) throw new GatewayError(404, 'Not Found', `Kernel does not exist: ${id}`);
    return session;
  }

  /** Submits the kernel's application; answers as soon as the API accepted it. */
  async start(specName: string, key: string | undefined, env: Record<string, unknown>): Promise<KernelSession> {
    if (specName !== 'default') {
      const template = await this.options.api.template(specName, key);
      if (!template || !template.config.pythonVersion) throw new GatewayError(404, 'Not Found', `No such kernel spec: ${specName}`);
      if (template.config.pythonVersion !== '3') {
        throw new GatewayError(400, 'Bad Request', `Kernel spec ${specName} asks for Python ${template.config.pythonVersion}: Spark 3 runs Python 3 only. Set "pythonVersion": "3" in the template.`);
      }
    }
    const id = randomUUID();
    const token = this.options.auth.issue(id);
    const session = new KernelSession(id, specName, this.options.log);
    this.kernels.set(id, session);
    this.keys.set(id, key);
    void env; // KERNEL_WORKING_DIR is a path on the Jupyter host: meaningless in the driver.
    try {
      const app = await this.options.api.submit({
        jobName: jobNameFor(specName),
        ...(specName === 'default' ? {} : { configTemplateName: specName }),
        labels: { [KERNEL_LABEL]: 'true', [KERNEL_ID_LABEL]: id, [KERNEL_SPEC_LABEL]: specName },
        configOverrides: {
          type: 'Python',
          ...(this.options.kernelImage ? { image: this.options.kernelImage } : {}),
          mainApplicationFile: this.options.launcherFile,
          driver: {
            env: {
              SUBMISSION_SERVICE_GATEWAY_URL: this.options.launcherUrl(),
              SUBMISSION_SERVICE_KERNEL_ID: id,
              SUBMISSION_SERVICE_KERNEL_TOKEN: token,
              SUBMISSION_SERVICE_KERNEL_SPEC: specName,
            },
          },
        },
      }, key);
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
  async remove(id: string, callerKey?: string): Promise<void> {
    const session = this.get(id);
    const key = callerKey ?? this.keys.get(id);
    session.shutdown();
    this.drop(id);
    if (session.appName) await this.options.api.remove(session.appName, key);
  }

  private drop(id: string): void {
    this.kernels.delete(id);
    this.keys.delete(id);
    this.options.auth.forget(id);
  }

  private cull(): void {
    const limit = Date.now() - this.options.cullIdleSeconds * 1000;
    for (const session of this.kernels.values()) {
      if (session.connections === 0 && session.executionState === 'idle' && session.lastActivity.getTime() < limit) {
        this.options.log.info({ kernel: session.id }, 'culling an idle kernel');
        this.remove(session.id).catch((error: Error) => this.options.log.error({ err: error, kernel: session.id }, 'culling failed'));
      }
    }
  }
}
