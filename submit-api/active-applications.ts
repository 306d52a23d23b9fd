// How many unfinished applications (PENDING or RUNNING) each key has, kept from the cluster's
// change feed so that a submission never lists the cluster to count: the cap on applications at
// once per key (fair-share.ts) asks here. Counted from the records themselves (`submittedBy`),
// so every API replica counts the same from its own feed, and a restart counts again from the list.
import type { AppRecord, Cluster } from '../cluster/cluster.js';
import { isTerminal } from '../cluster/cluster.js';

/** Ended applications remembered, so a creation answered after its end was seen is not counted. */
const ENDED_MEMORY = 10_000;

export class ActiveApplications {
  /** appName -> key id, for unfinished applications that have a key. */
  private readonly active = new Map<string, string>();
  private readonly perKey = new Map<string, number>();
  /** Submissions under way (admission, the cluster's write) per key: they count before they exist. */
  private readonly inFlight = new Map<string, number>();
  private readonly ended = new Set<string>();
  private readonly unsubscribe: () => void;

  private constructor(cluster: Cluster) {
    // Subscribed before the list is read: what changes meanwhile is applied twice, which is harmless.
    this.unsubscribe = cluster.events.subscribe(undefined, (message) => {
      if (message.type === 'deleted') this.forget(message.record.appName);
      else if (message.type === 'changed') this.apply(message.record);
    });
  }

  /** Follows `cluster` from its current list on. */
  static async follow(cluster: Cluster): Promise<ActiveApplications> {
    const tracker = new ActiveApplications(cluster);
    const all = await cluster.list({ limit: Number.MAX_SAFE_INTEGER });
    for (const record of all.items) tracker.apply(record);
    return tracker;
  }

  close(): void {
    this.unsubscribe();
  }

  /** Unfinished applications of `keyId`, submissions under way included. */
  count(keyId: string): number {
    return (this.perKey.get(keyId) ?? 0) + (this.inFlight.get(keyId) ?? 0);
  }

  /**
   * Counts a submission of `keyId` from now until `done` is called with what it created (or
   * nothing): two submissions at once cannot both take the last place.
   */
  reserve(keyId: string): (created?: AppRecord) => void {
    this.inFlight.set(keyId, (this.inFlight.get(keyId) ?? 0) + 1);
    let done = false;
    return (created) => {
      if (done) return;
      done = true;
      const left = this.inFlight.get(keyId)! - 1;
      if (left === 0) this.inFlight.delete(keyId);
      else this.inFlight.set(keyId, left);
      // On Kubernetes the cache hears of the application after the answer: count it from the answer.
      if (created) this.apply(created);
    };
  }

  private apply(record: AppRecord): void {
    if (isTerminal(record.state)) {
      this.forget(record.appName);
      return;
    }
    const keyId = record.submittedBy;
    // Names are never used twice: one seen ending does not come back (a list read late, say).
    if (!keyId || this.active.has(record.appName) || this.ended.has(record.appName)) return;
    this.active.set(record.appName, keyId);
    this.perKey.set(keyId, (this.perKey.get(keyId) ?? 0) + 1);
  }

  private forget(appName: string): void {
    this.ended.add(appName);
    if (this.ended.size > ENDED_MEMORY) this.ended.delete(this.ended.values().next().value!);
    const keyId = this.active.get(appName);
    if (keyId === undefined) return;
    this.active.delete(appName);
    const left = this.perKey.get(keyId)! - 1;
    if (left === 0) this.perKey.delete(keyId);
    else this.perKey.set(keyId, left);
  }
}
