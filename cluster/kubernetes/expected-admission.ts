// The webhook's admission of a driver pod, worked out by the API itself before it writes
// anything: the same pure admission the webhook runs (domain), with the same rules
// (the chart gives the API and the webhook one node-pool file). The Application is created
// with its effective config and the submission's annotations (the controller has nothing to
// copy), and the driver pod is written admitted: the webhook configuration skips pods the API's
// own identity writes with the admission mark (webhook/server/registration.ts, apiUser), so a
// submission is two writes and no webhook round trip. Where the webhook still sees the pod
// (an API without its own identity, an older registration), it renders it again to the same
// pod (driver-pod.ts) or to what its own rules say; then the API corrects the Application from
// the admitted pod.
import type { V1Pod } from '@kubernetes/client-node';
import type { ApplicationConfig } from '../../schemas/index.js';
import { type AdmissionContext, type AdmissionRules, admitPod, LABEL_TEMPLATE } from '../../domain/index.js';
import { submissionAnnotations } from '../submission-info.js';

export interface ExpectedAdmission {
  config: ApplicationConfig;
  /** The submission's annotations as admission writes them on the pod (submission-info.ts). */
  annotations: Record<string, string>;
  /** The admitted pod of `body` (the bare pod as it is written: namespace, owner, launcher Secret). */
  admit(body: V1Pod): V1Pod;
}

export type ApiAdmission =
  | ({ outcome: 'admitted' } & ExpectedAdmission)
  | { outcome: 'refused'; status: number; body: { message: string } };

/**
 * Admission of `bare` in `namespace` (with the job's past runs, as the webhook has them from the same JobProfiles): admitted (config, annotations, the pod to write) or our
 * refusal, as the webhook would answer it; undefined when admission would ignore it. `template`: the config of the template the pod
 * names (callers leave a missing or unreadable one to the webhook, whose 404 or 503 it is).
 */
export function expectedAdmission(bare: V1Pod, namespace: string, rules: AdmissionRules, template?: ApplicationConfig, dryRun = false, jobRuns?: AdmissionContext['jobRuns']): ApiAdmission | undefined {
  const context: AdmissionContext = {
    rules, dryRun, jobRuns,
    templates: () => template,
    applications: () => undefined,
    newAppName: () => bare.metadata?.name ?? '',
  };
  const admission = admitPod({ ...bare, metadata: { ...bare.metadata, namespace } }, context);
  if (admission.outcome === 'refused') return admission;
  if (admission.outcome !== 'admitted') return undefined; // not a pod admission takes: the webhook's to say
  return {
    outcome: 'admitted',
    config: admission.config,
    annotations: submissionAnnotations(admission.pod),
    admit: (body) => {
      // A submission's pod is the bare one with its owner: the pod rendered above, with that owner
      // (rendering copies ownerReferences as they are), not a second render of the same pod.
      if (ownerAddedOnly(body, bare)) return { ...admission.pod, metadata: { ...admission.pod.metadata, ownerReferences: body.metadata?.ownerReferences } };
      // The same labels and overrides, so the same config (configFor memoises it): only the pod differs.
      const again = admitPod({ ...body, metadata: { ...body.metadata, namespace } }, context);
      if (again.outcome !== 'admitted') throw new Error(`admission of the driver pod to write: ${again.outcome}`);
      return again.pod;
    },
  };
}

/** Whether `body` is `bare` with ownerReferences (and a namespace) added: every other field the same object. */
export function ownerAddedOnly(body: V1Pod, bare: V1Pod): boolean {
  return sameFields(body, bare, ['metadata']) && sameFields(body.metadata ?? {}, bare.metadata ?? {}, ['ownerReferences', 'namespace']);
}

/** Whether `a` and `b` hold the same values (by identity) in every field but `skip`. */
function sameFields(a: object, b: object, skip: string[]): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const key of skip) keys.delete(key);
  return [...keys].every((key) => (a as Record<string, unknown>)[key] === (b as Record<string, unknown>)[key]);
}

/**
 * What the webhook would admit, when this process has its rules; undefined when unknown (the
 * pod goes bare to the webhook, the controller copies its config). The template is read once:
 * absent, admission answers 404 as the webhook would; unreadable, the webhook answers for it.
 */
export async function admissionWithTemplate(
  bare: V1Pod, namespace: string, rules: AdmissionRules | undefined, readTemplate: (name: string) => Promise<{ config: ApplicationConfig } | undefined>, dryRun: boolean,
  jobRuns?: AdmissionContext['jobRuns'],
): Promise<ApiAdmission | undefined> {
  if (!rules) return undefined;
  const templateName = bare.metadata?.labels?.[LABEL_TEMPLATE];
  let template: ApplicationConfig | undefined;
  if (templateName) {
    const read = await readTemplate(templateName).then((found) => ({ found }), () => undefined);
    if (!read) return undefined;
    template = read.found?.config;
  }
  return expectedAdmission(bare, namespace, rules, template, dryRun, jobRuns);
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


/**
 * Whether `a` and `b` (JSON values) have the same canonicalJson, without making either string:
 * the controller compares the admitted config and the status on every pass.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!isObject(a) || !isObject(b)) return !isObject(a) && !isObject(b) && JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  const keys = definedKeys(a);
  return keys.length === definedKeys(b).length && keys.every((k) => Object.hasOwn(b, k) && sameJson(a[k], b[k]));
}

// Module-level, not in sameJson: it recurses into every value of both configs on every pass.
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
const definedKeys = (o: Record<string, unknown>) => Object.keys(o).filter((k) => o[k] !== undefined);
