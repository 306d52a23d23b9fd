// The summary table of bench/run.sh: one row per figure of each benchmark that ran.
//   node --import tsx bench/summary.ts RESULTS_DIR [failed part ...]
import { readdirSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { readSummary, table } from './lib.js';

const [dir, ...failed] = process.argv.slice(2);
if (!dir) throw new Error('usage: summary.ts RESULTS_DIR [failed part ...]');
const order = ['dry-run', 'admission', 'local-run'];
const results = readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => readSummary(join(dir, f)))
  .sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));

const rows = results.flatMap((r) => r.rows.map((row) => [row.bench, row.metric, row.value, row.goal || '—', row.verdict, r.load]));
for (const part of failed) rows.push([part, '(did not finish)', '—', '—', 'FAILED', '—']);
process.stdout.write([
  '',
  `## Summary (${new Date().toISOString().slice(0, 10)}, ${cpus().length} cores, Node ${process.versions.node})`,
  '',
  table(['bench', 'metric', 'value', 'goal', 'verdict', 'load avg (1/5/15 min) at end'], rows),
  '',
].join('\n'));
