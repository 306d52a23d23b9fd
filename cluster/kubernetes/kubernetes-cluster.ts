// Kubernetes mode: the API writes bare driver pods; the apiserver sends them through
// our webhook; records are Application custom resources plus the live driver pods.
// Nothing that matters is kept in memory, so several API processes can share one cluster.
import { PassThrough, type Readable } from 'node:stream';
import { Log, type V1Pod, Watch } from '@kubernetes/client-node';
import type { ApplicationState } from '../../schemas/index.js';
import {
  ANNOTATION_ADMITTED, ANNOTATION_SUBMITTED_BY, applicationLabels, DRIVER_CONTAINER, DRIVER_PORTS, LABEL_APP, LABEL_JOB, LABEL_TEMPLATE, readConfig, SPARK_ROLE,
} from '../../webhook/domain/index.js';
import type { AppRecord, Cluster, CreateResult, ListQuery, Page } from '../cluster.js';
import { isTerminal, UnavailableError } from '../cluster.js';
import { type AppEventType, EventFeed } from '../events.js';
import { matchesQuery, pageOf } from '../paging.js';
import { type SubmissionInfo, submissionInfo } from '../submission-info.js';
import { APPLICATIONS, FIELD_MANAGER, GROUP, type KubeClients, VERSION } from './client.js';
import { kubeCall, kubeCallOrAbsent, missedAdmission, translate, webhookRefusal } from './errors.js';
import { type ApplicationResource, applicationResource, toRecord } from './records.js';
import { KubernetesTemplateStore } from './template-store.js';

export interface KubernetesClusterOptions {
  clients: KubeClients;
  /** Where driver and executor pods, records and templates live. */
  namespace: string;
}

const executorSelector = (appName?: string) => `${SPARK_ROLE}=executor${appName ? `,${LABEL_APP}=${appName}` : ''}`;

export class KubernetesCluster implements Cluster {
  readonly kind = 'kubernetes';
  readonly templates: KubernetesTemplateStore;
  /** Fed by a watch on driver pods while anyone follows it. */
  readonly events = new EventFeed({
    onDemand: (active) => {
      if (active && !this.watchAbort) void this.startWatch();
      if (!active) { this.watchAbort?.abort(); this.watchAbort = undefined; }
    },
  });
  private watchAbort?: AbortController;
  private closed = false;

  constructor(private readonly options: KubernetesClusterOptions) {
    this.templates = new KubernetesTemplateStore(options.clients, options.namespace);
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

  async createDriver(bare: V1Pod, { dryRun }: { dryRun: boolean }): Promise<CreateResult> {
    const body: V1Pod = { ...bare, metadata: { ...bare.metadata, namespace: this.ns } };
    let pod: V1Pod;
    try {
      pod = await this.core.createNamespacedPod({ namespace: this.ns, body, dryRun: dryRun ? 'All' : undefined, fieldManager: FIELD_MANAGER });
    } catch (error) {
      const refusal = webhookRefusal(error);
      if (refusal) return { ok: false, ...refusal };
      if (missedAdmission(error)) {
        throw new UnavailableError('the admission webhook is not installed: the driver pod reached the apiserver without being admitted (check the MutatingWebhookConfiguration)');
      }
      throw translate(error, this.options.clients.server, 'create the driver pod');
    }
    const config = readConfig(pod);
    if (!config || !pod.metadata?.annotations?.[ANNOTATION_ADMITTED]) {
      if (!dryRun) await this.deletePods(pod.metadata!.name!).catch(() => undefined);
      throw new UnavailableError('the admission webhook did not admit the driver pod (its objectSelector may not match our labels)');
    }
    const labels = pod.metadata!.labels ?? {};
    const record: AppRecord = {
      appName: pod.metadata!.name!,
      jobName: labels[LABEL_JOB] ?? '',
      configTemplateName: labels[LABEL_TEMPLATE] ?? '',
      config,
      state: 'PENDING',
      createdAt: new Date(pod.metadata?.creationTimestamp ?? Date.now()).toISOString(),
      startedAt: null,
      endedAt: null,
      runningExecutors: 0,
      namespace: this.ns,
      labels: applicationLabels(labels),
      submittedBy: pod.metadata?.annotations?.[ANNOTATION_SUBMITTED_BY] ?? null,
    };
    if (dryRun) return { ok: true, record, pod };
    const recordLabels = { [LABEL_JOB]: record.jobName, ...(record.configTemplateName ? { [LABEL_TEMPLATE]: record.configTemplateName } : {}) };
    try {
      await this.custom.createNamespacedCustomObject({ ...this.records, body: applicationResource(record, recordLabels), fieldManager: FIELD_MANAGER });
    } catch (error) {
      // No half-written application: without its record, the pod goes too.
      await this.deletePods(record.appName).catch(() => undefined);
      throw translate(error, this.options.clients.server, `record application ${record.appName}`);
    }
    return { ok: true, record, pod };
  }

  async get(appName: string): Promise<AppRecord | undefined> {
    const resource = await this.orUndefined(`read application ${appName}`, () =>
      this.custom.getNamespacedCustomObject({ ...this.records, name: appName })) as ApplicationResource | undefined;
    if (!resource) return undefined;
    const [pod, executors] = await Promise.all([
      this.orUndefined(`read driver pod ${appName}`, () => this.core.readNamespacedPod({ name: appName, namespace: this.ns })),
      this.call('list executor pods', () => this.core.listNamespacedPod({ namespace: this.ns, labelSelector: executorSelector(appName), fieldSelector: 'status.phase=Running' })),
    ]);
    return this.settle(resource, toRecord(resource, pod, executors.items.length));
  }

  async list(query: ListQuery): Promise<Page<AppRecord>> {
    const jobSelector = query.jobName ? `${LABEL_JOB}=${query.jobName}` : LABEL_JOB;
    const [resources, drivers, executors] = await Promise.all([
      this.call('list applications', () => this.custom.listNamespacedCustomObject({ ...this.records, labelSelector: jobSelector })),
      this.call('list driver pods', () => this.core.listNamespacedPod({ namespace: this.ns, labelSelector: `${jobSelector},${SPARK_ROLE}=driver` })),
      this.call('list executor pods', () => this.core.listNamespacedPod({ namespace: this.ns, labelSelector: executorSelector(), fieldSelector: 'status.phase=Running' })),
    ]);
    const pods = new Map(drivers.items.map((p) => [p.metadata!.name!, p]));
    const running = new Map<string, number>();
    for (const e of executors.items) {
      const app = e.metadata?.labels?.[LABEL_APP];
      if (app) running.set(app, (running.get(app) ?? 0) + 1);
    }
    const records = ((resources as { items: ApplicationResource[] }).items ?? [])
      .map((r) => toRecord(r, pods.get(r.metadata.name), running.get(r.metadata.name) ?? 0))
      .filter((r) => matchesQuery(r, query));
    return pageOf(records, query);
  }

  async stop(appName: string): Promise<AppRecord | undefined> {
    const record = await this.get(appName);
    if (!record || isTerminal(record.state)) return record;
    const stopped: AppRecord = { ...record, state: 'KILLED', stateDetail: 'stopped by a user', endedAt: new Date().toISOString(), runningExecutors: 0 };
    await this.saveStatus(stopped);
    await this.deletePods(appName);
    this.emit('changed', stopped);
    return stopped;
  }

  async delete(appName: string): Promise<boolean> {
    const record = await this.get(appName);
    if (!record) return false;
    await this.deletePods(appName);
    await this.orUndefined(`delete application ${appName}`, () => this.custom.deleteNamespacedCustomObject({ ...this.records, name: appName }));
    this.emit('deleted', record);
    return true;
  }

  async log(appName: string, options: { follow: boolean; signal?: AbortSignal }): Promise<Readable | undefined> {
    const record = await this.get(appName);
    if (!record) return undefined;
    const stream = new PassThrough();
    const pod = await this.orUndefined(`read driver pod ${appName}`, () => this.core.readNamespacedPod({ name: appName, namespace: this.ns }));
    if (!pod) {
      stream.end(`the driver pod of ${appName} is gone; its log went with it (state ${record.state})\n`);
      return stream;
    }
    const abort = await this.call(`read the log of ${appName}`, () =>
      new Log(this.options.clients.kc).log(this.ns, appName, DRIVER_CONTAINER, stream, { follow: options.follow }));
    options.signal?.addEventListener('abort', () => { abort.abort(); stream.end(); }, { once: true });
    return stream;
  }

  /** Overrides and admission mark from the driver pod; no sizing here (the node pools are the webhook's). */
  async submission(appName: string): Promise<SubmissionInfo | undefined> {
    const record = await this.get(appName);
    if (!record) return undefined;
    const pod = await this.orUndefined(`read driver pod ${appName}`, () => this.core.readNamespacedPod({ name: appName, namespace: this.ns }));
    return submissionInfo(pod, record.config, undefined);
  }

  /** The driver pod's IP and Spark UI port while the pod runs (one read of the pod). */
  async sparkUiTarget(appName: string): Promise<URL | undefined> {
    const pod = await this.orUndefined(`read driver pod ${appName}`, () => this.core.readNamespacedPod({ name: appName, namespace: this.ns }));
    const ip = pod?.status?.podIP;
    if (!pod || pod.status?.phase !== 'Running' || !ip) return undefined;
    return new URL(`http://${ip.includes(':') ? `[${ip}]` : ip}:${DRIVER_PORTS.ui}`);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.watchAbort?.abort();
  }

  /** Keeps a terminal state the pod shows, so the record outlives the pod. */
  private async settle(resource: ApplicationResource, record: AppRecord): Promise<AppRecord> {
    if (isTerminal(record.state) && !isTerminal(resource.status?.state)) await this.saveStatus(record).catch(() => undefined);
    return record;
  }

  private async saveStatus(record: AppRecord): Promise<void> {
    const status = { state: record.state as ApplicationState, stateDetail: record.stateDetail, startedAt: record.startedAt, endedAt: record.endedAt, runningExecutors: record.runningExecutors };
    await this.call(`update application ${record.appName}`, () =>
      this.custom.patchNamespacedCustomObjectStatus({ ...this.records, name: record.appName, body: [{ op: 'replace', path: '/status', value: status }], fieldManager: FIELD_MANAGER }));
  }

  private async deletePods(appName: string): Promise<void> {
    await this.orUndefined(`delete driver pod ${appName}`, () => this.core.deleteNamespacedPod({ name: appName, namespace: this.ns }));
    await this.call(`delete executor pods of ${appName}`, () =>
      this.core.deleteCollectionNamespacedPod({ namespace: this.ns, labelSelector: executorSelector(appName) }));
  }

  /** Driver pod changes, as records; reconnects until closed. */
  private async startWatch(): Promise<void> {
    const abort = new AbortController();
    this.watchAbort = abort;
    while (!this.closed && this.watchAbort === abort && !abort.signal.aborted) {
      await new Promise<void>((done) => {
        new Watch(this.options.clients.kc).watch(`/api/v1/namespaces/${this.ns}/pods`, { labelSelector: `${LABEL_JOB},${SPARK_ROLE}=driver` },
          (phase, pod: V1Pod) => void this.onPod(phase, pod),
          () => done(),
        ).then((request) => abort.signal.addEventListener('abort', () => { request.abort(); done(); }, { once: true }), () => done());
      });
      if (!abort.signal.aborted) await new Promise((ok) => setTimeout(ok, 1000));
    }
  }

  private async onPod(phase: string, pod: V1Pod): Promise<void> {
    const name = pod.metadata?.name;
    if (!name || phase === 'DELETED') return;
    const record = await this.get(name).catch(() => undefined);
    if (record) this.emit('changed', record);
  }

  private emit(type: AppEventType, record: AppRecord): void {
    this.events.publish(type, record);
  }
}
