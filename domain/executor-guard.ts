// What an executor pod may carry, whatever Spark (or code running in the driver with the
// driver's service account) wrote into it: the identity, Secrets and volumes its application's
// effective config allows, never the node's disk. The policy checks a submission's keys
// (kubernetes-properties.ts); this checks the pod itself, so a key the allowlist missed, a
// template, or a pod created through the API by the driver's own code cannot widen it, nor
// dress it as one of the service's own pods.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { ApplicationConfig } from '../schemas/index.js';
import type { AdmissionRules } from './rules.js';
import { executorIdentityRefusal } from './service-identity.js';

/** Service accounts an executor of this application may run as. */
export function executorServiceAccounts(config: ApplicationConfig | undefined, rules: AdmissionRules): string[] {
  // Spark gives executors the driver's account unless told otherwise; `default` is the
  // namespace's own, which the apiserver fills in when a pod names none (bound to nothing by the chart).
  const named = [config?.driver?.serviceAccount ?? rules.serviceAccount, config?.executor?.serviceAccount, 'default'];
  return [...new Set(named.filter((name): name is string => Boolean(name)))];
}

/** Every Secret a pod mounts or reads: volumes, projected sources, env and envFrom of all its containers. */
export function podSecretNames(pod: V1Pod): string[] {
  const spec = pod.spec;
  const names = new Set<string>();
  for (const volume of spec?.volumes ?? []) {
    if (volume.secret?.secretName) names.add(volume.secret.secretName);
    for (const source of volume.projected?.sources ?? []) if (source.secret?.name) names.add(source.secret.name);
  }
  const containers: V1Container[] = [...(spec?.initContainers ?? []), ...(spec?.containers ?? []), ...((spec?.ephemeralContainers ?? []) as V1Container[])];
  for (const container of containers) {
    for (const variable of container.env ?? []) if (variable.valueFrom?.secretKeyRef?.name) names.add(variable.valueFrom.secretKeyRef.name);
    for (const source of container.envFrom ?? []) if (source.secretRef?.name) names.add(source.secretRef.name);
  }
  return [...names];
}

/**
 * Why this executor pod is refused, or undefined. `config` is its application's effective
 * config; undefined for an executor of a driver the service does not know, which gets the
 * policy's allowances only.
 */
export function executorPodRefusal(pod: V1Pod, config: ApplicationConfig | undefined, rules: AdmissionRules): string | undefined {
  const name = pod.metadata?.name ?? pod.metadata?.generateName ?? 'executor';
  // Driver code may create executor pods: none may wear the service's identity (service-identity.ts).
  const disguised = executorIdentityRefusal(pod);
  if (disguised) return disguised;
  const hostPath = pod.spec?.volumes?.find((volume) => volume.hostPath);
  if (hostPath) return `executor pod ${name}: volume "${hostPath.name}" is a hostPath (the node's disk); executor pods may not mount one`;
  const accounts = config ? executorServiceAccounts(config, rules) : [rules.serviceAccount, ...rules.policy.serviceAccounts, 'default'];
  const account = pod.spec?.serviceAccountName ?? pod.spec?.serviceAccount;
  if (account !== undefined && !accounts.includes(account)) {
    return `executor pod ${name}: service account "${account}" is not its application's (allowed: ${accounts.join(', ')})`;
  }
  // Not the event log's object-storage credentials: only the driver writes the event log
  // (event-log.ts), so an executor that names that Secret is refused like any other.
  const secrets = config ? (config.executor?.secrets ?? []).map((s) => s.name) : rules.policy.secrets;
  const foreign = podSecretNames(pod).find((secret) => !secrets.includes(secret));
  if (foreign !== undefined) {
    return `executor pod ${name}: secret "${foreign}" is not one its application's config mounts into executors (allowed: ${secrets.join(', ') || 'none'})`;
  }
  return undefined;
}
