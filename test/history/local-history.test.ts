// One link for an application's whole life, in local mode with real Spark, its real History
// Server and headless Chromium: examples/pi.py ends, the service restarts, and the dashboard's
// Spark UI link opens the run's jobs and stages from its event log; a failed run shows its
// failed stage; nothing of another run is reachable through an application's link; with a
// 1-minute retention the record, the log and the event log go, and the link says so.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { repoRoot } from '../helpers/api.js';
import { until, waitForState } from '../helpers/poll.js';
import { http, realSpark, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { launchChromium, openPage } from '../helpers/browser.js';

const spark = realSpark();
const shots = process.env.DASHBOARD_SCREENSHOTS ?? join(tmpdir(), 'submission-service-dashboard');
const skip = spark ? false : 'no Spark virtualenv (scripts/setup.sh makes one)';
const pi = `local://${join(repoRoot, 'examples', 'pi.py')}`;

async function submit(url: string, jobName: string, mainApplicationFile: string, args: string[] = []) {
  const res = await http(url, 'POST', '/api/apps/', { jobName, configOverrides: { type: 'Python', mainApplicationFile, arguments: args, executor: { cores: 1, instances: 1 } } });
  if (res.status !== 201) throw new Error(`submission answered ${res.status}: ${res.text}`);
  if (res.json.sparkUi?.state !== 'unavailable') throw new Error(`a new application's Spark UI should be unavailable: ${JSON.stringify(res.json.sparkUi)}`);
  return res.json.appName as string;
}

const read = (url: string, appName: string) => http(url, 'GET', `/api/apps/${appName}`).then((r) => r.json as { state: string; sparkUi: { state: string; url: string | null; expiresAt: string | null } });

t.test('after the end and a restart, the link opens the run from its history', { skip }, async (t) => {
  mkdirSync(shots, { recursive: true });
  const dataDir = tempDir(t);
  let service = await startService(t, { dataDir, args: ['--cores', '2'] });
  const good = await submit(service.url, 'pi', pi, ['4']);
  const failing = join(tempDir(t), 'fails.py'); // not in the data dir: local mode refuses main files there
  writeFileSync(failing, [
    'from pyspark.sql import SparkSession',
    'spark = SparkSession.builder.getOrCreate()',
    'spark.sparkContext.parallelize(range(4), 2).map(lambda x: 1 // 0).collect()',
  ].join('\n'));
  const bad = await submit(service.url, 'fails', `local://${failing}`);
  await waitForState(() => read(service.url, good), 'COMPLETED', { timeoutMs: 240_000 });
  await waitForState(() => read(service.url, bad), 'FAILED', { timeoutMs: 240_000 });
  const entries = readdirSync(join(dataDir, 'spark-events'));
  t.equal(entries.filter((e) => e.startsWith('eventlog_v2_')).length, 2, `a rolling event log per run under the data dir (${entries.join(', ')})`);

  t.equal(await service.stop(), 0, 'the service stops');
  // Restarted as a user's shell would start it: the virtualenv not on PATH (the service finds
  // it in the cache, and the History Server must find its Spark without it).
  const { SUBMISSION_SERVICE_PYTHON_ENV: _venv, ...plain } = process.env;
  service = await startService(t, { dataDir, args: ['--cores', '2'], env: { ...plain, PATH: '/usr/local/bin:/usr/bin:/bin' } });
  const { url } = service;
  // The index reads the logs again at start; the answer says so once it has.
  await until(async () => (await read(url, good)).sparkUi.state === 'history', { timeoutMs: 60_000, what: 'the history state after a restart' });
  const after = await read(url, good);
  t.same(after.sparkUi.url, `/dashboard/apps/${good}/spark-ui/`, 'the same link as while it ran');
  t.ok(after.sparkUi.expiresAt && Date.parse(after.sparkUi.expiresAt) > Date.now(), 'it says until when it is kept');
  const list = await http(url, 'GET', '/api/apps/?view=summary');
  t.equal(list.json.items.find((a: { appName: string }) => a.appName === good)?.sparkUi?.state, 'history', 'the list says it too');
  const log = await http(url, 'GET', `/api/apps/${good}/log`);
  t.match(log.text, /Pi is roughly/, 'its log is readable after the restart');

  const browser = await launchChromium(t);
  const page = await openPage(browser, { viewport: { width: 1280, height: 900 } });
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(String(err)));
  await page.goto(`${url}/dashboard/apps/${good}`);
  await page.locator('#spark-ui').waitFor({ state: 'visible' });
  t.equal(await page.locator('#spark-ui').innerText(), 'Spark UI (history)', 'the app page says which UI the link opens');
  await page.screenshot({ path: join(shots, 'history-app-page.png'), fullPage: true });

  const href = await page.locator('#spark-ui').getAttribute('href');
  const ui = await openPage(browser, { viewport: { width: 1280, height: 900 } });
  // The first request starts the History Server (a JVM): its answer may take a while.
  await ui.goto(`${url}${href}`, { timeout: 180_000 });
  t.match(await ui.title(), /Spark Jobs/, 'the jobs page of the run');
  t.match(ui.url(), new RegExp(`/dashboard/apps/${good}/spark-ui/`), 'under the same path');
  t.match(await ui.locator('body').innerText(), /Completed Jobs/);
  await ui.screenshot({ path: join(shots, 'history-jobs.png') });
  const links = await ui.locator('a[href^="/"]').evaluateAll((as) => as.map((a) => a.getAttribute('href') ?? ''));
  t.same(links.filter((h) => !h.startsWith(`/dashboard/apps/${good}/spark-ui/`)), [], 'every link inside stays under the path');
  await ui.locator('a[href*="/stages/"]').first().click();
  await ui.waitForURL('**/spark-ui/**/stages/**');
  t.match(await ui.locator('body').innerText(), /Completed Stages/, 'its stages page');
  await ui.screenshot({ path: join(shots, 'history-stages.png') });
  // The live UI's own paths, as a page left open at the end would ask for them.
  for (const path of ['jobs/', 'stages/', 'executors/', 'environment/', 'stages/stage/?id=0&attempt=0']) {
    t.equal((await ui.request.get(`${url}/dashboard/apps/${good}/spark-ui/${path}`)).status(), 200, `live path ${path} answers from the history`);
  }

  const failed = await openPage(browser, { viewport: { width: 1280, height: 900 } });
  await failed.goto(`${url}/dashboard/apps/${bad}/spark-ui/stages/`, { timeout: 120_000 });
  t.match(await failed.locator('body').innerText(), /Failed Stages/, "a failed run's history shows its failed stage");
  await failed.screenshot({ path: join(shots, 'history-failed-stages.png') });

  // Another run's pages are not reachable through this link; the list of every run holds its own alone.
  const goodId = /\/history\/([^/]+)\//.exec(links.join(' '))?.[1];
  t.ok(goodId, 'the run id is in its links');
  const runs = await http(url, 'GET', `/dashboard/apps/${bad}/spark-ui/api/v1/applications`);
  t.equal(runs.status, 200, 'the list of every run through the link (Spark\'s scripts ask for it on the live paths)');
  t.same((runs.json as Array<{ id: string; name: string }>).map((run) => run.name), [bad], 'holds this run alone');
  t.not((runs.json as Array<{ id: string }>)[0]?.id, goodId, 'not the other run');
  t.equal((await http(url, 'GET', `/dashboard/apps/${bad}/spark-ui/history/${goodId}/jobs/`)).status, 404, "not another run's pages");
  t.equal((await http(url, 'GET', `/dashboard/apps/${bad}/spark-ui/api/v1/applications/${goodId}/jobs`)).status, 404, "not another run's data");
  t.same(errors, [], 'no script errors on the app page');
});

t.test('retention: record, log and event log go together, and the link says so', { skip }, async (t) => {
  const dataDir = tempDir(t);
  const { url } = await startService(t, { dataDir, args: ['--cores', '2', '--retention', '1m'] });
  const appName = await submit(url, 'pi', pi, ['2']);
  await waitForState(() => read(url, appName), 'COMPLETED', { timeoutMs: 240_000 });
  await until(async () => (await read(url, appName)).sparkUi.state === 'history', { timeoutMs: 60_000, what: 'its history' });
  const eventLogs = () => readdirSync(join(dataDir, 'spark-events')).filter((e) => e.startsWith('eventlog_v2_'));
  t.equal(eventLogs().length, 1, 'its event log is there');
  const logFile = join(dataDir, 'logs', `${appName}.log`);
  t.ok(existsSync(logFile), 'its log is there');
  await until(async () => (await http(url, 'GET', `/api/apps/${appName}`)).status === 404, { timeoutMs: 300_000, intervalMs: 1000, what: 'the record to expire' });
  t.same(eventLogs(), [], 'the event log is removed');
  t.notOk(existsSync(logFile), 'the log is removed');
  const link = await http(url, 'GET', `/dashboard/apps/${appName}/spark-ui/`);
  t.equal(link.status, 404, 'the link answers 404');
  t.match(link.json?.message, /not running and has no history/, 'with a clear message');
});
