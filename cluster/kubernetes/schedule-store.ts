// Schedules as Schedule custom resources: `kubectl get schedules.submission-service.io` shows
// them. The spec holds the schedule and its owner; the status, what its ticks did, written
// through the status subresource by the controller's leader.
import type { Schedule } from '../../schemas/index.js';
import { emptyStatus, type ScheduleStatus, type ScheduleStore, type StoredSchedule } from '../schedules/schedule-store.js';
import { FIELD_MANAGER, GROUP, type KubeClients, SCHEDULES, VERSION } from './client.js';
import { kubeCall, kubeCallOrAbsent } from './errors.js';

interface ScheduleResource {
  apiVersion: string;
  kind: 'Schedule';
  metadata: { name: string; namespace?: string; resourceVersion?: string; creationTimestamp?: string | Date };
  spec: Omit<Schedule, 'name'> & { createdBy?: string | null };
  status?: Partial<ScheduleStatus>;
}

function toStored(resource: ScheduleResource): StoredSchedule {
  const { createdBy = null, ...spec } = resource.spec;
  const created = resource.metadata.creationTimestamp;
  return {
    spec: { name: resource.metadata.name, ...spec },
    createdBy,
    createdAt: created === undefined ? new Date(0).toISOString() : new Date(created).toISOString(),
    status: { ...emptyStatus(), ...resource.status },
  };
}

export class KubernetesScheduleStore implements ScheduleStore {
  constructor(private readonly clients: KubeClients, private readonly namespace: string) {}

  private get where() {
    return { group: GROUP, version: VERSION, plural: SCHEDULES, namespace: this.namespace };
  }

  private body(spec: Schedule, createdBy: string | null, resourceVersion?: string): ScheduleResource {
    const { name, ...rest } = spec;
    return {
      apiVersion: `${GROUP}/${VERSION}`, kind: 'Schedule',
      metadata: { name, namespace: this.namespace, ...(resourceVersion ? { resourceVersion } : {}) },
      spec: { ...rest, createdBy },
    };
  }

  private call<T>(what: string, run: () => Promise<T>): Promise<T> {
    return kubeCall(this.clients.server, what, run);
  }

  async list(): Promise<StoredSchedule[]> {
    const list = await this.call('list schedules', () => this.clients.custom.listNamespacedCustomObject(this.where));
    return ((list as { items: ScheduleResource[] }).items ?? []).map(toStored).sort((a, b) => a.spec.name.localeCompare(b.spec.name));
  }

  async get(name: string): Promise<StoredSchedule | undefined> {
    const found = await kubeCallOrAbsent(this.clients.server, `read schedule ${name}`, () => this.clients.custom.getNamespacedCustomObject({ ...this.where, name }));
    return found === undefined ? undefined : toStored(found as ScheduleResource);
  }

  /** The creation time is the apiserver's (metadata.creationTimestamp). */
  async create(schedule: StoredSchedule): Promise<StoredSchedule> {
    const created = await this.call(`create schedule ${schedule.spec.name}`, () =>
      this.clients.custom.createNamespacedCustomObject({ ...this.where, body: this.body(schedule.spec, schedule.createdBy), fieldManager: FIELD_MANAGER }));
    return toStored(created as ScheduleResource);
  }

  /** Conditional on the version read: a concurrent change answers 409 rather than being lost. */
  async replace(spec: Schedule): Promise<StoredSchedule> {
    const current = await this.call(`read schedule ${spec.name}`, () => this.clients.custom.getNamespacedCustomObject({ ...this.where, name: spec.name })) as ScheduleResource;
    const body = { ...this.body(spec, current.spec.createdBy ?? null, current.metadata.resourceVersion), status: current.status };
    const replaced = await this.call(`replace schedule ${spec.name}`, () =>
      this.clients.custom.replaceNamespacedCustomObject({ ...this.where, name: spec.name, body, fieldManager: FIELD_MANAGER }));
    return toStored(replaced as ScheduleResource);
  }

  async delete(name: string): Promise<boolean> {
    const deleted = await kubeCallOrAbsent(this.clients.server, `delete schedule ${name}`, () => this.clients.custom.deleteNamespacedCustomObject({ ...this.where, name }));
    return deleted !== undefined;
  }

  async setStatus(name: string, status: ScheduleStatus): Promise<void> {
    await kubeCallOrAbsent(this.clients.server, `write the status of schedule ${name}`, () => this.clients.custom.patchNamespacedCustomObjectStatus({
      ...this.where, name, fieldManager: FIELD_MANAGER, body: [{ op: 'add', path: '/status', value: status }],
    }));
  }
}
