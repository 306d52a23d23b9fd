// What the benches' smoke tests share (test/bench/smoke-*.test.ts): every benchmark runs as
// bench/README.md says, with tiny counts; it exits 0 and prints its figures (a Markdown table row
// with a number). A bench that needs what this machine lacks is skipped, saying what. The benches
// are split over four files so that they run among the files that run together, two at a time,
// instead of 380 s one after another at the end of the suite.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { testbedArgs } from '../../testbed/entry.js';
import { repoRoot } from './api.js';
import { realSpark, sparkEnv } from './service.js';
import { tempDir } from './temp.js';
import { toolsEnv } from '../gateway/jupyter.js';
import { connectClientPython } from '../connect/connect-client.js';

const execFileAsync = promisify(execFile);

type Need = 'spark' | 'tools' | 'testbed' | 's3' | 'chromium' | 'airflow' | 'connect';

/**
 * figures: what its output shows when it measured something (default: a Markdown table row with a number).
 * sharedBed: runs on the file's one `testbed up` (BENCH_TESTBED_DIR, bench/kubernetes/testbed.ts) instead of its own.
 */
interface Bench { file: string; env: Record<string, string>; needs?: Need[]; args?: string[]; figures?: RegExp; sharedBed?: boolean }

const ALL_BENCHES: Bench[] = [
  { file: 'admission.ts', env: { ADMISSION_ROUNDS: '1', ADMISSION_ROUND_MS: '100', ADMISSION_WARMUP_MS: '100' } },
  { file: 'dry-run.ts', env: { DRY_RUN_ROUNDS: '1', DRY_RUN_SECONDS: '1', DRY_RUN_WARMUP_SECONDS: '1', DRY_RUN_CONNECTIONS: '2' } },
  { file: 'sizing.ts', env: { SIZING_CALLS: '200', SIZING_LOG_MB: '1' }, figures: /Added p99: \*\*-?[\d,.]+ µs/ },
  { file: 'events-resume.ts', env: { BENCH_EVENTS: '200' }, figures: /RSS before \d+ MiB, peak \d+ MiB/ },
  // The service's run only: its plain and exact spark-submit peers are two more Spark runs that prove nothing of the bench's own.
  { file: 'local-run.ts', env: { LOCAL_RUNS: '1', LOCAL_WARMUP: '0', LOCAL_PEERS: '0' }, needs: ['spark'] },
  // Two of everything that the bench opens several of at once (dashboards, log viewers), one timed load.
  { file: 'dashboard/dashboard.ts', env: { BENCH_APPS: '20', BENCH_IDLE_S: '1', BENCH_LOG_MB: '1', BENCH_RENDERS: '1', BENCH_DASHBOARDS: '2', BENCH_VIEWERS: '2' }, needs: ['chromium'], figures: /"firstRenderMs": \{\s*"median": \d+/ },
  // Two kernels a side at once (and in each of the ceiling's two rounds), not six: still several
  // kernels executing together; each more was about 2 s of CPU (its start, the peer's or ours).
  { file: 'gateway/compare.ts', env: { GW_STARTS: '1', GW_EXECS: '5', GW_KERNELS: '2', GW_KERNEL_EXECS: '2', GW_SC: '1', GW_CLAIMS: '1' }, needs: ['spark', 'tools'] },
  // One version, its warm pool's server only (no cold session): one Spark driver; one round (each
  // path's client once for the small queries and once for Arrow: four client processes, not six).
  { file: 'connect.ts', env: { CONNECT_VERSIONS: '3.5.7', CONNECT_COLD: '0', CONNECT_QUERIES: '4', CONNECT_ROUNDS: '1', CONNECT_ARROW_MB: '1' }, needs: ['spark', 'connect'] },
  // One round of one variant, one session: one Spark driver (the pool's), one client process.
  { file: 'connect-first.ts', env: { FIRST_VERSION: '3.5.7', FIRST_ROUNDS: '1', FIRST_SESSIONS: '1', FIRST_VARIANTS: 'direct', FIRST_HEAVY: '0' }, needs: ['spark', 'connect'] },
  { file: 'connect-relay.ts', env: { CONNECT_RELAY_CALLS: '20', CONNECT_RELAY_ROUNDS: '1', CONNECT_RELAY_CONCURRENCY: '2' } },
  { file: 'gateway/memory-probes.ts', env: { GW_MEM_FRAMES: '5', GW_MEM_OUTPUTS: '5' }, needs: ['spark'] },
  { file: 'airflow/deferrable.ts', env: { BENCH_TASKS: '2', BENCH_HOLD_S: '2', BENCH_POLL_S: '1' }, needs: ['airflow'] },
  { file: 'airflow/scheduled.ts', env: { BENCH_TASKS: '2', BENCH_HOLD_S: '2' }, needs: ['airflow'] },
  { file: 'history/driver-log.ts', env: { LOG_MB: '1' }, needs: ['spark'] },
  // 400 tasks: a log over 1 MiB, the least the service warms (replays) at a run's end, which the bench waits for.
  // No timed short run (HISTORY_APPS 0): the untimed one that starts the History Server goes the
  // same way (submit, its end in the events stream, its history answering), and each is a Spark run.
  { file: 'history/history-ui.ts', env: { HISTORY_APPS: '0', HISTORY_TASKS: '400' }, needs: ['spark', 'chromium'] },
  { file: 'history/driver-log-kubernetes.ts', env: { LOG_MB: '1', LOG_SECONDS: '0' }, needs: ['spark', 'testbed', 's3'] },
  { file: 'kubernetes/controller-ceiling.ts', env: { CEILING_COUNT: '5', CEILING_CONCURRENCY: '2', CEILING_ROUNDS: '1' }, needs: ['testbed'], sharedBed: true },
  { file: 'kubernetes/list-latency.ts', env: { LIST_COUNT: '20', LIST_READS: '10' }, needs: ['testbed'], sharedBed: true },
  { file: 'kubernetes/submissions.ts', env: { SUBMIT_CONCURRENCY: '2', SUBMIT_MAX: '4', SUBMIT_SECONDS: '1', SUBMIT_SPARK_RUNS: '1', SUBMIT_SEQUENTIAL: '2' }, needs: ['spark', 'testbed'], sharedBed: true },
  { file: 'kubernetes/webhook-latency.ts', env: { WEBHOOK_BLOCKS: '1', WEBHOOK_BLOCK_SIZE: '3', WEBHOOK_CONCURRENCY: '1' }, needs: ['testbed'], sharedBed: true },
];

const present: Record<Need, () => boolean> = {
  spark: () => realSpark() !== undefined,
  tools: () => toolsEnv() !== undefined,
  testbed: () => Boolean(process.env.SUBMISSION_SERVICE_TESTBED && existsSync(process.env.SUBMISSION_SERVICE_TESTBED)),
  s3: () => Boolean(process.env.SUBMISSION_SERVICE_S3_SERVER && existsSync(process.env.SUBMISSION_SERVICE_S3_SERVER)),
  chromium: () => existsSync(process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'),
  airflow: () => Boolean(sparkEnv().SUBMISSION_SERVICE_AIRFLOW_ENV),
  connect: () => connectClientPython('3.5.7') !== undefined,
};

const missing = (bench: Bench): string | false => {
  const lacking = (bench.needs ?? []).filter((need) => !present[need]());
  return lacking.length ? `needs ${lacking.join(', ')} (scripts/test.sh sets them up)` : false;
};

function run(bench: Bench, resultsDir: string, bedDir?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((ok) => {
    const env = { ...sparkEnv(), LOG_LEVEL: 'warn', BENCH_RESULTS_DIR: resultsDir, ...(bedDir ? { BENCH_TESTBED_DIR: bedDir } : {}), ...bench.env };
    const child = spawn(process.execPath, ['--import', 'tsx', join('bench', bench.file), ...(bench.args ?? [])], {
      cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => { stdout += chunk; });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    child.once('exit', (code) => ok({ code, stdout, stderr }));
  });
}

/**
 * The file's one `testbed up` for its sharedBed benches, booted when the first of them runs (none
 * when all are skipped) and stopped at the file's end: each of them booting its own (the control
 * plane, the service, its webhook and notebook gateway, each under tsx) cost most of their CPU.
 */
function sharedBed(): () => Promise<string> {
  let booted: Promise<string> | undefined;
  return () => {
    booted ??= (async () => {
      const dir = mkdtempSync(join(tmpdir(), 'subsvc-bench-bed-'));
      const env = { ...sparkEnv(), LOG_LEVEL: 'warn' };
      // `down` before the directory goes: it finds the running bed by the state file in it.
      t.teardown(async () => {
        await execFileAsync(process.execPath, testbedArgs(['down', '--dir', dir]), { env, timeout: 120_000 }).catch(() => undefined);
        rmSync(dir, { recursive: true, force: true });
      });
      await execFileAsync(process.execPath, testbedArgs(['up', '--node-pools', join(repoRoot, 'examples', 'example-cluster.json'), '--dir', dir]), { env, timeout: 10 * 60_000 });
      return dir;
    })();
    return booted;
  };
}

/** One bench's hang guard, in minutes: a bench with tiny counts takes 1–9 minutes on a busy two-core machine. */
const BENCH_GUARD_MIN = 15;

/** The benches whose file is one of `files` (their paths under bench/), each a test of its own. */
export function smokeTests(files: string[]): void {
  const benches = ALL_BENCHES.filter((bench) => files.includes(bench.file));
  const unknown = files.filter((file) => !benches.some((bench) => bench.file === file));
  if (unknown.length > 0) throw new Error(`no smoke settings for ${unknown.join(', ')}`);
  // Hang guards per bench, and for the file their sum: the runner's one guard per file (.taprc)
  // is not enough for three to nine benches one after another on a busy machine (smoke-browser's
  // three took over 1,200 s at load 35–45 beside two CPU hogs and other work).
  t.setTimeout((benches.length * BENCH_GUARD_MIN + 5) * 60_000);
  const bed = sharedBed();
  for (const bench of benches) {
    t.test(`bench/${bench.file} with tiny counts exits 0 and prints its figures`, { skip: missing(bench), timeout: BENCH_GUARD_MIN * 60_000 }, async (t) => {
      const { code, stdout, stderr } = await run(bench, tempDir(t, 'subsvc-bench-'), bench.sharedBed ? await bed() : undefined);
      t.equal(code, 0, 'exit code 0', { stderr: stderr.slice(-3000) });
      t.match(stdout, bench.figures ?? /^\|.*\d.*\|\s*$/m, 'its figures', { stderr: stderr.slice(-3000) });
    });
  }
}
