// Local mode: the same admission runs in-process on each bare pod, and the admitted
// driver pod runs as a local spark-submit process (master local[N]). Apps wait
// PENDING while their cores are not free on this machine.
import { writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { freePort } from '../../lib/free-port.js';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { type AdmissionRules, admitPod, type AttemptEnd, ANNOTATION_SUBMITTED_BY, applicationLabels, KERNEL_CLAIMER_LABEL, LABEL_JOB, LABEL_TEMPLATE, withLauncherTokenFile } from '../../domain/index.js';
import type { AppRecord, Cluster, CreateOptions, CreateResult, ListQuery, Page } from '../cluster.js';
import { ConflictError, isTerminal } from '../cluster.js';
import { applyChange, idempotencyOf } from '../app-record.js';
import { type AppEventType, EventFeed } from '../events.js';
import { matchesQuery, pageOf } from '../paging.js';
import { logStream } from './log-stream.js';
import { isAlive, killGroup, readExitCode, staleExitTemp, startDriverPod } from './process-runner.js';
import { RecordStore, type StoredApp } from './record-store.js';
import { LocalJobProfiles } from './job-profiles.js';
import { localCores } from './spark-command.js';
import { coresWithinShare, FairQueue, keyCoreLimit } from './fair-queue.js';
import { FileTemplateStore } from './template-store.js';
import { newAppName } from '../app-name.js';
import { makePrivateDir, removeTempFiles, type WriteFileAtomic } from '../../lib/atomic-file.js';
import { defaultLocalLogger, type LocalLogger } from './logger.js';
import { type SubmissionInfo, submissionInfo } from '../submission-info.js';
import { serviceFileRefusal } from './service-files.js';
import type { DriverSandbox } from './sandbox.js';
import { collectEventLogs } from './sandbox-event-log.js';
import { mountWorkDir, releaseWorkDir, workDirFull } from './work-dir-space.js';
import { formatBytes } from './log-cap.js';
import { afterRun, localAttemptEnd, retryPod, startAttempt } from './local-attempts.js';
import { DriverUiGates } from './driver-ui-gate.js';
import { UI_GATE_HEADER } from './ui-gate.js';
import type { SparkInstall } from './spark-envs.js';

/** What an exit file holds until the wrapper writes the code over it: room for any code, and no number. */
const EXIT_FILE_PLACEHOLDER = ' '.repeat(8);

export interface LocalClusterOptions {
  dataDir: string;
  rules: AdmissionRules;
  sparkSubmit: string;
  python?: string;
  /** Cores this machine lends to drivers. */
  cores: number;
  /** How often re-attached drivers (started before a restart) are checked. */
  pollMs?: number;
  /** The service's logger (background failures are logged here); default: warnings to stderr. */
  log?: LocalLogger;
  /** Where records and templates are written; tests inject failures (a full disk) here. */
  writeFile?: WriteFileAtomic;
  /**
   * Applications with this label set to "true" start at once and hold none of the batch cores:
   * interactive drivers (notebook kernels) idle most of the time, and a person waiting behind a
   * batch queue is worse than sharing the CPU. Undefined: every application queues.
   */
  interactiveLabel?: string;
  /** Drivers start inside this sandbox (sandbox.ts): no driver reads the data dir or runs as the service. */
  sandbox?: DriverSandbox;
  /** The share of `cores` one key's batch applications may hold at once (fair-queue.ts); undefined or 0: no share. */
  keyCoreShare?: number;
  /** Bytes each driver's work dir may take, on a tmpfs of its own (work-dir-space.ts; needs root). Undefined: no cap. */
  workDirCap?: number;
  /** Bytes each driver's log file may take: its head and its tail (log-cap.ts). Undefined: no cap. */
  logCap?: number;
  /**
   * The Spark of each engineVersion (spark-envs.ts): ready now, or prepared (a virtualenv made)
   * at its first application. Undefined: every application runs `sparkSubmit`.
   */
  sparkEnvs?: {
    ready(version: string): Promise<SparkInstall | undefined>;
    prepare(version: string): Promise<SparkInstall>;
  };
}


export class LocalCluster implements Cluster {
  readonly kind = 'local';
  readonly templates: FileTemplateStore;
  private readonly records: RecordStore;
  /** Each job's last runs, beside the records (`profiles/`): their costs, and sizing from them. */
  readonly jobs: LocalJobProfiles;
  readonly events = new EventFeed();
  /** Applications waiting for cores, fair between submitters (fair-queue.ts). */
  private readonly queue = new FairQueue();
  private readonly uiGates = new DriverUiGates();
  private readonly running = new Map<string, number>(); // appName -> cores in use
  private readonly interactive = new Set<string>(); // running apps that hold no batch cores
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly finishing = new Map<string, Promise<void>>();
  private closed = false;
  private readonly logger: LocalLogger;
  private readonly rules: AdmissionRules;

  constructor(private readonly options: LocalClusterOptions) {
    this.logger = options.log ?? defaultLocalLogger();
    // Drivers here are processes of the service's own OS user: launcher environment variables are refused.
    this.rules = { ...options.rules, policy: { ...options.rules.policy, refuseLauncherEnvironment: true } };
    makePrivateDir(options.dataDir);
    for (const dir of ['logs', 'run', 'work']) makePrivateDir(join(options.dataDir, dir));
    const stores = { log: this.logger, writeFile: options.writeFile };
    this.templates = new FileTemplateStore(join(options.dataDir, 'templates'), stores);
    this.records = new RecordStore(join(options.dataDir, 'apps'), stores);
    this.jobs = new LocalJobProfiles(join(options.dataDir, 'profiles'), this.rules, this.logger);
    this.recover();
  }

  async createDriver(bare: V1Pod, { dryRun, launcherToken }: CreateOptions): Promise<CreateResult> {
    // A kernel's token (a standalone gateway's): a file in the data dir (0600) named in the pod's
    // env, never in its config; a sandbox moves it into the driver's work dir (sandbox.ts).
    const tokenFile = launcherToken !== undefined && !dryRun && bare.metadata?.name ? this.launcherTokenFile(bare.metadata.name) : undefined;
    const pod = tokenFile ? withLauncherTokenFile(bare, tokenFile) : bare;
    const dropToken = async () => { if (tokenFile) await rm(tokenFile, { force: true }); };
    const created = await this.admitAndCreate(pod, dryRun, tokenFile && launcherToken).catch(async (error: unknown) => { await dropToken(); throw error; });
    if (!created.ok) await dropToken();
    return created;
  }

  private async admitAndCreate(pod: V1Pod, dryRun: boolean, launcher?: string): Promise<CreateResult> {
    const admission = admitPod(pod, {
      rules: this.rules, dryRun,
      templates: this.templates.lookup,
      applications: (name) => this.records.get(name)?.record.config,
      newAppName,
      jobRuns: (jobName) => this.jobs.runs(jobName),
    });
    if (admission.outcome === 'refused') return { ok: false, status: admission.status, body: admission.body };
    if (admission.outcome === 'ignored') throw new Error(`admission ignored the driver pod: ${admission.reason}`);
    const touchesServiceFiles = serviceFileRefusal(admission.pod, { dataDir: this.options.dataDir, workDir: this.workDir(admission.appName), sandboxed: Boolean(this.options.sandbox) });
    if (touchesServiceFiles) return { ok: false, status: 400, body: touchesServiceFiles };
    const createdAt = new Date().toISOString();
    const record: AppRecord = {
      appName: admission.appName,
      jobName: pod.metadata?.labels?.[LABEL_JOB] ?? '',
      configTemplateName: pod.metadata?.labels?.[LABEL_TEMPLATE] ?? '',
      config: admission.config,
      state: 'PENDING',
      createdAt,
      startedAt: null,
      endedAt: null,
      runningExecutors: 0,
      namespace: pod.metadata?.namespace || this.rules.namespace,
      labels: applicationLabels(pod.metadata?.labels),
      submittedBy: pod.metadata?.annotations?.[ANNOTATION_SUBMITTED_BY] ?? null,
      transitions: [{ state: 'PENDING', at: createdAt }],
      ...idempotencyOf(pod),
    };
    if (dryRun) return { ok: true, record, get pod() { return admission.pod; } };
    if (this.records.get(record.appName)) throw new ConflictError(`application ${record.appName} exists`);
    if (launcher) writeFileSync(this.launcherTokenFile(record.appName), launcher, { mode: 0o600 });
    await this.records.create({ record, pod: admission.pod });
    this.emit('changed', record);
    this.queue.push(record.appName, record.submittedBy, record.createdAt);
    this.schedule();
    return { ok: true, record, pod: admission.pod };
  }

  async get(appName: string): Promise<AppRecord | undefined> {
    return this.records.get(appName)?.record;
  }

  async list(query: ListQuery): Promise<Page<AppRecord>> {
    const matching = this.records.all().map((s) => s.record).filter((r) => matchesQuery(r, query));
    return pageOf(matching, query);
  }

  async claim(appName: string, claimer: string): Promise<AppRecord | undefined> {
    const stored = this.records.get(appName);
    if (!stored) return undefined;
    const current = stored.record.labels?.[KERNEL_CLAIMER_LABEL];
    if (current !== undefined && current !== claimer) throw new ConflictError(`application ${appName} was claimed by another key`);
    if (current === undefined) await this.update(stored, { labels: { ...stored.record.labels, [KERNEL_CLAIMER_LABEL]: claimer } });
    return this.records.get(appName)?.record;
  }

  async stop(appName: string): Promise<AppRecord | undefined> {
    const stored = this.records.get(appName);
    if (!stored) return undefined;
    const { record, run } = stored;
    if (record.state === 'PENDING') {
      // Shown KILLED at once, so the scheduler passes it over; queued again if the write fails.
      try {
        await this.update(stored, { state: 'KILLED', stateDetail: (record.attempt ?? 1) > 1 ? `stopped before attempt ${record.attempt} started` : 'stopped before it started', endedAt: new Date().toISOString() });
      } catch (error) {
        if (this.records.get(appName)?.record.state === 'PENDING' && !this.queue.has(appName)) this.requeue(appName);
        throw error;
      }
      this.queue.remove(appName);
    } else if (record.state === 'RUNNING' && run) {
      await this.records.save({ ...stored, run: { ...run, stopRequested: true } });
      await killGroup(run.pid, run.startTicks);
      await this.finish(appName);
    }
    return this.records.get(appName)?.record;
  }

  async delete(appName: string): Promise<boolean> {
    const stored = this.records.get(appName);
    if (!stored) return false;
    await this.stop(appName);
    await this.records.remove(appName);
    await releaseWorkDir(this.workDir(appName));
    await Promise.all([stored.run?.logFile, stored.run?.exitFile, this.launcherTokenFile(appName)]
      .filter((p): p is string => Boolean(p))
      .map((p) => rm(p, { recursive: true, force: true })));
    this.emit('deleted', stored.record);
    return true;
  }

  async log(appName: string, options: { follow: boolean; signal?: AbortSignal; container?: string }) {
    // Local drivers run their executors inside (local[N]): the driver's is the one log.
    if (!this.records.get(appName) || (options.container ?? 'driver') !== 'driver') return undefined;
    return logStream({
      file: this.logFile(appName),
      follow: options.follow,
      signal: options.signal,
      ended: () => {
        const state = this.records.get(appName)?.record.state;
        return state === undefined || isTerminal(state);
      },
    });
  }

  /** Leaves drivers running: a restarted service re-attaches to them. */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer); // intervals (re-attached drivers) and retry delays alike
    await this.records.flush();
  }

  private isInteractive({ record }: StoredApp): boolean {
    const label = this.options.interactiveLabel;
    return label !== undefined && record.labels?.[label] === 'true';
  }

  private schedule(): void {
    for (const appName of this.queue.all()) {
      const stored = this.records.get(appName);
      if (this.closed || !stored || stored.record.state !== 'PENDING' || !this.isInteractive(stored)) continue;
      this.queue.remove(appName, true);
      this.start(stored, this.demand(stored));
    }
    const next = () => this.queue.head(this.coresHeldBy, (who, name) => this.withinShare(who, name) !== undefined);
    for (let appName = next(); !this.closed && appName !== undefined; appName = next()) {
      const stored = this.records.get(appName);
      if (!stored || stored.record.state !== 'PENDING') {
        this.queue.remove(appName);
        continue;
      }
      const cores = this.withinShare(stored.record.submittedBy, appName) ?? this.demand(stored);
      const used = [...this.running].reduce((sum, [name, held]) => sum + (this.interactive.has(name) ? 0 : held), 0);
      if (used > 0 && used + cores > this.options.cores) return;
      this.queue.remove(appName, true);
      this.start(stored, cores);
    }
  }

  /** Batch cores the applications of `submitter` hold now: whose turn it is in the fair queue. */
  private readonly coresHeldBy = (submitter: string | null): number => {
    let held = 0;
    for (const [name, cores] of this.running) {
      if (!this.interactive.has(name) && (this.records.get(name)?.record.submittedBy ?? null) === submitter) held += cores;
    }
    return held;
  };

  /** Cores `appName` would start with now within its key's share; undefined while the key's share is used up. */
  private withinShare(submitter: string | null, appName: string): number | undefined {
    const stored = this.records.get(appName);
    if (!stored) return 0; // gone: the loop drops it
    const limit = keyCoreLimit(this.options.cores, this.options.keyCoreShare ?? 0);
    return coresWithinShare(submitter, this.demand(stored), this.coresHeldBy(submitter), limit);
  }

  private demand({ record }: StoredApp): number {
    return localCores(record.config, this.options.cores);
  }

  private start(stored: StoredApp, cores: number): void {
    const { appName } = stored.record;
    // The cores are taken now, so the scheduling loop counts them; the process starts once a
    // free port for its Spark UI is known.
    this.running.set(appName, cores);
    if (this.isInteractive(stored)) this.interactive.add(appName);
    this.background(this.launch(appName, cores), appName, 'could not start the driver');
  }

  private async launch(appName: string, cores: number): Promise<void> {
    const logFile = this.logFile(appName);
    const exitFile = join(this.options.dataDir, 'run', `${appName}.exit`);
    try {
      const spark = await this.sparkFor(appName);
      if (!spark) return; // being prepared: queued again once it is
      const uiPort = await freePort();
      // A sandboxed driver reads its version's virtualenv, which may have been made after the sandbox was chosen.
      const versioned = this.options.sandbox && spark.dir ? { ...this.options.sandbox, readable: [...this.options.sandbox.readable, spark.dir] } : this.options.sandbox;
      const gated = versioned && await this.uiGates.forRun(spark, versioned);
      const stored = this.records.get(appName);
      if (this.closed || !stored || stored.record.state !== 'PENDING') { // stopped or deleted meanwhile
        this.running.delete(appName);
        this.interactive.delete(appName);
        this.schedule();
        return;
      }
      // Interactive drivers start Python first (pyspark starts the JVM): a kernel answers before its JVM exists.
      const machine = {
        sparkSubmit: spark.sparkSubmit, python: spark.python, workDir: this.workDir(appName), uiPort, pythonFirst: this.isInteractive(stored),
        sandbox: gated ? gated.sandbox : versioned, uiGate: gated ? gated.uiGate : undefined,
      };
      // The exit file's space is taken now, so a full disk cannot refuse the code at the end.
      writeFileSync(exitFile, EXIT_FILE_PLACEHOLDER, { mode: 0o600 });
      if (this.options.workDirCap !== undefined) mountWorkDir(machine.workDir, this.options.workDirCap);
      const started = startDriverPod(stored.pod, machine, cores, { logFile, exitFile, logCap: this.options.logCap });
      const run = { pid: started.pid, startTicks: started.startTicks, cores, logFile, exitFile, uiPort, uiGate: machine.uiGate?.secret };
      const startedAt = new Date().toISOString();
      const change = { state: 'RUNNING' as const, startedAt: stored.record.startedAt ?? startedAt, stateDetail: undefined, ...startAttempt(stored.record, startedAt) };
      const running: StoredApp = { ...stored, run, record: applyChange(stored.record, change, startedAt) };
      // The event carries the record as saved: a quick driver may have ended by the time the write lands.
      // Kept in memory when the write fails: the driver does run; its end is written later.
      this.background(this.records.save(running, { keepOnFailure: true }).then(() => this.emit('changed', running.record)), appName, 'could not record that the driver started');
      this.background(started.exited.then(() => this.finish(appName)), appName, 'could not record how the driver ended');
    } catch (error) {
      this.running.delete(appName);
      this.interactive.delete(appName);
      this.releaseWorkDir(appName);
      const current = this.records.get(appName);
      if (current?.record.state === 'PENDING') { // not when stopped meanwhile (while its Spark was prepared)
        this.background(
          this.update(current, { state: 'FAILED', stateDetail: `could not start the driver: ${(error as Error).message}`, endedAt: new Date().toISOString() }, { keepOnFailure: true }),
          appName, 'could not record that the driver failed to start');
      }
    }
  }

  /**
   * The Spark an application's engineVersion names, or undefined while it is being prepared: a
   * version whose virtualenv is not made yet is made now (minutes, once per version). Meanwhile
   * the application says so, stays PENDING and gives its cores back to others; it queues again,
   * at its old turn, once its Spark is there.
   */
  private async sparkFor(appName: string): Promise<Omit<SparkInstall, 'version'> | undefined> {
    const envs = this.options.sparkEnvs;
    const stored = this.records.get(appName);
    const version = stored?.record.config.engineVersion;
    const base = { sparkSubmit: this.options.sparkSubmit, python: this.options.python };
    if (!envs || !stored || version === undefined) return base;
    const ready = await envs.ready(version);
    if (ready) return ready;
    this.running.delete(appName);
    this.interactive.delete(appName);
    this.schedule();
    const detail = `preparing Spark ${version}: its Python environment (pyspark ${version}) is being made, once per version`;
    this.logger.info({ appName, engineVersion: version }, detail);
    await this.update(stored, { stateDetail: detail });
    try {
      await envs.prepare(version);
    } catch (error) {
      throw new Error(`could not prepare Spark ${version}: ${(error as Error).message}`);
    }
    if (this.records.get(appName)?.record.state === 'PENDING') this.requeue(appName);
    return undefined;
  }

  async submission(appName: string): Promise<SubmissionInfo | undefined> {
    const stored = this.records.get(appName);
    return stored && submissionInfo(stored.pod);
  }

  async sparkUiTarget(appName: string): Promise<URL | undefined> {
    const stored = this.records.get(appName);
    if (stored?.record.state !== 'RUNNING' || stored.run?.uiPort === undefined) return undefined;
    return new URL(`http://127.0.0.1:${stored.run.uiPort}`);
  }

  sparkUiHeaders(appName: string): Record<string, string> | undefined {
    const secret = this.records.get(appName)?.run?.uiGate;
    return secret === undefined ? undefined : { [UI_GATE_HEADER]: secret };
  }

  /** Records how a driver ended; once per run, however many watchers notice. */
  private finish(appName: string): Promise<void> {
    const pending = this.finishing.get(appName);
    if (pending) return pending;
    const done = (async () => {
      const stored = this.records.get(appName);
      // After close, the next service to start records the end (it re-attaches). Only a running
      // record has a run to end: one waiting for its next attempt keeps the last attempt's run.
      if (this.closed || !stored?.run || stored.record.state !== 'RUNNING') return;
      // A sandboxed driver's event log, from its work dir into the history's, before the end is told.
      const eventLogDir = this.options.sandbox?.eventLogDir;
      if (eventLogDir) {
        await collectEventLogs(this.workDir(appName), eventLogDir, appName, (entry, why) => this.logger.warn({ appName, entry }, `an event log the driver left is not kept: ${why}`))
          .catch((error: unknown) => this.logger.error({ err: error, appName }, `could not move the event log of application ${appName}`));
      }
      const code = readExitCode(stored.run.exitFile);
      const ended = new Date().toISOString();
      const cap = this.options.workDirCap;
      const full = cap !== undefined && workDirFull(this.workDir(appName)) ? `; its work dir was full (its cap: ${formatBytes(cap)})` : '';
      const after = this.afterRun(stored, localAttemptEnd(code, stored.run.stopRequested, full), ended);
      // Its event log is out: the work dir's space goes back (an unmounted tmpfs, or disk).
      this.releaseWorkDir(appName);
      // The driver has ended whatever the disk says: its cores are free again. A record that
      // could not be written stays RUNNING on disk and is settled from the exit file at the next start.
      try {
        const retryAt = after.retryInSeconds === undefined ? undefined : new Date(Date.parse(ended) + after.retryInSeconds * 1000).toISOString();
        await this.update(stored, after.change, { keepOnFailure: true }, { ...(after.pod ? { pod: after.pod } : {}), retryAt });
      } catch (error) {
        this.logger.error({ err: error, appName }, `could not record that application ${appName} ended`);
      }
      // Kept in memory when the write failed: the next attempt runs all the same.
      if (after.retryInSeconds !== undefined) this.retryLater(appName, after.retryInSeconds);
      this.running.delete(appName);
      this.interactive.delete(appName);
      this.schedule();
    })().finally(() => this.finishing.delete(appName));
    this.finishing.set(appName, done);
    return done;
  }

  /**
   * The end of a run as the record's change (domain/attempts.ts decides), and for a retry the
   * next attempt's pod: admitted again when its memory grows. A retry that admission refuses ends the application.
   */
  private afterRun(stored: StoredApp, end: AttemptEnd, endedAt: string): { change: Partial<AppRecord>; pod?: V1Pod; retryInSeconds?: number } {
    const { change, decision } = afterRun(stored.record, end, endedAt, this.rules);
    if (decision.action === 'end') return { change };
    if (Object.keys(decision.overrides).length === 0) return { change, retryInSeconds: decision.delaySeconds };
    const admission = admitPod(retryPod(stored.pod, decision.overrides), {
      rules: this.rules, templates: this.templates.lookup, applications: (name) => this.records.get(name)?.record.config, newAppName,
    });
    if (admission.outcome !== 'admitted') {
      const why = admission.outcome === 'refused' ? admission.body.message : admission.reason;
      return { change: { ...change, state: 'FAILED', attempt: stored.record.attempt, stateDetail: `${end.detail}; attempt ${decision.attempt} was refused by admission: ${why}`, endedAt } };
    }
    return { change: { ...change, config: admission.config }, pod: admission.pod, retryInSeconds: decision.delaySeconds };
  }

  /** The next attempt queues after the interval, unless the application was stopped or deleted meanwhile. */
  private retryLater(appName: string, seconds: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      const record = this.records.get(appName)?.record;
      if (this.closed || record?.state !== 'PENDING' || this.queue.has(appName)) return;
      this.queue.push(appName, record.submittedBy, record.createdAt);
      this.schedule();
    }, seconds * 1000);
    this.timers.add(timer);
  }

  private async update(stored: StoredApp, change: Partial<AppRecord>, options: { keepOnFailure?: boolean } = {}, also: Partial<Pick<StoredApp, 'pod' | 'retryAt'>> = {}): Promise<void> {
    const current = this.records.get(stored.record.appName);
    if (!current) return; // deleted meanwhile
    const next = { ...current, ...also, record: applyChange(current.record, change) };
    await this.records.save(next, options);
    this.emit('changed', next.record);
  }

  /** Background work has no request to answer: its failures are logged, never left unhandled. */
  private background(work: Promise<unknown>, appName: string, what: string): void {
    work.catch((error: unknown) => this.logger.error({ err: error, appName }, `${what} (application ${appName})`));
  }

  /** Back in the queue in order of creation (among its submitter's), so a failed stop does not cost the app its turn. */
  private requeue(appName: string): void {
    const record = this.records.get(appName)?.record;
    if (record) this.queue.push(appName, record.submittedBy, record.createdAt);
    this.schedule();
  }

  /** After a restart: pending apps queue again; running drivers are re-attached, or their end recorded. */
  private recover(): void {
    const stored = this.records.all().sort((a, b) => a.record.createdAt.localeCompare(b.record.createdAt));
    // Exit-code temp files of drivers that died writing them; a live driver's may be written right now.
    const live = new Set(stored.flatMap(({ run }) => (run && isAlive(run.pid, run.startTicks) ? [run.exitFile] : [])));
    const runDir = join(this.options.dataDir, 'run');
    const stale = removeTempFiles(runDir, staleExitTemp(runDir, live));
    if (stale.length > 0) this.logger.warn({ dir: runDir, files: stale }, 'removed exit-code temp files left by drivers that ended while writing them');
    for (const app of stored) {
      const { record, run } = app;
      // One waiting for its next attempt waits out what is left of its interval.
      if (record.state === 'PENDING' && app.retryAt) this.retryLater(record.appName, Math.max(0, (Date.parse(app.retryAt) - Date.now()) / 1000));
      else if (record.state === 'PENDING') this.queue.push(record.appName, record.submittedBy, record.createdAt);
      if (isTerminal(record.state)) this.releaseWorkDir(record.appName); // the service stopped before it did
      if (record.state !== 'RUNNING') continue;
      if (run && isAlive(run.pid, run.startTicks)) {
        this.running.set(record.appName, run.cores);
        if (this.isInteractive(app)) this.interactive.add(record.appName);
        const timer = setInterval(() => {
          if (isAlive(run.pid, run.startTicks)) return;
          clearInterval(timer);
          this.timers.delete(timer);
          this.background(this.finish(record.appName), record.appName, 'could not record how the driver ended');
        }, this.options.pollMs ?? 500);
        this.timers.add(timer);
      } else if (run && readExitCode(run.exitFile) !== undefined) {
        this.running.set(record.appName, run.cores); // released by finish
        this.background(this.finish(record.appName), record.appName, 'could not record how the driver ended');
      } else {
        this.releaseWorkDir(record.appName);
        this.background(
          this.update(app, { state: 'UNKNOWN', stateDetail: 'the driver process was gone when the service restarted', endedAt: new Date().toISOString() }, { keepOnFailure: true }),
          record.appName, 'could not record that the driver was gone');
      }
    }
    this.schedule();
  }

  private releaseWorkDir(appName: string): void {
    this.background(releaseWorkDir(this.workDir(appName)), appName, 'could not remove the work dir');
  }

  private emit(type: AppEventType, record: AppRecord): void {
    this.events.publish(type, record);
  }

  private logFile(appName: string): string {
    return join(this.options.dataDir, 'logs', `${appName}.log`);
  }

  private launcherTokenFile(appName: string): string {
    return join(this.options.dataDir, 'run', `${appName}.launcher-token`);
  }

  private workDir(appName: string): string {
    return join(this.options.dataDir, 'work', appName);
  }
}
