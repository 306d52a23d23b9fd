// The last state of driver pods deleted while their Application lives, by pod name: a run that
// COMPLETED and whose pod was then deleted still reads COMPLETED until the controller has
// recorded its end. Deleting an Application deletes its pods after it (the garbage collector
// follows the owner reference), so a pod deleted after its Application is the usual case, and
// has nobody left to tell: it is not kept, or the map would grow with every deleted Application.
import type { V1Pod } from '@kubernetes/client-node';
import { LABEL_APP } from '../../domain/index.js';

const appOf = (pod: V1Pod): string | undefined => pod.metadata?.labels?.[LABEL_APP];

export class DeletedDrivers {
  private readonly pods = new Map<string, V1Pod>();
  /** Until the Applications are listed, a pod's Application may exist unseen: every deleted driver is kept. */
  private applicationsListed = false;

  constructor(private readonly applicationExists: (appName: string) => boolean) {}

  get size(): number { return this.pods.size; }

  get(podName: string): V1Pod | undefined { return this.pods.get(podName); }

  /** A driver pod was deleted: kept while its Application lives (or may, before the list). */
  keep(pod: V1Pod): void {
    const name = pod.metadata?.name;
    const app = appOf(pod);
    if (!name || (this.applicationsListed && (!app || !this.applicationExists(app)))) return;
    this.pods.set(name, pod);
  }

  /** A pod of this name exists again, or its end was recorded: its last state says nothing more. */
  forget(podName: string): void { this.pods.delete(podName); }

  /** The Application was deleted: its drivers' last states go with it. */
  forgetApplication(appName: string): void {
    for (const [name, pod] of this.pods) if (appOf(pod) === appName) this.pods.delete(name);
  }

  /** The Applications are listed: what was kept for an Application that does not exist goes. */
  listed(): void {
    this.applicationsListed = true;
    for (const [name, pod] of this.pods) {
      const app = appOf(pod);
      if (!app || !this.applicationExists(app)) this.pods.delete(name);
    }
  }
}
