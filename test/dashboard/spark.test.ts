// Real Spark (the project's virtualenv, Java 17) in local mode, in headless Chromium: a pi run's
// page shows its config and its driver log live (a line the driver writes is on the page within
// 1 s), and its Spark UI opens through the dashboard's proxy while it runs, with working links.
// The run is examples/pi.py's work with a driver kept until the test releases it: with pi.py
// itself the checks raced its end (once its UI was gone mid-page: 502, no executors table).
import { readFileSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { repoRoot, startTestApi } from '../helpers/api.js';
import { until, waitForState } from '../helpers/poll.js';
import { realSpark } from '../helpers/service.js';
import { sleep } from '../helpers/temp.js';
import { launchChromium, openAndWait, openPage } from '../helpers/browser.js';

const spark = realSpark();
const shots = process.env.DASHBOARD_SCREENSHOTS ?? join(tmpdir(), 'submission-service-dashboard');

t.test('pi.py: config, live log, Spark UI through the proxy', { skip: spark ? false : 'no Spark virtualenv (scripts/setup.sh makes one)' }, async (t) => {
  mkdirSync(shots, { recursive: true });
  const api = await startTestApi(t, { cores: 2, spark });
  const address = await api.app.listen({ port: 0, host: '127.0.0.1' });
  const browser = await launchChromium(t);
  const page = await openPage(browser, { viewport: { width: 1280, height: 900 } });
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(String(err)));

  const program = join(repoRoot, 'test', 'fixtures', 'dashboard', 'pi-until-released.py');
  // 404 until the checks are done, then 200: the driver ends.
  let released = false;
  const releaser = createServer((_req, res) => { res.statusCode = released ? 200 : 404; res.end(); });
  await new Promise<void>((ok) => releaser.listen(0, '127.0.0.1', ok));
  t.teardown(() => { releaser.close(); });
  const release = `http://127.0.0.1:${(releaser.address() as AddressInfo).port}/release`;
  const res = await api.call('POST', '/api/apps/', {
    jobName: 'pi',
    configOverrides: { type: 'Python', mainApplicationFile: `local://${program}`, arguments: ['20', release], executor: { cores: 1, instances: 2 } },
  });
  t.equal(res.status, 201);
  const appName = res.json.appName as string;
  t.equal(res.json.config.engineConf?.['spark.ui.proxyBase'], undefined, 'proxyBase is not part of the user config');
  await page.goto(`${address}/dashboard/apps/${appName}`);
  await page.locator('#config').waitFor();
  const config = JSON.parse((await page.locator('#config').getAttribute('data-json'))!);
  t.same(config.arguments, ['20', release], 'the effective config');
  t.equal(config.mainApplicationFile, `local://${program}`);
  await waitForState(() => api.getApp(appName), 'RUNNING');

  // Lines as the driver writes them to its log file vs. when they are on the page.
  const logFile = join(api.dataDir, 'logs', `${appName}.log`);
  const onPage = (line: string) => page.waitForFunction((l) => (document.getElementById('log')?.textContent ?? '').includes(l), line, { polling: 20 });
  const delays: number[] = [];
  let seen = '';
  for (const deadline = Date.now() + 60_000; Date.now() < deadline && delays.length < 5;) {
    let text = '';
    try { text = readFileSync(logFile, 'utf8'); } catch { /* not yet */ }
    if (text.length > seen.length) {
      const lines = text.slice(seen.length).split('\n').slice(0, -1).filter((l) => l.trim().length > 20);
      seen = text.slice(0, text.lastIndexOf('\n') + 1);
      const line = lines.at(-1);
      if (line && delays.length < 5) {
        const written = Date.now();
        await onPage(line);
        delays.push(Date.now() - written);
      }
    }
    await sleep(20);
  }
  t.ok(delays.length >= 3, `lines measured while the driver ran (${delays.length})`);
  // A figure (the README's), not a check: how long a line the driver wrote took to reach the page.
  t.comment(`lines written by the driver were on the page after ${delays.join(', ')} ms`);

  // The Spark UI, while it runs: through the proxy, under the same path, links working.
  t.ok(await page.locator('#spark-ui').isVisible(), 'a Spark UI link while it runs');
  const base = `${address}/dashboard/apps/${appName}/spark-ui`;
  // The UI's port opens before its pages are attached: wait for the jobs page itself.
  const jobsPage = () => page.request.get(`${base}/jobs/`).then(async (r) => (r.status() === 200 && /Spark Jobs/.test(await r.text())));
  await until(jobsPage, { timeoutMs: 120_000, intervalMs: 100, what: 'the proxied Spark UI' });
  t.pass('the proxied UI answers');
  const uiPage = await openPage(browser, { viewport: { width: 1280, height: 900 } });
  await uiPage.goto(`${base}/`);
  t.match(uiPage.url(), new RegExp(`/dashboard/apps/${appName}/spark-ui/jobs/`), 'its redirect stays under the proxy path');
  t.match(await uiPage.title(), /Spark Jobs/);
  await uiPage.screenshot({ path: join(shots, 'dashboard-spark-ui.png') });
  const stagesHref = await uiPage.locator('a[href*="/stages/"]').first().getAttribute('href');
  t.match(stagesHref, new RegExp(`^/dashboard/apps/${appName}/spark-ui/stages/`), 'links point under the proxy');
  await uiPage.locator('a[href*="/stages/"]').first().click();
  await uiPage.waitForURL(`**/spark-ui/stages/**`);
  t.match(await uiPage.locator('body').innerText(), /Stages for All Jobs|Completed Stages|Active Stages/, 'a link followed');
  const executors = await uiPage.request.get(`${base}/executors/`);
  t.equal(executors.status(), 200, 'another page through the proxy');
  // Authentication off: no sandbox (nothing to borrow), so Spark's scripts fill the executors table from its REST API.
  t.equal(executors.headers()['content-security-policy'], undefined, 'no sandbox with authentication off');
  await openAndWait(uiPage, `${base}/executors/`, uiPage.locator('#active-executors-table tbody tr').first());
  t.match(await uiPage.locator('#active-executors-table').innerText(), /driver/, "the executors table, filled by Spark's script");
  t.equal((await uiPage.request.post(`${base}/jobs/job/kill/?id=0`)).status(), 405, 'nothing but GET and HEAD goes through (405, Allow: GET, HEAD)');
  await uiPage.close();
  await page.screenshot({ path: join(shots, 'dashboard-app-pi.png'), fullPage: true });

  released = true;
  const done = await waitForState(() => api.getApp(appName), 'COMPLETED', { timeoutMs: 600_000 });
  t.equal(done.state, 'COMPLETED');
  await page.waitForFunction(() => /Pi is roughly/.test(document.getElementById('log')?.textContent ?? ''));
  await page.waitForFunction(() => document.getElementById('log-status')?.textContent === 'log ended');
  t.ok(await page.locator('#spark-ui').isHidden(), 'no Spark UI link once ended');
  t.equal((await page.request.get(`${base}/`)).status(), 404, 'and the proxy says it is not running');
  t.same(errors, [], 'no script errors');
});
