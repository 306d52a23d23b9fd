// A driver pod as local mode's cluster gets it (admitted by the domain under the example
// cluster's pools), and the --conf values of the spark-submit line it becomes: for the unit
// tests of cluster/local/spark-command.ts and what it puts on a driver's line.
import type { V1Pod } from '@kubernetes/client-node';
import { admitPod, bareDriverPod, buildRules } from '../../domain/index.js';
import type { ApplicationConfig } from '../../schemas/index.js';
import { exampleCluster } from './api.js';

/** The admitted driver pod of job `jobName` (its application `<jobName>-20260101-000000-aaaaa`) with `configOverrides`. */
export function admittedLocalPod(jobName: string, configOverrides: ApplicationConfig): V1Pod {
  const rules = buildRules({ nodePools: exampleCluster().nodePools, namespace: 'local' });
  const pod = bareDriverPod({ appName: `${jobName}-20260101-000000-aaaaa`, jobName, namespace: 'local', configOverrides });
  const admitted = admitPod(pod, { rules, templates: () => undefined, applications: () => undefined, newAppName: (j) => j });
  if (admitted.outcome !== 'admitted') throw new Error(admitted.outcome);
  return admitted.pod;
}

/** The values of a spark-submit line's --conf options, in order. */
export const confValues = (options: string[]): string[] => options.flatMap((value, i) => (options[i - 1] === '--conf' ? [value] : []));
