// What the webhook needs besides the pod, fed by informers so that admission never waits
// on a list call: config templates by name, and the effective config of known drivers
// (executors are sized from it). Bounded LRU maps; the informers restart after errors
// (informers.ts). A miss is filled with one GET; only 404 means absent: any other failure
// (an RBAC 403, a timeout) is logged and thrown, so the review is denied with 503 (fail
// closed) instead of answering "template not found".
import type { KubernetesObject, V1Pod } from '@kubernetes/client-node';
import { LRUCache } from 'lru-cache';
import type { ApplicationConfig } from '../../schemas/index.js';
import { LABEL_APP, LABEL_JOB, LABEL_TEMPLATE, readConfigAnnotation, SPARK_ROLE } from '../../webhook/domain/index.js';
import { GROUP, type KubeClients, TEMPLATES, VERSION } from './client.js';
import { statusCode } from './errors.js';
import { type Log, type ResilientInformer, resilientInformer } from './informers.js';
import { admissionCacheLookups, malformedAnnotations } from './metrics.js';

type TemplateObject = KubernetesObject & { spec?: { config?: ApplicationConfig } };

export class AdmissionCache {
  readonly templates = new LRUCache<string, ApplicationConfig>({ max: 10_000 });
  readonly applications = new LRUCache<string, ApplicationConfig>({ max: 50_000 });
  private readonly informers: ResilientInformer<KubernetesObject>[] = [];
  private synced = 0;
  private readonly log: Log;

  constructor(private readonly clients: KubeClients, private readonly namespace: string, log?: Log) {
    this.log = log ?? ((message) => void process.stderr.write(`${message}\n`));
  }

  get ready(): boolean {
    return this.synced === 2;
  }

  async start(): Promise<void> {
    const { kc, core, custom } = this.clients;
    const ns = this.namespace;
    const templates = resilientInformer<TemplateObject>(kc, 'config templates', `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${TEMPLATES}`,
      () => custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: TEMPLATES }) as never, { log: this.log });
    const putTemplate = (t: TemplateObject) => { if (t.metadata?.name) this.templates.set(t.metadata.name, t.spec?.config ?? {}); };
    templates.informer.on('add', putTemplate);
    templates.informer.on('update', putTemplate);
    templates.informer.on('delete', (t) => { if (t.metadata?.name) this.templates.delete(t.metadata.name); });

    const selector = `${LABEL_JOB},${SPARK_ROLE}=driver`;
    const drivers = resilientInformer<V1Pod>(kc, 'driver pods (admission)', `/api/v1/namespaces/${ns}/pods`,
      () => core.listNamespacedPod({ namespace: ns, labelSelector: selector }), { labelSelector: selector, log: this.log });
    // A config annotation edited into something unreadable after admission is said, counted
    // and skipped (the config admission cached for it, if any, stays: it is what was admitted).
    const putDriver = (pod: V1Pod) => {
      const { config, problem } = readConfigAnnotation(pod);
      if (problem) {
        malformedAnnotations.inc({ component: 'webhook' });
        this.log(`admission cache: driver pod ${pod.metadata?.name}: ${problem}; skipped`);
      }
      if (pod.metadata?.name && config) this.applications.set(pod.metadata.name, config);
    };
    drivers.informer.on('add', putDriver);
    drivers.informer.on('update', putDriver);
    // Deleted drivers stay cached: their last executors may still be arriving.

    for (const informer of [templates, drivers] as ResilientInformer<KubernetesObject>[]) {
      await informer.start();
      this.synced++;
      this.informers.push(informer);
    }
  }

  /**
   * Fills what a review needs and the watches have not delivered yet (a template created a
   * moment ago, an executor's driver admitted a moment ago): one GET on a miss, then cached.
   * Rejects when the apiserver fails for a reason other than "absent".
   */
  async prepare(review: unknown): Promise<void> {
    const pod = (review as { request?: { object?: V1Pod } })?.request?.object;
    const labels = pod?.metadata?.labels ?? {};
    const template = labels[LABEL_TEMPLATE];
    if (template) await this.fetchTemplate(template);
    if (labels[SPARK_ROLE] === 'executor') {
      const driver = labels[LABEL_APP] ?? pod?.metadata?.ownerReferences?.find((o) => o.kind === 'Pod')?.name;
      if (driver) {
        const hit = this.applications.has(driver);
        admissionCacheLookups.inc({ cache: 'drivers', result: hit ? 'hit' : 'miss' });
        if (!hit) await this.fetchDriver(driver);
      }
    }
  }

  private async fetchDriver(name: string): Promise<void> {
    const pod = await this.absentOn404(`driver pod ${name}`, () => this.clients.core.readNamespacedPod({ name, namespace: this.namespace }));
    if (!pod?.metadata?.labels?.[LABEL_JOB]) return; // no such driver, or not ours: the executor is not ours and passes untouched
    const { config, problem } = readConfigAnnotation(pod);
    // Ours, but its config is unreadable: sizing the executor from nothing would be a wrong answer.
    if (problem) {
      malformedAnnotations.inc({ component: 'webhook' });
      throw new Error(`driver pod ${name}: ${problem}`);
    }
    if (config) this.applications.set(name, config);
  }

  /** A freshly created template may not have arrived yet: one GET on a miss, then cached. */
  async fetchTemplate(name: string): Promise<void> {
    const hit = this.templates.has(name);
    admissionCacheLookups.inc({ cache: 'templates', result: hit ? 'hit' : 'miss' });
    if (hit) return;
    const t = await this.absentOn404(`config template ${name}`, () =>
      this.clients.custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: this.namespace, plural: TEMPLATES, name }) as Promise<TemplateObject>);
    if (t) this.templates.set(name, t.spec?.config ?? {});
    // Absent: admission answers 404.
  }

  private async absentOn404<T>(what: string, run: () => Promise<T>): Promise<T | undefined> {
    try {
      return await run();
    } catch (error) {
      if (statusCode(error) === 404) return undefined;
      const code = statusCode(error);
      this.log(`admission cache: reading ${what} failed (${code ?? (error as Error).message}); the review is denied with 503`);
      throw new Error(`reading ${what} failed${code ? ` with HTTP ${code}` : `: ${(error as Error).message}`}`);
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map((informer) => informer.stop()));
  }
}
