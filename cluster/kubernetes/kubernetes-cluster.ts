// Kubernetes mode: the API writes an Application (with the config admission will give its
// pod, when it has the webhook's rules: expected-admission.ts), then its bare driver pod (owned
// by the Application, so the garbage collector removes pods with it); the apiserver sends the
// pod through our webhook. These two writes go as plain JSON calls (json-call.ts), the rest
// through client-node. Reads come from one informer cache per process (app-cache.ts), logs
// through pod-logs.ts; the controllers (controller-wiring.ts), run by the replica holding the
// Lease, write every status.
// Several API processes can share one cluster: nothing that matters is kept only in memory.
import type { Readable } from 'node:stream';
import type { V1Pod } from '@kubernetes/client-node';
import {
  type AdmissionRules, ANNOTATION_ADMITTED, ANNOTATION_SUBMITTED_BY, applicationLabels, DRIVER_PORTS, LABEL_APP, LABEL_JOB, LABEL_TEMPLATE,
  KERNEL_CLAIMER_LABEL, LAUNCHER_SECRET_KEY, launcherSecretName, readConfig, type RulesInput, rulesNow, withLauncherSecret,
} from '../../domain/index.js';
import type { AppRecord, Cluster, CreateOptions, CreateResult, ListQuery, Page } from '../cluster.js';
import { ConflictError, isTerminal, UnavailableError } from '../cluster.js';
import { EventFeed } from '../events.js';
import { type SubmissionInfo, submissionInfo } from '../submission-info.js';
import { AppCache } from './app-cache.js';
import { appNetworkPolicy } from './app-network-policy.js';
import { createAppNetworkPolicy } from './network-policy-controller.js';
import { APPLICATIONS, FIELD_MANAGER, GROUP, VERSION } from './client.js';
import { kubeCall, kubeCallOrAbsent, missedAdmission, translate, webhookRefusal } from './errors.js';
import { admissionWithTemplate } from './expected-admission.js';
import { patchJson, postJson } from './json-call.js';
import { type LogOptions, PodLogs } from './pod-logs.js';
import type { Log as LogFn } from './informers.js';
import type { EventLogAccess } from './event-log-access.js';
import { type ControllerWiringOptions, wireControllers } from './controller-wiring.js';
import type { LeaderElection } from './leader-election.js';
import type { LogArchiver } from './log-archiver.js';
import type { Manager } from './manager.js';
import type { Reconciler } from './reconciler.js';
import { Controller } from './controller.js';
import { type ApplicationResource, applicationResource, desiredStatus, toRecord } from './records.js';
import { ANNOTATION_IDEMPOTENCY, idempotencyOf } from '../app-record.js';
import { KubernetesTemplateStore } from './template-store.js';
import { followJobProfiles, jobProfileObjects, KubernetesJobProfiles } from './job-profile-store.js';
import { ProfileRecorder, type ProfileRecorderOptions } from '../profile-recorder.js';

export interface KubernetesClusterOptions extends ControllerWiringOptions {
  log?: LogFn;
  /**
   * The webhook's admission rules (the same node-pool file): the Application is then created
   * with the config admission gives its pod (expected-admission.ts), so the controller does
   * not copy it in a third write. Absent: the controller copies it from the admitted pod.
   * A watched source (cli/watched-rules.ts) follows the file as the webhook does.
   */
  rules?: RulesInput;
  /** How long a stop waits for the controller to record the end before answering (default 10 s). */
  stopWaitMs?: number;
}

export class KubernetesCluster implements Cluster {
  readonly kind = 'kubernetes';
  readonly templates: KubernetesTemplateStore;
  /** Fed by the cache: every change of what the API shows of an application. */
  readonly events = new EventFeed();
  readonly cache: AppCache;
  /** One leader election and one cache driving the controllers (controller-wiring.ts); more register on it. */
  readonly manager: Manager;
  /** The status controller. */
  readonly reconciler: Reconciler;
  readonly leader?: LeaderElection;
  readonly archiver?: LogArchiver;
  readonly eventLogAccess?: EventLogAccess;
  private readonly podLogs: PodLogs;
  /** Jobs' past runs (JobProfile resources), watched by every replica, written by the leader (job-profile-store.ts). */
  readonly jobs: KubernetesJobProfiles;
  private jobsFollow?: ReturnType<typeof followJobProfiles>;
  private recorder?: ProfileRecorder;
  private started?: Promise<void>;

  constructor(private readonly options: KubernetesClusterOptions) {
    const log = options.log ?? ((message: string) => void process.stderr.write(`${message}\n`));
    this.templates = new KubernetesTemplateStore(options.clients, options.namespace);
    this.cache = new AppCache({
      clients: options.clients, namespace: options.namespace, log,
      onRecord: (type, record) => this.events.publish(type, record),
      onTouch: (name) => this.manager.applicationChanged(name),
      onExecutor: (pod) => this.manager.executorChanged(pod),
      rules: this.pools,
    });
    this.podLogs = new PodLogs(options.clients, options.namespace, this.cache, options.logArchive);
    const attempts = { rules: this.pools, createAttemptPod: (bare: V1Pod) => this.createAttemptPod(bare) };
    ({ manager: this.manager, reconciler: this.reconciler, leader: this.leader, archiver: this.archiver, eventLogAccess: this.eventLogAccess } = wireControllers(options, this.cache, log, attempts));
    this.jobs = new KubernetesJobProfiles(jobProfileObjects(options.clients, options.namespace), options.rules, () => this.manager.isLeader);
  }

  /** Lists and watches (the cache), then runs for the Lease. Reads wait for it; the wiring calls it before the port opens. */
  start(): Promise<void> {
    this.jobsFollow ??= followJobProfiles(this.options.clients, this.ns, this.jobs, this.options.log ?? ((message) => void process.stderr.write(`${message}\n`)));
    this.started ??= this.manager.start();
    return this.started;
  }

  /** The node pools in force now (a retry's memory bound), when this process has the rules. */
  private get pools(): Pick<AdmissionRules, 'pools'> | undefined {
    const { rules } = this.options;
    return rules && { get pools() { return rulesNow(rules).pools; } };
  }

  /** Resolves once the JobProfiles are listed (they are followed in the background: start()). */
  jobsReady(): Promise<void> {
    return this.jobsFollow?.ready ?? Promise.reject(new Error('the cluster is not started'));
  }

  /**
   * Records each ended run into its job's profile from its event log (`readProfile`: the
   * history's), on the replica holding the Lease. A controller of the manager with one key: at
   * the start of each term and at every resync it catches up on the runs that ended lately and
   * are not recorded yet (cluster/profile-recorder.ts).
   */
  recordJobProfiles(readProfile: ProfileRecorderOptions['readProfile'], rules: RulesInput): ProfileRecorder {
    const log = this.options.log ?? ((message: string) => void process.stderr.write(`${message}\n`));
    const recorder = new ProfileRecorder({
      cluster: this, profiles: this.jobs, rules, readProfile, mayRecord: () => this.manager.isLeader,
      warn: (message, { err, appName }) => log(`${appName}: ${message}: ${(err as Error)?.message ?? String(err)}`),
    });
    this.recorder = recorder;
    this.manager.register({
      controller: new Controller({
        name: 'job-profiles', workers: 1, keys: () => ['catch-up'], mayWrite: () => this.manager.isLeader,
        reconcile: async () => { recorder.catchUp((await this.list({ limit: Number.MAX_SAFE_INTEGER })).items); },
        onError: (_key, error) => log(`job profiles: catching up: ${(error as Error)?.message ?? String(error)}`),
      }),
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
    if (this.options.appNetworkPolicies && ownerReferences) {
      // Before the driver: its pods never run without the policy that keeps other runs out.
      try {
        // The controller may have made it already (network-policy-controller.ts: 409 is no error).
        await this.call(`create the NetworkPolicy of ${appName}`, () => createAppNetworkPolicy(this.options.clients.kc, this.ns, appNetworkPolicy(appName, ownerReferences[0])));
      } catch (error) {
        await this.dropApplication(appName);
        throw error;
      }
    }
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

  /** What the webhook would admit, when this process has its rules (the rules in force now); undefined when unknown. */
  private expectedAdmission(bare: V1Pod, dryRun: boolean) {
    const rules = this.options.rules && rulesNow(this.options.rules);
    return admissionWithTemplate(bare, this.ns, rules, (name) => this.templates.get(name), dryRun, (jobName) => this.jobs.runs(jobName));
  }

  /**
   * A retry's driver pod (attempt-starter.ts), admitted as a submission's is: by this process
   * when it has the webhook's rules, else by the webhook. A conflict (the pod is there: another
   * replica made it) is the controller's to ignore. Resolves to admission's refusal, if any.
   */
  private async createAttemptPod(bare: V1Pod): Promise<{ refused: string } | undefined> {
    const admission = await this.expectedAdmission(bare, false);
    if (admission?.outcome === 'refused') return { refused: admission.body.message };
    const body = admission ? admission.admit(bare) : bare;
    try {
      await postJson<V1Pod>(this.options.clients.kc, `/api/v1/namespaces/${this.ns}/pods?fieldManager=${FIELD_MANAGER}`, body);
    } catch (error) {
      const refusal = webhookRefusal(error);
      if (refusal) return { refused: refusal.body.message };
      throw error;
    }
    return undefined;
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
        // No submitter (a warm Connect server the service started): the claimer becomes it.
        ...(resource.spec.submittedBy ? [] : [{ op: 'add', path: '/spec/submittedBy', value: claimer }]),
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

  async log(appName: string, options: LogOptions): Promise<Readable | undefined> {
    const record = await this.get(appName);
    return record ? this.podLogs.read(record, options) : undefined;
  }

  /** Overrides, admission mark and the sizing decision the webhook recorded: from the driver pod, else the controller's copy on the Application. */
  async submission(appName: string): Promise<SubmissionInfo | undefined> {
    const record = await this.get(appName);
    if (!record) return undefined;
    return submissionInfo(this.cache.driver(appName)?.pod, this.cache.application(appName)?.metadata.annotations);
  }

  /** The driver pod's IP while the pod runs (from the cache): its Spark UI, its Spark Connect server. */
  driverPodIp(appName: string): Promise<string | undefined> {
    const driver = this.cache.driver(appName);
    const pod = driver && !driver.deleted ? driver.pod : undefined;
    const ip = pod?.status?.podIP;
    return Promise.resolve(pod && pod.status?.phase === 'Running' && ip ? ip : undefined);
  }

  /** The driver pod's IP and Spark UI port while the pod runs (from the cache). */
  async sparkUiTarget(appName: string): Promise<URL | undefined> {
    const ip = await this.driverPodIp(appName);
    return ip ? new URL(`http://${ip.includes(':') ? `[${ip}]` : ip}:${DRIVER_PORTS.ui}`) : undefined;
  }

  async close(): Promise<void> {
    this.recorder?.close();
    await this.manager.stop();
    await this.recorder?.idle();
    await this.jobsFollow?.stop();
  }
}
