// Local-run overhead: examples/pi.py 2 submitted to `submission-service local` (the built
// CLI, as a child process) against plain `spark-submit --master local[2] examples/pi.py 2`,
// and against the exact command line the service ran (so that the service's machinery and
// the Spark settings admission adds can be told apart). Runs alternate service / plain /
// exact, LOCAL_RUNS times each, after one untimed warm-up run.
//
// Per service run:
//   POST answer       the POST's response time
//   → RUNNING         record.startedAt − POST start (the driver was spawned then)
//   → exit            mtime of the exit-code file the driver wrapper writes − POST start
//   → COMPLETED       first GET (polled every LOCAL_POLL_MS) showing COMPLETED − POST start
//   → log follow end  when GET /log?follow=true (opened right after the POST) ends − POST start
//
//   node --import tsx bench/local-run.ts    (needs dist/: npx tsc -p . ; and pyspark: scripts/setup.sh)
//   env: LOCAL_RUNS (4), LOCAL_POLL_MS (20), LOCAL_TIMEOUT_S (180), LOCAL_WARMUP (1), LOCAL_PEERS (1; 0: no plain/exact runs)
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { localDriverCommand } from '../cluster/local/spark-command.js';
import type { StoredApp } from '../cluster/local/record-store.js';
import { freePort } from '../lib/free-port.js';
import { envNumber, fmt, load, median, NODE_POOLS, ROOT, saveSummary, sleep, stopChild, table } from './lib.js';
import { sparkEnv } from '../test/helpers/service.js';

const RUNS = envNumber('LOCAL_RUNS', 4);
const POLL_MS = envNumber('LOCAL_POLL_MS', 20);
const WARMUP = envNumber('LOCAL_WARMUP', 1); // 0: no warm-up run (the smoke test's tiny run)
// 0: the service's runs only, without the plain and exact spark-submit beside each (the smoke test,
// which proves the bench runs: two Spark runs less; their figures print as n/a).
const PEERS = process.env.LOCAL_PEERS !== '0';
const TIMEOUT_MS = envNumber('LOCAL_TIMEOUT_S', 180) * 1000;
const GOAL_S = 0.3;
const CORES = 2;
const PI = join(ROOT, 'examples', 'pi.py');

function pythonEnv(): string {
  // Sourced, else read from the env file setup wrote (its name depends on its contents).
  const venv = sparkEnv().SUBMISSION_SERVICE_PYTHON_ENV;
  if (!venv || !existsSync(join(venv, 'bin', 'spark-submit'))) throw new Error('pyspark not found: run scripts/setup.sh and source the env file it prints');
  return venv;
}

const VENV = pythonEnv();
const SPARK_SUBMIT = join(VENV, 'bin', 'spark-submit');
const PYTHON = join(VENV, 'bin', 'python');
// The same Python for driver and workers as the service gives its drivers (cli/config.ts findSpark).
const SPARK_ENV = { ...process.env, SUBMISSION_SERVICE_PYTHON_ENV: VENV, PYSPARK_PYTHON: PYTHON, PYSPARK_DRIVER_PYTHON: PYTHON };

const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
/** CPU seconds (user + system, the whole process tree) of runs made through /usr/bin/time. */
const cpuSeconds: Record<string, number[]> = { plain: [], exact: [] };

/** Runs a command to its end; returns wall milliseconds. Output goes to logFile. */
async function timedRun(kind: 'plain' | 'exact' | 'warmup', command: string, args: string[], env: NodeJS.ProcessEnv, logFile: string, cwd: string): Promise<number> {
  const log = openSync(logFile, 'w');
  const timeFile = `${logFile}.time`;
  const start = performance.now();
  try {
    const [cmd, argv] = TIME ? [TIME, ['-o', timeFile, '-f', '%U %S', command, ...args]] : [command, args];
    const child = spawn(cmd, argv, { env, cwd, stdio: ['ignore', log, log] });
    const code = await new Promise<number | null>((ok, fail) => {
      const timer = setTimeout(() => { child.kill('SIGKILL'); fail(new Error(`${command} took over ${TIMEOUT_MS} ms`)); }, TIMEOUT_MS);
      child.once('error', fail);
      child.once('exit', (c) => { clearTimeout(timer); ok(c); });
    });
    if (code !== 0) throw new Error(`${command} exited with ${code}; see ${logFile}`);
    const wall = performance.now() - start;
    if (TIME && kind !== 'warmup') {
      const [user, system] = readFileSync(timeFile, 'utf8').trim().split('\n').at(-1)!.split(' ').map(Number);
      cpuSeconds[kind].push(user + system);
    }
    return wall;
  } finally {
    closeSync(log);
  }
}

interface ServiceRun { post: number; running: number; exit: number; endedAt: number; completed: number; followEnd: number; appName: string }

class Service {
  private child?: ChildProcess;
  readonly dataDir = mkdtempSync(join(tmpdir(), 'bench-local-run-'));
  base = '';

  async start(): Promise<void> {
    if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) throw new Error('dist/ is missing: npx tsc -p . (or bash bench/run.sh)');
    const port = await freePort();
    this.base = `http://127.0.0.1:${port}`;
    this.child = spawn(process.execPath, [join(ROOT, 'bin', 'submission-service.js'), 'local', '--port', String(port),
      '--data-dir', this.dataDir, '--node-pools', NODE_POOLS, '--cores', String(CORES)], {
      cwd: ROOT, env: { ...SPARK_ENV, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'inherit'],
    });
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(100)) {
      if (this.child.exitCode !== null) throw new Error(`the service exited with ${this.child.exitCode}`);
      if (await fetch(`${this.base}/healthz`).then((r) => r.ok, () => false)) return;
    }
    throw new Error('the service did not answer /healthz within 30 s');
  }

  async run(): Promise<ServiceRun> {
    const wallStart = Date.now();
    const start = performance.now();
    const since = () => performance.now() - start;
    const response = await fetch(`${this.base}/api/apps/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jobName: 'bench-pi', configOverrides: { mainApplicationFile: `local://${PI}`, arguments: ['2'] } }),
    });
    const post = since();
    const created = await response.json() as { appName: string };
    if (response.status !== 201) throw new Error(`POST answered ${response.status}: ${JSON.stringify(created)}`);
    const { appName } = created;
    const follow = fetch(`${this.base}/api/apps/${appName}/log?follow=true`).then((r) => r.text()).then(() => since());
    let completed = Number.NaN;
    let record: { state: string; startedAt: string | null; endedAt: string | null } | undefined;
    for (;;) {
      record = await (await fetch(`${this.base}/api/apps/${appName}`)).json() as typeof record;
      if (record && ['COMPLETED', 'FAILED', 'KILLED', 'UNKNOWN'].includes(record.state)) { completed = since(); break; }
      if (since() > TIMEOUT_MS) throw new Error(`${appName} did not end within ${TIMEOUT_MS} ms`);
      await sleep(POLL_MS);
    }
    if (record.state !== 'COMPLETED') throw new Error(`${appName} ended ${record.state}; see ${join(this.dataDir, 'logs', `${appName}.log`)}`);
    const followEnd = await follow;
    const exitFile = join(this.dataDir, 'run', `${appName}.exit`);
    return {
      appName, post, completed, followEnd,
      running: Date.parse(record.startedAt!) - wallStart,
      endedAt: Date.parse(record.endedAt!) - wallStart,
      exit: existsSync(exitFile) ? statSync(exitFile).mtimeMs - wallStart : Number.NaN,
    };
  }

  /** The command line and environment the service gave a driver, rebuilt from its stored pod. */
  command(appName: string): { command: string; args: string[]; env: Record<string, string> } {
    const stored = JSON.parse(readFileSync(join(this.dataDir, 'apps', `${appName}.json`), 'utf8')) as StoredApp;
    const workDir = mkdtempSync(join(tmpdir(), 'bench-exact-'));
    return localDriverCommand(stored.pod, { sparkSubmit: SPARK_SUBMIT, python: PYTHON, workDir }, CORES);
  }

  async stop(): Promise<void> {
    if (this.child) await stopChild(this.child);
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const service = new Service();
  const scratch = mkdtempSync(join(tmpdir(), 'bench-plain-'));
  try {
    await service.start();
    const plainArgs = ['--master', `local[${CORES}]`, PI, '2'];
    if (WARMUP) {
      process.stderr.write(`local-run: warm-up (plain spark-submit), load ${load()}\n`);
      await timedRun('warmup', SPARK_SUBMIT, plainArgs, SPARK_ENV, join(scratch, 'warmup.log'), scratch);
    }
    const runs: ServiceRun[] = [];
    const plain: number[] = [];
    const exact: number[] = [];
    let exactCommand: ReturnType<Service['command']> | undefined;
    for (let i = 1; i <= RUNS; i++) {
      process.stderr.write(`local-run: round ${i}/${RUNS}: service, plain, exact command (load ${load()})\n`);
      const run = await service.run();
      runs.push(run);
      exactCommand ??= service.command(run.appName);
      if (PEERS) {
        plain.push(await timedRun('plain', SPARK_SUBMIT, plainArgs, SPARK_ENV, join(scratch, `plain-${i}.log`), scratch));
        exact.push(await timedRun('exact', exactCommand.command, exactCommand.args, { ...SPARK_ENV, ...exactCommand.env }, join(scratch, `exact-${i}.log`), ROOT));
      }
      process.stderr.write(`local-run:   service ${fmt(run.completed)} ms, plain ${fmt(plain.at(-1)!)} ms, exact ${fmt(exact.at(-1)!)} ms\n`);
    }
    report(runs, plain, exact, exactCommand!);
  } finally {
    await service.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

function report(runs: ServiceRun[], plain: number[], exact: number[], command: { command: string; args: string[] }): void {
  const m = (pick: (r: ServiceRun) => number) => median(runs.map(pick));
  const completed = m((r) => r.completed);
  const overhead = completed - median(plain);
  const s = (ms: number) => fmt(ms / 1000, 3);
  const lines = [
    `## Local run: examples/pi.py 2 (${RUNS} runs each, alternating; GET polled every ${POLL_MS} ms; load ${load()})`,
    '',
    table(['run', 'POST answer', '→ RUNNING (startedAt)', '→ driver exit (exit file)', '→ endedAt', '→ COMPLETED seen (poll)', '→ log follow end', 'plain spark-submit', 'exact service command'],
      runs.map((r, i) => [i + 1, s(r.post), s(r.running), s(r.exit), s(r.endedAt), s(r.completed), s(r.followEnd), s(plain[i]), s(exact[i])])),
    '',
    'Seconds from the start of the POST. Medians:',
    '',
    table(['measure', 'median s'], [
      ['(a) POST → driver started (RUNNING startedAt)', s(m((r) => r.running))],
      ['(b) POST → COMPLETED (poll)', s(completed)],
      ['(b\') POST → log follow ends', s(m((r) => r.followEnd))],
      ['(c) plain `spark-submit --master local[2] examples/pi.py 2`', s(median(plain))],
      ['(d) the exact command the service ran, run directly', s(median(exact))],
      ['(c) and (d): fastest run', `${s(Math.min(...plain))} and ${s(Math.min(...exact))} (service: ${s(Math.min(...runs.map((r) => r.completed)))})`],
      ['(c) and (d): CPU seconds, user + system (median)', `${fmt(median(cpuSeconds.plain), 2)} and ${fmt(median(cpuSeconds.exact), 2)}`],
      ['**overhead (b) − (c)**', `**${s(overhead)}** (goal ≤ ${GOAL_S})`],
      ['of which: Spark settings admission adds, (d) − (c)', s(median(exact) - median(plain))],
      ['of which: the service around the process, (b) − (d)', s(completed - median(exact))],
      ['driver exit → COMPLETED recorded (endedAt − exit file)', s(m((r) => r.endedAt - r.exit))],
      ['COMPLETED recorded → seen by the poll', s(m((r) => r.completed - r.endedAt))],
    ]),
    '',
    'The exact command (from the stored admitted pod, via localDriverCommand):',
    '',
    '```',
    [command.command, ...command.args].join(' ').replaceAll(' --', ' \\\n  --'),
    '```',
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  saveSummary('local-run', [
    { bench: 'local-run', metric: '(a) POST → driver started', value: `${s(m((r) => r.running))} s`, goal: '', verdict: 'info' },
    { bench: 'local-run', metric: '(b) POST → COMPLETED', value: `${s(completed)} s`, goal: '', verdict: 'info' },
    { bench: 'local-run', metric: '(c) plain spark-submit', value: `${s(median(plain))} s`, goal: '', verdict: 'info' },
    { bench: 'local-run', metric: '(d) exact service command, run directly', value: `${s(median(exact))} s`, goal: '', verdict: 'info' },
    { bench: 'local-run', metric: 'overhead (b) − (c)', value: `${s(overhead)} s`, goal: `≤ ${GOAL_S} s`, verdict: overhead <= GOAL_S * 1000 ? 'ok' : 'above goal' },
  ], { runs, plain, exact, cpuSeconds, command });
}

await main();
