// The history's two figures, against `submission-service local` (the built CLI, a child
// process) with real Spark and Spark's History Server:
//   end → history UI   from the moment an application's record says it ended (the events
//                      stream's `changed` event) until its Spark UI link answers the run's jobs
//                      page from the history, over HISTORY_APPS short runs (p50 / p99; goal ≤ 5 s,
//                      where Spark's default polling alone would be up to 10 s). The History
//                      Server is started by one untimed run first.
//   10,000 tasks       a run with one 10,000-task stage. The service has the History Server replay
//                      a big run's log as soon as it ended (cluster/history/warm.ts): the time from
//                      the end until its jobs page answers (a request meanwhile waits for that
//                      same replay), then its job page (the stage's table) through the link in
//                      headless Chromium: the first open (goal < 2 s), a new page, and again; the
//                      stage's page (its tasks' table) likewise; and after a restart of the
//                      service, which warms the run again by itself (a new History Server replays
//                      it, the proxy's page cache is filled): restart → warmed (its replay metric),
//                      then the job page's first open. Each open is a new browser context: no
//                      file is in the browser's cache, every one comes through the proxy.
//
//   node --import tsx bench/history/history-ui.ts   (needs dist/ and pyspark: scripts/setup.sh)
//   env: HISTORY_APPS (20), HISTORY_TASKS (10000), CHROMIUM_PATH
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { envNumber, fmt, load, median, percentileSorted, saveSummary, sleep, stopChild, table } from '../lib.js';
import { startLocal, submit } from './local-service.js';

// 0: only the 10,000-task run.
const APPS = process.env.HISTORY_APPS === '0' ? 0 : envNumber('HISTORY_APPS', 20);
const TASKS = envNumber('HISTORY_TASKS', 10_000);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Where the pages are shot, to look at what "rendered" showed. */
const SHOTS = process.env.HISTORY_SHOTS ?? tmpdir();

/** Resolves with performance.now() at the `changed` event that shows the application ended. */
function endedAt(url: string, appName: string): Promise<number> {
  return (async () => {
    let res = await fetch(`${url}/api/apps/events?q=${appName}`);
    for (let attempt = 1; res.status === 503 && attempt < 30; attempt++) { // overloaded: retry, as a client would
      await res.body?.cancel();
      await sleep(1000);
      res = await fetch(`${url}/api/apps/events?q=${appName}`);
    }
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

/** Polls the API until the application's Spark UI is its history (the log found, not yet replayed). */
async function historyListed(url: string, appName: string): Promise<void> {
  for (const deadline = performance.now() + 300_000; performance.now() < deadline; await sleep(50)) {
    const app = (await (await fetch(`${url}/api/apps/${appName}`)).json()) as { sparkUi?: { state: string } };
    if (app.sparkUi?.state === 'history') return;
  }
  throw new Error(`${appName} never showed its history`);
}

/** Polls the service's metrics until `count` warm-ups (replay and page cache fill) ended well. */
async function warmed(url: string, count: number): Promise<void> {
  for (const deadline = performance.now() + 300_000; performance.now() < deadline; await sleep(100)) {
    const text = await (await fetch(`${url}/metrics`)).text();
    const m = /^submission_service_history_replay_seconds_count\{outcome="ok"\} (\d+)/m.exec(text);
    if (Number(m?.[1] ?? 0) >= count) return;
  }
  throw new Error('the run was not warmed');
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

// eslint-disable-next-line max-lines-per-function -- one run: seeding, the service and the browser share its state
async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-history-'));
  // The jobs lie outside the data dir: local mode refuses main files inside it.
  const jobs = mkdtempSync(join(tmpdir(), 'bench-history-jobs-'));
  const quick = join(jobs, 'quick.py');
  writeFileSync(quick, 'from pyspark.sql import SparkSession\nSparkSession.builder.getOrCreate().sparkContext.parallelize(range(100), 2).sum()\n');
  const wide = join(jobs, 'wide.py');
  // Tasks in the JVM only (a Python RDD starts a Python worker per task: 10,000 took most of an
  // hour here): job 0's first stage sums a range in TASKS partitions.
  writeFileSync(wide, `from pyspark.sql import SparkSession\nSparkSession.builder.getOrCreate().range(0, ${TASKS}, 1, ${TASKS}).selectExpr('sum(id)').collect()\n`);
  let { child, url } = await startLocal(dataDir);
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
    const wideEnded = await endedAt(url, wideApp);
    await historyListed(url, wideApp);
    // The wide run's log is the biggest.
    const events = join(dataDir, 'spark-events');
    const sizeOf = (entry: string) => readdirSync(join(events, entry)).reduce((sum, f) => sum + statSync(join(events, entry, f)).size, 0);
    const wideEntry = readdirSync(events).sort((a, b) => sizeOf(b) - sizeOf(a))[0]!;
    const wideLogMb = sizeOf(wideEntry) / 1024 / 1024;
    const warmedMs = (await historyAnswers(url, wideApp)) - wideEnded;
    await warmed(url, 1);
    const cachedMs = performance.now() - wideEnded;
    process.stderr.write(`history-ui: ${wideEntry} (${fmt(wideLogMb, 1)} MB) replayed ${fmt(warmedMs)} ms after its end, its first pages cached ${fmt(cachedMs)} ms after it\n`);
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
    const renders: number[] = [];
    const stageRenders: number[] = [];
    const paints: number[] = [];
    let rewarmMs = Number.NaN;
    const open = async (path: string, text: string) => {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const start = performance.now();
      await page.goto(`${url}/dashboard/apps/${wideApp}/spark-ui/${path}`, { waitUntil: 'load', timeout: 300_000 });
      await page.waitForFunction((wanted) => document.body?.textContent?.includes(wanted), text, { timeout: 120_000 });
      const ms = performance.now() - start;
      await page.screenshot({ path: join(SHOTS, `history-${TASKS}-${path.replace(/[^a-z]+/g, '-')}${renders.length + stageRenders.length}.png`) });
      process.stderr.write(`history-ui: ${path} ${fmt(ms)} ms\n`);
      // When Chromium first painted the page's content, from the navigation's start.
      paints.push(await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? Number.NaN));
      await page.close();
      return ms;
    };
    try {
      for (let i = 0; i < 3; i++) renders.push(await open('jobs/job/?id=0', 'Completed Stages'));
      // The stage's own page, as far as the server renders it: on the service's own host the
      // page is sandboxed (an opaque origin), so its scripts' REST calls for the task table and
      // the summary metrics are refused by CORS; with --spark-ui-host they load.
      for (let i = 0; i < 2; i++) stageRenders.push(await open('stages/stage/?id=0&attempt=0', 'Details for Stage'));
      // A restart: a new History Server and an empty page cache; the service warms the run again.
      await stopChild(child, 10_000);
      const restarted = performance.now();
      ({ child, url } = await startLocal(dataDir));
      await warmed(url, 1);
      rewarmMs = performance.now() - restarted;
      await historyListed(url, wideApp);
      renders.push(await open('jobs/job/?id=0', 'Completed Stages'));
    } finally {
      await browser.close();
    }
    const rows = [
      ['end → history UI answers, p50', `${fmt(p50)} ms`, '≤ 5 s'],
      ['end → history UI answers, p99', `${fmt(p99)} ms`, '≤ 5 s'],
      [`${TASKS}-task run (${fmt(wideLogMb, 1)} MB event log): end → replayed (its jobs page answers)`, `${fmt(warmedMs)} ms`, ''],
      ['  end → warmed (its first pages in the proxy\'s cache)', `${fmt(cachedMs)} ms`, ''],
      [`job page of the ${TASKS}-task run, first open`, `${fmt(renders[0])} ms`, '< 2 s'],
      ['job page, a new page / again', `${fmt(renders[1])} ms / ${fmt(renders[2])} ms`, '< 2 s'],
      ['  first contentful paint (first open, new page, again)', paints.slice(0, 3).map((p) => `${fmt(p)} ms`).join(', '), ''],
      [`stage page (${TASKS} tasks), first / again`, `${fmt(stageRenders[0])} ms / ${fmt(stageRenders[1])} ms (first paint ${paints.slice(3, 5).map((p) => fmt(p)).join(' / ')} ms)`, ''],
      ['restart of the service → the run warmed again (replayed, its pages in the cache)', `${fmt(rewarmMs)} ms`, ''],
      ['job page, first open after the restart and the warm-up', `${fmt(renders[3])} ms (first paint ${fmt(paints[5])} ms)`, '< 2 s'],
    ];
    process.stdout.write(`\nHistory (load at start ${startLoad}, at end ${load()}; ${APPS} apps)\n${table(['what', 'figure', 'goal'], rows)}\n`);
    saveSummary('history-ui', [
      { bench: 'history', metric: 'end → history UI p99', value: `${fmt(p99)} ms`, goal: '≤ 5000 ms', verdict: p99 <= 5000 ? 'ok' : 'above goal' },
      { bench: 'history', metric: `${TASKS}-task job page first open`, value: `${fmt(renders[0])} ms`, goal: '< 2000 ms', verdict: renders[0] < 2000 ? 'ok' : 'above goal' },
      { bench: 'history', metric: `${TASKS}-task run end → replayed`, value: `${fmt(warmedMs)} ms`, goal: '', verdict: 'info' },
    ], { delays, renders, stageRenders, paints, warmedMs, cachedMs, rewarmMs, wideLogMb });
  } finally {
    await stopChild(child, 10_000);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(jobs, { recursive: true, force: true });
  }
}

await main();
