// What the webhook needs besides the pod, fed by watches so that admission never waits
// on a list call: config templates by name, and the effective config of known drivers
// (executors are sized from it). Bounded LRU maps; informers re-list after errors.
import { makeInformer, type KubernetesObject, type V1Pod } from '@kubernetes/client-node';
import { LRUCache } from 'lru-cache';
import type { ApplicationConfig } from '../../schemas/index.js';
import { LABEL_APP, LABEL_JOB, LABEL_TEMPLATE, readConfig, SPARK_ROLE } from '../../webhook/domain/index.js';
import { GROUP, type KubeClients, TEMPLATES, VERSION } from './client.js';

type TemplateObject = KubernetesObject & { spec?: { config?: ApplicationConfig } };

export class AdmissionCache {
  readonly templates = new LRUCache<string, ApplicationConfig>({ max: 10_000 });
  readonly applications = new LRUCache<string, ApplicationConfig>({ max: 50_000 });
  private readonly stops: (() => Promise<void> | void)[] = [];
  private synced = 0;
  private stopped = false;

  constructor(private readonly clients: KubeClients, private readonly namespace: string) {}

  get ready(): boolean {
    return this.synced === 2;
  }

  async start(): Promise<void> {
    const { kc, core, custom } = this.clients;
    const ns = this.namespace;
    const templates = makeInformer<TemplateObject>(kc, `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${TEMPLATES}`,
      () => custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: TEMPLATES }) as never);
    const putTemplate = (t: TemplateObject) => { if (t.metadata?.name) this.templates.set(t.metadata.name, t.spec?.config ?? {}); };
    templates.on('add', putTemplate);
    templates.on('update', putTemplate);
    templates.on('delete', (t) => { if (t.metadata?.name) this.templates.delete(t.metadata.name); });

    const drivers = makeInformer<V1Pod>(kc, `/api/v1/namespaces/${ns}/pods`,
      () => core.listNamespacedPod({ namespace: ns, labelSelector: `${LABEL_JOB},${SPARK_ROLE}=driver` }), `${LABEL_JOB},${SPARK_ROLE}=driver`);
    const putDriver = (pod: V1Pod) => {
      const config = readConfig(pod);
      if (pod.metadata?.name && config) this.applications.set(pod.metadata.name, config);
    };
    drivers.on('add', putDriver);
    drivers.on('update', putDriver);
    // Deleted drivers stay cached: their last executors may still be arriving.

    for (const informer of [templates, drivers]) {
      // stop() aborts the watch, which reports an error too: no restart once stopped.
      informer.on('error', () => {
        if (this.stopped) return;
        setTimeout(() => { if (!this.stopped) void informer.start().catch(() => undefined); }, 1000).unref();
      });
      await informer.start();
      this.synced++;
      this.stops.push(() => informer.stop());
    }
  }

  /**
   * Fills what a review needs and the watches have not delivered yet (a template created a
   * moment ago, an executor's driver admitted a moment ago): one GET on a miss, then cached.
   */
  async prepare(review: unknown): Promise<void> {
    const pod = (review as { request?: { object?: V1Pod } })?.request?.object;
    const labels = pod?.metadata?.labels ?? {};
    const template = labels[LABEL_TEMPLATE];
    if (template && !this.templates.has(template)) await this.fetchTemplate(template);
    if (labels[SPARK_ROLE] === 'executor') {
      const driver = labels[LABEL_APP] ?? pod?.metadata?.ownerReferences?.find((o) => o.kind === 'Pod')?.name;
      if (driver && !this.applications.has(driver)) await this.fetchDriver(driver);
    }
  }

  private async fetchDriver(name: string): Promise<void> {
    try {
      const pod = await this.clients.core.readNamespacedPod({ name, namespace: this.namespace });
      const config = readConfig(pod);
      if (config && pod.metadata?.labels?.[LABEL_JOB]) this.applications.set(name, config);
    } catch { /* unknown driver: the executor is not ours */ }
  }

  /** A freshly created template may not have arrived yet: one GET on a miss, then cached. */
  async fetchTemplate(name: string): Promise<void> {
    if (this.templates.has(name)) return;
    try {
      const t = await this.clients.custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: this.namespace, plural: TEMPLATES, name }) as TemplateObject;
      this.templates.set(name, t.spec?.config ?? {});
    } catch { /* absent: admission answers 404 */ }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.stops.map((stop) => stop()));
  }
}
