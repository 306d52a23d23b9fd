// schemas/types.generated.ts must be what `npm run generate:types` makes from schemas/*.json
// today: a schema edited without regenerating fails here.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { generatedPath, generateTypes } from '../../schemas/generate-types.js';
import { allSchemas } from '../../schemas/index.js';

t.test('the committed types equal freshly generated ones', async (t) => {
  const fresh = await generateTypes();
  const committed = readFileSync(generatedPath, 'utf8');
  t.ok(fresh.length > 0, 'the generator produces output');
  t.equal(committed, fresh, 'schemas/types.generated.ts is up to date (run npm run generate:types)');
});

t.test('every schema title becomes an exported type', async (t) => {
  const committed = readFileSync(generatedPath, 'utf8');
  for (const schema of allSchemas) {
    t.match(committed, new RegExp(`export (?:interface|type) ${schema.title}\\b`), `${schema.title} is exported`);
  }
});
