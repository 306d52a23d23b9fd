// The labels the service's own pods are known by. The chart's NetworkPolicies admit the api and
// the notebook service to every driver's ports (the Spark UI 4040, Spark Connect 15002) and the
// api alone to the History Server, by these labels (ss.selectorLabels in
// manifests/chart/templates/_helpers.tpl, used by networkpolicy.yaml). Where applications run in
// the release's own namespace (applicationsNamespace = the release namespace), a pod that wears
// them passes those policies as the api would: a driver's code, which may create its executors,
// or a submission's labels could dress a pod so. So no pod admission takes for an application's
// (a driver, an executor, a team's pod) may carry any of these keys, whatever its value: a value
// check would have to know the release's name, and the chart may change which values it selects.
// test/manifests/isolation.test.ts holds the chart to this list: every peer its policies admit
// by a pod label requires one of these keys, and the api's own labels are refused here.
import type { V1Pod } from '@kubernetes/client-node';
import type { ApplicationConfig } from '../schemas/index.js';

export const SERVICE_IDENTITY_LABELS: readonly string[] = ['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/component'];

/** The first of the service's identity label keys among `labels`, or undefined. */
export function serviceIdentityLabel(labels: Record<string, string> | undefined): string | undefined {
  if (!labels) return undefined;
  return SERVICE_IDENTITY_LABELS.find((key) => Object.hasOwn(labels, key));
}

const refusal = (key: string, where: string) =>
  `${where} carries the label "${key}": the keys ${SERVICE_IDENTITY_LABELS.join(', ')} mark the service's own pods, which the chart's NetworkPolicies admit to drivers' Spark UI and Connect ports and to the History Server; no application's pod may carry them (docs/security.md)`;

/** Why this executor pod may not wear its labels, or undefined. */
export function executorIdentityRefusal(pod: V1Pod): string | undefined {
  const key = serviceIdentityLabel(pod.metadata?.labels);
  if (key === undefined) return undefined;
  return refusal(key, `executor pod ${pod.metadata?.name ?? pod.metadata?.generateName ?? 'executor'}`);
}

/**
 * Why a driver pod may not be admitted for its labels, or undefined: its own (a submission's
 * `labels`, a team's pod) and those its effective config puts on the driver and, through
 * spark.kubernetes.executor.label.*, on every executor (a template's or the overrides').
 */
export function driverIdentityRefusal(pod: V1Pod, config: ApplicationConfig): string | undefined {
  const sources: [Record<string, string> | undefined, string][] = [
    [pod.metadata?.labels, `driver pod ${pod.metadata?.name ?? pod.metadata?.generateName ?? 'of the submission'}`],
    [config.driver?.labels, 'the config\'s driver.labels'],
    [config.executor?.labels, 'the config\'s executor.labels'],
  ];
  for (const [labels, where] of sources) {
    const key = serviceIdentityLabel(labels);
    if (key !== undefined) return refusal(key, where);
  }
  return undefined;
}
