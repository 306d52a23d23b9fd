// `testbed up --s3`: Kubernetes mode's history on the test bed. The S3 server (s3-server.ts)
// with a bucket, the credentials Secret drivers get, admission's event-log rules and the log
// archive's finalizer, and Spark's History Server as a host process reading s3a://, as the
// chart's values and Deployment set them up in a cluster.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeClients } from '../cluster/kubernetes/client.js';
import { unlessExists } from '../cluster/kubernetes/errors.js';
import { KubernetesSparkHistory } from '../cluster/kubernetes/kubernetes-history.js';
import { LogArchive } from '../cluster/kubernetes/log-archive.js';
import type { EventFeed } from '../cluster/events.js';
import type { AdmissionRules } from '../domain/index.js';
import { type S3Server, S3_REGION, s3HistoryServer, startS3Server } from './s3-server.js';

const buildScript = join(import.meta.dirname, '..', 'test', 's3', 'build.sh');
export const CREDENTIALS_SECRET = 'spark-history-s3';

/** The S3 server's binary: SUBMISSION_SERVICE_S3_SERVER, else built (once per version) by test/s3/build.sh. */
export function s3ServerBinary(): string {
  const given = process.env.SUBMISSION_SERVICE_S3_SERVER;
  if (given && existsSync(given)) return given;
  return execFileSync('bash', [buildScript], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').at(-1)!;
}

export interface HistoryBed {
  /** The admission rules with event logs to the bucket and the log archive on. */
  rules: AdmissionRules;
  /** The S3A jars of 3.x (FakeKubelet's drivers run the 3.5 Spark setup made). */
  classPath: string;
  logArchive: LogArchive;
  /** The S3 server itself (its endpoint, bucket and keys). */
  s3: S3Server;
  history(events: EventFeed, retentionMs?: number): Promise<KubernetesSparkHistory>;
  stop(): Promise<void>;
}

/** A Spark to run the History Server with: its spark-submit, Python and version. */
export interface HistorySpark { version: string; sparkSubmit: string; python?: string }

/**
 * The S3A class path for a Spark of `version` (pure): Hadoop 3.3.4's connector for 3.x, Hadoop
 * 3.5.0's (AWS SDK v2) for 4.x (scripts/setup.sh fetches both); undefined when it is not here.
 */
export function s3aClassPath(version: string, env: NodeJS.ProcessEnv): string | undefined {
  return (Number(version.split('.')[0]) >= 4 ? env.SUBMISSION_SERVICE_S3A_JARS_SPARK4 : env.SUBMISSION_SERVICE_S3A_JARS) || undefined;
}

/**
 * The History Server's Spark (pure): the newest of `sparks` (newest first) whose S3A jars are
 * here, since a newer Spark's History Server reads older versions' event logs too (4.2 reads 3.5's).
 */
export function historySpark(sparks: readonly HistorySpark[], env: NodeJS.ProcessEnv): (HistorySpark & { classPath: string }) | undefined {
  for (const spark of sparks) {
    const classPath = s3aClassPath(spark.version, env);
    if (classPath) return { ...spark, classPath };
  }
  return undefined;
}

/**
 * `sparks`: the Sparks at hand, newest first (the History Server runs the newest with its S3A
 * jars). `host`: where the S3 server listens (the machine's own address when a real node's pods
 * write to it; loopback by default).
 */
export async function startHistoryBed(options: { dir: string; clients: KubeClients; namespace: string; rules: AdmissionRules; sparks: HistorySpark[]; host?: string }): Promise<HistoryBed> {
  const classPath = process.env.SUBMISSION_SERVICE_S3A_JARS;
  const spark = historySpark(options.sparks, process.env);
  if (!classPath || !spark) throw new Error('--s3 needs the S3A jars: run scripts/setup.sh with SETUP_TEST_TOOLS=1 and source the env file it prints');
  const s3 = await startS3Server(s3ServerBinary(), join(options.dir, 's3'), 'spark-history', options.host);
  const eventLogDir = `s3a://${s3.bucket}/spark-events`;
  await s3.store.ensureFolder('spark-events');
  await options.clients.core.createNamespacedSecret({
    namespace: options.namespace,
    body: { metadata: { name: CREDENTIALS_SECRET }, type: 'Opaque', stringData: { AWS_ACCESS_KEY_ID: s3.accessKey, AWS_SECRET_ACCESS_KEY: s3.secretKey } },
  }).catch(unlessExists);
  const server = s3HistoryServer(s3, { ...spark, eventLogDir, dir: join(options.dir, 'history-server') });
  const logArchive = new LogArchive(s3.store, 'spark-logs');
  // The server's region: Spark 4's S3A (AWS SDK v2) signs for none it can infer from the endpoint.
  const s3Rules = { endpoint: s3.endpoint, pathStyleAccess: true, credentialsSecret: CREDENTIALS_SECRET, region: S3_REGION };
  return {
    rules: { ...options.rules, eventLog: { dir: eventLogDir, rollingMaxFileSize: '128m', s3: s3Rules }, archiveLogs: true },
    classPath,
    logArchive,
    s3,
    history: async (events, retentionMs) => new KubernetesSparkHistory({
      store: s3.store, eventLogPrefix: 'spark-events', server: await server.url(), logArchive, events, retentionMs,
      log: (message) => void process.stderr.write(`${message}\n`),
    }),
    stop: async () => { await server.close(); await s3.stop(); },
  };
}
