// Two Ajv instances from the same schemas: bodies are validated exactly (no type
// coercion, unknown fields refused), query strings and params with coercion ("?limit=5").
import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance, FastifySchema } from 'fastify';
import { allSchemas } from '../schemas/index.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

function makeAjv(options: Options): Ajv {
  const ajv = new Ajv({ allErrors: false, strict: false, ...options });
  addFormats(ajv);
  for (const schema of allSchemas) ajv.addSchema(schema);
  return ajv;
}

export function installValidation(app: FastifyInstance): void {
  const exact = makeAjv({ coerceTypes: false, removeAdditional: false, useDefaults: false });
  const lenient = makeAjv({ coerceTypes: true, removeAdditional: false, useDefaults: true });
  for (const schema of allSchemas) app.addSchema(schema);
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? exact : lenient;
    return ajv.compile(schema as FastifySchema & object);
  });
}

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
/** With the u flag, a surrogate range matches only a half of a pair that has no other half. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
// Module-level: unsafeField recurses into every value of every body.
const fieldName = (path: string[]) => path.join('.') || 'body';

/**
 * What JSON Schema cannot say about a body: keys that would reach an object's prototype when
 * merged, and strings with lone UTF-16 surrogates (not text: they cannot be stored as UTF-8).
 * Returns the first offending field and why.
 */
export function unsafeField(value: unknown, path: string[] = []): { field: string; message: string } | undefined {
  if (typeof value === 'string') {
    return LONE_SURROGATE.test(value) ? { field: fieldName(path), message: `field "${fieldName(path)}" holds a lone UTF-16 surrogate (not valid text)` } : undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, child] of Object.entries(value)) {
    const here = [...path, key];
    if (FORBIDDEN_KEYS.has(key)) return { field: fieldName(here), message: `field "${fieldName(here)}": the key "${key}" is not allowed` };
    if (LONE_SURROGATE.test(key)) return { field: fieldName(here), message: `field "${fieldName(path)}" has a key with a lone UTF-16 surrogate (not valid text)` };
    const found = unsafeField(child, here);
    if (found) return found;
  }
  return undefined;
}
