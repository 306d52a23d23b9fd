// Admission: a pod in, an admitted pod (or a refusal) out. Pure: everything it needs
// arrives in the context, so the webhook, local mode and dry runs share one truth.
import { engineVersionRefusal } from './engine-versions.js';
import type { V1Pod } from '@kubernetes/client-node';
import type { ApplicationConfig } from '../schemas/index.js';
import { renderDriverPod } from './driver-pod.js';
import { type ConfigResult, effectiveConfig, type TemplateLookup } from './effective-config.js';
import { executorPodRefusal } from './executor-guard.js';
import { driverIdentityRefusal } from './service-identity.js';
import { type HistoryDecision, sizeFromHistory } from './history-sizing.js';
import type { RunEvidence } from './job-history.js';
import { renderExecutorPod } from './executor-pod.js';
import { ANNOTATION_CONFIG, ANNOTATION_OVERRIDES, ANNOTATION_SUBMITTED_BY, LABEL_APP, LABEL_ATTEMPT, LABEL_JOB, LABEL_TEMPLATE, SPARK_ROLE } from './labels.js';
import { attemptPodName } from './attempts.js';
import type { AdmissionRules } from './rules.js';
import { overridesSchemaError } from './overrides-schema.js';
import { checkOverrides } from './policy.js';

export interface AdmissionContext {
  rules: AdmissionRules;
  templates: TemplateLookup;
  /**
   * Effective config of a known application (executors are sized from it), by its driver pod's
   * name, and by that pod's uid where the executor names it (executorDriver): a driver deleted
   * and re-created under the same name is another application.
   */
  applications: (appName: string, driverUid?: string) => ApplicationConfig | undefined;
  /**
   * The application a known driver pod runs (its app label, which the service wrote when it made
   * the pod), by the same keys: a retry's driver pod is named `<app>-attempt-N`, so its name is
   * not its application's. Absent or unknown: the driver pod's name is taken as the application's.
   */
  driverApplication?: (driverPod: string, driverUid?: string) => string | undefined;
  /** Names a team's pod that came with generateName only. */
  newAppName: (jobName: string) => string;
  /** A job's past runs (job-history.ts), for sizing from them; absent: no history kept. */
  /** The past runs the submitting key (its id; null: none) made of the job: no other key's runs size this one's. */
  jobRuns?: (jobName: string, submittedBy: string | null) => RunEvidence[] | undefined;
  /**
   * A dry run: answers what admission would make of any engineVersion (SPEC's dry runs name
   * 3.0.0 and 2.4.4); a pod that is really created must name an offered version.
   */
  dryRun?: boolean;
}

export type Admission =
  | { outcome: 'ignored'; reason: string }
  | { outcome: 'admitted'; pod: V1Pod; appName: string; config: ApplicationConfig; history?: HistoryDecision }
  | { outcome: 'refused'; status: number; body: { message: string } };

function parseOverrides(pod: V1Pod): { ok: true; value?: ApplicationConfig } | { ok: false; message: string } {
  const raw = pod.metadata?.annotations?.[ANNOTATION_OVERRIDES];
  if (raw === undefined || raw === '') return { ok: true };
  try {
    const value = JSON.parse(raw) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not an object');
    return { ok: true, value: value as ApplicationConfig };
  } catch (error) {
    return { ok: false, message: `annotation ${ANNOTATION_OVERRIDES} is not a JSON object: ${(error as Error).message}` };
  }
}

/**
 * Effective configs by (template, overrides text), per rule set. Pipelines submit the same
 * config again and again; a replaced template is a new object, so its entries miss. Results
 * are shared, hence never mutated (rendering builds new objects).
 */
const memo = new WeakMap<AdmissionRules, Map<string, { template: ApplicationConfig | undefined; result: ConfigResult }>>();
const MEMO_SIZE = 1024;

function configFor(pod: V1Pod, ctx: AdmissionContext): ConfigResult | { ok: false; status: 400; body: { message: string; field?: string } } {
  const templateName = pod.metadata?.labels?.[LABEL_TEMPLATE];
  const template = templateName ? ctx.templates(templateName) : undefined;
  const key = `${templateName ?? ''}\u0000${pod.metadata?.annotations?.[ANNOTATION_OVERRIDES] ?? ''}`;
  let cache = memo.get(ctx.rules);
  if (!cache) memo.set(ctx.rules, (cache = new Map()));
  const hit = cache.get(key);
  if (hit && hit.template === template) return hit.result;
  const overrides = parseOverrides(pod);
  if (!overrides.ok) return { ok: false, status: 400, body: { message: overrides.message } };
  // The API's own schema and the policy, applied here too: the webhook sees pods the API never wrote.
  const invalid = overridesSchemaError(overrides.value ?? {})
    ?? checkOverrides(overrides.value, ctx.rules.policy, ctx.rules.serviceAccount);
  if (invalid) return { ok: false, status: 400, body: { message: invalid.message, field: invalid.field } };
  const result = effectiveConfig(templateName, overrides.value, ctx.rules, () => template);
  if (cache.size >= MEMO_SIZE) cache.clear();
  cache.set(key, { template, result });
  return result;
}

function admitDriver(pod: V1Pod, jobName: string, ctx: AdmissionContext): Admission {
  const labels = pod.metadata?.labels ?? {};
  const result = configFor(pod, ctx);
  if (!result.ok) return { outcome: 'refused', status: result.status, body: result.body };
  // Nothing a user writes may pass for the service's own pods under the chart's NetworkPolicies.
  const disguised = driverIdentityRefusal(pod, result.config);
  if (disguised) return { outcome: 'refused', status: 400, body: { message: disguised } };
  // A version this installation has no image (or local virtualenv) for never starts a driver.
  const unoffered = ctx.dryRun ? undefined : engineVersionRefusal(result.config.engineVersion ?? ctx.rules.defaultEngineVersion, ctx.rules.engineVersions);
  if (unoffered) return { outcome: 'refused', status: 400, body: unoffered };
  const appName = labels[LABEL_APP] ?? pod.metadata?.name ?? ctx.newAppName(jobName);
  const namespace = pod.metadata?.namespace || ctx.rules.namespace;
  // A retry's new attempt has a pod of its own, named from the attempt (Kubernetes mode).
  const attempt = Number(labels[LABEL_ATTEMPT] ?? 1);
  const driverPod = attempt > 1 ? attemptPodName(appName, attempt) : undefined;
  // The job's past runs may resize the executors (sizing.fromHistory: apply); the asked config is the memo's.
  const submittedBy = pod.metadata?.annotations?.[ANNOTATION_SUBMITTED_BY] ?? null;
  const { config, decision } = sizeFromHistory(result.config, ctx.jobRuns?.(jobName, submittedBy), ctx.rules);
  // Every decision is made above; the pod is rendered when first read (the webhook and a
  // real submission read it, a local dry run answers with the config alone).
  let rendered: V1Pod | undefined;
  return {
    outcome: 'admitted',
    appName,
    config,
    ...(decision ? { history: decision } : {}),
    // Rendering builds new objects and leaves `pod` as it is: no copy needed.
    get pod() { return (rendered ??= renderDriverPod(pod, config, { appName, jobName, namespace, ...(driverPod ? { driverPod } : {}) }, ctx.rules, decision)); },
  };
}

/**
 * The driver pod an executor belongs to: its owner reference (name and uid, as Spark writes
 * it), else our app label (copied by Spark). Only a driver in the rules' namespace is ours:
 * a pod in another namespace names none (owner references never cross namespaces).
 */
export function executorDriver(pod: V1Pod, namespace: string): { name: string; uid?: string } | undefined {
  if (pod.metadata?.namespace && pod.metadata.namespace !== namespace) return undefined;
  const owner = pod.metadata?.ownerReferences?.find((o) => o.kind === 'Pod' && o.apiVersion === 'v1');
  if (owner?.name) return { name: owner.name, uid: owner.uid };
  const label = pod.metadata?.labels?.[LABEL_APP];
  return label ? { name: label } : undefined;
}

/**
 * An executor labelled as another application's than its owner's: Spark copies its driver's
 * labels, so the two agree unless code with the driver's account wrote the pod itself, to be
 * taken for that other run's (its NetworkPolicy admits that run's pods by this label).
 */
function foreignLabelRefusal(pod: V1Pod, driver: { name: string; uid?: string } | undefined, ctx: AdmissionContext): string | undefined {
  const labelled = pod.metadata?.labels?.[LABEL_APP];
  if (labelled === undefined || driver === undefined) return undefined;
  const driversApp = ctx.driverApplication?.(driver.name, driver.uid) ?? driver.name;
  if (labelled === driversApp) return undefined;
  const name = pod.metadata?.name ?? pod.metadata?.generateName ?? 'executor';
  return `executor pod ${name}: labelled as application ${labelled}'s but owned by pod ${driver.name} (application ${driversApp}); an executor belongs to its driver's application`;
}

function admitExecutor(pod: V1Pod, ctx: AdmissionContext): Admission {
  const driver = executorDriver(pod, ctx.rules.namespace);
  const appName = pod.metadata?.labels?.[LABEL_APP] ?? driver?.name;
  const config = driver ? ctx.applications(driver.name, driver.uid) : undefined;
  // Service account, Secrets and volumes are checked on every executor, ours or not (executor-guard.ts).
  const refusal = foreignLabelRefusal(pod, driver, ctx) ?? executorPodRefusal(pod, config, ctx.rules);
  if (refusal) return { outcome: 'refused', status: 403, body: { message: refusal } };
  if (!appName || !config) return { outcome: 'ignored', reason: 'executor of a driver the service does not know' };
  return { outcome: 'admitted', pod: renderExecutorPod(pod, config, ctx.rules), appName, config };
}

export function admitPod(pod: V1Pod, ctx: AdmissionContext): Admission {
  const labels = pod.metadata?.labels ?? {};
  if (labels[SPARK_ROLE] === 'executor') return admitExecutor(pod, ctx);
  const jobName = labels[LABEL_JOB];
  if (!jobName) return { outcome: 'ignored', reason: `no ${LABEL_JOB} label` };
  return admitDriver(pod, jobName, ctx);
}

/**
 * The effective config admission wrote into a pod, or why it cannot be read. Total: pod
 * annotations can be edited after admission (`kubectl annotate`), so a caller that reads them
 * from a watch must never throw on one.
 */
export function readConfigAnnotation(pod: V1Pod): ConfigReading {
  const raw = pod.metadata?.annotations?.[ANNOTATION_CONFIG];
  if (!raw) return {};
  const known = readings.get(pod);
  if (known?.raw === raw) return known.reading;
  const reading = parseConfigAnnotation(raw);
  readings.set(pod, { raw, reading });
  return reading;
}

type ConfigReading = { config?: ApplicationConfig; problem?: string };

/**
 * Each pod object's reading, for as long as its annotation is the same string: every watch event
 * brings a new pod object, which the API's cache (the record's stateDetail) and the controller
 * (the config check of every pass) each read; parsed once, not on every read. Readers share
 * the config object and do not change it.
 */
const readings = new WeakMap<V1Pod, { raw: string; reading: ConfigReading }>();

function parseConfigAnnotation(raw: string): ConfigReading {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    return { problem: `the ${ANNOTATION_CONFIG} annotation is not JSON (${(error as Error).message.slice(0, 120)})` };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { problem: `the ${ANNOTATION_CONFIG} annotation is not a JSON object` };
  return { config: parsed as ApplicationConfig };
}

/** The effective config admission wrote into a pod; undefined when absent or unreadable. */
export function readConfig(pod: V1Pod): ApplicationConfig | undefined {
  return readConfigAnnotation(pod).config;
}
