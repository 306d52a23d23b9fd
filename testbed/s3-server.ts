// The test bed's S3 server: a real S3 API (versitygw, built from its Go module by
// test/s3/build.sh) serving a directory, on loopback, with one bucket. Spark's S3A connector,
// the controller's log archive and the tests' S3 client all talk to it as they would to S3.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, openSync, closeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { freePort } from '../lib/free-port.js';
import { ObjectStore } from '../cluster/history/object-store.js';
import { LocalHistoryServer } from '../cluster/local/history-server.js';

export interface S3Server {
  endpoint: string;
  bucket: string;
  accessKey: string;
  secretKey: string;
  store: ObjectStore;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/**
 * Starts the server on `dir` (data and metadata under it) and creates `bucket`; resolves once it
 * answers. On loopback unless `host` names another address (the real node's pods reach the
 * machine's own address, not its loopback).
 */
export async function startS3Server(binary: string, dir: string, bucket = 'spark-history', host = '127.0.0.1', options: { users?: boolean } = {}): Promise<S3Server> {
  const data = join(dir, 'data');
  const meta = join(dir, 'meta');
  mkdirSync(data, { recursive: true });
  mkdirSync(meta, { recursive: true });
  const port = await freePort();
  const accessKey = `testbed${randomBytes(4).toString('hex')}`;
  const secretKey = randomBytes(18).toString('base64url');
  const log = openSync(join(dir, 's3-server.log'), 'a');
  // Credentials through the environment, not the command line (which every user can read).
  // `users`: the gateway's own IAM (a directory of accounts), so its admin API can create users
  // (one key per application, domain/event-log-access.ts); without it the root key is the only one.
  const iam = options.users ? ['--iam-dir', join(dir, 'iam')] : [];
  if (options.users) mkdirSync(join(dir, 'iam'), { recursive: true });
  const child: ChildProcess = spawn(binary, ['--port', `${host}:${port}`, ...iam, 'posix', '--sidecar', meta, data], {
    stdio: ['ignore', log, log],
    env: { ...process.env, ROOT_ACCESS_KEY_ID: accessKey, ROOT_SECRET_ACCESS_KEY: secretKey },
  });
  closeSync(log);
  let exited = false;
  child.once('exit', () => { exited = true; });
  const endpoint = `http://${host}:${port}`;
  const store = new ObjectStore(bucket, { endpoint, accessKey, secretKey, pathStyle: true });
  const stop = async () => {
    if (exited) return;
    const gone = new Promise((ok) => child.once('exit', ok));
    child.kill('SIGTERM');
    await Promise.race([gone, sleep(5000)]);
    if (!exited) child.kill('SIGKILL');
  };
  for (let waited = 0; ; waited += 100) {
    if (exited) throw new Error(`the S3 server exited while starting (log: ${join(dir, 's3-server.log')})`);
    try {
      await store.ensureBucket();
      break;
    } catch (error) {
      if (waited > 60_000) { await stop(); throw error; }
      await sleep(100);
    }
  }
  return { endpoint, bucket, accessKey, secretKey, store, stop };
}

/**
 * Spark's History Server as a host process reading the event logs from this server (s3a://),
 * as the chart's Deployment does in a cluster: the S3A jars on its classpath, the credentials
 * in its environment. Started on first use (`url()`), like local mode's.
 */
export function s3HistoryServer(s3: S3Server, options: { sparkSubmit: string; python?: string; classPath: string; eventLogDir: string; dir: string }): LocalHistoryServer {
  mkdirSync(options.dir, { recursive: true });
  return new LocalHistoryServer({
    sparkClass: join(dirname(options.sparkSubmit), 'spark-class'), python: options.python,
    logDir: options.eventLogDir, runDir: options.dir, logFile: join(options.dir, 'history-server.log'),
    props: s3aProperties(s3),
    env: { SPARK_DIST_CLASSPATH: options.classPath, AWS_ACCESS_KEY_ID: s3.accessKey, AWS_SECRET_ACCESS_KEY: s3.secretKey },
    // It stands in for the chart's History Server, which is not gated (a NetworkPolicy keeps it for the service).
    gate: false,
  });
}

/** What S3A needs to reach this server (the properties admission sets from the chart's history values). */
export const s3aProperties = (s3: S3Server): Record<string, string> => ({
  'spark.hadoop.fs.s3a.endpoint': s3.endpoint,
  'spark.hadoop.fs.s3a.path.style.access': 'true',
  'spark.hadoop.fs.s3a.directory.marker.retention': 'keep',
  'spark.hadoop.fs.s3a.endpoint.region': S3_REGION,
});

/** The region the server answers as (versitygw's default); Spark 4's S3A must sign for it. */
export const S3_REGION = 'us-east-1';
