// Where pods may run: drivers only on non-preemptible pools (SPEC rule 4); executors
// anywhere that fits, tolerating preemptible taints. Labels and taints come from the rules.
import type { V1Affinity, V1Toleration } from '@kubernetes/client-node';
import type { AdmissionRules } from './rules.js';

export function placeDriver(rules: AdmissionRules): { affinity: V1Affinity } {
  const { instanceTypeLabel, preemptibleLabel } = rules.placement;
  const stable = rules.pools.filter((p) => !p.preemptible).map((p) => p.instanceName);
  return {
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{
            matchExpressions: [
              { key: instanceTypeLabel, operator: 'In', values: [...new Set(stable)] },
              { key: preemptibleLabel.key, operator: 'NotIn', values: [preemptibleLabel.value] },
            ],
          }],
        },
      },
    },
  };
}

export function executorTolerations(rules: AdmissionRules, existing: V1Toleration[] = []): V1Toleration[] {
  const added = rules.placement.preemptibleTaints
    .filter((t) => !existing.some((e) => e.key === t.key && e.effect === t.effect))
    .map((t) => ({ key: t.key, operator: t.value === undefined ? 'Exists' : 'Equal', value: t.value, effect: t.effect }));
  return [...existing, ...added];
}
