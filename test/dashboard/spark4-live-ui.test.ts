// A live Spark 4.2.0 UI in headless Chromium, through the dashboard's proxy (issue 24): the
// proxy rewrites the page's asset links to `static/spark-4.2.0/…` (the run's engineVersion), and
// every asset the browser then asks for loads from that version's files, so Spark 4's own
// scripts (its executors table, its new pages' scripts) run without an error. Local mode, real
// Spark 4.2.0 (its virtualenv), authentication off as local mode's default. The driver holds its
// UI open until the test lets it go (a file it waits for), so nothing here races its end.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { SparkEnvs } from '../../cluster/local/spark-envs.js';
import { launchChromium, openAndWait, openPage } from '../helpers/browser.js';
import { until, waitForState } from '../helpers/poll.js';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';

const base = realSpark();
const four = base && await new SparkEnvs({ base }).ready('4.2.0');
const skip = base && four ? false : 'needs the 4.2 virtualenv (SETUP_SPARK_VERSIONS=1 scripts/setup.sh)';
const shots = process.env.DASHBOARD_SCREENSHOTS ?? join(tmpdir(), 'submission-service-dashboard');

const HOLDING_DRIVER = `import os, sys, time
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
spark.range(100000).selectExpr("sum(id)").collect()
while not os.path.exists(sys.argv[1]):
    time.sleep(0.2)
`;

t.test('a live 4.2.0 Spark UI loads every asset from static/spark-4.2.0/ and its scripts run', { skip, timeout: 900_000 }, async (t) => {
  mkdirSync(shots, { recursive: true });
  const dir = mkdtempSync('/var/tmp/subsvc-spark4-ui-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  chmodSync(dir, 0o711);
  const main = join(dir, 'holds.py');
  const release = join(dir, 'release');
  writeFileSync(main, HOLDING_DRIVER, { mode: 0o644 });
  const service = await startService(t, { dataDir: join(dir, 'data'), env: sparkEnv(), args: ['--cores', '2'] });
  const created = await http(service.url, 'POST', '/api/apps/', { jobName: 'four-ui', configOverrides: { type: 'Python', engineVersion: '4.2.0', mainApplicationFile: `local://${main}`, arguments: [release] } });
  t.equal(created.status, 201, 'a 4.2.0 application is submitted');
  const appName = created.json.appName as string;
  const app = () => http(service.url, 'GET', `/api/apps/${appName}`).then((r) => r.json);
  t.teardown(() => writeFileSync(release, ''));
  await waitForState(app, 'RUNNING', { timeoutMs: 600_000 });
  const ui = `${service.url}/dashboard/apps/${appName}/spark-ui`;
  const jobsPage = async () => { const r = await http(service.url, 'GET', `/dashboard/apps/${appName}/spark-ui/jobs/`); return r.status === 200 && /Spark Jobs/.test(r.text); };
  await until(jobsPage, { timeoutMs: 300_000, intervalMs: 200, what: 'the proxied live UI' });

  const browser = await launchChromium(t);
  const page = await openPage(browser, { viewport: { width: 1280, height: 900 } });
  const errors: string[] = [];
  const assets: Array<{ url: string; status: number }> = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  page.on('response', (response) => { if (response.url().includes('/static/')) assets.push({ url: response.url(), status: response.status() }); });

  await page.goto(`${ui}/jobs/`);
  t.match(await page.title(), /Spark Jobs/, 'the jobs page');
  const linked = await page.locator('link[href*="/static/"], script[src*="/static/"]').evaluateAll((nodes) => nodes.map((n) => n.getAttribute('href') ?? n.getAttribute('src') ?? ''));
  t.ok(linked.length > 5, `the page links its assets (${linked.length})`);
  t.same(linked.filter((link) => !link.includes(`/dashboard/apps/${appName}/spark-ui/static/spark-4.2.0/`)), [], 'every asset link names the run\'s Spark, under the proxy');
  await openAndWait(page, `${ui}/executors/`, page.locator('#active-executors-table tbody tr').first());
  t.match(await page.locator('#active-executors-table').innerText(), /driver/, 'the executors table, filled by Spark 4.2.0\'s own script');
  await page.screenshot({ path: join(shots, 'spark4-live-executors.png'), fullPage: true });
  await page.goto(`${ui}/stages/`);
  t.match(await page.locator('body').innerText(), /Stages for All Jobs|Completed Stages/, 'another page');

  t.ok(assets.length > 5, `the browser fetched the assets (${assets.length})`);
  t.same(assets.filter((a) => a.status !== 200 && a.status !== 304), [], 'every asset answered');
  t.same(assets.filter((a) => !a.url.includes('/static/spark-4.2.0/')), [], 'every one from 4.2.0\'s files');
  t.same(errors, [], 'no script errors');

  writeFileSync(release, '');
  await waitForState(app, 'COMPLETED', { timeoutMs: 600_000 });
});
