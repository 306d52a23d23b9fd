// The sizing decision as admission records it on the driver pod (annotation
// `submission-service/sizing`): the webhook holds the node-pool rules, the API in Kubernetes
// mode does not, so the decision travels with the pod and every reader (the API's cache in
// either mode, `kubectl describe`) shows the same thing. Bounded: a few short sentences per
// pod, each cut to a fixed length, whatever the rules or the config say.
import { explainSizing, type PodSizingExplanation } from './sizing-explanation.js';
import type { ApplicationConfig } from '../schemas/index.js';
import type { AdmissionRules } from './rules.js';
import type { HistoryDecision } from './history-sizing.js';
import type { FromHistory } from './job-history.js';

/** `history`: sizing from the job's past runs (history-sizing.ts), when admission had any to say. */
export type SizingExplanation = ReturnType<typeof explainSizing> & { history?: HistoryDecision };

const MAX_REASONS = 6;
const MAX_REASON_CHARS = 240;
const MAX_FIELD_CHARS = 63;
/** The annotation never exceeds this many characters (the test checks a worst case against it). */
export const SIZING_ANNOTATION_MAX_CHARS = 8192;

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

function compactPod(pod: PodSizingExplanation): PodSizingExplanation {
  const out: PodSizingExplanation = { pool: pod.pool === null ? null : cut(pod.pool, MAX_FIELD_CHARS), reasons: pod.reasons.slice(0, MAX_REASONS).map((r) => cut(r, MAX_REASON_CHARS)) };
  if (pod.cores !== undefined) out.cores = pod.cores;
  if (pod.coreRequest !== undefined) out.coreRequest = cut(pod.coreRequest, MAX_FIELD_CHARS);
  if (pod.memory !== undefined) out.memory = cut(pod.memory, MAX_FIELD_CHARS);
  return out;
}

const MAX_RUNS_NAMED = 5;

function compactHistory(history: HistoryDecision): HistoryDecision {
  const { cores, memory, instances } = history.asked;
  return {
    mode: history.mode, applied: history.applied,
    asked: { cores, memory: cut(memory, MAX_FIELD_CHARS), instances },
    basedOn: history.basedOn.slice(-MAX_RUNS_NAMED).map((name) => cut(name, MAX_FIELD_CHARS)),
    reasons: history.reasons.slice(0, MAX_REASONS).map((r) => cut(r, MAX_REASON_CHARS)),
  };
}

/**
 * The texts without a history decision, by config and rules: every submission of a job asks for
 * the same one (admission memoises the config per job and overrides, admit.ts), and building it
 * (the explanation's sentences, then JSON) was a tenth of rendering the pod. Both objects are
 * shared and never mutated, so the text of a pair never changes; new rules are new objects.
 */
const texts = new WeakMap<ApplicationConfig, WeakMap<AdmissionRules, string>>();

/** The annotation's value for an admitted application: the explanation of its sized config under these rules. */
export function sizingAnnotation(config: ApplicationConfig, rules: AdmissionRules, history?: HistoryDecision): string {
  if (history) return sizingText(config, rules, history);
  let byRules = texts.get(config);
  if (!byRules) texts.set(config, (byRules = new WeakMap()));
  let text = byRules.get(rules);
  if (text === undefined) byRules.set(rules, (text = sizingText(config, rules)));
  return text;
}

function sizingText(config: ApplicationConfig, rules: AdmissionRules, history?: HistoryDecision): string {
  const explained = explainSizing(config, rules);
  return JSON.stringify({ driver: compactPod(explained.driver), executor: compactPod(explained.executor), ...(history ? { history: compactHistory(history) } : {}) });
}

const isString = (v: unknown): v is string => typeof v === 'string';

function readPod(value: unknown): PodSizingExplanation | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { pool, cores, coreRequest, memory, reasons } = value as Record<string, unknown>;
  if (!(pool === null || isString(pool)) || !Array.isArray(reasons) || !reasons.every(isString)) return undefined;
  if ((cores !== undefined && typeof cores !== 'number') || (coreRequest !== undefined && !isString(coreRequest)) || (memory !== undefined && !isString(memory))) return undefined;
  return compactPod({ pool, cores, coreRequest, memory, reasons });
}

const MODES: FromHistory[] = ['off', 'recommend', 'apply'];

function readHistory(value: unknown): HistoryDecision | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { mode, applied, asked, basedOn, reasons } = value as Record<string, unknown>;
  const size = (asked ?? {}) as Record<string, unknown>;
  if (!MODES.includes(mode as FromHistory) || typeof applied !== 'boolean' || !Array.isArray(basedOn) || !basedOn.every(isString) || !Array.isArray(reasons) || !reasons.every(isString)) return undefined;
  if (typeof size.cores !== 'number' || typeof size.instances !== 'number' || !isString(size.memory)) return undefined;
  return compactHistory({ mode: mode as FromHistory, applied, asked: { cores: size.cores, memory: size.memory, instances: size.instances }, basedOn, reasons });
}

/** The decision recorded on a pod; null when there is none or it is not one admission wrote (a hand-made pod). */
export function readSizingAnnotation(text: string | undefined): SizingExplanation | null {
  if (!text || text.length > SIZING_ANNOTATION_MAX_CHARS) return null;
  let parsed: unknown;
  try { parsed = JSON.parse(text); } catch { return null; }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const driver = readPod((parsed as Record<string, unknown>).driver);
  const executor = readPod((parsed as Record<string, unknown>).executor);
  if (!driver || !executor) return null;
  const history = readHistory((parsed as Record<string, unknown>).history);
  return history ? { driver, executor, history } : { driver, executor };
}
