// The API in-process over a LocalCluster sized with the example cluster of SPEC.md,
// driven through `app.inject`. Everything it starts is ended when the test ends.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance, InjectOptions } from 'fastify';
import type { Application, NodePool } from '../../schemas/index.js';
import { randomBytes } from 'node:crypto';
import { LocalCluster, type LocalClusterOptions } from '../../cluster/local/local-cluster.js';
import { FileScheduleStore } from '../../cluster/schedules/file-schedule-store.js';
import { ScheduleRunner, type SchedulerClock } from '../../cluster/schedules/runner.js';
import { buildService, type ServiceOptions } from '../../cli/service.js';
import type { KeyLookup } from '../../dashboard/session.js';
import type { ApiOptions } from '../../submit-api/app.js';
import type { KeyVerifier } from '../../submit-api/auth/plugin.js';
import type { ApiLimits } from '../../submit-api/limits.js';
import { buildPolicy, buildRules, type SubmissionPolicy } from '../../domain/index.js';
import { killDrivers } from './drivers.js';
import { writeFakeSparkSubmit } from './fake-spark-submit.js';
import { sleep, tempDir } from './temp.js';

export const repoRoot = join(import.meta.dirname, '..', '..');
export const exampleClusterFile = join(repoRoot, 'examples', 'example-cluster.json');

export interface ExampleCluster {
  nodePools: NodePool[];
  expected: {
    defaultDriver: { cores: number; coreRequest: string; memory: string };
    defaultExecutor: { cores: number; coreRequest: string; memory: string; instances: number };
    executorByCores: Record<string, { coreRequest: string; memory: string }>;
    rejectedExecutorCores: number;
  };
}

export const exampleCluster = (): ExampleCluster => JSON.parse(readFileSync(exampleClusterFile, 'utf8')) as ExampleCluster;

interface TestLike { teardown(fn: () => unknown): void }

export interface TestApi {
  app: FastifyInstance;
  cluster: LocalCluster;
  dataDir: string;
  /** inject, with the JSON body parsed when there is one. */
  call(method: InjectOptions['method'], url: string, payload?: unknown, headers?: Record<string, string>):
    Promise<{ status: number; json: any; body: string; headers: Record<string, unknown> }>;
  getApp(appName: string): Promise<Application & { stateDetail?: string }>;
  /** With options.schedules: the store and the loop. */
  schedules?: { store: FileScheduleStore; runner: ScheduleRunner };
}

export interface TestApiOptions {
  /** Cores the machine lends to drivers (LocalCluster `cores`). */
  cores?: number;
  /** The real spark-submit and python; default: the TEST DOUBLE of fake-spark-submit.ts. */
  spark?: { sparkSubmit: string; python?: string };
  /** An existing data dir (e.g. one with crafted records); default: a fresh temp dir. */
  dataDir?: string;
  auth?: { enabled: boolean; store: KeyVerifier & KeyLookup };
  /** Passed to LocalCluster: a logger, and where records are written (to inject a full disk). */
  log?: LocalClusterOptions['log'];
  writeFile?: LocalClusterOptions['writeFile'];
  /** The policy section of a node-pool file (allowlists, who may act on whose applications). */
  policy?: Partial<SubmissionPolicy>;
  /** Timeouts and caps of the API (submit-api/limits.ts). */
  limits?: Partial<ApiLimits>;
  /** Host names served while auth is off (DNS rebinding). */
  allowedHosts?: string[];
  /** A pino logger for fastify (e.g. captureLog's); default: none. */
  logger?: ApiOptions['loggerInstance'];
  /** The dashboard's session secret (replicas of one test share it); default: a random one. */
  sessionSecret?: Buffer;
  /** fastify trustProxy (X-Forwarded-Proto honoured). */
  trustProxy?: boolean;
  /** The notebook gateway's proof (lib/gateway-proof.ts): submissions with kernel labels need it. */
  gatewayProof?: string;
  /** Per-key limits (submit-api/fair-share.ts); default: the service's defaults. */
  fairShare?: ApiOptions['fairShare'];
  idempotencyWindowMs?: number;
  /** Proxied Spark UIs on a host of their own (dashboard/spark-ui-access.ts). */
  sparkUiHost?: string;
  /** Proxied Spark UI requests per key, an answer's time and bytes (dashboard/spark-ui-limits.ts). */
  sparkUiLimits?: ServiceOptions['sparkUiLimits'];
  /** Schedules (local mode's store and loop), the loop on this clock and started only when asked. */
  schedules?: { clock?: SchedulerClock; start?: boolean };
  /** More LocalCluster options: a key's share of the cores, caps on work dirs and logs. */
  local?: Pick<LocalClusterOptions, 'keyCoreShare' | 'workDirCap' | 'logCap' | 'sandbox' | 'sparkEnvs' | 'retryLauncherToken'>;
}

export async function startTestApi(t: TestLike, options: TestApiOptions = {}): Promise<TestApi> {
  const root = tempDir(t);
  const dataDir = options.dataDir ?? join(root, 'data');
  const spark = options.spark ?? { sparkSubmit: writeFakeSparkSubmit(root) };
  const cluster = new LocalCluster({
    dataDir,
    rules: buildRules({ nodePools: exampleCluster().nodePools, namespace: 'local', policy: options.policy }),
    cores: options.cores ?? 2,
    pollMs: 100,
    log: options.log,
    writeFile: options.writeFile,
    ...options.local,
    ...spark,
  });
  const scheduleStore = options.schedules ? new FileScheduleStore(join(dataDir, 'schedules'), { log: { info: () => undefined, warn: () => undefined, error: () => undefined } }) : undefined;
  const runner = scheduleStore && new ScheduleRunner({ store: scheduleStore, cluster, clock: options.schedules?.clock });
  // The whole process as the CLI builds it: the API with the dashboard on top.
  const app = await buildService({
    schedules: scheduleStore && { store: scheduleStore, changed: () => runner!.wake(), admitTicksWith: (admit) => runner!.admitTicksWith(admit) },
    cluster,
    policy: buildPolicy(options.policy),
    // The overload guard off unless a test sets it (test/security/overload.test.ts): this API shares
    // its event loop with the test and tap, and under CI load (two hogs, load 25) it answered 503.
    limits: { maxEventLoopDelayMs: 0, ...options.limits },
    allowedHosts: options.allowedHosts,
    auth: options.auth ?? { enabled: false, store: { verify: () => undefined, byId: () => undefined } },
    sessionSecret: options.sessionSecret ?? randomBytes(32),
    trustProxy: options.trustProxy,
    loggerInstance: options.logger,
    gatewayProof: options.gatewayProof,
    fairShare: options.fairShare,
    sparkUiHost: options.sparkUiHost,
    idempotencyWindowMs: options.idempotencyWindowMs,
    sparkUiLimits: options.sparkUiLimits,
    jobs: cluster.jobs,
  });
  // Registered after tempDir's teardown, so it runs first (tap runs teardowns in reverse).
  if (options.schedules?.start) runner!.start();
  t.teardown(async () => {
    await runner?.stop();
    await app.close();
    // Closed first, so that no queued app starts; then every running driver is stopped
    // through the cluster, so its end is recorded before the directory goes away.
    await cluster.close();
    const { items } = await cluster.list({ limit: 500 });
    await Promise.all(items.filter((r) => r.state === 'RUNNING').map((r) => cluster.stop(r.appName)));
    await sleep(50); // exit handlers of drivers that ended on their own
    await cluster.close();
    killDrivers(dataDir);
  });
  const call: TestApi['call'] = async (method, url, payload, headers) => {
    const res = await app.inject({ method, url, payload: payload as InjectOptions['payload'], headers });
    let json: unknown;
    try { json = res.body ? JSON.parse(res.body) : undefined; } catch { json = undefined; }
    return { status: res.statusCode, json, body: res.body, headers: res.headers };
  };
  const getApp = async (appName: string) => {
    const res = await call('GET', `/api/apps/${appName}`);
    if (res.status !== 200) throw new Error(`GET ${appName}: ${res.status} ${res.body}`);
    return res.json;
  };
  return { app, cluster, dataDir, call, getApp, ...(scheduleStore && runner ? { schedules: { store: scheduleStore, runner } } : {}) };
}
