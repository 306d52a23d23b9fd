// Each unfinished application has its own NetworkPolicy (app-network-policy.ts), kept so by a
// controller of the manager (manager.ts), keyed by application name and run by the leader:
// a missing policy is created — an application that was running when the chart turned
// `networkPolicy.enabled` on gets one, a deleted one comes back —, an ended or deleted
// application is left alone (the garbage collector removes its policy with it), and so is one
// whose driver pod is not there yet (the API's, see below).
//
// Writers: the API creates the policy at submission, before the driver pod (kubernetes-cluster.ts:
// when enforced, a driver never runs without it); this controller creates it only when missing.
// Both only create the same object and take 409 as "there already": neither updates nor
// deletes it, so there is never a second writer of its content. Deletion is the garbage
// collector's (the Application owns it).
//
// The policies are watched (label `LABEL_APP`) only while leading: a deleted one queues its
// application at once; a pass before the first list waits for it.
import { type KubeConfig, NetworkingV1Api, type V1NetworkPolicy } from '@kubernetes/client-node';
import { isTerminal } from '../cluster.js';
import { LABEL_APP } from '../../domain/index.js';
import { appNetworkPolicy, appNetworkPolicyName, type NetworkPolicyJson } from './app-network-policy.js';
import type { AppCache } from './app-cache.js';
import { FIELD_MANAGER, GROUP, VERSION } from './client.js';
import { Controller } from './controller.js';
import { type Log as LogFn, resilientInformer } from './informers.js';
import { postJson } from './json-call.js';
import type { Registration } from './manager.js';
import type { WorkQueueOptions } from './work-queue.js';

/** The applications' policies as the controller sees them (a watch of the apiserver; a fake in tests). */
export interface PolicyObjects {
  /** Lists, then follows; `gone` gets the application of each policy deleted. Resolves once listed. */
  start(gone: (appName: string) => void): Promise<void>;
  stop(): Promise<void>;
  /** Whether the policy of this name is there (as last listed or watched). */
  has(policyName: string): boolean;
  /** Creates it; one already there (the API's, or a race) is no error. */
  create(policy: NetworkPolicyJson): Promise<void>;
}

export interface NetworkPolicyControllerOptions {
  cache: Pick<AppCache, 'names' | 'application' | 'get' | 'driver'>;
  policies: PolicyObjects;
  isLeader: () => boolean;
  log: LogFn;
  /** Every application is looked at again this often (default 5 min). */
  resyncMs?: number;
  /** The work queue's backoff, timers and clock (tests pass a fake clock). */
  queue?: WorkQueueOptions;
}

export class NetworkPolicyController {
  readonly controller: Controller;
  /** The watch of this term, listed (undefined while not leading, or after a failed start). */
  private listed?: Promise<void>;

  constructor(private readonly options: NetworkPolicyControllerOptions) {
    this.controller = new Controller({
      name: 'app-network-policies', workers: 1, resyncMs: options.resyncMs, mayWrite: options.isLeader,
      queue: { baseMs: 1_000, maxMs: 60_000, ...options.queue },
      keys: () => options.cache.names(),
      reconcile: async (appName, context) => { if (context.mayWrite()) await this.ensure(appName, context.mayWrite); },
      onError: (appName, error, retryMs) => options.log(`application ${appName}: its NetworkPolicy (tried again in ${Math.round(retryMs / 100) / 10} s): ${(error as Error)?.message ?? String(error)}`),
    });
  }

  /** What the manager needs: an Application's change queues its name; the watch runs while leading. */
  get registration(): Registration {
    return {
      controller: this.controller,
      application: (appName) => [appName],
      onStartedLeading: () => { this.listed = undefined; },
      onStoppedLeading: () => this.stopWatching(),
      close: () => this.stopWatching(),
    };
  }

  private async stopWatching(): Promise<void> {
    const was = this.listed;
    this.listed = undefined;
    if (was) await this.options.policies.stop();
  }

  private watch(): Promise<void> {
    this.listed ??= this.options.policies.start((appName) => this.controller.enqueue(appName)).catch((error: unknown) => {
      this.listed = undefined;
      throw error;
    });
    return this.listed;
  }

  private async ensure(appName: string, mayWrite: () => boolean): Promise<void> {
    const application = this.options.cache.application(appName);
    if (!application?.metadata.uid) return;
    if (isTerminal(this.options.cache.get(appName)?.state)) return;
    // No driver pod yet: the API is about to create the policy (before the pod), and the pod's
    // creation queues this key again. (An API that died in between leaves an Application the
    // status controller ends: nothing to guard.)
    if (!this.options.cache.driver(appName)) return;
    await this.watch();
    if (this.options.policies.has(appNetworkPolicyName(appName)) || !mayWrite()) return;
    const owner = { apiVersion: `${GROUP}/${VERSION}`, kind: 'Application', name: appName, uid: application.metadata.uid };
    await this.options.policies.create(appNetworkPolicy(appName, owner));
    this.options.log(`application ${appName}: its NetworkPolicy was missing; created`);
  }
}

const conflict = (error: unknown): boolean => (error as { code?: number }).code === 409;

/** Creates an application's policy; one already there is no error (the API and the controller both create it, never change it). */
export async function createAppNetworkPolicy(kc: KubeConfig, namespace: string, policy: NetworkPolicyJson): Promise<void> {
  try {
    await postJson(kc, `/apis/networking.k8s.io/v1/namespaces/${namespace}/networkpolicies?fieldManager=${FIELD_MANAGER}`, policy);
  } catch (error) {
    if (!conflict(error)) throw error;
  }
}

/** The applications' policies in `namespace`, watched through the apiserver. */
export function kubePolicyObjects(kc: KubeConfig, namespace: string, log: LogFn): PolicyObjects {
  const networking = kc.makeApiClient(NetworkingV1Api);
  let watch: ReturnType<typeof resilientInformer<V1NetworkPolicy>> | undefined;
  return {
    async start(gone) {
      const informer = resilientInformer<V1NetworkPolicy>(kc, 'application network policies', `/apis/networking.k8s.io/v1/namespaces/${namespace}/networkpolicies`,
        () => networking.listNamespacedNetworkPolicy({ namespace, labelSelector: LABEL_APP }), { labelSelector: LABEL_APP, log });
      informer.informer.on('delete', (policy) => { const app = policy.metadata?.labels?.[LABEL_APP]; if (app) gone(app); });
      watch = informer;
      await informer.start();
    },
    async stop() {
      const was = watch;
      watch = undefined;
      await was?.stop();
    },
    has: (policyName) => watch?.informer.get(policyName, namespace) !== undefined,
    create: (policy) => createAppNetworkPolicy(kc, namespace, policy),
  };
}
