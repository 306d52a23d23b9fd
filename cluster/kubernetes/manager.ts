// Kubernetes mode's controller process, shaped like controller-runtime's manager: one informer
// cache and one leader election drive several controllers (controller.ts), each a reconcile
// function on its own rate-limited work queue. The cache's changes are routed to the keys of
// each controller that watches them; the controllers run only while this replica leads, and
// all of them stop (their calls aborted) the moment it stops leading.
//
// The registration point: `manager.register({ controller, application, executorPod })`. Today
// the status reconciler, the log archiver, the event-log keys and the applications'
// NetworkPolicies are registered by controller-wiring.ts, the Schedule controller by the API's wiring (cli/kubernetes.ts).
import type { V1Pod } from '@kubernetes/client-node';
import type { Controller } from './controller.js';

/** What the manager needs of a leader election (leader-election.ts; a fake in tests). */
export interface Elector {
  readonly isLeader: boolean;
  start(): void;
  stop(): Promise<void>;
}

export interface LeadershipHooks {
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
}

export interface ManagerOptions {
  /** The shared informer cache: listed and watching before anyone leads. */
  cache: { start(): Promise<void>; stop(): Promise<void> };
  /** Builds the leader election around the manager's hooks; absent, this process only reads and never leads. */
  elect?: (hooks: LeadershipHooks) => Elector;
  log?: (message: string) => void;
}

/** One controller and what of the cache's changes it watches, mapped to its keys. */
export interface Registration {
  controller: Controller;
  /** An Application or its driver pod changed (by application name): which keys to queue. */
  application?: (appName: string) => Iterable<string>;
  /** An executor pod was added or changed: which keys to queue. */
  executorPod?: (pod: V1Pod) => Iterable<string>;
  /** Runs after the controller starts (leading) and after it stops (no longer leading). */
  onStartedLeading?: () => void;
  onStoppedLeading?: () => void | Promise<void>;
  /** Runs once at shutdown, after the controller stopped. */
  close?: () => Promise<void>;
}

export class Manager {
  private readonly registrations: Registration[] = [];
  readonly elector?: Elector;
  private started?: Promise<void>;
  private leading = false;

  constructor(private readonly options: ManagerOptions) {
    this.elector = options.elect?.({
      onStartedLeading: () => this.startControllers(),
      onStoppedLeading: () => this.stopControllers(),
    });
  }

  /** True only while this replica holds the Lease within its renew deadline: checked before every write. */
  get isLeader(): boolean {
    return this.elector?.isLeader ?? false;
  }

  get controllers(): readonly Controller[] {
    return this.registrations.map((r) => r.controller);
  }

  /** Adds a controller; registered while leading, it starts at once. */
  register(registration: Registration): Controller {
    if (this.registrations.some((r) => r.controller.name === registration.controller.name)) {
      throw new Error(`a controller named ${registration.controller.name} is registered already`);
    }
    this.registrations.push(registration);
    if (this.leading) this.startOne(registration);
    return registration.controller;
  }

  /** From the cache: an Application or its driver pod changed. */
  applicationChanged(appName: string): void {
    if (!this.leading) return;
    for (const r of this.registrations) for (const key of r.application?.(appName) ?? []) r.controller.enqueue(key);
  }

  /** From the cache: an executor pod was added or changed. */
  executorChanged(pod: V1Pod): void {
    if (!this.leading) return;
    for (const r of this.registrations) for (const key of r.executorPod?.(pod) ?? []) r.controller.enqueue(key);
  }

  /** The cache lists and watches; then this replica runs for the Lease. */
  start(): Promise<void> {
    this.started ??= this.options.cache.start().then(() => this.elector?.start());
    return this.started;
  }

  /** Releases the Lease, stops every controller and waits for their passes, then the cache. */
  async stop(): Promise<void> {
    await this.started?.catch(() => undefined);
    await this.elector?.stop();
    this.stopControllers();
    await Promise.all(this.registrations.map((r) => r.controller.stopped()));
    for (const r of this.registrations) await r.close?.();
    await this.options.cache.stop();
  }

  private startControllers(): void {
    this.leading = true;
    this.options.log?.(`manager: leading; starting ${this.registrations.map((r) => r.controller.name).join(', ')}`);
    for (const r of this.registrations) this.startOne(r);
  }

  private startOne(registration: Registration): void {
    registration.controller.activate();
    registration.onStartedLeading?.();
  }

  private stopControllers(): void {
    if (!this.leading) return;
    this.leading = false;
    for (const r of this.registrations) {
      r.controller.deactivate();
      void Promise.resolve(r.onStoppedLeading?.()).catch((error: unknown) => this.options.log?.(`manager: ${r.controller.name} on losing the lead: ${(error as Error).message}`));
    }
  }
}
