// Local mode: the same admission runs in-process on each bare pod, and the admitted
// driver pod runs as a local spark-submit process (master local[N]). Apps wait
// PENDING while their cores are not free on this machine (core-scheduler.ts); their drivers
// are started, watched and found again after a restart by driver-runs.ts.
import { writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { type AdmissionRules, admitPod, ANNOTATION_SUBMITTED_BY, applicationLabels, KERNEL_CLAIMER_LABEL, KERNEL_POOL_LABEL_KEY, LABEL_JOB, LABEL_TEMPLATE, withLauncherTokenFile } from '../../domain/index.js';
import type { AppRecord, Cluster, CreateOptions, CreateResult, ListQuery, Page } from '../cluster.js';
import { ConflictError, isTerminal } from '../cluster.js';
import { idempotencyOf } from '../app-record.js';
import type { EventFeed } from '../events.js';
import type { RecordedRuns } from '../history/run-claims.js';
import { matchesQuery, pageOf } from '../paging.js';
import { logStream } from './log-stream.js';
import { killGroup } from './process-runner.js';
import { RecordStore } from './record-store.js';
import { LocalJobProfiles } from './job-profiles.js';
import { localCores } from './spark-command.js';
import { FileTemplateStore } from './template-store.js';
import { newAppName } from '../app-name.js';
import { makePrivateDir } from '../../lib/atomic-file.js';
import { defaultLocalLogger } from './logger.js';
import { type SubmissionInfo, submissionInfo } from '../submission-info.js';
import { serviceFileRefusal } from './service-files.js';
import { releaseWorkDir } from './work-dir-space.js';
import { UI_GATE_HEADER } from './ui-gate.js';
import { CoreScheduler, type SchedulingView } from './core-scheduler.js';
import { DriverRuns } from './driver-runs.js';
import { LocalApps } from './local-apps.js';
import type { LocalClusterOptions } from './local-options.js';

export type { LocalClusterOptions } from './local-options.js';

export class LocalCluster implements Cluster {
  readonly kind = 'local';
  readonly templates: FileTemplateStore;
  private readonly records: RecordStore;
  /** Each job's last runs, beside the records (`profiles/`): their costs, and sizing from them. */
  readonly jobs: LocalJobProfiles;
  readonly events: EventFeed;
  private readonly apps: LocalApps;
  /** Applications waiting for cores, fair between submitters, and the cores running ones hold. */
  private readonly scheduler: CoreScheduler;
  private readonly runs: DriverRuns;
  private readonly rules: AdmissionRules;

  constructor(private readonly options: LocalClusterOptions) {
    const logger = options.log ?? defaultLocalLogger();
    // Drivers here are processes of the service's own OS user: launcher environment variables are refused.
    this.rules = { ...options.rules, policy: { ...options.rules.policy, refuseLauncherEnvironment: true } };
    makePrivateDir(options.dataDir);
    for (const dir of ['logs', 'run', 'work']) makePrivateDir(join(options.dataDir, dir));
    const stores = { log: logger, writeFile: options.writeFile };
    this.templates = new FileTemplateStore(join(options.dataDir, 'templates'), stores);
    this.records = new RecordStore(join(options.dataDir, 'apps'), stores);
    this.jobs = new LocalJobProfiles(join(options.dataDir, 'profiles'), this.rules, logger);
    this.apps = new LocalApps(this.records, this.rules, logger, options.dataDir, options.interactiveLabel);
    this.events = this.apps.events;
    this.scheduler = new CoreScheduler(options.cores, options.keyCoreShare ?? 0, {
      app: (appName) => this.schedulingView(appName),
      start: (appName, cores) => this.runs.start(appName, cores),
      closed: () => this.runs.closed,
    });
    this.runs = new DriverRuns(this.apps, this.scheduler, options, this.templates.lookup);
    this.runs.recover();
  }

  async createDriver(bare: V1Pod, { dryRun, launcherToken }: CreateOptions): Promise<CreateResult> {
    // A kernel's token (a standalone gateway's): a file in the data dir (0600) named in the pod's
    // env, never in its config; a sandbox moves it into the driver's work dir (sandbox.ts).
    const tokenFile = launcherToken !== undefined && !dryRun && bare.metadata?.name ? this.apps.launcherTokenFile(bare.metadata.name) : undefined;
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
      jobRuns: (jobName, submittedBy) => this.jobs.runs(jobName, submittedBy),
    });
    if (admission.outcome === 'refused') return { ok: false, status: admission.status, body: admission.body };
    if (admission.outcome === 'ignored') throw new Error(`admission ignored the driver pod: ${admission.reason}`);
    const touchesServiceFiles = serviceFileRefusal(admission.pod, { dataDir: this.options.dataDir, workDir: this.apps.workDir(admission.appName), sandboxed: Boolean(this.options.sandbox) });
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
    if (launcher) writeFileSync(this.apps.launcherTokenFile(record.appName), launcher, { mode: 0o600 });
    await this.records.create({ record, pod: admission.pod });
    this.scheduler.requeue(record.appName);
    // A kernel its key's share has no room for is refused, not queued: its start would answer,
    // and the notebook then wait for cores the key's other kernels may hold for days, until its
    // launch timeout. Asked right after the queue's pass, with nothing awaited between: starts
    // sent at once cannot pass the share together.
    const refusal = this.scheduler.shareRefusal(record.appName);
    if (refusal) {
      this.scheduler.remove(record.appName);
      // A record that cannot be removed ends instead, so that no one waits on it.
      await this.records.remove(record.appName).catch(() => this.stop(record.appName, refusal));
      return { ok: false, status: 429, body: { message: refusal } };
    }
    this.apps.emit('changed', record);
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
    if (current === undefined) {
      await this.apps.update(stored, { labels: { ...stored.record.labels, [KERNEL_CLAIMER_LABEL]: claimer }, submittedBy: stored.record.submittedBy ?? claimer });
    }
    return this.records.get(appName)?.record;
  }

  /** Adds or replaces labels of a record (the Connect endpoint names the session a warm pool's server now runs). */
  async setLabels(appName: string, labels: Record<string, string>): Promise<void> {
    const stored = this.records.get(appName);
    if (stored) await this.apps.update(stored, { labels: { ...stored.record.labels, ...labels } });
  }

  /** `why`: the service's own reason (the record's stateDetail), when no user asked for the stop. */
  async stop(appName: string, why?: string): Promise<AppRecord | undefined> {
    const stored = this.records.get(appName);
    if (!stored) return undefined;
    const { record, run } = stored;
    if (record.state === 'PENDING') {
      const notStarted = (record.attempt ?? 1) > 1 ? `stopped before attempt ${record.attempt} started` : 'stopped before it started';
      // Shown KILLED at once, so the scheduler passes it over; queued again if the write fails.
      try {
        await this.apps.update(stored, { state: 'KILLED', stateDetail: why ? `${notStarted}: ${why}` : notStarted, endedAt: new Date().toISOString() });
      } catch (error) {
        if (this.records.get(appName)?.record.state === 'PENDING' && !this.scheduler.has(appName)) this.scheduler.requeue(appName);
        throw error;
      }
      this.scheduler.remove(appName);
    } else if (record.state === 'RUNNING' && run) {
      await this.records.save({ ...stored, run: { ...run, stopRequested: true, ...(why ? { stopReason: why } : {}) } });
      await killGroup(run.pid, run.startTicks);
      await this.runs.finish(appName);
    }
    return this.records.get(appName)?.record;
  }

  async delete(appName: string): Promise<boolean> {
    const stored = this.records.get(appName);
    if (!stored) return false;
    await this.stop(appName);
    await this.records.remove(appName);
    this.apps.forgetAppIds(stored);
    await releaseWorkDir(this.apps.workDir(appName));
    await Promise.all([stored.run?.logFile, stored.run?.exitFile, this.apps.launcherTokenFile(appName)]
      .filter((p): p is string => Boolean(p))
      .map((p) => rm(p, { recursive: true, force: true })));
    this.apps.emit('deleted', stored.record);
    return true;
  }

  async log(appName: string, options: { follow: boolean; signal?: AbortSignal; container?: string }) {
    // Local drivers run their executors inside (local[N]): the driver's is the one log.
    if (!this.records.get(appName) || (options.container ?? 'driver') !== 'driver') return undefined;
    return logStream({
      file: this.apps.logFile(appName),
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
    this.runs.close();
    await this.records.flush();
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

  /** The runs the service saw each sandboxed driver start: the history's admission asks (run-claims.ts). */
  get recordedRuns(): RecordedRuns {
    return this.apps.recordedRuns;
  }

  sparkUiHeaders(appName: string): Record<string, string> | undefined {
    const secret = this.records.get(appName)?.run?.uiGate;
    return secret === undefined ? undefined : { [UI_GATE_HEADER]: secret };
  }

  private schedulingView(appName: string): SchedulingView | undefined {
    const stored = this.records.get(appName);
    if (!stored) return undefined;
    const { record } = stored;
    return {
      state: record.state, submittedBy: record.submittedBy, createdAt: record.createdAt,
      demand: localCores(record.config, this.options.cores), interactive: this.apps.isInteractive(stored),
      holder: shareHolder(record.labels),
    };
  }
}

/**
 * Whose share a kernel's cores count in, when not its submitter's: its claimer's once claimed; an
 * unclaimed warm pool's kernel, nobody's. The operator sized the pool (--warm-pool), and counting
 * it in the gateway's key would have that key's share refuse the pool's own refills. Both labels
 * are the gateway's alone (submit-api/service-labels.ts), so no user sets them to slip its share.
 */
function shareHolder(labels: Record<string, string> | undefined): string | null | undefined {
  const claimer = labels?.[KERNEL_CLAIMER_LABEL];
  if (claimer !== undefined) return claimer;
  return labels?.[KERNEL_POOL_LABEL_KEY] === undefined ? undefined : null;
}
