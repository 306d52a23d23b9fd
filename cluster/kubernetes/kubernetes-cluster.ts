// Kubernetes mode: the API writes an Application (with the config admission will give its
// pod, when it has the webhook's rules: expected-admission.ts), then its bare driver pod (owned
// by the Application, so the garbage collector removes pods with it); the apiserver sends the
// pod through our webhook. These two writes go as plain JSON calls (json-call.ts), the rest
// through client-node. Reads come from one informer cache per process (app-cache.ts); the
// controller (reconciler.ts), run by the replica holding the Lease, writes every status.
// Several API processes can share one cluster: nothing that matters is kept only in memory.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { PassThrough, type Readable } from 'node:stream';
import { Log, type V1Pod } from '@kubernetes/client-node';
import type { ApplicationConfig } from '../../schemas/index.js';
import {
  type AdmissionRules, ANNOTATION_ADMITTED, ANNOTATION_SUBMITTED_BY, applicationLabels, DRIVER_CONTAINER, DRIVER_PORTS, LABEL_APP, LABEL_JOB, LABEL_TEMPLATE,
  KERNEL_CLAIMER_LABEL, LAUNCHER_SECRET_KEY, launcherSecretName, readConfig, withLauncherSecret,
} from '../../domain/index.js';
import type { AppRecord, Cluster, CreateOptions, CreateResult, ListQuery, Page } from '../cluster.js';
import { ConflictError, isTerminal, UnavailableError } from '../cluster.js';
import { EventFeed } from '../events.js';
import { type SubmissionInfo, submissionInfo } from '../submission-info.js';
import { AppCache } from './app-cache.js';
import { APPLICATIONS, FIELD_MANAGER, GROUP, type KubeClients, VERSION } from './client.js';
import { kubeCall, kubeCallOrAbsent, missedAdmission, translate, webhookRefusal } from './errors.js';
import { type ApiAdmission, expectedAdmission } from './expected-admission.js';
import { patchJson, postJson } from './json-call.js';
import type { Log as LogFn } from './informers.js';
import { EventLogAccess, type EventLogAccessOptions } from './event-log-access.js';
import { LeaderElection } from './leader-election.js';
import type { LeaseTiming } from './lease-decision.js';
import { isLogContainer, type LogArchive, type LogContainer } from './log-archive.js';
import { driverKey, executorKey, LogArchiver, type LogArchiverOptions } from './log-archiver.js';
import { Manager } from './manager.js';
import { Reconciler } from './reconciler.js';
import type { LeaderTask } from './schedule-reconciler.js';
import { type ApplicationResource, applicationResource, desiredStatus, toRecord } from './records.js';
import { ANNOTATION_IDEMPOTENCY, idempotencyOf } from '../app-record.js';
import { KubernetesTemplateStore } from './template-store.js';
import { followJobProfiles, jobProfileObjects, KubernetesJobProfiles } from './job-profile-store.js';
import { ProfileRecorder, type ProfileRecorderOptions } from '../profile-recorder.js';

export interface KubernetesClusterOptions {
  clients: KubeClients;
  /** Where driver and executor pods, records and templates live. */
  namespace: string;
  /** Run the controller under the Lease (default true); false: this process only reads. */
  controller?: boolean;
  /** Name of the Lease (default submission-service-controller) and this replica's identity in it. */
  lease?: { name?: string; identity?: string } & Partial<LeaseTiming>;
  /** The controller's periodic resync (default 5 min). */
  resyncMs?: number;
  /** Grace period for an Application without a driver pod before it is UNKNOWN (default 30 s). */
  missingPodGraceMs?: number;
  log?: LogFn;
  /** Where ended pods' logs are archived (log-archive.ts); absent: a log goes with its pod. */
  logArchive?: LogArchive;
  /**
   * The webhook's admission rules (the same node-pool file): the Application is then created
   * with the config admission gives its pod (expected-admission.ts), so the controller does
   * not copy it in a third write. Absent: the controller copies it from the admitted pod.
   */
  rules?: AdmissionRules;
  /** A pod being deleted whose log could not be archived is let go after this long (default 2 min). */
  logArchiveGiveUpMs?: number;
  /** Following running pods' logs into the archive (log-archive.ts): limit, size cap, spool directory. */
  logFollow?: Pick<LogArchiverOptions, 'followLimit' | 'maxLogBytes' | 'spoolDir'>;
  /** A key per application for its event log (event-log-access.ts); absent: drivers share one. */
  eventLogAccess?: Pick<EventLogAccessOptions, 'keys' | 'store' | 'incomingPrefix' | 'eventLogPrefix'>;
  /** How long a stop waits for the controller to record the end before answering (default 10 s). */
  stopWaitMs?: number;
}

export class KubernetesCluster implements Cluster {
  readonly kind = 'kubernetes';
  readonly templates: KubernetesTemplateStore;
  /** Fed by the cache: every change of what the API shows of an application. */
  readonly events = new EventFeed();
  readonly cache: AppCache;
  /** One leader election and one cache driving the controllers below (manager.ts). */
  readonly manager: Manager;
  /** The status controller. */
  readonly reconciler: Reconciler;
  readonly leader?: LeaderElection;
  readonly archiver?: LogArchiver;
  readonly eventLogAccess?: EventLogAccess;
  /** Jobs' past runs (JobProfile resources), watched by every replica, written by the leader (job-profile-store.ts). */
  readonly jobs: KubernetesJobProfiles;
  private jobsFollow?: ReturnType<typeof followJobProfiles>;
  private recorder?: ProfileRecorder;
  /** More work run only on the leader (the Schedule controller): started and stopped with the Lease. */
  private readonly leaderTasks: LeaderTask[] = [];
  private started?: Promise<void>;

  constructor(private readonly options: KubernetesClusterOptions) {
    const log = options.log ?? ((message: string) => void process.stderr.write(`${message}\n`));
    this.templates = new KubernetesTemplateStore(options.clients, options.namespace);
    this.cache = new AppCache({
      clients: options.clients, namespace: options.namespace, log,
      onRecord: (type, record) => this.events.publish(type, record),
      // The event-log keys are not a controller of the manager yet (their own serial queue): told beside it.
      onTouch: (name) => { this.manager.applicationChanged(name); this.eventLogAccess?.touch(name); },
      onExecutor: (pod) => this.manager.executorChanged(pod),
    });
    const controller = options.controller ?? true;
    const lease = options.lease ?? {};
    this.manager = new Manager({
      cache: this.cache, log,
      elect: controller ? (hooks) => new LeaderElection({
        clients: options.clients, namespace: options.namespace, log, ...hooks,
        // Beside the manager's controllers until they are controllers of it: the event-log keys and
        // the leader's other tasks (the Schedule controller).
        onStartedLeading: () => { hooks.onStartedLeading(); this.eventLogAccess?.startedLeading(); for (const task of this.leaderTasks) task.activate(); },
        onStoppedLeading: () => { hooks.onStoppedLeading(); for (const task of this.leaderTasks) task.deactivate(); },
        name: lease.name ?? 'submission-service-controller',
        identity: lease.identity ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`,
        timing: { leaseMs: lease.leaseMs, renewDeadlineMs: lease.renewDeadlineMs, retryMs: lease.retryMs },
      }) : undefined,
    });
    this.leader = this.manager.elector as LeaderElection | undefined;
    const mayWrite = () => this.manager.isLeader;
    this.jobs = new KubernetesJobProfiles(jobProfileObjects(options.clients, options.namespace), options.rules, mayWrite);
    if (options.eventLogAccess && controller) {
      this.eventLogAccess = new EventLogAccess({
        ...options.eventLogAccess, clients: options.clients, namespace: options.namespace, cache: this.cache, log, isLeader: mayWrite,
      });
    }
    // The manager's controllers. Another controller registers here the same way: its reconcile
    // function, its keys, and which of the cache's changes queue which of its keys.
    this.reconciler = new Reconciler({
      clients: options.clients, namespace: options.namespace, cache: this.cache, graceMs: options.missingPodGraceMs, log, resyncMs: options.resyncMs, mayWrite,
    });
    this.manager.register({ controller: this.reconciler.controller, application: (name) => [name] });
    if (options.logArchive && controller) {
      const archiver = new LogArchiver({
        clients: options.clients, namespace: options.namespace, cache: this.cache, archive: options.logArchive, log,
        giveUpMs: options.logArchiveGiveUpMs, ...options.logFollow, isLeader: mayWrite,
      });
      this.archiver = archiver;
      this.manager.register({
        controller: archiver.controller,
        application: (name) => [driverKey(name)],
        executorPod: (pod) => (pod.metadata?.name ? [executorKey(pod.metadata.name)] : []),
        onStoppedLeading: () => archiver.stopFollowing(),
        close: () => archiver.close(),
      });
    }
  }

  /** Work that runs on the leader only (schedule-reconciler.ts); started at once if this replica leads already. */
  addLeaderTask(task: LeaderTask): void {
    this.leaderTasks.push(task);
    if (this.manager.isLeader) task.activate();
  }

  /** Lists and watches (the cache), then runs for the Lease. Reads wait for it; the wiring calls it before the port opens. */
  start(): Promise<void> {
    this.jobsFollow ??= followJobProfiles(this.options.clients, this.ns, this.jobs, this.options.log ?? ((message) => void process.stderr.write(`${message}\n`)));
    this.started ??= this.manager.start();
    return this.started;
  }

  /** Resolves once the JobProfiles are listed (they are followed in the background: start()). */
  jobsReady(): Promise<void> {
    return this.jobsFollow?.ready ?? Promise.reject(new Error('the cluster is not started'));
  }

  /**
   * Records each ended run into its job's profile from its event log (`readProfile`: the
   * history's), on the replica holding the Lease; one that starts leading catches up on the
   * runs that ended lately (cluster/profile-recorder.ts).
   */
  recordJobProfiles(readProfile: ProfileRecorderOptions['readProfile'], rules: AdmissionRules): ProfileRecorder {
    const log = this.options.log ?? ((message: string) => void process.stderr.write(`${message}\n`));
    const recorder = new ProfileRecorder({
      cluster: this, profiles: this.jobs, rules, readProfile, mayRecord: () => this.manager.isLeader,
      warn: (message, { err, appName }) => log(`${appName}: ${message}: ${(err as Error)?.message ?? String(err)}`),
    });
    this.recorder = recorder;
    this.addLeaderTask({
      activate: () => void this.list({ limit: Number.MAX_SAFE_INTEGER }).then((page) => recorder.catchUp(page.items), (error: unknown) => log(`job profiles: catching up: ${(error as Error).message}`)),
      deactivate: () => undefined,
    });
    return recorder;
  }

  private get ns() { return this.options.namespace; }
  private get core() { return this.options.clients.core; }
  private get custom() { return this.options.clients.custom; }
  private get records() { return { group: GROUP, version: VERSION, plural: APPLICATIONS, namespace: this.ns }; }

  private call<T>(what: string, run: () => Promise<T>): Promise<T> {
    return kubeCall(this.options.clients.server, what, run);
  }

  private orUndefined<T>(what: string, run: () => Promise<T>): Promise<T | undefined> {
    return kubeCallOrAbsent(this.options.clients.server, what, run);
  }

  async createDriver(bare: V1Pod, { dryRun, launcherToken }: CreateOptions): Promise<CreateResult> {
    await this.start();
    const labels = bare.metadata?.labels ?? {};
    const appName = bare.metadata!.name!;
    // With the webhook's rules the API admits the pod itself (expected-admission.ts): a refusal
    // is answered before anything is written, an admitted pod is written as admitted.
    const admission = await this.expectedAdmission(bare, dryRun === true);
    if (admission?.outcome === 'refused') return { ok: false, status: admission.status, body: admission.body };
    const expected = admission;
    let owner: ApplicationResource | undefined;
    if (!dryRun) {
      // The Application first: the pod is created owned by it, so a crash in between leaves a
      // record the controller marks UNKNOWN, never a driver that runs unseen.
      const draft = applicationResource({
        appName, namespace: this.ns, labels: applicationLabels(labels), jobName: labels[LABEL_JOB] ?? '',
        configTemplateName: labels[LABEL_TEMPLATE] ?? '', submittedBy: bare.metadata?.annotations?.[ANNOTATION_SUBMITTED_BY] ?? null,
      }, { [LABEL_JOB]: labels[LABEL_JOB] ?? '', ...(labels[LABEL_TEMPLATE] ? { [LABEL_TEMPLATE]: labels[LABEL_TEMPLATE] } : {}) });
      if (expected) {
        draft.spec.config = expected.config;
        if (Object.keys(expected.annotations).length > 0) draft.metadata.annotations = expected.annotations;
      }
      // The Idempotency-Key's mark (submit-api/idempotency.ts) goes with the Application: any replica compares it.
      const { idempotency } = idempotencyOf(bare);
      if (idempotency !== undefined) draft.metadata.annotations = { ...draft.metadata.annotations, [ANNOTATION_IDEMPOTENCY]: idempotency };
      owner = await this.call(`record application ${appName}`, () =>
        postJson<ApplicationResource>(this.options.clients.kc, `/apis/${GROUP}/${VERSION}/namespaces/${this.ns}/${APPLICATIONS}?fieldManager=${FIELD_MANAGER}`, draft));
    }
    const ownerReferences = owner
      ? [{ apiVersion: owner.apiVersion, kind: 'Application', name: appName, uid: owner.metadata.uid!, controller: true }]
      : undefined;
    let withCredential = bare;
    if (launcherToken !== undefined && ownerReferences) {
      // The kernel's token: a Secret owned by the Application (it goes with it), mounted into the
      // driver; only the file's path is in the pod's env (domain/launcher-credential.ts).
      try {
        await this.createLauncherSecret(appName, launcherToken, ownerReferences[0]);
      } catch (error) {
        await this.dropApplication(appName);
        throw error;
      }
      withCredential = withLauncherSecret(bare, launcherSecretName(appName));
    }
    const written: V1Pod = { ...withCredential, metadata: { ...withCredential.metadata, namespace: this.ns, ...(ownerReferences ? { ownerReferences } : {}) } };
    const body = expected ? expected.admit(written) : written;
    let pod: Awaited<ReturnType<KubernetesCluster['createPod']>>;
    try {
      pod = await this.createPod(body, dryRun);
    } catch (error) {
      if (owner) await this.dropApplication(appName);
      throw error;
    }
    if ('ok' in pod) {
      if (owner) await this.dropApplication(appName);
      return pod;
    }
    const config = readConfig(pod);
    if (!config || !pod.metadata?.annotations?.[ANNOTATION_ADMITTED]) {
      if (owner) await this.dropApplication(appName); // the garbage collector takes the pod
      throw new UnavailableError('the admission webhook did not admit the driver pod (its objectSelector may not match our labels)');
    }
    if (!owner) {
      const draft = { ...applicationResource({ appName, namespace: this.ns, labels: applicationLabels(pod.metadata.labels), jobName: labels[LABEL_JOB] ?? '', configTemplateName: labels[LABEL_TEMPLATE] ?? '', submittedBy: pod.metadata.annotations?.[ANNOTATION_SUBMITTED_BY] ?? null }, {}), };
      draft.metadata.creationTimestamp = pod.metadata.creationTimestamp ?? new Date();
      return { ok: true, record: toRecord(draft, desiredStatus(draft, { pod, deleted: false }, 0), { pod, deleted: false }), pod };
    }
    // Admitted otherwise than expected (rules that differ between the API and the webhook): the
    // controller corrects the Application from the pod, the config's one writer after creation.
    // The next read (this replica) sees it: the cache has caught up with both writes.
    const cached = await this.cache.until(appName, (r) => r !== undefined && Object.keys(r.config).length > 0 && this.cache.driver(appName) !== undefined);
    const record = cached ?? toRecord(owner, desiredStatus(owner, { pod, deleted: false }, 0), { pod, deleted: false });
    return { ok: true, record: { ...record, config }, pod };
  }

  /** What the webhook would admit, when this process has its rules; undefined when unknown (the pod goes bare to the webhook, the controller copies its config). */
  private async expectedAdmission(bare: V1Pod, dryRun: boolean): Promise<ApiAdmission | undefined> {
    const rules = this.options.rules;
    if (!rules) return undefined;
    const templateName = bare.metadata?.labels?.[LABEL_TEMPLATE];
    let template: ApplicationConfig | undefined;
    if (templateName) {
      // One read. Absent: admission answers 404 as the webhook would; unreadable: the webhook answers for it.
      const read = await this.templates.get(templateName).then((found) => ({ found }), () => undefined);
      if (!read) return undefined;
      template = read.found?.config;
    }
    return expectedAdmission(bare, this.ns, rules, template, dryRun, (jobName) => this.jobs.runs(jobName));
  }

  /** The launcher's Secret, owned by its Application (not its controller: the Application's controller is ours, its pod's). */
  private async createLauncherSecret(appName: string, token: string, owner: { apiVersion: string; kind: string; name: string; uid: string }): Promise<void> {
    await this.call(`create the launcher Secret of ${appName}`, () => this.core.createNamespacedSecret({
      namespace: this.ns,
      fieldManager: FIELD_MANAGER,
      body: {
        metadata: { name: launcherSecretName(appName), labels: { [LABEL_APP]: appName }, ownerReferences: [{ ...owner, controller: false }] },
        type: 'Opaque',
        immutable: true,
        stringData: { [LAUNCHER_SECRET_KEY]: token },
      },
    }));
  }

  /** The admitted pod, or our refusal (CreateResult with ok false). */
  private async createPod(body: V1Pod, dryRun: boolean): Promise<V1Pod | Extract<CreateResult, { ok: false }>> {
    try {
      return await postJson<V1Pod>(this.options.clients.kc, `/api/v1/namespaces/${this.ns}/pods?fieldManager=${FIELD_MANAGER}${dryRun ? '&dryRun=All' : ''}`, body);
    } catch (error) {
      const refusal = webhookRefusal(error);
      if (refusal) return { ok: false, ...refusal };
      if (missedAdmission(error)) {
        throw new UnavailableError('the admission webhook is not installed: the driver pod reached the apiserver without being admitted (check the MutatingWebhookConfiguration)');
      }
      throw translate(error, this.options.clients.server, 'create the driver pod');
    }
  }

  /** Undoes the Application of a submission that did not get its pod; if this fails, the controller marks it UNKNOWN after its grace period. */
  private async dropApplication(appName: string): Promise<void> {
    try {
      await this.orUndefined(`delete application ${appName}`, () => this.custom.deleteNamespacedCustomObject({ ...this.records, name: appName }));
    } catch (error) {
      (this.options.log ?? ((m: string) => void process.stderr.write(`${m}\n`)))(`could not remove application ${appName} after its pod failed: ${(error as Error).message}`);
    }
  }

  async get(appName: string): Promise<AppRecord | undefined> {
    await this.start();
    return this.cache.get(appName);
  }

  async list(query: ListQuery): Promise<Page<AppRecord>> {
    await this.start();
    return this.cache.list(query);
  }

  async claim(appName: string, claimer: string): Promise<AppRecord | undefined> {
    await this.start();
    const resource = await this.orUndefined(`read application ${appName}`, () =>
      this.custom.getNamespacedCustomObject({ ...this.records, name: appName })) as ApplicationResource | undefined;
    if (!resource) return undefined;
    const current = resource.metadata.labels?.[KERNEL_CLAIMER_LABEL];
    if (current !== undefined && current !== claimer) throw new ConflictError(`application ${appName} was claimed by another key`);
    if (current === undefined) {
      // Only on the Application as read (its labels are never empty: the job's label is there).
      const body = [
        { op: 'test', path: '/metadata/resourceVersion', value: resource.metadata.resourceVersion },
        { op: 'add', path: `/metadata/labels/${KERNEL_CLAIMER_LABEL.replace(/~/g, '~0').replace(/\//g, '~1')}`, value: claimer },
      ];
      await this.call(`claim application ${appName}`, () => this.custom.patchNamespacedCustomObject({ ...this.records, name: appName, fieldManager: FIELD_MANAGER, body }));
    }
    return this.cache.until(appName, (r) => r === undefined || r.labels?.[KERNEL_CLAIMER_LABEL] === claimer);
  }

  /**
   * A user's stop is a request in the Application's spec (`spec.stopRequested`), written by
   * whichever replica got it; the controller (reconciler.ts) writes KILLED, the one writer of
   * status, and then deletes the driver pod. Answers once the cache shows the end (or after the
   * wait, with the state then: the request stays, and the leader carries it out when it can).
   */
  async stop(appName: string): Promise<AppRecord | undefined> {
    const record = await this.get(appName);
    if (!record || isTerminal(record.state)) return record;
    const resource = this.cache.application(appName);
    if (!resource?.spec.stopRequested) {
      const found = await this.orUndefined(`stop application ${appName}`, () => patchJson(this.options.clients.kc,
        `/apis/${GROUP}/${VERSION}/namespaces/${this.ns}/${APPLICATIONS}/${appName}?fieldManager=${FIELD_MANAGER}`, [{ op: 'add', path: '/spec/stopRequested', value: true }]));
      if (found === undefined) return undefined;
    }
    // The cached record shows KILLED as soon as the request is in (it is what the controller
    // will write); the wait is for the stored status and then the pod's deletion, in that order.
    await this.cache.until(appName, () => this.stopCarriedOut(appName), this.options.stopWaitMs ?? 10_000);
    return this.cache.get(appName);
  }

  /** The controller has stored the end, and the pod of a KILLED run is being deleted (or gone). */
  private stopCarriedOut(appName: string): boolean {
    const stored = this.cache.application(appName);
    if (!stored) return true;
    if (!isTerminal(stored.status?.state)) return false;
    if (stored.status?.state !== 'KILLED') return true; // it ended by itself first
    const driver = this.cache.driver(appName);
    return !driver || driver.deleted || Boolean(driver.pod.metadata?.deletionTimestamp);
  }

  async delete(appName: string): Promise<boolean> {
    const record = await this.get(appName);
    if (!record) return false;
    // Pods go with it: they are owned by the Application (driver) and the driver (executors).
    const found = await this.orUndefined(`delete application ${appName}`, () =>
      this.custom.deleteNamespacedCustomObject({ ...this.records, name: appName, propagationPolicy: 'Background' }));
    await this.cache.until(appName, (r) => r === undefined);
    return found !== undefined;
  }

  async log(appName: string, options: { follow: boolean; signal?: AbortSignal; container?: string }): Promise<Readable | undefined> {
    const record = await this.get(appName);
    if (!record) return undefined;
    const container = options.container ?? 'driver';
    if (container !== 'driver') return isLogContainer(container) ? this.executorLog(appName, container, options) : undefined;
    const stream = new PassThrough();
    const driver = this.cache.driver(appName);
    if (!driver || driver.deleted) {
      const archived = await this.options.logArchive?.read(appName, 'driver');
      if (archived) return archived;
      stream.end(`the driver pod of ${appName} is gone; its log went with it (state ${record.state})\n`);
      return stream;
    }
    const abort = await this.call(`read the log of ${appName}`, () =>
      new Log(this.options.clients.kc).log(this.ns, appName, DRIVER_CONTAINER, stream, { follow: options.follow }));
    options.signal?.addEventListener('abort', () => { abort.abort(); stream.end(); }, { once: true });
    return stream;
  }

  /** Executor N's log: from its pod while there, else from the archive. */
  private async executorLog(appName: string, container: LogContainer, options: { follow: boolean; signal?: AbortSignal }): Promise<Readable | undefined> {
    const id = container.slice('executor-'.length);
    const pods = await this.call(`find executor ${id} of ${appName}`, () =>
      this.core.listNamespacedPod({ namespace: this.ns, labelSelector: `${LABEL_APP}=${appName},spark-role=executor,spark-exec-id=${id}` }));
    const pod = pods.items.find((p) => !p.metadata?.deletionTimestamp) ?? pods.items[0];
    if (!pod) return this.options.logArchive?.read(appName, container);
    const stream = new PassThrough();
    const abort = await this.call(`read the log of ${appName} ${container}`, () =>
      new Log(this.options.clients.kc).log(this.ns, pod.metadata!.name!, pod.spec?.containers?.[0]?.name ?? '', stream, { follow: options.follow }));
    options.signal?.addEventListener('abort', () => { abort.abort(); stream.end(); }, { once: true });
    return stream;
  }

  /** Overrides, admission mark and the sizing decision the webhook recorded: from the driver pod, else the controller's copy on the Application. */
  async submission(appName: string): Promise<SubmissionInfo | undefined> {
    const record = await this.get(appName);
    if (!record) return undefined;
    return submissionInfo(this.cache.driver(appName)?.pod, this.cache.application(appName)?.metadata.annotations);
  }

  /** The driver pod's IP and Spark UI port while the pod runs (from the cache). */
  async sparkUiTarget(appName: string): Promise<URL | undefined> {
    const driver = this.cache.driver(appName);
    const pod = driver && !driver.deleted ? driver.pod : undefined;
    const ip = pod?.status?.podIP;
    if (!pod || pod.status?.phase !== 'Running' || !ip) return undefined;
    return new URL(`http://${ip.includes(':') ? `[${ip}]` : ip}:${DRIVER_PORTS.ui}`);
  }

  async close(): Promise<void> {
    this.recorder?.close();
    await this.manager.stop();
    for (const task of this.leaderTasks) task.deactivate();
    await this.recorder?.idle();
    await this.jobsFollow?.stop();
  }
}
