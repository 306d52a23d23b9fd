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
