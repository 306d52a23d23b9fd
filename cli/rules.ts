// Admission rules from the command line and a node-pool file (which may also carry
// sizing, placement, images: the same keys as the Helm chart's values).
import { buildRules, type AdmissionRules, type PlacementRules, type SubmissionPolicy } from '../webhook/domain/index.js';
import { readNodePools, thisMachinePool } from './config.js';

interface ServiceConfigFile {
  placement?: PlacementRules | string;
  images?: Record<string, string>;
  imagePattern?: string;
  defaultEngineVersion?: string;
  serviceAccount?: string;
  /** Allowlists for submissions and who may act on whose applications (docs/security.md). */
  policy?: Partial<SubmissionPolicy>;
}

export function rulesFrom(nodePoolsFile: string | undefined, namespace: string, placement?: string): AdmissionRules {
  const file = nodePoolsFile ? readNodePools(nodePoolsFile) : undefined;
  const extra = (file ?? {}) as ServiceConfigFile;
  return buildRules({
    nodePools: file?.nodePools ?? [thisMachinePool()],
    sizing: file?.sizing,
    namespace,
    placement: (placement ?? extra.placement ?? 'generic') as PlacementRules | 'generic',
    images: extra.images,
    imagePattern: extra.imagePattern,
    defaultEngineVersion: extra.defaultEngineVersion,
    serviceAccount: extra.serviceAccount,
    policy: extra.policy,
  });
}
