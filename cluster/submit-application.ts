// One submission path for POST /api/apps/ and for the ticks of schedules: the bare driver pod
// (identity and intent only), then the cluster's admission and create. Whatever a submission
// may not ask for is refused here the same way, whoever submits.
import type { V1Pod } from '@kubernetes/client-node';
import { bareDriverPod, type BarePodInput } from '../domain/index.js';
import type { Cluster, CreateOptions, CreateResult } from './cluster.js';

export interface SubmitOptions extends CreateOptions {
  /** A last change to the bare pod (the API's Idempotency-Key mark). */
  decorate?: (pod: V1Pod) => V1Pod;
}

export function submitApplication(cluster: Pick<Cluster, 'createDriver'>, input: Omit<BarePodInput, 'namespace'>, options: SubmitOptions): Promise<CreateResult> {
  const bare = bareDriverPod({ ...input, namespace: '' });
  return cluster.createDriver(options.decorate ? options.decorate(bare) : bare, { dryRun: options.dryRun, launcherToken: options.launcherToken });
}
