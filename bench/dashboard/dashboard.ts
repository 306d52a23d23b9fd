// The dashboard under load, against the real service (`submission-service local`, a child
// process, so its CPU and memory are its own), in headless Chromium:
//   1. 10,000 applications (records seeded in the data dir, 400 jobs, terminal states):
//      time from navigation to the first job card of /dashboard/ (median of 5 loads);
//   2. 10 dashboards open for 60 s with nothing changing: the service's CPU in that minute,
//      beside its CPU for as long with no dashboard open;
//   3. a 100 MB driver log streamed to three browsers at once: the service's peak RSS vs
//      before, and how late the page answers while it streams (max page.evaluate round trip).
//   npx tsc -p tsconfig.json && npx tsx bench/dashboard/dashboard.ts     (BENCH_IDLE_S=60)
//   env: BENCH_APPS (10000), BENCH_IDLE_S (60), BENCH_LOG_MB (100), BENCH_RENDERS (5 timed loads
//   after one untimed), BENCH_DASHBOARDS (10 idle dashboards), BENCH_VIEWERS (3 browsers on the log)
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { chromium, type Page } from 'playwright-core';
import { envNumber, median, ROOT, sleep } from '../lib.js';

const APPS = envNumber('BENCH_APPS', 10_000);
const IDLE_S = envNumber('BENCH_IDLE_S', 60);
const LOG_MB = envNumber('BENCH_LOG_MB', 100);
const RENDERS = envNumber('BENCH_RENDERS', 5);
const DASHBOARDS = envNumber('BENCH_DASHBOARDS', 10);
const VIEWERS = envNumber('BENCH_VIEWERS', 3);
const STATES = ['COMPLETED', 'COMPLETED', 'COMPLETED', 'FAILED', 'KILLED'] as const;
const TICK = 100; // USER_HZ

function seed(dataDir: string): string {
  const apps = join(dataDir, 'apps');
  mkdirSync(apps, { recursive: true });
  mkdirSync(join(dataDir, 'logs'), { recursive: true });
  const start = Date.parse('2026-11-01T00:00:00Z');
  let last = '';
  for (let i = 0; i < APPS; i++) {
    const jobName = `job-${String(i % 400).padStart(3, '0')}`;
    const created = new Date(start + i * 60_000);
    const appName = `${jobName}-${created.toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-')}-${String(i).padStart(5, '0').slice(-5)}`;
    const record = {
      appName, jobName, configTemplateName: '', state: STATES[i % STATES.length], stateDetail: 'seeded',
      createdAt: created.toISOString(), startedAt: new Date(created.getTime() + 2000).toISOString(), endedAt: new Date(created.getTime() + 95_000).toISOString(),
      runningExecutors: 0, namespace: 'local', labels: i % 50 === 0 ? { 'kernel.submission-service.io/id': `k${i}` } : { team: `t${i % 7}` }, submittedBy: null,
      config: { type: 'Python', mainApplicationFile: 'local:///jobs/etl.py', arguments: ['--date', created.toISOString().slice(0, 10)], engineConf: Object.fromEntries(Array.from({ length: 30 }, (_, k) => [`spark.custom.setting${k}`, 'x'.repeat(40)])), driver: { cores: 1, coreRequest: '710m', memory: '2043m' }, executor: { cores: 2, coreRequest: '1700m', memory: '4086m', instances: 4 } },
    };
    writeFileSync(join(apps, `${appName}.json`), JSON.stringify({ record, pod: {} }));
    last = appName;
  }
  return last;
}

async function writeLog(file: string): Promise<void> {
  const out = createWriteStream(file);
  const line = (i: number) => `26/11/23 10:00:00 INFO TaskSetManager: Finished task ${i}.0 in stage 0.0 (TID ${i}) in 112 ms on localhost (executor driver) (${i}/1000000)\n`;
  let written = 0;
  for (let i = 0; written < LOG_MB * 1024 * 1024; i++) {
    const text = line(i);
    written += text.length;
    if (!out.write(text)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

const procStat = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return { cpuTicks: Number(fields[11]) + Number(fields[12]) };
};
const rssMib = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function startService(dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'submission-service.js'), 'local', '--port', '0', '--data-dir', dataDir], { stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, LOG_LEVEL: 'warn' } });
  let out = '';
  child.stdout!.on('data', (d) => { out += d; });
  for (let i = 0; i < 600 && !/at (http:\/\/\S+)\/api\//.test(out); i++) await sleep(50);
  const url = /at (http:\/\/\S+)\/api\//.exec(out)?.[1];
  if (!url) throw new Error(`the service did not start: ${out}`);
  return { child, url };
}

const firstRender = async (page: Page, url: string) => {
  await page.goto(`${url}/dashboard/`);
  await page.locator('section.job').first().waitFor();
  return page.evaluate(() => performance.now()); // ms since navigation start
};

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-dashboard-'));
  const t0 = Date.now();
  const lastApp = seed(dataDir);
  await writeLog(join(dataDir, 'logs', `${lastApp}.log`));
  process.stderr.write(`seeded ${APPS} records and a ${LOG_MB} MB log in ${Date.now() - t0} ms\n`);
  const { child, url } = await startService(dataDir);
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
  const results: Record<string, unknown> = { apps: APPS, loadavgBefore: loadavg().map((x) => x.toFixed(2)).join(' ') };
  try {
    // 1. First render.
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const renders: number[] = [];
    for (let i = 0; i <= RENDERS; i++) renders.push(await firstRender(page, url));
    renders.shift(); // the first load warms the service's caches and the browser's
    results.firstRenderMs = { median: Math.round(median(renders)), all: renders.map(Math.round) };
    const summaryBytes = (await (await fetch(`${url}/api/apps/?limit=200&view=summary`)).text()).length;
    const fullBytes = (await (await fetch(`${url}/api/apps/?limit=200`)).text()).length;
    results.pageOf200Bytes = { summary: summaryBytes, full: fullBytes };
    await page.close();

    // 2. The service alone for as long (its own timers: the event-loop monitors of the load
    //    shedding and the metrics), then DASHBOARDS (ten) dashboards open, nothing changing.
    await sleep(2000);
    const alone = procStat(child.pid!).cpuTicks;
    const aloneStarted = Date.now();
    await sleep(IDLE_S * 1000);
    const aloneUsed = (procStat(child.pid!).cpuTicks - alone) / TICK;
    results.noDashboard = { seconds: Math.round((Date.now() - aloneStarted) / 1000), serviceCpuSeconds: aloneUsed };
    const pages = await Promise.all(Array.from({ length: DASHBOARDS }, () => browser.newPage({ viewport: { width: 1280, height: 900 } })));
    for (const p of pages) await firstRender(p, url);
    await sleep(2000);
    const before = procStat(child.pid!).cpuTicks;
    const started = Date.now();
    await sleep(IDLE_S * 1000);
    const used = (procStat(child.pid!).cpuTicks - before) / TICK;
    results.idle = { dashboards: DASHBOARDS, seconds: Math.round((Date.now() - started) / 1000), serviceCpuSeconds: used, serviceCpuPercent: +((100 * used) / ((Date.now() - started) / 1000)).toFixed(2) };
    await Promise.all(pages.map((p) => p.close()));

    // 3. A 100 MB log to VIEWERS (three) browsers at once.
    const rssBefore = rssMib(child.pid!);
    let peak = rssBefore;
    const sampler = setInterval(() => { peak = Math.max(peak, rssMib(child.pid!)); }, 50);
    const viewers = await Promise.all(Array.from({ length: VIEWERS }, () => browser.newPage({ viewport: { width: 1280, height: 900 } })));
    const streamStart = Date.now();
    await Promise.all(viewers.map((p) => p.goto(`${url}/dashboard/apps/${lastApp}`)));
    let maxLag = 0;
    let done = false;
    const probe = (async () => {
      while (!done) {
        const at = Date.now();
        await viewers[0].evaluate(() => document.getElementById('log-status')?.textContent);
        maxLag = Math.max(maxLag, Date.now() - at);
        await sleep(100);
      }
    })();
    await Promise.all(viewers.map((p) => p.waitForFunction(() => document.getElementById('log-status')?.textContent === 'log ended', undefined, { timeout: 600_000, polling: 500 })));
    done = true;
    await probe;
    clearInterval(sampler);
    results.log = { megabytes: LOG_MB, browsers: VIEWERS, seconds: +((Date.now() - streamStart) / 1000).toFixed(1), serviceRssBeforeMib: Math.round(rssBefore), serviceRssPeakMib: Math.round(peak), pageMaxResponseMs: maxLag };
    results.loadavgAfter = loadavg().map((x) => x.toFixed(2)).join(' ');
  } finally {
    await browser.close();
    child.kill('SIGTERM');
    await once(child, 'exit');
    rmSync(dataDir, { recursive: true, force: true });
  }
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
}

await main();
