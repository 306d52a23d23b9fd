// Small helpers shared by the benchmarks: statistics, child servers, result files.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
export const ROOT = resolve(BENCH_DIR, '..');
/** The example cluster of SPEC.md (three pools: 2, 4, 8 cores). */
export const NODE_POOLS = process.env.BENCH_NODE_POOLS ?? resolve(ROOT, 'examples', 'example-cluster.json');

export const envNumber = (name: string, fallback: number): number => {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? Number.NaN : Number(raw);
  return Number.isFinite(value) && value > 0 ? value : fallback;
};

export const sleep = (ms: number) => new Promise<void>((ok) => setTimeout(ok, ms));

export function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Nearest-rank percentile (p in 0..100) of an already sorted array. */
export function percentileSorted(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

export const fmt = (value: number, digits = 0): string =>
  Number.isFinite(value) ? value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : 'n/a';

export const load = (): string => loadavg().map((l) => l.toFixed(2)).join(' ');

/** Markdown table from a header and rows. */
export function table(header: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/** One line of run.sh's summary table. */
export interface SummaryRow {
  bench: string;
  metric: string;
  value: string;
  goal: string;
  verdict: 'ok' | 'below goal' | 'above goal' | 'info';
}

/** Writes this benchmark's summary rows where run.sh collects them (BENCH_RESULTS_DIR). */
export function saveSummary(name: string, rows: SummaryRow[], details: unknown): void {
  const dir = process.env.BENCH_RESULTS_DIR ?? join(tmpdir(), 'submission-service-bench');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${name}.json`), JSON.stringify({ name, date: new Date().toISOString(), load: load(), rows, details }, null, 2));
}

export function readSummary(file: string): { name: string; date: string; load: string; rows: SummaryRow[] } {
  return JSON.parse(readFileSync(file, 'utf8'));
}

/** Starts a TypeScript file as a child process (through tsx) and waits for its `LISTENING <port>` line. */
export async function startChildServer(script: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((ok, fail) => {
    let buffered = '';
    const timer = setTimeout(() => fail(new Error(`${script} did not start within 30 s`)), 30_000);
    child.once('exit', (code) => { clearTimeout(timer); fail(new Error(`${script} exited with ${code} before listening`)); });
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const match = /LISTENING (\d+)/.exec(buffered);
      if (match) { clearTimeout(timer); ok(Number(match[1])); }
    });
  });
  child.removeAllListeners('exit');
  return { child, port };
}

export async function stopChild(child: ChildProcess, graceMs = 3000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** CPU time (user + system, ms) a process has used so far, from /proc (Linux). */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime
    return (ticks * 1000) / 100; // USER_HZ is 100 on Linux
  } catch {
    return Number.NaN;
  }
}

/** CPU time (ms) of a process and all its live descendants (a server and the kernels it started). */
export function treeCpuMs(root: number): number {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch { /* ended meanwhile */ }
  }
  let total = 0;
  for (const pending = [root]; pending.length;) {
    const pid = pending.pop()!;
    const used = cpuMs(pid);
    if (Number.isFinite(used)) total += used;
    pending.push(...(children.get(pid) ?? []));
  }
  return total;
}
