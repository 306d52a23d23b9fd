// Spark's own History Server for local mode, from the same Spark the drivers use: started on
// first need (most runs of the service never open an old run's UI, and it is a JVM), bound to
// loopback only (it shows every run; the dashboard's proxy shows each user their own), ended
// with the service. A server left by a killed service is ended at the next start (pid file).
// Loopback is not enough: every local driver shares it. Spark's UI filter ServiceGate
// (ui-gate.ts) refuses every request without a secret that this service alone knows and sends
// (`headers`); the secret is new at each start and reaches the JVM by its environment.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../lib/free-port.js';
import { isAlive, killGroup, processStartTicks } from './process-runner.js';
import { buildUiGate, gateClasses, newGateSecret, UI_GATE_CLASS, UI_GATE_ENV, UI_GATE_HEADER } from './ui-gate.js';
import { sparkJars } from './spark-builds.js';

export interface HistoryServerOptions {
  /** Spark's `spark-class` (beside the drivers' spark-submit). */
  sparkClass: string;
  /** The Python whose pyspark holds Spark (pip's spark-class finds SPARK_HOME with it), as the drivers use. */
  python?: string;
  /**
   * Which Spark to run, asked at each start and each `url()`: when its `key` (the version)
   * changed since the server started, the server is started again on it. Local mode names the
   * newest Spark prepared there, which reads every older version's event logs. Default:
   * `sparkClass` and `python`.
   */
  spark?: () => Promise<HistorySpark>;
  /** Local directory of the event logs, or a URL Spark reads (`s3a://bucket/prefix` with `props` and `env` for S3A). */
  logDir: string;
  /** More Spark properties (e.g. `spark.hadoop.fs.s3a.endpoint`). */
  props?: Record<string, string>;
  /** More environment (e.g. SPARK_DIST_CLASSPATH with the S3A jars, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY). */
  env?: Record<string, string>;
  /** Where its pid file and its own log go (the data dir's run/ and logs/). */
  runDir: string;
  logFile: string;
  /** How often it looks for new and updated logs, in seconds (Spark's default is 10). */
  updateIntervalSeconds?: number;
  /** How long to wait for it to answer after starting it. */
  startTimeoutMs?: number;
  /**
   * Refuse every request without the service's secret (ui-gate.ts; default true). False only for
   * a stand-in for the chart's History Server, which a NetworkPolicy keeps for the service instead.
   */
  gate?: boolean;
}

/** One Spark to run the History Server from. */
export interface HistorySpark { key: string; sparkClass: string; python?: string }

interface Running { pid: number; startTicks: number; url: URL; exited: Promise<void>; key: string }

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/** Whether a History Server answers its REST API at this address. */
async function answers(url: URL, headers: Record<string, string>): Promise<boolean> {
  try {
    const response = await fetch(new URL('/api/v1/version', url), { headers, signal: AbortSignal.timeout(2000) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

export class LocalHistoryServer {
  private running: Promise<Running> | undefined;
  private closed = false;
  private readonly secret = newGateSecret();
  private readonly gates = new Map<string, Promise<string>>();
  /** What every request to the server must carry: the gate's secret. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(private readonly options: HistoryServerOptions) {
    this.headers = options.gate === false ? {} : { [UI_GATE_HEADER]: this.secret };
    this.endLeftover();
  }

  /** The server's address, starting it (once; again if it died) and waiting until it answers. */
  async url(): Promise<URL> {
    if (this.closed) throw new Error('the history server is closed');
    const spark = await this.chosenSpark();
    const current = this.running && (await this.running.catch(() => undefined));
    if (current && isAlive(current.pid, current.startTicks) && current.key === spark.key) return current.url;
    // A newer Spark was prepared since: the older server goes (its replays are redone on demand).
    if (current) await killGroup(current.pid, current.startTicks, 3000);
    this.running = this.start(spark);
    return (await this.running).url;
  }

  private chosenSpark(): Promise<HistorySpark> {
    const { spark, sparkClass, python } = this.options;
    return spark ? spark() : Promise.resolve({ key: 'default', sparkClass, python });
  }

  async close(): Promise<void> {
    this.closed = true;
    const current = this.running && (await this.running.catch(() => undefined));
    if (current) await killGroup(current.pid, current.startTicks, 3000);
    rmSync(this.pidFile, { force: true });
  }

  private get pidFile(): string {
    return join(this.options.runDir, 'history-server.pid');
  }

  /** The built filter's classes for one Spark (once; again after a failure). */
  private gateClasses(spark: HistorySpark): Promise<string> {
    let gate = this.gates.get(spark.key);
    if (!gate) {
      gate = sparkJars(spark.sparkClass, spark.python).then(buildUiGate).then(gateClasses);
      this.gates.set(spark.key, gate);
      gate.catch(() => this.gates.delete(spark.key));
    }
    return gate;
  }

  private async start(spark: HistorySpark): Promise<Running> {
    const gated = this.options.gate !== false;
    const classes = gated ? await this.gateClasses(spark) : undefined;
    const port = await freePort();
    const url = new URL(`http://127.0.0.1:${port}`);
    const props = {
      'spark.history.fs.logDirectory': this.options.logDir.includes('://') ? this.options.logDir : `file://${this.options.logDir}`,
      'spark.history.ui.port': String(port),
      'spark.history.fs.update.interval': `${this.options.updateIntervalSeconds ?? 1}s`,
      // A taken port is an error to retry with another, not a silent bind elsewhere.
      'spark.port.maxRetries': '0',
      // Retention is the service's (cluster/history/retention.ts), not the History Server's cleaner.
      'spark.history.fs.cleaner.enabled': 'false',
      // Replayed runs stay in memory (Spark's default): its disk store (spark.history.store.path,
      // hybrid or not) served a 10,000-task run's job page in 7 s instead of 1.5 s here, and
      // after a restart the run was replayed again all the same (64 s).
      ...this.options.props,
      // Only the service's requests pass (ServiceGate); the secret is in the environment below.
      ...(gated ? { 'spark.ui.filters': UI_GATE_CLASS } : {}),
    };
    const log = openSync(this.options.logFile, 'a', 0o600);
    const child = spawn(spark.sparkClass, ['org.apache.spark.deploy.history.HistoryServer'], {
      detached: true,
      stdio: ['ignore', log, log],
      env: {
        ...process.env,
        SPARK_HISTORY_OPTS: Object.entries(props).map(([k, v]) => `-D${k}=${v}`).join(' '),
        SPARK_LOCAL_IP: '127.0.0.1', // its UI binds loopback only
        SPARK_LOG_DIR: this.options.runDir,
        SPARK_NO_DAEMONIZE: '1',
        ...(spark.python ? { PYSPARK_PYTHON: spark.python, PYSPARK_DRIVER_PYTHON: spark.python } : {}),
        ...this.options.env,
        SPARK_DAEMON_CLASSPATH: [classes, this.options.env?.SPARK_DAEMON_CLASSPATH].filter(Boolean).join(':'),
        ...(gated ? { [UI_GATE_ENV]: this.secret } : {}),
      },
    });
    closeSync(log);
    if (child.pid === undefined) throw new Error(`could not start ${spark.sparkClass}`);
    const pid = child.pid;
    const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
    let ended = false;
    void exited.then(() => { ended = true; });
    const startTicks = processStartTicks(pid) ?? 0;
    writeFileSync(this.pidFile, `${pid} ${startTicks}\n`, { mode: 0o600 });
    const deadline = Date.now() + (this.options.startTimeoutMs ?? 120_000);
    while (!ended && Date.now() < deadline) {
      if (await answers(url, this.headers)) return { pid, startTicks, url, exited, key: spark.key };
      await sleep(200);
    }
    await killGroup(pid, startTicks, 1000);
    throw new Error(ended ? 'the Spark History Server exited while starting' : 'the Spark History Server did not answer in time');
  }

  private endLeftover(): void {
    let text: string;
    try { text = readFileSync(this.pidFile, 'utf8'); } catch { return; }
    const [pid, startTicks] = text.trim().split(' ').map(Number);
    if (Number.isSafeInteger(pid) && pid > 1 && isAlive(pid, startTicks)) {
      killGroup(pid, startTicks, 1000).catch(() => { /* gone already */ });
    }
    rmSync(this.pidFile, { force: true });
  }
}
