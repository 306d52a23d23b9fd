// One leader among the API replicas, on a coordination.k8s.io/v1 Lease. client-node 1.x has
// no leader election (client-go's lives in tools/leaderelection), and the controller needs
// only the core of it, so this is that core, small: acquire the Lease when it is free or its
// holder stopped renewing, renew it every `renewMs`, give up leadership when renewing has
// failed for longer than the lease (another replica may hold it by then), release it on stop
// so a successor need not wait.
//
// Expiry is judged as client-go does, by the local clock of the observer: a Lease whose
// resourceVersion has not changed for `leaseSeconds` since this replica first saw it is
// expired. No clocks are compared across machines. Writes are conditional on the
// resourceVersion read, so two candidates never both win.
import { CoordinationV1Api, type V1Lease } from '@kubernetes/client-node';
import type { KubeClients } from './client.js';
import { statusCode } from './errors.js';
import type { Log } from './informers.js';

const RENEWED = 'submission-service/renewed-at';

export interface LeaderElectionOptions {
  clients: KubeClients;
  namespace: string;
  name: string;
  identity: string;
  leaseSeconds?: number;
  renewMs?: number;
  retryMs?: number;
  log?: Log;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
}

export class LeaderElection {
  private readonly api: CoordinationV1Api;
  private running = false;
  private leader = false;
  private loop?: Promise<void>;
  private wake?: () => void;
  private timer?: NodeJS.Timeout;
  private observed?: { version: string; at: number };
  private renewedAt = 0;

  constructor(private readonly options: LeaderElectionOptions) {
    this.api = options.clients.kc.makeApiClient(CoordinationV1Api);
  }

  get isLeader(): boolean {
    return this.leader;
  }

  private get leaseMs() { return (this.options.leaseSeconds ?? 6) * 1000; }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.wake?.();
    await this.loop;
    if (this.leader) {
      this.setLeader(false);
      await this.release().catch((error: unknown) => this.options.log?.(`could not release lease ${this.options.name}: ${String(error)}`));
    }
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        await this.tryAcquireOrRenew();
      } catch (error) {
        if (statusCode(error) !== 409) this.options.log?.(`lease ${this.options.name}: ${(error as Error).message ?? String(error)}`);
      }
      if (this.leader && Date.now() - this.renewedAt > this.leaseMs) {
        this.options.log?.(`lease ${this.options.name} not renewed for ${this.leaseMs} ms: no longer the leader`);
        this.setLeader(false);
      }
      await new Promise<void>((ok) => {
        this.wake = ok;
        this.timer = setTimeout(ok, this.leader ? this.options.renewMs ?? 2000 : this.options.retryMs ?? 1000);
      });
    }
  }

  /**
   * acquireTime and renewTime are left out: client-node serializes a Date with milliseconds
   * and the apiserver parses MicroTime with exactly six digits (400 Bad Request). Nothing
   * here reads them (expiry is observed, above). A renewal must change the object (the
   * apiserver does not bump the resourceVersion of a no-op update), so it writes the time in
   * an annotation, for people too.
   */
  private spec(previous?: V1Lease): V1Lease['spec'] {
    const changed = previous?.spec?.holderIdentity !== this.options.identity;
    return {
      ...previous?.spec,
      holderIdentity: this.options.identity,
      leaseDurationSeconds: this.leaseMs / 1000,
      leaseTransitions: (previous?.spec?.leaseTransitions ?? 0) + (changed && previous ? 1 : 0),
    };
  }

  private async tryAcquireOrRenew(): Promise<void> {
    const { namespace, name, identity } = this.options;
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name, namespace });
    } catch (error) {
      if (statusCode(error) !== 404) throw error;
      await this.api.createNamespacedLease({ namespace, body: { metadata: { name, namespace, annotations: { [RENEWED]: new Date().toISOString() } }, spec: this.spec() } });
      this.won();
      return;
    }
    const version = lease.metadata?.resourceVersion ?? '';
    if (this.observed?.version !== version) this.observed = { version, at: Date.now() };
    const holder = lease.spec?.holderIdentity;
    const expired = Date.now() - this.observed.at > (lease.spec?.leaseDurationSeconds ?? this.leaseMs / 1000) * 1000;
    if (holder && holder !== identity && !expired) {
      if (this.leader) this.setLeader(false);
      return;
    }
    const metadata = { ...lease.metadata, annotations: { ...lease.metadata?.annotations, [RENEWED]: new Date().toISOString() } };
    const written = await this.api.replaceNamespacedLease({ name, namespace, body: { ...lease, metadata, spec: this.spec(lease) } });
    this.observed = { version: written.metadata?.resourceVersion ?? '', at: Date.now() };
    this.won();
  }

  private won(): void {
    this.renewedAt = Date.now();
    if (!this.leader) {
      this.options.log?.(`${this.options.identity} holds lease ${this.options.name}: this replica runs the controller`);
      this.setLeader(true);
    }
  }

  private setLeader(leader: boolean): void {
    if (this.leader === leader) return;
    this.leader = leader;
    if (leader) this.options.onStartedLeading();
    else this.options.onStoppedLeading();
  }

  private async release(): Promise<void> {
    const { namespace, name, identity } = this.options;
    const lease = await this.api.readNamespacedLease({ name, namespace });
    if (lease.spec?.holderIdentity !== identity) return;
    await this.api.replaceNamespacedLease({ name, namespace, body: { ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1 } } });
  }
}
