// Generates schemas/types.generated.ts from schemas/*.json (npm run generate:types).
// All schemas become $defs of one document so that each type is emitted once.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile } from 'json-schema-to-typescript';

const here = dirname(fileURLToPath(import.meta.url));
export const generatedPath = join(here, 'types.generated.ts');

type Schema = Record<string, unknown>;

function rewriteRefs(node: unknown, titles: Map<string, string>): unknown {
  if (Array.isArray(node)) return node.map((n) => rewriteRefs(n, titles));
  if (node === null || typeof node !== 'object') return node;
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$id') continue;
    if (key === '$ref' && typeof value === 'string') {
      const title = titles.get(value.replace(/#$/, ''));
      if (!title) throw new Error(`unresolved $ref ${value}`);
      out.$ref = `#/$defs/${title}`;
    } else out[key] = rewriteRefs(value, titles);
  }
  return out;
}

export async function generateTypes(): Promise<string> {
  const files = readdirSync(here).filter((f) => f.endsWith('.json')).sort();
  const schemas = files.map((f) => JSON.parse(readFileSync(join(here, f), 'utf8')) as Schema);
  const titles = new Map(schemas.map((s) => [s.$id as string, s.title as string]));
  const $defs = Object.fromEntries(schemas.map((s) => [s.title as string, rewriteRefs(s, titles)]));
  return compile({ title: 'Schemas', type: 'object', $defs } as never, 'Schemas', {
    bannerComment: '/* Generated from schemas/*.json by `npm run generate:types`. Do not edit. */',
    unreachableDefinitions: true,
    additionalProperties: false,
    style: { singleQuote: true },
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(generatedPath, await generateTypes());
  console.log(`wrote ${generatedPath}`);
}
