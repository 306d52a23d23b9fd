// The overrides annotation checked against the same JSON Schema the API validates
// configOverrides with, so a pod written by hand (or by an older API) is refused by the
// webhook exactly where the API would refuse it: a 400 naming the field, never a 500.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { allSchemas, schemaIds } from '../schemas/index.js';

let compiled: ValidateFunction | undefined;
/**
 * Compiled at the first check, not at import: compiling the schemas costs about 0.4 s of CPU, which
 * every process importing the domain (the CLI's other commands, each test file) paid for nothing.
 */
function validator(): ValidateFunction {
  if (!compiled) {
    const ajv = new Ajv({ allErrors: false, strict: false, coerceTypes: false, useDefaults: false, removeAdditional: false });
    for (const schema of allSchemas) ajv.addSchema(schema);
    compiled = ajv.getSchema(schemaIds.applicationConfig)!;
  }
  return compiled;
}

/** The first schema violation, as `{field, message}` with the path a person finds in their body. */
export function overridesSchemaError(overrides: unknown): { field: string; message: string } | undefined {
  const validate = validator();
  if (validate(overrides)) return undefined;
  const issue = validate.errors![0] as ErrorObject;
  const path = ['configOverrides', ...issue.instancePath.split('/').filter(Boolean).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))];
  if (issue.keyword === 'additionalProperties') path.push(String(issue.params.additionalProperty));
  if (issue.keyword === 'required') path.push(String(issue.params.missingProperty));
  const field = path.join('.');
  const message =
    issue.keyword === 'additionalProperties' ? `field "${field}" is not allowed (unknown field)`
    : issue.keyword === 'required' ? `field "${field}" is required`
    : `field "${field}" ${issue.message ?? 'is invalid'}`;
  return { field, message };
}
