// What a 100 MB driver log costs local mode's API, against `submission-service local` (the built
// CLI, a child process) with real spark-submit: a driver prints LOG_MB of lines, then waits.
//   read while running   GET /api/apps/{app}/log read whole (streamed, discarded), its time and
//                        the service's RSS sampled every 20 ms (it should stay flat: the log is
//                        streamed from the file in 64 KiB reads, never held)
//   stop                 POST /api/apps/{app}/stop → answer (local mode keeps the log in place:
//                        nothing is copied at the end)
//   read after the end   the same read once the application ended
//
//   node --import tsx bench/history/driver-log.ts   (needs dist/ and pyspark: scripts/setup.sh)
//   env: LOG_MB (100)
import { closeSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { envNumber, fmt, load, saveSummary, sleep, stopChild, table } from '../lib.js';
import { startLocal, submit } from './local-service.js';

const LOG_MB = envNumber('LOG_MB', 100);

const rssMb = (pid: number): number => {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
};

/** Reads the whole log through the API, sampling the service's RSS meanwhile. */
async function readLog(url: string, appName: string, pid: number) {
  const before = rssMb(pid);
  let peak = before;
  const sampler = setInterval(() => { peak = Math.max(peak, rssMb(pid)); }, 20);
  const start = performance.now();
  let bytes = 0;
  try {
    const res = await fetch(`${url}/api/apps/${appName}/log`);
    if (res.status !== 200) throw new Error(`the log answered ${res.status}`);
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.byteLength;
  } finally {
    clearInterval(sampler);
  }
  return { ms: performance.now() - start, bytes, before, peak: Math.max(peak, rssMb(pid)) };
}

async function state(url: string, appName: string): Promise<string> {
  return ((await (await fetch(`${url}/api/apps/${appName}`)).json()) as { state: string }).state;
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-driver-log-'));
  const jobs = mkdtempSync(join(tmpdir(), 'bench-driver-log-jobs-'));
  const chatty = join(jobs, 'chatty.py');
  // Lines like a driver's own (a time, a level, a class, a message), ~200 bytes each.
  writeFileSync(chatty, [
    'import sys, time',
    `total = ${LOG_MB} * 1024 * 1024`,
    'written = n = 0',
    'while written < total:',
    "    line = '26/11/26 01:%02d:%02d INFO TaskSetManager: Finished task %d.0 in stage 3.0 (TID %d) in 12 ms on 127.0.0.1 (executor driver) (%d/10000) padding %s\\n' % (n // 60 % 60, n % 60, n, n, n, 'x' * 60)",
    '    sys.stdout.write(line)',
    '    written += len(line)',
    '    n += 1',
    'sys.stdout.flush()',
    "print('LOG WRITTEN', flush=True)",
    'time.sleep(3600)',
  ].join('\n'));
  const { child, url } = await startLocal(dataDir);
  const startLoad = load();
  try {
    const appName = await submit(url, chatty);
    const logFile = join(dataDir, 'logs', `${appName}.log`);
    const size = () => { try { return statSync(logFile).size; } catch { return 0; } };
    const tail = () => {
      const length = Math.min(200, size());
      if (length === 0) return '';
      const fd = openSync(logFile, 'r');
      try {
        const buffer = Buffer.alloc(length);
        readSync(fd, buffer, 0, length, size() - length);
        return buffer.toString();
      } finally {
        closeSync(fd);
      }
    };
    while (!tail().includes('LOG WRITTEN')) await sleep(500);
    const idle = rssMb(child.pid!);
    const running = await readLog(url, appName, child.pid!);
    const stopStart = performance.now();
    const stopped = await fetch(`${url}/api/apps/${appName}/stop`, { method: 'POST' });
    const stopMs = performance.now() - stopStart;
    const stoppedState = ((await stopped.json()) as { state: string }).state;
    while (!['KILLED', 'COMPLETED', 'FAILED', 'UNKNOWN'].includes(await state(url, appName))) await sleep(200);
    const ended = await readLog(url, appName, child.pid!);
    const mb = (n: number) => `${fmt(n / 1024 / 1024, 1)} MB`;
    const rows = [
      ['log size', mb(size()), ''],
      ['read while running (GET …/log, whole)', `${fmt(running.ms)} ms (${fmt(running.bytes / 1024 / 1024 / (running.ms / 1000))} MB/s)`, ''],
      ['  service RSS before → peak', `${fmt(running.before)} → ${fmt(running.peak)} MB (idle ${fmt(idle)} MB)`, 'flat'],
      ['stop (POST …/stop → answer)', `${fmt(stopMs)} ms (${stoppedState})`, ''],
      ['read after the end', `${fmt(ended.ms)} ms`, ''],
      ['  service RSS before → peak', `${fmt(ended.before)} → ${fmt(ended.peak)} MB`, 'flat'],
    ];
    process.stdout.write(`\nDriver log of ${LOG_MB} MB, local mode (load at start ${startLoad}, at end ${load()})\n${table(['what', 'figure', 'goal'], rows)}\n`);
    saveSummary('driver-log', [
      { bench: 'driver log', metric: `RSS growth reading a ${LOG_MB} MB log`, value: `${fmt(Math.max(running.peak - running.before, ended.peak - ended.before))} MB`, goal: 'flat', verdict: 'info' },
      { bench: 'driver log', metric: `stop with a ${LOG_MB} MB log`, value: `${fmt(stopMs)} ms`, goal: '', verdict: 'info' },
    ], { running, ended, stopMs, idle });
  } finally {
    await stopChild(child, 10_000);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(jobs, { recursive: true, force: true });
  }
}

await main();
