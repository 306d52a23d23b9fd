// One informer (client-node's ListWatch: list, then watch from the list's version) that
// comes back after errors: client-node's informer stops on an error and leaves restarting
// to its user. Restarts are logged, counted (submission_service_watch_restarts_total) and
// spaced by a doubling backoff (0.2 s up to 10 s, reset once a watch connects again).
import { type Informer, type KubeConfig, type KubernetesListObject, type KubernetesObject, ListWatch, type ObjectCache, Watch } from '@kubernetes/client-node';
import { watchRestarts } from './metrics.js';

export type Log = (message: string) => void;

export interface ResilientInformer<T extends KubernetesObject> {
  informer: Informer<T> & ObjectCache<T>;
  /** Resolves once the first list is in the cache (and its add events were delivered). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function resilientInformer<T extends KubernetesObject>(
  kc: KubeConfig, resource: string, path: string, list: () => Promise<KubernetesListObject<T>>,
  options: { labelSelector?: string; fieldSelector?: string; log?: Log } = {},
): ResilientInformer<T> {
  // ListWatch rather than makeInformer: the same informer, plus a field selector (one Secret by name).
  const informer: Informer<T> & ObjectCache<T> = new ListWatch<T>(path, new Watch(kc), list, false, options.labelSelector, options.fieldSelector);
  let stopped = false;
  let pause = 200;
  let timer: NodeJS.Timeout | undefined;
  let firstError: ((error: unknown) => void) | undefined;
  let errors = 0;
  informer.on('error', (error: unknown) => {
    errors += 1;
    if (stopped) return; // stop() aborts the watch, which reports an error too
    if (firstError) { firstError(error); return; }
    watchRestarts.inc({ resource });
    options.log?.(`watch on ${resource} failed (${(error as Error)?.message ?? String(error)}); restarting in ${pause} ms`);
    timer = setTimeout(() => {
      timer = undefined;
      if (stopped) return;
      const before = errors;
      informer.start().then(() => { if (errors === before) pause = 200; }, (e: unknown) => options.log?.(`restarting the watch on ${resource} failed: ${String(e)}`));
    }, pause);
    pause = Math.min(pause * 2, 10_000);
  });
  return {
    informer,
    async start() {
      // The first list must succeed: its failure (no access, no apiserver) is the caller's.
      let failed: unknown;
      firstError = (error) => { failed ??= error; };
      await informer.start();
      firstError = undefined;
      if (failed !== undefined) {
        stopped = true;
        await informer.stop();
        throw failed;
      }
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await informer.stop();
    },
  };
}
