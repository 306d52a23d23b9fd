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
import { type AdmissionRules, connectServerToken, DRIVER_PORTS, KERNEL_CLAIMER_LABEL, type RulesInput, rulesNow } from '../../domain/index.js';
import type { AppRecord, Cluster, CreateOptions, CreateResult, ListQuery, Page } from '../cluster.js';
import { ConflictError, isTerminal } from '../cluster.js';
import { EventFeed } from '../events.js';
import { type SubmissionInfo, submissionInfo } from '../submission-info.js';
import { AppCache } from './app-cache.js';
import { createAttemptPod } from './attempt-pods.js';
import { APPLICATIONS, FIELD_MANAGER, GROUP, VERSION } from './client.js';
import { createDriver } from './driver-creation.js';
import { kubeCall, kubeCallOrAbsent } from './errors.js';
import { admissionWithTemplate } from './expected-admission.js';
import { patchJson, pointerKey } from './json-call.js';
import { type LogOptions, PodLogs } from './pod-logs.js';
import { requestStop } from './stop-request.js';
import type { Log as LogFn } from './informers.js';
import type { EventLogAccess } from './event-log-access.js';
import { type ControllerWiringOptions, wireControllers } from './controller-wiring.js';
import type { LeaderElection } from './leader-election.js';
import type { LogArchiver } from './log-archiver.js';
import type { Manager } from './manager.js';
import type { Reconciler } from './reconciler.js';
import type { ApplicationResource } from './records.js';
import { KubernetesTemplateStore } from './template-store.js';
import { jobProfileObjects, KubernetesJobProfiles } from './job-profile-store.js';
import { JobProfileWiring } from './job-profile-wiring.js';
import type { ProfileRecorder, ProfileRecorderOptions } from '../profile-recorder.js';

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
  /**
   * The secret shared with the notebook gateway (SUBMISSION_SERVICE_GATEWAY_SECRET): a retried
   * kernel's driver gets a launcher token of its own, derived from it (domain/launcher-credential.ts).
   */
  gatewaySecret?: string;
  /**
   * The key of Spark Connect servers' tokens (domain/connect-server-token.ts: connectTokenKey of
   * the secret every replica shares): a Connect server's driver reads its token from a Secret of
   * its application's, and the endpoint sends it. Absent: servers get none (Spark 4's then checks nothing).
   */
  connectTokenKey?: Buffer;
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
  private readonly jobProfiles: JobProfileWiring;
  private readonly logMessage: LogFn;
  private started?: Promise<void>;

  constructor(private readonly options: KubernetesClusterOptions) {
    const log = options.log ?? ((message: string) => void process.stderr.write(`${message}\n`));
    this.logMessage = log;
    this.templates = new KubernetesTemplateStore(options.clients, options.namespace);
    this.cache = new AppCache({
      clients: options.clients, namespace: options.namespace, log,
      onRecord: (type, record, json) => this.events.publish(type, record, json),
      onTouch: (name) => this.manager.applicationChanged(name),
      onExecutor: (pod) => this.manager.executorChanged(pod),
      rules: this.pools,
    });
    this.podLogs = new PodLogs(options.clients, options.namespace, this.cache, options.logArchive);
    const attemptPods = {
      clients: options.clients, namespace: options.namespace, gatewaySecret: options.gatewaySecret, connectTokenKey: options.connectTokenKey,
      expectedAdmission: (bare: V1Pod, dryRun: boolean) => this.expectedAdmission(bare, dryRun),
    };
    const attempts = { rules: this.pools, createAttemptPod: (bare: V1Pod) => createAttemptPod(attemptPods, bare) };
    ({ manager: this.manager, reconciler: this.reconciler, leader: this.leader, archiver: this.archiver, eventLogAccess: this.eventLogAccess } = wireControllers(options, this.cache, log, attempts));
    this.jobs = new KubernetesJobProfiles(jobProfileObjects(options.clients, options.namespace), options.rules, () => this.manager.isLeader);
    this.jobProfiles = new JobProfileWiring({ clients: options.clients, namespace: options.namespace, profiles: this.jobs, manager: this.manager, cluster: this, log });
  }

  /** Lists and watches (the cache), then runs for the Lease. Reads wait for it; the wiring calls it before the port opens. */
  start(): Promise<void> {
    this.jobProfiles.start();
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
    return this.jobProfiles.ready();
  }

  /**
   * Records each ended run into its job's profile from its event log (`readProfile`: the
   * history's), on the replica holding the Lease. A controller of the manager with one key: at
   * the start of each term and at every resync it catches up on the runs that ended lately and
   * are not recorded yet (cluster/profile-recorder.ts).
   */
  recordJobProfiles(readProfile: ProfileRecorderOptions['readProfile'], rules: RulesInput): ProfileRecorder {
    return this.jobProfiles.record(readProfile, rules);
  }

  private get ns() { return this.options.namespace; }
  private get custom() { return this.options.clients.custom; }
  private get records() { return { group: GROUP, version: VERSION, plural: APPLICATIONS, namespace: this.ns }; }

  private call<T>(what: string, run: () => Promise<T>): Promise<T> {
    return kubeCall(this.options.clients.server, what, run);
  }

  private orUndefined<T>(what: string, run: () => Promise<T>): Promise<T | undefined> {
    return kubeCallOrAbsent(this.options.clients.server, what, run);
  }

  async createDriver(bare: V1Pod, options: CreateOptions): Promise<CreateResult> {
    await this.start();
    const { clients, appNetworkPolicies } = this.options;
    return createDriver({
      clients, namespace: this.ns, appNetworkPolicies, cache: this.cache, log: this.logMessage, connectTokenKey: this.options.connectTokenKey,
      expectedAdmission: (pod, dryRun) => this.expectedAdmission(pod, dryRun),
    }, bare, options);
  }

  /** What the webhook would admit, when this process has its rules (the rules in force now); undefined when unknown. */
  private expectedAdmission(bare: V1Pod, dryRun: boolean) {
    const rules = this.options.rules && rulesNow(this.options.rules);
    return admissionWithTemplate(bare, this.ns, rules, (name) => this.templates.get(name), dryRun, (jobName, submittedBy) => this.jobs.runs(jobName, submittedBy));
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
        { op: 'add', path: `/metadata/labels/${pointerKey(KERNEL_CLAIMER_LABEL)}`, value: claimer },
        // No submitter (a warm Connect server the service started): the claimer becomes it.
        ...(resource.spec.submittedBy ? [] : [{ op: 'add', path: '/spec/submittedBy', value: claimer }]),
      ];
      await this.call(`claim application ${appName}`, () => this.custom.patchNamespacedCustomObject({ ...this.records, name: appName, fieldManager: FIELD_MANAGER, body }));
    }
    return this.cache.until(appName, (r) => r === undefined || r.labels?.[KERNEL_CLAIMER_LABEL] === claimer);
  }

  /**
   * Adds or replaces labels of an Application (the Connect endpoint names the session a warm
   * pool's server now runs, so that another replica finds it); answers once the cache has them.
   */
  async setLabels(appName: string, labels: Record<string, string>): Promise<void> {
    await this.start();
    // Its labels are never empty (the job's label is there): `add` under them needs no parent made.
    const body = Object.entries(labels).map(([key, value]) => ({ op: 'add', path: `/metadata/labels/${pointerKey(key)}`, value }));
    const found = await this.orUndefined(`label application ${appName}`, () => patchJson(this.options.clients.kc,
      `/apis/${GROUP}/${VERSION}/namespaces/${this.ns}/${APPLICATIONS}/${appName}?fieldManager=${FIELD_MANAGER}`, body));
    if (found !== undefined) await this.cache.until(appName, (r) => r === undefined || Object.entries(labels).every(([key, value]) => r.labels?.[key] === value));
  }

  /**
   * A stop is a request in the Application's spec (`spec.stopRequested`, and `spec.stopReason`
   * when the service stops it for a reason of its own: `why`), written once by whichever replica
   * got it first (stop-request.ts); the controller (reconciler.ts) writes KILLED with the reason,
   * the one writer of status, and then deletes the driver pod. Answers once the cache shows the
   * end (or after the wait, with the state then: the request stays, and the leader carries it out when it can).
   */
  async stop(appName: string, why?: string): Promise<AppRecord | undefined> {
    const record = await this.get(appName);
    if (!record || isTerminal(record.state)) return record;
    const found = await requestStop(this.cache.application(appName), why, {
      read: () => this.orUndefined(`read application ${appName}`, () => this.custom.getNamespacedCustomObject({ ...this.records, name: appName })) as Promise<ApplicationResource | undefined>,
      patch: (body) => this.orUndefined(`stop application ${appName}`, () => patchJson(this.options.clients.kc,
        `/apis/${GROUP}/${VERSION}/namespaces/${this.ns}/${APPLICATIONS}/${appName}?fieldManager=${FIELD_MANAGER}`, body)),
    });
    if (!found) return undefined;
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
  /** The token the Connect server of `appName` was given (its Secret's), which the endpoint sends it; undefined: none. */
  connectServerToken(appName: string): string | undefined {
    const key = this.options.connectTokenKey;
    return key && connectServerToken(key, appName);
  }

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
    await this.jobProfiles.close(() => this.manager.stop());
  }
}
