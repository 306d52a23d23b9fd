// What the webhook needs besides the pod, fed by watches so that admission never waits
// on a list call: config templates by name, and the effective config of known drivers
// (executors are sized from it). Bounded LRU maps; informers re-list after errors.
import { makeInformer, type KubernetesObject, type V1Pod } from '@kubernetes/client-node';
import { LRUCache } from 'lru-cache';
import type { ApplicationConfig } from '../../schemas/index.js';
import { LABEL_JOB, readConfig, SPARK_ROLE } from '../../webhook/domain/index.js';
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
