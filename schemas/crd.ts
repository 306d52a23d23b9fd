// Our JSON Schemas as Kubernetes CustomResourceDefinitions. The apiserver accepts only
// "structural" OpenAPI v3 schemas: no $ref, a type on every node, no `additionalProperties:
// false`, nullable instead of a null type. Pure functions: schemas in, CRD objects out.
import { allSchemas, type JsonSchema } from './index.js';

export type Schema = Record<string, unknown>;

export const CRD_GROUP = 'submission-service.io';
export const CRD_VERSION = 'v1';
/** `kubectl get submission-service` lists every kind of ours. */
export const CRD_CATEGORY = 'submission-service';

/** Keywords that only mean something to JSON Schema tooling: dropped. */
// propertyNames (label keys) has no structural form: the API checks keys before anything is stored.
const DROPPED = new Set(['$id', '$schema', '$comment', 'title', 'examples', 'propertyNames']);
/** Keywords a structural schema may carry as they are. Anything else is refused loudly. */
const KEPT = new Set([
  'description', 'format', 'enum', 'default', 'nullable', 'required',
  'minimum', 'maximum', 'multipleOf', 'minLength', 'maxLength', 'pattern',
  'minItems', 'maxItems', 'minProperties', 'maxProperties',
]);

export type SchemaIndex = ReadonlyMap<string, Schema>;

export function indexSchemas(schemas: readonly JsonSchema[] = allSchemas): SchemaIndex {
  return new Map(schemas.map((schema) => [schema.$id, schema as Schema]));
}

/** `pod-config.json` and `pod-config.json#` both name the schema whose $id is pod-config.json. */
function resolveRef(ref: string, index: SchemaIndex): Schema {
  const [id, pointer = ''] = ref.split('#');
  if (pointer !== '' && pointer !== '/') throw new Error(`$ref ${ref}: only whole-schema references are supported`);
  const target = index.get(id);
  if (!target) throw new Error(`$ref ${ref}: no schema with $id ${id}`);
  return target;
}

function convertType(type: unknown, out: Schema, at: string): void {
  if (typeof type === 'string') { out.type = type; return; }
  if (!Array.isArray(type)) throw new Error(`${at}: type must be a string or an array`);
  const others = type.filter((t) => t !== 'null');
  if (others.length !== 1) throw new Error(`${at}: type ${JSON.stringify(type)} has no structural equivalent`);
  out.type = others[0];
  if (others.length < type.length) out.nullable = true;
}

/** Draft 6+ numeric exclusive bounds become OpenAPI v3.0's boolean form. */
function convertExclusive(key: 'exclusiveMinimum' | 'exclusiveMaximum', value: unknown, out: Schema, at: string): void {
  if (typeof value === 'boolean') { out[key] = value; return; }
  if (typeof value !== 'number') throw new Error(`${at}: ${key} must be a number`);
  const bound = key === 'exclusiveMinimum' ? 'minimum' : 'maximum';
  if (out[bound] !== undefined) throw new Error(`${at}: both ${bound} and ${key}`);
  out[bound] = value;
  out[key] = true;
}

function convertNode(node: Schema, index: SchemaIndex, at: string, seen: readonly string[]): Schema {
  if (typeof node.$ref === 'string') {
    const target = resolveRef(node.$ref, index);
    const id = String(target.$id);
    if (seen.includes(id)) throw new Error(`${at}: recursive $ref ${node.$ref} cannot be inlined`);
    const { $ref: _ref, ...siblings } = node;
    // A description beside the $ref describes this use of it: it wins over the target's.
    return { ...convertNode(target, index, at, [...seen, id]), ...convertNode(siblings, index, at, seen) };
  }
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    const here = `${at}.${key}`;
    if (DROPPED.has(key)) continue;
    if (KEPT.has(key)) out[key] = value;
    else if (key === 'type') convertType(value, out, here);
    else if (key === 'exclusiveMinimum' || key === 'exclusiveMaximum') convertExclusive(key, value, out, here);
    else if (key === 'const') out.enum = [value];
    else if (key === 'items') out.items = convertNode(value as Schema, index, here, seen);
    else if (key === 'properties') {
      out.properties = Object.fromEntries(Object.entries(value as Record<string, Schema>)
        .map(([name, child]) => [name, convertNode(child, index, `${here}.${name}`, seen)]));
    } else if (key === 'additionalProperties') {
      // false: the apiserver prunes unknown fields anyway (structural schemas forbid false).
      // true: a free-form object; a schema: a map whose values it checks.
      if (value === true) out['x-kubernetes-preserve-unknown-fields'] = true;
      else if (value !== false) out.additionalProperties = convertNode(value as Schema, index, here, seen);
    } else throw new Error(`${here}: keyword ${key} is not supported in a CRD schema`);
  }
  // An object that names no properties and no value schema is free-form: keep what it holds
  // rather than pruning it all away.
  if (out.type === 'object' && out.properties === undefined && out.additionalProperties === undefined) {
    out['x-kubernetes-preserve-unknown-fields'] = true;
  }
  return out;
}

/** One JSON Schema (by $id, or the object itself) as a structural schema, references inlined. */
export function toStructural(schema: string | Schema, index: SchemaIndex = indexSchemas()): Schema {
  const root = typeof schema === 'string' ? resolveRef(schema, index) : schema;
  const id = typeof root.$id === 'string' ? [root.$id] : [];
  return convertNode(root, index, typeof root.$id === 'string' ? root.$id : '#', id);
}

/**
 * What makes a schema non-structural (empty when it is structural): a node without a type,
 * a keyword the apiserver refuses there, properties beside additionalProperties.
 */
export function structuralProblems(schema: Schema, at = '#'): string[] {
  const problems: string[] = [];
  const free = schema['x-kubernetes-preserve-unknown-fields'] === true || schema['x-kubernetes-int-or-string'] === true;
  if (typeof schema.type !== 'string' && !free) problems.push(`${at}: no type`);
  for (const key of ['$ref', '$id', 'definitions', 'patternProperties', 'dependencies', 'additionalItems', 'const']) {
    if (key in schema) problems.push(`${at}: ${key}`);
  }
  if (schema.additionalProperties === false || schema.additionalProperties === true) problems.push(`${at}: additionalProperties ${String(schema.additionalProperties)}`);
  if (schema.properties && schema.additionalProperties) problems.push(`${at}: both properties and additionalProperties`);
  if (Array.isArray(schema.type)) problems.push(`${at}: type is an array`);
  if (typeof schema.exclusiveMinimum === 'number' || typeof schema.exclusiveMaximum === 'number') problems.push(`${at}: numeric exclusive bound`);
  for (const [name, child] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) {
    problems.push(...structuralProblems(child, `${at}.${name}`));
  }
  if (schema.items) problems.push(...structuralProblems(schema.items as Schema, `${at}[]`));
  if (typeof schema.additionalProperties === 'object') problems.push(...structuralProblems(schema.additionalProperties as Schema, `${at}{}`));
  return problems;
}

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
 * A user's stop, as a request in the Application's spec: the API writes it, the controller
 * carries it out and writes KILLED (the one writer of status). Not part of the API's record.
 */
function withStopRequest(spec: Schema): Schema {
  const stopRequested = { type: 'boolean', description: 'A user asked to stop this application: the controller deletes its driver pod and records KILLED. Set once, never unset.' };
  return { ...spec, properties: { ...(spec.properties as Record<string, Schema>), stopRequested } };
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
