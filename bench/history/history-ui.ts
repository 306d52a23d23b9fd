// The history's two figures, against `submission-service local` (the built CLI, a child
// process) with real Spark and Spark's History Server:
//   end → history UI   from the moment an application's record says it ended (the events
//                      stream's `changed` event) until its Spark UI link answers the run's jobs
//                      page from the history, over HISTORY_APPS short runs (p50 / p99; goal ≤ 5 s,
//                      where Spark's default polling alone would be up to 10 s). The History
//                      Server is started by one untimed run first.
//   10,000 tasks       a run with one 10,000-task stage; its job page (the stage's table) through
//                      the link, first render in headless Chromium (goal < 2 s), then again.
//
//   node --import tsx bench/history/history-ui.ts   (needs dist/ and pyspark: scripts/setup.sh)
//   env: HISTORY_APPS (20), HISTORY_TASKS (10000), CHROMIUM_PATH
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { envNumber, fmt, load, median, NODE_POOLS, percentileSorted, ROOT, saveSummary, sleep, stopChild, table } from '../lib.js';

const APPS = envNumber('HISTORY_APPS', 20);
const TASKS = envNumber('HISTORY_TASKS', 10_000);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

async function startLocal(dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'submission-service.js'), 'local', '--port', '0', '--data-dir', dataDir, '--node-pools', NODE_POOLS, '--cores', '2'], {
    env: { ...process.env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((ok, fail) => {
    let out = '';
    child.once('exit', (code) => fail(new Error(`the service exited (${code})`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /at (http:\/\/[^\s/]+)\/api\//.exec(out);
      if (m) ok(m[1]);
    });
  });
  child.removeAllListeners('exit');
  return { child, url };
}

async function submit(url: string, file: string, args: string[] = []): Promise<string> {
  const res = await fetch(`${url}/api/apps/`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jobName: 'hist', configOverrides: { type: 'Python', mainApplicationFile: `local://${file}`, arguments: args, executor: { cores: 1, instances: 1 } } }),
  });
  if (res.status !== 201) throw new Error(`submission answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { appName: string }).appName;
}

/** Resolves with performance.now() at the `changed` event that shows the application ended. */
function endedAt(url: string, appName: string): Promise<number> {
  return (async () => {
    const res = await fetch(`${url}/api/apps/events?q=${appName}`);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`the events stream ended before ${appName} did`);
      buffer += decoder.decode(value, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (!/^event: changed$/m.test(block) || !data) continue;
        const app = JSON.parse(data) as { appName: string; state: string };
        if (app.appName === appName && ['COMPLETED', 'FAILED', 'KILLED', 'UNKNOWN'].includes(app.state)) {
          const at = performance.now();
          await reader.cancel();
          return at;
        }
      }
    }
  })();
}

/** Polls the link until it answers the run's jobs page from the history; performance.now() then. */
async function historyAnswers(url: string, appName: string): Promise<number> {
  let last = '';
  for (const deadline = performance.now() + 300_000; performance.now() < deadline;) {
    const res = await fetch(`${url}/dashboard/apps/${appName}/spark-ui/jobs/`).catch((error: unknown) => { last = String(error); return undefined; });
    const text = res ? await res.text() : '';
    if (res?.status === 200 && /Completed Jobs/.test(text)) return performance.now();
    if (res) last = `${res.status} ${text.slice(0, 300)}`;
    await sleep(20);
  }
  throw new Error(`the history of ${appName} did not answer; last: ${last}`);
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-history-'));
  // The jobs lie outside the data dir: local mode refuses main files inside it.
  const jobs = mkdtempSync(join(tmpdir(), 'bench-history-jobs-'));
  const quick = join(jobs, 'quick.py');
  writeFileSync(quick, 'from pyspark.sql import SparkSession\nSparkSession.builder.getOrCreate().sparkContext.parallelize(range(100), 2).sum()\n');
  const wide = join(jobs, 'wide.py');
  writeFileSync(wide, `from pyspark.sql import SparkSession\nSparkSession.builder.getOrCreate().sparkContext.parallelize(range(${TASKS}), ${TASKS}).count()\n`);
  const { child, url } = await startLocal(dataDir);
  const startLoad = load();
  try {
    // Untimed: starts the History Server.
    const first = await submit(url, quick);
    await endedAt(url, first);
    await historyAnswers(url, first);
    const delays: number[] = [];
    for (let i = 0; i < APPS; i++) {
      const appName = await submit(url, quick);
      const ended = await endedAt(url, appName);
      delays.push((await historyAnswers(url, appName)) - ended);
      process.stderr.write(`history-ui: ${i + 1}/${APPS} ${fmt(delays.at(-1)!)} ms\n`);
    }
    const sorted = [...delays].sort((a, b) => a - b);
    const p50 = median(delays);
    const p99 = percentileSorted(sorted, 99);

    const wideApp = await submit(url, wide);
    await endedAt(url, wideApp);
    await historyAnswers(url, wideApp);
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
    const renders: number[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
        const start = performance.now();
        await page.goto(`${url}/dashboard/apps/${wideApp}/spark-ui/jobs/job/?id=0`, { waitUntil: 'load', timeout: 120_000 });
        await page.locator('text=Completed Stages').first().waitFor({ timeout: 120_000 });
        renders.push(performance.now() - start);
        await page.close();
      }
    } finally {
      await browser.close();
    }
    const rows = [
      ['end → history UI answers, p50', `${fmt(p50)} ms`, '≤ 5 s'],
      ['end → history UI answers, p99', `${fmt(p99)} ms`, '≤ 5 s'],
      [`job page of a ${TASKS}-task run, first render`, `${fmt(renders[0])} ms`, '< 2 s'],
      [`job page of a ${TASKS}-task run, again`, `${fmt(renders[1])} ms`, ''],
    ];
    process.stdout.write(`\nHistory (load at start ${startLoad}, at end ${load()}; ${APPS} apps)\n${table(['what', 'figure', 'goal'], rows)}\n`);
    saveSummary('history-ui', [
      { bench: 'history', metric: 'end → history UI p99', value: `${fmt(p99)} ms`, goal: '≤ 5000 ms', verdict: p99 <= 5000 ? 'ok' : 'above goal' },
      { bench: 'history', metric: `${TASKS}-task job page first render`, value: `${fmt(renders[0])} ms`, goal: '< 2000 ms', verdict: renders[0] < 2000 ? 'ok' : 'above goal' },
    ], { delays, renders });
  } finally {
    await stopChild(child, 10_000);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(jobs, { recursive: true, force: true });
  }
}

await main();
