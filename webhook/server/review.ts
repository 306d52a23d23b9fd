// AdmissionReview in, AdmissionReview out: the generic edge around the pure admission
// domain. Pure and total: whatever arrives, the answer is a well-formed v1 response
// that echoes the request's uid when it has one; nothing throws.
import type { V1Pod } from '@kubernetes/client-node';
import jsonPatch from 'fast-json-patch';
import type { Admission } from '../../domain/admit.js';
import { LABEL_APP } from '../../domain/labels.js';
import { clone } from '../../domain/merge.js';
import { type AdmissionReviewResponse, allow, deny, REVIEW_API_VERSION } from './envelope.js';

/** The admission context bound in: `(pod) => admitPod(pod, ctx)`. Gets a copy it may change. */
export type AdmitFunction = (pod: V1Pod, review: { dryRun: boolean }) => Admission;

export type ReviewOutcome =
  | Admission['outcome']
  | 'malformed' // not a v1 AdmissionReview with a uid: denied, code 400
  | 'skipped' // a review of something other than a Pod CREATE: allowed untouched
  | 'failed'; // admission threw: denied, code 500 (fail closed, as failurePolicy Fail would)

export interface ReviewResult {
  review: AdmissionReviewResponse;
  outcome: ReviewOutcome;
  /** Why, for the log: the ignore reason, the error, the app name. */
  detail?: string;
  /** The review's uid ('' when it had none) and the application the pod belongs to, for the log. */
  uid: string;
  appName?: string;
  /** What admission threw (outcome 'failed'), for the log with its stack. */
  error?: unknown;
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Error texts may quote arbitrary input; keep them log- and response-sized. */
const brief = (text: string) => (text.length > 1000 ? `${text.slice(0, 1000)}...` : text);

const malformed = (uid: string, why: string): ReviewResult =>
  ({ review: deny(uid, 400, `malformed AdmissionReview: ${why}`), outcome: 'malformed', detail: why, uid });

/** The application a pod belongs to, before admission names it: our label, else the pod's name. */
function podAppName(pod: Json): string | undefined {
  const metadata = isObject(pod.metadata) ? pod.metadata : {};
  const labels = isObject(metadata.labels) ? metadata.labels : {};
  const name = labels[LABEL_APP] ?? metadata.name ?? metadata.generateName;
  return typeof name === 'string' ? name : undefined;
}

/** The request's uid without parsing: the apiserver writes `"request":{"uid":...` first. */
export function uidFromText(text: string): string {
  return /"request"\s*:\s*\{\s*"uid"\s*:\s*"([^"\\]{1,256})"/.exec(text.slice(0, 4096))?.[1] ?? '';
}

function isPodCreate(request: Json): boolean {
  const kind = isObject(request.kind) ? request.kind : {};
  return kind.group === '' && kind.version === 'v1' && kind.kind === 'Pod'
    && request.operation === 'CREATE' && !request.subResource;
}

/** Diffs the pod as it arrived against the admitted pod (as JSON, so `undefined` fields vanish). */
export function podPatch(original: V1Pod, admitted: V1Pod): string | undefined {
  const after = JSON.parse(JSON.stringify(admitted)) as object;
  const operations = jsonPatch.compare(original, after);
  return operations.length > 0 ? Buffer.from(JSON.stringify(operations)).toString('base64') : undefined;
}

function admitRequest(uid: string, pod: V1Pod, admit: AdmitFunction, dryRun: boolean): ReviewResult {
  const result = admit(clone(pod), { dryRun });
  switch (result.outcome) {
    case 'ignored':
      return { review: allow(uid), outcome: 'ignored', detail: result.reason, uid };
    case 'refused':
      // The whole refusal body as JSON: the apiserver prefixes it with
      // `admission webhook "..." denied the request: `, and refusal.ts reads it back.
      return { review: deny(uid, result.status, JSON.stringify(result.body)), outcome: 'refused', detail: result.body.message, uid };
    case 'admitted':
      return { review: allow(uid, podPatch(pod, result.pod)), outcome: 'admitted', detail: result.appName, uid, appName: result.appName };
    default:
      throw new Error(`unknown admission outcome ${String((result as { outcome?: unknown }).outcome)}`);
  }
}

/** Reviews a parsed AdmissionReview. */
export function reviewAdmission(body: unknown, admit: AdmitFunction): ReviewResult {
  if (!isObject(body)) return malformed('', 'the body is not a JSON object');
  const request = isObject(body.request) ? body.request : undefined;
  const uid = typeof request?.uid === 'string' ? request.uid : '';
  if (body.apiVersion !== REVIEW_API_VERSION || body.kind !== 'AdmissionReview') {
    return malformed(uid, brief(`expected ${REVIEW_API_VERSION} AdmissionReview, got ${String(body.apiVersion)} ${String(body.kind)}`));
  }
  if (!request) return malformed('', 'no request');
  if (uid === '') return malformed('', 'request.uid is missing');
  // Only pod creation is ours; anything else the configuration sent by mistake goes through untouched.
  if (!isPodCreate(request)) return { review: allow(uid), outcome: 'skipped', detail: 'not a Pod CREATE', uid };
  if (!isObject(request.object)) return malformed(uid, 'request.object is not an object');
  const appName = podAppName(request.object);
  try {
    return { appName, ...admitRequest(uid, request.object as V1Pod, admit, request.dryRun === true) };
  } catch (error) {
    const message = brief(error instanceof Error ? error.message : String(error));
    return { review: deny(uid, 500, `admission failed: ${message}`), outcome: 'failed', detail: message, uid, appName, error };
  }
}

/** Reviews a raw request body; JSON that does not parse still gets an answer with its uid. */
export function reviewText(text: string, admit: AdmitFunction): ReviewResult {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    return malformed(uidFromText(text), brief(`invalid JSON: ${(error as Error).message}`));
  }
  return reviewAdmission(body, admit);
}
