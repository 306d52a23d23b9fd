// What an application was submitted with, as its driver pod carries it (the overrides
// annotation, the admission mark), and how admission sized it: the app page's "Submission".
import type { V1Pod } from '@kubernetes/client-node';
import type { ApplicationConfig } from '../schemas/index.js';
import { type AdmissionRules, ANNOTATION_ADMITTED, ANNOTATION_OVERRIDES, explainSizing } from '../webhook/domain/index.js';

export interface SubmissionInfo {
  /** The submission's configOverrides; null when the driver pod (which carries them) is gone. */
  configOverrides: Record<string, unknown> | null;
  /** Whether the driver pod could be read (Kubernetes: it is deleted on stop and delete). */
  driverPod: boolean;
  /** The admission mark on the driver pod; null on a pod that missed admission. */
  admittedBy: string | null;
  /** Which pool each pod went to and why; null when this process has no node-pool rules. */
  sizing: ReturnType<typeof explainSizing> | null;
}

export function submissionInfo(pod: V1Pod | undefined, config: ApplicationConfig, rules: AdmissionRules | undefined): SubmissionInfo {
  const annotations = pod?.metadata?.annotations ?? {};
  let configOverrides: Record<string, unknown> | null = null;
  try {
    const parsed = JSON.parse(annotations[ANNOTATION_OVERRIDES] ?? 'null') as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) configOverrides = parsed as Record<string, unknown>;
  } catch { /* admission refuses such a pod; nothing to show */ }
  if (pod && configOverrides === null) configOverrides = {};
  return {
    configOverrides,
    driverPod: pod !== undefined,
    admittedBy: annotations[ANNOTATION_ADMITTED] ?? null,
    sizing: rules ? explainSizing(config, rules) : null,
  };
}
