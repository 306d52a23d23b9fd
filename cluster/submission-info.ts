// What an application was submitted with, as its driver pod carries it (the overrides
// annotation, the admission mark, the sizing decision admission recorded): the app page's
// "Submission". Both modes read the same annotations: in Kubernetes mode the API has no
// node-pool rules (the webhook has), so the decision is only known from what admission wrote.
import type { V1Pod } from '@kubernetes/client-node';
import { ANNOTATION_ADMITTED, ANNOTATION_OVERRIDES, ANNOTATION_SIZING, readSizingAnnotation, type SizingExplanation } from '../domain/index.js';

export interface SubmissionInfo {
  /** The submission's configOverrides; null when neither the driver pod (which carries them) nor a kept copy is there. */
  configOverrides: Record<string, unknown> | null;
  /** Whether the driver pod could be read (Kubernetes: it is deleted on stop and delete). */
  driverPod: boolean;
  /** The admission mark on the driver pod; null on a pod that missed admission. */
  admittedBy: string | null;
  /** Which pool each pod went to and why, as admission recorded it on the driver pod; null when not recorded. */
  sizing: SizingExplanation | null;
}

/** The annotations that say what an application was submitted with; the controller keeps a copy on the Application. */
export const SUBMISSION_ANNOTATIONS = [ANNOTATION_OVERRIDES, ANNOTATION_ADMITTED, ANNOTATION_SIZING] as const;

/** Those of the annotations present on a pod, e.g. to be copied elsewhere. */
export function submissionAnnotations(pod: V1Pod): Record<string, string> {
  const annotations = pod.metadata?.annotations ?? {};
  return Object.fromEntries(SUBMISSION_ANNOTATIONS.filter((key) => annotations[key] !== undefined).map((key) => [key, annotations[key]]));
}

/**
 * From the driver pod; when it is gone, from the copy of its annotations kept elsewhere
 * (Kubernetes: the Application, which the controller gave them when it copied the config).
 */
export function submissionInfo(pod: V1Pod | undefined, kept?: Record<string, string>): SubmissionInfo {
  const carrier = pod?.metadata?.annotations ?? (kept && Object.keys(kept).length > 0 ? kept : undefined);
  const annotations = carrier ?? {};
  let configOverrides: Record<string, unknown> | null = null;
  try {
    const parsed = JSON.parse(annotations[ANNOTATION_OVERRIDES] ?? 'null') as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) configOverrides = parsed as Record<string, unknown>;
  } catch { /* admission refuses such a pod; nothing to show */ }
  if (carrier && configOverrides === null) configOverrides = {};
  const admittedBy = annotations[ANNOTATION_ADMITTED] ?? null;
  return {
    configOverrides,
    driverPod: pod !== undefined,
    admittedBy,
    // Only admission writes the decision: on a pod that missed it, the annotation is not ours.
    sizing: admittedBy === null ? null : readSizingAnnotation(annotations[ANNOTATION_SIZING]),
  };
}
