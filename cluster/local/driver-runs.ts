// Local mode's driver processes: started when the scheduler gives an application its cores,
// watched to their end (recorded once however many watchers notice), retried when the attempt
// policy says so, and found again after a restart (re-attached, or their end read from the exit file).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { admitPod, type AttemptEnd, retriedKernelTokenFile } from '../../domain/index.js';
import type { ApplicationConfig } from '../../schemas/index.js';
import { freePort } from '../../lib/free-port.js';
import { removeTempFiles } from '../../lib/atomic-file.js';
import { newAppName } from '../app-name.js';
import { type AppRecord, isTerminal } from '../cluster.js';
import { applyChange } from '../app-record.js';
import type { CoreScheduler } from './core-scheduler.js';
import { DriverUiGates } from './driver-ui-gate.js';
import { ConnectGates } from './connect-gate.js';
import { connectServerToken } from './connect-server-token.js';
import { AppIdWatches, type WatchedAttempt } from './app-id-watch.js';
import { afterRun, localAttemptEnd, retryPod, startAttempt } from './local-attempts.js';
import type { LocalApps } from './local-apps.js';
import type { LocalClusterOptions } from './local-options.js';
import { formatBytes } from './log-cap.js';
import { LogBudget } from './log-budget-files.js';
import { isAlive, readExitCode, staleExitTemp, startDriverPod } from './process-runner.js';
import type { StoredApp } from './record-store.js';
import { collectEventLogs } from './sandbox-event-log.js';
import { driverMainClass } from './spark-command.js';
import type { SparkInstall } from './spark-envs.js';
import { mountWorkDir, workDirFull } from './work-dir-space.js';

/** What an exit file holds until the wrapper writes the code over it: room for any code, and no number. */
const EXIT_FILE_PLACEHOLDER = ' '.repeat(8);

export class DriverRuns {
  private readonly uiGates = new DriverUiGates();
  private readonly connectGates = new ConnectGates();
  /** Which run each sandboxed driver started, seen in its own event log folder (app-id-watch.ts). */
  private readonly appIds: AppIdWatches;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly finishing = new Map<string, Promise<void>>();
  private readonly logBudget: LogBudget | undefined;
  closed = false;

  constructor(
    private readonly apps: LocalApps,
    private readonly scheduler: CoreScheduler,
    private readonly options: LocalClusterOptions,
    private readonly templates: (name: string) => ApplicationConfig | undefined,
  ) {
    this.logBudget = options.logBudget === undefined ? undefined
      : new LogBudget({ budget: options.logBudget, cap: options.logCap, logFile: (name) => apps.logFile(name), logger: apps.logger });
    this.appIds = new AppIdWatches(apps);
  }

  /** The scheduler gave `appName` its cores: its driver starts once a free port for its Spark UI is known. */
  start(appName: string, cores: number): void {
    this.apps.background(this.launch(appName, cores), appName, 'could not start the driver');
  }

  /** Leaves drivers running: a restarted service re-attaches to them. */
  close(): void {
    this.closed = true;
    this.appIds.close();
    for (const timer of this.timers) clearTimeout(timer); // intervals (re-attached drivers) and retry delays alike
  }

  private async launch(appName: string, cores: number): Promise<void> {
    const { apps } = this;
    const logFile = apps.logFile(appName);
    const exitFile = apps.exitFile(appName);
    try {
      const spark = await this.sparkFor(appName);
      if (!spark) return; // being prepared: queued again once it is
      const uiPort = await freePort();
      // A sandboxed driver reads its version's virtualenv, which may have been made after the sandbox was chosen.
      const versioned = this.options.sandbox && spark.dir ? { ...this.options.sandbox, readable: [...this.options.sandbox.readable, spark.dir] } : this.options.sandbox;
      const gated = versioned && await this.uiGates.forRun(spark, versioned);
      // A Spark 3.5 Connect server's gate (connect-gate.ts); readable in the sandbox like the UI's.
      const pod = apps.get(appName)?.pod;
      const connectGate = pod && await this.connectGates.forRun(spark, driverMainClass(pod));
      const gatedSandbox = gated ? gated.sandbox : versioned;
      const sandbox = gatedSandbox && connectGate ? { ...gatedSandbox, readable: [...gatedSandbox.readable, dirname(connectGate)] } : gatedSandbox;
      const stored = apps.get(appName);
      if (this.closed || !stored || stored.record.state !== 'PENDING') { // stopped or deleted meanwhile
        this.scheduler.release(appName);
        this.scheduler.schedule();
        return;
      }
      // Interactive drivers start Python first (pyspark starts the JVM): a kernel answers before its JVM exists.
      const machine = {
        sparkSubmit: spark.sparkSubmit, python: spark.python, workDir: apps.workDir(appName), uiPort, pythonFirst: apps.isInteractive(stored),
        sandbox, uiGate: gated ? gated.uiGate : undefined, connectToken: connectServerToken(appName), connectGate,
      };
      // The exit file's space is taken now, so a full disk cannot refuse the code at the end.
      writeFileSync(exitFile, EXIT_FILE_PLACEHOLDER, { mode: 0o600 });
      if (this.options.workDirCap !== undefined) mountWorkDir(machine.workDir, this.options.workDirCap);
      this.renewLauncherToken(stored);
      // Granted and saved in the record below with no await between: the next start counts it.
      const logCap = this.logBudget ? this.logBudget.grant(appName, apps.records.all()) : this.options.logCap;
      const started = startDriverPod(stored.pod, machine, cores, { logFile, exitFile, logCap });
      const run = { pid: started.pid, startTicks: started.startTicks, cores, logFile, logCap, exitFile, uiPort, uiGate: machine.uiGate?.secret };
      const startedAt = new Date().toISOString();
      const change = { state: 'RUNNING' as const, startedAt: stored.record.startedAt ?? startedAt, stateDetail: undefined, ...startAttempt(stored.record, startedAt) };
      const running: StoredApp = { ...stored, run, record: applyChange(stored.record, change, startedAt) };
      // The event carries the record as saved: a quick driver may have ended by the time the write lands.
      // Kept in memory when the write fails: the driver does run; its end is written later.
      apps.background(apps.records.save(running, { keepOnFailure: true }).then(() => apps.emit('changed', running.record)), appName, 'could not record that the driver started');
      this.watchAppId(running);
      apps.background(started.exited.then(() => this.finish(appName)), appName, 'could not record how the driver ended');
    } catch (error) {
      this.scheduler.release(appName);
      apps.releaseWorkDir(appName);
      const current = apps.get(appName);
      if (current?.record.state === 'PENDING') { // not when stopped meanwhile (while its Spark was prepared)
        apps.background(
          apps.update(current, { state: 'FAILED', stateDetail: `could not start the driver: ${(error as Error).message}`, endedAt: new Date().toISOString() }, { keepOnFailure: true }),
          appName, 'could not record that the driver failed to start');
      }
    }
  }

  /**
   * A retried kernel's launcher finds a fresh one-time token where its env says: the last
   * attempt's launcher spent and deleted its own (domain/launcher-credential.ts).
   */
  private renewLauncherToken(stored: StoredApp): void {
    const retried = this.options.retryLauncherToken && retriedKernelTokenFile(stored.pod, stored.record.attempt ?? 1);
    if (!retried) return;
    mkdirSync(dirname(retried.file), { recursive: true, mode: 0o700 });
    writeFileSync(retried.file, this.options.retryLauncherToken!(retried.kernelId, stored.record.attempt!), { mode: 0o600, flag: 'w' });
  }

  /**
   * The Spark an application's engineVersion names, or undefined while it is being prepared: a
   * version whose virtualenv is not made yet is made now (minutes, once per version). Meanwhile
   * the application says so, stays PENDING and gives its cores back to others; it queues again,
   * at its old turn, once its Spark is there.
   */
  private async sparkFor(appName: string): Promise<Omit<SparkInstall, 'version'> | undefined> {
    const envs = this.options.sparkEnvs;
    const stored = this.apps.get(appName);
    const version = stored?.record.config.engineVersion;
    const base = { sparkSubmit: this.options.sparkSubmit, python: this.options.python };
    if (!envs || !stored || version === undefined) return base;
    const ready = await envs.ready(version);
    if (ready) return ready;
    this.scheduler.release(appName);
    this.scheduler.schedule();
    const detail = `preparing Spark ${version}: its Python environment (pyspark ${version}) is being made, once per version`;
    this.apps.logger.info({ appName, engineVersion: version }, detail);
    await this.apps.update(stored, { stateDetail: detail });
    try {
      await envs.prepare(version);
    } catch (error) {
      throw new Error(`could not prepare Spark ${version}: ${(error as Error).message}`);
    }
    if (this.apps.get(appName)?.record.state === 'PENDING') this.scheduler.requeue(appName);
    return undefined;
  }

  /** Records how a driver ended; once per run, however many watchers notice. */
  finish(appName: string): Promise<void> {
    const pending = this.finishing.get(appName);
    if (pending) return pending;
    const done = this.recordEnd(appName).finally(() => this.finishing.delete(appName));
    this.finishing.set(appName, done);
    return done;
  }

  private async recordEnd(appName: string): Promise<void> {
    const { apps } = this;
    const stored = apps.get(appName);
    // After close, the next service to start records the end (it re-attaches). Only a running
    // record has a run to end: one waiting for its next attempt keeps the last attempt's run.
    if (this.closed || !stored?.run || stored.record.state !== 'RUNNING') return;
    // A sandboxed driver's event log, from its work dir into the history's, before the end is told.
    const eventLogDir = this.options.sandbox?.eventLogDir;
    if (eventLogDir) {
      const watched = this.watchedAttempt(stored);
      if (watched) await this.appIds.finish(watched).catch((error: unknown) => apps.logger.error({ err: error, appName }, 'could not see which run the driver started'));
      const warn = (entry: string, why: string) => apps.logger.warn({ appName, entry }, `an event log the driver left is not kept: ${why}`);
      await collectEventLogs(apps.workDir(appName), eventLogDir, appName, warn, apps.recordedRuns)
        .catch((error: unknown) => apps.logger.error({ err: error, appName }, `could not move the event log of application ${appName}`));
    }
    const code = readExitCode(stored.run.exitFile);
    const ended = new Date().toISOString();
    const cap = this.options.workDirCap;
    const full = cap !== undefined && workDirFull(apps.workDir(appName)) ? `; its work dir was full (its cap: ${formatBytes(cap)})` : '';
    const after = this.afterRun(stored, localAttemptEnd(code, stored.run.stopRequested, full, stored.run.stopReason), ended);
    // Its event log is out: the work dir's space goes back (an unmounted tmpfs, or disk).
    apps.releaseWorkDir(appName);
    // The driver has ended whatever the disk says: its cores are free again. A record that
    // could not be written stays RUNNING on disk and is settled from the exit file at the next start.
    try {
      const retryAt = after.retryInSeconds === undefined ? undefined : new Date(Date.parse(ended) + after.retryInSeconds * 1000).toISOString();
      await apps.update(stored, after.change, { keepOnFailure: true }, { ...(after.pod ? { pod: after.pod } : {}), retryAt });
    } catch (error) {
      apps.logger.error({ err: error, appName }, `could not record that application ${appName} ended`);
    }
    // Kept in memory when the write failed: the next attempt runs all the same.
    if (after.retryInSeconds !== undefined) this.retryLater(appName, after.retryInSeconds);
    this.scheduler.release(appName);
    this.scheduler.schedule();
  }

  /**
   * The end of a run as the record's change (domain/attempts.ts decides), and for a retry the
   * next attempt's pod: admitted again when its memory grows. A retry that admission refuses ends the application.
   */
  private afterRun(stored: StoredApp, end: AttemptEnd, endedAt: string): { change: Partial<AppRecord>; pod?: V1Pod; retryInSeconds?: number } {
    const { rules } = this.apps;
    const { change, decision } = afterRun(stored.record, end, endedAt, rules);
    if (decision.action === 'end') return { change };
    if (Object.keys(decision.overrides).length === 0) return { change, retryInSeconds: decision.delaySeconds };
    const admission = admitPod(retryPod(stored.pod, decision.overrides), {
      rules, templates: this.templates, applications: (name) => this.apps.get(name)?.record.config, newAppName,
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
      const record = this.apps.get(appName)?.record;
      if (this.closed || record?.state !== 'PENDING' || this.scheduler.has(appName)) return;
      this.scheduler.requeue(appName);
    }, seconds * 1000);
    this.timers.add(timer);
  }

  /** A sandboxed driver's attempt, whose Spark run is seen in its own event log folder (undefined: unsandboxed, or no history). */
  private watchedAttempt({ record }: StoredApp): WatchedAttempt | undefined {
    if (!this.options.sandbox?.eventLogDir) return undefined;
    const attempt = record.attempt ?? 1;
    const began = record.attempts?.find((a) => a.attempt === attempt)?.startedAt ?? record.startedAt;
    return began ? { appName: record.appName, attempt, workDir: this.apps.workDir(record.appName), startedMs: Date.parse(began) } : undefined;
  }

  private watchAppId(stored: StoredApp): void {
    const watched = this.watchedAttempt(stored);
    if (watched) this.appIds.start(watched);
  }

  /** After a restart: pending apps queue again; running drivers are re-attached, or their end recorded. */
  recover(): void {
    const { apps } = this;
    const stored = apps.records.all().sort((a, b) => a.record.createdAt.localeCompare(b.record.createdAt));
    // Exit-code temp files of drivers that died writing them; a live driver's may be written right now.
    const live = new Set(stored.flatMap(({ run }) => (run && isAlive(run.pid, run.startTicks) ? [run.exitFile] : [])));
    const runDir = join(this.options.dataDir, 'run');
    const stale = removeTempFiles(runDir, staleExitTemp(runDir, live));
    if (stale.length > 0) apps.logger.warn({ dir: runDir, files: stale }, 'removed exit-code temp files left by drivers that ended while writing them');
    for (const app of stored) {
      const { record } = app;
      // One waiting for its next attempt waits out what is left of its interval.
      if (record.state === 'PENDING' && app.retryAt) this.retryLater(record.appName, Math.max(0, (Date.parse(app.retryAt) - Date.now()) / 1000));
      else if (record.state === 'PENDING') this.scheduler.push(record.appName);
      if (isTerminal(record.state)) apps.releaseWorkDir(record.appName); // the service stopped before it did
      if (record.state === 'RUNNING') this.reattach(app);
    }
    this.scheduler.schedule();
  }

  /** A driver the service ran before its restart: watched while it lives, its end recorded. */
  private reattach(app: StoredApp): void {
    const { apps } = this;
    const { record, run } = app;
    if (run && isAlive(run.pid, run.startTicks)) {
      this.scheduler.hold(record.appName, run.cores, apps.isInteractive(app));
      this.watchAppId(app);
      const timer = setInterval(() => {
        if (isAlive(run.pid, run.startTicks)) return;
        clearInterval(timer);
        this.timers.delete(timer);
        apps.background(this.finish(record.appName), record.appName, 'could not record how the driver ended');
      }, this.options.pollMs ?? 500);
      this.timers.add(timer);
    } else if (run && readExitCode(run.exitFile) !== undefined) {
      this.scheduler.hold(record.appName, run.cores, false); // released by finish
      apps.background(this.finish(record.appName), record.appName, 'could not record how the driver ended');
    } else {
      apps.releaseWorkDir(record.appName);
      apps.background(
        apps.update(app, { state: 'UNKNOWN', stateDetail: 'the driver process was gone when the service restarted', endedAt: new Date().toISOString() }, { keepOnFailure: true }),
        record.appName, 'could not record that the driver was gone');
    }
  }
}
