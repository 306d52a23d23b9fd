// What the webhook will make of a bare driver pod, worked out by the API before it writes
// the Application, so that the Application is created with its effective config and the
// submission's annotations (overrides, admission mark, sizing) and the controller has nothing
// to copy afterwards: a submission is two writes, not three. The same pure admission the
// webhook runs (webhook/domain), with the same rules (the chart gives the API and the webhook
// one node-pool file). The webhook still admits the pod and stays the truth: when what it
// admitted differs (rules that differ, a template replaced in between), the API corrects the
// Application from the admitted pod.
import type { V1Pod } from '@kubernetes/client-node';
import type { ApplicationConfig } from '../../schemas/index.js';
import { type AdmissionRules, admitPod, readConfig } from '../../webhook/domain/index.js';
import { submissionAnnotations } from '../submission-info.js';

export interface ExpectedAdmission {
  config: ApplicationConfig;
  /** The submission's annotations as admission writes them on the pod (submission-info.ts). */
  annotations: Record<string, string>;
}

/**
 * Admission of `bare` in `namespace`, or undefined when it would not admit it (a refusal is
 * the webhook's to answer, with its own status and body). `template`: the config of the
 * template the pod names (its absence is the webhook's 404 to give, so callers skip then).
 */
export function expectedAdmission(bare: V1Pod, namespace: string, rules: AdmissionRules, template?: ApplicationConfig): ExpectedAdmission | undefined {
  const pod: V1Pod = { ...bare, metadata: { ...bare.metadata, namespace } };
  const admission = admitPod(pod, {
    rules,
    templates: () => template,
    applications: () => undefined,
    newAppName: () => bare.metadata?.name ?? '',
  });
  if (admission.outcome !== 'admitted') return undefined;
  return { config: admission.config, annotations: submissionAnnotations(admission.pod) };
}

/** JSON with sorted keys, so that objects compare by content. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).filter((k) => (value as Record<string, unknown>)[k] !== undefined).sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** Whether the admitted pod carries exactly the config and annotations the Application was written with. */
export function admittedAsExpected(expected: ExpectedAdmission, admitted: V1Pod): boolean {
  return canonicalJson(readConfig(admitted)) === canonicalJson(expected.config)
    && canonicalJson(submissionAnnotations(admitted)) === canonicalJson(expected.annotations);
}
