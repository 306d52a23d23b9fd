// JSON Schema to the "structural" OpenAPI v3 schema the Kubernetes apiserver accepts for a
// CustomResourceDefinition: no $ref, a type on every node, no `additionalProperties: false`,
// nullable instead of a null type. Apart from the CRD objects (crd.ts): the conversion and
// its check are read, and tested, on their own. Pure functions.
import { allSchemas, type JsonSchema } from './index.js';

export type Schema = Record<string, unknown>;

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
export function resolveRef(ref: string, index: SchemaIndex): Schema {
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
