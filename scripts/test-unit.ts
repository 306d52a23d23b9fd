// The fast tier (`npm run test:unit`): unit and component tests, no cluster, no Spark, no service
// process and no waits on real time. The files run in a few processes (scripts/test-unit-batch.ts
// imports several files in one), two at a time: a file in a process of its own spends about a
// second of CPU starting tsx and tap, most of what this tier's files cost. `--per-file` runs each
// file in its own process, as the whole suite (scripts/test.sh) does. Ends with
// "N passed, N failed[, N skipped]" (top-level tests, as scripts/test.sh counts them).
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Folders whose every test is fast, and fast files of folders that also hold end-to-end tests.
 * The longest first (a fuzz, real HTTPS and websockets, Helm), so that none is left to run alone at the end.
 */
const TIER = [
  'test/webhook/review-fuzz.test.ts', 'test/webhook/server.test.ts', 'test/gateway/session-caps.test.ts', 'test/manifests/isolation.test.ts',
  'test/unit', 'test/domain', 'test/controller', 'test/lib',
  'test/api/cluster-errors.test.ts', 'test/auth/key-store.test.ts', 'test/auth/plugin.test.ts', 'test/certs/certs.test.ts',
  'test/connect/connect-gate-conf.test.ts', 'test/connect/connect-logic.test.ts', 'test/connect/orphan-sweep.test.ts', 'test/gateway/chart.test.ts', 'test/gateway/gateway-logic.test.ts', 'test/gateway/launch-timeout.test.ts',
  'test/gateway/lifecycle.test.ts', 'test/history/event-log-claims.test.ts', 'test/history/history-cache.test.ts', 'test/history/history-units.test.ts',
  'test/history/kubernetes-units.test.ts', 'test/history/log-timestamps.test.ts', 'test/history/remote-spark-static.test.ts',
  'test/history/sandbox-event-log.test.ts', 'test/history/recorded-app-ids.test.ts', 'test/local/log-cap.test.ts', 'test/local/log-budget.test.ts', 'test/manifests/crds.test.ts',
  'test/schemas/generated-types.test.ts', 'test/webhook/admission-log.test.ts', 'test/webhook/captured-reviews.test.ts',
  'test/webhook/executor-guard.test.ts', 'test/webhook/review.test.ts',
];
/** A hang guard per file, not a budget: the slowest (the fuzz) took 34 s beside a load of 16. */
const FILE_TIMEOUT_MS = 120_000;
/** Processes per job: a few, so that a slow batch does not leave the other job idle at the end. */
const BATCHES_PER_JOB = 2;

interface FileResult { file: string; code: number | null; output: string; seconds: number; pass: number; fail: number; skip: number }

function testFiles(paths: string[]): string[] {
  return paths.flatMap((path) => statSync(path).isDirectory()
    ? readdirSync(path).filter((name) => name.endsWith('.test.ts')).sort().map((name) => join(path, name))
    : [path]);
}

/** Top-level tests of a file's TAP output: a file run directly prints them unindented. */
function count(output: string): Pick<FileResult, 'pass' | 'fail' | 'skip'> {
  const lines = output.split('\n');
  const skip = lines.filter((l) => /^(not )?ok \d+ - .*# (SKIP|TODO)/.test(l)).length;
  const pass = lines.filter((l) => /^ok \d+ - /.test(l)).length;
  const fail = lines.filter((l) => /^not ok \d+ - /.test(l)).length;
  return { pass: pass - skip, fail, skip };
}

/** `files` in one process: one file as it is, several through test-unit-batch.ts. */
function runFiles(files: string[]): Promise<FileResult> {
  const started = performance.now();
  const timeoutMs = FILE_TIMEOUT_MS * files.length;
  const batch = files.length > 1;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', batch ? join('scripts', 'test-unit-batch.ts') : files[0]!], {
      stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs, killSignal: 'SIGKILL',
      // tap's own guard, 30 s when a file runs on its own, would end a file early on a busy machine: ours is above.
      env: { ...process.env, TAP_TIMEOUT: String(timeoutMs / 1000), ...(batch ? { TEST_UNIT_FILES: files.join('\n') } : {}) },
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString('utf8'); });
    child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString('utf8'); });
    child.on('close', (code) => resolve({ file: files.join(' '), code, output, seconds: (performance.now() - started) / 1000, ...count(output) }));
  });
}

/** The files dealt round-robin into `count` batches: the tier lists its longest first, so each batch gets one of them. */
function batches(files: string[], count: number): string[][] {
  const dealt: string[][] = Array.from({ length: Math.min(count, files.length) }, () => []);
  files.forEach((file, i) => dealt[i % dealt.length]!.push(file));
  return dealt;
}

async function runAll(groups: string[][], jobs: number): Promise<FileResult[]> {
  const results: FileResult[] = [];
  const waiting = [...groups];
  const worker = async () => {
    for (let files = waiting.shift(); files !== undefined; files = waiting.shift()) {
      const result = await runFiles(files);
      const failed = result.code !== 0;
      if (failed) process.stdout.write(`${result.output}\n`);
      const what = files.length === 1 ? files[0] : `${files.length} files (${files.map((f) => f.replace(/^test\//, '')).join(', ')})`;
      process.stdout.write(`${failed ? 'not ok' : 'ok'} - ${what} (${result.pass} passed, ${result.fail} failed, ${result.seconds.toFixed(1)} s)\n`);
      results.push(result);
    }
  };
  await Promise.all(Array.from({ length: jobs }, worker));
  return results;
}

const args = process.argv.slice(2);
const jobsArg = args.find((a) => a.startsWith('--jobs='));
const jobs = Math.max(1, Number(jobsArg?.slice('--jobs='.length) ?? 2));
const perFile = args.includes('--per-file');
const named = args.filter((a) => a !== jobsArg && a !== '--per-file');
const files = testFiles(named.length > 0 ? named : TIER);
const started = performance.now();
const results = await runAll(perFile ? files.map((file) => [file]) : batches(files, jobs * BATCHES_PER_JOB), jobs);
// A file that fails outside its tests (a crash before or between them) counts as one more failure.
const fail = results.reduce((sum, r) => sum + (r.fail > 0 ? r.fail : r.code !== 0 ? 1 : 0), 0);
const pass = results.reduce((sum, r) => sum + r.pass, 0);
const skip = results.reduce((sum, r) => sum + r.skip, 0);
for (const r of results) {
  if (r.code === 0) continue;
  // A batch names its failed tests ("FILE > test"); a file on its own, itself.
  const failedTests = r.output.split('\n').filter((l) => /^not ok \d+ - /.test(l)).map((l) => l.replace(/^not ok \d+ - | # time=.*$/g, ''));
  for (const name of failedTests.length > 0 && r.file.includes(' ') ? failedTests : [r.file]) process.stdout.write(`failed: ${name}\n`);
}
process.stdout.write(`${files.length} files in ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
process.stdout.write(`${pass} passed, ${fail} failed${skip > 0 ? `, ${skip} skipped` : ''}\n`);
process.exitCode = fail > 0 ? 1 : 0;
