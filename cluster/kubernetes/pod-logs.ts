// The API's read side for logs in Kubernetes mode: a driver's or executor's log from its pod
// while there (through the apiserver, log-request.ts: followed when asked), else from the log
// archive (log-archive.ts), else a line saying it went with its pod.
import { PassThrough, type Readable } from 'node:stream';
import { DRIVER_CONTAINER, LABEL_APP } from '../../domain/index.js';
import type { AppRecord } from '../cluster.js';
import type { AppCache } from './app-cache.js';
import type { KubeClients } from './client.js';
import { kubeCall } from './errors.js';
import { isLogContainer, type LogArchive, type LogContainer } from './log-archive.js';
import { openPodLog } from './log-request.js';

export interface LogOptions { follow: boolean; signal?: AbortSignal; container?: string }

export class PodLogs {
  constructor(private readonly clients: KubeClients, private readonly namespace: string, private readonly cache: AppCache, private readonly archive?: LogArchive) {}

  /** The log of `record`'s driver (default) or one of its executors; undefined for a container it has not. */
  async read(record: AppRecord, options: LogOptions): Promise<Readable | undefined> {
    const appName = record.appName;
    const container = options.container ?? 'driver';
    if (container !== 'driver') return isLogContainer(container) ? this.executorLog(appName, container, options) : undefined;
    const driver = this.cache.driver(appName);
    if (!driver || driver.deleted) {
      const archived = await this.archive?.read(appName, 'driver');
      return archived ?? new PassThrough().end(`the driver pod of ${appName} is gone; its log went with it (state ${record.state})\n`);
    }
    // A retry's driver pod has its attempt's name (attempt-starter.ts), not the application's.
    return this.podLog(`read the log of ${appName}`, driver.pod.metadata?.name ?? appName, DRIVER_CONTAINER, options);
  }

  /** A pod's log as a stream that ends when the log does, the request is cut, or `signal` aborts. */
  private async podLog(what: string, pod: string, container: string, { follow, signal }: LogOptions): Promise<Readable> {
    const response = await kubeCall(this.clients.server, what, () => openPodLog(this.clients.kc, { namespace: this.namespace, pod, container, follow, signal }));
    const stream = new PassThrough();
    response.once('error', () => stream.end());
    signal?.addEventListener('abort', () => { response.destroy(); stream.end(); }, { once: true });
    return response.pipe(stream);
  }

  /** Executor N's log: from its pod while there, else from the archive. */
  private async executorLog(appName: string, container: LogContainer, options: LogOptions): Promise<Readable | undefined> {
    const id = container.slice('executor-'.length);
    const pods = await kubeCall(this.clients.server, `find executor ${id} of ${appName}`, () =>
      this.clients.core.listNamespacedPod({ namespace: this.namespace, labelSelector: `${LABEL_APP}=${appName},spark-role=executor,spark-exec-id=${id}` }));
    const pod = pods.items.find((p) => !p.metadata?.deletionTimestamp) ?? pods.items[0];
    if (!pod) return this.archive?.read(appName, container);
    return this.podLog(`read the log of ${appName} ${container}`, pod.metadata!.name!, pod.spec?.containers?.[0]?.name ?? '', options);
  }
}
