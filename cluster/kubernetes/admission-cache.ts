// What the webhook needs besides the pod: config templates by name, fed by an informer so
// that admission never waits on a list call, and the effective config of the drivers whose
// executors it sizes. Drivers are not watched: executors are far rarer than drivers per unit of
// apiserver work (the API admits its own drivers, so a watch of every driver pod was the
// webhook's main cost per submission), so an executor's driver is read with one GET on a miss,
// shared by the executors that miss it at once, and kept in a bounded LRU keyed by the driver
// pod's uid (a driver re-created under the same name is another application). The informer
// restarts after errors (informers.ts). Only 404 means absent: any other failure (an RBAC 403,
// a timeout) is logged and thrown, so the review is denied with 503 (fail closed) instead of
// answering "template not found" or letting an executor through unsized.
//
// Jobs' past runs (JobProfile resources, for sizing.fromHistory: apply) are watched too, read
// only (the controller writes them), followed in the background: a webhook whose first list of
// them fails still serves, sizing those jobs as asked (job-profile-store.ts).
import type { KubernetesObject, V1Pod } from '@kubernetes/client-node';
import { LRUCache } from 'lru-cache';
import type { ApplicationConfig } from '../../schemas/index.js';
import { executorDriver, LABEL_APP, LABEL_JOB, LABEL_TEMPLATE, readConfigAnnotation, SPARK_ROLE } from '../../domain/index.js';
import { GROUP, type KubeClients, TEMPLATES, VERSION } from './client.js';
import { withTimeout } from './call-timeout.js';
import { statusCode } from './errors.js';
import { type Log, type ResilientInformer, resilientInformer } from './informers.js';
import { admissionCacheLookups, malformedAnnotations } from './metrics.js';
import { followJobProfiles, jobProfileObjects, KubernetesJobProfiles } from './job-profile-store.js';

type TemplateObject = KubernetesObject & { spec?: { config?: ApplicationConfig } };

/** A driver pod of ours, as one GET read it; app: its app label (a retry's pod `<app>-attempt-N` runs `<app>`). */
interface KnownDriver { name: string; app: string; config: ApplicationConfig }

const MAX_DRIVERS = 50_000;
/**
 * A driver GET shared by reviews must not hang them all on a dead connection: past this it
 * fails (each review has given up after its own 2 s by then; a later one reads again).
 */
const DRIVER_READ_TIMEOUT_MS = 5_000;

export class AdmissionCache {
  readonly templates = new LRUCache<string, ApplicationConfig>({ max: 10_000 });
  /** Drivers of ours by pod uid. */
  private readonly drivers = new LRUCache<string, KnownDriver>({ max: MAX_DRIVERS });
  /**
   * The uid of the last driver of ours read under a name ('' when the pod under that name is not
   * ours), for executors that name their driver by our label only. A driver gone since (404)
   * keeps its entry: its last executors may still be arriving.
   */
  private readonly driverNames = new LRUCache<string, string>({ max: MAX_DRIVERS });
  /**
   * GETs in flight, shared by the reviews that miss the same driver at once (single flight):
   * by uid, so that a GET started before a driver was re-created under its name never answers
   * for the new one's executors; `name/<name>` for executors named by label only.
   */
  private readonly reading = new Map<string, Promise<void>>();
  private informer?: ResilientInformer<KubernetesObject>;
  private readonly log: Log;
  /** Jobs' past runs by job name, as the last watch event left them. */
  readonly jobs: KubernetesJobProfiles;
  private jobsFollow?: ReturnType<typeof followJobProfiles>;

  constructor(private readonly clients: KubeClients, private readonly namespace: string, log?: Log) {
    this.log = log ?? ((message) => void process.stderr.write(`${message}\n`));
    this.jobs = new KubernetesJobProfiles(jobProfileObjects(clients, namespace), undefined, () => false);
  }

  /** Resolves once the JobProfiles are listed (after start). */
  get jobsReady(): Promise<void> {
    return this.jobsFollow?.ready ?? Promise.reject(new Error('the admission cache is not started'));
  }

  /** Ready once the templates are listed; drivers are read when an executor needs one. */
  get ready(): boolean {
    return this.informer !== undefined;
  }

  async start(): Promise<void> {
    const { kc, custom } = this.clients;
    const ns = this.namespace;
    const templates = resilientInformer<TemplateObject>(kc, 'config templates', `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${TEMPLATES}`,
      () => custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: TEMPLATES }) as never, { log: this.log });
    const putTemplate = (t: TemplateObject) => { if (t.metadata?.name) this.templates.set(t.metadata.name, t.spec?.config ?? {}); };
    templates.informer.on('add', putTemplate);
    templates.informer.on('update', putTemplate);
    templates.informer.on('delete', (t) => { if (t.metadata?.name) this.templates.delete(t.metadata.name); });
    this.jobsFollow = followJobProfiles(this.clients, ns, this.jobs, this.log);
    await templates.start();
    this.informer = templates as ResilientInformer<KubernetesObject>;
  }

  /**
   * The effective config of an executor's driver, as `prepare` read it: by the driver pod's uid
   * where the executor names it (its owner reference), else by name (the last driver of ours
   * read under it). Undefined: not a driver of ours.
   */
  driverConfig(name: string, uid?: string): ApplicationConfig | undefined {
    return this.knownDriver(name, uid)?.config;
  }

  /** The application a driver of ours runs (its app label), by the same keys as driverConfig. */
  driverApplication(name: string, uid?: string): string | undefined {
    return this.knownDriver(name, uid)?.app;
  }

  /** A driver read under `name`: by its uid where given, else the last one of ours read under that name. */
  private knownDriver(name: string, uid: string | undefined): KnownDriver | undefined {
    const key = uid ?? this.driverNames.get(name);
    const known = key ? this.drivers.get(key) : undefined;
    return known?.name === name ? known : undefined;
  }

  /**
   * Fills what a review needs and the watch has not delivered yet (a template created a
   * moment ago) or is not watched (an executor's driver): one GET on a miss, then cached.
   * Rejects when the apiserver fails for a reason other than "absent".
   */
  async prepare(review: unknown): Promise<void> {
    const pod = (review as { request?: { object?: V1Pod } })?.request?.object;
    const labels = pod?.metadata?.labels ?? {};
    const template = labels[LABEL_TEMPLATE];
    if (template) await this.fetchTemplate(template);
    if (pod && labels[SPARK_ROLE] === 'executor') {
      const driver = executorDriver(pod, this.namespace);
      if (driver) await this.fetchDriver(driver.name, driver.uid);
    }
  }

  /** An executor's driver: a hit by uid, else one GET (shared with the reviews in flight for it). */
  private async fetchDriver(name: string, uid: string | undefined): Promise<void> {
    if (uid && this.drivers.has(uid)) {
      admissionCacheLookups.inc({ cache: 'drivers', result: 'hit' });
      return;
    }
    // An executor named by our label only (not how Spark writes them) reads its driver every time.
    const key = uid ?? `name/${name}`;
    const inFlight = this.reading.get(key);
    admissionCacheLookups.inc({ cache: 'drivers', result: inFlight ? 'shared' : 'miss' });
    if (inFlight) return inFlight;
    const read = this.readDriver(name).finally(() => this.reading.delete(key));
    this.reading.set(key, read);
    return read;
  }

  /**
   * Reads the pod under `name` and keeps it by uid and as the latest under its name when it is a
   * driver of ours (our job label, a config). A 404 changes nothing. Ours but with an unreadable
   * config: sizing its executors from nothing would be a wrong answer, so the review fails.
   */
  private async readDriver(name: string): Promise<void> {
    const pod = await this.absentOn404(`driver pod ${name}`, () => withTimeout(`reading driver pod ${name}`, DRIVER_READ_TIMEOUT_MS,
      (options) => this.clients.core.readNamespacedPod({ name, namespace: this.namespace }, options)));
    if (!pod) return;
    const uid = pod.metadata?.uid;
    const ours = Boolean(pod.metadata?.labels?.[LABEL_JOB]);
    const { config, problem } = ours ? readConfigAnnotation(pod) : {};
    if (problem) {
      malformedAnnotations.inc({ component: 'webhook' });
      throw new Error(`driver pod ${name}: ${problem}`);
    }
    if (!uid || !config) {
      this.driverNames.set(name, ''); // not ours: its executors get the policy's allowances
      return;
    }
    this.drivers.set(uid, { name, app: pod.metadata?.labels?.[LABEL_APP] ?? name, config });
    this.driverNames.set(name, uid);
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
    await this.jobsFollow?.stop();
    await this.informer?.stop();
  }
}
