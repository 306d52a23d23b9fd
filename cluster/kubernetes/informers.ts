// One informer (client-node's ListWatch: list, then watch from the list's version) that
// comes back after errors: client-node's informer stops on an error and leaves restarting
// to its user. Restarts are logged, counted (submission_service_watch_restarts_total) and
// spaced by a doubling backoff (0.2 s up to 10 s, reset once a watch connects again).
// A watch answered 410 Gone (its version was compacted away) makes client-node list again
// from scratch (counted: submission_service_informer_lists_total).
//
// Every handler is guarded: client-node calls handlers inside its async watch and list code,
// so one that throws (an object this process cannot read, such as a hand-edited annotation)
// would become an unhandled rejection, which ends a Node process, and on the initial list a
// failed start, so a crash loop. Here a throwing handler is logged, counted
// (submission_service_informer_handler_errors_total) and the object skipped. It relies on how
// ListWatch registers 'change' (through this.on): pinned by test/unit/library-pins.test.ts.
// Its watch is line-watch.ts's: client-node's contract, the stream cut into lines as it comes.
import {
  CHANGE, type ErrorCallback, type Informer, type KubeConfig, type KubernetesListObject, type KubernetesObject, ListWatch,
  type ObjectCache, type ObjectCallback,
} from '@kubernetes/client-node';
import { LineWatch } from './line-watch.js';
import { informerHandlerErrors, informerLists, watchRestarts } from './metrics.js';

export type Log = (message: string) => void;

export interface ResilientInformer<T extends KubernetesObject> {
  informer: Informer<T> & ObjectCache<T>;
  /** Resolves once the first list is in the cache (and its add events were delivered). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

type AnyCallback = (arg?: any) => unknown;

/** A ListWatch whose handlers cannot throw into client-node (see the top of this file). */
class GuardedListWatch<T extends KubernetesObject> extends ListWatch<T> {
  /** The wrapper of each handler, by event, so that `off` finds it. */
  private readonly guarded = new Map<string, Map<AnyCallback, AnyCallback>>();

  constructor(private readonly resource: string, private readonly log: Log, ...args: ConstructorParameters<typeof ListWatch<T>>) {
    super(...args);
  }

  override on(verb: 'add' | 'update' | 'delete' | 'change', cb: ObjectCallback<T>): void;
  override on(verb: 'error' | 'connect', cb: ErrorCallback): void;
  override on(verb: string, cb: AnyCallback): void {
    // 'change' registers add, update and delete through this same method.
    if (verb === CHANGE) return super.on(verb, cb as ObjectCallback<T>);
    let byHandler = this.guarded.get(verb);
    if (!byHandler) this.guarded.set(verb, (byHandler = new Map()));
    const wrapped = byHandler.get(cb) ?? ((arg?: unknown) => this.call(verb, cb, arg));
    byHandler.set(cb, wrapped);
    super.on(verb as 'add', wrapped as ObjectCallback<T>);
  }

  override off(verb: 'add' | 'update' | 'delete' | 'change', cb: ObjectCallback<T>): void;
  override off(verb: 'error' | 'connect', cb: ErrorCallback): void;
  override off(verb: string, cb: AnyCallback): void {
    if (verb === CHANGE) return super.off(verb, cb as ObjectCallback<T>);
    super.off(verb as 'add', (this.guarded.get(verb)?.get(cb) ?? cb) as ObjectCallback<T>);
  }

  private call(verb: string, cb: AnyCallback, arg: unknown): void {
    try {
      const result = cb(arg);
      if (result instanceof Promise) result.catch((error: unknown) => this.failed(verb, arg, error));
    } catch (error) {
      this.failed(verb, arg, error);
    }
  }

  private failed(verb: string, arg: unknown, error: unknown): void {
    informerHandlerErrors.inc({ resource: this.resource, event: verb });
    const name = (arg as KubernetesObject | undefined)?.metadata?.name;
    this.log(`${this.resource}: the ${verb} handler${name ? ` of ${name}` : ''} failed (${(error as Error)?.message ?? String(error)}); that object is skipped`);
  }
}

export function resilientInformer<T extends KubernetesObject>(
  kc: KubeConfig, resource: string, path: string, list: () => Promise<KubernetesListObject<T>>,
  options: { labelSelector?: string; fieldSelector?: string; log?: Log } = {},
): ResilientInformer<T> {
  // ListWatch rather than makeInformer: the same informer, plus a field selector (one Secret by name).
  const counted = () => { informerLists.inc({ resource }); return list(); };
  const informer: Informer<T> & ObjectCache<T> = new GuardedListWatch<T>(resource, options.log ?? ((message) => void process.stderr.write(`${message}\n`)), path, new LineWatch(kc), counted, false, options.labelSelector, options.fieldSelector);
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
