// Writes the generated chart files: npx tsx manifests/generate.ts
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatedFiles } from './chart-files.js';

const chart = join(dirname(fileURLToPath(import.meta.url)), 'chart');
for (const file of generatedFiles()) {
  const path = join(chart, file.path);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, file.text);
  process.stdout.write(`wrote ${path}\n`);
}
