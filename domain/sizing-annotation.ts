// The sizing decision as admission records it on the driver pod (annotation
// `submission-service/sizing`): the webhook holds the node-pool rules, the API in Kubernetes
// mode does not, so the decision travels with the pod and every reader (the API's cache in
// either mode, `kubectl describe`) shows the same thing. Bounded: a few short sentences per
// pod, each cut to a fixed length, whatever the rules or the config say.
import { explainSizing, type PodSizingExplanation } from './sizing-explanation.js';
import type { ApplicationConfig } from '../schemas/index.js';
import type { AdmissionRules } from './rules.js';

export type SizingExplanation = ReturnType<typeof explainSizing>;

const MAX_REASONS = 6;
const MAX_REASON_CHARS = 240;
const MAX_FIELD_CHARS = 63;
/** The annotation never exceeds this many characters (the test checks a worst case against it). */
export const SIZING_ANNOTATION_MAX_CHARS = 4096;

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

function compactPod(pod: PodSizingExplanation): PodSizingExplanation {
  const out: PodSizingExplanation = { pool: pod.pool === null ? null : cut(pod.pool, MAX_FIELD_CHARS), reasons: pod.reasons.slice(0, MAX_REASONS).map((r) => cut(r, MAX_REASON_CHARS)) };
  if (pod.cores !== undefined) out.cores = pod.cores;
  if (pod.coreRequest !== undefined) out.coreRequest = cut(pod.coreRequest, MAX_FIELD_CHARS);
  if (pod.memory !== undefined) out.memory = cut(pod.memory, MAX_FIELD_CHARS);
  return out;
}

/** The annotation's value for an admitted application: the explanation of its sized config under these rules. */
export function sizingAnnotation(config: ApplicationConfig, rules: AdmissionRules): string {
  const explained = explainSizing(config, rules);
  return JSON.stringify({ driver: compactPod(explained.driver), executor: compactPod(explained.executor) });
}

const isString = (v: unknown): v is string => typeof v === 'string';

function readPod(value: unknown): PodSizingExplanation | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { pool, cores, coreRequest, memory, reasons } = value as Record<string, unknown>;
  if (!(pool === null || isString(pool)) || !Array.isArray(reasons) || !reasons.every(isString)) return undefined;
  if ((cores !== undefined && typeof cores !== 'number') || (coreRequest !== undefined && !isString(coreRequest)) || (memory !== undefined && !isString(memory))) return undefined;
  return compactPod({ pool, cores, coreRequest, memory, reasons });
}

/** The decision recorded on a pod; null when there is none or it is not one admission wrote (a hand-made pod). */
export function readSizingAnnotation(text: string | undefined): SizingExplanation | null {
  if (!text || text.length > SIZING_ANNOTATION_MAX_CHARS) return null;
  let parsed: unknown;
  try { parsed = JSON.parse(text); } catch { return null; }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const driver = readPod((parsed as Record<string, unknown>).driver);
  const executor = readPod((parsed as Record<string, unknown>).executor);
  return driver && executor ? { driver, executor } : null;
}
