// `submission-service local`: API + in-process admission + local Spark drivers.
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { RetentionSweeper, parseRetention } from '../cluster/history/retention.js';
import { LocalCluster } from '../cluster/local/local-cluster.js';
import { ProfileRecorder } from '../cluster/profile-recorder.js';
import { readRunProfile } from '../cluster/history/run-profile-reader.js';
import type { LocalLogger } from '../cluster/local/logger.js';
import { type AdmissionRules, attemptLauncherToken } from '../domain/index.js';
import { FileScheduleStore } from '../cluster/schedules/file-schedule-store.js';
import { ScheduleRunner, type TickAdmission } from '../cluster/schedules/runner.js';
import { parseByteSize } from '../cluster/local/work-dir-space.js';
import { defaultLogBudget } from '../cluster/local/log-budget-files.js';
import { eventLogDir, LocalSparkHistory } from '../cluster/local/local-history.js';
import { LocalSparkStatic } from '../cluster/local/spark-static.js';
import { SparkEnvs } from '../cluster/local/spark-envs.js';
import { makePrivateDir } from '../lib/atomic-file.js';
import { loggerOptions } from '../lib/logger.js';
import { LOOPBACK_HOSTS } from '../submit-api/host-allowlist.js';
import { logSerializers } from '../submit-api/log-redaction.js';
import { loadSessionSecret } from '../dashboard/session-secret.js';
import { FileKeyStore } from '../submit-api/auth/key-store.js';
import { KERNEL_LABEL } from '../gateway/kernel-registry.js';
import { gatewayPlugin } from '../gateway/plugin.js';
import { apiGatewayProof, dialable, gatewaySecret, kernelsPerKeyFlag, lifecycleFlags, localGatewayKey, localLauncherFile, parseKernelsPerKey, parseLifecycle, parseWarmPool } from './gateway-wiring.js';
import { defaultDataDir, findSpark, javaProblem, listFlag } from './config.js';
import { rulesFrom } from './rules.js';
import { connectionFlags, connectionLimitsFrom } from './connection-flags.js';
import { fairShareFlags, fairShareFrom } from './fair-share-flags.js';
import { parseIdempotencyWindow } from '../submit-api/idempotency.js';
import { buildService, exitOnSignals } from './service.js';
import { adminOnlyStore, chooseSandbox, type SandboxMode } from './local-sandbox.js';
import { lockDataDir } from '../lib/data-dir-lock.js';
import { startLocalConnect } from './connect-local.js';
import { connectFlags, parseConnectFlags } from './connect-wiring.js';

/** `submission-service local`'s flags; defaults read when called (PORT, the cores, the home dir). */
function localOptions() {
  return {
    port: { type: 'string', default: process.env.PORT ?? '8080' },
    host: { type: 'string', default: '127.0.0.1' },
    'data-dir': { type: 'string', default: defaultDataDir() },
    'node-pools': { type: 'string' },
    auth: { type: 'string', default: 'off' },
    cores: { type: 'string', default: String(availableParallelism()) },
    'allowed-hosts': { type: 'string', default: LOOPBACK_HOSTS.join(',') },
    'trust-proxy': { type: 'boolean', default: false },
    'allowed-origins': { type: 'string', default: '' },
    'spark-ui-host': { type: 'string' },
    'cull-idle-seconds': { type: 'string', default: '0' },
    'warm-pool': { type: 'string', multiple: true },
    // How long ended runs are kept: record, log, event log (README, "History").
    retention: { type: 'string', default: '30d' },
    history: { type: 'string', default: 'on' },
    'kernels-per-key': kernelsPerKeyFlag,
    sandbox: { type: 'string', default: 'auto' },
    'driver-user': { type: 'string', default: 'nobody' },
    ...lifecycleFlags,
    // How long an Idempotency-Key answers with the application it made (README, "Safe retries").
    'idempotency-window': { type: 'string', default: '24h' },
    // One key's applications, its kernels included, hold at most this share of --cores (0 or 1: no share).
    'key-core-share': { type: 'string', default: '0.5' },
    // A driver's work dir: a tmpfs of this size (as root, with the sandbox); its log: this many bytes, head and tail.
    'work-dir-cap': { type: 'string', default: '1GiB' },
    'log-cap': { type: 'string', default: '64MiB' },
    // All drivers' logs together (auto: a quarter of the data dir's filesystem; off: no total bound).
    'log-budget': { type: 'string', default: 'auto' },
    ...fairShareFlags,
    ...connectionFlags,
    ...connectFlags,
  } as const;
}

/** The `spark-class` beside a spark-submit (on PATH when it is named bare). */
const sparkClassBeside = (sparkSubmit: string): string => (sparkSubmit.includes('/') ? join(dirname(sparkSubmit), 'spark-class') : 'spark-class');

/**
 * Records each run that ends into its job's profile (the cluster keeps them beside the records),
 * its event log read once Spark closed it; the profiles are the API's (costs, recommendations).
 */
function recordRuns(cluster: LocalCluster, history: LocalSparkHistory | undefined, rules: AdmissionRules, log: LocalLogger) {
  const readProfile = history && (async (appName: string) => {
    const log = await history.eventLog(appName);
    return log ? readRunProfile(log.dir, log.entry) : null;
  });
  // Until the process ends.
  new ProfileRecorder({ cluster, profiles: cluster.jobs, rules, readProfile, warn: (message, fields) => log.warn(fields, message) });
  return cluster.jobs;
}

/** Schedules: files beside the records; their loop runs in this process (cluster/schedules/runner.ts). */
function localSchedules(dataDir: string, cluster: LocalCluster, log: LocalLogger) {
  const store = new FileScheduleStore(join(dataDir, 'schedules'), { log });
  const scheduler = new ScheduleRunner({ store, cluster, log: (level, message, fields) => log[level](fields ?? {}, message) });
  return { scheduler, schedules: { store, changed: () => scheduler.wake(), admitTicksWith: (admit: TickAdmission) => scheduler.admitTicksWith(admit) } };
}

/**
 * Each application runs its engineVersion's Spark: a virtualenv per version, made at its first
 * use (spark-envs.ts). One History Server, of the newest Spark prepared here: a newer Spark reads
 * older versions' event logs (README, "Spark versions"). Spark's static files per version.
 */
function sparkVersions(spark: ReturnType<typeof findSpark>, offered: string[]) {
  const sparkEnvs = new SparkEnvs({ base: spark });
  const historySpark = async () => {
    const newest = (await sparkEnvs.preparedNewestFirst(offered))[0] ?? { version: 'base', ...spark };
    return { key: newest.version, sparkClass: sparkClassBeside(newest.sparkSubmit), python: newest.python };
  };
  const sparkStatic = new LocalSparkStatic({
    sparkClass: sparkClassBeside(spark.sparkSubmit), python: spark.python,
    // Offered versions only, and only once prepared: a request builds nothing.
    sparkOf: async (version) => {
      const install = offered.includes(version) ? await sparkEnvs.ready(version) : undefined;
      return install && { sparkClass: sparkClassBeside(install.sparkSubmit), python: install.python };
    },
  }).reader;
  return { sparkEnvs, historySpark, sparkStatic };
}

/** The flags on history, disk and the cores' share, checked. */
function diskAndShareFlags(values: { history: string; retention: string; 'log-cap': string; 'log-budget': string; 'work-dir-cap': string; 'key-core-share': string }, dataDir: string) {
  if (values.history !== 'on' && values.history !== 'off') throw new Error('--history takes on or off');
  const keyCoreShare = Number(values['key-core-share']);
  if (!/^\d*\.?\d+$/.test(values['key-core-share']) || keyCoreShare > 1) throw new Error('--key-core-share takes a share of the cores from 0 to 1 (0 or 1: none), such as 0.5');
  return {
    retentionMs: parseRetention(values.retention),
    logCap: parseByteSize(values['log-cap'], '--log-cap'),
    logBudget: values['log-budget'] === 'auto' ? defaultLogBudget(dataDir) : parseByteSize(values['log-budget'], '--log-budget'),
    workDirCapAsked: parseByteSize(values['work-dir-cap'], '--work-dir-cap'),
    keyCoreShare,
  };
}

export async function localCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: localOptions() });
  if (values.auth !== 'on' && values.auth !== 'off') throw new Error('--auth takes on or off');
  if (!['auto', 'on', 'off'].includes(values.sandbox)) throw new Error('--sandbox takes auto, on or off');
  const dataDir = values['data-dir'];
  // Before anything reads or writes the records: a second process on them refuses to start.
  lockDataDir(dataDir);
  const [warmPool, connect] = [parseWarmPool(values['warm-pool']), parseConnectFlags(values)];
  const { retentionMs, logCap, logBudget, workDirCapAsked, keyCoreShare } = diskAndShareFlags(values, dataDir);
  const spark = findSpark();
  const store = new FileKeyStore(dataDir);
  // User code never runs as this service: a sandbox for the drivers, else admin keys only (docs/security.md).
  const { sandbox, problem } = chooseSandbox(values.sandbox as SandboxMode, values.auth === 'on', { dataDir, ...spark, driverUser: values['driver-user'] });
  // Every driver writes an event log there (a template or submission may turn it off), so its
  // Spark UI opens from the history once it ended. A sandboxed driver writes into its own work
  // dir, and the service moves the log there when it ended (cluster/local/sandbox-event-log.ts).
  const withHistory = values.history === 'on';
  if (withHistory) makePrivateDir(eventLogDir(dataDir));
  const rules = { ...rulesFrom(values['node-pools'], 'local'), ...(withHistory ? { eventLog: { dir: `file://${eventLogDir(dataDir)}`, rollingMaxFileSize: '128m' } } : {}) };
  const kernelsPerKey = parseKernelsPerKey(values['kernels-per-key']);
  // Kernel labels only from the gateway (lib/gateway-proof.ts): in-process, a proof of this process alone.
  const proof = apiGatewayProof();
  const fairShare = fairShareFrom(values, values['node-pools']);
  // One logger for requests and for local mode's background work.
  const log = pino({ ...loggerOptions('local'), serializers: logSerializers });
  const gatewayKey = values.auth === 'on' ? localGatewayKey(dataDir, store) : undefined;
  const auth = {
    enabled: values.auth === 'on',
    store: values.auth === 'on' && !sandbox ? adminOnlyStore(store, gatewayKey && store.verify(gatewayKey)?.id, problem ?? 'none found') : store,
  };
  // Kernels start at once beside batch applications instead of queueing for cores (gateway/README.md).
  const driverSandbox = sandbox && withHistory ? { ...sandbox, eventLogDir: eventLogDir(dataDir) } : sandbox;
  // Capped work dirs where several people's drivers share the data dir's disk (sandboxed), on
  // space of their own, which needs a mount, so root (docs/security.md, "Disk and files"). A
  // single user's unsandboxed drivers keep their spill and shuffle files on disk, uncapped.
  const workDirCap = sandbox && process.getuid?.() === 0 ? workDirCapAsked : undefined;
  const { sparkEnvs, historySpark, sparkStatic } = sparkVersions(spark, rules.engineVersions);
  // A retried kernel's launcher tokens: under the secret shared with a standalone gateway, else one
  // of this process alone (never DIR/gateway-secret, which local drivers can read).
  const attemptSecret = process.env.SUBMISSION_SERVICE_GATEWAY_SECRET || randomBytes(32).toString('base64url');
  const retryLauncherToken = (kernelId: string, attempt: number) => attemptLauncherToken(attemptSecret, kernelId, attempt);
  const cluster = new LocalCluster({ dataDir, rules, cores: Number(values.cores), log, interactiveLabel: KERNEL_LABEL, sandbox: driverSandbox, keyCoreShare, workDirCap, logCap, logBudget, sparkEnvs, retryLauncherToken, ...spark });
  const history = withHistory ? new LocalSparkHistory({ dataDir, sparkClass: sparkClassBeside(spark.sparkSubmit), python: spark.python, spark: historySpark, events: cluster.events, log, retentionMs, recorded: cluster.recordedRuns }) : undefined;
  const sweeper = retentionMs === undefined ? undefined : new RetentionSweeper({
    cluster, history, retentionMs, onError: (error, appName) => log.warn({ err: error, appName }, 'retention: could not remove an expired application'),
  });
  const { scheduler, schedules } = localSchedules(dataDir, cluster, log);
  const sparkUiHost = values['spark-ui-host'];
  // The Spark UI host is one of this service's names (dashboard/spark-ui-access.ts).
  const allowedHosts = [...listFlag(values['allowed-hosts']), ...(sparkUiHost ? [`*.${sparkUiHost}`] : [])];
  const api = await buildService({
    cluster,
    history, jobs: recordRuns(cluster, history, rules, log),
    auth,
    loggerInstance: log,
    policy: rules.policy,
    // With auth off, only these Host names are served (DNS rebinding); `*` for any.
    allowedHosts,
    // The dashboard's session cookies: signed with <data-dir>/session-secret (created 0600 once).
    sessionSecret: loadSessionSecret(dataDir),
    trustProxy: values['trust-proxy'],
    gatewayProof: proof,
    fairShare,
    sparkUiHost,
    sparkStatic, // Spark's static files by version: the pages' links name it (dashboard/spark-ui-static.ts)

    idempotencyWindowMs: parseIdempotencyWindow(values['idempotency-window']),
    schedules,
    ...connectionLimitsFrom(values),
  });
  // The notebook gateway on the same server, calling the API over HTTP like any client would.
  const self = () => dialable(values.host, api.server.address());
  await api.register(gatewayPlugin, {
    auth, apiUrl: () => `http://${self()}`, apiKey: gatewayKey,
    launcherUrl: () => `ws://${self()}/notebooks`, launcherFile: localLauncherFile(),
    secret: gatewaySecret(dataDir), cullIdleSeconds: Number(values['cull-idle-seconds']), warmPool,
    kernelsPerKey, launcherDir: join(dataDir, 'launchers'), attemptSecret, apiProof: proof, lifecycle: parseLifecycle(values),
    websocketsPerKey: fairShare.websocketsPerKey,
    // Websockets: the HTTP Host allowlist (while auth is off) and browser pages of these origins only.
    upgrades: { allowedHosts: auth.enabled ? undefined : allowedHosts, allowedOrigins: listFlag(values['allowed-origins']) },
  });
  javaProblem().then((java) => { if (java) api.log.warn(java); }, (error: unknown) => api.log.warn({ err: error }, 'could not check the Java version'));
  if (sandbox && workDirCapAsked !== undefined && workDirCap === undefined) api.log.warn('work dirs are not capped: a tmpfs per work dir needs the service to run as root (docs/security.md, "Disk and files")');
  api.log.info({ dataDir, nodePools: rules.pools.map((p) => p.instanceName), cores: Number(values.cores), driverSandbox: sandbox ? (sandbox.user ? `bwrap as uid ${sandbox.user.uid}` : 'bwrap') : `none (${problem})` }, 'local mode');
  const address = await api.listen({ port: Number(values.port), host: values.host });
  scheduler.start();
  // Before the endpoint serves: the Connect servers a crash of the last run left are stopped.
  const endpoint = await startLocalConnect(cluster, values.host, connect, { dataDir, auth, log, apiUrl: () => `http://${self()}`, defaultVersion: rules.defaultEngineVersion, proof });
  process.stdout.write(`Submission Service (local mode) at ${address}/api/  notebooks at ${address}/notebooks  data in ${join(dataDir)}\n`);
  exitOnSignals(api.log, async () => {
    sweeper?.close();
    await endpoint?.close(); // its sessions first: stopped through the cluster, which closes last
    await scheduler.stop();
    await api.close();
    await history?.close();
    await cluster.close();
  });
  return -1; // keeps running
}
