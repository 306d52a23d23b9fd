// What an application was submitted with, as its driver pod carries it (the overrides
// annotation, the admission mark, the sizing decision admission recorded): the app page's
// "Submission". Both modes read the same annotations: in Kubernetes mode the API has no
// node-pool rules (the webhook has), so the decision is only known from what admission wrote.
import type { V1Pod } from '@kubernetes/client-node';
import { ANNOTATION_ADMITTED, ANNOTATION_OVERRIDES, ANNOTATION_SIZING, readSizingAnnotation, type SizingExplanation } from '../webhook/domain/index.js';

export interface SubmissionInfo {
  /** The submission's configOverrides; null when the driver pod (which carries them) is gone. */
  configOverrides: Record<string, unknown> | null;
  /** Whether the driver pod could be read (Kubernetes: it is deleted on stop and delete). */
  driverPod: boolean;
  /** The admission mark on the driver pod; null on a pod that missed admission. */
  admittedBy: string | null;
  /** Which pool each pod went to and why, as admission recorded it on the driver pod; null when not recorded. */
  sizing: SizingExplanation | null;
}

export function submissionInfo(pod: V1Pod | undefined): SubmissionInfo {
  const annotations = pod?.metadata?.annotations ?? {};
  let configOverrides: Record<string, unknown> | null = null;
  try {
    const parsed = JSON.parse(annotations[ANNOTATION_OVERRIDES] ?? 'null') as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) configOverrides = parsed as Record<string, unknown>;
  } catch { /* admission refuses such a pod; nothing to show */ }
  if (pod && configOverrides === null) configOverrides = {};
  const admittedBy = annotations[ANNOTATION_ADMITTED] ?? null;
  return {
    configOverrides,
    driverPod: pod !== undefined,
    admittedBy,
    // Only admission writes the decision: on a pod that missed it, the annotation is not ours.
    sizing: admittedBy === null ? null : readSizingAnnotation(annotations[ANNOTATION_SIZING]),
  };
}
