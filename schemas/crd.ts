// Our JSON Schemas as Kubernetes CustomResourceDefinitions: each kind of ours, its spec and
// status picked from our schemas and made structural (structural.ts). Pure functions: schemas
// in, CRD objects out.
import { indexSchemas, resolveRef, type Schema, type SchemaIndex, toStructural } from './structural.js';

export const CRD_GROUP = 'submission-service.io';
export const CRD_VERSION = 'v1';
/** `kubectl get submission-service` lists every kind of ours. */
export const CRD_CATEGORY = 'submission-service';
/** The longest stop reason an Application's spec holds (cluster/kubernetes/stop-request.ts cuts a longer one). */
export const STOP_REASON_MAX_LENGTH = 1024;

/** Some properties of an object schema, in the given order, with the ones it requires. */
function pick(schema: Schema, names: readonly string[]): Schema {
  const properties = schema.properties as Record<string, Schema>;
  const chosen: Record<string, Schema> = {};
  for (const name of names) {
    if (!properties[name]) throw new Error(`property ${name} missing from ${String(schema.$id)}`);
    chosen[name] = properties[name];
  }
  const required = ((schema.required as string[] | undefined) ?? []).filter((name) => names.includes(name));
  return { type: 'object', properties: chosen, ...(required.length > 0 ? { required } : {}) };
}

interface CrdOptions {
  kind: string;
  plural: string;
  shortNames: string[];
  description: string;
  spec: Schema;
  status?: Schema;
  columns: { name: string; type: string; jsonPath: string; description?: string; priority?: number }[];
}

const AGE_COLUMN = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

function crd(options: CrdOptions): Schema {
  const singular = options.kind.toLowerCase();
  const properties: Record<string, Schema> = {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    metadata: { type: 'object' },
    spec: options.spec,
    ...(options.status ? { status: options.status } : {}),
  };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${options.plural}.${CRD_GROUP}`,
      labels: { 'app.kubernetes.io/name': 'submission-service', 'app.kubernetes.io/component': 'crd' },
    },
    spec: {
      group: CRD_GROUP,
      names: {
        kind: options.kind,
        listKind: `${options.kind}List`,
        plural: options.plural,
        singular,
        shortNames: options.shortNames,
        categories: [CRD_CATEGORY],
      },
      scope: 'Namespaced',
      versions: [{
        name: CRD_VERSION,
        served: true,
        storage: true,
        ...(options.status ? { subresources: { status: {} } } : {}),
        additionalPrinterColumns: options.columns,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            description: options.description,
            required: ['spec'],
            properties,
          },
        },
      }],
    },
  };
}

/** ConfigTemplate: `metadata.name` is the template's name, `spec.config` its (partial) config. */
export function configTemplateCrd(index: SchemaIndex = indexSchemas()): Schema {
  const template = resolveRef('config-template.json', index);
  return crd({
    kind: 'ConfigTemplate',
    plural: 'configtemplates',
    shortNames: ['ct'],
    description: String(template.description),
    spec: toStructural(pick(template, ['config']), index),
    columns: [
      { name: 'Engine', type: 'string', jsonPath: '.spec.config.engineVersion', description: 'Spark version' },
      { name: 'Type', type: 'string', jsonPath: '.spec.config.type' },
      { name: 'Python', type: 'string', jsonPath: '.spec.config.pythonVersion', priority: 1 },
      AGE_COLUMN,
    ],
  });
}

/**
 * A stop, as a request in the Application's spec: the API writes it (with the service's own
 * reason, when it has one), the controller carries it out and writes KILLED (the one writer of
 * status) with the reason as stateDetail. Not part of the API's record.
 */
function withStopRequest(spec: Schema): Schema {
  const stopRequested = { type: 'boolean', description: 'A user or the service asked to stop this application: the controller deletes its driver pod and records KILLED. Set once, never unset.' };
  const stopReason = {
    type: 'string', maxLength: STOP_REASON_MAX_LENGTH,
    description: 'Why the service stopped it (e.g. an idle Spark Connect session), written with stopRequested and never replaced: the KILLED record\'s stateDetail. Absent: a user\'s stop.',
  };
  return { ...spec, properties: { ...(spec.properties as Record<string, Schema>), stopRequested, stopReason } };
}

/**
 * Application: the record the API keeps of each submission, so it outlives the driver pod.
 * `metadata.name` is the appName, `metadata.creationTimestamp` its createdAt.
 */
export function applicationCrd(index: SchemaIndex = indexSchemas()): Schema {
  const application = resolveRef('application.json', index);
  return crd({
    kind: 'Application',
    plural: 'applications',
    shortNames: ['ssapp'],
    description: String(application.description),
    spec: withStopRequest(toStructural(pick(application, ['jobName', 'configTemplateName', 'config', 'submittedBy']), index)),
    status: toStructural(pick(application, ['state', 'stateDetail', 'attempt', 'attempts', 'startedAt', 'endedAt', 'runningExecutors', 'transitions']), index),
    columns: [
      { name: 'Job', type: 'string', jsonPath: '.spec.jobName' },
      { name: 'State', type: 'string', jsonPath: '.status.state' },
      { name: 'Executors', type: 'integer', jsonPath: '.status.runningExecutors', priority: 1 },
      { name: 'Template', type: 'string', jsonPath: '.spec.configTemplateName', priority: 1 },
      AGE_COLUMN,
    ],
  });
}

/**
 * Schedule: a submission made on a cron schedule (cluster/schedules/). `metadata.name` is its
 * name; the spec carries its owner (`createdBy`: the runs are submitted as that key); the
 * status is written by the controller's leader after each tick it settles.
 */
export function scheduleCrd(index: SchemaIndex = indexSchemas()): Schema {
  const record = resolveRef('schedule-record.json', index);
  const spec = ['schedule', 'timeZone', 'jobName', 'configTemplateName', 'configOverrides', 'labels', 'concurrencyPolicy', 'suspend',
    'startingDeadlineSeconds', 'successfulRunsHistoryLimit', 'failedRunsHistoryLimit', 'createdBy'];
  return crd({
    kind: 'Schedule',
    plural: 'schedules',
    shortNames: ['sssched'],
    description: String(resolveRef('schedule.json', index).description),
    spec: toStructural(pick(record, spec), index),
    status: toStructural(pick(record, ['lastScheduleTime', 'lastRunName', 'lastOutcome']), index),
    columns: [
      { name: 'Schedule', type: 'string', jsonPath: '.spec.schedule' },
      { name: 'Time zone', type: 'string', jsonPath: '.spec.timeZone' },
      { name: 'Job', type: 'string', jsonPath: '.spec.jobName' },
      { name: 'Suspend', type: 'boolean', jsonPath: '.spec.suspend' },
      { name: 'Last tick', type: 'date', jsonPath: '.status.lastScheduleTime' },
      { name: 'Last run', type: 'string', jsonPath: '.status.lastRunName', priority: 1 },
      AGE_COLUMN,
    ],
  });
}

/**
 * JobProfile: a job's memory of its past runs (domain/job-history.ts), for sizing from them.
 * `metadata.name` is the job's name. Written only by the controller's leader, once per ended
 * run; read by the API (recommendations, costs) and the webhook (sizing under `apply`). A
 * custom resource, not a ConfigMap: drivers may write ConfigMaps in the applications namespace
 * (Spark makes its executors' there), and no driver may write what admission sizes from.
 * The runs are the service's own JSON (their fields are defined in code, not in schemas/).
 */
export function jobProfileCrd(): Schema {
  const kept = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
  return crd({
    kind: 'JobProfile',
    plural: 'jobprofiles',
    shortNames: ['ssjob'],
    description: 'A job\'s last runs by one key (named <job>.<key id>; <job>: runs with no key) as the service recorded them from their event logs: what each asked for, ran with, used and cost. Sizing from past runs (sizing.fromHistory) reads it; only the service\'s controller writes it.',
    spec: {
      type: 'object',
      required: ['jobName', 'runs'],
      properties: {
        jobName: { type: 'string', maxLength: 63 },
        submittedBy: { type: 'string', maxLength: 256, description: 'The id of the key whose runs these are (a profile per job and key); absent: runs submitted with no key.' },
        asked: { ...kept, description: 'The newest run\'s config as asked (before sizing from history).' },
        runs: { type: 'array', maxItems: 50, items: { ...kept, description: 'One ended run (domain/job-history.ts RunEvidence).' } },
      },
    },
    columns: [
      { name: 'Job', type: 'string', jsonPath: '.spec.jobName' },
      { name: 'Last run', type: 'string', jsonPath: '.spec.runs[-1:].appName' },
      AGE_COLUMN,
    ],
  });
}

export const allCrds = (index: SchemaIndex = indexSchemas()): Schema[] => [configTemplateCrd(index), applicationCrd(index), scheduleCrd(index), jobProfileCrd()];
