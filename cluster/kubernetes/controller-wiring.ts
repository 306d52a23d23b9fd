// Kubernetes mode's controller side, wired: one manager (manager.ts) over the API's informer
// cache, with one leader election, and its controllers — status (reconciler.ts), log archive
// (log-archiver.ts), event-log keys (event-log-access.ts) and the applications' own
// NetworkPolicies (network-policy-controller.ts) — each registered with the keys
// of the cache's changes it watches. More controllers (schedules, retries) register on the
// returned manager the same way. The API's read and write side is kubernetes-cluster.ts.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { AppCache } from './app-cache.js';
import type { KubeClients } from './client.js';
import { EventLogAccess, type EventLogAccessOptions } from './event-log-access.js';
import type { Log as LogFn } from './informers.js';
import { LeaderElection } from './leader-election.js';
import type { LeaseTiming } from './lease-decision.js';
import type { LogArchive } from './log-archive.js';
import { driverKey, executorKey, LogArchiver, type LogArchiverOptions } from './log-archiver.js';
import { type LeadershipHooks, Manager } from './manager.js';
import { kubePolicyObjects, NetworkPolicyController } from './network-policy-controller.js';
import { Reconciler, type ReconcilerOptions } from './reconciler.js';

export interface ControllerWiringOptions {
  clients: KubeClients;
  namespace: string;
  /** Run the controllers under the Lease (default true); false: this process only reads. */
  controller?: boolean;
  /** Name of the Lease (default submission-service-controller) and this replica's identity in it. */
  lease?: { name?: string; identity?: string } & Partial<LeaseTiming>;
  /** The status controller's periodic resync (default 5 min). */
  resyncMs?: number;
  /** Grace period for an Application without a driver pod before it is UNKNOWN (default 30 s). */
  missingPodGraceMs?: number;
  /** Where ended pods' logs are archived (log-archive.ts); absent: a log goes with its pod. */
  logArchive?: LogArchive;
  /** A pod being deleted whose log could not be archived is let go after this long (default 2 min). */
  logArchiveGiveUpMs?: number;
  /** Following running pods' logs into the archive (log-archive.ts): limit, size cap, spool directory. */
  logFollow?: Pick<LogArchiverOptions, 'followLimit' | 'maxLogBytes' | 'spoolDir'>;
  /** A key per application for its event log (event-log-access.ts); absent: drivers share one. */
  eventLogAccess?: Pick<EventLogAccessOptions, 'keys' | 'store' | 'incomingPrefix' | 'eventLogPrefix'>;
  /**
   * Give each application a NetworkPolicy of its own (app-network-policy.ts; the chart's
   * networkPolicy.enabled): the API creates it before the driver, the controller
   * (network-policy-controller.ts) keeps every unfinished application's there.
   */
  appNetworkPolicies?: boolean;
}

export interface ControllerWiring {
  manager: Manager;
  reconciler: Reconciler;
  leader?: LeaderElection;
  archiver?: LogArchiver;
  eventLogAccess?: EventLogAccess;
  networkPolicies?: NetworkPolicyController;
}

function leaderElection(options: ControllerWiringOptions, log: LogFn) {
  const lease = options.lease ?? {};
  return (hooks: LeadershipHooks) => new LeaderElection({
    clients: options.clients, namespace: options.namespace, log, ...hooks,
    name: lease.name ?? 'submission-service-controller',
    identity: lease.identity ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`,
    timing: { leaseMs: lease.leaseMs, renewDeadlineMs: lease.renewDeadlineMs, retryMs: lease.retryMs },
  });
}

/** The manager over `cache` and its controllers; none runs until `manager.start()` and the Lease. */
/** `attempts`: what the status controller needs to start a retry's driver pod (attempt-starter.ts). */
export function wireControllers(options: ControllerWiringOptions, cache: AppCache, log: LogFn, attempts: Pick<ReconcilerOptions, 'rules' | 'createAttemptPod'> = {}): ControllerWiring {
  const controller = options.controller ?? true;
  const manager = new Manager({ cache, log, elect: controller ? leaderElection(options, log) : undefined });
  const mayWrite = () => manager.isLeader;
  const { clients, namespace } = options;
  const reconciler = new Reconciler({
    clients, namespace, cache, graceMs: options.missingPodGraceMs, log, resyncMs: options.resyncMs, mayWrite, ...attempts,
  });
  manager.register({ controller: reconciler.controller, application: (name) => [name] });
  const wiring: ControllerWiring = { manager, reconciler, leader: manager.elector as LeaderElection | undefined };
  if (options.logArchive && controller) {
    const archiver = new LogArchiver({
      clients, namespace, cache, archive: options.logArchive, log, giveUpMs: options.logArchiveGiveUpMs, ...options.logFollow, isLeader: mayWrite,
    });
    manager.register({
      controller: archiver.controller,
      application: (name) => [driverKey(name)],
      executorPod: (pod) => (pod.metadata?.name ? [executorKey(pod.metadata.name)] : []),
      onStoppedLeading: () => archiver.stopFollowing(),
      close: () => archiver.close(),
    });
    wiring.archiver = archiver;
  }
  if (options.eventLogAccess && controller) {
    const access = new EventLogAccess({ ...options.eventLogAccess, clients, namespace, cache, log, isLeader: mayWrite });
    manager.register(access.registration);
    wiring.eventLogAccess = access;
  }
  if (options.appNetworkPolicies && controller) {
    const policies = new NetworkPolicyController({ cache, policies: kubePolicyObjects(clients.kc, namespace, log), isLeader: mayWrite, log, resyncMs: options.resyncMs });
    manager.register(policies.registration);
    wiring.networkPolicies = policies;
  }
  return wiring;
}
